"""``--stats``: protocol counts, transactions and response times, abuse analysis, findings by code,
servers seen."""

from ..capture.tables import ABUSE_FINDINGS, FRAME_FINDINGS
from ..core.fmt import decimal_text, or_unknown
from ..core.model import SEVERITY_RANK
from .text import protocol_title, safe

_CORRUPT = FRAME_FINDINGS.corrupt.code
_TIME_BACKWARDS = FRAME_FINDINGS.time_backwards.code
_ABUSE = ABUSE_FINDINGS.protocol  # the abuse analysis's key among the analyzers


class StatsCollector:
    """Counts what ``--stats`` shows. The duration is the span from the earliest to the latest timestamp:
    last minus first where the clock only goes forward, and never negative where it goes back (a capture
    written out of order, or files given out of time order)."""

    __slots__ = ("frames", "bytes", "first_ts", "last_ts", "min_ts", "max_ts", "protocols", "messages",
                 "findings", "analyses")

    def __init__(self):
        self.frames = 0
        self.bytes = 0
        self.first_ts = None
        self.last_ts = None
        self.min_ts = None
        self.max_ts = None
        self.protocols = {}  # key -> Tally (plain dictionaries: a Counter's += goes through Python-level slots)
        self.messages = {}   # protocol -> {message name -> Tally}: two look-ups of interned texts cost less than
                             # one of a (protocol, name) tuple made for each message
        self.findings = {}   # code -> {severity -> Tally}: a code some protocols raise at two severities is counted
                             # at each, as Wireshark's expert information groups them (and -j merges them exactly)
        self.analyses = {}   # protocol -> {record name -> Tally}, as the messages

    def frame(self, record):
        self.frames += 1
        wirelen = record.wirelen  # a C integer compiled: added without a Python int made
        self.bytes += wirelen
        ts = record.ts
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        if _sets_clock(record):
            self._clock(ts, ts)
        _count(self.protocols, record.protocol, 1)
        for msg in record.messages:
            _count(_names(self.messages, msg.protocol), msg.name, 1)
        for finding in record.findings:  # record.all_findings(), without a generator
            self._finding(finding)
        for msg in record.messages:
            for finding in msg.findings:
                self._finding(finding)

    def analysis(self, rec):
        _count(_names(self.analyses, rec.protocol), rec.name, 1)
        for finding in rec.findings:
            self._finding(finding)

    def merge(self, other):
        """Add another ``-j`` worker's counts (it saw other frames of the same capture)."""
        self.frames += other.frames
        self.bytes += other.bytes
        for key, tally in other.protocols.items():
            _count(self.protocols, key, tally.count)
        for mine, theirs in ((self.messages, other.messages), (self.analyses, other.analyses),
                             (self.findings, other.findings)):
            for protocol, names in theirs.items():
                counts = _names(mine, protocol)
                for name, tally in names.items():
                    _count(counts, name, tally.count)
        if other.min_ts is not None:
            self._clock(other.min_ts, other.max_ts)

    def _clock(self, low, high):
        if self.min_ts is None:
            self.min_ts, self.max_ts = low, high
            return
        if low < self.min_ts:
            self.min_ts = low
        if high > self.max_ts:
            self.max_ts = high

    def out_of_order(self):
        """True when a frame's timestamp was earlier than the one before it."""
        return _TIME_BACKWARDS in self.findings

    def _finding(self, finding):
        _count(_names(self.findings, finding.code), finding.severity, 1)

    def as_dict(self, analyzers):
        """The stats record; ``analyzers``: each protocol's by key, and the abuse analysis under "abuse"."""
        duration = (self.max_ts - self.min_ts) if self.min_ts is not None else 0.0
        data = {
            "kind": "stats", "frames": self.frames, "bytes": self.bytes, "duration": duration,
            "protocols": dict(sorted(_counts(self.protocols).items(), key=lambda item: (-item[1], item[0]))),
            "messages": [{"protocol": p, "message": m, "count": c} for p, m, c in _named_counts(self.messages)],
            "analyses": [{"protocol": p, "name": n, "count": c} for p, n, c in _named_counts(self.analyses)],
            "findings": [{"code": code, "severity": severity, "count": count}
                         for code, severity, count in _finding_counts(self.findings)],
            "transactions": {key: a.stats() for key, a in sorted(analyzers.items()) if key != _ABUSE},
        }
        if _ABUSE in analyzers:
            data[_ABUSE] = analyzers[_ABUSE].stats()
        return data

    def json_records(self, analyzers):
        """The JSON view's last records: each protocol's servers seen ("server" records), then the stats record.
        Each analyzer reports once (its ``stats()`` builds its tables; the abuse analysis has no servers)."""
        data = self.as_dict(analyzers)
        records = [{"kind": "server", "protocol": key, **server}
                   for key, report in data["transactions"].items() for server in report.get("servers", ())]
        records.append(data)
        return records

    def render_text(self, out, analyzers):
        data = self.as_dict(analyzers)
        w = out.write
        w(f"Frames: {data['frames']}, bytes: {data['bytes']}, duration: {data['duration']:.3f} s"
          f"{' (earliest to latest timestamp: frames out of time order)' if self.out_of_order() else ''}\n\n")
        w("Protocols\n")
        for proto, count in data["protocols"].items():
            w(f"  {protocol_title(proto):<10} {count:>9}\n")
        if data["messages"]:
            w("\nMessages\n")
            for row in data["messages"]:
                w(f"  {protocol_title(row['protocol']):<10} {safe(row['message']):<24} {row['count']:>9}\n")
        for key, stats in data["transactions"].items():
            self._transactions(w, key, stats)
        if data.get(_ABUSE, {}).get("protocols"):
            render_abuse(w, data[_ABUSE])
        w("\nFindings\n")
        if not data["findings"]:
            w("  none\n")
        for row in data["findings"]:
            w(f"  {row['severity']:<8} {row['code']:<36} {row['count']:>9}\n")

    @staticmethod
    def _transactions(w, key, stats):
        if "error" in stats:  # a plugin's analyzer failed (see plugin_guard)
            w(f"\n{protocol_title(key)} transactions: none shown: {safe(str(stats['error']))}\n")
            return
        if not stats.get("requests") and not stats.get("servers"):
            return
        w(f"\n{protocol_title(key)} transactions: {stats.get('requests', 0)} requests, {stats.get('answered', 0)} "
          f"answered\n")
        for name, timing in stats.get("response_times", {}).items():
            if timing["count"]:
                w(f"  {name:<24} {timing['count']:>6} replies  response time min {timing['min'] * 1000:.3f} ms  "
                  f"mean {timing['mean'] * 1000:.3f} ms  max {timing['max'] * 1000:.3f} ms\n")
        servers = stats.get("servers") or []
        if servers:
            more = _forgotten(stats.get("servers_forgotten"), stats.get("listings_forgotten"))
            w(f"\n{protocol_title(key)} servers seen: {len(servers)}{more}\n")
            for server in servers:
                w("  " + safe(server_line(server)) + "\n")


def _forgotten(servers, listings):
    """What the servers-seen line says of the rows its tables forgot past their limits (evictions: a server
    forgotten, seen again and forgotten again counts twice)."""
    parts = []
    if servers:
        parts.append(f"{servers} forgotten past the table's limit, the least recently seen first")
    if listings:
        parts.append(f"{listings} master listings forgotten past theirs")
    return f" (and {'; '.join(parts)})" if parts else ""


def render_abuse(w, abuse):
    """The abuse analysis of ``--stats``: amplification per protocol and request type, top talkers, top
    servers, and what the rules found."""
    limits = abuse["thresholds"]
    w(f"\nAbuse analysis (threshold {limits['rate']:g} requests/s sustained over {limits['window']} s; "
      f"reflection needs {limits['min_servers']} or more servers)\n")
    w("  Amplification: reply bytes / request bytes of UDP payload (wire: whole frames); per query: "
      "mean, median, max\n")
    w(f"  {'Protocol':<10} {'Request':<18} {'Requests':>9} {'Answered':>9} {'Replies/req':>11} {'Req bytes':>10} "
      f"{'Reply bytes':>12} {'Factor':>8} {'Wire':>7}  Per query\n")
    for row in abuse["protocols"]:
        for kind in (k for k in abuse["amplification"] if k["protocol"] == row["protocol"]):
            _amplification_line(w, kind, kind["request"])
        _amplification_line(w, dict(row, replies_per_request=None, per_query=None, answered=None), "all")
        if row["unsolicited_replies"] or row["oversize_replies"]:
            w(f"  {protocol_title(row['protocol']):<10} unsolicited: {row['unsolicited_replies']} replies to no "
              f"request seen, {row['unsolicited_bytes']} bytes; {row['oversize_replies']} replies over the size "
              f"limit\n")
    for kind in abuse["amplification"]:
        worst = kind["worst"]
        if worst is not None:
            w(f"  worst {protocol_title(kind['protocol'])} {kind['request']}: {worst['amplification']:.2f}x, "
              f"request frame {worst['request_frame']}, replies in {_frames(worst['reply_frames'])} "
              f"({safe(worst['client'])} ← {safe(worst['server'])})\n")
    _top_talkers(w, abuse["top_talkers"])
    _top_servers(w, abuse["top_servers"])
    _suspicions(w, abuse["suspicions"])


def _amplification_line(w, row, request):
    per_query = row["per_query"]
    spread = f"{per_query['mean']:.2f} / {per_query['median']:.2f} / {per_query['max']:.2f}" if per_query else ""
    line = (f"  {protocol_title(row['protocol']):<10} {safe(request):<18} {row['requests']:>9} "
            f"{_number(row['answered']):>9} {_number(row['replies_per_request']):>11} {row['request_bytes']:>10} "
            f"{row['reply_bytes']:>12} {_number(row['amplification']):>8} {_number(row['wire_amplification']):>7}  "
            f"{spread}")
    w(line.rstrip() + "\n")


def _top_talkers(w, talkers):
    if not talkers:
        return
    w(f"\n  Top talkers (by requests)\n  {'Address':<40} {'Requests':>9} {'Mean/s':>8} {'Peak/s':>8} "
      f"{'Servers':>8} {'Answered':>9} {'Reply bytes':>12}\n")
    for row in talkers:
        w(f"  {safe(row['address']):<40} {row['requests']:>9} {row['mean_rate']:>8.2f} {row['peak_rate']:>8.2f} "
          f"{row['servers']:>8} {_percent(row['answered_share']):>9} {row['reply_bytes']:>12}\n")


def _top_servers(w, servers):
    if not servers:
        return
    w(f"\n  Top servers (by bytes sent)\n  {'Server':<46} {'Protocol':<10} {'Requests':>9} {'Replies':>9} "
      f"{'Bytes out':>10} {'Wire out':>10} {'Requesters':>10}\n")
    for row in servers:
        w(f"  {safe(row['server']):<46} {protocol_title(row['protocol']):<10} {row['requests']:>9} "
          f"{row['replies']:>9} {row['bytes_out']:>10} {row['wire_bytes_out']:>10} {row['requesters']:>10}\n")


def _suspicions(w, suspicions):
    w("\n  Suspicions (signs, not verdicts: a capture cannot tell a spoofed source from a real one)\n")
    if not suspicions:
        w("    none\n")
    for row in suspicions:
        w(f"    {row['rule']:<20} {safe(_suspicion_text(row))}\n")


def _suspicion_text(row):
    rule = row["rule"]
    if rule == "request_flood":
        return (f"{row['source']} → {row['server']} ({protocol_title(row['protocol'])}): peak "
                f"{row['peak_rate']:.1f} requests/s, {row['requests']} requests")
    if rule == "reflection":
        side = "victim (sent no request)" if row["view"] == "victim" else "victim (its address sent the requests)"
        return (f"{row['address']}, {side}: {row['servers']} servers, {row['replies']} replies, "
                f"peak {row['peak_rate']:.1f}/s")
    if rule == "unsolicited_replies":
        return (f"{row['address']}: {row['unsolicited']} replies without a request, {row['oversize']} over the "
                f"size limit, peak {row['peak_rate']:.1f}/s")
    return f"{row['address']} ({protocol_title(row['protocol'])}): token {row['token']} in {row['requests']} requests"


def _number(value):
    if value is None:
        return ""
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _percent(share):
    return "" if share is None else f"{share * 100:.0f}%"


def _frames(frames):
    return ",".join(map(str, frames)) if frames else "none"


class Tally:
    """One count of a table of counts, added to in place: an int kept in a dict is read, added to and stored again,
    and the store of a present key took about 290 of the 640 instructions a count cost."""

    __slots__ = ("count",)

    def __init__(self, count):
        self.count = count


def _count(counts, key, count):
    tally = counts.get(key)
    if tally is None:
        counts[key] = Tally(count)
    else:
        tally.count += count


def _counts(counts):
    """A table of Tallies as key -> count."""
    return {key: tally.count for key, tally in counts.items()}


def _names(tables, protocol):
    """The counts of ``protocol`` in ``tables`` (protocol -> {name -> Tally}), by name."""
    names = tables.get(protocol)
    if names is None:
        names = tables[protocol] = {}
    return names


def _named_counts(tables):
    """(protocol, name, count) of ``tables``, sorted."""
    return sorted((protocol, name, tally.count) for protocol, names in tables.items() for name, tally in names.items())


def _finding_counts(findings):
    """(code, severity, count) of ``findings`` (code -> {severity -> Tally}): by code, the most severe first."""
    return sorted(((code, severity, tally.count) for code, severities in findings.items()
                   for severity, tally in severities.items()), key=_finding_order)


def _finding_order(row):
    return row[0], -SEVERITY_RANK[row[1]]


def _sets_clock(record):
    """As in the pipeline, a corrupt record without bytes (whose time may be made up) does not count."""
    return bool(record.data) or not record.findings or record.findings[0].code != _CORRUPT


LISTED_SHOWN = 3  # masters named on a server's line
_LABELS = (("host_name", ""), ("name", ""), ("level_name", "map "), ("map", "map "), ("game_type", ""),
           ("version", "version "))  # the columns a server line shows first, each with its label


def server_line(server):
    # The counts' texts from decimal_text's table (str() of any value): a table's thousand lines each have several.
    parts = [server["server"].ljust(22)]  # an endpoint's text
    for key, label in _LABELS:
        value = server.get(key)
        if value is not None:
            parts.append(f'{label}"{value}"' if isinstance(value, str) and not label else f"{label}{value}")
    value = server.get("players")
    if value is not None:
        parts.append(f"players {decimal_text(value)}/{or_unknown(server.get('max_players'))}")
    value = server.get("clients")
    if value is not None:
        parts.append(f"clients {decimal_text(value)}/{or_unknown(server.get('max_clients'))}")
    value = server.get("password")
    if value is not None:
        parts.append("password" if value else "no password")
    parts.append("responses " + decimal_text(server.get("responses", 0)))
    value = server.get("response_time")
    if value is not None:
        parts.append(f"rtt {value * 1000:.3f} ms")
    value = server.get("listed_by")
    if value:  # the lobby that listed the server (Soldat), or the masters whose lists named it (Odamex)
        if isinstance(value, str):
            value = [value]
        more = f" and {len(value) - LISTED_SHOWN} more" if len(value) > LISTED_SHOWN else ""
        parts.append("listed by " + ", ".join(value[:LISTED_SHOWN]) + more)
    return "  ".join(parts)
