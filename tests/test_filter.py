"""Display filters: grammar, evaluation, strict keys and types, and filters too big for a recursive parser."""

import subprocess
import sys

import capkit
import netquake_peer as nq
import pytest

import dissect
from conftest import ROOT, capture, run_cli
from dissect.core.model import Field
from dissect.filter import MAX_NESTING, check_keys, compile_filter, evaluate, frame_values
from dissect.registry import UsageError

SESSION = capture("netquake-session.pcap")

FIELDS = {
    "frame.number": "uint32",
    "netquake": "protocol",
    "netquake.message": "string",
    "netquake.data": "bytes",
    "netquake.control.command": "uint8",
    "netquake.control.current_players": "uint8",
    "netquake.control.max_players": "uint8",
    "netquake.control.host_name": "string",
    "netquake.control.end_of_rules": "bool",
    "netquake.response_time": "float",
    "ip.src": "address",
    "ip.addr": "address",
    "ipv6.src": "address",
    "ipv6.addr": "address",
    "odamex.server.ip": "address",
    "udp.port": "uint16",
    "tcp.port": "uint16",
    "frame.protocol": "string",
    "soldat.servers": "list",
    "soldat.player": "none",
}

SERVER_INFO = {"netquake": [True], "netquake.message": ["CCREP_SERVER_INFO"], "netquake.control.command": [0x83],
               "netquake.control.current_players": [3], "netquake.control.max_players": [8],
               "netquake.control.host_name": ["dissect test server"], "ip.src": ["127.0.0.1"],
               "udp.port": [26000, 44806]}


def passes(text, values=SERVER_INFO, fields=None):
    return evaluate(compile_filter(text, fields), values)


def refused(text, fields=None):
    with pytest.raises(UsageError) as caught:
        compile_filter(text, fields)
    return str(caught.value)


def test_precedence_not_then_and_then_or():
    assert passes("netquake || nope && nope")  # a || (b && c)
    assert not passes("(netquake || nope) && nope")
    assert not passes("!netquake && udp.port")  # (!a) && b
    assert passes("!(netquake && nope)")
    assert passes("not nope and netquake or nope")
    assert passes("!!netquake") and not passes("!!!netquake")


def test_comparisons_on_any_value():
    assert passes("udp.port == 44806") and passes("udp.port eq 26000")
    assert passes("udp.port > 40000") and not passes("udp.port gt 44806")
    assert passes("netquake.control.command == 0x83") and passes("netquake.control.current_players ge 3")
    assert passes('netquake.control.host_name == "dissect test server"')
    assert passes('netquake.control.host_name contains "test"')
    assert not passes('netquake.control.host_name contains "x"')
    assert passes(r'netquake.control.host_name matches "^dis.*er$"')
    assert passes('ip.src == "127.0.0.1"')


def test_not_equal_needs_the_key_and_no_value_equal():
    assert not passes("udp.port != 26000")  # one of the two ports equals
    assert passes("udp.port != 53")
    assert not passes("tcp.port != 53")  # absent: nothing to differ


def test_values_of_other_types_compare_loosely():
    values = {"text": ["10"], "data": [b"\x01\xab"], "flag": [True]}
    assert passes("text > 9", values)  # a number literal reads the text as a number
    assert passes("data == 01ab", values)  # bytes compare in hex
    assert passes('data contains "\xab"', {"data": [b"\xc2\xab"]})  # the literal's UTF-8 bytes
    assert passes('data matches "^\x01"', values)  # one character per byte
    assert passes("flag == true", values) and passes("flag == 1", values)


def test_contains_takes_the_literal_as_written():
    assert passes("text contains 0x10", {"text": ["id 0x10"]})
    assert not passes("text contains 0x10", {"text": ["id 16"]})


def test_program_is_one_step_per_test_with_short_circuit_jumps():
    program = compile_filter("a && !(b || c)")
    assert len(program) == 3
    tests = [step[1:] for step in program]
    assert tests == [(1, -2), (-2, 2), (-2, -1)]  # b true: reject; c false: accept


def test_long_or_chain_of_twenty_thousand_terms():
    program = compile_filter(" || ".join(f"frame.number == {n}" for n in range(20000)))
    assert len(program) == 20000
    assert evaluate(program, {"frame.number": [19999]}) and evaluate(program, {"frame.number": [0]})
    assert not evaluate(program, {"frame.number": [20000]}) and not evaluate(program, {})


def test_long_and_chain_and_not_run():
    program = compile_filter(" and ".join(f"frame.number != {n}" for n in range(35000)))
    assert evaluate(program, {"frame.number": [35000]}) and not evaluate(program, {"frame.number": [34999]})
    assert passes("!" * 20000 + "netquake") and not passes("!" * 20001 + "netquake")


def test_nesting_is_limited():
    assert passes("(" * MAX_NESTING + "netquake" + ")" * MAX_NESTING)
    assert passes("!(" * MAX_NESTING + "nope" + ")" * MAX_NESTING) is (MAX_NESTING % 2 == 1)
    deep = "(" * (MAX_NESTING + 1) + "netquake" + ")" * (MAX_NESTING + 1)
    assert refused(deep) == f"bad filter: nested deeper than {MAX_NESTING}"
    assert refused("(" * 10000 + "netquake" + ")" * 10000) == "bad filter: nested deeper than 256"
    assert passes("(" * 200 + "nope)" + " || (netquake)" * 2 + ")" * 199)  # depth goes back down


def test_syntax_errors():
    assert refused("") == "bad filter '': empty expression"
    assert refused("netquake.length ==") == "bad filter 'netquake.length ==': expected a value after '=='"
    assert refused("__import__('os')") == "bad filter \"__import__('os')\": unexpected character at position 12"
    assert refused('a == "b') == "bad filter 'a == \"b': the string at position 6 has no closing quote"
    assert refused('a == "b\\"') == "bad filter 'a == \"b\\\\\"': the string at position 6 has no closing quote"
    assert refused("a b") == "bad filter 'a b': unexpected 'b' at position 3"
    assert refused("(a") == "bad filter '(a': missing ')'"
    assert refused("a )") == "bad filter 'a )': unexpected ')' at position 3"
    assert refused("a &&") == "bad filter 'a &&': expression ends too early"
    assert refused("a == 1 == 2") == "bad filter 'a == 1 == 2': unexpected '==' at position 8"
    assert refused("1a") == "bad filter '1a': expected a field key, found '1a' at position 1"


@pytest.mark.parametrize("given", [None, b"netquake", 3, ["netquake"]])
def test_a_filter_that_is_not_a_string_is_a_usage_error_that_names_its_type(given):
    assert refused(given) == f"bad filter: a display filter is a string, not {type(given).__name__}"
    assert refused(given, FIELDS) == f"bad filter: a display filter is a string, not {type(given).__name__}"


def test_long_filter_is_cut_in_messages():
    text = " || ".join(["frame.number == 1"] * 1000) + " ||"
    message = refused(text)
    assert message == f"bad filter {text[:72]!r}...: expression ends too early"


@pytest.mark.parametrize("pattern, why", [
    ("a{99999999999}", "the repetition number is too large"),  # OverflowError inside re
    ("(" * 1000 + "a" + ")" * 1000, "maximum recursion depth exceeded"),  # RecursionError inside re
    ("(", "missing ), unterminated subpattern at position 0"),
])
def test_bad_regular_expression(pattern, why):
    message = refused(f'netquake.control.host_name matches "{pattern}"')
    assert message.startswith("bad filter 'netquake.control.host_name matches \"")
    assert ": bad regular expression: " + why in message


def test_unknown_key_suggests_the_closest():
    assert (refused("netquake.control.curent_players >= 3", FIELDS) ==
            "bad filter: 'netquake.control.curent_players' is not a field "
            "(did you mean netquake.control.current_players?)")
    assert refused("zzz", FIELDS) == "bad filter: 'zzz' is not a field"
    assert refused("netquake && (netquake.control)", FIELDS).startswith("bad filter: 'netquake.control' is not")
    assert passes("zzz || netquake")  # without a field list every key is accepted


def test_every_type_may_be_tested_for_presence():
    for key in FIELDS:
        assert len(compile_filter(f"!{key}", FIELDS)) == 1


@pytest.mark.parametrize("text, message", [
    ("netquake.control.host_name > 3",
     "netquake.control.host_name is a string field: compare it with a quoted string, not 3"),
    ("ip.src >= 10", "ip.src is an address field: compare it with an address, not 10"),
    ("netquake.control.current_players == abc",
     "netquake.control.current_players is a number field (uint8): compare it with an integer, not abc"),
    ('netquake.control.max_players != "eight"',
     'netquake.control.max_players is a number field (uint8): compare it with an integer, not "eight"'),
    ("netquake.response_time < true",
     "netquake.response_time is a number field (float): compare it with a number, not true"),
    ('netquake.control.command contains "8"',
     "netquake.control.command is a number field (uint8): 'contains' applies to string, address and bytes "
     "fields only"),
    ('netquake.control.end_of_rules matches "1"',
     "netquake.control.end_of_rules is a bool field: 'matches' applies to string, address and bytes fields only"),
    ("netquake.control.end_of_rules == 2",
     "netquake.control.end_of_rules is a bool field: compare it with true, false, 1 or 0, not 2"),
    ("netquake == 1", "netquake is a protocol: test only whether it is present (write just netquake)"),
    ("soldat.servers == 4", "soldat.servers is a list field: test only whether it is present (write just "
                            "soldat.servers)"),
    ('soldat.player == "x"', "soldat.player is a field without a value: test only whether it is present "
                             "(write just soldat.player)"),
    # number literals as tshark reads them: no Python forms, and within the field's type
    ("udp.port == 1_000", "udp.port is a number field (uint16): compare it with an integer, not 1_000"),
    ("udp.port == 1e2", "udp.port is a number field (uint16): compare it with an integer, not 1e2"),
    ("udp.port == 09", "udp.port is a number field (uint16): compare it with an integer, not 09"),
    ("udp.port == 26000.0", "udp.port is a number field (uint16): compare it with an integer, not 26000.0"),
    ("udp.port == 70000", "70000 is out of range for udp.port, a uint16 field (0 to 65535)"),
    ("udp.port == -1", "-1 is out of range for udp.port, a uint16 field (0 to 65535)"),
    ("netquake.control.current_players >= 0x100", "0x100 is out of range for netquake.control.current_players, "
                                                   "a uint8 field (0 to 255)"),
    ("netquake.response_time < 1_0", "netquake.response_time is a number field (float): compare it with a number, "
                                     "not 1_0"),
    ("netquake.response_time < inf", "netquake.response_time is a number field (float): compare it with a number, "
                                     "not inf"),
    ("netquake.response_time < 1e400", "1e400 is out of range for netquake.response_time, a float field"),
    ("netquake.response_time > -1e309", "-1e309 is out of range for netquake.response_time, a float field"),
    ("netquake.response_time < 0x" + "f" * 300, "0x" + "f" * 300 + " is out of range for netquake.response_time, a "
                                                                  "float field"),
])
def test_type_mismatch(text, message):
    assert refused(text, FIELDS) == "bad filter: " + message
    compile_filter(text)  # without a field list: accepted


def test_typed_comparisons_that_fit():
    assert passes('netquake.control.current_players >= "3"', fields=FIELDS)  # a quoted number is a number
    # an unquoted word is text on a text field, as in tshark: 3 is "3", not the number 3
    assert passes("netquake.control.host_name == 3", {"netquake.control.host_name": ["3"]}, FIELDS)
    assert not passes("netquake.control.host_name == 3", {"netquake.control.host_name": ["3.0"]}, FIELDS)
    assert passes('netquake.control.host_name < "e"', fields=FIELDS)
    assert not passes('netquake.control.host_name == "3"', {"netquake.control.host_name": ["3.0"]}, FIELDS)
    assert passes("netquake.data == 01:AB", {"netquake.data": [b"\x01\xab"]}, FIELDS)
    assert passes('netquake.data contains "ab"', {"netquake.data": [b"xaby"]}, FIELDS)
    assert passes("netquake.control.end_of_rules == true", {"netquake.control.end_of_rules": [True]}, FIELDS)
    assert passes('ip.src matches "^127\\\\."', fields=FIELDS)
    assert passes("netquake.control.host_name == true", {"netquake.control.host_name": ["true"]}, FIELDS)


@pytest.mark.parametrize("text, port", [
    ("udp.port == 062620", 26000),        # a leading 0 is octal, as in tshark (and C)
    ("udp.port == 0x6590", 26000),
    ("udp.port == 0b110010110010000", 26000),
    ("udp.port == +26000", 26000),
    ("udp.port == 066", 54),
    ("udp.port in {066, 1}", 54),
    ("udp.port in {065..066}", 54),
])
def test_integer_literals_read_as_tshark_reads_them(text, port):
    assert passes(text, {"udp.port": [port]}, FIELDS)
    assert not passes(text, {"udp.port": [port + 1]}, FIELDS)


def test_a_number_field_cut_short_matches_no_number():
    """A number field that runs off the message's end holds its bytes (b"\\x61\\x62" of a uint16): no number compares
    equal to it (6162 did, by its hex), it is present, and != holds."""
    cut = {"udp.port": [b"\x61\x62"]}
    for text in ("== 6162", ">= 0", "in {6162}", "== 0x6162"):
        assert not passes(f"udp.port {text}", cut, FIELDS), text
    assert passes("udp.port", cut, FIELDS)
    assert passes("udp.port != 6162", cut, FIELDS)
    code, out, _ = run_cli("--payload", "800000078191", "--protocol", "netquake", "-Y", "netquake.control.port == 91")
    assert (code, out) == (0, "")
    code, out, _ = run_cli("--payload", "800000078191", "--protocol", "netquake", "-Y", "netquake.control.port")
    assert code == 0 and "    Port [truncated]: 91 (1 of 4 bytes) [5:1]" in out.splitlines()


def test_a_float_field_takes_decimal_fractions_and_integers():
    assert passes("netquake.response_time < 1e-3", {"netquake.response_time": [0.0009]}, FIELDS)
    assert not passes("netquake.response_time < 1e-3", {"netquake.response_time": [0.0011]}, FIELDS)
    assert passes("netquake.response_time == 066", {"netquake.response_time": [66.0]}, FIELDS)  # strtod's 066
    assert passes("netquake.response_time == 0x10", {"netquake.response_time": [16.0]}, FIELDS)


def test_a_literal_of_no_known_type_is_read_as_on_a_number_field():
    assert passes("x == 066", {"x": [54]})
    assert passes("x == 1.5", {"x": [1.5]})
    assert passes("x == 066", {"x": ["54"]})      # a value given as text is a number when it is written as one
    assert not passes("x == 10", {"x": ["1_0"]})  # not Python's forms
    assert not passes("x == 5", {"x": [" 5"]})
    assert passes("x == 1_0", {"x": ["1_0"]})     # no number: compared as text


def session_frames():
    with dissect.open(SESSION) as records:
        return {record.number: record for record in records if record.kind == "frame"}


def test_frame_values_of_a_real_frame():
    frame = session_frames()[2]
    values = frame_values(frame)
    assert values["frame.number"] == [2] and values["frame.len"] == [91]
    assert values["udp.port"] == [26000, 44806] and values["ip.addr"] == ["127.0.0.1", "127.0.0.1"]
    assert values["netquake.message"] == ["CCREP_SERVER_INFO"]
    assert values["netquake.control.current_players"] == [3]
    assert evaluate(compile_filter("netquake.control.current_players >= 3 && udp.srcport == 26000"), values)


def test_a_field_without_a_value_is_present_but_equals_nothing():
    frame = session_frames()[2]
    frame.messages[0].fields.append(Field("netquake.control.player", "Player", 5, 0, None))
    values = frame_values(frame)
    assert evaluate(compile_filter("netquake.control.player"), values)
    for test in ('== "None"', "== 0", 'contains "e"', 'matches "."'):
        assert not evaluate(compile_filter(f"netquake.control.player {test}"), values), test
    assert evaluate(compile_filter("netquake.control.player != 0"), values)  # none of its values is 0


def cli_errors(err):
    """stderr without the lines of protocols that other work in the tree leaves unloadable."""
    return [line for line in err.splitlines() if " skipped: " not in line]


def test_cli_refuses_deep_nesting_in_one_line():
    code, out, err = run_cli("-Y", "(" * 10000 + "frame.number == 1" + ")" * 10000, SESSION)
    assert code == 2 and out == ""
    assert cli_errors(err) == ["dissect: bad filter: nested deeper than 256"]


def test_cli_refuses_a_bad_regular_expression_in_one_line():
    code, out, err = run_cli("-Y", 'netquake.control.host_name matches "a{99999999999}"', SESSION)
    assert code == 2 and out == ""
    assert cli_errors(err) == ["dissect: bad filter 'netquake.control.host_name matches \"a{99999999999}\"': "
                               "bad regular expression: the repetition number is too large"]
    code, _, err = run_cli("-Y", 'netquake.control.host_name matches "' + "(" * 1000 + ")" * 1000 + '"', SESSION)
    assert code == 2 and len(cli_errors(err)) == 1
    assert "bad regular expression: maximum recursion depth exceeded" in err and "internal error" not in err


def test_cli_twenty_thousand_term_or_chain(tmp_path):
    # 20,000 terms are ~490 KB, beyond Linux's 128 KiB for one argument: the module runs as ``-m``
    # does, with its command line read from a file.
    terms = [f"frame.number == {n}" for n in range(100, 20098)] + ["frame.number == 3", "frame.number == 37"]
    expression = tmp_path / "filter.txt"
    expression.write_text(" || ".join(terms))
    run_as_module = ("import runpy, sys; sys.argv = ['dissect', '-Y', open(sys.argv[1]).read(), sys.argv[2]]; "
                     "runpy.run_module('dissect', run_name='__main__', alter_sys=True)")
    proc = subprocess.run([sys.executable, "-c", run_as_module, str(expression), SESSION], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and cli_errors(proc.stderr) == []
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["3", "37"]


# Networks (CIDR) on address fields.

ADDRESSES = {"ip": [True], "ip.src": ["10.1.2.3"], "ip.addr": ["10.1.2.3", "192.168.0.5"],
             "ipv6.src": ["2001:db8::5"], "ipv6.addr": ["2001:db8::5", "fe80::1"]}


@pytest.mark.parametrize("fields", [FIELDS, None], ids=["typed", "loose"])
def test_an_address_field_compares_with_a_network(fields):
    def holds(text):
        return passes(text, ADDRESSES, fields)
    assert holds("ip.src == 10.0.0.0/8") and holds("ip.src eq 10.1.2.0/24") and holds("ip.src == 10.1.2.3/32")
    assert holds("ip.src == 10.9.9.9/8")  # host bits set: the network they lie in, as tshark reads it
    assert not holds("ip.src == 11.0.0.0/8") and not holds("ip.src == 10.1.2.4/31")
    assert holds("ip.addr == 192.168.0.0/16") and not holds("ip.addr == 172.16.0.0/12")
    assert holds("ipv6.addr == 2001:db8::/32") and holds("ipv6.src == 2001:db8:0:0::/64")
    assert holds("ipv6.addr == fe80::/10") and not holds("ipv6.src == fe80::/10")
    assert not holds("ipv6.addr == 0.0.0.0/0") and not holds("ip.src == ::/0")  # one version never in the other


@pytest.mark.parametrize("fields", [FIELDS, None], ids=["typed", "loose"])
def test_not_equal_to_a_network_means_no_address_in_it(fields):
    def holds(text):
        return passes(text, ADDRESSES, fields)
    assert not holds("ip.src != 10.0.0.0/8") and holds("ip.src != 192.168.0.0/16")
    assert not holds("ip.addr != 192.168.0.0/16")  # one of the two addresses is in it
    assert holds("ip.addr != 172.16.0.0/12") and not holds("ipv6.addr ne 2001:db8::/32")
    assert not passes("ip.src != 10.0.0.0/8", {"ipv6.src": ["::1"]}, fields)  # absent: nothing to differ


def test_an_address_field_compares_addresses_not_text():
    assert passes("ipv6.src == 2001:0db8:0::5", ADDRESSES, FIELDS)  # another spelling of 2001:db8::5
    assert passes('ip.src == "10.1.2.3"', ADDRESSES, FIELDS) and not passes("ip.src == 10.1.2.30", ADDRESSES, FIELDS)
    assert passes("ip.src > 10.1.2.2", ADDRESSES, FIELDS) and not passes("ip.src > 10.1.2.3", ADDRESSES, FIELDS)
    assert passes("ipv6.addr <= fe80::1", ADDRESSES, FIELDS) and not passes("ip.src < ::1", ADDRESSES, FIELDS)
    server = {"odamex.server.ip": [b"\x0a\x00\x00\x07"]}  # an address field whose value is 4 bytes as sent
    assert passes("odamex.server.ip == 10.0.0.7", server, FIELDS)
    assert passes("odamex.server.ip == 10.0.0.0/24", server, FIELDS)
    assert not passes("odamex.server.ip == 10.0.1.0/24", server, FIELDS)


def test_values_that_are_no_address_are_in_no_network():
    values = {"ip.addr": ["nope", "x" * 5000, 167772160, b"\x0a\x00\x00"]}
    assert not passes("ip.addr == 10.0.0.0/8", values, FIELDS) and not passes("ip.addr == 10.0.0.0/8", values)
    assert passes("ip.addr != 10.0.0.0/8", values, FIELDS)
    assert not passes("ip.addr >= 0.0.0.0", values, FIELDS)


@pytest.mark.parametrize("text, wanted", [
    ("ip.src == 10.0.0.0/33", "an address or a network (10.0.0.0/8), not 10.0.0.0/33"),
    ("ip.addr != 10.0.0/8", "an address or a network (10.0.0.0/8), not 10.0.0/8"),
    ('ipv6.addr == "host"', 'an address or a network (10.0.0.0/8), not "host"'),
    ("ip.src > 10.0.0.0/8", "an address, not 10.0.0.0/8"),
    ("ip.src <= 300.1.1.1", "an address, not 300.1.1.1"),
])
def test_an_address_field_refuses_what_is_no_address(text, wanted):
    key = text.split()[0]
    assert refused(text, FIELDS) == f"bad filter: {key} is an address field: compare it with {wanted}"


def test_without_a_field_list_a_slash_that_is_no_network_compares_as_text():
    assert passes("path == a/b", {"path": ["a/b"]}) and not passes("path == 1/2", {"path": ["0.5"]})


# Sets and ranges: ``in {...}``.

def test_in_a_set_of_numbers():
    assert passes("udp.port in {26000 26001}") and passes("udp.port in {26001, 44806}")
    assert passes("udp.port in {1,2 , 3 26000}") and passes("udp.port in {0x6590}")
    assert not passes("udp.port in {26001 26002}") and not passes("tcp.port in {26000}")
    assert passes("udp.port in {26000}", fields=FIELDS) and not passes("udp.port in {26001}", fields=FIELDS)


def test_in_a_range_includes_both_ends():
    assert passes("udp.port in {26000..26010}") and passes("udp.port in {25990..26000}")
    assert passes("udp.port in {44806..44806}") and passes("udp.port in {1 .. 2, 44800..45000}")
    assert not passes("udp.port in {26001..44805}") and not passes("udp.port in {1..25999 44807..65535}")
    assert passes("udp.port in {1..10 26000 50000..60000}", fields=FIELDS)
    assert passes("netquake.response_time in {0.5..1.5}", {"netquake.response_time": [1.25]}, FIELDS)
    assert passes("udp.port in {-5..-1}", {"udp.port": [-3]})


def test_in_a_set_of_strings_and_of_networks():
    assert passes('netquake.message in {"CCREP_RULE_INFO" "CCREP_SERVER_INFO"}', fields=FIELDS)
    assert not passes('netquake.message in {"CCREP_RULE_INFO", "ccrep_server_info"}', fields=FIELDS)
    assert passes('netquake.control.host_name in {"d".."e"}', fields=FIELDS)  # text orders as text
    assert passes("ip.addr in {172.16.0.0/12, 192.168.0.5}", ADDRESSES, FIELDS)
    assert passes("ipv6.addr in {::1 fe80::/10}", ADDRESSES, FIELDS)
    assert passes("ip.src in {10.1.2.0..10.1.2.9}", ADDRESSES, FIELDS)
    assert not passes("ip.addr in {172.16.0.0/12 ::/0}", ADDRESSES, FIELDS)


def test_not_in_a_set():
    assert not passes("not udp.port in {26000 26001}") and passes("!udp.port in {1..100}")
    assert passes("udp.port not in {1..100}") and not passes("udp.port not in {44806}", fields=FIELDS)
    assert passes("not tcp.port in {1}")  # absent: in no set
    assert passes("udp.port in {1} or netquake.control.max_players in {8}") and passes("!(udp.port in {1})")


def test_a_large_set_looks_values_up_and_still_compares_other_types():
    members = " ".join(str(port) for port in range(30000, 50000))
    assert passes(f"udp.port in {{{members}}}") and not passes(f"udp.port in {{{members}}}", {"udp.port": [1]})
    assert passes(f"udp.port in {{{members}}}", {"udp.port": ["44806"]})  # text read as a number, as == does
    assert passes('text in {"a" "b"}', {"text": ["b"]}) and passes("data in {01ab ff}", {"data": [b"\x01\xab"]})
    assert passes("flag in {true}", {"flag": [True]}) and passes("flag in {1}", {"flag": [True]})


@pytest.mark.parametrize("text, message", [
    ('udp.port in {26000 "x"}', 'udp.port is a number field (uint16): compare it with an integer, not "x"'),
    ("udp.port in {1..abc}", "udp.port is a number field (uint16): compare it with an integer, not abc"),
    ("netquake.control.host_name in {1..3}",
     "netquake.control.host_name is a string field: compare it with a quoted string, not 1"),
    ("ip.addr in {10.0.0.0/8 abc}", "ip.addr is an address field: compare it with an address or a network "
                                    "(10.0.0.0/8), not abc"),
    ("ip.addr in {10.0.0.0/8..10.0.0.9}", "ip.addr is an address field: compare it with an address, not 10.0.0.0/8"),
    ("netquake.control.end_of_rules in {0 2}",
     "netquake.control.end_of_rules is a bool field: compare it with true, false, 1 or 0, not 2"),
    ("netquake in {1}", "netquake is a protocol: test only whether it is present (write just netquake)"),
])
def test_in_checks_every_member_against_the_type(text, message):
    assert refused(text, FIELDS) == "bad filter: " + message


@pytest.mark.parametrize("text, why", [
    ("udp.port in {}", "empty set {} at position 14"),
    ("udp.port in {1,}", "unexpected '}' at position 16"),
    ("udp.port in {1,,2}", "unexpected ',' at position 16"),
    ("udp.port in {,1}", "unexpected ',' at position 14"),
    ("udp.port in {1 2", "missing '}'"),
    ("udp.port in 1", "expected '{' after 'in', found '1' at position 13"),
    ("udp.port in", "expected '{' after 'in'"),
    ("udp.port in {1..}", "expected a value after '..' at position 17"),
    ("udp.port in {1..", "expected a value after '..'"),
    ("udp.port in {5..1}", "the range 5..1 is empty"),
    ("udp.port in {(1)}", "unexpected '(' at position 14"),
    ("udp.port == 1..2", "unexpected '..' at position 14"),
    ("udp.port == 1, 2", "unexpected ',' at position 14"),
    ("{1} in udp.port", "expected a field key, found '{' at position 1"),
])
def test_set_syntax_errors(text, why):
    assert refused(text) == f"bad filter {text!r}: {why}"


# frame.protocol without regard to case; a protocol key written in other case.

def test_frame_protocol_compares_without_regard_to_case():
    values = {"frame.protocol": ["netquake"]}
    for fields in (FIELDS, None):
        for text in ('frame.protocol == "NetQuake"', "frame.protocol == NETQUAKE", "frame.protocol eq netquake",
                     'frame.protocol in {"TeeFrame" "NetQuake"}', 'frame.protocol contains "Quake"',
                     'frame.protocol matches "^NET"', 'frame.protocol != "UDP"', 'frame.protocol > "Netq"'):
            assert passes(text, values, fields), (text, fields)
        for text in ('frame.protocol != "NetQuake"', 'frame.protocol == "Odamex"', 'frame.protocol in {"UDP"}',
                     'not frame.protocol in {"netquake"}'):
            assert not passes(text, values, fields), (text, fields)
    assert passes('frame.protocol == "IPV4"', {"frame.protocol": ["ipv4"]}, FIELDS)


def test_messages_compare_with_regard_to_case():
    assert not passes('netquake.message == "ccrep_server_info"', fields=FIELDS)
    assert not passes('netquake.message contains "server"', fields=FIELDS)


def test_a_protocol_key_in_other_case_is_that_key():
    assert passes("NetQuake", fields=FIELDS) and passes("NETQUAKE") and not passes("!NetQuake", fields=FIELDS)
    assert passes("NetQuake && udp.port in {26000}", fields=FIELDS)
    assert refused("NetQuake == 1", FIELDS) == ("bad filter: netquake is a protocol: test only whether it is "
                                                "present (write just netquake)")
    assert refused("NetQuake.message", FIELDS) == ("bad filter: 'NetQuake.message' is not a field "
                                                   "(did you mean netquake.message?)")
    assert refused("Frame", FIELDS).startswith("bad filter: 'Frame' is not a field")  # no protocol frame here


# -T fields -e KEY: check_keys.

def test_check_keys_accepts_known_keys():
    assert check_keys(["frame.number", "netquake.control.host_name", "ip.src"], FIELDS) is None
    assert check_keys([], FIELDS) is None


def test_check_keys_names_the_first_unknown_key_with_the_closest():
    with pytest.raises(UsageError) as caught:
        check_keys(["frame.number", "netquake.control.curent_players", "zzz"], FIELDS)
    assert str(caught.value) == ("bad field 'netquake.control.curent_players': not a field "
                                 "(did you mean netquake.control.current_players?)")
    with pytest.raises(UsageError) as caught:
        check_keys(["zzz"], FIELDS)
    assert str(caught.value) == "bad field 'zzz': not a field"


# The forms through the command line.

def shown_frames(out):
    """The frame numbers of summary lines (analysis lines start with spaces and a bracket)."""
    return [int(line.split()[0]) for line in out.splitlines() if line.split()[0].isdigit()]


@pytest.fixture(scope="module")
def addresses_pcap(tmp_path_factory):
    """NetQuake requests between IPv4 and IPv6 hosts: 1 and 2 over IPv4, 3 and 4 over IPv6."""
    request = nq.ccreq_server_info()
    packets = [capkit.udp_packet("10.1.2.3", 40000, "192.168.0.5", 26000, request),
               capkit.udp_packet("172.16.0.9", 40001, "192.168.0.5", 26000, request),
               capkit.udp_packet("2001:db8::5", 40002, "2001:db8::1", 26000, request),
               capkit.udp_packet("fe80::1", 40003, "fe80::2", 26000, request)]
    path = tmp_path_factory.mktemp("filter") / "addresses.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i, capkit.ethernet(packet)) for i, packet in enumerate(packets)])
    return str(path)


@pytest.mark.parametrize("text, frames", [
    ("ip.src == 10.0.0.0/8", [1]),
    ("ip.addr != 10.0.0.0/8", [2]),
    ("ipv6.addr == 2001:db8::/32", [3]),
    ("ipv6.src != 2001:db8::/32", [4]),
])
def test_cli_networks(addresses_pcap, text, frames):
    code, out, err = run_cli("-Y", text, addresses_pcap)
    assert code == 0 and cli_errors(err) == []
    assert shown_frames(out) == frames


@pytest.mark.parametrize("text, frames", [
    ("udp.port in {34020 26001} && frame.number < 31", [27, 28, 29, 30]),
    ("udp.port in {26001..34020} && frame.number <= 30", [27, 28, 29, 30]),
    ("not udp.port in {26000, 26001}", [27, 28]),
    ('frame.protocol == "NetQuake" && frame.number in {2 53}', [2, 53]),
    ("NetQuake && frame.number <= 2", [1, 2]),
])
def test_cli_sets_ranges_and_protocols_in_any_case(text, frames):
    code, out, err = run_cli("-Y", text, SESSION)
    assert code == 0 and cli_errors(err) == []
    assert shown_frames(out) == frames


def test_cli_refuses_a_bad_member_in_one_line():
    code, out, err = run_cli("-Y", 'udp.port in {26000 "x"}', SESSION)
    assert code == 2 and out == ""
    assert cli_errors(err) == ['dissect: bad filter: udp.port is a number field (uint16): compare it with an integer, '
                               'not "x"']


def test_contains_on_a_bytes_field_takes_bytes_in_hex_as_tshark():
    """An unquoted literal for a bytes field is its bytes (01:ab, 01-ab, 01ab); a quoted one is text."""
    values, fields = {"odamex.key": [b"\x6e\x89\xd2\x7c"]}, {"odamex.key": "bytes"}
    for literal in ("89:d2", "89d2", "6e-89-d2-7c", "D2.7C"):
        assert passes(f"odamex.key contains {literal}", values, fields), literal
    assert not passes("odamex.key contains 89d3", values, fields)
    assert passes('odamex.key contains "n"', values, fields)  # 0x6e, as text
    assert not passes('odamex.key contains "89d2"', values, fields)
    assert refused("odamex.key contains 8", fields) == (
        "bad filter 'odamex.key contains 8': odamex.key is a bytes field: 'contains' takes bytes in hex (01:ab or "
        "01ab) or a quoted string, not 8")


def test_string_escapes_are_tsharks_and_any_other_is_an_error():
    assert passes(r'netquake.control.host_name matches "^dis\\w+ test"')
    assert passes(r'netquake.control.host_name contains "\x74est"') and passes(r'netquake.control.host_name '
                                                                                r'contains "\164est"')
    assert passes('data contains "\\xff\\001"', {"data": [b"a\xff\x01"]})  # a byte past 7F is that byte
    assert passes('data matches "^a\\xff"', {"data": [b"a\xff\x01"]})
    assert refused(r'netquake.control.host_name matches "\d"') == (
        "bad filter 'netquake.control.host_name matches \"\\\\d\"': \\d is not a valid character escape sequence "
        "(in a regular expression, write \\\\d)")
    assert refused(r'data contains "\777"').endswith(r"\777 is past \377: not a byte")


def test_matches_ignores_case_as_tsharks_does():
    assert passes('netquake.control.host_name matches "DISSECT"')
    assert not passes('netquake.control.host_name matches "(?-i:DISSECT)"')


def test_a_word_operator_out_of_place_is_named_as_written():
    assert refused("udp and and udp") == "bad filter 'udp and and udp': expected a field key, found 'and' at position 9"


def test_frame_and_expert_alone_are_true_where_present(cli):
    """Every frame has `frame`; `expert` holds where a finding does, as in tshark."""
    path = capture("netquake-damaged.pcap")
    count = lambda *args: len(cli(*args, path)[1].splitlines())  # noqa: E731
    total = count()
    assert count("-Y", "frame") == total and count("-Y", "not frame") == 0
    assert 0 < count("-Y", "expert") == count("-Y", "expert.code") < total
    assert count("-Y", "frame && !expert") == total - count("-Y", "expert")
