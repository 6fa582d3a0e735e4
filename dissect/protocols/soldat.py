"""Soldat client-lobby protocol over TCP (spec: soldat-lobby.txt).

Every packet is one line: a type byte (e 101, f 102, g 103, h 104), then fields
each preceded by the separator ©, then ``\\n``. The separator is the copyright
sign, sent either as the single Latin-1 byte A9 (what the original Delphi client
and lobby sent) or as UTF-8 C2 A9; both are accepted, the one a stream uses is
noted, and its strings are decoded in the matching encoding.

Whitespace: the spec's server-entry format shows ``BOTS ©`` with a stray space.
Spaces around a numeric field are accepted and trimmed, with a note; text fields
(map, server name) keep their spaces.
"""

import re

from ..registry import Dissector, register

SEP_LATIN1 = b"\xa9"
SEP_UTF8 = b"\xc2\xa9"
EOL = b"\n"
LOBBY_PORT = 13073
MAX_LINE = 65536

TYPES = {0x65: ("request_list", "101 Request List"), 0x66: ("list_begin", "102 List begin"),
         0x67: ("server", "103 Server Entry"), 0x68: ("list_end", "104 List End")}
GAME_TYPES = {-1: "do not care", 0: "DM only", 1: "PM only", 2: "TM only", 3: "CTF only", 4: "RM only",
              5: "INF only", 6: "HTF only"}
GAME_STYLES = {0: "DM", 1: "PM", 2: "TM", 3: "CTF", 4: "RM", 5: "INF", 6: "HTF"}
CONNECTIONS = {0: "Modem", 1: "ISDN", 2: "DSL", 3: "T1"}
OSES = {0: "Windows", 1: "Linux"}
_INT = re.compile(r"^-?[0-9]+$")
_COUNTRY = re.compile(r"^([A-Z]{2}|A1)$")
_OCTET = re.compile(r"^[0-9]{1,3}$")


# -- field rules --------------------------------------------------------------------------------------
# A rule checks a field's text and returns (value, display, problem or None, severity of the problem).
# ``display`` is None where the rule's ``fmt`` can show the value when a view asks (the summary path
# never does); it is given only for text that is not a value.

def _shown_with(fmt):
    def attach(rule):
        rule.fmt = fmt
        return rule
    return attach


def _number_display(names):
    def fmt(value):
        return f"{names[value]} ({value})" if names and value in names else str(value)
    return fmt


def _number(text, low=None, high=None, names=None, rule=""):
    if not _INT.match(text):
        return None, f'"{text}" (not a number)', f'"{text}" is not a number ({rule})', "error"
    value = int(text)
    if (low is not None and value < low) or (high is not None and value > high) or (names and value not in names):
        return value, None, f"{value} is outside {rule}", "warning"
    return value, None, None, None


def _number_rule(low=None, high=None, names=None, rule=""):
    @_shown_with(_number_display(names))
    def check(text):
        return _number(text, low, high, names, rule)
    return check


version = _number_rule(0, None, rule="VERSION is XY of Soldat 1.X.Y, e.g. 42")
gametype = _number_rule(names=GAME_TYPES, rule="GAMETYPE -1 (do not care) or 0-6 (DM, PM, TM, CTF, RM, INF, HTF)")
count = _number_rule(0, None, rule="SERVERCOUNT is the number of servers in the list")
port = _number_rule(1, 65535, rule="PORT 1-65535")


def _filter(meanings, allowed):
    def fmt(value):
        return f'"{value}" ({meanings[value]})' if value in meanings else f'"{value}"'

    @_shown_with(fmt)
    def check(text):
        if text in meanings:
            return text, None, None, None
        return text, None, f'"{text}" is not {allowed}', "warning"
    return check


def filter3(on, off):
    return _filter({"1": on, "0": "do not care", "!": off}, f"1 ({on}), 0 (do not care) or ! ({off})")


def filter2(on):
    return _filter({"1": on, "0": "do not care"}, f"1 ({on}) or 0 (do not care)")


def _quoted(value):
    return f'"{value}"'


@_shown_with(str)
def ip_address(text):
    parts = text.split(".")
    if len(parts) == 4 and all(_OCTET.match(p) and int(p) <= 255 for p in parts):
        return text, None, None, None
    return text, f'"{text}"', f'"{text}" is not a dotted-quad IP address (spec: IP in dotted-quad format)', "warning"


@_shown_with(_number_display(GAME_STYLES))
def gamestyle(text):
    value, display, problem, level = _number(text, names=GAME_STYLES,
                                             rule="GAMESTYLE 1-6 (PM, TM, CTF, RM, INF, HTF)")
    if value == 0:
        return value, display, ("0 (DM) is not in the spec's GAMESTYLE list (1-6), though the request's GAMETYPE "
                                "filter names it"), "note"
    return value, display, problem, level


def non_negative(name):
    return _number_rule(0, None, rule=f"{name} is a count")


def enum(names, rule_text):
    return _number_rule(names=names, rule=rule_text)


def flag(meaning_1, meaning_0):
    return enum({1: meaning_1, 0: meaning_0}, f"1 for {meaning_1}, 0 for {meaning_0}")


@_shown_with(_quoted)
def text_field(text):
    return text, None, None, None


@_shown_with(lambda value: f'"{value}"' + (" (unknown)" if value == "A1" else ""))
def country(text):
    if _COUNTRY.match(text):
        return text, None, None, None
    return text, None, f'"{text}" is not a 2-letter country code or A1 (spec: COUNTRY)', "warning"


REQUEST_FIELDS = [
    ("version", "VERSION", version, True),
    ("dedicated", "DEDICATED", filter3("dedicated only", "not dedicated"), False),
    ("passworded", "PASSWORDED", filter3("no password", "passworded"), False),
    ("bots", "BOTS", filter3("no bots", "with bots"), False),
    ("survival", "SURVIVAL", filter3("survival mode only", "not survival"), False),
    ("realistic", "REALISTIC", filter3("realistic mode only", "not realistic"), False),
    ("bonuses", "BONUSES", filter2("no bonuses"), False),
    ("advance", "ADVANCE", filter3("advance mode only", "not advanced"), False),
    ("wm", "WM", filter3("wm servers only", "not wm"), False),
    ("full", "FULL", filter2("non-full games only"), False),
    ("empty", "EMPTY", filter2("non-empty games only"), False),
    ("gametype", "GAMETYPE", gametype, True),
    ("be", "BE", filter2("BE-protected servers only"), False),
]
SERVER_FIELDS = [
    ("version", "VERSION", version, True),
    ("ip", "IP", ip_address, False),
    ("port", "PORT", port, True),
    ("gamestyle", "GAMESTYLE", gamestyle, True),
    ("players", "PLAYERS", non_negative("PLAYERS"), True),
    ("maxplayers", "MAXPLAYERS", non_negative("MAXPLAYERS"), True),
    ("map", "MAP", text_field, False),
    ("name", "NAME", text_field, False),
    ("bots", "BOTS", non_negative("BOTS"), True),
    ("bonusfreq", "BONUSFREQ", non_negative("BONUSFREQ"), True),
    ("respawn", "RESPAWN", non_negative("RESPAWN"), True),
    ("connection", "CONNECTION", enum(CONNECTIONS, "CONNECTION 0-3 (Modem, ISDN, DSL, T1)"), True),
    ("survival", "SURVIVAL", flag("survival mode", "no survival mode"), True),
    ("realistic", "REALISTIC", flag("realistic mode", "no realistic mode"), True),
    ("dedicated", "DEDICATED", flag("dedicated", "not dedicated"), True),
    ("os", "OS", enum(OSES, "OS 1 for Linux, 0 for Windows"), True),
    ("passworded", "PASSWORDED", flag("password set", "no password"), True),
    ("be", "BE", flag("BE-protected", "not BE-protected"), True),
    ("country", "COUNTRY", country, False),
]


def _layout(prefix, fields):
    """(field key, data key, spec name, rule, numeric) per field, keys built once."""
    return [(f"soldat.{prefix}.{key}", key, name, rule, numeric) for key, name, rule, numeric in fields]


LAYOUTS = {0x65: _layout("filter", REQUEST_FIELDS),
           0x66: _layout("list", [("servercount", "SERVERCOUNT", count, True)]),
           0x67: _layout("server", SERVER_FIELDS), 0x68: []}


def _type_text(value):
    entry = TYPES.get(value)
    return f"'{chr(value)}' ({entry[1]})" if entry else f"0x{value:02x} (unknown type)"


def separator_of(line):
    """(separator bytes, encoding) of a line, from the bytes after its type byte."""
    if line[1:3] == SEP_UTF8:
        return SEP_UTF8, "utf-8"
    if line[1:2] == SEP_LATIN1:
        return SEP_LATIN1, "latin-1"
    return None, None


@register
class Soldat(Dissector):
    key = "soldat"
    title = "Soldat"
    transports = ("tcp",)
    ports = (LOBBY_PORT,)
    truncated_code = "soldat.bad_field_count"

    def claims(self, payload, packet, on_port):
        return len(payload) >= 2 and payload[0] in TYPES and separator_of(payload)[0] is not None

    def stream_parser(self):
        return LineParser(self)

    def decode(self, cur, msg, packet):
        line = cur.data
        type_byte = cur.u8("soldat.type", "Type", _type_text)
        name, title = TYPES.get(type_byte, (f"unknown_0x{type_byte:02x}", "unknown"))
        msg.name = name
        msg.values["type"] = chr(type_byte)
        terminated = len(line) >= 2 and line.endswith(EOL)
        if terminated:
            cur.end -= 1
        separator, encoding = separator_of(line)
        msg.values["encoding"] = encoding
        if not terminated and separator == SEP_UTF8 and line.endswith(SEP_UTF8[:1]):
            cur.end -= 1  # the line was cut inside a separator: its first byte belongs to no field
        if type_byte not in TYPES:
            cur.flag_last("soldat.unknown_type", "warning",
                          f"type byte 0x{type_byte:02x} is not one of 101-104 (spec: e, f, g, h)")
        if separator is None:
            cur.finding("soldat.bad_separator", "error",
                        "no © separator after the type byte (spec: '© is used as a field separator'; "
                        "neither A9 nor C2 A9 follows)", min(1, len(line)), max(0, min(2, len(line) - 1)))
            if cur.remaining():
                cur.rest("soldat.body", "Body")
        else:
            texts = self._fields(cur, msg, separator, encoding, type_byte)
            msg.info = self._info(msg, texts)
        cur.end = len(line)
        if terminated:
            cur.raw("soldat.eol", "End of line", 1, lambda v: "\\n")
        else:
            cur.finding("soldat.unterminated_line", "warning",
                        "the stream ends before this line's \\n (spec: 'all packets to/from the lobby end with \\n')",
                        len(line), 0)
        if not msg.info:
            msg.info = title

    def _fields(self, cur, msg, separator, encoding, type_byte):
        texts = cur.separated(separator, encoding)
        rules = LAYOUTS.get(type_byte)
        if rules is None:
            for start, length, text in texts:
                cur.add("soldat.field", "Field", start, length, text)
            return texts
        self._check_count(cur, msg, type_byte, texts, rules)
        for (start, length, text), spec in zip(texts, rules):
            self._field(cur, msg, spec, start, length, text)
        if type_byte == 0x68 and any(text for _, _, text in texts):
            cur.finding("soldat.bad_end_line", "warning",
                        "the list-end line carries data (spec: 'it only consists of five field separators and an "
                        "end-line character')", 1, cur.end - 1)
        self._cross_checks(cur, msg)
        return texts

    def _check_count(self, cur, msg, type_byte, texts, rules):
        expected = 5 if type_byte == 0x68 else len(rules)
        msg.values["field_count"] = len(texts)
        if len(texts) != expected:
            what = "separators" if type_byte == 0x68 else "fields"
            cur.finding("soldat.bad_field_count" if type_byte != 0x68 else "soldat.bad_end_line",
                        "error" if type_byte != 0x68 else "warning",
                        f"{TYPES[type_byte][1]} has {len(texts)} {what}, the spec's format has {expected}",
                        0, cur.end)

    def _field(self, cur, msg, spec, start, length, text):
        key, short, name, rule, numeric = spec
        stripped = text.strip(" ") if numeric else text
        value, display, problem, level = rule(stripped)
        cur.add(key, name, start, length, value, rule.fmt, display)
        msg.values[short] = value
        if stripped != text:
            cur.finding("soldat.whitespace", "note",
                        f"{name} has spaces around its value ({text!r}); accepted and trimmed (the spec's own "
                        f"format line shows 'BOTS ©')", start, length)
        if problem:
            cur.finding("soldat.bad_value", level, f"{name}: {problem}",
                        start, length)

    def _cross_checks(self, cur, msg):
        data = msg.values
        players, maximum = data.get("players"), data.get("maxplayers")
        if isinstance(players, int) and isinstance(maximum, int) and players > maximum:
            cur.finding("soldat.bad_value", "warning",
                        f"PLAYERS {players} exceeds MAXPLAYERS {maximum} (spec: MAXPLAYERS is the player limit)")

    @staticmethod
    def _info(msg, texts):
        data = msg.values
        if msg.name == "request_list":
            return f"Request List version={data.get('version')} gametype={data.get('gametype')}"
        if msg.name == "list_begin":
            return f"List begin: {data.get('servercount')} servers"
        if msg.name == "server":
            return (f'Server {data.get("ip")}:{data.get("port")} "{data.get("name")}" map={data.get("map")} '
                    f'players {data.get("players")}/{data.get("maxplayers")}')
        if msg.name == "list_end":
            return "List End"
        return f"{len(texts)} fields"


class LineParser:
    """Cuts one direction of a TCP stream into lines and dissects each."""

    def __init__(self, dissector):
        self.dissector = dissector
        self.buffer = bytearray()
        self.spans = []              # (frame, frame_offset, length) of the buffered bytes
        self.resync = False          # after lost bytes: drop everything up to the next \n
        self.encoding = None

    def feed(self, chunk, tree, packet):
        messages = []
        data, frame, offset = chunk.data, chunk.frame, chunk.frame_offset
        if self.resync:
            newline = data.find(EOL)
            if newline < 0:
                return messages
            data, offset = data[newline + 1:], offset + newline + 1
            self.resync = False
        start = 0
        while True:
            newline = data.find(EOL, start)
            if newline < 0:
                break
            self._append(data[start:newline + 1], frame, offset + start)
            messages.append(self._line(tree, packet))
            start = newline + 1
        if start < len(data):
            self._append(data[start:], frame, offset + start)
            if len(self.buffer) > MAX_LINE:
                msg = self._line(tree, packet)
                msg.add_finding("soldat.line_too_long", "warning",
                                f"no \\n within {MAX_LINE} bytes: the line is cut here and parsing resumes after "
                                f"the next \\n")
                messages.append(msg)
                self.resync = True
        return messages

    def gap(self):
        """Bytes were lost: the line in progress cannot be completed."""
        self.buffer.clear()
        self.spans.clear()
        self.resync = True

    def close(self, tree, packet):
        """The stream ended: a line still waiting for its \\n is dissected as it is."""
        if not self.buffer:
            return []
        return [self._line(tree, packet)]

    def _append(self, data, frame, offset):
        self.buffer += data
        if self.spans and self.spans[-1][0] == frame and self.spans[-1][1] + self.spans[-1][2] == offset:
            f, o, n = self.spans[-1]
            self.spans[-1] = (f, o, n + len(data))
        else:
            self.spans.append((frame, offset, len(data)))

    def _line(self, tree, packet):
        line = bytes(self.buffer)
        frames = list(dict.fromkeys(span[0] for span in self.spans))
        offset = self.spans[0][1] if len(frames) == 1 else None
        self.buffer.clear()
        self.spans.clear()
        msg = self.dissector.dissect(line, tree, packet, offset)
        msg.frames.extend(frames)
        encoding = msg.values.get("encoding")
        if encoding and self.encoding is None:
            self.encoding = encoding
            msg.add_finding("soldat.separator", "note",
                            "this stream uses the UTF-8 separator C2 A9" if encoding == "utf-8" else
                            "this stream uses the single Latin-1 byte A9 as separator (as the original Delphi "
                            "client and lobby sent it)", 1, 2 if encoding == "utf-8" else 1)
        elif encoding and encoding != self.encoding:
            msg.add_finding("soldat.mixed_separators", "warning",
                            f"this line's separator is {encoding}, the stream began with {self.encoding}", 1, 2)
        return msg
