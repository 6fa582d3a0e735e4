"""A fifth protocol as a package of its own (examples/dissect-quake3), found by its entry point.

The package is really installed (pip install --target into a folder put on PYTHONPATH), so
importlib.metadata sees its dist-info exactly as it would in site-packages; without that folder the
same runs show that dissect does not know the protocol. A broken plugin and a plugin that claims a
built-in's key are reported in one line each, and the built-ins keep working.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from capkit import ethernet, tcp_packet, udp_packet, write_pcap
from conftest import ROOT, capture, jsonl, run_cli

EXAMPLE = os.path.join(ROOT, "examples", "dissect-quake3")
SERVER, CLIENT = ("10.0.0.1", 27960), ("10.0.0.2", 50000)
GETSTATUS = b"\xff\xff\xff\xffgetstatus 1234"
INFO = b"\\sv_hostname\\Arena\\mapname\\q3dm17\\sv_maxclients\\16"
STATUS = b"\xff\xff\xff\xffstatusResponse\n" + INFO + b'\n5 48 "Sarge"\n-1 999 "Doom"\n'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("source") / "dissect-quake3"  # a copy: the build leaves files beside it
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(folder), str(source)], check=True, capture_output=True, timeout=300)
    return folder


@pytest.fixture(scope="module")
def q3_pcap(tmp_path_factory):
    path = tmp_path_factory.mktemp("q3") / "quake3.pcap"
    write_pcap(path, [(1700000000.0, ethernet(udp_packet(*CLIENT, *SERVER, GETSTATUS))),
                      (1700000000.020, ethernet(udp_packet(*SERVER, *CLIENT, STATUS)))])
    return path


def _env(*folders):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, folders), ROOT])
    return env


def test_installed_plugin_decodes_in_the_command(site, q3_pcap):
    code, out, err = run_cli("-T", "jsonl", q3_pcap, env=_env(site))
    assert code == 0 and err == ""
    records = jsonl(out)
    request, reply = records[0], records[1]
    assert (request["protocol"], request["info"]) == ("quake3", "getstatus challenge=1234")
    fields = {f["key"]: f for f in request["messages"][0]["fields"]}
    assert (fields["quake3.command"]["offset"], fields["quake3.command"]["length"]) == (4, 9)
    assert (fields["quake3.challenge"]["offset"], fields["quake3.challenge"]["value"]) == (14, "1234")
    assert reply["info"] == 'statusResponse "Arena" map=q3dm17 players 2/16'
    players = [f for f in reply["messages"][0]["fields"] if f["key"] == "quake3.player"]
    name = players[0]["children"][2]
    start = STATUS.index(b"Sarge")
    assert (name["key"], name["offset"], name["length"], name["value"]) == ("quake3.player.name", start, 5, "Sarge")
    assert players[1]["children"][0]["value"] == -1
    assert records[2]["kind"] == "analysis" and records[2]["result"]["response_time"] == pytest.approx(0.020)


def test_installed_plugin_in_the_api_filters_and_field_list(site, q3_pcap):
    script = ("import dissect, json\n"
              f"with dissect.open({str(q3_pcap)!r}, filter='quake3.num_players >= 2') as cap:\n"
              "    records = list(cap)\n"
              "    print(json.dumps([r.to_dict() for r in records]))\n"
              "    print(json.dumps(cap.stats()['protocols']))\n"
              "print(sorted(dissect.protocols()))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(site), timeout=60)
    assert proc.returncode == 0, proc.stderr
    records, protocols, keys = proc.stdout.splitlines()
    kept = json.loads(records)
    assert [r["frame"] for r in kept if r["kind"] == "frame"] == [2]
    assert json.loads(protocols) == {"quake3": 1}  # --stats counts what the filter shows
    assert "'quake3'" in keys and "'netquake'" in keys
    code, out, _ = run_cli("-G", "fields", env=_env(site))
    assert "quake3.player.ping\tquake3\tint\tPing" in out
    code, out, _ = run_cli("-G", "findings", env=_env(site))
    assert "quake3.bad_player_line\twarning\t" in out


def test_without_the_plugin_the_protocol_is_unknown(q3_pcap):
    code, out, err = run_cli("-T", "jsonl", q3_pcap)
    assert code == 0 and [r["protocol"] for r in jsonl(out)] == ["udp", "udp"]
    code, _, err = run_cli("-d", "udp.port==27960,quake3", q3_pcap)
    assert code == 2 and "unknown protocol 'quake3'" in err
    code, _, err = run_cli("-Y", "quake3.num_players >= 2", q3_pcap)
    assert code == 2 and "'quake3.num_players' is not a field" in err


def _fake_dist(folder, name, entry_points, module=None, source=""):
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[dissect.protocols]\n" + entry_points)
    if module:
        (folder / f"{module}.py").write_text(source)


def test_broken_plugins_are_skipped_in_one_line_each(tmp_path):
    _fake_dist(tmp_path, "broken_plugin", "broken = broken_plugin:Broken\n", "broken_plugin",
               "raise ImportError('no module named somethingmissing')\n")
    _fake_dist(tmp_path, "clashing_plugin", "netquake = clashing_plugin:Other\n", "clashing_plugin", "Other = 1\n")
    code, out, err = run_cli(capture("netquake-session.pcap"), env=_env(tmp_path))
    assert code == 0 and "CCREP_SERVER_INFO" in out
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0] == "dissect: protocol broken skipped: ImportError: no module named somethingmissing" or \
        lines[1] == "dissect: protocol broken skipped: ImportError: no module named somethingmissing"
    assert any("plugin netquake (clashing_plugin:Other) skipped: the key 'netquake' is a built-in protocol" in line
               for line in lines)


def test_importlib_metadata_is_read_only_where_a_plugin_may_be(site, tmp_path):
    """importlib.metadata costs about 30 ms of each start: dissect looks at the distributions' entry_points.txt
    first and imports it only where one declares an entry beyond the built-ins' own."""
    script = ("import sys\nfrom dissect.registry import load_protocols\n"
              "print(sorted(load_protocols()), 'importlib.metadata' in sys.modules)\n")
    builtins_only = tmp_path / "builtins" / "other-1.0.dist-info"
    builtins_only.mkdir(parents=True)
    (builtins_only / "entry_points.txt").write_text("[console_scripts]\nquake3 = x:y\n\n[dissect.protocols]\n"
                                                    "teeframe = dissect.dissectors.teeframe:TeeFrame\n")
    (tmp_path / "builtins" / "legacy-0.9.egg-info").write_text("Metadata-Version: 1.0\nName: legacy\n")  # a file
    runs = {}
    for label, folders in (("none", []), ("builtins", [tmp_path / "builtins"]), ("plugin", [site])):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(*folders),
                              timeout=60)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        runs[label] = proc.stdout.strip()
    builtins = "['netquake', 'odamex', 'soldat', 'teeframe']"
    assert runs == {"none": f"{builtins} False", "builtins": f"{builtins} False",
                    "plugin": "['netquake', 'odamex', 'quake3', 'soldat', 'teeframe'] True"}


REGISTER = """
import sys
from dissect import Dissector, FieldTable, FindingTable, register

def protocol(key):
    class Echo(Dissector):
        title = "Echo"
        transports = ("udp",)
        ports = (7,)
        fields = FieldTable(key, messages=True, title="Echo", entries=[("text", "Text", "string", "the bytes")])
        findings = FindingTable(key, messages=True, entries=[("truncated", "error", "a message has bytes")])
        truncated = findings.truncated
        examples = (b"hi",)

        def decode(self, cur, msg, packet):
            msg.name = "echo"
    Echo.key = key
    return Echo

for key in sys.argv[1:]:
    try:
        register(protocol(key))
        print(key, "registered")
    except ValueError as exc:
        print(key, "refused:", exc)
"""


def test_register_refuses_the_keys_of_the_lower_layers():
    """A frame that no protocol claims shows its top layer's key (titled UDP, IPV4...), and the summary pads
    each key's title once: a protocol registered later under such a key would retitle those frames."""
    run = subprocess.run([sys.executable, "-c", REGISTER, "echo", "ipv4", "udp", "payload", "netquake"],
                         capture_output=True, text=True, timeout=60, env=_env())
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "echo registered"
    for line, key in zip(lines[1:4], ("ipv4", "udp", "payload")):
        assert line == f"{key} refused: {key}: the key {key!r} is taken by dissect's own fields and layers"
    assert lines[4] == "netquake refused: a protocol with the key 'netquake' is registered already"


OBSERVE = """
import sys
from dissect import Dissector, FieldTable, FindingTable, register
from dissect.api import Capture
from dissect.registry import Registry


class Echo(Dissector):
    key, title, ports = "echo", "Echo", (7,)
    fields = FieldTable("echo", messages=True, title="Echo", entries=[("text", "Text", "string", "the bytes")])
    findings = FindingTable("echo", messages=True, entries=[("truncated", "error", "a message has bytes")])
    truncated = findings.truncated
    examples = (b"hi",)

    def claims(self, payload, packet, on_port):
        return on_port

    def decode(self, cur, msg, packet):
        msg.name = "echo"
        msg.info = cur.data.decode()

    def observe(self, packet, msg):
        print("observed", msg.name, msg.frames, packet.sport, packet.dport, msg.info)


class Silent(Echo):
    key, title, ports = "silent", "Silent", (9,)
    fields = FieldTable("silent", messages=True, title="Silent", entries=[("text", "Text", "string", "the bytes")])
    findings = FindingTable("silent", messages=True, entries=[("truncated", "error", "a message has bytes")])
    truncated = findings.truncated
    observe = Dissector.observe


class Own(Silent):  # the base's observe in its class, its own set on the instance; its messages name another key
    key, title, ports = "own", "Own", (11,)
    fields = FieldTable("own", messages=True, title="Own", entries=[("text", "Text", "string", "the bytes")])
    findings = FindingTable("own", messages=True, entries=[("truncated", "error", "a message has bytes")])
    truncated = findings.truncated

    def __init__(self):
        super().__init__()
        self.observe = lambda packet, msg: print("own observed", msg.protocol, msg.frames)

    def decode(self, cur, msg, packet):
        msg.name, msg.protocol = "own", "echo"


register(Echo)
register(Silent)
register(Own)
print("observing", sorted(Registry().observing()))
for rec in Capture([sys.argv[1]]):
    print("frame", rec.number, rec.protocol, rec.info)
"""


def test_a_protocol_that_overrides_observe_sees_each_message_after_its_decode(tmp_path):
    """The pipeline calls ``observe`` of the protocols that override Dissector's (which learns nothing), each message
    once, decoded and with its frame number, with its packet; a protocol that keeps the base's is not among them, one
    that sets its own on the instance is, and it is called whatever protocol its message names. Of the built-ins,
    NetQuake (the port a server hands out) and Odamex (the requests a reply answers) observe."""
    path = tmp_path / "echo.pcap"
    write_pcap(path, [(1700000000.0, ethernet(udp_packet("10.0.0.2", 40000, "10.0.0.1", 7, b"one"))),
                      (1700000000.5, ethernet(udp_packet("10.0.0.2", 40001, "10.0.0.1", 9, b"two"))),
                      (1700000001.0, ethernet(udp_packet("10.0.0.1", 7, "10.0.0.2", 40000, b"three"))),
                      (1700000001.5, ethernet(udp_packet("10.0.0.2", 40002, "10.0.0.1", 11, b"four")))])
    run = subprocess.run([sys.executable, "-c", OBSERVE, str(path)], capture_output=True, text=True, timeout=60,
                         env=_env())
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "observing ['echo', 'netquake', 'odamex', 'own']",
        "observed echo [1] 40000 7 one", "frame 1 echo one",
        "frame 2 silent two",
        "observed echo [3] 7 40000 three", "frame 3 echo three",
        "own observed echo [4]", "frame 4 own own"]


HOSTILE = """
import sys
from dissect import AnalysisRecord, Analyzer, Dissector, FieldTable, FindingTable, register
from dissect.core.model import new_field

F = FieldTable("hostile", messages=True, title="Hostile", entries=[("word", "Word", "bytes", "four bytes")])
W = FindingTable("hostile", messages=True, entries=[("truncated", "error", "a message has bytes")])


class Tracker(Analyzer):
    def feed(self, record, msg, tree):
        if record.number == 1:
            raise KeyError("no such conversation")
        return ["not a record"]

    def finish(self):
        raise RuntimeError("finish exploded")

    def stats(self):
        raise ValueError("no statistics")


class Hostile(Dissector):
    key, title, ports, examples = "hostile", "Hostile", (7,), (b"word",)
    fields, findings, truncated, analyzer = F, W, W.truncated, Tracker

    def claims(self, payload, packet, on_port):
        if on_port:
            return True
        raise IndexError("payload too short")

    def observe(self, packet, msg):
        if packet.sport == 7:
            raise ZeroDivisionError("division by zero")

    def decode(self, cur, msg, packet):
        msg.name, msg.info = 12345, b"bytes"
        word = new_field("hostile.word", "Word", 0, 4, b"word", None)
        word.children = [new_field("hostile.word", "Word", 2, 9, b"", None), word]  # out of bounds, and a cycle
        msg.fields += [word, new_field("hostile.word", "Word", -5, 4, b"", None),
                       new_field("hostile.word", "Word", 4, 10 ** 12, b"", None), "a string"]


register(Hostile)
from dissect.__main__ import run
sys.argv = ["dissect", *sys.argv[1:]]
sys.exit(run())
"""
NETQUAKE_REQUEST = bytes.fromhex("8000000c02515541" "4b450003")  # CCREQ_SERVER_INFO "QUAKE", version 3


@pytest.fixture(scope="module")
def hostile_pcap(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "hostile.pcap"
    write_pcap(path, [(1700000000.0, ethernet(udp_packet("10.0.0.2", 40000, "10.0.0.1", 7, b"word-word"))),
                      (1700000000.5, ethernet(udp_packet("10.0.0.2", 40001, "10.0.0.1", 26000, NETQUAKE_REQUEST))),
                      (1700000001.0, ethernet(udp_packet("10.0.0.2", 5555, "10.0.0.1", 5556, b"zz"))),
                      (1700000001.5, ethernet(udp_packet("10.0.0.1", 7, "10.0.0.2", 40000, b"drow")))])
    return path


def _hostile(*args):
    run = subprocess.run([sys.executable, "-c", HOSTILE, *map(str, args)], capture_output=True, text=True,
                         timeout=120, env=_env(), cwd=ROOT)
    return run.returncode, run.stdout, run.stderr


RULE = ("(a bug in the protocol's own code (decoder, stream parser or analyzer), caught: what it made before is kept "
        "and the capture goes on)")


def test_a_plugins_failures_cost_its_own_work_and_the_run_goes_on(hostile_pcap):
    """What a plugin's hooks raise, and what they hand back that the views cannot use, become its dissector_error
    findings: its claims off its port leave the payload to UDP, its fields outside the message are dropped, its
    analyzer's feed and finish are caught, and the built-ins' frames are as without it."""
    code, out, err = _hostile("-T", "jsonl", hostile_pcap)
    assert (code, err) == (0, "")
    first, netquake, unclaimed, reply, end = jsonl(out)
    msg = first["messages"][0]
    assert (first["protocol"], first["info"], msg["message"]) == ("hostile", "unknown [Malformed]", "unknown")
    word = msg["fields"][0]
    assert (len(msg["fields"]), word["offset"], word["length"], word["value"], word["children"]) == \
        (1, 0, 4, "776f7264", [])
    assert [f["message"] for f in msg["findings"]] == [
        f"the plugin set the message's name to int, not text: not shown {RULE}",
        f"the plugin set the message's info to bytes, not text: not shown {RULE}",
        f"5 of the plugin's fields are not Fields, lie outside the message's 9 bytes or are met twice in its tree: "
        f"dropped (the first: hostile.word at [2:9]) {RULE}",
        f"the plugin's analyzer's feed raised KeyError: 'no such conversation' {RULE}"]
    assert {f["code"] for f in msg["findings"]} == {"hostile.dissector_error"}
    assert (netquake["protocol"], netquake["info"], netquake["findings"]) == \
        ("netquake", 'CCREQ_SERVER_INFO game="QUAKE" version=3', [])
    assert (unclaimed["protocol"], unclaimed["sport"], unclaimed["dport"]) == ("udp", 5555, 5556)
    assert [(f["code"], f["message"]) for f in unclaimed["findings"]] == [
        ("hostile.dissector_error", f"the plugin's claims raised IndexError: payload too short: the payload was left "
                                    f"to the other protocols {RULE}")]
    assert [f["message"] for f in reply["messages"][0]["findings"][-2:]] == [
        f"the plugin's observe raised ZeroDivisionError: division by zero {RULE}",
        f"the plugin's analyzer's feed gave 1 object that is not an analysis record the views can show: dropped "
        f"{RULE}"]
    assert (end["kind"], end["protocol"], end["name"], end["findings"][0]["message"]) == \
        ("analysis", "hostile", "dissector_error", f"the plugin's analyzer's finish raised RuntimeError: finish "
                                                   f"exploded {RULE}")


def test_a_plugins_failing_stats_show_as_its_error(hostile_pcap):
    code, out, err = _hostile("--stats", hostile_pcap)
    assert (code, err) == (0, "")
    assert "\nHostile transactions: none shown: the plugin's analyzer's stats raised ValueError: no statistics\n" in out
    assert "\nFindings\n  error    hostile.dissector_error" in out
    code, out, err = _hostile("--stats", "-T", "json", hostile_pcap)
    stats = json.loads(out)[-1]
    assert stats["transactions"]["hostile"] == {"error": "the plugin's analyzer's stats raised ValueError: "
                                                         "no statistics"}
    assert stats["transactions"]["netquake"]["requests"] == 1


def test_a_plugin_behind_its_guards_in_every_view_and_with_j(hostile_pcap):
    """Every view shows the frames and the failures; -j gives one process's frames, and each of its processes runs
    its own copy of the analyzer, so each copy's failure at the end is told."""
    for view in ([], ["-V"], ["-x"], ["--stats"]):
        code, out, err = _hostile(*view, hostile_pcap)
        assert (code, err) == (0, ""), view
        assert "hostile.dissector_error" in out or view == [], view
        assert "CCREQ_SERVER_INFO" in out
    _, one, _ = _hostile("-T", "jsonl", hostile_pcap)
    code, two, err = _hostile("-j", "2", "-T", "jsonl", hostile_pcap)
    assert (code, err) == (0, "")
    one, two = jsonl(one), jsonl(two)
    assert two[:4] == one[:4] and two[4:] == one[4:] * 2


def test_a_protocol_without_its_dissector_error_is_refused():
    script = REGISTER.replace("messages=True, entries=[(\"truncated\"", "messages=False, entries=[(\"truncated\"")
    run = subprocess.run([sys.executable, "-c", script, "echo"], capture_output=True, text=True, timeout=60,
                         env=_env())
    assert run.stdout.splitlines() == [
        "echo refused: echo: findings must be a FindingTable made with messages=True (it declares "
        "echo.dissector_error, which reports what the protocol's own code raises)"]


STREAM = """
import sys
from dissect import Dissector, FieldTable, FindingTable, register
from dissect.core.model import new_message

F = FieldTable("lines", messages=True, title="Lines", entries=[("text", "Text", "bytes", "a line")])
W = FindingTable("lines", messages=True, entries=[("truncated", "error", "a line has bytes")])


class Parser:
    def feed(self, chunk, tree, packet):
        data = bytes(chunk.data)
        if data == b"bad":
            yield new_message("lines", b"before", 0)
            raise RuntimeError("cannot parse")
        msg = new_message("lines", data, 0)
        msg.name = msg.info = "line"
        yield msg

    def gap(self):
        pass

    def close(self, tree, packet):
        return []


class Lines(Dissector):
    key, title, transports, ports, examples = "lines", "Lines", ("tcp",), (4444,), (b"line",)
    fields, findings, truncated = F, W, W.truncated

    def claims(self, payload, packet, on_port):
        return on_port

    def stream_parser(self):
        return Parser()


register(Lines)
from dissect.__main__ import run
sys.argv = ["dissect", *sys.argv[1:]]
sys.exit(run())
"""


def test_a_plugins_stream_parser_that_raises_stops_its_side_of_the_stream(tmp_path):
    """The messages it made before the failure are kept; that side's later bytes are not dissected, the other
    side's are."""
    client, server = ("10.0.0.2", 40000), ("10.0.0.1", 4444)
    segments = [(client, server, b"one", 1), (client, server, b"bad", 4), (client, server, b"two", 7),
                (server, client, b"back", 1)]
    path = tmp_path / "lines.pcap"
    write_pcap(path, [(1700000000.0 + n, ethernet(tcp_packet(*src, *dst, data, seq=seq)))
                      for n, (src, dst, data, seq) in enumerate(segments)])
    run = subprocess.run([sys.executable, "-c", STREAM, "-T", "jsonl", str(path)], capture_output=True, text=True,
                         timeout=120, env=_env(), cwd=ROOT)
    assert (run.returncode, run.stderr) == (0, "")
    records = [record for record in jsonl(run.stdout) if record["kind"] == "frame"]
    assert [record["info"] for record in records] == \
        ["line", "", "40000 → 4444 [PSH, ACK] Seq=7 Len=3 [Lines line continues]", "line"]
    assert [[msg["length"] for msg in record["messages"]] for record in records] == [[3], [6], [], [4]]
    assert [f["message"] for f in records[1]["findings"]] == [
        f"the plugin's stream parser's feed raised RuntimeError: cannot parse: this side of the stream is not "
        f"dissected from here {RULE}"]
    assert records[2]["findings"] == [] and records[3]["findings"] == []


def test_a_stream_parser_that_cannot_be_made_or_never_stops_costs_its_side_of_the_stream(tmp_path):
    client, server = ("10.0.0.2", 40000), ("10.0.0.1", 4444)
    path = tmp_path / "lines.pcap"
    write_pcap(path, [(1700000000.0, ethernet(tcp_packet(*client, *server, b"one", seq=1))),
                      (1700000001.0, ethernet(tcp_packet(*server, *client, b"two", seq=1)))])
    endless = STREAM.replace('''        data = bytes(chunk.data)''', '''        while chunk.data == b"one":
            yield new_message("lines", b"x", 0)
        data = bytes(chunk.data)''')
    unmade = STREAM.replace('''    def stream_parser(self):
        return Parser()''', '''    def stream_parser(self):
        raise MemoryError("no room")''')
    records = {}
    for name, script in (("endless", endless), ("unmade", unmade)):
        run = subprocess.run([sys.executable, "-c", script, "-T", "jsonl", str(path)], capture_output=True, text=True,
                             timeout=120, env=_env(), cwd=ROOT)
        assert (run.returncode, run.stderr) == (0, "")
        records[name] = [record for record in jsonl(run.stdout) if record["kind"] == "frame"]
    first, second = records["endless"]  # the client's side stops; the server's goes on
    assert [f["message"] for f in first["findings"]] == [
        f"the plugin's stream parser's feed raised RuntimeError: more than 65536 messages from one call: this side of "
        f"the stream is not dissected from here {RULE}"]
    assert len(first["messages"]) == 65536 and second["info"] == "line"
    first, second = records["unmade"]  # both sides' parsers are made when the stream is taken
    assert [f["message"] for f in first["findings"]] == 2 * [
        f"the plugin's stream_parser raised MemoryError: no room: this side of the stream is not dissected from here "
        f"{RULE}"]
    assert (first["messages"], second["messages"], second["findings"]) == ([], [], [])


UNRULY = """
import sys
import threading
from dissect import AnalysisRecord, Analyzer, Dissector, FieldTable, FindingTable, register
from dissect.core.model import new_field

F = FieldTable("unruly", messages=True, title="Unruly", entries=[("word", "Word", "bytes", "four bytes")])
W = FindingTable("unruly", messages=True, entries=[("truncated", "error", "a message has bytes")])


class Keeper(Analyzer):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()  # cannot be pickled: -j cannot send this analyzer to its parent
        self.seen = 0

    def feed(self, record, msg, tree):
        self.seen += 1
        result = {}
        result["itself"] = result
        return [AnalysisRecord("unruly", "loop", [record.number], result, [], "a result that holds itself")]

    def stats(self):
        return {"requests": self.seen}  # no count of answered requests


class Unruly(Dissector):
    key, title, ports, examples = "unruly", "Unruly", (7,), (b"word",)
    fields, findings, truncated, analyzer = F, W, W.truncated, Keeper

    def claims(self, payload, packet, on_port):
        return on_port

    def decode(self, cur, msg, packet):
        loop = [1]
        loop.append(loop)
        deep = []
        for _ in range(100000):
            deep = [deep]
        msg.name, msg.protocol = "word", "netquake"  # a built-in's key: NetQuake's analyzer would take it
        msg.values.update(command=3, player_number=[1])
        msg.fields += [new_field("unruly.word", "Word", 0, 2, loop, None),
                       new_field("unruly.word", "Word", 2, 2, deep, None),
                       new_field("unruly.word", "Word", 0, 4, [[1, 2], {"a": (3,)}], None)]


register(Unruly)
from dissect.__main__ import run
sys.argv = ["dissect", *sys.argv[1:]]
sys.exit(run())
"""


def _unruly(*args):
    run = subprocess.run([sys.executable, "-c", UNRULY, *map(str, args)], capture_output=True, text=True,
                         timeout=120, env=_env(), cwd=ROOT)
    return run.returncode, run.stdout, run.stderr


def test_a_plugins_values_the_views_cannot_write_and_a_built_ins_key_are_put_right(hostile_pcap):
    """A field value that holds itself or is nested 100,000 deep (the compiled JSON writer would overflow the C
    stack), an analysis result that holds itself, and a message that names NetQuake's key (whose analyzer would take
    the plugin's values as its own): each is the plugin's dissector_error, and the run goes on."""
    code, out, err = _unruly("-T", "jsonl", hostile_pcap)
    assert (code, err) == (0, "")
    first, netquake, unclaimed, reply = jsonl(out)
    msg = first["messages"][0]
    assert (first["protocol"], msg["protocol"], msg["message"]) == ("unruly", "unruly", "word")
    assert [(f["offset"], f["length"], f["value"]) for f in msg["fields"]] == [
        (0, 2, None), (2, 2, None), (0, 4, [[1, 2], {"a": [3]}])]
    assert [f["message"] for f in msg["findings"]] == [
        f"the plugin set the message's protocol to 'netquake', a built-in protocol's key: put back {RULE}",
        f"2 of the plugin's field values are nested deeper than 32 levels (or holding itself): dropped (the first: "
        f"unruly.word at [0:2]) {RULE}",
        f"the plugin's analyzer's feed gave 1 object that is not an analysis record the views can show: dropped "
        f"{RULE}"]
    assert netquake["info"] == 'CCREQ_SERVER_INFO game="QUAKE" version=3' and reply["protocol"] == "unruly"
    for view in (["-V"], ["-T", "fields", "-e", "unruly.word"], ["-T", "json"]):
        code, out, err = _unruly(*view, hostile_pcap)
        assert (code, err) == (0, "") and "dissector_error" in out or view[0] == "-T" and view[1] == "fields", view


def test_a_plugins_partial_or_unsendable_statistics_leave_the_others_shown(hostile_pcap):
    """Statistics without ``answered`` show it as 0; an analyzer that cannot be pickled costs, under -j, its own
    statistics (said in their place), not the run."""
    code, out, err = _unruly("--stats", hostile_pcap)
    assert (code, err) == (0, "")
    assert "\nUnruly transactions: 2 requests, 0 answered\n" in out
    code, out, err = _unruly("-j", "2", "--stats", hostile_pcap)
    assert (code, err) == (0, "")
    assert "\nUnruly transactions: none shown: the plugin's analyzer, sent between processes, raised TypeError: " \
           "cannot pickle '_thread.lock' object\n" in out
    assert "\nNetQuake transactions: 1 requests, 0 answered\n" in out


DECLARED = """
import sys
from dissect import Dissector, FieldTable, FindingTable, register


def protocol(key, **declared):
    class Echo(Dissector):
        title = "Echo"
        ports = (7,)
        fields = FieldTable(key, messages=True, title="Echo", entries=[("text", "Text", "string", "the bytes")])
        findings = FindingTable(key, messages=True, entries=[("truncated", "error", "a message has bytes")])
        truncated = findings.truncated
        examples = (b"hi",)
    Echo.key = key
    for name, value in declared.items():
        setattr(Echo, name, value)
    return Echo


for key, declared in (("one", dict(ports=41001)), ("two", dict(ports=None)), ("three", dict(title=5)),
                      ("four", dict(ports=(7, 70000))), ("five", dict(ports="7")), ("six", dict(ports=[7, 9]))):
    try:
        register(protocol(key, **declared))
        print(key, "registered")
    except ValueError as exc:
        print(key, "refused:", exc)
from dissect import dissect_payload
print(dissect_payload(bytes.fromhex("8000000c02515541" "4b450003"), "netquake").info)
"""


def test_register_refuses_ports_and_titles_the_registry_cannot_use():
    run = subprocess.run([sys.executable, "-c", DECLARED], capture_output=True, text=True, timeout=60, env=_env())
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "one refused: one: ports must be a tuple of port numbers, not a int",
        "two refused: two: ports must be a tuple of port numbers, not a NoneType",
        "three refused: three: title must be text, not a int",
        "four refused: four: ports must be numbers from 0 to 65535 (70000 is not)",
        "five refused: five: ports must be a tuple of port numbers, not a str",
        "six registered",
        'CCREQ_SERVER_INFO game="QUAKE" version=3']


def test_a_plugin_that_exits_as_it_is_imported_is_skipped(tmp_path):
    """A plugin module that calls sys.exit() when a dependency is missing is skipped like one that raises."""
    _fake_dist(tmp_path, "leaving_plugin", "leaving = leaving_plugin:Leaving\n", "leaving_plugin",
               "raise SystemExit('plugin says bye')\n")
    code, out, err = run_cli(capture("netquake-session.pcap"), env=_env(tmp_path))
    assert code == 0 and "CCREP_SERVER_INFO" in out
    assert err == "dissect: protocol leaving skipped: SystemExit: plugin says bye\n"
