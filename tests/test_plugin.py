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

from capkit import ethernet, udp_packet, write_pcap
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
