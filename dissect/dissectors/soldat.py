"""Soldat client-lobby protocol over TCP (spec: soldat-lobby.txt).

Every packet is one line: a type byte (e 101, f 102, g 103, h 104), then fields
each preceded by the separator ©, then ``\\n``. The separator is the copyright
sign, sent either as the single Latin-1 byte A9 (what the original Delphi client
and lobby sent) or as UTF-8 C2 A9; both are accepted, the one a stream uses is
noted, and its strings are decoded in the matching encoding.

Whitespace: the spec's server-entry format shows ``BOTS ©`` with a stray space.
Spaces around a numeric field are accepted and trimmed, with a note; text fields
(map, server name) keep their spaces.

Limits, so that what one line costs does not grow with what a peer sends: a line
is at most MAX_LINE bytes (a longer one is cut there before it is decoded, and
parsing resumes after its ``\\n``); the first MAX_FIELDS fields of a line are
split, the rest only counted; a number has at most MAX_DIGITS digits; the
unfinished lines of all the streams of a run hold at most MAX_HELD bytes in all, each segment's piece
counted with PIECE_COST bytes of bookkeeping (so that a line sent a byte a segment is bounded by what it takes).

A lobby sends the same server lines to every client that asks for the list: without a tree, the decoding of
up to MAX_REMEMBERED lines of at most MAX_REMEMBERED_LINE bytes that had no finding is kept, by their bytes,
and given again to the same bytes (see _decode_remembered); past MAX_REMEMBERED the table begins anew.
"""

import re
import sys
from operator import itemgetter

from ..capture.layers import Packet
from ..core.cursor import as_bytes, cut
from ..core.fmt import ValueTexts, counted, decimal_text, or_unknown
from ..core.model import new_message
from ..core.tables import FieldTable, FindingTable
from ..registry import Dissector, dissect_message

SEP_LATIN1 = b"\xa9"
SEP_UTF8 = b"\xc2\xa9"
EOL = b"\n"
CRLF = b"\r\n"                   # a line end the spec does not have, read as one (see _bound)
LOBBY_PORT = 13073
MAX_LINE = 65536                 # bytes of one line, its \n included
MAX_FIELDS = 32                  # fields split per line: the longest layout has 19
MAX_DIGITS = 20                  # digits of a number: every numeric field fits in far fewer
MAX_HELD = 16 * 1024 * 1024      # bytes of unfinished lines held across all streams of a run
PIECE_COST = 160                 # bytes each segment's piece of an unfinished line costs beyond its data
MAX_REMEMBERED = 1024            # lines whose decoding is kept for the same bytes again
MAX_REMEMBERED_LINE = 512        # bytes of a line so kept, its \n included
MAX_QUOTED = 64                  # characters of a field's text quoted in a finding or an info line
PLAIN_DIGITS = 18                # digits of a number the field loop reads itself: any such number fits 64 bits

TYPES = {0x65: ("request_list", "101 Request List"), 0x66: ("list_begin", "102 List begin"),
         0x67: ("server", "103 Server Entry"), 0x68: ("list_end", "104 List End")}
GAME_TYPES = {-1: "do not care", 0: "DM only", 1: "PM only", 2: "TM only", 3: "CTF only", 4: "RM only",
              5: "INF only", 6: "HTF only"}
GAME_STYLES = {0: "DM", 1: "PM", 2: "TM", 3: "CTF", 4: "RM", 5: "INF", 6: "HTF"}
CONNECTIONS = {0: "Modem", 1: "ISDN", 2: "DSL", 3: "T1"}
OSES = {0: "Windows", 1: "Linux"}
_INT = re.compile(r"-?[0-9]+")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
COUNTRY_CODES = frozenset([first + second for first in _LETTERS for second in _LETTERS] + ["A1"])


def _ascii_digits(text):
    """Whether ``text`` is one or more of the characters 0-9 (str.isdigit alone also takes other scripts'
    digits); the common case of the rules below, tested without a regular expression."""
    return text.isdigit() and text.isascii()


def clip(text, limit=MAX_QUOTED):
    """``text`` as quoted in a finding or an info line: its first ``limit`` characters."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


# -- field rules --------------------------------------------------------------------------------------
# A rule checks a field's text and returns (value, display, problem or None, severity of the problem).
# ``display`` is None where the rule's ``fmt`` (the field's formatter in the table) can show the value
# when a view asks (the summary path never does); it is given only for text that is not a value.
# ``plain`` holds what the rule takes as it is, with no problem and no display, so that the field loop
# keeps it without calling the rule: for a number rule, the range of numbers written in ASCII digits; for a
# text rule, a set of texts (any container), or EVERY_TEXT.

EVERY_TEXT = None
NOTHING_PLAIN = frozenset()


def _shown_with(fmt, plain=NOTHING_PLAIN):
    def attach(rule):
        rule.fmt = fmt
        rule.plain = plain
        return rule
    return attach


def _plain_numbers(low=None, high=None, names=None):
    """The numbers from 0 up that ``_in_range`` takes without a problem, as one range (a names table has no
    hole in this protocol)."""
    lowest = max(0, low or 0)
    highest = int("9" * PLAIN_DIGITS) if high is None else high  # the largest number of PLAIN_DIGITS digits
    if names:
        taken = sorted(value for value in names if lowest <= value <= highest)
        lowest, highest = taken[0], taken[-1]
        if taken != list(range(lowest, highest + 1)):
            raise ValueError(f"the names {names} are not one range")
    return range(lowest, highest + 1)


def _number_display(names):
    """The formatter of a number field: its name beside it where it has one. None, the default display (the
    number's digits, which the JSON and ``-V`` writers write in C), for a field without names."""
    if not names:
        return None

    def fmt(value):
        return f"{names[value]} ({decimal_text(value)})" if value in names else decimal_text(value)
    return ValueTexts(fmt, names)


def _number(text, low=None, high=None, names=None, rule=""):
    if _ascii_digits(text) and len(text) <= MAX_DIGITS:
        return _in_range(int(text), low, high, names, rule)
    if not _INT.fullmatch(text):
        quoted = clip(text)
        return None, f'"{quoted}" (not a number)', f'"{quoted}" is not a number ({rule})', "error"
    digits = len(text) - text.startswith("-")
    if digits > MAX_DIGITS:  # int() of a long text costs time, and Python refuses past 4300 digits
        return None, f"a number of {digits} digits (not decoded)", \
            f"a number of {digits} digits is outside {rule} (at most {MAX_DIGITS} digits are decoded)", "warning"
    return _in_range(int(text), low, high, names, rule)


def _in_range(value, low, high, names, rule):
    if (low is not None and value < low) or (high is not None and value > high) or (names and value not in names):
        return value, None, f"{value} is outside {rule}", "warning"
    return value, None, None, None


def _number_rule(low=None, high=None, names=None, rule=""):
    @_shown_with(_number_display(names), _plain_numbers(low, high, names))
    def check(text):
        return _number(text, low, high, names, rule)
    return check


def _filter(meanings, allowed):
    def fmt(value):
        return f'"{value}" ({meanings[value]})' if value in meanings else f'"{value}"'

    @_shown_with(fmt, frozenset(meanings))
    def check(text):
        if text in meanings:
            return text, None, None, None
        return text, None, f'"{clip(text)}" is not {allowed}', "warning"
    return check


def filter3(on, off):
    return _filter({"1": on, "0": "do not care", "!": off}, f"1 ({on}), 0 (do not care) or ! ({off})")


def filter2(on):
    return _filter({"1": on, "0": "do not care"}, f"1 ({on}) or 0 (do not care)")


def non_negative(name):
    return _number_rule(0, None, rule=f"{name} is a count")


def enum(names, rule_text):
    return _number_rule(names=names, rule=rule_text)


def flag(meaning_1, meaning_0, name):
    return enum({1: meaning_1, 0: meaning_0}, f"{name} 1 for {meaning_1}, 0 for {meaning_0}")


def dotted_quad(text):
    """Whether ``text`` is four numbers 0-255, each in one to three ASCII digits, joined by dots."""
    dots = digits = octet = 0
    for char in text:
        if char == ".":
            if digits == 0 or dots == 3:
                return False
            dots += 1
            digits = octet = 0
        elif "0" <= char <= "9" and digits < 3:
            octet = octet * 10 + ord(char) - 48
            if octet > 255:
                return False
            digits += 1
        else:
            return False
    return dots == 3 and digits > 0


class DottedQuads:
    """The texts ``dotted_quad`` takes, as a container: the plain texts of ``ip_address``."""

    __slots__ = ()

    def __contains__(self, text):
        return dotted_quad(text)


@_shown_with(str, DottedQuads())
def ip_address(text):
    if dotted_quad(text):
        return text, None, None, None
    quoted = f'"{clip(text)}"'
    return text, quoted, f"{quoted} is not a dotted-quad IP address (spec: IP in dotted-quad format)", "warning"


@_shown_with(_number_display(GAME_STYLES), _plain_numbers(1, names=GAME_STYLES))  # 0 (DM) has a note
def gamestyle(text):
    value, display, problem, level = _number(text, names=GAME_STYLES,
                                             rule="GAMESTYLE 1-6 (PM, TM, CTF, RM, INF, HTF)")
    if value == 0:
        return value, display, ("0 (DM) is not in the spec's GAMESTYLE list (1-6), though the request's GAMETYPE "
                                "filter names it"), "note"
    return value, display, problem, level


@_shown_with(None, EVERY_TEXT)  # the default display: the text in quotes, written in C by -V and JSON
def text_field(text):
    return text, None, None, None


def _country_text(value):
    return f'"{value}" (unknown)' if value == "A1" else f'"{value}"'


@_shown_with(ValueTexts(_country_text, COUNTRY_CODES), COUNTRY_CODES)
def country(text):
    if text in COUNTRY_CODES:
        return text, None, None, None
    return text, None, f'"{clip(text)}" is not a 2-letter country code or A1 (spec: COUNTRY)', "warning"


version = _number_rule(0, None, rule="VERSION is XY of Soldat 1.X.Y, e.g. 42")
gametype = _number_rule(names=GAME_TYPES, rule="GAMETYPE -1 (do not care) or 0-6 (DM, PM, TM, CTF, RM, INF, HTF)")
servercount = _number_rule(0, None, rule="SERVERCOUNT is the number of servers in the list")
port = _number_rule(1, 65535, rule="PORT 1-65535")
dedicated_filter = filter3("dedicated only", "not dedicated")
passworded_filter = filter3("no password", "passworded")
bots_filter = filter3("no bots", "with bots")
survival_filter = filter3("survival mode only", "not survival")
realistic_filter = filter3("realistic mode only", "not realistic")
bonuses_filter = filter2("no bonuses")
advance_filter = filter3("advance mode only", "not advanced")
wm_filter = filter3("wm servers only", "not wm")
full_filter = filter2("non-full games only")
empty_filter = filter2("non-empty games only")
be_filter = filter2("BE-protected servers only")
players = non_negative("PLAYERS")
maxplayers = non_negative("MAXPLAYERS")
bots = non_negative("BOTS")
bonusfreq = non_negative("BONUSFREQ")
respawn = non_negative("RESPAWN")
connection = enum(CONNECTIONS, "CONNECTION 0-3 (Modem, ISDN, DSL, T1)")
survival = flag("survival mode", "no survival mode", "SURVIVAL")
realistic = flag("realistic mode", "no realistic mode", "REALISTIC")
dedicated = flag("dedicated", "not dedicated", "DEDICATED")
os_rule = enum(OSES, "OS 1 for Linux, 0 for Windows")
passworded = flag("password set", "no password", "PASSWORDED")
be = flag("BE-protected", "not BE-protected", "BE")


def _type_text(value):
    entry = TYPES.get(value)
    return f"'{chr(value)}' ({entry[1]})" if entry else f"0x{value:02x} (unknown type)"


F = FieldTable("soldat", messages=True, title="Soldat", entries=[
    ("type", "Type", "uint8", "the line's type byte: e (101) request list, f (102) list begin, g (103) server "
                              "entry, h (104) list end", ValueTexts(_type_text, TYPES)),
    ("filter.version", "VERSION", "int", "request: Soldat version 1.X.Y written XY (42 is 1.4.2); 0 is do not care",
     version.fmt),
    ("filter.dedicated", "DEDICATED", "string", 'request filter: "1" dedicated only, "0" do not care, "!" not '
                                                "dedicated", dedicated_filter.fmt),
    ("filter.passworded", "PASSWORDED", "string", 'request filter: "1" no password, "0" do not care, "!" '
                                                  "passworded", passworded_filter.fmt),
    ("filter.bots", "BOTS", "string", 'request filter: "1" no bots, "0" do not care, "!" with bots', bots_filter.fmt),
    ("filter.survival", "SURVIVAL", "string", 'request filter: "1" survival mode only, "0" do not care, "!" not '
                                              "survival", survival_filter.fmt),
    ("filter.realistic", "REALISTIC", "string", 'request filter: "1" realistic mode only, "0" do not care, "!" not '
                                                "realistic", realistic_filter.fmt),
    ("filter.bonuses", "BONUSES", "string", 'request filter: "1" no bonuses, "0" do not care', bonuses_filter.fmt),
    ("filter.advance", "ADVANCE", "string", 'request filter: "1" advance mode only, "0" do not care, "!" not '
                                            "advanced", advance_filter.fmt),
    ("filter.wm", "WM", "string", 'request filter: "1" wm servers only, "0" do not care, "!" not wm', wm_filter.fmt),
    ("filter.full", "FULL", "string", 'request filter: "1" non-full games only, "0" do not care', full_filter.fmt),
    ("filter.empty", "EMPTY", "string", 'request filter: "1" non-empty games only, "0" do not care',
     empty_filter.fmt),
    ("filter.gametype", "GAMETYPE", "int", "request filter: -1 do not care, 0-6 DM, PM, TM, CTF, RM, INF, HTF only",
     gametype.fmt),
    ("filter.be", "BE", "string", 'request filter: "1" BE-protected servers only, "0" do not care', be_filter.fmt),
    ("list.servercount", "SERVERCOUNT", "int", "list begin: the number of server entries that follow",
     servercount.fmt),
    ("server.version", "VERSION", "int", "server entry: Soldat version 1.X.Y written XY", version.fmt),
    ("server.ip", "IP", "string", "server entry: the server's IPv4 address, dotted quad", ip_address.fmt),
    ("server.port", "PORT", "int", "server entry: the server's port, 1-65535", port.fmt),
    ("server.gamestyle", "GAMESTYLE", "int", "server entry: 1 PM, 2 TM, 3 CTF, 4 RM, 5 INF, 6 HTF (0 DM: a "
                                             "departure, noted)", gamestyle.fmt),
    ("server.players", "PLAYERS", "int", "server entry: players on the server", players.fmt),
    ("server.maxplayers", "MAXPLAYERS", "int", "server entry: the player limit", maxplayers.fmt),
    ("server.map", "MAP", "string", "server entry: the current map", text_field.fmt),
    ("server.name", "NAME", "string", "server entry: the server's name", text_field.fmt),
    ("server.bots", "BOTS", "int", "server entry: bots on the server", bots.fmt),
    ("server.bonusfreq", "BONUSFREQ", "int", "server entry: bonus frequency", bonusfreq.fmt),
    ("server.respawn", "RESPAWN", "int", "server entry: respawn time", respawn.fmt),
    ("server.connection", "CONNECTION", "int", "server entry: 0 Modem, 1 ISDN, 2 DSL, 3 T1", connection.fmt),
    ("server.survival", "SURVIVAL", "int", "server entry: 1 survival mode, 0 not", survival.fmt),
    ("server.realistic", "REALISTIC", "int", "server entry: 1 realistic mode, 0 not", realistic.fmt),
    ("server.dedicated", "DEDICATED", "int", "server entry: 1 dedicated, 0 not", dedicated.fmt),
    ("server.os", "OS", "int", "server entry: 1 Linux, 0 Windows", os_rule.fmt),
    ("server.passworded", "PASSWORDED", "int", "server entry: 1 password set, 0 no password", passworded.fmt),
    ("server.be", "BE", "int", "server entry: 1 BE-protected, 0 not", be.fmt),
    ("server.country", "COUNTRY", "string", "server entry: 2-letter country code, A1 for unknown", country.fmt),
    ("field", "Field", "string", "a field of a line whose type byte is unknown"),
    ("more_fields", "More fields", "uint32", f"generated: fields after the first {MAX_FIELDS} of a line, counted "
                                             f"but not decoded", lambda v: f"{v} more fields (not decoded)"),
    ("body", "Body", "bytes", "the rest of a line with no separator after its type byte"),
    ("eol", "End of line", "bytes", "the line's \\n, or its \\r\\n",
     ValueTexts(lambda v: "\\r\\n" if v == CRLF else "\\n", (EOL, CRLF))),
])

W = FindingTable("soldat", messages=True, entries=[
    ("bad_field_count", "error", "spec: each line type has a fixed format (13 filters after e, 1 after f, 19 after g)"),
    ("bad_value", "warning", "spec: each field holds one of the values its description lists"),
    ("unknown_type", "warning", "spec: every packet starts with 101-104 (e, f, g, h)"),
    ("bad_separator", "error", "spec: '© is used as a field separator' (neither A9 nor C2 A9 follows the type byte)"),
    ("unterminated_line", "warning", "spec: 'all packets to/from the lobby end with \\n'"),
    ("crlf", "warning", "spec: 'all packets to/from the lobby end with \\n'; a \\r before it is read as part of the "
                        "line's end, not of its last field"),
    ("bad_end_line", "warning", "spec: the list end 'only consists of five field separators and an end-line "
                                "character'"),
    ("whitespace", "note", "spaces around a number are accepted and trimmed (the spec's own format line shows "
                           "'BOTS ©')"),
    ("line_too_long", "warning", f"a line is at most {MAX_LINE} bytes, its \\n included, and unfinished lines hold "
                                 f"at most {MAX_HELD} bytes across all streams: a longer line is cut and parsing "
                                 f"resumes after its \\n"),
    ("separator", "note", "spec: '© is used as a field separator'; a stream sends it as the one byte A9 or as the "
                          "two bytes C2 A9, and both are accepted"),
    ("mixed_separators", "warning", "one stream uses one encoding of ©"),
    ("count_mismatch", "warning", "spec: 'SERVERCOUNT is the number of servers in the list'"),
    ("missing_end", "warning", "spec: '104 List End ... signifies the end of the server list'"),
    ("state_evicted", "warning", "server lists followed at once are limited in number, in server entries and in "
                                 "bytes, to keep memory bounded"),
])


class Column:
    """One field of a line type: its table entry, its key in ``msg.values`` (the entry key's last part), its
    rule, whether it is a number (trimmed of spaces), and the rule's plain values: numbers from ``low`` to
    ``high`` written in ASCII digits, or texts in ``texts`` (EVERY_TEXT: all)."""

    __slots__ = ("spec", "short", "rule", "numeric", "low", "high", "texts")

    def __init__(self, spec, rule, numeric):
        self.spec = spec
        self.short = sys.intern(spec.key.rsplit(".", 1)[1])  # interned: info_line and the analysis read it by name
        self.rule = rule
        self.numeric = numeric
        numbers = rule.plain if numeric else range(0)
        self.low, self.high = numbers.start, numbers.stop - 1
        self.texts = NOTHING_PLAIN if numeric else rule.plain


def _layout(specs_and_rules):
    return [Column(spec, rule, numeric) for spec, rule, numeric in specs_and_rules]


REQUEST_LAYOUT = _layout([
    (F.filter.version, version, True), (F.filter.dedicated, dedicated_filter, False),
    (F.filter.passworded, passworded_filter, False), (F.filter.bots, bots_filter, False),
    (F.filter.survival, survival_filter, False), (F.filter.realistic, realistic_filter, False),
    (F.filter.bonuses, bonuses_filter, False), (F.filter.advance, advance_filter, False),
    (F.filter.wm, wm_filter, False), (F.filter.full, full_filter, False), (F.filter.empty, empty_filter, False),
    (F.filter.gametype, gametype, True), (F.filter.be, be_filter, False),
])
SERVER_LAYOUT = _layout([
    (F.server.version, version, True), (F.server.ip, ip_address, False), (F.server.port, port, True),
    (F.server.gamestyle, gamestyle, True), (F.server.players, players, True),
    (F.server.maxplayers, maxplayers, True), (F.server.map, text_field, False), (F.server.name, text_field, False),
    (F.server.bots, bots, True), (F.server.bonusfreq, bonusfreq, True), (F.server.respawn, respawn, True),
    (F.server.connection, connection, True), (F.server.survival, survival, True),
    (F.server.realistic, realistic, True), (F.server.dedicated, dedicated, True), (F.server.os, os_rule, True),
    (F.server.passworded, passworded, True), (F.server.be, be, True), (F.server.country, country, False),
])
PLAYERS_COLUMN = [column.spec for column in SERVER_LAYOUT].index(F.server.players)  # where _cross_checks finds it
# Entries read for every line, looked up once: F.<name> goes through the table's __getattr__ at every use.
TYPE_FIELD, EOL_FIELD = F.type, F.eol


class LineType:
    """A type of TYPES: its message name and title, the columns of its fields (its ``layout``), and a whole line's
    values as _decode starts them, for each encoding of the separator (see _whole_line_values)."""

    __slots__ = ("name", "title", "layout", "utf8_values", "latin1_values")

    def __init__(self, type_byte, layout):
        self.name, self.title = TYPES[type_byte]
        self.layout = layout
        self.utf8_values = _whole_line_values(type_byte, "utf-8", layout)
        self.latin1_values = _whole_line_values(type_byte, "latin-1", layout)


def _whole_line_values(type_byte, encoding, layout):
    """The line's type and encoding, every other key None, in the order _decode and the columns write them: copied
    and filled (a dict that grows to a server line's 22 keys one insertion at a time is rebuilt three times on the
    way)."""
    values = {"type": chr(type_byte), "encoding": encoding, "field_count": None}
    values.update(dict.fromkeys([column.short for column in layout]))
    return values


LINE_TYPES = {0x65: LineType(0x65, REQUEST_LAYOUT),
              0x66: LineType(0x66, _layout([(F.list.servercount, servercount, True)])),
              0x67: LineType(0x67, SERVER_LAYOUT), 0x68: LineType(0x68, [])}
FILTER_KEYS = [column.short for column in REQUEST_LAYOUT]
SERVER_KEYS = [column.short for column in SERVER_LAYOUT]
SERVER_KEYS_AT = list(LINE_TYPES[0x67].utf8_values).index(SERVER_KEYS[0])  # where a whole line's values hold them
SERVER_COLUMNS = itemgetter(*SERVER_KEYS)  # a server's values as a tuple in SERVER_KEYS order, in one call
END_SEPARATORS = 5


def server_values(values):
    """The values of SERVER_KEYS in a server line's ``values``, as a tuple in that order, None for a key not there
    (a line short of fields). Compiled, where the dict holds these keys in order from SERVER_KEYS_AT, as a whole
    line's does, they are read in one pass over it in C (soldat.pxd): a look-up each costs three times more."""
    if _COMPILED:
        columns = _values_in_order(values, SERVER_KEYS, SERVER_KEYS_AT)
        if columns is not None:
            return columns
    try:
        return SERVER_COLUMNS(values)
    except KeyError:
        return tuple([values.get(key) for key in SERVER_KEYS])


UTF8_SEPARATED, LATIN1_SEPARATED, NOT_SEPARATED = (SEP_UTF8, "utf-8"), (SEP_LATIN1, "latin-1"), (None, None)


def separator_of(line):
    """(separator bytes, encoding) of a line (bytes), from the bytes after its type byte."""
    if line.startswith(SEP_UTF8, 1):
        return UTF8_SEPARATED
    if line.startswith(SEP_LATIN1, 1):
        return LATIN1_SEPARATED
    return NOT_SEPARATED


def field_count(data, start, end, separator):
    """How many fields data[start:end] holds, each preceded by ``separator``: none where it does not begin
    with one. One pass over the bytes, in C when compiled."""
    chars = data  # compiled, a pointer to the bytes (soldat.pxd), read without bounds checks: end <= len(data)
    step = len(separator)
    lead, tail = separator[0], separator[step - 1]
    count, pos, last = 0, start, end - step
    while pos <= last:
        if chars[pos] == lead and chars[pos + step - 1] == tail:
            count += 1
            pos += step
        elif count == 0:  # no separator at ``start``
            return 0
        else:
            pos += 1
    return count


def field_end(data, pos, end, separator):
    """Where the field at ``pos`` ends: at the next ``separator`` (one or two bytes) wholly before ``end``,
    or at ``end``."""
    chars = data  # compiled, a pointer to the bytes (soldat.pxd), read without bounds checks: end <= len(data)
    step = len(separator)
    lead, tail = separator[0], separator[step - 1]
    last = end - step
    while pos <= last:
        if chars[pos] == lead and chars[pos + step - 1] == tail:
            return pos
        pos += 1
    return end


def fields_end(data, start, end, separator, count):
    """Where the first ``count`` fields of data[start:end] end, each preceded by ``separator``."""
    step = len(separator)
    pos = start
    for _ in range(count):
        pos = field_end(data, pos + step, end, separator)
    return pos


def ascii_number(data, start, stop):
    """The number data[start:stop] spells in 1 to PLAIN_DIGITS ASCII digits, or -1 (for the rule to read)."""
    if not 0 < stop - start <= PLAIN_DIGITS:
        return -1
    chars = data  # compiled, a pointer to the bytes (soldat.pxd), read without bounds checks: stop <= len(data)
    value = 0
    for pos in range(start, stop):
        byte = chars[pos]
        if not 48 <= byte <= 57:
            return -1
        value = value * 10 + byte - 48
    return value


def decoded(data, start, stop, utf8):
    return data[start:stop].decode("utf-8", "replace") if utf8 else data[start:stop].decode("latin-1", "replace")


def layout_fields(cur, msg, offset, end, separator, count, layout, utf8):
    """Decode the first ``count`` fields of a line, the first at ``offset``, each ending at the next separator,
    by the columns of its layout. A plain value (one the column's rule takes as it is) is kept without the
    rule."""
    data = cur.data
    values = msg.values
    tree = cur.tree
    step = len(separator)
    for i in range(min(count, len(layout))):
        column = layout[i]
        stop = field_end(data, offset, end, separator)
        length = stop - offset
        number = ascii_number(data, offset, stop) if column.numeric else -1
        if column.low <= number <= column.high:
            value = number
        else:
            text = decoded(data, offset, stop, utf8)
            if column.numeric or (column.texts is not EVERY_TEXT and text not in column.texts):
                ruled_field(cur, msg, column, offset, length, text)
                offset = stop + step
                continue
            value = text
        values[column.short] = value
        if tree:
            cur.add(column.spec, offset, length, value)
        offset = stop + step


def ruled_field(cur, msg, column, start, length, text):
    """A field as its rule reads it: value, display, and the findings of its problems."""
    spec = column.spec
    stripped = text.strip(" ") if column.numeric else text
    value, display, problem, level = column.rule(stripped)
    cur.add(spec, start, length, value, display)
    msg.values[column.short] = value
    if stripped != text:
        cur.finding(W.whitespace, f"{spec.name} has spaces around its value ({clip(text)!r})", start, length)
    if problem:
        msg.findings.append(W.bad_value.at(f"{spec.name}: {problem}", start, length, severity=level))


class Soldat(Dissector):
    key = "soldat"
    title = "Soldat"
    transports = ("tcp",)
    ports = (LOBBY_PORT,)
    fields = F
    findings = W
    analyzer = "dissect.analysis.soldat:SoldatAnalyzer"
    truncated = W.bad_field_count
    # The query request and its replies, by message name: (role, the request a reply answers). The abuse
    # analysis (dissect/analysis/abuse.py) measures amplification and request rates from these.
    query_kinds = {
        "request_list": ("request", "request_list"),
        "list_begin": ("reply", "request_list"),
        "server": ("reply", "request_list"),
        "list_end": ("reply", "request_list"),
    }
    # Valid messages, as the protocol's tests and fuzzers start from (see tests/test_properties.py).
    examples = (
        bytes.fromhex("65a93432a931a930a921a930a930a931a930a930a931a930a92d31a9300a"),
        bytes.fromhex("65c2a93432c2a931c2a930c2a921c2a930c2a930c2a931c2a930c2a930c2a931c2a930c2a92d31c2a9300a"),
        bytes.fromhex("66a9340a"),
        bytes.fromhex("67a93432a93139322e302e322e3130a93233303733a933a935a93132a96374665f417368a9536f6c6461742043544620"
                      "436c6173736963a932a935a935a932a930a930a931a931a930a930a944450a"),
        bytes.fromhex("67c2a93432c2a93139322e302e322e3131c2a93233303734c2a931c2a930c2a93136c2a9426c6f78c2a9506f696e746d"
                      "6174636820c39c6e69746564c2a930c2a933c2a934c2a933c2a930c2a931c2a931c2a930c2a931c2a930c2a9504c0a"),
        bytes.fromhex("68a9a9a9a9a90a"),
    )

    def __init__(self):
        self.held = 0   # bytes of unfinished lines held by this run's stream parsers, all streams together
        self.remembered = {}  # line -> (name, values, info), see _decode_remembered

    def claims(self, payload, packet, on_port):
        """A stream whose first bytes are a line's type byte and separator; on the lobby's port the type byte is
        enough (a client that sends a byte a segment shows no separator in its first one)."""
        if not payload or payload[0] not in TYPES:
            return False
        return on_port or len(payload) >= 2 and separator_of(as_bytes(payload))[0] is not None

    def stream_parser(self):
        return LineParser(self)

    def decode(self, cur, msg, packet):
        _decode_remembered(self.remembered, cur, msg)


def _decode_remembered(remembered, cur, msg):
    """_decode; without a tree, its result kept by the line's bytes where it has no finding, and given again to the
    same bytes: its name, values and info are all that it gives such a line (its cursor is not read after). A line
    longer than MAX_REMEMBERED_LINE, or cut by the capture's snap length (``cur.missing``), is decoded each time."""
    line = cur.data
    if cur.tree or not _rememberable(line, cur.missing):
        _decode(cur, msg)
        return
    kept = remembered.get(line)
    if kept is not None:
        _recall(msg, kept)
        cur.pos = len(line)
        return
    _decode(cur, msg)
    if not msg.findings:
        if len(remembered) >= MAX_REMEMBERED:
            remembered.clear()  # begun anew with the lines that come now: a server's line changes with its players
        remembered[line] = (msg.name, msg.values.copy(), msg.info)


def _rememberable(line, cut):
    """Whether a line's decoding may be kept and given again: not longer than MAX_REMEMBERED_LINE, nor cut by the
    capture's snap length."""
    return not cut and len(line) <= MAX_REMEMBERED_LINE


def _recall(msg, kept):
    """A remembered line's (name, values, info) given to its message, the values as a copy of their own."""
    msg.name, values, msg.info = kept
    msg.values = values.copy()


def _decode(cur, msg):
    """A line: its type byte, the fields after their separators, its \\n."""
    line = cur.data
    if line == EOL or line == CRLF:
        _empty_line(cur, msg, len(line))
        return
    type_byte = cur.u8(TYPE_FIELD)
    kind = LINE_TYPES.get(type_byte)
    msg.name = kind.name if kind is not None else f"unknown_0x{type_byte:02x}"
    separator, encoding = separator_of(line)
    utf8 = encoding == "utf-8"
    line_end = _bound(cur, line, separator)
    count = 0 if separator is None else field_count(line, cur.pos, cur.end, separator)
    layout = kind.layout if kind is not None else None
    _start_values(msg, kind, type_byte, encoding, utf8, count)
    if kind is None:
        cur.flag_last(W.unknown_type, f"type byte 0x{type_byte:02x} is not one of 101-104")
    if separator is None:
        cur.finding(W.bad_separator, "no © separator after the type byte", min(1, len(line)),
                    max(0, min(2, len(line) - 1)))
        if cur.remaining():
            cur.rest(F.body)
    else:
        _fields(cur, msg, separator, utf8, type_byte, count, layout)
        msg.info = info_line(msg, count)
    if line_end:
        _line_end(cur, len(line), line_end)
    elif len(line) < MAX_LINE:
        cur.finding(W.unterminated_line, "this line has no \\n", len(line), 0)
    if not msg.info:
        msg.info = kind.title if kind is not None else "unknown"


def _bound(cur, line, separator):
    """Set where the fields end: before the line's end, or at MAX_LINE for a longer line; return the length of its
    end: 1 for its \\n, 2 for a \\r\\n (which Windows programs write: its \\r belongs to no field), 0 unterminated."""
    size = len(line)
    terminated = 2 <= size <= MAX_LINE and line.endswith(EOL)
    line_end = 0
    if terminated:
        line_end = 2 if line.endswith(CRLF) else 1
        cur.end -= line_end
    elif size >= MAX_LINE:
        cur.end = MAX_LINE
        longer = f" of a {size}-byte line" if size > MAX_LINE else ""
        cur.finding(W.line_too_long, f"no \\n within the first {MAX_LINE} bytes{longer}: the line is cut there",
                    MAX_LINE, size - MAX_LINE)
    if not terminated and separator == SEP_UTF8 and line.startswith(SEP_UTF8[:1], cur.end - 1):
        cur.end -= 1  # the line was cut inside a separator: its first byte belongs to no field
    return line_end


def _line_end(cur, size, length):
    """The line's last ``length`` bytes as its end: \\n, or \\r\\n (flagged at its \\r)."""
    cur.end = size
    cur.raw(EOL_FIELD, length)
    if length == 2:
        cur.finding(W.crlf, "this line ends in \\r\\n, not \\n alone", size - 2, 1)


def _fields(cur, msg, separator, utf8, type_byte, count, layout):
    """Decode the ``count`` fields after the type byte, by its line type's ``layout`` (None: an unknown type). Only
    the first MAX_FIELDS are read, the rest counted, so that a line of separators costs no more than its bytes."""
    data, start, end = cur.data, cur.pos, cur.end
    step = len(separator)
    first = start + step
    cur.pos = end
    split = min(count, MAX_FIELDS)
    if layout is None:
        offset = first
        for _ in range(split):
            stop = field_end(data, offset, end, separator)
            cur.add(F.field, offset, stop - offset, decoded(data, offset, stop, utf8))
            offset = stop + step
    else:
        _check_count(cur, msg, type_byte, count, layout)
        layout_fields(cur, msg, first, end, separator, split, layout, utf8)
        if type_byte == 0x68 and fields_end(data, start, end, separator, split) - start > step * split:
            cur.finding(W.bad_end_line, "the list-end line carries data", 1, cur.end - 1)
        _cross_checks(cur, msg, start, separator)
    if count > split:
        last = fields_end(data, start, end, separator, split)  # where the last field read ends
        cur.add(F.more_fields, last, cur.end - last, count - split, display=None, generated=True)


def _empty_line(cur, msg, size):
    """A line that is only its end, \\n or \\r\\n: no type byte to read (neither byte is one)."""
    msg.name = "empty_line"
    msg.values["type"] = None
    _line_end(cur, size, size)
    cur.finding(W.unknown_type, "an empty line: no type byte before its end", 0, 0)
    msg.info = "Empty line"


def _start_values(msg, kind, type_byte, encoding, utf8, count):
    """``msg.values``, empty, with the line's type and encoding: a copy of its line type's whole-line values where
    the line has ``count`` fields, every column of its layout (_decode and the columns set each other key of it)."""
    if kind is not None and kind.layout and count >= len(kind.layout):
        msg.values = (kind.utf8_values if utf8 else kind.latin1_values).copy()
    else:
        msg.values["type"] = chr(type_byte)
        msg.values["encoding"] = encoding


def _check_count(cur, msg, type_byte, count, layout):
    """Note the line's field count; report a count its type's format does not have."""
    end_line = type_byte == 0x68
    expected = END_SEPARATORS if end_line else len(layout)
    msg.values["field_count"] = count
    if count != expected:
        what = "separators" if end_line else "fields"
        cur.finding(W.bad_end_line if end_line else W.bad_field_count,
                    f"{TYPES[type_byte][1]} has {count} {what}, the spec's format has {expected}", 0, cur.end)


def _cross_checks(cur, msg, start, separator):
    """Checks between fields (``start``: where the separator before the first field is)."""
    data = msg.values
    players, maximum = data.get("players"), data.get("maxplayers")
    if isinstance(players, int) and isinstance(maximum, int) and players > maximum:
        offset = fields_end(cur.data, start, cur.end, separator, PLAYERS_COLUMN) + len(separator)
        length = field_end(cur.data, offset, cur.end, separator) - offset
        cur.finding(W.bad_value, f"PLAYERS {players} exceeds MAXPLAYERS {maximum} (MAXPLAYERS is the player "
                                 f"limit)", offset, length)


def info_line(msg, count):
    """The line's info column: what it says, in short."""
    data = msg.values
    name = msg.name
    if name == "server":  # first: most lines are server entries
        ip, port, title, where = data.get("ip"), data.get("port"), data.get("name"), data.get("map")
        players, most = data.get("players"), data.get("maxplayers")
        if ip is None or port is None or title is None or where is None or players is None or most is None:
            return _cut_server_info(ip, port, title, where, players, most)
        return (f'Server {clip(str(ip))}:{decimal_text(port)} "{clip(str(title))}" map={clip(str(where))} players '
                f'{decimal_text(players)}/{decimal_text(most)}')
    if name == "request_list":
        return f"Request List version={_or_unknown(data.get('version'))} gametype={_or_unknown(data.get('gametype'))}"
    if name == "list_begin":
        return f"List begin: {counted(data.get('servercount'), 'server')}"
    if name == "list_end":
        return "List End"
    return f"{count} fields"


def _cut_server_info(ip, port, title, where, players, most):
    """A server line's info where the line ends before some of its fields (a FIN, the capture's end): "?" for each
    field it does not hold."""
    return (f'Server {_or_unknown(ip)}:{_or_unknown(port)} "{_or_unknown(title)}" map={_or_unknown(where)} players '
            f'{_or_unknown(players)}/{_or_unknown(most)}')


def _or_unknown(value):
    """A value's text for an info line, clipped; "?" for a field the line does not hold."""
    return clip(or_unknown(value))


def _find_newline(data, start, stop):
    """``data.find(EOL, start, stop)`` for ``start <= stop <= len(data)``. Compiled, memchr (soldat.pxd): a
    method call costs more than most lines' scan."""
    if _COMPILED:
        return _memchr_index(data, ord("\n"), start, stop)
    return data.find(EOL, start, stop)


_COMPILED = not __file__.endswith(".py")


def _line_starts_at(data, pos):
    """Whether a line seems to begin at ``pos``: a known type byte, then a separator."""
    return pos < len(data) and data[pos] in TYPES and (data.startswith(SEP_LATIN1, pos + 1)
                                                       or data.startswith(SEP_UTF8, pos + 1))


def _may_start(head):
    """Whether ``head``, the first bytes after a gap, is too short to tell whether a line starts there: a type byte
    alone, or it and the first byte of the UTF-8 separator."""
    return 0 < len(head) <= 2 and head[0] in TYPES and (len(head) == 1 or head[1] == SEP_UTF8[0])


class LineParser:
    """Cuts one direction of a TCP stream into lines and dissects each.

    A line that reaches MAX_LINE bytes without its \\n is cut there before it is dissected, and the
    bytes up to the next \\n are skipped; so is a line that would take the bytes held for unfinished
    lines of all streams past MAX_HELD. After lost bytes (a gap), or bytes the capture did not keep, parsing resumes
    at the next line start."""

    __slots__ = ("dissector", "remembered", "pieces", "size", "spans", "counted", "skipping", "after_gap", "lost",
                 "uncaptured_bytes", "encoding")

    def __init__(self, dissector):
        self.dissector = dissector
        self.remembered = dissector.remembered  # the dissector's table of decoded lines (see _remembered)
        self.pieces = []             # the unfinished line's bytes, as they came (joined once, when it ends)
        self.size = 0                # their length in all
        self.spans = []              # (frame, frame_offset, length) of the buffered bytes
        self.counted = 0             # bytes of the pieces counted in the run's budget (dissector.held)
        self.skipping = False        # drop everything up to the next \n
        self.after_gap = False       # bytes were lost: resume at the next line start
        self.lost = False            # bytes were lost since the last line: the next one says so
        self.uncaptured_bytes = False  # bytes were not captured (snap length) since the last line: the same
        self.encoding = None

    def feed(self, chunk, tree, packet):
        messages = []
        data, frame, offset = bytes(chunk.data), chunk.frame, chunk.frame_offset  # its lines are sliced as bytes
        start, end = self._resume(data, 0), len(data)
        while start < end:
            room = MAX_LINE - self.size
            newline = _find_newline(data, start, min(end, start + room))
            stop = newline + 1 if newline >= 0 else min(end, start + room)
            if newline >= 0 and not self.size:  # a whole line in this chunk: not copied through the buffer
                messages.append(self._dissect(cut(data, start, stop), [frame], offset + start, tree, packet))
            else:
                self._append(data, start, stop, frame, offset)
                if newline >= 0:
                    messages.append(self._line(tree, packet))
                elif self.size >= MAX_LINE:
                    messages.append(self._line(tree, packet))  # the decoder reports the cut
                    self.skipping = True
                elif self.dissector.held - self.counted + self._cost() > MAX_HELD:
                    messages.append(self._cut(tree, packet))
            start = self._resume(data, stop)
        self._hold()
        return messages

    def _resume(self, data, pos):
        """Where parsing goes on in ``data`` from ``pos``: after a gap, at the next line start; while
        skipping, after the next \\n (the end of ``data`` when there is none). Bytes after a gap too few to tell
        are kept as a line's first bytes until the next segment's tell (a segment may carry a type byte alone)."""
        if self.after_gap and pos < len(data):
            head = b"".join(self.pieces) + data[pos:pos + 3] if self.pieces else data[pos:pos + 3]
            if _may_start(head):
                return pos  # kept as the line's first bytes: after_gap stays, the next segment decides
            self.after_gap = False
            self.skipping = not _line_starts_at(head, 0)
            if self.skipping:
                self._release()  # the bytes kept while it could not tell are no line's start
        if self.skipping:
            newline = data.find(EOL, pos)
            if newline < 0:
                return len(data)
            self.skipping = False
            return newline + 1
        return pos

    def gap(self):
        """Bytes were lost: the line in progress cannot be completed."""
        self._resume_after_gap()
        self.lost = True

    def uncaptured(self):
        """Bytes were sent but the capture's snap length did not keep them: as a gap, but no loss."""
        self._resume_after_gap()
        self.uncaptured_bytes = True

    def _resume_after_gap(self):
        self._release()
        self.skipping = False
        self.after_gap = True

    def close(self, tree, packet):
        """The stream ended: a line still waiting for its \\n is dissected as it is, marked ``cut_by_end`` (its last
        field may be cut short: a list does not count it as a server). Bytes after a gap too few to tell a line
        start are none."""
        if self.after_gap:
            self._release()
        if not self.size:
            return []
        msg = self._line(tree, packet)
        msg.values["cut_by_end"] = True
        return [msg]

    def _append(self, data, start, stop, frame, offset):
        self.pieces.append(data[start:stop])
        self.size += stop - start
        offset += start
        last = self.spans[-1] if self.spans else None
        if last is not None and last[0] == frame and last[1] + last[2] == offset:
            self.spans[-1] = (frame, last[1], last[2] + stop - start)
        else:
            self.spans.append((frame, offset, stop - start))

    def _hold(self):
        """Count what this parser keeps for the next segment in the run's budget."""
        cost = self._cost()
        self.dissector.held += cost - self.counted
        self.counted = cost

    def _cost(self):
        """What the unfinished line holds: its bytes, and the bookkeeping of each piece (one a segment)."""
        return self.size + PIECE_COST * len(self.pieces)

    def _release(self):
        self.dissector.held -= self.counted
        self.counted = 0
        self.pieces.clear()
        self.size = 0
        self.spans.clear()

    def _cut(self, tree, packet):
        msg = self._line(tree, packet)
        msg.report(W.line_too_long, f"unfinished lines of all streams would hold more than {MAX_HELD} bytes: this "
                                    f"line is cut after {msg.length} bytes", msg.length, 0)
        self.skipping = True
        return msg

    def _line(self, tree, packet):
        line = b"".join(self.pieces)
        frames = list(dict.fromkeys([span[0] for span in self.spans]))
        offset = self.spans[0][1] if len(frames) == 1 else None
        self._release()
        return self._dissect(line, frames, offset, tree, packet)

    def _dissect(self, line, frames, offset, tree, packet):
        """The message of one line, from ``frames``, at ``offset`` in its frame (None: over several)."""
        msg = None if tree else self._remembered(line, packet, offset)
        if msg is None:
            msg = dissect_message(self.dissector, line, tree, packet, offset)
        msg.frames.extend(frames)
        if self.lost:
            msg.values["after_gap"] = True
            self.lost = False
        if self.uncaptured_bytes:
            msg.values["after_uncaptured"] = True
            self.uncaptured_bytes = False
        self._note_separator(msg)
        return msg

    def _remembered(self, line, packet, offset):
        """The message ``dissect_message`` makes without a tree of a line whose decoding the dissector remembers (see
        _decode_remembered), made without a cursor and a call of its decode; None for a line not remembered."""
        decoded = packet if type(packet) is Packet else None
        if not _rememberable(line, decoded is not None and decoded.cut):
            return None
        kept = self.remembered.get(line)
        if kept is None:
            return None
        msg = new_message(self.dissector.key, line, offset)
        _recall(msg, kept)
        return msg

    def _note_separator(self, msg):
        encoding = msg.values.get("encoding")
        if encoding and self.encoding is None:
            self.encoding = encoding
            msg.report(W.separator, "this stream uses the UTF-8 separator C2 A9" if encoding == "utf-8" else
                       "this stream uses the single Latin-1 byte A9 as separator (as the original Delphi client and "
                       "lobby sent it)", 1, 2 if encoding == "utf-8" else 1)
        elif encoding and encoding != self.encoding:
            msg.report(W.mixed_separators, f"this line's separator is {encoding}, the stream began with "
                                           f"{self.encoding}", 1, 2 if encoding == "utf-8" else 1)
