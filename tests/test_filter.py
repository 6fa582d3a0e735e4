"""Display filters: grammar, evaluation, strict keys and types, and filters too big for a recursive parser."""

import subprocess
import sys

import pytest

import dissect
from conftest import ROOT, capture, run_cli
from dissect.core.model import Field
from dissect.filter import MAX_NESTING, compile_filter, evaluate, frame_values
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
    assert refused("a b") == "bad filter 'a b': unexpected 'b' at position 3"
    assert refused("(a") == "bad filter '(a': missing ')'"
    assert refused("a )") == "bad filter 'a )': unexpected ')' at position 3"
    assert refused("a &&") == "bad filter 'a &&': expression ends too early"
    assert refused("a == 1 == 2") == "bad filter 'a == 1 == 2': unexpected '==' at position 8"
    assert refused("1a") == "bad filter '1a': expected a field key, found '1a' at position 1"


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
    ("ip.src >= 10", "ip.src is an address field: compare it with a quoted string, not 10"),
    ("netquake.control.current_players == abc",
     "netquake.control.current_players is a number field (uint8): compare it with a number, not abc"),
    ('netquake.control.max_players != "eight"',
     'netquake.control.max_players is a number field (uint8): compare it with a number, not "eight"'),
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
])
def test_type_mismatch(text, message):
    assert refused(text, FIELDS) == "bad filter: " + message
    compile_filter(text)  # without a field list: accepted


def test_typed_comparisons_that_fit():
    assert passes('netquake.control.current_players >= "3"', fields=FIELDS)  # a quoted number is a number
    assert passes("netquake.control.host_name == 3", {"netquake.control.host_name": ["3.0"]}, FIELDS)
    assert passes('netquake.control.host_name < "e"', fields=FIELDS)
    assert not passes('netquake.control.host_name == "3"', {"netquake.control.host_name": ["3.0"]}, FIELDS)
    assert passes("netquake.data == 01:AB", {"netquake.data": [b"\x01\xab"]}, FIELDS)
    assert passes('netquake.data contains "ab"', {"netquake.data": [b"xaby"]}, FIELDS)
    assert passes("netquake.control.end_of_rules == true", {"netquake.control.end_of_rules": [True]}, FIELDS)
    assert passes('ip.src matches "^127\\\\."', fields=FIELDS)
    assert passes("netquake.control.host_name == true", {"netquake.control.host_name": ["true"]}, FIELDS)


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
