"""``--html REPORT``: the records of a run as one self-contained HTML file.

The page has an overview (capture summary, findings by code, a server browser, SVG plots) and
Wireshark's three linked panes (packet list, field tree, hex dump). It needs nothing but the file:
no network (its Content-Security-Policy forbids every fetch), and it works from ``file://``.

Rows (frames, then the analysis records as they conclude) are written as they come, in chunks of
``CHUNK_ROWS``: each chunk gzip-compressed and base64-encoded into temporary files beside the report
(see ``_Rows``), which ``close`` copies into the page. So the writer holds one chunk at a time however
long the capture, of the rows' trees and bytes at most ``DETAIL_BYTES`` (and the row that passes it). The
page decodes a compact binary index of the rows at open (time, number, length, severity, protocol), a chunk
of the rows' text when those rows scroll into view or a text filter asks, and a frame's tree and bytes when
it is picked, with the browser's own DecompressionStream. The first ``limit`` frames go to the panes; the
overview counts every record the run keeps.

Every string from a packet is made printable (``safe``, as in the terminal views) and then only
reaches the page as JSON data read by script and set as text, or HTML-escaped: none of it can
become markup or script.
"""

import base64
import json
import math
import os
import sys
import tempfile
import zlib
from array import array
from collections import OrderedDict

from ..analysis.common import ServersSeen
from ..core import SEVERITY_RANK
from ..core.fmt import endpoint
from ..registry import load_protocols
from . import html_page
from .stats import StatsCollector
from .svgplot import PALETTE, Series, line_chart, seconds_label, text
from .text import protocol_title, safe, utc_text

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a declared dependency
    orjson = None

DEFAULT_LIMIT = 500_000
CHUNK_ROWS = 1000
# The rows' trees and bytes go in chunks of their own, which also end where their JSON reaches this: a row's detail
# grows with its frame (about 600 KB for a frame of 256 KiB), and a thousand of them held at once took 2.2 GB.
DETAIL_BYTES = 4 << 20
GZIP_LEVEL = 6
MAX_KEYS = 50_000           # distinct (key, name, generated) triples interned; beyond, written inline
MAX_LINKS = 25              # frames linked from each finding code
MAX_ENDPOINTS = 200_000     # endpoints whose findings are counted for the server table
MAX_CONVERSATIONS = 65_536  # conversations whose client side is remembered for the request/reply plot
MAX_RECENT = 65_536         # recent frames whose endpoints an analysis record's findings are counted for
MAX_TIMELINES = 1_000       # servers whose players are followed over time
MAX_SEEN = 100_000          # servers whose response count is remembered between reads
MAX_SAMPLES = 512           # samples a timeline keeps (halved, every other dropped, when full)
MAX_SERVER_ROWS = 2_000     # rows of the server table shown
MAX_RESULT_ITEMS = 2_000    # items of one list or dict in an analysis record's result
RATE_BINS = 2048            # time bins kept while counting
PLOTTED_BINS = 60           # at most this many in the plot (merged by twos)
PLOTTED_SERVERS = 12
SEVERITY_CODE = {name: rank + 1 for name, rank in SEVERITY_RANK.items()}  # 0: no finding


def write_report(path, sources, limit=DEFAULT_LIMIT, decode_as=(), display_filter=None, count=None):
    """Dissect ``sources`` (paths read in turn as one capture) into an HTML report at ``path``; return
    the ``--stats`` dict of what it shows. What ``dissect --html`` does, as a function."""
    from ..capture.sources import CaptureFiles
    from ..session import Session
    report = HtmlReport(path, limit=limit, sources=sources)
    session = Session(report, decode_as=list(decode_as), display_filter=display_filter, tree=True,
                      analyzer_stats=True)
    report.watch(session.analyzers)
    files = CaptureFiles([os.fspath(s) for s in sources], limit=count)
    try:
        for frame in files:
            session.frame(frame)
        session.finish()
    except BaseException:
        report.discard()
        raise
    return report.close(session.analyzers, files.errors)


class HtmlReport:
    """A Session sink: ``frame(record)`` and ``analysis(rec)`` as the run keeps them, ``watch(analyzers)``
    once the Session exists (the players-over-time plot follows their server tables), then
    ``close(analyzers)`` writes the page and returns the ``--stats`` dict it shows. The Session must
    build field trees."""

    def __init__(self, path, limit=DEFAULT_LIMIT, sources=()):
        self.path = os.fspath(path)
        self.limit = limit
        self.sources = [os.fspath(s) if not hasattr(s, "read") else getattr(s, "name", "stream") for s in sources]
        self.errors = []
        self.rows = _Rows(os.path.dirname(os.path.abspath(self.path)))
        self.keys = _KeyTable()
        self.overview = _Overview()
        self.frames_kept = 0
        self.last_kept_frame = 0
        self.first_ts = None
        self.last_t = 0.0
        self.titles = {}       # protocol key -> title
        self.protocols = {}    # title -> its index in the page's protocol list

    # -- the sink --------------------------------------------------------------------------------
    def watch(self, analyzers):
        self.overview.servers.watch(analyzers)

    def frame(self, record):
        if self.first_ts is None:
            self.first_ts = record.first_ts
        self.last_t = t = record.ts - self.first_ts
        findings = record.findings + [f for msg in record.messages for f in msg.findings] if record.messages \
            else record.findings
        kept = self.frames_kept < self.limit
        self.overview.frame(record, findings, t, self.rows.count if kept else None)
        if kept:
            self.frames_kept += 1
            self.last_kept_frame = record.number
            packet = record.packet
            self.rows.add((t, record.number, record.wirelen, 0, _worst(findings), self._protocol(record.protocol)),
                          _encode([endpoint(packet.src, packet.sport), endpoint(packet.dst, packet.dport),
                                   safe(record.info), _codes(findings)]),
                          _encode(_built(self._frame_detail, record)))

    def analysis(self, rec):
        seq = self.rows.count if self._keeps(rec) else None
        self.overview.analysis(rec, self.last_t, seq)
        if seq is None:
            return
        frames = [number for number in rec.frames if number is not None]
        self.rows.add((self.last_t, frames[-1] if frames else 0, len(rec.frames), 1, _worst(rec.findings),
                       self._protocol(rec.protocol)),
                      _encode(["", "", f"[{safe(rec.name)}] {safe(rec.summary)}", _codes(rec.findings),
                               frames[:MAX_RESULT_ITEMS]]),
                      _encode(_built(self._analysis_detail, rec)))
        if frames:
            self.rows.members(_encode([seq, frames[:MAX_RESULT_ITEMS]]))

    def _keeps(self, rec):
        """An analysis record goes to the panes while they take frames, and after that when it starts
        in a frame they hold."""
        if self.frames_kept < self.limit:
            return True
        first = next((number for number in rec.frames if number is not None), None)
        return first is not None and first <= self.last_kept_frame

    # -- rows --------------------------------------------------------------------------------------
    def _title(self, key):
        title = self.titles.get(key)
        if title is None:
            title = self.titles[key] = protocol_title(key)
        return title

    def _protocol(self, key):
        title = self._title(key)
        index = self.protocols.get(title)
        if index is None:
            index = self.protocols[title] = min(len(self.protocols), 255)
        return index

    def _frame_detail(self, record):
        packet = record.packet
        return {"d": base64.b64encode(bytes(record.data)).decode("ascii"), "ts": record.ts, "cap": record.caplen,
                "wire": record.wirelen, "lt": record.linktype, "st": packet.tcp_stream,
                "l": [[safe(layer.summary), layer.offset, layer.length, layer.key] for layer in packet.layers],
                "f": [_finding(f) for f in record.findings],
                "m": [self._message(msg) for msg in record.messages]}

    def _message(self, msg):
        out = {"p": self._title(msg.protocol), "n": safe(msg.name or ""), "o": msg.offset, "len": msg.length,
               "fs": [self._field(f) for f in msg.fields], "x": [_finding(f) for f in msg.findings]}
        if msg.offset is None:
            out["fr"] = list(msg.frames)
            out["pl"] = base64.b64encode(bytes(msg.payload)).decode("ascii")
        return out

    def _field(self, field):
        node = [self.keys.ref(field.key, field.name, field.generated), field.offset, field.length,
                safe(field.display)]
        if field.children:
            node.append([self._field(child) for child in field.children])
        return node

    def _analysis_detail(self, rec):
        return {"a": 1, "p": self._title(rec.protocol), "n": safe(rec.name), "s": safe(rec.summary),
                "fr": rec.frames[:MAX_RESULT_ITEMS], "x": [_finding(f) for f in rec.findings],
                "r": _clean(rec.result)}

    # -- the page ------------------------------------------------------------------------------------
    def close(self, analyzers=None, errors=()):
        """Write the page; return the ``--stats`` dict it shows (what ``dissect --stats -T json`` gives).
        ``errors``: why input files stopped early (shown at the top)."""
        analyzers = analyzers or {}
        self.errors = list(self.errors) + list(errors)
        stats = self.overview.stats.as_dict(analyzers)
        servers = [dict(server, protocol=key) for key, analyzer in sorted(analyzers.items())
                   for server in analyzer.stats().get("servers", ())]
        self.rows.finish()
        page = {"chunk": CHUNK_ROWS, "rows": self.rows.count, "chunks": self.rows.chunks(),
                "detail_starts": self.rows.detail_starts, "keys": self.keys.table,
                "first_ts": self.first_ts, "frames": stats["frames"], "kept": self.frames_kept, "limit": self.limit,
                "protocols": list(self.protocols), "severities": ["", "chat", "note", "warning", "error"]}
        overview = self.overview.html(stats, servers, self)
        part = self.path + ".part"
        try:
            with open(part, "w", encoding="utf-8", newline="\n") as out:
                html_page.write(out, title=self._page_title(), overview=overview, data=page, blobs=self.rows.files())
            os.replace(part, self.path)
        except BaseException:
            _remove(part)
            raise
        finally:
            self.discard()
        return stats

    def discard(self):
        """Drop the temporary files (``close`` does this itself)."""
        self.rows.close()

    def _page_title(self):
        names = [os.path.basename(source) for source in self.sources] or ["capture"]
        return "dissect: " + ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    def frame_bytes(self):
        """Bytes of compressed row data in the page (index, texts, details, analysis membership)."""
        return self.rows.size()


class _Rows:
    """The rows of the panes, written as they come into four blobs of chunks (``_ChunkFile``):

    - index: per chunk of ``CHUNK_ROWS`` rows, binary columns (little-endian): time since the first
      frame (float64), frame number (uint32; an analysis row: its last frame), length (uint32; an
      analysis row: its number of frames), kind (uint8: 0 frame, 1 analysis), worst severity (uint8),
      protocol (uint8, an index into the page's list). The page decodes these at open.
    - text: per chunk, a JSON array of [source, destination, info, finding codes(, frames)], decoded
      when its rows are shown or a text filter needs them.
    - detail: a JSON array of the rows' trees and bytes, decoded when a row is picked: a chunk of its own, which
      ends with the rows' chunk or where its JSON reaches ``DETAIL_BYTES`` (``detail_starts``: each one's first row).
    - members: [analysis row, its frames] pairs, for the links from a frame to its analyses.
    """

    def __init__(self, folder):
        self.index = _ChunkFile(folder, "index")
        self.text = _ChunkFile(folder, "text")
        self.detail = _ChunkFile(folder, "detail")
        self.member = _ChunkFile(folder, "members")
        self.count = 0
        self.columns = _columns()
        self.texts, self.details, self.members_pending = [], [], []
        self.detail_starts, self.detail_size = [], 0

    def add(self, numbers, text, detail):
        for column, value in zip(self.columns, numbers):
            column.append(value)
        self.texts.append(text)
        if not self.details:
            self.detail_starts.append(self.count)
        self.details.append(detail)
        self.detail_size += len(detail)
        self.count += 1
        if len(self.texts) >= CHUNK_ROWS:
            self._flush()
        elif self.detail_size >= DETAIL_BYTES:
            self._flush_details()

    def members(self, encoded):
        self.members_pending.append(encoded)
        if len(self.members_pending) >= CHUNK_ROWS:
            self.member.write(_json_array(self.members_pending))
            self.members_pending.clear()

    def _flush(self):
        if not self.texts:
            return
        if sys.byteorder != "little":
            for column in self.columns[:3]:
                column.byteswap()
        self.index.write(b"".join(column.tobytes() for column in self.columns))
        self.text.write(_json_array(self.texts))
        self._flush_details()
        self.columns = _columns()
        self.texts.clear()

    def _flush_details(self):
        if self.details:
            self.detail.write(_json_array(self.details))
            self.details.clear()
            self.detail_size = 0

    def finish(self):
        self._flush()
        if self.members_pending:
            self.member.write(_json_array(self.members_pending))
            self.members_pending.clear()

    def files(self):
        return {"index": self.index, "text": self.text, "detail": self.detail, "members": self.member}

    def chunks(self):
        return {name: blob.chunks for name, blob in self.files().items()}

    def size(self):
        return sum(blob.size for blob in self.files().values())

    def close(self):
        for blob in self.files().values():
            blob.close()


def _columns():
    """Empty index columns; the uint32 ones clamp nothing: frame numbers and lengths fit in 32 bits."""
    return [array("d"), array("I"), array("I"), array("B"), array("B"), array("B")]


def _json_array(encoded):
    return b"[" + b",".join(encoded) + b"]"


class _ChunkFile:
    """Chunks, each gzip-compressed and base64-encoded into a data block of its own,
    ``<script type="application/octet-stream" id="dissect-NAME-I">``, appended to a temporary file beside
    the report: the page reads one chunk without touching the others. Holds nothing but the file."""

    def __init__(self, folder, name):
        self.file = tempfile.TemporaryFile(mode="w+b", dir=folder, prefix=".dissect-report-")
        self.name = name.encode("ascii")
        self.chunks = 0
        self.size = 0

    def write(self, raw):
        packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: the gzip container
        encoded = base64.b64encode(packer.compress(raw) + packer.flush())
        self.file.write(b'<script type="application/octet-stream" id="dissect-%s-%d">%s</script>\n'
                        % (self.name, self.chunks, encoded))
        self.size += len(encoded)
        self.chunks += 1

    def copy_to(self, out, block=1 << 20):
        """Write the data blocks to the text stream ``out``."""
        self.file.flush()
        self.file.seek(0)
        while True:
            data = self.file.read(block)
            if not data:
                return
            out.write(data.decode("ascii"))

    def close(self):
        if not self.file.closed:
            self.file.close()


class _KeyTable:
    """Field key, name and generated flag, interned: the frames refer to an entry by its index."""

    def __init__(self):
        self.index = {}
        self.table = []

    def ref(self, key, name, generated):
        entry = (key, name, generated)
        found = self.index.get(entry)
        if found is not None:
            return found
        row = [key, safe(name), 1 if generated else 0]
        if len(self.table) >= MAX_KEYS:
            return row
        self.index[entry] = len(self.table)
        self.table.append(row)
        return self.index[entry]


def _encode(value):
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # an integer beyond 64 bits: the standard library writes any integer
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8",
                                                                                         "backslashreplace")


def _worst(findings):
    if not findings:
        return 0
    return max(SEVERITY_CODE[f.severity] for f in findings)


def _codes(findings):
    return " ".join(dict.fromkeys(f.code for f in findings)) if findings else ""


def _finding(finding):
    return [SEVERITY_CODE[finding.severity], finding.code, safe(finding.message), finding.offset, finding.length]


def _built(build, source):
    """A row's detail; a record that cannot be shown costs its own row, not the report."""
    try:
        return build(source)
    except Exception as exc:
        return {"error": f"this row could not be written: {type(exc).__name__}: {safe(str(exc))}"}


def _clean(value, depth=0):
    """An analysis result with printable text only, bytes as hex, numbers JSON can hold, long lists cut."""
    if isinstance(value, str):
        return safe(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if depth > 12:
        return safe(str(value))
    if isinstance(value, dict):
        items = list(value.items())
        cleaned = {safe(str(k)): _clean(v, depth + 1) for k, v in items[:MAX_RESULT_ITEMS]}
        if len(items) > MAX_RESULT_ITEMS:
            cleaned["…"] = f"{len(items) - MAX_RESULT_ITEMS} more"
        return cleaned
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        cleaned = [_clean(v, depth + 1) for v in items[:MAX_RESULT_ITEMS]]
        if len(items) > MAX_RESULT_ITEMS:
            cleaned.append(f"… {len(items) - MAX_RESULT_ITEMS} more")
        return cleaned
    return safe(str(value))


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


# -- the overview ------------------------------------------------------------------------------------
class _Overview:
    """What the top of the page shows, counted over every record the run keeps, in bounded memory."""

    def __init__(self):
        self.stats = StatsCollector()
        self.links = {}             # (finding code, severity) -> [(kind, number or seq, kept)]: a row of the table
        self.endpoint_findings = {}  # endpoint -> findings in frames to or from it
        self.recent = _Bounded(MAX_RECENT)  # frame number -> its endpoints
        self.traffic = _Traffic()
        self.response_times = {}    # protocol title -> _LogHistogram of reply times
        self.exchange_times = {}    # protocol title -> _LogHistogram of analysis records' times
        self.servers = _Timelines()

    def frame(self, record, findings, t, seq):
        self.stats.frame(record)
        packet = record.packet
        ends = (endpoint(packet.src, packet.sport), endpoint(packet.dst, packet.dport))
        if packet.src is not None:
            self.recent.put(record.number, ends)
        if findings:
            self._count_endpoints(ends, len(findings))
            for finding in findings:
                self._link(finding, ("f", record.number, seq))
        self.traffic.frame(record, t)
        for msg in record.messages:
            elapsed = msg.values.get("response_time")
            if isinstance(elapsed, (int, float)):
                self.response_times.setdefault(protocol_title(msg.protocol), _LogHistogram()).add(elapsed)
        if record.messages:  # the analyzers learn from messages only
            self.servers.poll(t)

    def analysis(self, rec, t, seq):
        self.stats.analysis(rec)
        for finding in rec.findings:
            self._link(finding, ("a", rec.frames[0] if rec.frames else None, seq))
        if rec.findings and rec.frames:
            ends = self.recent.get(rec.frames[-1])
            if ends is not None:
                self._count_endpoints(ends, len(rec.findings))
        title = protocol_title(rec.protocol)
        if title not in self.response_times:  # this protocol times whole exchanges, not replies
            result = _built(lambda r: r.result, rec)
            elapsed = result.get("time", result.get("response_time")) if isinstance(result, dict) else None
            if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool):
                self.exchange_times.setdefault(title, _LogHistogram()).add(elapsed)
        self.servers.poll(t)

    def _count_endpoints(self, ends, count):
        for end in set(ends):
            if end and (end in self.endpoint_findings or len(self.endpoint_findings) < MAX_ENDPOINTS):
                self.endpoint_findings[end] = self.endpoint_findings.get(end, 0) + count

    def _link(self, finding, target):
        links = self.links.setdefault((finding.code, finding.severity), [])
        if len(links) < MAX_LINKS:
            links.append(target)

    # -- as HTML ----------------------------------------------------------------------------------------
    def html(self, stats, servers, report):
        return "".join([self._summary(stats, report), self._findings(stats), self._servers(servers),
                        self._plots()])

    def _summary(self, stats, report):
        first, last = self.stats.min_ts, self.stats.max_ts
        files = "".join(f"<li>{text(name)}</li>" for name in report.sources) or "<li>(records given directly)</li>"
        protocols = "".join(f'<tr><td>{text(protocol_title(key))}</td><td class="num">{count:,}</td></tr>'
                            for key, count in stats["protocols"].items())
        analyses = "".join(f'<tr><td>{text(protocol_title(row["protocol"]))} {text(row["name"])}</td>'
                           f'<td class="num">{row["count"]:,}</td></tr>' for row in stats["analyses"])
        kept = report.frames_kept
        per_frame = report.frame_bytes() / report.rows.count if report.rows.count else 0
        panes = (f"all {kept:,} frames" if kept == stats["frames"] else
                 f"the first {kept:,} of {stats['frames']:,} frames (--html-limit {report.limit:,})")
        errors = "".join(f'<p class="error">{text(error)}</p>' for error in report.errors)
        return (f'<section id="summary"><h2>Capture</h2>{errors}<div class="cards">'
                f'<div class="card"><h3>Files</h3><ul>{files}</ul></div>'
                f'<div class="card"><h3>Frames</h3><p class="big" id="frame-count">{stats["frames"]:,}</p>'
                f'<p>{stats["bytes"]:,} bytes</p></div>'
                f'<div class="card"><h3>Span</h3><p class="big">{text(seconds_label(stats["duration"]))}</p>'
                f'<p>{text(_time(first))}<br>to {text(_time(last))}</p></div>'
                f'<div class="card"><h3>Protocols</h3><table class="mini">{protocols}</table></div>'
                f'<div class="card"><h3>Analyses</h3><table class="mini">{analyses or "<tr><td>none</td></tr>"}'
                f'</table></div></div>'
                f'<p class="note">The panes below hold {panes}; the overview counts every frame the run kept. '
                f'Frame data in this page: {report.frame_bytes():,} bytes compressed, '
                f'<span id="bytes-per-row">{per_frame:,.0f}</span> bytes a row.</p></section>')

    def _findings(self, stats):
        rows = sorted(stats["findings"], key=lambda r: (-SEVERITY_RANK[r["severity"]], r["code"]))
        if not rows:
            return '<section id="findings"><h2>Findings</h2><p>No findings.</p></section>'
        body = []
        for row in rows:
            links = self.links.get((row["code"], row["severity"]), [])
            shown = ", ".join(_target(target) for target in links)
            more = row["count"] - len(links)
            if more > 0:
                shown += f" … {more:,} more"
            body.append(f'<tr class="sev-{SEVERITY_CODE[row["severity"]]}"><td>{text(row["severity"])}</td>'
                        f'<td><code>{text(row["code"])}</code></td><td class="num" data-v="{row["count"]}">'
                        f'{row["count"]:,}</td><td>{shown}</td><td><a href="#panes" class="filter-code" '
                        f'data-code="{text(row["code"])}">list</a></td></tr>')
        return ('<section id="findings"><h2>Findings</h2><table id="findings-table" class="sortable">'
                '<thead><tr><th>Severity</th><th>Code</th><th>Count</th><th>Where</th><th></th></tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table></section>')

    def _servers(self, servers):
        if not servers:
            return ('<section id="servers"><h2>Servers</h2><p>No server answered a query in this capture.</p>'
                    '</section>')
        shown = sorted(servers, key=lambda s: -s.get("responses", 0))[:MAX_SERVER_ROWS]
        shown.sort(key=lambda s: (s["protocol"], s.get("last_frame", 0)))
        body = "".join(self._server_row(server) for server in shown)
        more = f"<p>{len(servers) - len(shown):,} more servers are not shown.</p>" if len(servers) > len(shown) else ""
        return ('<section id="servers"><h2>Servers</h2><table id="servers-table" class="sortable"><thead><tr>'
                '<th>Protocol</th><th>Address</th><th>Name</th><th>Map</th><th>Game type</th><th>Players</th>'
                '<th>Response time</th><th>Responses</th><th>Findings</th></tr></thead>'
                f'<tbody>{body}</tbody></table>{more}</section>')

    def _server_row(self, server):
        address = str(server["server"])
        name = _first(server, "host_name", "name")
        level = _first(server, "level_name", "map")
        players, most = server.get("players"), server.get("max_players")
        rtt = server.get("response_time")
        findings = self.endpoint_findings.get(address, 0)
        rtt_text = f"{rtt * 1000:.3f} ms" if isinstance(rtt, (int, float)) else ""
        return (f'<tr data-server="{text(address)}"><td>{text(protocol_title(server["protocol"]))}</td>'
                f'<td><a href="#panes" class="filter-text" data-text="{text(address)}">{text(address)}</a></td>'
                f'<td>{text(name)}</td><td>{text(level)}</td><td>{text(_first(server, "game_type"))}</td>'
                f'<td class="num" data-v="{_number(players)}">{text(_fraction(players, most))}</td>'
                f'<td class="num" data-v="{_number(rtt)}">{rtt_text}</td>'
                f'<td class="num" data-v="{server.get("responses", 0)}">{server.get("responses", 0):,}</td>'
                f'<td class="num" data-v="{findings}">{findings:,}</td></tr>')

    def _plots(self):
        return ('<section id="plots"><h2>Traffic</h2><div class="plots">'
                f'<figure>{self.traffic.chart()}<figcaption>Requests (solid) and replies (dashed) per second, '
                f'per protocol: frames carrying the protocol\'s messages, by direction (the side that sent a '
                f'conversation\'s first frame is the client, unless only the other side uses a registered '
                f'port).</figcaption></figure>'
                f'<figure>{self._response_chart()}<figcaption>Response times per protocol: replies per '
                f'logarithmic bin (5 a decade).</figcaption></figure></div>'
                f'<h3>Players over time</h3><div class="plots small">{self.servers.charts()}</div></section>')

    def _response_chart(self):
        series = []
        histograms = dict(self.exchange_times)
        histograms.update(self.response_times)
        for index, (title, histogram) in enumerate(sorted(histograms.items())):
            series.append(Series(title, PALETTE[index % len(PALETTE)], histogram.steps()))
        return line_chart(series, "response time", "replies", log_x=True, empty="no timed replies")


def _target(target):
    kind, number, seq = target
    if kind == "f":
        label = str(number)
        return f'<a href="#panes" data-row="{seq}">{label}</a>' if seq is not None else \
            f'<span title="beyond --html-limit">{label}</span>'
    label = f"analysis of frame {number}" if number is not None else "analysis"
    return f'<a href="#panes" data-row="{seq}">{label}</a>' if seq is not None else label


def _first(server, *keys):
    for key in keys:
        if server.get(key) is not None:
            return server[key]
    return ""


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def _fraction(players, most):
    if players is None and most is None:
        return ""
    return f"{'' if players is None else players}/{'' if most is None else most}"


def _time(ts):
    return utc_text(ts) if ts is not None else "no frames"


class _Bounded:
    """A dict that forgets its oldest entries beyond ``limit`` (frames come in order: oldest first)."""

    def __init__(self, limit):
        self.limit = limit
        self.items = OrderedDict()

    def put(self, key, value):
        self.items[key] = value
        if len(self.items) > self.limit:
            # popitem(last=False), not del items[next(iter(items))]: a dict's iterator steps over the slots of the
            # entries deleted before, so taking the oldest that way cost as much as the limit, every frame once full
            self.items.popitem(last=False)

    def get(self, key):
        return self.items.get(key)


class _LogHistogram:
    """Counts of positive durations in logarithmic bins, 5 a decade from 100 ns; constant memory."""

    PER_DECADE = 5
    LOWEST = -7  # 10**-7 s

    def __init__(self):
        self.counts = {}

    def add(self, seconds):
        if seconds <= 0 or not math.isfinite(seconds):
            seconds = 10.0 ** self.LOWEST
        index = max(0, math.floor((math.log10(seconds) - self.LOWEST) * self.PER_DECADE))
        self.counts[index] = self.counts.get(index, 0) + 1

    def steps(self):
        """The histogram as a step line: (bin edge in seconds, count) points."""
        if not self.counts:
            return []
        points = []
        for index in range(min(self.counts), max(self.counts) + 1):
            count = self.counts.get(index, 0)
            low = 10 ** (self.LOWEST + index / self.PER_DECADE)
            high = 10 ** (self.LOWEST + (index + 1) / self.PER_DECADE)
            points += [(low, count), (high, count)]
        return [(points[0][0], 0)] + points + [(points[-1][0], 0)]


class _Traffic:
    """Frames carrying a protocol's messages, per protocol and direction, counted in time bins that
    start at a microsecond and double in width whenever the capture outgrows ``RATE_BINS`` of them."""

    def __init__(self):
        self.width = 1e-6
        self.low = self.high = None
        self.bins = {}  # (protocol title, "requests" | "replies") -> {bin: frames}
        self.clients = _Bounded(MAX_CONVERSATIONS)
        self.ports = None

    def frame(self, record, t):
        packet = record.packet
        if packet.src is None or packet.sport is None:
            return
        here, there = (packet.src, packet.sport), (packet.dst, packet.dport)
        key = (packet.transport, here, there) if here <= there else (packet.transport, there, here)
        client = self.clients.get(key)
        if client is None:
            client = self._client(here, there)
            self.clients.put(key, client)
        if not record.messages:
            return
        direction = "requests" if here == client else "replies"
        self._count((protocol_title(record.messages[0].protocol), direction), t)

    def _client(self, here, there):
        if self.ports is None:
            self.ports = {port for cls in load_protocols().values() for port in (cls.ports or ())}
        if here[1] in self.ports and there[1] not in self.ports:
            return there
        return here

    def _count(self, series, t):
        index = math.floor(t / self.width) if math.isfinite(t) else 0
        if self.low is None:
            self.low = self.high = index
        self.low, self.high = min(self.low, index), max(self.high, index)
        while self.high - self.low >= RATE_BINS:
            self._coarsen()
            index = math.floor(t / self.width)
        counts = self.bins.setdefault(series, {})
        counts[index] = counts.get(index, 0) + 1

    def _coarsen(self):
        self.width *= 2
        self.low, self.high = self.low // 2, self.high // 2
        for series, counts in self.bins.items():
            merged = {}
            for index, count in counts.items():
                merged[index // 2] = merged.get(index // 2, 0) + count
            self.bins[series] = merged

    def chart(self):
        if not self.bins:
            return line_chart([], "", "", empty="no frames of a known protocol")
        total = sum(sum(counts.values()) for counts in self.bins.values())
        most = max(4, min(PLOTTED_BINS, total // 4))  # a few frames a bin, not a spike for each frame
        merge = 1
        while (self.high - self.low) // merge >= most:
            merge *= 2
        width = self.width * merge
        low, high = self.low // merge, self.high // merge
        protocols = sorted({title for title, _ in self.bins})
        series = []
        for (title, direction), counts in sorted(self.bins.items()):
            merged = {}
            for index, count in counts.items():
                merged[index // merge] = merged.get(index // merge, 0) + count
            points = [(index * width, merged.get(index, 0) / width) for index in range(low, high + 1)]
            color = PALETTE[protocols.index(title) % len(PALETTE)]
            series.append(Series(f"{title} {direction}", color, points, dashed=direction == "replies"))
        return line_chart(series, "time since the first frame", f"frames/s (bins of {seconds_label(width)})",
                          x_range=(low * width, high * width))


class _Timelines:
    """Players (and the maximum) per server over time, read from the analyzers' servers-seen tables.

    A table gives the server updated last first (``ServersSeen.newest_first``): after each record, the
    entries whose response count changed come first, read up to the first unchanged one."""

    def __init__(self):
        self.tables = []    # (protocol key, servers table)
        self.seen = {}      # (protocol, server) -> responses when last read
        self.samples = {}   # (protocol, server) -> [(t, players, max_players)]
        self.names = {}

    def watch(self, analyzers):
        for key, analyzer in sorted(analyzers.items()):
            servers = getattr(analyzer, "servers", None)
            if isinstance(servers, ServersSeen):
                self.tables.append((key, servers))

    def poll(self, t):
        for key, servers in self.tables:
            if len(servers):
                self._read_tail(key, servers, t)

    def _read_tail(self, key, servers, t):
        for server, responses in servers.newest_first():
            ident = (key, server)
            if self.seen.get(ident) == responses:
                return
            self.seen[ident] = responses
            if len(self.seen) > MAX_SEEN:  # forgetting costs one full read of the tables, not a wrong plot
                self.seen.clear()
            self._sample(ident, servers.get(server), t)

    def _sample(self, ident, entry, t):
        samples = self.samples.get(ident)
        if samples is None:
            if len(self.samples) >= MAX_TIMELINES:
                return
            samples = self.samples[ident] = []
        players, most = entry.get("players"), entry.get("max_players")
        if not isinstance(players, int):
            return
        samples.append((t, players, most if isinstance(most, int) else None))
        self.names[ident] = _first(entry, "host_name", "name")
        if len(samples) >= MAX_SAMPLES:
            del samples[1::2]

    def charts(self):
        chosen = sorted(self.samples.items(), key=lambda item: -len(item[1]))[:PLOTTED_SERVERS]
        chosen = [item for item in chosen if item[1]]
        if not chosen:
            return line_chart([], "", "", empty="no server reported its players")
        ends = [t for _, samples in chosen for t, _, _ in samples]
        span = (min(ends), max(ends))
        figures = []
        for index, ((key, server), samples) in enumerate(sorted(chosen)):
            color = PALETTE[index % len(PALETTE)]
            series = [Series("players", color, [(t, players) for t, players, _ in samples])]
            maxima = [(t, most) for t, _, most in samples if most is not None]
            if maxima:
                series.append(Series("maximum", "#999999", maxima, dashed=True))
            chart = line_chart(series, "time since the first frame", "players", width=360, height=170,
                               x_range=span if span[1] > span[0] else None)
            name = self.names.get((key, server)) or ""
            figures.append(f'<figure class="players" data-server="{text(server)}">{chart}<figcaption>'
                           f'{text(protocol_title(key))} {text(server)} {text(name)}</figcaption></figure>')
        return "".join(figures)


__all__ = ["HtmlReport", "write_report", "DEFAULT_LIMIT"]
