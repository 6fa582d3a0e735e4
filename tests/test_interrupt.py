"""Ctrl-C while reading a capture concludes as the end of the capture does: statistics are printed,
the JSON array is closed, pending analysis is reported; the exit code is 130."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import capkit
import dpkt
import netquake_peer as nq
import pytest

import dissect

from capkit import ethernet, udp_packet
from conftest import ROOT


def _fifo_with_frames(tmp_path, payloads):
    """A FIFO that delivers a pcap header and these frames, then stays open (the reader waits)."""
    path = tmp_path / "live.fifo"
    os.mkfifo(path)
    done = threading.Event()

    def feed():
        with open(path, "wb") as fifo:
            writer = dpkt.pcap.Writer(fifo, linktype=1)
            for number, payload in enumerate(payloads):
                writer.writepkt(ethernet(udp_packet("10.0.0.2", 40000, "10.0.0.1", 26000, payload)),
                                ts=1700000000 + number)
            fifo.flush()
            done.wait(30)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return path, done


def _interrupted(tmp_path, *args):
    path, done = _fifo_with_frames(tmp_path, [nq.ccreq_server_info(), nq.ccreq_rule_info("")])
    proc = subprocess.Popen([sys.executable, "-m", "dissect", *args, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # both frames read; the reader now waits on the FIFO
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    done.set()
    return proc.returncode, out, err


def test_ctrl_c_under_stats_prints_the_statistics(tmp_path):
    code, out, err = _interrupted(tmp_path, "--stats")
    assert (code, err) == (130, "")
    assert out.startswith("Frames: 2, bytes: ")
    assert "NetQuake transactions: 2 requests, 0 answered" in out


def test_ctrl_c_under_json_closes_the_array_with_pending_analysis(tmp_path):
    code, out, err = _interrupted(tmp_path, "-T", "json")
    assert (code, err) == (130, "")
    records = json.loads(out)
    assert [r.get("frame") for r in records if r["kind"] == "frame"] == [1, 2]
    walk = [r for r in records if r["kind"] == "analysis"][0]
    assert (walk["name"], walk["frames"], walk["result"]["complete"]) == ("rule_walk", [2], False)


def test_ctrl_c_still_names_a_time_that_w_could_not_write(tmp_path):
    """-w's error about a time outside what pcap holds is told after Ctrl-C as at the end (exit 130)."""
    source = tmp_path / "before-1970.pcapng"
    frame = ethernet(udp_packet("10.0.0.2", 40000, "10.0.0.1", 26000, nq.ccreq_server_info()))
    capkit.write_pcapng_units(source, [(0, 1, frame)], [1], tsresol=0, tsoffset=-2)
    path = tmp_path / "slow.fifo"
    os.mkfifo(path)
    done = threading.Event()

    def feed():
        with open(path, "wb") as fifo:
            fifo.write(source.read_bytes())
            fifo.flush()
            done.wait(30)

    threading.Thread(target=feed, daemon=True).start()
    out = tmp_path / "out.pcap"
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-q", "-w", str(out), str(path)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # the frame read; the reader waits on the FIFO
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    done.set()
    assert (proc.returncode, err) == (130, f"dissect: {out}: frame 1's time -1.0 is outside what pcap timestamps "
                                           f"hold as dissect writes them (0 to 4294967295.999999 s since 1970): "
                                           f"written as 0.000000\n")


def _build_env(build):
    """The environment that runs dissect in ``build`` ("compiled" or "pure Python"); the test is skipped where there
    is no compiled build."""
    if build == "compiled" and not dissect.compiled():
        pytest.skip("no compiled build here")
    env = {name: value for name, value in os.environ.items() if name != "DISSECT_PURE_PYTHON"}
    if build == "pure Python":
        env["DISSECT_PURE_PYTHON"] = "1"
    return env


def _many_requests(path, count):
    """A capture of ``count`` NetQuake requests from three clients, server info and rule walks, none answered."""
    frames = [ethernet(udp_packet(f"10.0.{n % 3}.2", 40000, "10.0.0.1", 26000,
                                  nq.ccreq_rule_info("") if n % 2 else nq.ccreq_server_info()))
              for n in range(count)]
    capkit.write_pcap(path, [(1700000000 + n / 1000, frame) for n, frame in enumerate(frames)])
    return path


def _held_up(tmp_path, build, jobs, count=5000):
    """``dissect -j jobs -T json`` on ``count`` frames in ``build``, its output a pipe this test does not read: the
    run is held up inside a write, once the pipe is full. Returns the process and the output's first line."""
    env = _build_env(build)
    source = _many_requests(tmp_path / "many.pcap", count)
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "-j", jobs, "-T", "json", str(source)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = b""
    while len(first) < 2:  # the output has begun: "[\n" (read from the descriptor, as communicate() goes on)
        first += os.read(proc.stdout.fileno(), 2 - len(first))
    time.sleep(1.0)        # and filled the pipe
    return proc, first


@pytest.mark.parametrize("build", ["compiled", "pure Python"])
@pytest.mark.parametrize("jobs", ["1", "3"])
def test_ctrl_c_while_the_output_waits_writes_each_record_once(tmp_path, build, jobs):
    """dissect is stopped inside a write when Ctrl-C comes. What it wrote stays written once, the JSON array is closed
    after whole records, frames in order from the first (a KeyboardInterrupt between a batch's write and its
    bookkeeping wrote the batch again, from the middle of a line)."""
    proc, first = _held_up(tmp_path, build, jobs)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, b"")
    records = json.loads(first + out)
    numbers = [record["frame"] for record in records if record["kind"] == "frame"]
    assert len(numbers) > 100 and numbers == list(range(1, len(numbers) + 1))


@pytest.mark.parametrize("build", ["compiled", "pure Python"])
@pytest.mark.parametrize("jobs", ["2", "3"])
def test_ctrl_c_under_jobs_concludes_as_one_process_after_the_last_chunk(tmp_path, build, jobs):
    """Under -j, every process stops after the same chunk, the furthest a worker had reached: the output is, record
    for record, one process's run on the frames up to it (``-c``), the rule walks left open concluded as the end of
    the capture concludes them. (Before, the output ended where the merge stood, with nothing concluded.)"""
    proc, first = _held_up(tmp_path, build, jobs, count=20000)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (130, b"")
    records = json.loads(first + out)
    last = max(record["frame"] for record in records if record["kind"] == "frame")
    assert 0 < last < 20000
    one = subprocess.run([sys.executable, "-m", "dissect", "-c", str(last), "-T", "json", str(tmp_path / "many.pcap")],
                         cwd=ROOT, capture_output=True, env=_build_env(build), timeout=120)
    assert (one.returncode, one.stderr) == (0, b"")
    assert records == json.loads(one.stdout)
    walks = [record for record in records if record["kind"] == "analysis" and record["name"] == "rule_walk"]
    assert walks and all(not walk["result"]["complete"] for walk in walks)


@pytest.mark.parametrize("build", ["compiled", "pure Python"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_reader_that_never_reads_cannot_hold_dissect_past_ctrl_c(tmp_path, build, jobs):
    """The first Ctrl-C waits for the write under way; each one after it interrupts the write that holds the run up
    (the batch, the end of the output, the stream's last flush): the run ends with 130, quietly, though nothing ever
    reads its output. (bedd7f0's compiled build took four too, its pure-Python build two.) Under -j the first is
    held for the stop after the last chunk, which the merge never reaches: the same count ends it."""
    proc, _ = _held_up(tmp_path, build, jobs)
    presses = 0
    while proc.poll() is None and presses < 8:
        proc.send_signal(signal.SIGINT)
        presses += 1
        time.sleep(0.5)
    assert (proc.wait(timeout=30), proc.stderr.read()) == (130, b"")
    assert presses <= 4


# A protocol whose dissector gets a Ctrl-C halfway through a frame: the example plugin's Quake3, registered in the
# process, its decoding of a reply sending SIGINT to its own process and going on (Python code: the handler runs
# before the decoding ends, in both builds).
_INTERRUPTING = """
import os, signal, sys
sys.path.insert(0, {example!r})
from dissect_quake3 import Quake3
from dissect.registry import register

class Interrupting(Quake3):
    def decode(self, cur, msg, packet):
        if cur.data[4:18] == b"statusResponse":
            os.kill(os.getpid(), signal.SIGINT)
            sum(range(1000))  # the interpreter takes the signal within these steps
        return super().decode(cur, msg, packet)

register(Interrupting)
from dissect.__main__ import run
sys.exit(run())
"""


def _run_interrupting(build, *args):
    """``dissect ARGS`` in ``build`` with _INTERRUPTING's dissector registered: the completed process (text)."""
    env = _build_env(build)
    script = _INTERRUPTING.format(example=os.path.join(ROOT, "examples", "dissect-quake3"))
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.mark.parametrize("build", ["compiled", "pure Python"])
def test_ctrl_c_during_a_frame_is_taken_once_the_frame_is_done(tmp_path, build):
    """The frame Ctrl-C came in is written whole, its reply matched by the analysis, and no frame after it is read
    (a KeyboardInterrupt raised inside the dissector lost the frame: written were frame 1 and, at the end, its
    request as never answered)."""
    server, client = ("10.0.0.1", 27960), ("10.0.0.2", 50000)
    getstatus = b"\xff\xff\xff\xffgetstatus 1234"
    status = b"\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\Arena\\mapname\\q3dm17\\sv_maxclients\\16\n"
    source = tmp_path / "q3.pcap"
    capkit.write_pcap(source, [(1700000000.0, ethernet(udp_packet(*client, *server, getstatus))),
                               (1700000000.020, ethernet(udp_packet(*server, *client, status))),
                               (1700000000.040, ethernet(udp_packet(*client, *server, getstatus)))])
    proc = _run_interrupting(build, "-T", "json", source)
    assert (proc.returncode, proc.stderr) == (130, "")
    records = json.loads(proc.stdout)
    frames = [record for record in records if record["kind"] == "frame"]
    assert [frame["frame"] for frame in frames] == [1, 2]
    assert frames[1]["info"] == 'statusResponse "Arena" map=q3dm17 players 0/16'
    info = [field for field in frames[1]["messages"][0]["fields"] if field["key"] == "quake3.info"][0]
    last = info["children"][-1]  # the line's last value, bytes 67-68: "\\sv_maxclients\\16" decoded to its end
    assert (last["key"], last["offset"], last["length"], last["value"]) == ("quake3.info.value", 67, 2, "16")
    status_records = [record for record in records if record["kind"] == "analysis"]
    assert [(record["name"], record["frames"]) for record in status_records] == [("status", [1, 2])]
    assert status_records[0]["result"]["response_time"] == pytest.approx(0.020)


@pytest.mark.parametrize("build", ["compiled", "pure Python"])
def test_ctrl_c_during_a_frame_whose_write_then_fails_still_ends_the_run_as_ctrl_c(tmp_path, build):
    """The frame that gets the Ctrl-C is too large for -w's buffer, and -w writes to a full disk (/dev/full): the write
    error is told and the run still ends as interrupted, 130 (the held Ctrl-C was dropped with the error: exit 2)."""
    server, client = ("10.0.0.1", 27960), ("10.0.0.2", 50000)
    status = b"\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\" + b"A" * 60000 + b"\\mapname\\q3dm17\n"
    source = tmp_path / "q3.pcap"
    capkit.write_pcap(source, [(1700000000.0, ethernet(udp_packet(*client, *server, b"\xff\xff\xff\xffgetstatus"))),
                               (1700000000.020, ethernet(udp_packet(*server, *client, status)))])
    proc = _run_interrupting(build, "-q", "-w", "/dev/full", source)
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "dissect: /dev/full: cannot write: No space left "
                                                                     "on device\n")


def test_ctrl_c_under_parquet_writes_the_file_read_so_far_and_prints_the_statistics(tmp_path):
    """--to-parquet in this process: the file the Ctrl-C came in is concluded and its rows written, as at its end;
    the next file is not read; --stats prints what was read; the exit is 130."""
    pq = pytest.importorskip("pyarrow.parquet")
    path, done = _fifo_with_frames(tmp_path, [nq.ccreq_server_info(), nq.ccreq_rule_info("")])
    out_dir = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "dissect", "--to-parquet", str(out_dir), "--stats", str(path),
                             os.path.join(ROOT, "captures", "teeframe-session.pcap")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # both frames read (pyarrow loaded first); the reader now waits on the FIFO
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    done.set()
    assert (proc.returncode, err) == (130, "")
    assert out.startswith("Frames: 2, bytes: ")
    assert "NetQuake transactions: 2 requests, 0 answered" in out and "TeeFrame" not in out
    frames = pq.read_table(out_dir / "frames")
    assert frames.column("frame").to_pylist() == [1, 2]
    walk = pq.read_table(out_dir / "analysis").to_pylist()
    assert [(row["name"], row["frames"]) for row in walk] == [("rule_walk", [2])]
