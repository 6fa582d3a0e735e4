"""The Python API: dissect.open, records equal to -T jsonl, stats, dissect_payload, protocols, and the
library's shape (no import cycles, no private names imported across modules)."""

import array
import ast
import contextlib
import glob
import gzip
import io
import json
import os
import pathlib
import re
import subprocess
import sys

import orjson
import pytest

import capkit
import dissect
from conftest import CAPTURES, ROOT, capture, jsonl, run_cli

BUNDLED = sorted(glob.glob(os.path.join(CAPTURES, "*.pcap*")))


def _readme_example():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text.split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs_on_a_bundled_capture():
    printed = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(_readme_example(), "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    lines = printed.getvalue().splitlines()
    assert lines[0] == 'frame 2 netquake CCREP_SERVER_INFO "dissect test server" map=e1m1 players 3/8'
    assert lines[1:4] == ["dissect test server", "None", "[]"]
    assert lines[-3:] == ["2", "CCREQ_SERVER_INFO QUAKE", "['netquake', 'odamex', 'soldat', 'teeframe']"]


@pytest.mark.parametrize("path", BUNDLED, ids=os.path.basename)
def test_to_dict_is_what_jsonl_writes(path):
    code, out, _ = run_cli("-T", "jsonl", path)
    with dissect.open(path) as cap:
        ours = [json.loads(orjson.dumps(record.to_dict())) for record in cap]
    assert ours == jsonl(out)
    assert len(ours) > 0


def test_stats_equal_the_json_stats_record():
    path = capture("teeframe-session.pcap")
    _, out, _ = run_cli("--stats", "-T", "jsonl", path)
    expected = [r for r in jsonl(out) if r["kind"] == "stats"][0]
    with dissect.open(path) as cap:
        first = next(iter(cap))
        assert first.kind == "frame" and first.number == 1
        assert json.loads(orjson.dumps(cap.stats())) == expected


def test_several_paths_and_a_file_object_read_as_the_command_reads_them():
    paths = [capture("netquake-session.pcap"), capture("odamex-session.pcap")]
    _, out, _ = run_cli("-T", "jsonl", *paths)
    with dissect.open(paths) as cap:
        assert [json.loads(orjson.dumps(r.to_dict())) for r in cap] == jsonl(out)
    with open(paths[0], "rb") as handle, dissect.open(handle) as cap:
        numbers = [r.number for r in cap if r.kind == "frame"]
    assert numbers == list(range(1, 55))


class _NoClose:
    """A file-like object with read() and nothing else."""

    def __init__(self, data):
        self.stream = io.BytesIO(data)

    def read(self, size=-1):
        return self.stream.read(size)


class _TextRead(_NoClose):
    def read(self, size=-1):
        return self.stream.read(size).decode("latin-1")


def test_a_file_object_is_read_and_left_open_and_a_bad_one_stops_with_its_reason(tmp_path):
    """As gzip.GzipFile leaves its fileobj: the caller's object stays open; one that is closed, write-only or whose
    read() gives text stops that input with capture.errors saying why, the next input is read."""
    data = open(capture("netquake-session.pcap"), "rb").read()
    frames = 54
    handle = io.BytesIO(data)
    with dissect.open([handle, io.BytesIO(data)]) as cap:
        assert sum(rec.kind == "frame" for rec in cap) == 2 * frames
    assert not handle.closed and handle.tell() == len(data)
    with dissect.open(_NoClose(data)) as cap:
        assert sum(rec.kind == "frame" for rec in cap) == frames
    closed = io.BytesIO(data)
    closed.close()
    write_only = open(tmp_path / "out.bin", "wb")
    for bad, reason in ((closed, "input: cannot read: I/O operation on closed file."),
                        (write_only, f"{write_only.name}: cannot read: it is not open for reading"),
                        (_TextRead(data), "input: cannot read: its read() gave str, not bytes")):
        with dissect.open([bad, io.BytesIO(data)]) as cap:
            assert sum(rec.kind == "frame" for rec in cap) == frames
            assert cap.errors == [reason]
    write_only.close()


class _Reset(io.RawIOBase):
    """A socket-like file object: 300 bytes of a capture, then a connection reset."""

    def __init__(self, data):
        self.data = data[:300]

    def readable(self):
        return True

    def readinto(self, buffer):
        if not self.data:
            raise ConnectionResetError(104, "Connection reset by peer")
        size = min(len(buffer), len(self.data))
        buffer[:size], self.data = self.data[:size], self.data[size:]
        return size


def test_a_file_object_that_fails_part_way_stops_there_and_the_next_input_is_read():
    data = open(capture("netquake-session.pcap"), "rb").read()
    odamex = capture("odamex-session.pcap")
    with dissect.open([_Reset(data), odamex]) as cap:
        records = [rec for rec in cap if rec.kind == "frame"]
        assert cap.errors == ["input: cannot read: Connection reset by peer"]
    odamex_frames = sum(rec.kind == "frame" for rec in dissect.open(odamex))
    assert 0 < len(records) - odamex_frames < 54 and records[-1].protocol == "odamex"


def test_stats_of_a_capture_closed_before_its_end_raise_where_they_cannot_be_read():
    with dissect.open(capture("netquake-session.pcap")) as cap:
        next(iter(cap))
    with pytest.raises(ValueError, match=r"stats\(\) of a closed capture that was not read to its end: call it before "
                                         r"close\(\)"):
        cap.stats()
    with dissect.open(capture("netquake-session.pcap")) as cap:
        records = list(cap)
    assert cap.stats()["frames"] == sum(rec.kind == "frame" for rec in records) == 54


def test_message_lookup_by_key():
    with dissect.open(capture("netquake-session.pcap")) as cap:
        reply = [r for r in cap if r.kind == "frame"][1]
    msg = reply.messages[0]
    host = msg["netquake.control.host_name"]
    assert (host.offset, host.length, host.value) == (21, 20, "dissect test server")
    assert msg.get("netquake.control.name") is None and "netquake.control.name" not in msg
    with pytest.raises(KeyError, match="netquake.control.name"):
        msg["netquake.control.name"]


def test_summary_records_have_no_tree_and_say_so():
    with dissect.open(capture("netquake-session.pcap"), tree=False) as cap:
        msg = [r for r in cap if r.kind == "frame"][1].messages[0]
    assert msg.fields == [] and msg.values["host_name"] == "dissect test server"
    with pytest.raises(KeyError, match="tree=False"):
        msg["netquake.control.host_name"]


def test_errors_are_the_commands():
    with pytest.raises(dissect.UsageError, match="is not a field"):
        dissect.open(capture("netquake-session.pcap"), filter="netquake.control.curent_players >= 3")
    with pytest.raises(dissect.UsageError, match="unknown protocol 'nope'"):
        dissect.open(capture("netquake-session.pcap"), decode_as=["udp.port==1,nope"])
    with pytest.raises(dissect.CaptureError, match="cannot open"):
        dissect.open(os.path.join(CAPTURES, "no-such-file.pcap"))


def test_arguments_of_the_wrong_type_raise_type_error_naming_them():
    path = capture("netquake-session.pcap")
    with pytest.raises(TypeError, match="protocol is .* not NoneType"):
        dissect.dissect_payload(b"\x80\x00", None)
    with pytest.raises(TypeError, match="payload is bytes-like.* not int"):
        dissect.dissect_payload(10 ** 12, "netquake")  # bytes(10 ** 12) would make a terabyte of zeros
    with pytest.raises(TypeError, match="filter is a display filter string .* not int"):
        dissect.open(path, filter=5)
    with pytest.raises(TypeError, match="decode_as takes strings .* not NoneType"):
        dissect.open(path, decode_as=[None])
    for wrong in (None, b"udp.port==8303,odamex"):
        with pytest.raises(TypeError, match=f"decode_as is a -d string .* not {type(wrong).__name__}"):
            dissect.open(path, decode_as=wrong)
    with pytest.raises(TypeError, match="count is a whole number of frames, not float"):
        dissect.open(path, count=1.5)
    with pytest.raises(TypeError, match="count is a whole number of frames, not bool"):
        dissect.open(path, count=True)
    with pytest.raises(TypeError, match="a capture source is .* not int"):
        dissect.open(5)


@pytest.mark.parametrize("count", [0, -1])
def test_a_count_below_one_frame_is_refused_as_the_command_refuses_it(count):
    with pytest.raises(dissect.UsageError, match=f"count must be at least 1 frame, not {count}"):
        dissect.open(capture("netquake-session.pcap"), count=count)
    assert run_cli("-c", str(count), capture("netquake-session.pcap"))[0] == 2


class _Two:
    """An integer type that is not int, as numpy's are: operator.index() takes it."""

    def __index__(self):
        return 2


@pytest.mark.parametrize("count", [2, _Two()])
def test_count_stops_after_that_many_frames(count):
    with dissect.open(capture("netquake-session.pcap"), count=count) as cap:
        assert [rec.number for rec in cap if rec.kind == "frame"] == [1, 2]


def test_one_decode_as_string_is_one_entry_not_its_characters():
    path = capture("odamex-session.pcap")
    with dissect.open(path, decode_as="udp.port==10666,netquake", tree=False) as one, \
            dissect.open(path, decode_as=["udp.port==10666,netquake"], tree=False) as listed:
        assert [r.to_dict() for r in one] == [r.to_dict() for r in listed]
    with dissect.open(path, decode_as="udp.port==10666,netquake", tree=False) as forced:
        on_port = [r.to_dict() for r in forced if r.kind == "frame" and 10666 in (r.to_dict()["sport"],
                                                                                  r.to_dict()["dport"])]
    assert on_port and {frame["protocol"] for frame in on_port} == {"netquake"}


def test_capture_bytes_given_as_a_path_get_a_capture_error_that_says_what_to_do():
    with open(capture("netquake-session.pcap"), "rb") as handle:
        data = handle.read()
    for given in (data, bytearray(data), memoryview(data), b"BZh9" + b"1" * 5000):
        with pytest.raises(dissect.CaptureError, match=r"capture bytes, not a path: .*io\.BytesIO\(data\)"):
            dissect.open(given)
    with pytest.raises(dissect.CaptureError, match=r"a path cannot hold a NUL byte .*io\.BytesIO"):
        dissect.open("captures/a\x00b.pcap")
    with dissect.open(io.BytesIO(data)) as cap:
        assert sum(rec.kind == "frame" for rec in cap) > 0


def test_a_file_object_in_text_mode_is_refused_before_the_loop():
    with open(capture("netquake-session.pcap"), encoding="latin-1") as handle:
        with pytest.raises(TypeError, match=r"open it in binary mode \('rb'\)"):
            dissect.open(handle)


def test_a_path_of_dash_reads_standard_input_as_the_string_does():
    """pathlib.Path("-") is "-": standard input, read by the loop (checking it first as a file closed it)."""
    code = ("import pathlib, dissect\n"
            "with dissect.open(pathlib.Path('-')) as cap:\n"
            "    print(sum(rec.kind == 'frame' for rec in cap))\n")
    with open(capture("netquake-session.pcap"), "rb") as handle:
        proc = subprocess.run([sys.executable, "-c", code], stdin=handle, capture_output=True, cwd=ROOT, timeout=60)
    with dissect.open(capture("netquake-session.pcap")) as cap:
        frames = sum(rec.kind == "frame" for rec in cap)
    assert (proc.returncode, proc.stdout.decode().strip(), proc.stderr) == (0, str(frames), b"")


_KEEPS_STDIN = """\
import os, sys, dissect
with dissect.open("-") as cap:
    records = iter(cap)
    frames = sum(rec.kind == "frame" for rec in (records if sys.argv[1] == "all" else [next(records)]))
print(frames, sys.stdin.closed, sys.stdin.buffer.closed, repr(sys.stdin.buffer.read()), os.fstat(0).st_size > 0)
"""


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("read", ["all", "one"])
def test_standard_input_is_left_open_when_the_capture_ends_or_is_closed(tmp_path, compressed, read):
    """A library does not close a stream it did not open: after dissect.open("-"), read to its end or closed after
    one record, the process's standard input is still open and can be read."""
    query = bytes.fromhex("8000000c025155414b450003")  # a NetQuake CCREQ_SERVER_INFO
    frames = [(capkit.DEFAULT_TS + n, capkit.ethernet(capkit.udp_packet("10.0.0.1", 40000 + n, "10.0.0.2", 26000,
                                                                        query)))
              for n in range(3)]
    path = tmp_path / "queries.pcap"
    capkit.write_pcap(path, frames)
    if compressed:
        path.write_bytes(gzip.compress(path.read_bytes()))
    with open(path, "rb") as handle:
        proc = subprocess.run([sys.executable, "-c", _KEEPS_STDIN, read], stdin=handle, capture_output=True,
                              cwd=ROOT, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert proc.stdout.decode() == f"{3 if read == 'all' else 1} False False b'' True\n"


def test_standard_input_given_twice_is_a_usage_error():
    with pytest.raises(dissect.UsageError, match='^standard input can be read once: give "-" once$'):
        dissect.open(["-", pathlib.Path("-")])


def test_dissect_payload_takes_any_buffer_and_refuses_numbers_and_text():
    payload = bytes.fromhex("8000000c025155414b450003")
    assert dissect.dissect_payload(array.array("B", payload), "netquake").name == "CCREQ_SERVER_INFO"
    for wrong in (12, "8000000c025155414b450003", None):
        with pytest.raises(TypeError, match=f"payload is bytes-like .* not {type(wrong).__name__}"):
            dissect.dissect_payload(wrong, "netquake")


def test_dissect_payload_equals_the_payload_option():
    payload = bytes.fromhex("8000000c025155414b450003")
    msg = dissect.dissect_payload(payload, "netquake")
    _, out, _ = run_cli("--payload", payload.hex(), "--protocol", "netquake", "-T", "jsonl")
    assert msg.fields[2].key == "netquake.control.command"
    assert [f["key"] for f in jsonl(out)[0]["messages"][0]["fields"]] == [f.key for f in msg.fields]
    version = msg["netquake.control.net_protocol_version"]
    assert (version.offset, version.length, version.value) == (11, 1, 3)


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_dissect_payload_takes_any_bytes_like_payload(kind):
    """A bytearray or a memoryview decodes as its bytes do, in the compiled build as in the pure one."""
    payload = bytes.fromhex("8000000c025155414b450003")
    msg = dissect.dissect_payload(kind(payload), "netquake")
    assert (msg.name, msg.payload, type(msg.payload)) == ("CCREQ_SERVER_INFO", payload, bytes)
    version = msg["netquake.control.net_protocol_version"]
    assert (version.offset, version.length, version.value) == (11, 1, 3)


def test_protocols_carry_their_tables():
    protocols = dissect.protocols()
    assert sorted(protocols) == ["netquake", "odamex", "soldat", "teeframe"]
    netquake = protocols["netquake"]
    spec = netquake.fields.get("netquake.control.current_players")
    assert (spec.type, spec.name) == ("uint8", "Current Players")
    assert netquake.findings.get("netquake.bad_version").severity == "warning"


def test_unknown_filter_key_exits_2_with_a_suggestion(cli):
    code, out, err = cli("-Y", "netquake.control.curent_players >= 3", capture("netquake-session.pcap"))
    assert (code, out) == (2, "")
    assert err == ("dissect: bad filter: 'netquake.control.curent_players' is not a field "
                   "(did you mean netquake.control.current_players?)\n")


def _keys(fields):
    for field in fields:
        yield field["key"]
        yield from _keys(field["children"])


def test_field_list_covers_every_key_and_code_the_bundled_captures_emit(cli):
    _, listed, _ = cli("-G", "fields")
    _, codes_listed, _ = cli("-G", "findings")
    keys = {line.split("\t")[0] for line in listed.splitlines()}
    codes = {line.split("\t")[0] for line in codes_listed.splitlines()}
    seen_keys, seen_codes = set(), set()
    for path in BUNDLED:
        _, out, _ = cli("-T", "jsonl", path)
        for record in jsonl(out):
            seen_codes.update(f["code"] for f in record["findings"])
            for msg in record.get("messages", ()):
                seen_keys.update(_keys(msg["fields"]))
                seen_codes.update(f["code"] for f in msg["findings"])
    assert len(seen_keys) > 100 and len(seen_codes) > 20
    assert seen_keys - keys == set()
    assert seen_codes - codes == set()


# -- the library's shape --------------------------------------------------------------------------
def _module_imports(everywhere=False):
    """module name -> the dissect modules it imports at its top level (not inside functions); ``everywhere``: inside
    functions too."""
    graph = {}
    for path in glob.glob(os.path.join(ROOT, "dissect", "**", "*.py"), recursive=True):
        name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        tree = ast.parse(open(path, encoding="utf-8").read())
        found = set()
        for node in (ast.walk(tree) if everywhere else tree.body):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.startswith("dissect"))
        graph[name] = found
    return {name: {t for t in targets if t in graph and t != name} for name, targets in graph.items()}


def test_no_import_cycles():
    graph = _module_imports()
    state = {}

    def visit(name, path):
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                raise AssertionError("import cycle: " + " -> ".join(path + [target]))
            if target not in state:
                visit(target, path + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    # nothing builds on the command but ``python -m dissect`` and the command's entry point, which imports it in run()
    users = {name for name, targets in _module_imports(everywhere=True).items() if "dissect.cli" in targets}
    assert users == {"dissect.__main__"}


def test_no_module_imports_another_modules_private_names():
    for path in glob.glob(os.path.join(ROOT, "dissect", "**", "*.py"), recursive=True):
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.ImportFrom):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                assert not private, f"{os.path.relpath(path, ROOT)} imports {private} from {node.module}"


def test_readme_tables_are_made_from_the_protocol_tables():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_docs.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_docs_stand_alone():
    for path in [os.path.join(ROOT, "README.md"), *glob.glob(os.path.join(ROOT, "docs", "*.md"))]:
        text = open(path, encoding="utf-8").read()
        assert "shared/" not in text, f"{os.path.relpath(path, ROOT)} points users to shared/"
