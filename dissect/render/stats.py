"""``--stats``: protocol counts, transactions and response times, findings by code, servers seen."""

from collections import Counter

from ..capture.tables import FRAME_FINDINGS
from .text import protocol_title, safe

_CORRUPT = FRAME_FINDINGS.corrupt.code
_TIME_BACKWARDS = FRAME_FINDINGS.time_backwards.code


class StatsCollector:
    """Counts what ``--stats`` shows. The duration is the span from the earliest to the latest timestamp:
    last minus first where the clock only goes forward, and never negative where it goes back (a capture
    written out of order, or files given out of time order)."""

    __slots__ = ("frames", "bytes", "first_ts", "last_ts", "min_ts", "max_ts", "protocols", "messages",
                 "findings", "severity_of", "analyses")

    def __init__(self):
        self.frames = 0
        self.bytes = 0
        self.first_ts = None
        self.last_ts = None
        self.min_ts = None
        self.max_ts = None
        self.protocols = Counter()
        self.messages = Counter()
        self.findings = Counter()
        self.severity_of = {}
        self.analyses = Counter()

    def frame(self, record):
        self.frames += 1
        self.bytes += record.wirelen
        if self.first_ts is None:
            self.first_ts = record.ts
        self.last_ts = record.ts
        if _sets_clock(record):
            self._clock(record.ts, record.ts)
        self.protocols[record.protocol] += 1
        for msg in record.messages:
            self.messages[(msg.protocol, msg.name)] += 1
        for finding in record.all_findings():
            self._finding(finding)

    def analysis(self, rec):
        self.analyses[(rec.protocol, rec.name)] += 1
        for finding in rec.findings:
            self._finding(finding)

    def merge(self, other):
        """Add another ``-j`` worker's counts (it saw other frames of the same capture)."""
        self.frames += other.frames
        self.bytes += other.bytes
        for mine, theirs in ((self.protocols, other.protocols), (self.messages, other.messages),
                             (self.findings, other.findings), (self.analyses, other.analyses)):
            mine.update(theirs)
        self.severity_of.update(other.severity_of)
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
        return self.findings[_TIME_BACKWARDS] > 0

    def _finding(self, finding):
        self.findings[finding.code] += 1
        self.severity_of[finding.code] = finding.severity

    def as_dict(self, analyzers):
        duration = (self.max_ts - self.min_ts) if self.min_ts is not None else 0.0
        return {
            "kind": "stats", "frames": self.frames, "bytes": self.bytes, "duration": duration,
            "protocols": dict(sorted(self.protocols.items(), key=lambda item: (-item[1], item[0]))),
            "messages": [{"protocol": p, "message": m, "count": c}
                         for (p, m), c in sorted(self.messages.items())],
            "analyses": [{"protocol": p, "name": n, "count": c} for (p, n), c in sorted(self.analyses.items())],
            "findings": [{"code": code, "severity": self.severity_of[code], "count": count}
                         for code, count in sorted(self.findings.items())],
            "transactions": {key: a.stats() for key, a in sorted(analyzers.items())},
        }

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
        w("\nFindings\n")
        if not data["findings"]:
            w("  none\n")
        for row in data["findings"]:
            w(f"  {row['severity']:<8} {row['code']:<36} {row['count']:>9}\n")

    @staticmethod
    def _transactions(w, key, stats):
        if not stats.get("requests") and not stats.get("servers"):
            return
        w(f"\n{protocol_title(key)} transactions: {stats['requests']} requests, {stats['answered']} answered\n")
        for name, timing in stats.get("response_times", {}).items():
            if timing["count"]:
                w(f"  {name:<24} {timing['count']:>6} replies  response time min {timing['min'] * 1000:.3f} ms  "
                  f"mean {timing['mean'] * 1000:.3f} ms  max {timing['max'] * 1000:.3f} ms\n")
        servers = stats.get("servers") or []
        if servers:
            w(f"\n{protocol_title(key)} servers seen: {len(servers)}\n")
            for server in servers:
                w("  " + safe(server_line(server)) + "\n")


def _sets_clock(record):
    """As in the pipeline, a corrupt record without bytes (whose time may be made up) does not count."""
    return bool(record.data) or not record.findings or record.findings[0].code != _CORRUPT


def server_line(server):
    parts = [f"{server['server']:<22}"]
    for key, label in (("host_name", ""), ("name", ""), ("level_name", "map "), ("map", "map "),
                       ("game_type", ""), ("version", "version ")):
        if server.get(key) is not None:
            value = server[key]
            parts.append(f'{label}"{value}"' if isinstance(value, str) and not label else f"{label}{value}")
    if server.get("players") is not None:
        parts.append(f"players {server['players']}/{server.get('max_players')}")
    if server.get("clients") is not None:
        parts.append(f"clients {server['clients']}/{server.get('max_clients')}")
    if server.get("password") is not None:
        parts.append("password" if server["password"] else "no password")
    parts.append(f"responses {server.get('responses', 0)}")
    if server.get("response_time") is not None:
        parts.append(f"rtt {server['response_time'] * 1000:.3f} ms")
    return "  ".join(parts)
