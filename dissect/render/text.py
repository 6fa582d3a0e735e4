"""Summary lines and field trees, as text."""

import math
import time

from ..capture.layers import LINKTYPE_NAMES, layer_summary
from ..core import SEVERITIES, SEVERITY_RANK
from ..core.bounded import kept
from ..core.escape import printable
from ..core.model import AnalysisRecord, display_of
from ..core.fmt import decimal_text, endpoint
from .output import utf8_output
from ..registry import load_protocols

# Text from packets reaches the terminal only as printable characters (core/escape.py).


def safe(text):
    """``core.escape.printable``, a text of printable characters passed at once when compiled."""
    if _COMPILED and _printable(text) == 1:  # C (text.pxd): str.isprintable without a method call
        return text
    return printable(text)


# Compiled, a text of ASCII characters is checked eight bytes a step in C (-V on query traffic: safe took 230 M
# instructions with a loop over the characters, 517 M with str.isprintable's Unicode table lookups alone, 61 M now).
_COMPILED = not __file__.endswith(".py")


INDENT = ["    " * depth for depth in range(16)]
SEVERITY_COLOR = {"error": "\x1b[1;31m", "warning": "\x1b[33m", "note": "\x1b[36m", "chat": "\x1b[2m"}
RESET = "\x1b[0m"


def protocol_title(key):
    """A protocol's declared title; the lower layers' keys in capitals (UDP, TCP, IPV4...)."""
    title = _TITLES.get(key)
    if title is not None:
        return title
    cls = load_protocols().get(key)
    if cls is None or not cls.title:
        return key.upper()
    _TITLES[key] = cls.title  # a key, once registered, keeps its class (register refuses another)
    return cls.title


_TITLES = {}  # registered protocol key -> title


class SummaryRenderer:
    """``No. Time Source Destination Protocol Length Info``, one line a frame (tshark's columns)."""

    __slots__ = ("out", "color", "sources", "destinations", "columns", "write_bytes", "batched")

    def __init__(self, out, color=False):
        self.out = out
        self.color = color
        # Where the output takes UTF-8 as it is (the command's), a line goes as the bytes of its two ASCII
        # halves around the arrow's: as one text, the arrow would make the whole line two bytes a character,
        # to widen while joining and then to encode, several times the work of copying ASCII.
        self.write_bytes = getattr(out, "write_bytes", None)
        self.batched = utf8_output(out)
        # The padded Source and Destination columns by address, then port: a capture has few endpoints and
        # each comes back in many lines. At most PADDED_ENDPOINTS in all (then the tables start afresh). Compiled,
        # _line writes an address's column in C (text.pxd) and keeps only those it leaves to _column.
        self.sources = {}
        self.destinations = {}
        self.columns = 0

    def frame(self, record):
        packet = record.packet
        # tshark's columns, "%6d %11.6f %21s → %-21s %-8s %5d %s", as UTF-8 pieces joined once: the columns that
        # repeat (endpoints, protocol, length) are kept encoded, and the line is never one text, which the
        # arrow would make two bytes a character, to widen while joining and then to encode. What safe() returns
        # encodes as it is (it escapes lone surrogates), so the info takes the codec's shortest path.
        worst = _worst(record) if record.findings or _any_message_findings(record.messages) else None
        if _COMPILED:
            line = self._line(record, worst)
        else:
            head = _number_and_time(record.number, record.ts - record.first_ts)
            source = self._column(self.sources, packet.src, packet.sport, False)
            destination = self._column(self.destinations, packet.dst, packet.dport, True)
            info = safe(record.info)
            if worst:
                color = self.color
                line = b"".join((_SEVERITY_BYTES[worst] if color else b"", head, source, ARROW, destination,
                                 _padded_title(record.protocol), _length_column(record.wirelen), info.encode(),
                                 _WORST_TAILS[worst], RESET_BYTES if color else b"", b"\n"))
            else:
                line = b"".join((head, source, ARROW, destination, _padded_title(record.protocol),
                                 _length_column(record.wirelen), info.encode(), b"\n"))
        self._put(line)

    def _put(self, line):
        """A line of UTF-8 out: to the BatchedOutput in C where the output is one, as UTF-8 where it takes that."""
        if self.batched is not None:
            self.batched.add_utf8(line)
        elif self.write_bytes is not None:
            self.write_bytes(line)
        else:
            self.out.write(line.decode("utf-8"))

    def _line(self, record, worst):
        """frame's line as UTF-8, its parts copied into a C buffer (text.pxd) rather than joined (compiled only)."""
        packet = record.packet
        _line_start()
        if worst and self.color:
            _line_bytes(_SEVERITY_BYTES[worst])
        number, elapsed = record.number, record.ts - record.first_ts
        whole = _exact_micros(number, elapsed)
        if whole >= 0:
            _line_head(number, whole // 1000000, whole % 1000000)
        else:
            _line_bytes(_number_and_time(number, elapsed))
        if not _line_endpoint(packet.src, packet.sport, False):  # C (text.pxd): the column written in place
            _line_bytes(self._column(self.sources, packet.src, packet.sport, False))
        _line_bytes(ARROW)
        if not _line_endpoint(packet.dst, packet.dport, True):
            _line_bytes(self._column(self.destinations, packet.dst, packet.dport, True))
        _line_bytes(_padded_title(record.protocol))
        if not _line_length(record.wirelen):  # C (text.pxd), as the endpoints
            _line_bytes(_length_column(record.wirelen))
        if not _line_plain(record.info):
            _line_bytes(safe(record.info).encode())
        if worst:
            _line_bytes(_WORST_TAILS[worst])
            if self.color:
                _line_bytes(RESET_BYTES)
        _line_bytes(NEWLINE)
        return _line_take()

    def _column(self, table, ip, port, left):
        """An endpoint's column as UTF-8: padded to 21 characters, the Destination's with the space after it."""
        ports = table.get(ip)
        if ports is None:
            ports = table[ip] = {}
        text = ports.get(port)
        if text is None:
            if self.columns >= PADDED_ENDPOINTS:
                self.sources.clear()
                self.destinations.clear()
                self.columns = 0
                ports = table[ip] = {}
            shown = endpoint(ip, port)
            text = ports[port] = (shown.ljust(21) + " " if left else shown.rjust(21)).encode("utf-8", "replace")
            self.columns += 1
        return text

    def analysis(self, rec):
        if _COMPILED and self.write_bytes is not None and type(rec) is AnalysisRecord:
            self._put(_analysis_line(rec))
            return
        text = f"       [{rec.protocol} {rec.name}] {safe(rec.summary)} (frames {_frame_span(rec.frames)})"
        for finding in rec.findings:
            text += f"\n           {finding.severity}: {finding.code}: {safe(finding.message)}"
        if self.write_bytes is not None:  # bytes as the frames' lines: a change of kind would flush the batch
            self.write_bytes((text + "\n").encode("utf-8", "replace"))
        else:
            self.out.write(text + "\n")


def _analysis_line(rec):
    """SummaryRenderer.analysis's text as UTF-8, written into the C buffer of the summary lines (compiled only; an
    AnalysisRecord, its attributes read in C)."""
    _line_start()
    _line_bytes(b"       [")
    _line_text(rec.protocol)
    _line_bytes(b" ")
    _line_text(rec.name)
    _line_bytes(b"] ")
    _line_text(safe(rec.summary))
    _line_bytes(b" (frames ")
    if not _line_frames(rec.frames):  # C (text.pxd): a few frames' numbers written in place
        _line_text(_frame_span(rec.frames))
    _line_bytes(b")")
    for finding in rec.findings:
        _line_bytes(b"\n           ")
        _line_text(finding.severity)
        _line_bytes(b": ")
        _line_text(finding.code)
        _line_bytes(b": ")
        _line_text(safe(finding.message))
    _line_bytes(b"\n")
    return _line_take()


PADDED_ENDPOINTS = 8192  # both tables together (a capture's endpoints each sit in both): up to about 3 MB
ARROW = " → ".encode()
NEWLINE = b"\n"
RESET_BYTES = RESET.encode()
_SEVERITY_BYTES = {severity: color.encode() for severity, color in SEVERITY_COLOR.items()}
_WORST_TAILS = {severity: f"  [{severity}]".encode() for severity in SEVERITIES}


def _padded_title(key):
    """The Protocol column as UTF-8, padded to 8 characters, with the space after it. A frame's protocol is a
    registered key, whose title never changes, or a lower layer's, which no protocol may take (its fields would
    clash with the layer's): a handful of keys, each padded once."""
    text = _PADDED_TITLES.get(key)
    if text is None:
        text = _PADDED_TITLES[key] = f"{protocol_title(key).ljust(8)} ".encode("utf-8", "replace")
    return text


_PADDED_TITLES = {}


def _length_column(wirelen):
    """The Length column (``%5d``) as UTF-8, with the space after it; the lengths most frames have, made once."""
    if 0 <= wirelen < LENGTH_TEXTS:
        text = _LENGTHS[wirelen]
        if text is None:
            text = _LENGTHS[wirelen] = f"{wirelen:5d} ".encode()
        return text
    return f"{wirelen:5d} ".encode()


LENGTH_TEXTS = 2048
_LENGTHS = [None] * LENGTH_TEXTS


def _number_and_time(number, elapsed):
    """The No. and Time columns (``%6d %11.6f``) as UTF-8, with the space after them. Formatting the float costs
    three times as much as printing its microseconds as integers, and rounding them gives the same digits unless
    they lie near a tie, where the product's rounding error could tip it: there, and out of range, the float
    is formatted."""
    whole = _exact_micros(number, elapsed)
    if whole >= 0:
        return f"{number:6d} {whole // 1000000:4d}.{whole % 1000000:06d} ".encode()
    return f"{number:6d} {elapsed:11.6f} ".encode()


def _exact_micros(number, elapsed):
    """``elapsed`` in whole microseconds, where printing them gives the Time column's digits; -1 where the float is
    to be formatted (see _number_and_time)."""
    if 0.0 < elapsed < 1e6 and number >= 0:
        micros = elapsed * 1e6
        whole = int(micros + 0.5)
        if abs(micros - whole) < 0.499:
            return whole
    return -1


def _any_message_findings(messages):
    for msg in messages:
        if msg.findings:
            return True
    return False


def _frame_span(frames):
    if not frames:
        return "none"
    if len(frames) == 1:
        return decimal_text(frames[0])
    if len(frames) <= 6:
        return ",".join([decimal_text(frame) for frame in frames])
    return f"{frames[0]}-{frames[-1]}, {len(frames)} in all"


def _worst(record):
    """The worst severity among the frame's findings and its messages' (record.all_findings, without a
    generator)."""
    rank = _worst_rank(record.findings, -1)
    for msg in record.messages:
        rank = _worst_rank(msg.findings, rank)
    return SEVERITIES[rank] if rank >= 0 else None


def _worst_rank(findings, rank):
    for finding in findings:
        found = SEVERITY_RANK[finding.severity]
        if found > rank:
            rank = found
    return rank


class TreeRenderer:
    """``-V``: the frame, its layers, and each message's field tree with [offset:length]."""

    __slots__ = ("out", "color", "write_bytes")

    def __init__(self, out, color=False):
        self.out = out
        self.color = color
        self.write_bytes = getattr(out, "write_bytes", None)

    def frame(self, record):
        packet = record.packet
        lines = [_frame_title(record), _arrival_line(record.ts)]
        if record.linktype is not None:
            lines.append(_link_line(record.linktype))
        layers = packet.layers
        lines.append(_protocols_line(layers, record.messages))
        for finding in record.findings:
            lines.append("    " + self._finding(finding))
        for layer in layers:
            lines.append(safe(layer_summary(layer)))
        if packet.tcp_stream is not None:
            lines.append(f"    [Stream index: {packet.tcp_stream}]")
        if not record.messages and record.info:
            lines.append(f"    [{safe(record.info)}]")
        for msg in record.messages:
            self._message(msg, lines)
        lines.append("\n")
        if self.write_bytes is None:
            self.out.write("\n".join(lines))
        elif _COMPILED:
            # Encoded frame by frame, in C (text.pxd) line by line: lines of ASCII are copied as they are. Joined
            # first, one name in another script would widen the frame's text, to be encoded character by character.
            self.write_bytes(_utf8_lines(lines))
        else:
            self.write_bytes("\n".join(lines).encode("utf-8", "replace"))

    def _message(self, msg, lines):
        if self.write_bytes is not None and _COMPILED and type(msg.offset) is int and type(msg.length) is int:
            lines.append(_message_block(msg))  # its title line and field lines as one block of UTF-8 (C)
        else:
            where = f"[{decimal_text(msg.offset)}:{decimal_text(msg.length)}]" if msg.offset is not None else \
                f"[reassembled from frames {','.join(map(str, msg.frames))}, {msg.length} bytes]"
            lines.append(f"{protocol_title(msg.protocol)} {safe(msg.name or '')} {where}")
            if self.write_bytes is None or not _COMPILED:
                _field_lines(msg.fields, 1, lines)
            elif msg.fields:  # the field lines as one block of UTF-8, which frame's C join copies as it is
                lines.append(_field_block(msg.fields))
        for finding in msg.findings:
            lines.append("    " + self._finding(finding))

    def _finding(self, finding):
        where = "" if finding.offset is None else f" [{decimal_text(finding.offset)}:{decimal_text(finding.length)}]"
        text = f"[Expert Info ({finding.severity.capitalize()}/{finding.code}): {safe(finding.message)}]{where}"
        if self.color:
            text = SEVERITY_COLOR[finding.severity] + text + RESET
        return text

    def analysis(self, rec):
        w = self.out.write
        w(f"Analysis: {rec.protocol} {rec.name} (frames {_frame_span(rec.frames)})\n")
        w(f"    {safe(rec.summary)}\n")
        for finding in rec.findings:
            w("    " + self._finding(finding) + "\n")
        w("\n")


def _frame_title(record):
    if _COMPILED:
        title = _frame_title_text(record.number, record.wirelen, record.caplen)  # C (text.pxd): no int made a text
        if title is not None:
            return title
    return (f"Frame {record.number}: {decimal_text(record.wirelen)} bytes on wire ({record.wirelen * 8} bits), "
            f"{decimal_text(record.caplen)} bytes captured ({record.caplen * 8} bits)")


def _field_lines(fields, depth, lines):
    """One line per field, children indented under their parent; generated fields in brackets."""
    indent = INDENT[min(depth, len(INDENT) - 1)]
    for field in fields:
        if field.generated:  # as Wireshark: a generated field covering no bytes shows no range
            line = f"{indent}[{field.name}: {display_of(field)}]"
            if field.length:
                line += f" [{decimal_text(field.offset)}:{decimal_text(field.length)}]"
        else:
            line = (f"{indent}{field.name}: {display_of(field)} "
                    f"[{decimal_text(field.offset)}:{decimal_text(field.length)}]")
        lines.append(safe(line))
        if field.children:
            _field_lines(field.children, depth + 1, lines)


# Compiled, where the output takes UTF-8, the field lines are written as UTF-8 into a buffer in C (text.pxd): the
# same text as _field_lines's, without a str made and joined for each part of a line and each line.
def _field_block(fields):
    """The lines of _field_lines(fields, 1, ...) joined by newlines, as UTF-8."""
    _tree_start()
    _field_bytes(fields, 1)
    return _tree_take()


def _message_block(msg):
    """The message's title line, "<protocol title> <name> [offset:length]" (ints), then the lines of
    _field_lines(msg.fields, 1, ...), joined by newlines, as UTF-8."""
    _tree_start()
    _tree_str(f"{protocol_title(msg.protocol)}")
    _tree_raw(b" ", 1)
    _tree_str(f"{safe(msg.name or '')}")
    _tree_raw(b" [", 2)
    _tree_number(msg.offset)
    _tree_raw(b":", 1)
    _tree_number(msg.length)
    _tree_raw(b"]", 1)
    _field_bytes(msg.fields, 1)
    return _tree_take()


def _field_bytes(fields, depth):
    level = min(depth, len(INDENT) - 1)
    indent = INDENT[level]
    for field in fields:
        generated = field.generated  # as Wireshark: a generated field covering no bytes shows no range
        _tree_newline()
        tag = 2 * level + generated
        if not _tree_prefix(field.key, field.name, tag):  # C: the line up to its display, kept by the field's key
            start = _tree_size()
            _tree_text(indent)
            if generated:
                _tree_raw(b"[", 1)
            _tree_text(field.name)
            _tree_raw(b": ", 2)
            _tree_keep(field.key, field.name, tag, start)
        _tree_display(field)
        if generated:
            _tree_raw(b"]", 1)
        if (not generated or field.length) and not _tree_range(field.offset, field.length):  # C: small ints
            _tree_raw(b" [", 2)
            _tree_number(field.offset)
            _tree_raw(b":", 1)
            _tree_number(field.length)
            _tree_raw(b"]", 1)
        if _any(field.children):  # C: a list's or tuple's size read, no call
            _field_bytes(field.children, depth + 1)


def _tree_display(field):
    """_tree_text(display_of(field)). A field without a formatter and without a display of its own (most: numbers,
    names) has default_display's text written from its value: an int's digits in C, a str between quotes."""
    if field._display is None and not field.fmt:
        value = field.value
        if type(value) is int and _tree_int(value):
            return
        if type(value) is str:
            _tree_raw(b'"', 1)
            _tree_text(value)
            _tree_raw(b'"', 1)
            return
    _tree_text(display_of(field))


def _tree_text(text):
    """What an f-string makes of ``text``, as safe() shows it."""
    if not _tree_plain(text):  # C: a str of printable characters copied as UTF-8; 0 for anything else
        _tree_str(safe(text if type(text) is str else f"{text}"))


def _tree_number(value):
    """decimal_text(value): an int of 64 bits written in C."""
    if type(value) is not int or not _tree_int(value):
        _tree_text(decimal_text(value))


LINE_TEXTS = 256  # link-type and protocol-stack lines kept, by what they show: a capture has a few kinds of frame
_link_lines = {}
_protocols_lines = {}


def _link_line(linktype):
    if type(linktype) is not int:  # kept only by an int: 1.0 and True equal 1 but show otherwise
        return _link_text(linktype)
    line = _link_lines.get(linktype)
    if line is None:
        line = kept(_link_lines, linktype, _link_text(linktype), LINE_TEXTS)
    return line


def _link_text(linktype):
    return f"    Link type: {LINKTYPE_NAMES.get(linktype, 'unknown')} ({linktype})"


def _protocols_line(layers, messages):
    """The frame's "[Protocols in frame: eth:ip:udp:...]" line: its layers' keys and its first message's protocol."""
    keys = [layer.key for layer in layers]
    if messages:
        keys.append(messages[0].protocol)
    stack = tuple(keys)
    line = _protocols_lines.get(stack)
    if line is None:
        line = kept(_protocols_lines, stack, f"    [Protocols in frame: {':'.join(keys) or 'unknown'}]", LINE_TEXTS)
    return line


def _arrival_line(ts):
    """A frame's Arrival Time line: ``ts`` as utc_text shows it and as %.6f seconds since the epoch."""
    if _COMPILED and type(ts) is float and 1.0 <= ts < 1e10:
        # Compiled, in C (text.pxd) from the float's exact value: formatting the float and computing utc_text's
        # microseconds in Python took 10,000 instructions a frame. None where the C compiler has no 128-bit ints.
        line = _arrival_text(ts, _utc_second(int(_floor(ts))))
        if line is not None:
            return line
    return f"    Arrival Time: {utc_text(ts)} (epoch {ts:.6f})"


def utc_text(ts):
    try:
        whole = math.floor(ts)  # not int(): a time before 1970 has a negative whole part and a positive fraction
        return f"{_utc_second(whole)}.{min(999999, int(round((ts - whole) * 1e6))):06d} UTC"
    except (OverflowError, ValueError, OSError):
        return "invalid time"


_shown = (None, "")  # the last whole second shown and its text, one tuple: frames come many to a second


def _utc_second(whole):
    global _shown
    shown = _shown
    if whole != shown[0]:
        shown = _shown = (whole, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(whole)))
    return shown[1]
