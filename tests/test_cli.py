"""The CLI as a subprocess, in every output mode, on the bundled captures."""

import json
import os
import re
import subprocess
import sys

import capkit
import pytest
from conftest import ROOT, capture, jsonl, run_cli

SESSION = capture("netquake-session.pcap")
DAMAGED = capture("netquake-damaged.pcap")


def test_summary_lines():
    code, out, err = run_cli(SESSION)
    assert code == 0 and err == ""
    lines = out.splitlines()
    first = lines[0].split()
    assert first[0] == "1" and first[1] == "0.000000"
    assert first[2].endswith(":26000") is False and first[4].endswith(":26000")
    assert first[5] == "NetQuake" and first[6] == "54"
    assert lines[0].endswith('CCREQ_SERVER_INFO game="QUAKE" version=3')
    assert any("CCREP_SERVER_INFO \"dissect test server\" map=e1m1 players 3/8" in line for line in lines)
    assert any("[netquake rule_walk]" in line and "7 rules" in line for line in lines)
    assert "\x1b[" not in out  # no colour when piped


def test_verbose_tree_has_offsets_on_every_field():
    code, out, err = run_cli("-V", SESSION)
    assert code == 0
    block = out.split("\n\n")[1]  # frame 2: CCREP_SERVER_INFO
    assert block.startswith("Frame 2:")
    assert "NetQuake CCREP_SERVER_INFO [42:49]" in block
    assert '    Host Name: "dissect test server" [21:20]' in block
    assert "    Current Players: 3 [46:1]" in block
    assert "[Request in frame: 1]" in block
    field_lines = [ln for ln in block.splitlines() if ln.startswith("    ") and not ln.startswith("    [")
                   and ":" in ln and not ln.startswith("    Arrival") and not ln.startswith("    Link")]
    assert field_lines and all(re.search(r"\[\d+:\d+\]$", ln) for ln in field_lines)


def test_hex_dump_labels_every_byte_of_the_message():
    code, out, err = run_cli("-x", "-Y", "frame.number == 1", SESSION)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Frame 1: 54 bytes on wire")
    assert lines[1].startswith("0000  00 00 00 00 00 00 00 00  00 00 00 00 08 00 45 00")
    legend = [ln for ln in lines[lines.index("  legend:") + 1:] if ln.strip()]
    assert [ln.split()[1] for ln in legend] == [
        "eth", "ip", "udp", "netquake.flags", "netquake.length", "netquake.control.command",
        "netquake.control.game_name", "netquake.control.net_protocol_version"]
    assert '    g  netquake.control.game_name [47:6] Game Name: "QUAKE"' in legend
    # Row 0x20 holds the UDP header's end and the message start: flags at 0x2a (42), game_name at 0x2f (47).
    assert lines[5].startswith("0020  ") and lines[5].endswith(".Q")
    assert lines[6].split() == ["b", "--", "c", "--", "--", "--", "--", "--", "--", "--", "d", "--", "e", "--",
                                "f", "g"]
    assert lines[8].split() == ["g", "--", "--", "--", "--", "h"]


def test_json_records_follow_the_contract():
    code, out, err = run_cli("-T", "json", SESSION)
    assert code == 0
    records = json.loads(out)
    frame = records[1]
    assert set(frame) == {"kind", "frame", "time", "caplen", "length", "src", "sport", "dst", "dport",
                          "transport", "protocol", "info", "messages", "findings"}
    assert frame["kind"] == "frame" and frame["frame"] == 2 and frame["transport"] == "udp"
    assert frame["protocol"] == "netquake" and frame["sport"] == 26000
    msg = frame["messages"][0]
    assert set(msg) == {"protocol", "message", "frames", "offset", "length", "fields", "findings"}
    assert msg["message"] == "CCREP_SERVER_INFO" and msg["frames"] == [2] and msg["offset"] == 42
    host = [f for f in msg["fields"] if f["key"] == "netquake.control.host_name"][0]
    assert host == {"key": "netquake.control.host_name", "name": "Host Name", "offset": 21, "length": 20,
                    "value": "dissect test server", "display": '"dissect test server"', "children": []}
    analyses = [r for r in records if r["kind"] == "analysis"]
    assert {a["name"] for a in analyses} >= {"rule_walk", "player_walk"}
    assert set(analyses[0]) == {"kind", "protocol", "name", "frames", "result", "findings"}


def test_jsonl_equals_json():
    _, out_lines, _ = run_cli("-T", "jsonl", SESSION)
    _, out_array, _ = run_cli("-T", "json", SESSION)
    assert jsonl(out_lines) == json.loads(out_array)


def test_analysis_records_for_walks():
    _, out, _ = run_cli("-T", "jsonl", SESSION)
    records = jsonl(out)
    rule_walks = [r for r in records if r.get("name") == "rule_walk"]
    assert len(rule_walks) == 2
    walk = rule_walks[0]["result"]
    assert [r["rule"] for r in walk["rules"]] == ["fraglimit", "timelimit", "teamplay", "noexit",
                                                 "sv_friction", "sv_gravity", "sv_maxspeed"]
    assert walk["rules"][5]["value"] == "800" and walk["complete"] is True
    players = [r for r in records if r.get("name") == "player_walk"][0]["result"]
    assert [p["name"] for p in players["players"]] == ["Ranger", "Grunt", "Shambler"]
    assert players["players"][1]["frags"] == -1
    assert players["complete"] is True and players["expected"] == 3 and players["unanswered"] == []
    # every reply carries its response time
    replies = [r for r in records if r["kind"] == "frame" and r["messages"]
               and r["messages"][0]["message"].startswith("CCREP")]
    for reply in replies:
        keys = {f["key"]: f for f in reply["messages"][0]["fields"]}
        assert "netquake.response_time" in keys, reply["frame"]
        assert 0 <= keys["netquake.response_time"]["value"] < 1


def test_game_port_after_accept_is_recognized():
    _, out, _ = run_cli("-T", "jsonl", SESSION)
    records = jsonl(out)
    accept = [r for r in records if r.get("messages") and r["messages"][0]["message"] == "CCREP_ACCEPT"][0]
    port = [f for f in accept["messages"][0]["fields"] if f["key"] == "netquake.control.port"][0]["value"]
    game = [r for r in records if r.get("dport") == port]
    assert [g["messages"][0]["message"] for g in game] == ["unreliable", "data"]


def test_fail_on_levels():
    assert run_cli("--fail-on", "error", SESSION)[0] == 0
    assert run_cli("--fail-on", "note", SESSION)[0] == 1  # little-endian longs are noted
    assert run_cli("--fail-on", "error", DAMAGED)[0] == 1
    assert run_cli("--fail-on", "warning", DAMAGED)[0] == 1


def test_color_always_and_never():
    _, coloured, _ = run_cli("--color", "always", DAMAGED)
    assert "\x1b[1;31m" in coloured
    _, plain, _ = run_cli("--color", "never", DAMAGED)
    assert "\x1b[" not in plain


def test_display_filter():
    _, out, _ = run_cli("-Y", "netquake.control.command == 0x83 && netquake.control.current_players >= 3",
                        SESSION)
    lines = [ln for ln in out.splitlines() if not ln.strip().startswith("[")]
    assert len(lines) == 2 and all("CCREP_SERVER_INFO" in ln for ln in lines)
    _, out, _ = run_cli("-Y", 'expert.code == "netquake.bad_version"', DAMAGED)
    assert [ln.split()[0] for ln in out.splitlines()] == ["6"]
    _, out, _ = run_cli("-Y", "not netquake", DAMAGED)
    assert out == ""
    code, _, err = run_cli("-Y", "netquake.length ==", SESSION)
    assert code == 2 and "bad filter" in err
    code, _, err = run_cli("-Y", "__import__('os')", SESSION)
    assert code == 2 and "bad filter" in err


def test_decode_as_forces_a_port(tmp_path):
    import capkit
    import netquake_peer as nq
    path = tmp_path / "odd-port.pcap"
    bad = bytearray(nq.ccreq_server_info())
    bad[3] = 99  # wrong length: off the default port only decode-as claims it
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, capkit.ethernet(
        capkit.udp_packet("10.0.0.7", 40000, "10.0.0.1", 27500, bytes(bad))))])
    _, out, _ = run_cli(path)
    assert "UDP" in out and "NetQuake" not in out
    _, out, _ = run_cli("-d", "udp.port==27500,netquake", path)
    assert "NetQuake" in out and "CCREQ_SERVER_INFO" in out
    code, _, err = run_cli("-d", "udp.port==27500,quake9", path)
    assert code == 2 and "unknown protocol" in err
    code, _, err = run_cli("-d", "port 27500", path)
    assert code == 2 and "--decode-as" in err
    # a protocol forced on a transport it does not run over is refused, as tshark refuses it (it did nothing)
    code, _, err = run_cli("-d", "tcp.port==27500,netquake", path)
    assert (code, err) == (2, "dissect: bad --decode-as 'tcp.port==27500,netquake': NetQuake runs over UDP, not TCP\n")
    code, _, err = run_cli("-d", "udp.port==27500,Soldat", path)
    assert (code, err) == (2, "dissect: bad --decode-as 'udp.port==27500,Soldat': Soldat runs over TCP, not UDP\n")


def test_payload_mode():
    code, out, err = run_cli("--payload", "80 00 00 0c 02 51 55 41 4b 45 00 03", "--protocol", "netquake")
    assert code == 0
    assert "NetQuake CCREQ_SERVER_INFO [0:12]" in out
    assert '    Game Name: "QUAKE" [5:6]' in out
    code, out, _ = run_cli("--payload", "800000058500", "--protocol", "netquake", "-T", "jsonl")
    record = jsonl(out)[0]
    assert record["messages"][0]["message"] == "CCREP_RULE_INFO"
    assert {f["code"] for f in record["messages"][0]["findings"]} == {"netquake.length_mismatch",
                                                                      "netquake.truncated"}
    assert run_cli("--payload", "zz", "--protocol", "netquake")[0] == 2
    assert run_cli("--payload", "8000", "--protocol", "nope")[0] == 2
    assert run_cli("--payload", "800", "--protocol", "netquake") == (
        2, "", "dissect: --payload has an odd number of hex digits (3): each byte is two\n")


def test_listing_options_refuse_capture_files():
    """-G and -D list and exit: a capture file given beside them was ignored, exit 0."""
    assert run_cli("-G", "fields", SESSION) == (2, "", "dissect: -G lists and exits: leave out the capture files\n")
    assert run_cli("-D", "-r", SESSION) == (2, "", "dissect: -D lists and exits: leave out the capture files\n")


def test_payload_file_reads_standard_input_as_dash_and_refuses_more_than_a_mebibyte(tmp_path):
    """--payload-file - reads standard input, as -r - does (it looked for a file named "-"); a file past 1 MiB is
    refused (its first MiB was dissected, the rest dropped without a word)."""
    import netquake_peer as nq
    message = nq.ccreq_server_info()
    proc = subprocess.run([sys.executable, "-m", "dissect", "--payload-file", "-", "--protocol", "netquake", "-T",
                           "jsonl"], input=message, capture_output=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and proc.stderr == b""
    (record,) = jsonl(proc.stdout.decode())
    assert (record["messages"][0]["message"], record["caplen"]) == ("CCREQ_SERVER_INFO", len(message))
    big = tmp_path / "big.bin"
    big.write_bytes(bytes((1 << 20) + 1))
    assert run_cli("--payload-file", big, "--protocol", "netquake") == (
        2, "", f"dissect: {big}: more than 1048576 bytes: no message is that long\n")


@pytest.mark.parametrize("options, named", [(["-j", "2"], "-j"), (["-c", "1"], "-c"), (["-j", "2", "-c", "5"], "-j, -c"),
                                            (["--to-parquet", "OUT"], "--to-parquet"), (["--dask"], "--dask"),
                                            (["-i", "lo"], "-i"), (["-f", "udp"], "-f"), (["-a", "duration:1"], "-a"),
                                            (["-r", "CAPTURE"], "-r")])
def test_payload_refuses_the_options_of_captures(options, named, tmp_path):
    """--payload dissects one message: an option that only a capture run reads is an error, not silence."""
    options = [str(tmp_path / "out") if option == "OUT" else capture("netquake-session.pcap") if option == "CAPTURE"
               else option for option in options]
    code, out, err = run_cli("--payload", "8000000c025155414b450003", "--protocol", "netquake", *options)
    assert (code, out) == (2, "")
    assert err == f"dissect: --payload dissects one message: leave out {named} (they go with captures)\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [["-d", "udp.port==\u0663,odamex"], ["-c", "\u0663"], ["-c", "1_0"], ["-c", "+2"],
                                  ["-j", "\u0662"], ["--abuse-rate", "\u0663"], ["--abuse-window", "\u0663"],
                                  ["--abuse-window", " 3"]])
def test_numbers_in_options_are_ascii_digits(args):
    """int() and float() read other scripts' digits (U+0663 ARABIC-INDIC DIGIT THREE as 3), and int() a sign, spaces
    and underscores; an option's number is ASCII digits (a rate: an ASCII number)."""
    code, out, err = run_cli(*args, capture("odamex-session.pcap"))
    assert code == 2 and out == ""
    assert (f"bad --decode-as {args[1]!r}" if args[0] == "-d" else f"got {args[1]!r}") in err


@pytest.mark.parametrize("duration", ["\u0663", "nan", "inf", "-1", "0"])
def test_a_live_capture_duration_is_a_positive_finite_ascii_number(duration):
    """A NaN or infinite duration passed and the capture never stopped."""
    code, out, err = run_cli("-i", "lo", "-a", f"duration:{duration}")
    assert code == 2 and out == "" and f"expected duration:SECONDS, got 'duration:{duration}'" in err


def test_dask_reading_standard_input_says_why_it_cannot(tmp_path):
    """`--dask -`: the optional ADDRESS takes the "-", which means standard input as it does everywhere else."""
    pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    with open(capture("odamex-session.pcap"), "rb") as handle:
        data = handle.read()
    proc = subprocess.run([sys.executable, "-m", "dissect", "--to-parquet", str(tmp_path / "out"), "--dask", "-"],
                          input=data, capture_output=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and not (tmp_path / "out").exists()
    assert proc.stderr == b"dissect: --dask reads capture files on the workers: standard input (-) cannot be one\n"


def test_live_capture_refuses_the_table_outputs(tmp_path):
    for option in (["--to-parquet", str(tmp_path / "out")], ["--dask"]):
        code, out, err = run_cli("-i", "lo", *option)
        assert (code, out) == (2, "")
        assert err == ("dissect: --to-parquet and --dask go with capture files (capture with -w, then convert the "
                       "file)\n")
    assert not (tmp_path / "out").exists()


def test_ctrl_c_while_the_command_starts_ends_it_quietly():
    """Ctrl-C while the engine's modules load (the command's first tenth of a second) gives exit status 130 and no
    traceback, as it does later. The interrupt is made to arrive at the import of dissect.cli, where a real one
    lands most of the time, as the `dissect` script and `python -m dissect` run it."""
    interrupted = ("import sys\n"
                   "import dissect\n"  # first: with DISSECT_PURE_PYTHON set, its own finder goes before the others
                   "class Interrupt:\n"
                   "    @staticmethod\n"
                   "    def find_spec(name, path=None, target=None):\n"
                   "        if name == 'dissect.cli':\n"
                   "            raise KeyboardInterrupt\n"
                   "sys.meta_path.insert(0, Interrupt)\n")
    for start in ("from dissect.__main__ import run\nsys.exit(run())\n",  # pyproject.toml's entry point
                  "import runpy\nrunpy.run_module('dissect', run_name='__main__', alter_sys=True)\n"):
        proc = subprocess.run([sys.executable, "-c", interrupted + start, capture("odamex-session.pcap")],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "")


def test_the_command_entry_point_is_the_one_python_m_runs():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as handle:
        assert 'dissect = "dissect.__main__:run"' in handle.read()
    proc = subprocess.run([sys.executable, "-c", "import sys; from dissect.__main__ import run; sys.exit(run())",
                           capture("odamex-session.pcap")], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and proc.stdout == run_cli(capture("odamex-session.pcap"))[1]


def test_payload_file(tmp_path):
    import netquake_peer as nq
    path = tmp_path / "msg.bin"
    path.write_bytes(nq.ccrep_rule_info("sv_gravity", "800"))
    code, out, _ = run_cli("--payload-file", path, "--protocol", "netquake")
    assert code == 0 and '    Value: "800" [16:4]' in out


def test_stats():
    code, out, _ = run_cli("--stats", SESSION)
    assert code == 0
    assert re.search(r"NetQuake\s+\d+", out)
    assert "CCREQ_RULE_INFO" in out and "response time" in out
    assert 'servers seen: 2' in out and '"dissect test server"' in out
    code, out, _ = run_cli("--stats", "-T", "json", DAMAGED)
    stats = json.loads(out)[-1]
    assert stats["kind"] == "stats" and stats["frames"] == 11
    counts = {f["code"]: f["count"] for f in stats["findings"]}
    # frame 11's header length counts the bytes the snap length left out: only frame 10's is wrong
    assert counts["netquake.length_mismatch"] == 1 and counts["capture.truncated_frame"] == 1
    assert counts["capture.cut_message"] == 1


def test_usage_errors_exit_2():
    for args in ([], ["--bogus"], ["-T", "xml", SESSION], ["--protocol", "netquake", SESSION]):
        code, out, err = run_cli(*args)
        assert code == 2, args
        assert err.startswith("dissect: ") and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["--stats", "-V"], "--stats shows counts instead of frames: leave out -V"),
    (["--stats", "-x", "-V"], "--stats shows counts instead of frames: leave out -V, -x"),
    (["--stats", "-T", "fields", "-e", "frame.number"], "--stats shows counts instead of frames: leave out -T fields"),
    (["-q", "-V"], "-q shows no frames: leave out -V"),
    (["-q", "-T", "fields", "-e", "frame.number"], "-q shows no frames: leave out -T fields"),
    (["-q", "-T", "jsonl"], "-q shows no frames: -T jsonl writes only --stats' record then (add --stats, or leave "
                            "-q out)"),
    (["-F", "pcapng"], "-F pcapng is the format of -w OUT: give -w, or leave -F out"),
    (["--html-limit", "5"], "--html-limit goes with --html REPORT.html"),
])
def test_an_option_the_view_would_ignore_is_an_error(args, message):
    assert run_cli(*args, SESSION) == (2, "", f"dissect: {message}\n")


def test_quiet_views_that_print_something_are_accepted():
    code, out, _ = run_cli("-q", "--stats", "-T", "json", SESSION)
    assert code == 0 and json.loads(out)[-1]["kind"] == "stats"
    assert run_cli("-q", SESSION) == (0, "", "")


def test_control_characters_are_escaped(tmp_path):
    import capkit
    import netquake_peer as nq
    path = tmp_path / "evil.pcap"
    evil = nq.ccrep_server_info("1.2.3.4:26000", "\x1b[2J\x1b]0;pwned\x07", "e1m1", 1, 8)
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, capkit.ethernet(
        capkit.udp_packet("10.0.0.1", 26000, "10.0.0.7", 40000, evil)))])
    for flags in ([], ["-V"], ["-x"], ["--stats"]):
        _, out, _ = run_cli(*flags, path)
        assert "\x1b" not in out and "\x07" not in out
        assert "\\x1b[2J" in out or flags == ["-x"]


# A bidi override, an isolate, a zero-width space, a line separator, a BOM, DEL
HIDDEN = "\u202eevil\u202c \u2066x\u2069 \u200b\u2028\ufeff\x7f"


@pytest.mark.parametrize("view", [["-T", "jsonl"], ["-T", "json"], ["-j", "2", "-T", "jsonl"],
                                  ["--stats", "-T", "json"]], ids=" ".join)
def test_json_writes_the_characters_a_terminal_acts_on_escaped(tmp_path, view):
    """A name with bidi overrides, C1 controls and invisible characters reaches no terminal raw through JSON:
    they are \\u escapes, and a JSON reader gets the very same name."""
    import capkit
    import netquake_peer as nq
    import teeframe_peer as tf
    path = tmp_path / "hidden.pcap"
    c1_name = "\x9b31mred\x85"  # latin-1 bytes 9B and 85: CSI and NEL once decoded
    ascii_name = "an ascii name\x7f with DEL"  # no byte above 0x7f: the writers' ASCII paths
    frames = [capkit.ethernet(capkit.udp_packet("10.0.0.1", 26000, "10.0.0.7", 40000,
                                                nq.ccrep_server_info("1.2.3.4:26000", c1_name, "e1m1", 1, 8))),
              capkit.ethernet(capkit.udp_packet("10.0.0.3", 26000, "10.0.0.7", 40002,
                                                nq.ccrep_server_info("1.2.3.5:26000", ascii_name, "e1m1", 1, 8))),
              capkit.ethernet(capkit.udp_packet("10.0.0.2", 8303, "10.0.0.7", 40001,
                                                tf.iext(7, [(HIDDEN, "clan", 276, 5, 1)])))]
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + n, frame) for n, frame in enumerate(frames)])
    code, out, err = run_cli(*view, path)
    assert code == 0, err
    for char in "\u202e\u202c\u2066\u2069\u200b\u2028\ufeff\x9b\x85\x7f":
        assert char not in out, hex(ord(char))
    assert "\\u009b31mred\\u0085" in out  # --stats' server record names the NetQuake host
    assert "an ascii name\\u007f with DEL" in out
    if "--stats" in view:
        return
    assert "\\u202eevil\\u202c" in out
    records = jsonl(out) if "jsonl" in view else json.loads(out)
    def walk(fields):
        for field in fields:
            yield field
            yield from walk(field["children"])
    names = [field["value"] for record in records if record["kind"] == "frame" for msg in record["messages"]
             for field in walk(msg["fields"]) if field["key"] in ("netquake.control.host_name", "teeframe.client.name")]
    assert names == [c1_name, ascii_name, HIDDEN]


def test_arrival_time_formats():
    from dissect.render.text import utc_text
    assert utc_text(1700000000.123456) == "2023-11-14 22:13:20.123456 UTC"
    assert utc_text(1700000000.5) == "2023-11-14 22:13:20.500000 UTC"  # the same second again: from the cache
    assert utc_text(-5.25) == "1969-12-31 23:59:54.750000 UTC"  # before 1970: the fraction stays positive
    assert utc_text(float("nan")) == utc_text(1e30) == "invalid time"


def test_decode_as_names_a_protocol_by_title_in_any_case_and_shows_no_python_repr(tmp_path):
    from capkit import ethernet, udp_packet, write_pcap
    path = tmp_path / "other.pcap"
    write_pcap(path, [(1700000000.0, ethernet(udp_packet("10.0.0.2", 40000, "10.0.0.1", 8303, b"\x01\x02hello")))])
    code, out, err = run_cli("-d", "udp.port==8303,TeeFrame", path)
    assert (code, err) == (0, "")
    assert "TeeFrame" in out and "b'" not in out and 'b"' not in out


def test_tree_shows_names_and_no_range_for_generated_fields():
    _, out, _ = run_cli("-V", "-c", "2", capture("netquake-session.pcap"))
    assert "    Game Name: \"QUAKE\" [5:6]" in out and "game_name" not in out
    request_in = [line for line in out.splitlines() if "[Request in frame: 1]" in line]
    assert request_in == ["    [Request in frame: 1]"]


def test_hex_ascii_column_lines_up_on_a_short_last_row():
    _, out, _ = run_cli("-x", "-c", "1", capture("netquake-session.pcap"))
    rows = [line for line in out.splitlines() if line[:4].isalnum() and line[4:6] == "  "]
    full, last = rows[0], rows[-1]
    assert full.index("..") == 56 and len(last) > 56 and last[55] == " " and last[56] != " "


def test_hex_offsets_of_a_frame_past_64_kib_are_five_digits_and_the_labels_stay_under_their_bytes(tmp_path):
    """tshark writes every row of a frame longer than 64 KiB with a 5-digit offset; the label rows are indented
    to match, so each label stays under its byte."""
    payload = bytes(range(256)) * 255 + b"x" * 227  # the largest UDP payload in IPv4
    frame = capkit.ethernet(capkit.udp_packet("10.0.0.1", 40000, "10.0.0.2", 41000, payload))
    assert len(frame) == 65549
    path = tmp_path / "big.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, frame)])
    _, out, _ = run_cli("-x", path)
    lines = out.splitlines()
    rows = [line for line in lines if line[:5].isalnum() and line[5:7] == "  "]
    assert len(rows) == (len(frame) + 15) // 16 and rows[0].startswith("00000  02 00 00 00 00 02 ")
    assert [row[:5] for row in rows[4094:]] == ["0ffe0", "0fff0", "10000"]
    assert lines[2] == "       a  -- -- -- -- -- -- --  -- -- -- -- -- -- b  --"
    assert lines[1][7:9] == "02" and lines[2][7] == "a"


def _recording(base):
    """An in-memory stream of class ``base`` (StringIO, BytesIO) that keeps the size of each write."""

    class Recording(base):
        def __init__(self):
            super().__init__()
            self.sizes = []

        def write(self, data):
            self.sizes.append(len(data))
            return super().write(data)

    return Recording()


def test_output_batches_hold_a_bounded_number_of_characters():
    """Large records (-V, JSON) go out before BATCH writes pile up: the batch is bounded in size too."""
    import io

    from dissect.render.output import BATCH, BATCH_BYTES, BatchedOutput

    stream = _recording(io.StringIO)
    out = BatchedOutput(stream)
    record = "x" * (BATCH_BYTES // 4 + 1)
    for _ in range(4):
        out.write(record)
    assert stream.sizes == [4 * len(record)]  # the fourth record passed the bound: one write of all four
    for _ in range(BATCH - 1):
        out.write("y")
    assert stream.sizes == [4 * len(record)]  # small writes wait for BATCH of them
    out.write("y")
    assert stream.sizes == [4 * len(record), BATCH]
    assert stream.getvalue() == record * 4 + "y" * BATCH


def test_output_keeps_the_order_of_text_and_utf8_in_few_writes():
    """Text before UTF-8 goes out first; text after UTF-8 joins its batch as UTF-8 (-V with -x writes both for
    every frame: a flush at each change of kind would be a write each)."""
    import io

    from dissect.render.output import BatchedOutput

    raw = _recording(io.BytesIO)
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    out = BatchedOutput(stream)
    out.write("first\n")
    for _ in range(100):
        out.add_utf8("frame → 忍\n".encode())
        out.write("hex dump\n")
    assert raw.sizes == [len(b"first\n")]  # the text, written when the UTF-8 began; nothing since
    out.flush()
    assert raw.sizes == [len(b"first\n"), 100 * len("frame → 忍\nhex dump\n".encode())]
    assert raw.getvalue().decode() == "first\n" + "frame → 忍\nhex dump\n" * 100


def _pipe_output():
    """A BatchedOutput over a text stream whose binary buffer is the write end of a real pipe; and its read end."""
    import io
    import os

    from dissect.render.output import BatchedOutput

    read_fd, write_fd = os.pipe()
    stream = io.TextIOWrapper(os.fdopen(write_fd, "wb"), encoding="utf-8")
    return BatchedOutput(stream), stream, os.fdopen(read_fd, "rb")


def test_output_writes_a_batch_of_utf8_to_its_descriptor_after_what_the_stream_holds():
    """A batch of UTF-8 goes to the pipe in one writev (not joined first), after text the stream itself still
    holds, and before what is written after it."""
    out, stream, reader = _pipe_output()
    assert out.fd == stream.fileno()
    stream.write("held by the stream\n")  # not through the BatchedOutput: still in the stream's buffer
    for index in range(300):
        out.add_utf8(f"record {index} → 忍\n".encode())
    out.write("text after\n")
    out.flush()
    stream.close()
    expected = "held by the stream\n" + "".join(f"record {index} → 忍\n" for index in range(300)) + "text after\n"
    assert reader.read().decode() == expected


def test_output_goes_on_after_a_writev_that_wrote_part_of_a_batch(monkeypatch):
    """A terminal or a socket may take part of a batch: the rest follows, from the middle of the part cut."""
    import os

    from dissect.render import output

    calls = []

    def seven_bytes_at_most(fd, parts):  # the real call on the real pipe, given fewer bytes than asked
        taken, left = [], 7
        for part in parts:
            taken.append(bytes(part[:left]))
            left -= len(taken[-1])
            if not left:
                break
        calls.append(sum(map(len, taken)))
        return os.writev(fd, taken)

    monkeypatch.setattr(output, "_writev", seven_bytes_at_most)
    out, stream, reader = _pipe_output()
    parts = [b"alpha,", b"", b"beta-gamma,", "δέλτα\n".encode(), b"!"]  # 29 bytes
    for part in parts:
        out.add_utf8(part)
    out.flush()
    stream.close()
    assert reader.read() == b"".join(parts)
    assert calls == [7, 7, 7, 7, 1]


# Modules the views do not need, which a start-up would import for nothing: socket.py (selectors, its enums;
# dissect takes inet_ntop from its C module), json (orjson writes), difflib (error messages), ipaddress (filters
# that compare addresses), bz2 and lzma (compressed captures), string, importlib.metadata (plugins), and orjson
# outside the JSON views.
NOT_AT_START = ("socket", "selectors", "json", "difflib", "ipaddress", "bz2", "lzma", "string", "importlib.metadata")


@pytest.mark.parametrize("view", [[], ["-V", "-x"], ["-T", "jsonl"], ["--stats"]], ids=" ".join)
def test_a_run_imports_only_what_its_view_needs(view):
    """Without site's start (-S: the .pth files of site-packages import some of these themselves), with its
    folders on the path: what dissect's own run imports."""
    script = ("import site, sys\n"
              "unneeded = ('orjson', *sys.argv[1:])\n"
              f"sys.path[:0] = [{ROOT!r}, *site.getsitepackages()]\n"
              f"sys.argv = ['dissect', *{view!r}, {capture('odamex-session.pcap')!r}]\n"
              "from dissect.cli import main\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print(sorted(name for name in sys.modules if name in unneeded), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-S", "-c", script, *NOT_AT_START], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.stdout
    expected = ["json", "orjson"] if view == ["-T", "jsonl"] else []  # orjson imports json itself
    assert proc.stderr == f"{expected}\n"


@pytest.mark.parametrize("columns", ["50", "100", "200", "", "0", "wide"])
def test_help_is_as_wide_as_argparse_makes_it(columns, monkeypatch):
    """dissect tells argparse the terminal's width itself (argparse would import shutil to find it): the help
    is the text argparse's own formatter writes, $COLUMNS given, empty or not a number (80 off a terminal)."""
    import argparse

    from dissect.cli import build_parser
    monkeypatch.setenv("COLUMNS", columns)
    parser = build_parser()
    parser.formatter_class = argparse.HelpFormatter
    code, out, err = run_cli("--help", env=dict(os.environ, COLUMNS=columns))
    assert code == 0 and err == ""
    assert out == parser.format_help()


def _run_without(fd, *args, limit_files=None):
    """``dissect args`` started with descriptor ``fd`` closed (0: standard input, 1: standard output), or with at
    most ``limit_files`` descriptors open; return (exit code, stderr)."""
    def before_exec():
        if fd is not None:
            os.close(fd)
        if limit_files is not None:
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit_files, limit_files))
    proc = subprocess.run([sys.executable, "-m", "dissect", *map(str, args)], stdin=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, cwd=ROOT, preexec_fn=before_exec, timeout=120)
    return proc.returncode, proc.stderr.decode()


def test_a_closed_standard_output_is_an_error_for_what_writes_there_and_none_for_what_does_not(tmp_path):
    assert _run_without(1, SESSION) == (2, "dissect: standard output: cannot write: it was closed when dissect "
                                           "started\n")
    copy = tmp_path / "copy.pcap"
    assert _run_without(1, "-q", "-w", copy, SESSION) == (0, "")
    assert open(copy, "rb").read() == open(SESSION, "rb").read()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_closed_standard_error_leaves_the_exit_status_and_standard_output_as_they_are(jobs):
    args = ["-j", jobs, "-T", "jsonl", "/nonexistent.pcap", SESSION]
    proc = subprocess.run([sys.executable, "-m", "dissect", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          cwd=ROOT, preexec_fn=lambda: os.close(2), timeout=120)
    code, out, err = run_cli(*args)
    assert (code, err) == (2, "dissect: /nonexistent.pcap: cannot open: No such file or directory\n")
    assert proc.returncode == 2 and proc.stdout.decode() == out and len(jsonl(out)) == 58  # the other file's records


def test_a_closed_standard_input_is_an_error():
    assert _run_without(0, "-") == (2, "dissect: standard input: cannot read: it was closed when dissect started\n")


def test_jobs_past_the_limit_or_past_the_systems_are_one_line_errors():
    from dissect.cli import MAX_JOBS
    for jobs in ("99999999999999999999", str(MAX_JOBS + 1)):
        code, out, err = run_cli("-j", jobs, SESSION)
        assert (code, out) == (2, "")
        assert err == (f"dissect: argument -j/--jobs: expected a number of processes from 0 (one per core) to "
                       f"{MAX_JOBS}, got '{jobs}'\n")
    # the parent keeps one descriptor for each worker, its end of the worker's pipe: 40 workers cannot start with 32
    assert _run_without(None, "-j", 40, SESSION, limit_files=32) == (
        2, "dissect: -j 40: cannot start the worker processes: Too many open files\n")


def test_file_and_interface_names_reach_standard_error_escaped(tmp_path):
    hostile = "\x1b]0;pwned\x07\x1b[31mx\u202e"
    missing = tmp_path / f"{hostile}.pcap"
    escaped = "\\x1b]0;pwned\\x07\\x1b[31mx\\u202e"
    code, _, err = run_cli(missing)
    assert code == 2 and err == f"dissect: {tmp_path}/{escaped}.pcap: cannot open: No such file or directory\n"
    code, _, err = run_cli("-w", tmp_path / hostile / "out.pcap", SESSION)
    assert code == 2 and err == f"dissect: {tmp_path}/{escaped}/out.pcap: cannot write: No such file or directory\n"
    code, _, err = run_cli("-i", hostile)
    assert code == 2 and err.startswith(f"dissect: no such interface: {escaped} (interfaces: ")
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
