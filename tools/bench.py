"""Benchmark dissect against tshark, side by side on the same capture.

Writes a capture of mixed traffic (every protocol dissect knows, plus unrelated
UDP and TCP), then runs each view of dissect and its tshark peer on it, and
prints frames per second, the ratio, and each process's peak resident memory.

    python tools/bench.py [--frames 400000] [--keep FILE] [--runs 1] [--big-gb 1]
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import capkit  # noqa: E402
import netquake_peer as nq  # noqa: E402


def sample_frames():
    """One conversation of each kind known to dissect, as (payload builder, direction) pairs."""
    client, server = ("10.0.0.7", 40000), ("10.0.0.1", 26000)
    up = [nq.ccreq_server_info(), nq.ccreq_player_info(0), nq.ccreq_rule_info(""), nq.ccreq_rule_info("fraglimit"),
          nq.ccreq_connect()]
    down = [nq.ccrep_server_info("10.0.0.1:26000", "bench server", "e1m1", 3, 8),
            nq.ccrep_player_info(0, "Ranger", 77, 12, 754, "192.0.2.11:26000"),
            nq.ccrep_rule_info("fraglimit", "20"), nq.ccrep_rule_info(), nq.ccrep_accept(26100)]
    frames = []
    for request, reply in zip(up, down):
        frames.append(capkit.ethernet(capkit.udp_packet(*client, *server, request)))
        frames.append(capkit.ethernet(capkit.udp_packet(*server, *client, reply)))
    frames += extra_protocol_frames()
    noise = [capkit.ethernet(capkit.udp_packet("10.9.0.1", 5353, "224.0.0.251", 5353, b"\x00" * 40)),
             capkit.ethernet(capkit.tcp_packet("10.9.0.2", 443, "10.9.0.3", 51000, b"\x17\x03\x03" + b"x" * 60))]
    return frames, noise


def extra_protocol_frames():
    """TeeFrame and Odamex exchanges."""
    import odamex_peer as od
    import teeframe_peer as tf
    browser, tee = ("10.0.0.8", 50000), ("10.0.0.2", 8303)
    launcher, oda = ("10.0.0.9", 40001), ("10.0.0.3", 10666)
    pairs = [(browser, tee, tf.gie3(0x1234, 0x2A)), (tee, browser, tf.sample_iext(0x12342A, clients=8)),
             (launcher, oda, od.request()),
             (oda, launcher, od.server_info(players=od.PLAYERS, teamplay=True, team_scores={"blue": 1}))]
    return [capkit.ethernet(capkit.udp_packet(*src, *dst, payload)) for src, dst, payload in pairs]


def soldat_lines():
    import soldat_peer as sp
    reply = sp.lobby_reply()
    return [sp.request()] + [reply[i:i + 60] for i in range(0, len(reply), 60)]


def write_capture(path, count, seed=1):
    """Every tenth frame is noise; one in ten of the rest is a segment of a Soldat lobby stream."""
    import dpkt
    rng = random.Random(seed)
    known, noise = sample_frames()
    soldat = soldat_lines()
    client, lobby = ("10.0.0.10", 41000), ("10.0.0.5", 13073)
    seqs = {0: 1, 1: 1}
    ts = capkit.DEFAULT_TS
    with open(path, "wb") as handle:
        writer = dpkt.pcap.Writer(handle, snaplen=65535, linktype=1)
        for i in range(count):
            ts += 0.0001
            if i % 10 == 9:
                frame = noise[rng.randrange(len(noise))]
            elif i % 10 == 4:
                index = (i // 10) % len(soldat)
                side = 0 if index == 0 else 1
                src, dst = (client, lobby) if side == 0 else (lobby, client)
                frame = capkit.ethernet(capkit.tcp_packet(*src, *dst, soldat[index], seq=seqs[side]))
                seqs[side] += len(soldat[index])
            else:
                frame = known[rng.randrange(len(known))]
            writer.writepkt(frame, ts=ts)


def run(cmd):
    """Run a command with stdout to /dev/null; return (seconds, peak RSS in MB)."""
    with open(os.devnull, "wb") as devnull:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.strip()[:300]}")
    return elapsed, usage.ru_maxrss / 1024


TARGETS = {"summary": 1.5, "tree -V": 1.5, "json": 3.0, "stats": 3.0}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=400000)
    parser.add_argument("--keep", help="write the capture here and keep it")
    parser.add_argument("--capture", help="use this capture instead of writing one")
    parser.add_argument("--runs", type=int, default=1, help="best of N runs")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="also run each view with -j JOBS (default: one per core; 1: skip)")
    parser.add_argument("--big-gb", type=float, default=0.0,
                        help="also write a capture of this many GB and measure dissect's peak memory on it")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="dissect-bench-")
    path = args.capture or args.keep or os.path.join(workdir, "bench.pcap")
    try:
        if not args.capture:
            write_capture(path, args.frames)
        frames = args.frames if not args.capture else count_frames(path)
        size = os.path.getsize(path) / 1e6
        print(f"Capture: {frames:,} frames, {size:.1f} MB, all four protocols plus unrelated UDP/TCP. "
              f"Machine: {os.cpu_count()} cores, {machine()}. {build()}. {tshark_version()}.\n")
        speed_table(path, frames, args.runs, args.jobs)
        if args.big_gb:
            big = os.path.join(workdir, "big.pcap")
            write_capture(big, int(frames * args.big_gb * 1e3 / size))
            memory_rows(path, big, args.jobs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def speed_table(path, frames, runs, jobs):
    """Each view once in one process and once with ``-j jobs``, beside its tshark peer (run once per view)."""
    dissect = [sys.executable, "-m", "dissect"]
    tshark = shutil.which("tshark")
    cases = [("summary", [path], ["-r", path]),
             ("tree -V", ["-V", path], ["-r", path, "-V"]),
             ("json", ["-T", "jsonl", path], ["-r", path, "-T", "json"]),
             ("stats", ["--stats", path], ["-r", path, "-q", "-z", "io,phs"])]
    print("| view | processes | dissect frames/s | tshark frames/s | ratio (target) | peak RSS dissect / tshark |")
    print("|---|---|---|---|---|---|")
    for name, ours, theirs in cases:
        their_time, their_mem = best([tshark] + theirs, runs) if tshark else (None, None)
        for label, options in [("1", [])] + ([(f"-j {jobs}", ["-j", str(jobs)])] if jobs > 1 else []):
            ours_time, ours_mem = best(dissect + options + ours, runs)
            if their_time is None:
                print(f"| {name} | {label} | {frames / ours_time:,.0f} | (tshark not installed) | | "
                      f"{ours_mem:.0f} MB / |", flush=True)
                continue
            print(f"| {name} | {label} | {frames / ours_time:,.0f} | {frames / their_time:,.0f} | "
                  f"{their_time / ours_time:.2f}x ({TARGETS[name]}x) | {ours_mem:.0f} MB / {their_mem:.0f} MB |",
                  flush=True)


def memory_rows(small, big, jobs):
    """Peak memory on both captures: RSS of the one process, and for -j the sum over its processes."""
    dissect = [sys.executable, "-m", "dissect"]
    head = "| capture | summary peak RSS | --stats peak RSS |"
    if jobs > 1:
        head += f" -j {jobs} summary, all processes | -j {jobs} --stats, all processes |"
    print("\n" + head)
    print("|---" * (head.count("|") - 1) + "|")
    for path in (small, big):
        row = [f"{os.path.getsize(path) / 1e6:,.0f} MB"]
        row += [f"{run(dissect + view + [path])[1]:.0f} MB" for view in ([], ["--stats"])]
        if jobs > 1:
            row += [f"{tree_peak_pss(dissect + ['-j', str(jobs)] + view + [path]):.0f} MB (PSS)"
                    for view in ([], ["--stats"])]
        print("| " + " | ".join(row) + " |", flush=True)


def tree_peak_pss(cmd):
    """Peak of the summed proportional set size (PSS: shared pages split between the processes sharing
    them) over a process and its descendants, sampled every 50 ms."""
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.DEVNULL)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, sum(_pss_kb(pid) for pid in _process_tree(proc.pid)))
            time.sleep(0.05)
    return peak / 1024


def _process_tree(pid):
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        try:
            with open(f"/proc/{current}/task/{current}/children") as handle:
                todo += [int(child) for child in handle.read().split()]
        except OSError:
            pass
    return pids


def _pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def best(cmd, runs):
    results = [run(cmd) for _ in range(max(1, runs))]
    return min(r[0] for r in results), max(r[1] for r in results)


def count_frames(path):
    from dissect.capture.sources import open_capture
    return sum(1 for _ in open_capture(path))


def build():
    import dissect
    return "dissect: Cython-compiled build" if dissect.compiled() else "dissect: pure-Python build"


def tshark_version():
    tshark = shutil.which("tshark")
    if not tshark:
        return "tshark: not installed"
    first = subprocess.run([tshark, "--version"], capture_output=True, text=True).stdout.splitlines()
    return first[0].strip().rstrip(".") if first else "tshark: unknown version"


def machine():
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown cpu"


if __name__ == "__main__":
    main()
