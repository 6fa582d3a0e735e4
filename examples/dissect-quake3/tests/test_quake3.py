"""The Quake III dissector on messages built field by field (no registry needed: the class is used
directly, as dissect's registry would after finding its entry point)."""

import importlib.util
import os
import sys


def _load_plugin():
    """The package beside tests/, loaded by its path: putting its folder on sys.path would also expose
    any build metadata there to importlib.metadata, and so to dissect's plugin discovery in other tests."""
    init = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dissect_quake3", "__init__.py")
    spec = importlib.util.spec_from_file_location("dissect_quake3", init)
    module = importlib.util.module_from_spec(spec)
    sys.modules["dissect_quake3"] = module
    spec.loader.exec_module(module)
    return module


_plugin = _load_plugin()
F, W, Quake3, Quake3Analyzer = _plugin.F, _plugin.W, _plugin.Quake3, _plugin.Quake3Analyzer

HEADER = b"\xff\xff\xff\xff"


def fields(msg):
    return {(field.key, field.offset, field.length): field.value for field in msg.walk()}


def test_getstatus_with_a_challenge():
    msg = Quake3().dissect(HEADER + b"getstatus 77")
    assert (msg.name, msg.info, msg.findings) == ("getstatus", "getstatus challenge=77", [])
    assert fields(msg) == {("quake3.header", 0, 4): 0xFFFFFFFF, ("quake3.command", 4, 9): "getstatus",
                           ("quake3.challenge", 14, 2): "77"}


def test_info_response_pairs_and_generated_fields():
    info = b"\\sv_hostname\\X\\mapname\\q3dm6\\sv_maxclients\\8"
    msg = Quake3().dissect(HEADER + b"infoResponse\n" + info)
    found = fields(msg)
    assert found[("quake3.info.key", 18, 11)] == "sv_hostname"
    assert found[("quake3.info.value", 30, 1)] == "X"
    assert found[("quake3.max_clients", 0, 0)] == 8
    assert msg.info == 'infoResponse "X" map=q3dm6' and msg.findings == []


def test_status_players_and_a_bad_line():
    body = b'statusResponse\n\\mapname\\dm1\n3 20 "A"\nnonsense\n'
    msg = Quake3().dissect(HEADER + body)
    start = 4 + body.index(b'3 20')
    found = fields(msg)
    assert found[("quake3.player.score", start, 1)] == 3
    assert found[("quake3.player.ping", start + 2, 2)] == 20
    assert found[("quake3.player.name", start + 6, 1)] == "A"
    assert [f.code for f in msg.findings] == ["quake3.bad_player_line"]
    assert msg.findings[0].message.endswith(f"({W.bad_player_line.rule})")


def test_info_string_problems():
    msg = Quake3().dissect(HEADER + b"infoResponse\nmapname\\dm1\\extra")
    assert [f.code for f in msg.findings] == ["quake3.bad_infostring"]
    msg = Quake3().dissect(HEADER + b"infoResponse\n\\a\\1\\b")
    assert [(f.code, f.offset) for f in msg.findings] == [("quake3.bad_infostring", 4 + 13 + 6)]


def test_every_key_and_code_is_declared():
    msgs = [Quake3().dissect(HEADER + payload) for payload in (
        b"getinfo", b"getstatus", b'statusResponse\n\\a\\1\n1 2 "x"\nbad', b"infoResponse\n\\a", b"hello")]
    for msg in msgs:
        assert {field.key for field in msg.walk()} <= set(F.by_key)
        assert {finding.code for finding in msg.findings} <= set(W.by_code)


class _Record:
    def __init__(self, number, ts, src, sport, dst, dport):
        self.number, self.ts, self.src, self.sport, self.dst, self.dport = number, ts, src, sport, dst, dport


def test_analyzer_pairs_replies_and_reports_the_unanswered():
    analyzer = Quake3Analyzer()
    request = Quake3().dissect(HEADER + b"getstatus")
    reply = Quake3().dissect(HEADER + b'statusResponse\n\\sv_hostname\\H\n')
    assert analyzer.feed(_Record(1, 10.0, "c", 5, "s", 27960), request, True) == []
    [record] = analyzer.feed(_Record(2, 10.25, "s", 27960, "c", 5), reply, True)
    assert (record.frames, record.result["response_time"], record.result["hostname"]) == ([1, 2], 0.25, "H")
    assert reply.get("quake3.request_in").value == 1
    analyzer.feed(_Record(3, 11.0, "c", 5, "s", 27960), Quake3().dissect(HEADER + b"getinfo"), True)
    [left] = analyzer.finish()
    assert (left.name, left.frames, left.findings[0].code) == ("unanswered", [3], "quake3.unanswered")


def test_declared_examples_decode_cleanly():
    for payload in Quake3.examples:
        msg = Quake3().dissect(payload)
        assert msg.findings == [] and msg.name in ("getstatus", "getinfo", "statusResponse", "infoResponse")
