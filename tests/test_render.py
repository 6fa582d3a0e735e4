"""The views: JSON that survives any value, text that never sends an invisible or control character to
the terminal, --stats durations; and the cursor's limit on decimal text."""

import io
import json
import random

import capkit
import dissect
import netquake_peer as nq
import pytest
from conftest import jsonl, run_cli

from dissect.capture.files import Frame
from dissect.capture.layers import Packet
from dissect.core import U32LE
from dissect.core.cursor import MAX_CSTRINGS, MAX_DECIMAL_DIGITS, Cursor, cut
from dissect.core.fmt import ValueTexts, dec_hex, decimal_text, endpoint, hex16, hex_text
from dissect.core.model import (AnalysisRecord, Field, Finding, Message, add_prepared, default_display, display_of,
                                prepared_finding)
from dissect.core.tables import FieldTable
from dissect.pipeline import FrameRecord
from dissect.render import jsonout
from dissect.render.hexdump import HexRenderer
from dissect.render.jsonout import JsonRenderer
from dissect.render.output import BatchedOutput
from dissect.render.stats import StatsCollector
from dissect.render.text import SummaryRenderer, TreeRenderer, safe, utc_text

TS = capkit.DEFAULT_TS
SERVER, CLIENT = ("10.0.0.1", 26000), ("10.0.0.7", 40000)


def record_with(values, number=1, info="", name="CCREP_PLAYER_INFO"):
    """A frame record holding one NetQuake message whose fields carry ``values`` in order, 4 bytes each."""
    packet = Packet()
    packet.src, packet.sport = SERVER
    packet.dst, packet.dport = CLIENT
    packet.transport, packet.top = "udp", "netquake"
    record = FrameRecord(Frame(number, TS + number, 60, 60, 1, b"\0" * 60), packet, TS)
    msg = Message("netquake", name, b"\0" * 4 * len(values), offset=42, frames=[number])
    msg.fields = [Field(f"netquake.test.{i}", f"value {i}", 4 * i, 4, value) for i, value in enumerate(values)]
    record.messages.append(msg)
    record.info = info
    return record


def as_json_array(*records, lines=False):
    out = io.StringIO()
    renderer = JsonRenderer(out, lines=lines)
    for record in records:
        if isinstance(record, AnalysisRecord):
            renderer.analysis(record)
        else:
            renderer.frame(record)
    renderer.close()
    return out.getvalue()


def values_of(frame):
    return [f["value"] for f in frame["messages"][0]["fields"]]


# -- JSON: integers beyond 64 bits, records that cannot be encoded ---------------------------------

BIG = [10 ** 20, 2 ** 64, -(10 ** 20), -(2 ** 63) - 1]
EDGES = [2 ** 64 - 1, -(2 ** 63), 0, 7]


def test_integers_beyond_64_bits_are_decimal_strings_and_the_next_record_survives():
    text = as_json_array(record_with(BIG + EDGES, 1), record_with([12], 2))
    records = json.loads(text)
    assert text.endswith("\n]\n") and [r["frame"] for r in records] == [1, 2]
    assert values_of(records[0]) == ["100000000000000000000", "18446744073709551616", "-100000000000000000000",
                                     "-9223372036854775809", 18446744073709551615, -9223372036854775808, 0, 7]
    assert records[0]["messages"][0]["fields"][0]["display"] == "100000000000000000000"
    assert records[0]["findings"] == [] and values_of(records[1]) == [12]


def test_analysis_result_beyond_64_bits_and_with_number_keys():
    rec = AnalysisRecord("soldat", "server_list", [3], {"players": 99999999999999999999, "by_slot": {1: "a"}},
                         summary="1 server")
    records = jsonl(as_json_array(rec, record_with([1], 4), lines=True))
    assert records[0]["result"] == {"players": "99999999999999999999", "by_slot": {"1": "a"}}
    assert records[0]["frames"] == [3] and records[1]["frame"] == 4


def test_the_standard_library_encoder_writes_the_same(monkeypatch):
    records = (record_with(BIG + EDGES, 1), AnalysisRecord("netquake", "player_walk", [1], {"n": 2 ** 70}))
    with_orjson = as_json_array(*records)
    monkeypatch.setattr(jsonout, "_orjson", lambda: None)  # as where orjson is not installed
    assert json.loads(as_json_array(*records)) == json.loads(with_orjson)


class _Unprintable:
    def __str__(self):
        raise RuntimeError("no text for this value")


def test_a_record_that_cannot_be_encoded_becomes_a_minimal_record():
    text = as_json_array(record_with([1], 1), record_with([_Unprintable()], 2), record_with([3], 3))
    records = json.loads(text)
    assert [r["frame"] for r in records] == [1, 2, 3]
    assert records[1] == {
        "kind": "frame", "frame": 2, "time": TS + 2, "protocol": "netquake",
        "findings": [{"code": "dissect.internal_error", "severity": "error",
                      "message": "this record could not be written as JSON: RuntimeError: no text for this value "
                                 "(a bug in dissect: the frame is reported and the capture goes on)",
                      "offset": None, "length": None}]}
    assert values_of(records[2]) == [3]


def test_a_record_that_cannot_be_built_becomes_a_minimal_record():
    broken = record_with([1], 2)
    broken.messages = None  # frame_dict cannot iterate it
    records = json.loads(as_json_array(record_with([1], 1), broken, record_with([3], 3)))
    assert [r["frame"] for r in records] == [1, 2, 3]
    assert records[1]["kind"] == "frame" and "messages" not in records[1]
    assert records[1]["findings"][0]["code"] == "dissect.internal_error"
    assert "TypeError" in records[1]["findings"][0]["message"]


def test_lone_surrogates_are_written_escaped():
    records = json.loads(as_json_array(record_with(["a\udc80b"], 1)))
    assert values_of(records[0]) == ["a\\udc80b"]


class _BytesOut:
    """An output that takes UTF-8 as it is, as the command's does."""

    def __init__(self):
        self.data = bytearray()

    def write_bytes(self, data):
        self.data += data


def as_json_bytes(*records, lines=True):
    """The records as the JSON view writes them to an output of UTF-8 (compiled: by the C writer)."""
    out = _BytesOut()
    out.write = lambda text: out.write_bytes(text.encode())  # close writes the end of an array as text
    renderer = JsonRenderer(out, lines=lines)
    assert renderer.compiled == dissect.compiled()
    for record in records:
        renderer.frame(record)
    renderer.close()
    return bytes(out.data)


# Where the C writers' digit counts change (below 10,000 an int's digits are placed at once, pair by pair), where
# CPython stops keeping an int in one digit (2**30, with its 30-bit digits) and a few larger powers, on both sides
# of zero.
DIGIT_EDGES = [sign * number for number in (1, 9, 10, 42, 99, 100, 305, 999, 1000, 1009, 2024, 9999, 10000, 99999,
                                            10 ** 8 - 1, 10 ** 8, 2 ** 30 - 1, 2 ** 30, 10 ** 18, 2 ** 62 - 1, 2 ** 62)
               for sign in (1, -1)] + [10 ** 19, 10 ** 19 - 1]
ASCII_TEXTS = ["".join(chr((start + i) % 128) for i in range(size)) for size in range(20) for start in (0, 27, 90)]
WRITTEN_VALUES = [
    *ASCII_TEXTS, 'a"b\\c', "\x7f", "eight bytes\x7f then DEL", "Grünt ☃ 名前 😀 and more than eight", "é\n" * 9,
    0, 7, -1, 4096, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, -(2 ** 63), *DIGIT_EDGES, None, True, False, b"",
    b"\x00\xff\x10",
    0.0, -0.0, 0.021944, 1e-4, 0.000123, 123.456, 1e16 - 2, -2.5, 1700000000.02686, 1700000000.0, -1700000000.5,
    8589934591.999999, 8589934592.5, 1.0000005, 0.1 + 0.2]
LEFT_TO_ORJSON = [9.9e-5, 1e16, float("inf"), float("nan"), 2 ** 64, -(2 ** 63) - 1, "a\udc80b", bytearray(b"\x01"),
                  [1, b"\x02"], (3,), {"a": 1}, 1.5e-300]


def _with_children(record):
    parent = record.messages[0].fields[0]
    parent.children = [Field("netquake.test.child", 'child "1"', 0, 2, b"\x01\x02", fmt=lambda v: v.hex(":")),
                       Field("netquake.test.child", "child 2", 2, 2, -7)]
    return record


@pytest.mark.parametrize("value", WRITTEN_VALUES + LEFT_TO_ORJSON, ids=repr)
def test_records_written_as_utf8_are_the_json_of_their_dicts(value):
    """Frame records written for an output of bytes (compiled: by the C writer, or as dicts where it leaves a
    value to orjson) are the JSON the text output writes of frame_dict's, one per line and as an array."""
    def records():
        first = _with_children(record_with(["first", value, 3], 5))
        first.messages[0].findings.append(Finding("netquake.test", "warning", value, 4, None))
        second = Message("netquake", value, b"\0" * 8, offset=None, frames=[5, 6])
        second.fields = [Field("netquake.test.second", "second", 0, 8, b"\x01" * 8)]
        first.messages.append(second)
        first.findings.append(Finding("dissect.test", "error", "frame", None, None))
        first.info = value
        return first, record_with([value], 6)
    for lines in (True, False):
        assert as_json_bytes(*records(), lines=lines) == as_json_array(*records(), lines=lines).encode()


def test_records_passed_on_as_utf8_lines_make_the_same_array():
    """-j's parent passes the workers' lines on with ``encoded_utf8``: as it is to an output of bytes, decoded to
    one of text; either way the array one process writes (separators, brackets and the characters escaped)."""
    records = (_with_children(record_with(["Grünt ☃", 2 ** 70, "\x1b[31m"], 1)), record_with([7], 2),
               AnalysisRecord("netquake", "player_walk", [1], {"n": 2}))
    expected = as_json_array(*records)
    lines = as_json_array(*records, lines=True).encode().split(b"\n")
    assert len(lines) == 4 and lines[-1] == b""
    for out in (_BytesOut(), io.StringIO()):
        if isinstance(out, _BytesOut):
            out.write = lambda text, out=out: out.write_bytes(text.encode())
        renderer = JsonRenderer(out, lines=False)
        for line in lines[:-1]:
            renderer.encoded_utf8(line)
        renderer.close()
        written = bytes(out.data).decode() if isinstance(out, _BytesOut) else out.getvalue()
        assert written == expected


@pytest.mark.skipif(not dissect.compiled(), reason="the pure-Python build builds every record's dicts")
def test_the_compiled_writer_leaves_to_orjson_only_what_it_cannot_write():
    import orjson
    for value in WRITTEN_VALUES:
        record = record_with([value])
        record.messages[0].findings.append(Finding("netquake.test", "warning", f"odd {value!r}", 4, None))
        written = jsonout.terminal_safe_utf8(orjson.dumps(jsonout.frame_dict(record)))  # as the dicts' path writes
        assert jsonout._frame_json(record, True) == written + b"\n", value
    for value in LEFT_TO_ORJSON:
        assert jsonout._frame_json(record_with([value]), False) is None, value


@pytest.mark.skipif(not dissect.compiled(), reason="the pure-Python build builds every record's dicts")
def test_the_compiled_writer_writes_floats_as_orjson_does():
    """Floats of whole microseconds take a shortcut in C (below 2**33), the others Python's repr: both are the
    digits orjson writes, for capture times, response times and any float from 1e-4 to 1e16."""
    import orjson
    draw = random.Random(7)
    values = [draw.randrange(10 ** 6, 2 ** 33 * 10 ** 6) / 1e6 for _ in range(3000)]
    values += [draw.uniform(1e-4, 10) for _ in range(1000)] + [draw.randrange(100, 10 ** 7) / 1e6 for _ in range(1000)]
    values += [-value for value in values[::7]] + [10 ** draw.uniform(-4, 16) for _ in range(1000)]
    for value in values:
        record = record_with([value])
        record.ts = value
        written = jsonout.terminal_safe_utf8(orjson.dumps(jsonout.frame_dict(record)))  # as the dicts' path writes
        assert jsonout._frame_json(record, True) == written + b"\n", value


@pytest.mark.skipif(not dissect.compiled(), reason="the pure-Python build builds every record's dicts")
def test_the_compiled_writer_keeps_each_keys_text_and_writes_other_names_in_full():
    """A field's key and name are kept as written, by the key's object: the same key with another name (an equal
    text that is another object, a longer name than is kept), more keys than the writer keeps, are written as
    orjson writes frame_dict's."""
    import orjson
    key, long_name = "netquake.test.kept", "long " * 40
    keys = [f"netquake.test.{index}" for index in range(3000)]
    for round in range(3):
        record = record_with([1])
        names = ["first", 'second "2"', "first", "".join(["fir", "st"]), "😀", long_name, long_name, "first"]
        fields = [Field(key, name, 0, 1, round) for name in names]
        fields += [Field(each, f"name {index % 3}", 0, 1, index) for index, each in enumerate(keys)]
        fields += [Field(long_name, "x", 0, 1, 0), Field(key, None, 0, 1, 0), Field(None, "first", 0, 1, 0)]
        record.messages[0].fields = fields
        assert jsonout._frame_json(record, True) == orjson.dumps(jsonout.frame_dict(record)) + b"\n", round


# -- text: every character that is not printable is escaped -------------------------------------------

@pytest.mark.parametrize("raw, shown", [
    ("Ranger", "Ranger"),
    ("Grünt ☃ 名前", "Grünt ☃ 名前"),
    ("\u202eregnaR\u202c", "\\u202eregnaR\\u202c"),          # right-to-left override, pop
    ("\u2066a\u2067b\u2068c\u2069", "\\u2066a\\u2067b\\u2068c\\u2069"),  # isolates
    ("one\u2028two", "one\\u2028two"),                        # line separator
    ("a\u200db", "a\\u200db"),                                # zero-width joiner
    ("\U000e0041tag", "\\U000e0041tag"),                      # a tag character
    ("soft\xadhy\xa0phen", "soft\\xadhy\\xa0phen"),            # latin-1 format and space characters
    ("\x1b[2J\x07\x85", "\\x1b[2J\\x07\\x85"),                # C0 and C1 as before
    ("a\nb\rc\td", "a\\nb\\rc\\td"),
])
def test_safe_escapes_what_is_not_printable(raw, shown):
    assert safe(raw) == shown


ASCII_CONTROLS = [chr(code) for code in range(0x20)] + ["\x7f"]


@pytest.mark.parametrize("size", range(1, 20))
def test_safe_finds_an_ascii_control_character_at_every_place(size):
    # Compiled, ASCII text is checked eight bytes a step, then byte by byte: a control character in each byte of
    # a step and of the tail, next to the printable characters at both ends of the range (space and ~).
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    for place in range(size):
        for control in ASCII_CONTROLS:
            text = "".join(" ~"[(place + i) % 2] for i in range(size))
            raw = text[:place] + control + text[place + 1:]
            shown = text[:place] + named.get(control, f"\\x{ord(control):02x}") + text[place + 1:]
            assert safe(raw) == shown, (size, place, control)


def test_safe_of_what_is_not_text_raises_instead_of_reading_it():
    # Compiled, the eight-byte check reads a str's characters in C: anything else must not reach it.
    for value in (None, b"bytes", 7):
        with pytest.raises((TypeError, AttributeError)):
            safe(value)


@pytest.mark.parametrize("size", range(0, 20))
def test_safe_keeps_printable_ascii_of_every_length(size):
    text = "".join(chr(0x20 + (i * 7) % 0x5f) for i in range(size))  # spaces, tildes and what lies between
    assert safe(text) is text
    assert safe(text + "\u202e") == text + "\\u202e"  # the same text after a non-ASCII one is checked whole


@pytest.mark.parametrize("number", [0, 1, 4095, 4096, -1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64 + 5, -2 ** 63,
                                    -2 ** 63 - 1, 10 ** 30, *DIGIT_EDGES])
def test_decimal_text_is_the_numbers_text_inside_and_outside_its_table(number):
    assert decimal_text(number) == str(number)
    assert default_display(number) == str(number)


def test_decimal_text_of_what_is_not_an_int_is_its_str():
    assert [decimal_text(value) for value in (True, False, None, 2.5, "7")] == ["True", "False", "None", "2.5", "7"]


@pytest.mark.parametrize("number", [0, 9, 10, 42, 255, 4096, -1, -42, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64,
                                    -(2 ** 63), -(2 ** 63) - 1, -(2 ** 64), 10 ** 30, -(10 ** 30), *DIGIT_EDGES])
def test_dec_hex_and_hex_text_are_their_format_specs_texts(number):
    """Compiled, ints of 64 bits are written in C: the texts are format()'s, within 64 bits and past them."""
    magnitude = abs(number)
    sign = "-" if number < 0 else ""
    assert dec_hex(number) == f"{sign}{magnitude} ({sign}0x{magnitude:x})"
    for width in (0, 1, 2, 4, 8, 16, 17, 32, 33, 40):
        assert hex_text(number, width) == format(number, f"0{width}x").join(["0x", ""])
    assert hex16(number) == "0x" + format(number, "04x")


def test_value_texts_show_every_value_as_their_formatter_and_read_the_ints_of_their_table():
    """A ValueTexts formatter's texts are its formatter's, made once for the ints and texts it lists and for False and
    True (the formatter shows a bool its own way: True == 1); any other value, and an int it does not list, go to the
    formatter."""
    names = {0: "zero", 1: "one"}
    calls = []

    def fmt(value):
        calls.append(value)
        return f"{names[value]} ({value})" if value in names else repr(value)

    texts = ValueTexts(fmt, [0, 1, 7, True, "x"])
    assert texts.texts == {0: "zero (0)", 1: "one (1)", 7: "7", "x": "'x'"} and calls == [0, 1, 7, "x", False, True]
    assert texts.bool_texts == ("zero (False)", "one (True)")
    del calls[:]
    assert [texts(value) for value in (0, 1, 7, False, True, "x")] == ["zero (0)", "one (1)", "7", "zero (False)",
                                                                       "one (True)", "'x'"] and calls == []
    for value in (2, -1, True, False, "x", "y", None, 2 ** 70, 1.0):
        assert texts(value) == fmt(value)
    with pytest.raises(TypeError):  # as the formatter's own lookup raises (display_of then shows the default)
        texts([1])
    shown = [Field("netquake.test", "n", 0, 1, value, fmt=texts) for value in (1, True, 3)]
    del calls[:]
    assert [display_of(field) for field in shown] == ["one (1)", "one (True)", "3"] and calls == [3]

    def ints_only(value):
        if type(value) is not int:
            raise TypeError(value)
        return f"#{value}"

    marks = ValueTexts(lambda value: f"<{value!r}>", [b"iext", 3])  # bytes listed too, each by its own text
    assert marks.texts == {b"iext": "<b'iext'>", 3: "<3>"} and marks(b"iext") == "<b'iext'>"
    assert [marks(value) for value in (bytearray(b"iext"), "iext", b"iex+")] == ["<bytearray(b'iext')>", "<'iext'>",
                                                                                "<b'iex+'>"]

    strict = ValueTexts(ints_only, [1])
    assert strict.bool_texts == (None, None)
    with pytest.raises(TypeError):  # a bool it raised for at the start goes to it again when shown
        strict(True)
    assert display_of(Field("netquake.test", "n", 0, 1, True, fmt=strict)) == "True"


def test_the_str_formatter_shows_a_text_as_it_is_and_anything_else_as_str_does():
    class Text(str):
        def __str__(self):
            return "its own"

    shown = [Field("netquake.test", "s", 0, 1, value, fmt=str) for value in ("abc", "", Text("x"), 5, b"\x01")]
    assert [display_of(field) for field in shown] == ["abc", "", "its own", "5", "b'\\x01'"]


def test_dec_hex_and_hex_text_of_known_numbers_and_of_what_is_not_an_int():
    assert [dec_hex(value) for value in (0, 42, -42, 2 ** 64 - 1)] == [
        "0 (0x0)", "42 (0x2a)", "-42 (-0x2a)", "18446744073709551615 (0xffffffffffffffff)"]
    assert [hex_text(value, 8) for value in (0, 0xDEADBEEF, 2 ** 32, -1)] == ["0x00000000", "0xdeadbeef", "0x100000000",
                                                                             "0x-0000001"]
    assert [dec_hex(True), hex_text(True, 4), hex_text(False, 2)] == ["True (0x1)", "0x0001", "0x00"]
    with pytest.raises(TypeError):
        dec_hex(None)
    with pytest.raises(ValueError):
        hex_text(2.5, 4)


def test_decimal_text_of_what_is_not_an_int_is_its_text():
    class Port(int):
        def __str__(self):
            return "port " + int.__str__(self)

    assert [decimal_text(value) for value in (True, False, 3.5, None, "7", Port(7))] == ["True", "False", "3.5", "None",
                                                                                    "7", "port 7"]
    assert [default_display(value) for value in (True, "x", b"\x01\x02", None, 2.5)] == ["True", '"x"', "01 02", "",
                                                                                         "2.5"]


def test_safe_returns_printable_text_itself():
    text = "Shambler 13/8"
    assert safe(text) is text
    beyond_ascii = "Ünited Ström 東京"  # printable beyond ASCII: the compiled check reads the Unicode database
    assert safe(beyond_ascii) is beyond_ascii


class _Text(str):
    """A str subclass, as a plugin may put in a value."""


def test_safe_takes_a_str_subclass():
    # the compiled check once refused what is not an exact str (TypeError); the interpreted one took it
    assert safe(_Text("plain")) == "plain"
    assert safe(_Text("Ünited")) == "Ünited"
    assert safe(_Text("tab\there")) == "tab\\there"
    assert safe(_Text("\u202eregnaR")) == "\\u202eregnaR"


def test_summary_tree_and_hex_escape_format_characters():
    record = record_with(["\u202eregnaR\u2069"], info='CCREP_PLAYER_INFO name="\u202eregnaR"')
    record.messages[0].findings.append(Finding("netquake.test", "warning", "name \u2066x\u2069 odd", 4, 4))
    for renderer in (SummaryRenderer, TreeRenderer, HexRenderer):
        out = io.StringIO()
        renderer(out).frame(record)
        text = out.getvalue()
        assert not any(ch in text for ch in "\u202e\u2066\u2069"), renderer
        assert "\\u202eregnaR" in text, renderer
    out = io.StringIO()
    TreeRenderer(out).frame(record)
    assert '    value 0: "\\u202eregnaR\\u2069" [0:4]' in out.getvalue().splitlines()
    assert "[Expert Info (Warning/netquake.test): name \\u2066x\\u2069 odd] [4:4]" in out.getvalue()
    out = io.StringIO()
    HexRenderer(out).frame(record)
    assert '    a  netquake.test.0 [42:4] value 0: "\\u202eregnaR\\u2069"' in out.getvalue().splitlines()


class _Batched:
    """The command's output: a BatchedOutput over a binary stream (compiled, the summary writes its lines in C)."""

    def __init__(self):
        self.raw = io.BytesIO()
        self.out = BatchedOutput(io.TextIOWrapper(self.raw, encoding="utf-8", write_through=True))

    def text(self):
        self.out.flush()
        return self.raw.getvalue().decode()


def test_summary_writes_the_same_lines_as_utf8_as_it_writes_as_text():
    record = record_with([1], info='CCREP_PLAYER_INFO name="Zoë\u202e"')
    record.messages[0].findings.append(Finding("netquake.test", "warning", "odd", 4, 4))
    plain = record_with([1], number=2, info="CCREP_PLAYER_INFO")
    control = record_with([1], number=3, info="tab\there")  # ASCII, but not printable
    rec = AnalysisRecord("netquake", "player_walk", [1, 2], {}, summary="walk → Zoë")
    for color in (False, True):
        text, utf8, batched = io.StringIO(), _BytesOut(), _Batched()
        for out in (text, utf8, batched.out):
            renderer = SummaryRenderer(out, color)
            renderer.frame(record)
            renderer.frame(plain)
            renderer.analysis(rec)
            renderer.frame(control)
        assert utf8.data.decode() == text.getvalue() == batched.text()
        first, second, walk, third = text.getvalue().splitlines()
        assert third.endswith("NetQuake    60 tab\\there")
        assert first.endswith(' CCREP_PLAYER_INFO name="Zoë\\u202e"  [warning]' + ("\x1b[0m" if color else ""))
        assert first.startswith("\x1b[33m     1" if color else "     1") and " → " in first
        assert second == ("     2    2.000000        10.0.0.1:26000 → 10.0.0.7:40000        NetQuake    60 "
                          "CCREP_PLAYER_INFO")
        assert walk == "       [netquake player_walk] walk → Zoë (frames 1,2)"


def test_summary_analysis_lines_as_utf8_are_the_text_of_every_kind_of_record():
    """Compiled, an analysis record's summary lines are written in C: the same characters as the text output for
    frames none, one, six, seven and not ints, summaries and messages to escape, names that are not text."""
    findings = [Finding("soldat.test", "warning", "bad\x1b[2J ☃", None, None), Finding("x", "note", "fine", 1, 2)]
    records = [AnalysisRecord("netquake", "player_walk", frames, {}, findings=found, summary=summary)
               for frames, found, summary in (([], [], "none"), ([7], findings, "walk → Zoë"),
                                             ([1, 2, 3, 4, 5, 4096], [], "tab\there"),
                                             ([1, 2, 3, 4, 5, 6, 7], findings[1:], "seven"),
                                             ([2 ** 70, -1, None], [], "odd frames"))]
    records.append(AnalysisRecord(12, None, [3], {}, summary="names"))
    text, batched = io.StringIO(), _Batched()
    for out in (text, batched.out):
        renderer = SummaryRenderer(out)
        for rec in records:
            renderer.analysis(rec)
    assert batched.text() == text.getvalue()
    assert text.getvalue().splitlines() == [
        "       [netquake player_walk] none (frames none)",
        "       [netquake player_walk] walk → Zoë (frames 7)",
        "           warning: soldat.test: bad\\x1b[2J ☃", "           note: x: fine",
        "       [netquake player_walk] tab\\there (frames 1,2,3,4,5,4096)",
        "       [netquake player_walk] seven (frames 1-7, 7 in all)", "           note: x: fine",
        "       [netquake player_walk] odd frames (frames 1180591620717411303424,-1,None)",
        "       [12 None] names (frames 3)"]


def test_summary_analysis_line_of_a_record_that_is_not_an_analysis_record_itself():
    """Compiled, an AnalysisRecord's line is written from its attributes in C; a subclass of it, or another object
    with the same attributes (an analyzer's own), takes the text path: the same line."""
    class Subclass(AnalysisRecord):
        pass

    class Own:
        protocol, name, summary, frames = "quake3", "status", "tab\there", [4, 5]
        findings = [Finding("quake3.test", "note", "odd \x1b", None, None)]

    made = [kind("quake3", "status", [4, 5], {}, findings=Own.findings, summary="tab\there")
            for kind in (AnalysisRecord, Subclass)] + [Own()]
    batched = _Batched()
    renderer = SummaryRenderer(batched.out)
    for rec in made:
        renderer.analysis(rec)
    assert batched.text() == ("       [quake3 status] tab\\there (frames 4,5)\n"
                              "           note: quake3.test: odd \\x1b\n") * 3


def test_tree_writes_the_same_text_as_utf8_as_it_writes_as_text():
    """-V goes out as each frame's UTF-8 where the output takes it (compiled, line by line: lines of ASCII copied,
    the others encoded): frames with names in other scripts (Latin-1, two- and four-byte UTF-8, empty, ASCII
    between them) and one of ASCII alone, the same characters either way."""
    frames = [record_with(["Zoë 忍者", "", "plain", "😀 ü"], info="CCREP_PLAYER_INFO"),
              record_with([7], number=2, info="x"), record_with(["ü"], number=3, info="y")]
    text, utf8 = io.StringIO(), _BytesOut()
    for out in (utf8, text):  # the C writer first, before the text output makes the displays
        renderer = TreeRenderer(out)
        for record in frames:
            renderer.frame(record)
    assert bytes(utf8.data) == text.getvalue().encode()
    lines = text.getvalue().splitlines()
    assert {'    value 0: "Zoë 忍者" [0:4]', '    value 3: "😀 ü" [12:4]', '    value 0: "ü" [0:4]'} <= set(lines)


@pytest.mark.parametrize("number, wirelen, caplen", [
    (1, 60, 60), (0, 0, 0), (999_999, 1514, 96), (10_000, 9, 10), (2 ** 40 - 1, 2 ** 40 - 1, 99_999_999),
    (2 ** 40, 5, 5), (7, 2 ** 62, 2 ** 70)])
def test_tree_frame_line_gives_the_numbers_and_bits(number, wirelen, caplen):
    """Compiled, the Frame line of small ints is written in C; larger ones as Python writes them."""
    record = record_with([1], number=number)
    record.wirelen, record.caplen = wirelen, caplen
    out = io.StringIO()
    TreeRenderer(out).frame(record)
    assert out.getvalue().splitlines()[0] == (f"Frame {number}: {wirelen} bytes on wire ({wirelen * 8} bits), "
                                              f"{caplen} bytes captured ({caplen * 8} bits)")


def test_tree_field_lines_written_as_utf8_are_the_text_of_every_kind_of_field():
    """Compiled, a message's field lines go out as one block written in C: the same characters as the text output
    for generated fields with and without a length, children past the deepest indent, names and displays that
    need escaping or are not text, offsets and lengths that are not small ints."""
    record = record_with(WRITTEN_VALUES + LEFT_TO_ORJSON + ["tab\there", "\u202eRLO", "a\udc80b"])
    fields = record.messages[0].fields
    fields[0].generated = True
    fields[1].generated, fields[1].length = True, 0
    fields[2].name, fields[3].name, fields[4].name = None, 12, "name\x1b[2J"
    fields[5].offset, fields[6].length, fields[7].offset, fields[8].length = 2 ** 70, -(2 ** 63) - 1, True, None
    fields[9].offset, fields[9].length = -5, 2 ** 64
    parent = fields[10]
    for depth in range(17):  # INDENT has 16
        child = Field("netquake.test.deep", f"depth {depth}", depth, 1, depth, fmt=lambda v: f"level\n{v}")
        parent.children = [child, Field("netquake.test.leaf", "leaf", 0, 0, "ü", generated=True)]
        parent = child
    text, utf8 = io.StringIO(), _BytesOut()
    for out in (utf8, text):  # the C writer first, before the text output makes the displays
        TreeRenderer(out).frame(record)
    assert bytes(utf8.data) == text.getvalue().encode("utf-8", "replace")
    lines = text.getvalue().splitlines()
    assert lines[5:16] == [
        '    [value 0: ""] [0:4]', '    [value 1: ""]', '    None: "" [8:4]', '    12: "\\x00" [12:4]',
        '    name\\x1b[2J: "\\x1b" [16:4]', '    value 5: "Z" [1180591620717411303424:4]',
        '    value 6: "\\x00\\x01" [24:-9223372036854775809]', '    value 7: "\\x1b\\x1c" [True:4]',
        '    value 8: "Z[" [32:None]', '    value 9: "\\x00\\x01\\x02" [-5:18446744073709551616]',
        '    value 10: "\\x1b\\x1c\\x1d" [40:4]']
    assert "    " * 15 + "depth 16: level\\n16 [16:1]" in lines and "    " * 15 + "[leaf: \"ü\"]" in lines


def test_tree_field_lines_of_one_key_with_other_names_depths_and_kinds_are_the_text():
    """Compiled, a field line's start (indent to name) is kept by the field's key: the same key under other names
    (an equal text that is another object, one to escape, a longer one than is kept), at other depths, generated
    or not, and more keys than are kept, are written as the text output writes them."""
    key, long_name = "netquake.test.kept", "long " * 40
    names = ["first", "second", "first", "".join(["fir", "st"]), "esc\x1b", "😀", long_name, long_name, "first"]
    record = record_with([1])
    fields = [Field(key, name, 0, 1, index, generated=index % 2 == 1) for index, name in enumerate(names)]
    fields += [Field(f"netquake.test.{index}", f"name {index % 3}", 0, 1, index) for index in range(3000)]
    fields[0].children = [Field(key, "first", 0, 1, 0), Field(key, "first", 0, 0, 0, generated=True)]
    fields[0].children[0].children = [Field(key, "first", 0, 1, 0)]
    record.messages[0].fields = fields
    for _ in range(2):
        text, utf8 = io.StringIO(), _BytesOut()
        for out in (utf8, text):  # the C writer first, before the text output makes the displays
            TreeRenderer(out).frame(record)
        assert bytes(utf8.data) == text.getvalue().encode()
    lines = text.getvalue().splitlines()
    assert lines[5:11] == ['    first: 0 [0:1]', '        first: 0 [0:1]', '            first: 0 [0:1]',
                           '        [first: 0]', '    [second: 1] [0:1]', '    first: 2 [0:1]']


ARRIVALS = [1.0, 1.5, 1700000000.0, 1700000000.0078125, 1700000000.0234375, 1700000000.9999995,
            1700000000.9999996, 1699999999.9999999, 9999999999.999998, 12345.678901, 86399.9999994, 0.5, 0.0, -1.25,
            1e10, float("inf"), float("nan"), 1e300]


@pytest.mark.parametrize("ts", ARRIVALS + [random.Random(seed).uniform(1, 1e10) for seed in range(200)]
                         + [random.Random(seed).uniform(1e9, 2e9) // 1e-7 * 1e-7 for seed in range(200)])
def test_arrival_time_line_is_utc_text_and_the_epoch_to_six_places(ts):
    """Compiled, the Arrival Time line is made in C from the float's exact value: the same text as utc_text and
    %.6f, ties (1/128 of a second ends in 5 at the seventh place) rounded half to even as %.6f rounds them."""
    record = record_with([1])
    record.ts = ts
    out = io.StringIO()
    TreeRenderer(out).frame(record)
    assert out.getvalue().splitlines()[1] == f"    Arrival Time: {utc_text(ts)} (epoch {ts:.6f})"


@pytest.mark.parametrize("number, elapsed, wirelen", [
    (1, 0.0, 60),                    # the first frame: no time since the first
    (7, -2.5, 1514),                 # a frame stamped before the first
    (123456, 0.000001, 2047),        # the last length kept made
    (1234567, 12345.678901, 2048),   # columns wider than their width: they widen, as %6d and %11.6f do
    (3, 1e7, 70000),                 # out of the integer path's range
    (999999, 999999.999999, 9),      # the widest columns that do not widen
    (5, 0.0000005, 60),              # half a microsecond, near a tie: formatted
])
def test_summary_columns_are_tsharks_printf_formats(number, elapsed, wirelen):
    record = record_with([1], number=number, info="x")
    record.first_ts, record.ts, record.wirelen = TS, TS + elapsed, wirelen
    for out in (io.StringIO(), _BytesOut(), _Batched()):
        renderer = SummaryRenderer(out.out if isinstance(out, _Batched) else out)
        renderer.frame(record)
        renderer.frame(record)  # the columns made once, then reused
        text = out.getvalue() if isinstance(out, io.StringIO) else out.text() if isinstance(out, _Batched) else \
            out.data.decode()
        line = "%6d %11.6f %21s → %-21s %-8s %5d %s\n" % (number, record.ts - TS, "10.0.0.1:26000", "10.0.0.7:40000",
                                                         "NetQuake", wirelen, "x")
        assert text == line * 2


def test_hex_legend_cuts_a_long_display_between_escapes():
    record = record_with(["x" * 38 + "\u202e" * 4])  # shown as '"', 38 x, four 6-character escapes, '"'
    out = io.StringIO()
    HexRenderer(out).frame(record)
    line = [ln for ln in out.getvalue().splitlines() if "netquake.test.0" in ln][0]
    assert line.endswith(': "' + "x" * 38 + "\\u202e...")  # 39 + 6 fills 45 characters: the next escape waits


def _hex_record():
    """26 bytes: a message from byte 3, its field "first" over bytes 3 to 7, "parent" over 13 to 24 and its child
    over 15 to 18 (the parent's other bytes are still its own); bytes 0 to 2, 8 to 12 and 25 belong to no field."""
    data = bytearray(range(0x3E, 0x3E + 26))
    data[8] = 0x0A
    packet = Packet()
    packet.src, packet.sport = SERVER
    packet.dst, packet.dport = CLIENT
    record = FrameRecord(Frame(1, TS + 1, 26, 26, 1, bytes(data)), packet, TS)
    msg = Message("netquake", "CCREP_PLAYER_INFO", bytes(data[3:]), offset=3, frames=[1])
    parent = Field("netquake.test.b", "parent", 10, 12, None)
    parent.children = [Field("netquake.test.c", "child", 12, 4, 7)]
    msg.fields = [Field("netquake.test.a", "first", 0, 5, "x"), parent]
    record.messages.append(msg)
    return record


def test_hex_rows_label_each_run_of_a_fields_bytes():
    """A field's code under its first byte, at the start of each row it continues on and again after a child's
    bytes; ``--`` under the rest; nothing under bytes of no field."""
    out = io.StringIO()
    HexRenderer(out).frame(_hex_record())
    assert out.getvalue().splitlines() == [
        "Frame 1: 26 bytes on wire, 26 captured",
        "0000  3e 3f 40 41 42 43 44 45  0a 47 48 49 4a 4b 4c 4d  >?@ABCDE.GHIJKLM",
        "               a  -- -- -- --                 b  -- c",
        "0010  4e 4f 50 51 52 53 54 55  56 57                    NOPQRSTUVW",
        "      c  -- -- b  -- -- -- --  --",
        "  legend:",
        '    a  netquake.test.a [3:5] first: "x"',
        "    b  netquake.test.b [13:12] parent",
        "    c  netquake.test.c [15:4] child: 7",
        ""]


def test_hex_rows_on_a_terminal_colour_each_byte_of_a_field():
    out = io.StringIO()
    HexRenderer(out, color=True).frame(_hex_record())
    red, green, yellow, reset = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[0m"

    def painted(colour, cells):
        return [colour + cell + reset for cell in cells]
    row = out.getvalue().splitlines()[3]
    first = ["4e", "4f", "50"], ["51", "52", "53", "54", "55"], ["56"]
    text = "".join(painted(yellow, "NOP") + painted(green, "QRSTUV")) + "W"
    assert row == ("0010  " + " ".join(painted(yellow, first[0]) + painted(green, first[1])) + "  "
                   + " ".join(painted(green, first[2]) + ["57"]) + " " * 20 + text)
    assert out.getvalue().splitlines()[-4] == f"  {red}  a{reset}  netquake.test.a [3:5] first: \"x\""


def test_analysis_summary_and_stats_escape_format_characters():
    rec = AnalysisRecord("netquake", "player_walk", [1], {}, summary="player walk: \u202eregnaR")
    out = io.StringIO()
    SummaryRenderer(out).analysis(rec)
    assert "player walk: \\u202eregnaR" in out.getvalue()

    class Analyzer:
        def stats(self):
            return {"requests": 1, "answered": 1, "response_times": {},
                    "servers": [{"server": "10.0.0.1:26000", "host_name": "\u202eevil\u2028", "responses": 1}]}

    stats = StatsCollector()
    stats.frame(record_with([1], name="CCREP\u200dSERVER"))
    out = io.StringIO()
    stats.render_text(out, {"netquake": Analyzer()})
    text = out.getvalue()
    assert "CCREP\\u200dSERVER" in text and '"\\u202eevil\\u2028"' in text
    assert not any(ch in text for ch in "\u202e\u2028\u200d")


def _netquake_pcap(path, name):
    reply = nq.ccrep_player_info(0, name, 0, 1, 2, "192.0.2.11:26000")
    capkit.write_pcap(path, [
        (TS, capkit.ethernet(capkit.udp_packet(*CLIENT, *SERVER, nq.ccreq_player_info(0)))),
        (TS + 0.01, capkit.ethernet(capkit.udp_packet(*SERVER, *CLIENT, reply)))])


def test_cli_escapes_latin1_format_characters_and_json_keeps_them(tmp_path):
    path = tmp_path / "names.pcap"
    _netquake_pcap(path, "Ran\xadger\xa0")  # NetQuake names are latin-1: a soft hyphen, a no-break space
    for flags in ([], ["-V"], ["-x"]):
        code, out, _ = run_cli(*flags, path)
        assert code == 0 and "\xad" not in out and "\xa0" not in out, flags
        assert "Ran\\xadger\\xa0" in out, flags
    code, out, _ = run_cli("-T", "json", path)
    records = json.loads(out)
    assert out.endswith("\n]\n") and [r["frame"] for r in records if r["kind"] == "frame"] == [1, 2]
    name = [f for f in records[1]["messages"][0]["fields"] if f["key"] == "netquake.control.name"][0]
    assert (name["offset"], name["length"], name["value"]) == (6, 9, "Ran\xadger\xa0")


# -- --stats: the duration is never negative ------------------------------------------------------

def _server_info_pcap(path, times):
    request = capkit.ethernet(capkit.udp_packet(*CLIENT, *SERVER, nq.ccreq_server_info()))
    capkit.write_pcap(path, [(ts, request) for ts in times])


def _stats(*args):
    code, out, err = run_cli("--stats", "-T", "json", *args)
    assert code == 0, err
    return json.loads(out)[-1]


def test_stats_duration_of_files_given_out_of_time_order(tmp_path):
    early, late = tmp_path / "early.pcap", tmp_path / "late.pcap"
    _server_info_pcap(early, [TS, TS + 1.5])
    _server_info_pcap(late, [TS + 100, TS + 100.25])
    assert _stats(early, late)["duration"] == pytest.approx(100.25)
    stats = _stats(late, early)
    assert stats["frames"] == 4 and stats["duration"] == pytest.approx(100.25)
    assert _stats("-j", "2", late, early)["duration"] == pytest.approx(100.25)
    code, out, _ = run_cli("--stats", late, early)
    assert out.splitlines()[0] == ("Frames: 4, bytes: 216, duration: 100.250 s "
                                   "(earliest to latest timestamp: frames out of time order)")
    code, out, _ = run_cli("--stats", early, late)
    assert out.splitlines()[0] == "Frames: 4, bytes: 216, duration: 100.250 s"


def test_stats_duration_when_the_clock_goes_back_within_a_file(tmp_path):
    path = tmp_path / "back.pcap"
    _server_info_pcap(path, [TS + 100, TS, TS + 50])
    assert _stats(path)["duration"] == pytest.approx(100.0)


def test_stats_duration_leaves_out_corrupt_records_without_bytes():
    stats = StatsCollector()
    stats.frame(record_with([1], 1))
    corrupt = FrameRecord(Frame(2, 0.0, 0, 0, None, b"", 0, "bad"), Packet(), TS)
    corrupt.findings.append(Finding("capture.corrupt", "error", "bad"))
    stats.frame(corrupt)
    stats.frame(record_with([1], 3))
    assert stats.as_dict({})["duration"] == pytest.approx(2.0)


# -- the cursor: decimal text too long for a number ---------------------------------------------------

F = FieldTable("test", [("num", "Number", "int", "a decimal string"), ("text", "Text", "string", "text")])


@pytest.mark.parametrize("start, stop", [(0, 0), (0, 5), (2, 4), (3, 9), (5, 5), (7, 9), (4, 2), (0, 10 ** 6)])
def test_cut_is_the_slice_of_the_bytes_even_past_their_end(start, stop):
    # Compiled, cut reads through a char pointer: a stop past the end, or a start past the stop, must be brought in.
    data = b"\x00abc\xff"
    assert cut(data, start, stop) == data[start:stop]


def _decimal_cursor(data):
    return Cursor(Message("test", "m", data), data)


@pytest.mark.parametrize("digits, expected", [
    (b"12", 12), (b"-12", -12), (b"9" * MAX_DECIMAL_DIGITS, int("9" * MAX_DECIMAL_DIGITS)),
    (b"-" + b"9" * (MAX_DECIMAL_DIGITS - 1), -int("9" * (MAX_DECIMAL_DIGITS - 1))),
    (b"9" * (MAX_DECIMAL_DIGITS + 1), None), (b"-" + b"9" * MAX_DECIMAL_DIGITS, None),
    (b"1" * 5000, None), (b"12a", None),
])
def test_cdecimal_takes_no_more_than_4000_characters(digits, expected):
    cur = _decimal_cursor(digits + b"\0")
    assert cur.cdecimal(F.num) == expected
    field = cur.msg.fields[0]
    assert (field.offset, field.length, field.value) == (0, len(digits) + 1, expected)
    if expected is None:
        assert field.display.endswith('" (not a decimal number)')
    assert (cur.pos, cur.last_raw) == (len(digits) + 1, digits)


def test_cstrings_reads_5000_digits_as_text_that_is_not_a_number():
    data = b"name\0" + b"7" * 5000 + b"\0" + b"-42\0"
    cur = _decimal_cursor(data)
    values = cur.cstrings([(F.text, "text"), (F.num, "decimal"), (F.num, "decimal")])
    assert values == ["name", None, -42]
    assert cur.spans == [(0, 5, b"name"), (5, 5001, b"7" * 5000), (5006, 4, b"-42")]
    assert [(f.offset, f.length, f.value) for f in cur.msg.fields] == [(0, 5, "name"), (5, 5001, None),
                                                                       (5006, 4, -42)]
    light = Cursor(Message("test", "m", data + b"ok\0"), data + b"ok\0", tree=False)
    assert light.cstrings([(F.text, "text"), (F.num, "decimal"), (F.num, "decimal")]) == values
    # the last field's place and bytes, as after a cstring; the bytes are sliced only when read
    assert (light.last_offset, light.last_length, light.last_raw) == (5006, 4, b"-42")
    assert light.cstring(F.text) == "ok"  # then a string read alone: its own bytes
    assert (light.pos, light.last_raw) == (len(data) + 3, b"ok")


@pytest.mark.parametrize("read", ["cstring", "cdecimal", "cstrings"])
def test_last_raw_is_the_last_strings_bytes_after_numbers_and_raw_bytes_are_read(read):
    data = b"abc\0" + bytes([1, 2, 3, 4, 5, 6, 7])  # "abc" 0-3, a u32 4-7, a u8 8, 2 raw bytes 9-10
    cur = Cursor(Message("test", "m", data), data, tree=False)
    if read == "cstrings":
        assert cur.cstrings([(F.text, "text")]) == ["abc"]
    else:
        getattr(cur, read)(F.text)
    assert cur.number(U32LE, F.num) == 0x04030201 and cur.u8(F.num) == 5 and cur.raw(F.text, 2) == b"\x06\x07"
    assert (cur.last_offset, cur.last_length) == (9, 2)  # the last item read is the raw bytes
    assert cur.last_raw == b"abc"  # the last string's, without its terminator


def test_cstrings_keeps_the_offsets_of_up_to_32_fields():
    data = b"".join(b"%d\0" % number for number in range(MAX_CSTRINGS + 1))  # 0 1 ... 32: 10 of 2 bytes, 23 of 3
    cur = Cursor(Message("test", "m", data), data, tree=False)
    assert (cur.starts, cur.spans) == ([], [])  # before the first call
    assert cur.cstrings([(F.num, "decimal")] * MAX_CSTRINGS) == list(range(MAX_CSTRINGS))
    offsets = [2 * n if n <= 10 else 20 + 3 * (n - 10) for n in range(MAX_CSTRINGS + 1)]
    assert cur.starts == offsets and [cur.start(n) for n in range(MAX_CSTRINGS + 1)] == offsets
    assert cur.span(31) == (offsets[31], 3, b"31") and len(cur.spans) == MAX_CSTRINGS
    with pytest.raises(IndexError):
        cur.start(MAX_CSTRINGS + 1)
    cur.pos = 0
    with pytest.raises(OverflowError):  # one more than the offsets kept: refused before reading anything
        cur.cstrings([(F.num, "decimal")] * (MAX_CSTRINGS + 1))
    assert cur.pos == 0 and cur.starts == offsets
    assert cur.cstrings(iter([(F.text, "text")])) == ["0"] and cur.starts == [0, 2]  # any iterable of specs


def test_endpoint_texts_stay_right_past_the_limit_of_the_kept_ones():
    # 5,000 ends on two addresses: more than ENDPOINT_TEXTS (4,096), so the kept texts start afresh once
    ends = [("10.0.0.1", port) for port in range(2500)] + [("2001:db8::1", port) for port in range(2500)]
    expected = [f"10.0.0.1:{port}" for port in range(2500)] + [f"[2001:db8::1]:{port}" for port in range(2500)]
    for _ in range(2):  # the second round finds some texts kept and makes the others again
        assert [endpoint(ip, port) for ip, port in ends] == expected
    assert (endpoint("10.0.0.1", None), endpoint(None, 26000), endpoint(None, None)) == ("10.0.0.1", "", "")


def test_summary_line_cut_short_by_an_error_leaves_nothing_in_the_next():
    """A frame whose line fails part way (its info is not a text) writes nothing, and the next lines are whole."""
    broken, plain = record_with([1], info="x"), record_with([1], number=2, info="CCREP_PLAYER_INFO")
    broken.info = 5
    rec = AnalysisRecord("netquake", "player_walk", [2], {}, summary="walk")
    for batched in (_Batched(), _Batched()):
        renderer = SummaryRenderer(batched.out)
        with pytest.raises((TypeError, AttributeError)):
            renderer.frame(broken)
        renderer.frame(plain)
        with pytest.raises((TypeError, AttributeError)):
            renderer.frame(broken)
        renderer.analysis(rec)
        assert batched.text().splitlines() == [
            "     2    2.000000        10.0.0.1:26000 → 10.0.0.7:40000        NetQuake    60 CCREP_PLAYER_INFO",
            "       [netquake player_walk] walk (frames 2)"]


def test_stats_counts_survive_pickling_and_merge_by_addition():
    """-j's workers and the Dask tasks send their StatsCollector pickled; the parent merges them: the counts of
    protocols, messages, analyses and findings (with their severities) add up."""
    import pickle
    one, two = StatsCollector(), StatsCollector()
    for number in (1, 2, 3):
        one.frame(record_with([1], number=number))
    two.frame(record_with([1], number=4, name="CCREQ_SERVER_INFO"))
    two.frame(record_with([1], number=5))
    warned = record_with([1], number=6)
    warned.messages[0].findings.append(Finding("netquake.test", "warning", "a test finding"))
    two.frame(warned)
    two.analysis(AnalysisRecord("netquake", "player_walk", [6], {}, summary="walk"))
    merged = pickle.loads(pickle.dumps(one))
    merged.merge(pickle.loads(pickle.dumps(two)))
    data = merged.as_dict({})
    assert (data["frames"], data["protocols"]) == (6, {"netquake": 6})
    assert data["messages"] == [{"protocol": "netquake", "message": "CCREP_PLAYER_INFO", "count": 5},
                                {"protocol": "netquake", "message": "CCREQ_SERVER_INFO", "count": 1}]
    assert data["analyses"] == [{"protocol": "netquake", "name": "player_walk", "count": 1}]
    assert data["findings"] == [{"code": "netquake.test", "severity": "warning", "count": 1}]
    assert one.as_dict({})["messages"] == [{"protocol": "netquake", "message": "CCREP_PLAYER_INFO", "count": 3}]


def test_json_escapes_exactly_the_characters_a_terminal_acts_on():
    from dissect.render.jsonout import terminal_safe_text, terminal_safe_utf8
    escaped = [*range(0x7F, 0xA0), 0x61C, *range(0x200B, 0x2010), *range(0x2028, 0x202F),
               *range(0x2060, 0x206A), 0xFEFF]
    kept = [0x7E, 0xA0, 0xE9, 0x200A, 0x2010, 0x2027, 0x202F, 0x205F, 0x206A, 0xFEFE, 0x1F600]
    for code in escaped + kept:
        text = json.dumps(f"a{chr(code)}b", ensure_ascii=False)
        safe = terminal_safe_text(text)
        assert terminal_safe_utf8(text.encode()) == safe.encode()
        assert json.loads(safe) == f"a{chr(code)}b"
        assert safe == (f'"a\\u{code:04x}b"' if code in escaped else text), hex(code)


def _link_type_line(linktype):
    record = record_with([1])
    record.linktype = linktype
    out = io.StringIO()
    TreeRenderer(out).frame(record)
    return next(line for line in out.getvalue().splitlines() if "Link type" in line)


def test_link_type_lines_show_each_link_type_as_it_is_past_the_lines_kept():
    """The link-type lines are kept by their int (at most 256): a float or a bool equal to a kept int still shows
    itself, and link types past the kept ones show theirs."""
    assert _link_type_line(1) == "    Link type: Ethernet (1)"
    assert _link_type_line(1.0) == "    Link type: Ethernet (1.0)"
    assert _link_type_line(True) == "    Link type: Ethernet (True)"
    for linktype in range(1000, 1300):
        assert _link_type_line(linktype) == f"    Link type: unknown ({linktype})"
    assert _link_type_line(1) == "    Link type: Ethernet (1)"


def test_a_prepared_finding_is_the_finding_report_makes():
    """A finding whose text never changes is made ready once and added as ``Message.report`` adds it: the same code,
    severity, message (the detail, then the rule), offset and length, and a Finding of its own each time."""
    from dissect.dissectors.netquake import W
    reported, added = Message("netquake"), Message("netquake")
    reported.report(W.big_endian_long, "payload longs decoded big-endian", 12, 4)
    prepared = prepared_finding(W.big_endian_long, "payload longs decoded big-endian")
    for msg in (added, added):
        add_prepared(msg, prepared, 12, 4)
    assert [finding.as_dict() for finding in added.findings] == [reported.findings[0].as_dict()] * 2
    assert added.findings[0].message.startswith("payload longs decoded big-endian") and \
        added.findings[0].message != "payload longs decoded big-endian"  # the rule follows
    assert added.findings[0] is not added.findings[1]
