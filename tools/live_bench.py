"""How many packets per second live capture sustains on loopback without loss (run as root).

For each rate, ``dissect -i lo`` is started on a fresh port, a sender paces real
NetQuake request packets at that rate for a few seconds, and the packets dissect
reports captured are compared with those sent (plus the kernel's drop count).

    python tools/live_bench.py [--seconds 3] [--rates 2000 5000 10000 20000] [--view summary|jsonl]
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import netquake_peer as nq  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def send_paced(port, rate, seconds):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payloads = [nq.ccreq_server_info(), nq.ccreq_player_info(1), nq.ccreq_rule_info("sv_gravity")]
    sent = 0
    start = time.perf_counter()
    total = int(rate * seconds)
    while sent < total:
        due = int((time.perf_counter() - start) * rate)
        while sent < min(due, total):
            sock.sendto(payloads[sent % 3], ("127.0.0.1", port))
            sent += 1
        time.sleep(0.0005)
    sock.close()
    return sent, time.perf_counter() - start


def measure(rate, seconds, view):
    port = free_port()
    args = [sys.executable, "-m", "dissect", "-i", "lo", "-f", f"udp dst port {port}"]
    if view == "jsonl":
        args += ["-T", "jsonl"]
    with open(os.devnull, "w") as devnull:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=devnull, stderr=subprocess.PIPE, text=True)
        proc.stderr.readline()
        time.sleep(0.5)
        sent, elapsed = send_paced(port, rate, seconds)
        time.sleep(1.0)
        proc.send_signal(2)
        err = proc.communicate(timeout=120)[1]
    match = re.search(r"(\d+) packets captured on [^,\s]+(?:, (\d+) dropped)?", err)
    captured = int(match.group(1)) if match else 0
    dropped = int(match.group(2)) if match and match.group(2) else None
    return sent, sent / elapsed, captured, dropped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rates", type=int, nargs="+", default=[2000, 5000, 10000, 20000, 40000])
    parser.add_argument("--view", choices=("summary", "jsonl"), default="summary")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("live capture needs root")
    print(f"{'target pps':>10} {'sent pps':>10} {'sent':>8} {'captured':>9} {'lost':>6} {'kernel drops':>13}")
    best = 0
    for rate in args.rates:
        sent, actual, captured, dropped = measure(rate, args.seconds, args.view)
        lost = sent - captured
        print(f"{rate:>10} {actual:>10.0f} {sent:>8} {captured:>9} {lost:>6} {str(dropped):>13}", flush=True)
        if lost == 0:
            best = max(best, actual)
    print(f"highest rate without loss ({args.view}): {best:.0f} packets/s")


if __name__ == "__main__":
    main()
