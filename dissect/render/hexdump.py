"""``-x``: the frame's bytes, each tied to the leaf field that covers it.

Every byte row is followed by a label row: a field's code stands under its first
byte (and again at the start of a row it continues on), ``--`` under the rest.
On a terminal each field's bytes are also coloured. A legend maps codes to keys.
"""

from .text import RESET, safe

_PALETTE = ["\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[35m", "\x1b[36m",
            "\x1b[91m", "\x1b[92m", "\x1b[93m", "\x1b[94m", "\x1b[95m", "\x1b[96m"]
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_ASCII = bytes(c if 0x20 <= c < 0x7F else 0x2E for c in range(256))  # the text column: printable ASCII, else "."


def label_code(index):
    """a..z, then aa, ab, ... (two characters at most for 702 fields, then numbers)."""
    if index < 26:
        return _LETTERS[index]
    index -= 26
    if index < 26 * 26:
        return _LETTERS[index // 26] + _LETTERS[index % 26]
    return str(index)


class Span:
    __slots__ = ("code", "key", "name", "offset", "length", "display")

    def __init__(self, code, key, name, offset, length, display):
        self.code = code
        self.key = key
        self.name = name
        self.offset = offset
        self.length = length
        self.display = display


def frame_spans(record):
    """Spans over the frame: one per lower layer, then the leaf fields of each message in the frame."""
    spans = []
    for layer in record.packet.layers:
        if layer.offset is not None:  # None: a reassembled datagram's header, in no one frame
            spans.append(Span(None, layer.key, layer.summary.split(",")[0], layer.offset, layer.length, ""))
    for msg in record.messages:
        if msg.offset is not None:
            spans.extend(message_spans(msg, msg.offset))
    return _coded(spans)


def message_spans(msg, base=0):
    spans = []
    for field in msg.fields:
        _leaf_spans(field, base, spans)
    return spans


def _coded(spans):
    for index, span in enumerate(spans):
        span.code = label_code(index)
    return spans


def _leaf_spans(field, base, spans):
    if field.generated or field.length <= 0:
        return
    real_children = [c for c in field.children if not c.generated and c.length > 0]
    if not real_children:
        spans.append(Span(None, field.key, field.name, base + field.offset, field.length, field.display))
        return
    # Bytes of the parent its children do not cover still belong to the parent.
    if not _covered(real_children, field.offset, field.offset + field.length):
        spans.append(Span(None, field.key, field.name, base + field.offset, field.length, field.display))
    for child in real_children:
        _leaf_spans(child, base, spans)


def _covered(children, start, end):
    """Whether ``children`` together cover every byte from ``start`` to ``end``."""
    reach = start
    for child in sorted(children, key=_offset):
        if child.offset > reach:
            break
        reach = max(reach, child.offset + child.length)
    return reach >= end


def _offset(field):
    return field.offset


class HexRenderer:
    def __init__(self, out, color=False):
        self.out = out
        self.color = color

    def frame(self, record):
        w = self.out.write
        w(f"Frame {record.number}: {record.wirelen} bytes on wire, {record.caplen} captured"
          f"{' — ' + safe(record.info) if record.info else ''}\n")
        self._dump(record.data, frame_spans(record))
        for msg in record.messages:
            if msg.offset is None:
                w(f"Reassembled {msg.protocol} {safe(msg.name or '')} from frame{'s' if len(msg.frames) > 1 else ''} "
                  f"{','.join(map(str, msg.frames))}: {msg.length} bytes\n")
                self._dump(msg.payload, _coded(message_spans(msg)))
        for finding in record.all_findings():
            w(f"  {finding.severity}: {finding.code}: {safe(finding.message)}\n")
        w("\n")

    def _dump(self, data, spans):
        owner = [None] * len(data)  # the index of the span each byte belongs to: the last span over it
        for index, span in enumerate(spans):
            start, end = max(0, span.offset), min(len(data), span.offset + span.length)
            if start < end:
                owner[start:end] = [index] * (end - start)
        hexed, text = data.hex(" "), data.translate(_ASCII).decode("ascii")
        label_rows = {}  # (span index, bytes) -> the label row under a row of that span's bytes alone
        digits = max(4, len(f"{len(data) - 1:x}"))  # every row's offset as wide as the last's (tshark: 5 past 64 KiB)
        for row in range(0, len(data), 16):
            end = min(row + 16, len(data))
            self._row(hexed[3 * row:3 * end - 1], text[row:end], owner[row:end], spans, row, label_rows, digits)
        self._legend(spans)

    def _row(self, hexed, text, owners, spans, row, label_rows, digits):
        """One row: its offset in ``digits`` hex digits, its bytes' ``hexed`` cells and ``text``, and the row of labels
        under them, where a run of one span's bytes is labelled by its code, then ``--`` (on a terminal, each of its
        bytes coloured alike)."""
        indent = " " * (digits + 2)
        runs = _runs(owners)
        if self.color:
            cells, chars = _coloured(hexed.split(" "), list(text), runs)
            shown, text = _halves(cells), "".join(chars)
        else:  # one more space after the eighth cell: the gap between the halves
            shown = hexed[:24] + " " + hexed[24:] if len(owners) > 8 else hexed
        if len(runs) == 1:
            key = (runs[0][2], len(owners))
            label_row = label_rows.get(key)
            if label_row is None:
                label_row = label_rows[key] = _label_row(runs, spans, indent)
        else:
            label_row = _label_row(runs, spans, indent)
        pad = " " * (49 - 3 * len(owners) - (len(owners) > 8))  # a short row's cells, spaces and gap take less than 48
        self.out.write(f"{row:0{digits}x}  {shown}{pad}  {text}\n{label_row}")

    def _legend(self, spans):
        if not spans:
            return
        self.out.write("  legend:\n")
        for index, span in enumerate(spans):
            code = f"{span.code:>3}"
            if self.color:
                code = _PALETTE[index % len(_PALETTE)] + code + RESET
            display = _clipped(span.display)
            self.out.write(f"  {code}  {span.key} [{span.offset}:{span.length}] {safe(span.name)}"
                           f"{': ' + display if display else ''}\n")

    def analysis(self, rec):
        pass


def _clipped(display, width=48):
    """The display escaped, cut to ``width`` characters between escapes (never inside one)."""
    shown = safe(display)
    if len(shown) <= width:
        return shown
    pieces, size = [], 0
    for char in display:
        piece = safe(char)
        if size + len(piece) > width - 3:
            break
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces) + "..."


def _coloured(cells, chars, runs):
    """A row's hex ``cells`` and text ``chars``, each byte of a span's runs in the span's colour."""
    for start, end, index in runs:
        if index is not None:
            colour = _PALETTE[index % len(_PALETTE)]
            cells[start:end] = [colour + cell + RESET for cell in cells[start:end]]
            chars[start:end] = [colour + char + RESET for char in chars[start:end]]
    return cells, chars


def _label_row(runs, spans, indent):
    """The labels under a row's ``runs``, after ``indent`` (the offset column's width), with their line end; "" where
    no byte has a span."""
    labels = []
    for start, end, index in runs:
        if index is None:
            labels.extend(["  "] * (end - start))
        else:
            labels.append(f"{spans[index].code:<2}")
            labels.extend(["--"] * (end - start - 1))
    label_row = f"{indent}{_halves(labels)}".rstrip()
    return label_row + "\n" if label_row else ""


def _runs(owners):
    """(start, end, owner) of each run of bytes with one owner in a row's ``owners``."""
    first = owners[0]
    if owners.count(first) == len(owners):  # a row inside one field: most rows of a long one
        return ((0, len(owners), first),)
    runs, start = [], 0
    for i in range(1, len(owners)):
        if owners[i] != owners[start]:
            runs.append((start, i, owners[start]))
            start = i
    runs.append((start, len(owners), owners[start]))
    return runs


def _halves(cells):
    return " ".join(cells[:8]) + ("  " + " ".join(cells[8:]) if len(cells) > 8 else "")
