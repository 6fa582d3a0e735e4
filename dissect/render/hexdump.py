"""``-x``: the frame's bytes, each tied to the leaf field that covers it.

Every byte row is followed by a label row: a field's code stands under its first
byte (and again at the start of a row it continues on), ``--`` under the rest.
On a terminal each field's bytes are also coloured. A legend maps codes to keys.
"""

from .text import RESET, safe

_PALETTE = ["\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[35m", "\x1b[36m",
            "\x1b[91m", "\x1b[92m", "\x1b[93m", "\x1b[94m", "\x1b[95m", "\x1b[96m"]
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_PRINTABLE = {c for c in range(0x20, 0x7F)}


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
    covered = set()
    for child in real_children:
        covered.update(range(child.offset, child.offset + child.length))
    gaps = [i for i in range(field.offset, field.offset + field.length) if i not in covered]
    if gaps:
        spans.append(Span(None, field.key, field.name, base + field.offset, field.length, field.display))
    for child in real_children:
        _leaf_spans(child, base, spans)


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
                w(f"Reassembled {msg.protocol} {safe(msg.name or '')} from frames "
                  f"{','.join(map(str, msg.frames))}: {msg.length} bytes\n")
                self._dump(msg.payload, _coded(message_spans(msg)))
        for finding in record.all_findings():
            w(f"  {finding.severity}: {finding.code}: {safe(finding.message)}\n")
        w("\n")

    def _dump(self, data, spans):
        owner = [None] * len(data)
        for index, span in enumerate(spans):
            for i in range(max(0, span.offset), min(len(data), span.offset + span.length)):
                owner[i] = index
        for row in range(0, len(data), 16):
            self._row(data, owner, spans, row)
        self._legend(spans)

    def _row(self, data, owner, spans, row):
        chunk = data[row:row + 16]
        hex_cells, labels, ascii_cells = [], [], []
        for i, byte in enumerate(chunk):
            index = owner[row + i]
            cell = f"{byte:02x}"
            char = chr(byte) if byte in _PRINTABLE else "."
            if index is None:
                label = "  "
            elif i == 0 or owner[row + i - 1] != index or spans[index].offset == row + i:
                label = f"{spans[index].code:<2}"
            else:
                label = "--"
            if self.color and index is not None:
                colour = _PALETTE[index % len(_PALETTE)]
                cell, char = colour + cell + RESET, colour + char + RESET
            hex_cells.append(cell)
            labels.append(label)
            ascii_cells.append(char)
        shown = 3 * len(chunk) - 1 + (len(chunk) > 8)  # cells, spaces, and the gap between the halves
        pad = " " * (48 - shown)
        self.out.write(f"{row:04x}  {_halves(hex_cells)}{pad}  {''.join(ascii_cells)}\n")
        label_row = f"      {_halves(labels)}".rstrip()
        if label_row:
            self.out.write(label_row + "\n")

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


def _halves(cells):
    return " ".join(cells[:8]) + ("  " + " ".join(cells[8:]) if len(cells) > 8 else "")
