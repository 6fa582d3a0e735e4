"""Write captures/reflection.pcap: a reflection attack on one address through several servers of each
UDP protocol, mixed with ordinary browser traffic (captures/README.md describes it).

The capture is seen from upstream of the servers, so it holds both the spoofed requests and the
replies. What is in it, from the second ATTACK on, for five seconds:
- the victim's address asks three servers of each UDP protocol, from random source ports: 125
  NetQuake server-info requests to the first NetQuake server (25 a second: a request flood), 10 to
  each of the others; 35 TeeFrame requests to each TeeFrame server, all with one token (a spoofing
  tool's); 10 Odamex launcher requests to each Odamex server. Every request is answered.
- the three NetQuake servers answer a second address (the blind victim) 35 times each, with no
  request in the capture: the victim's view of reflection (its requests took another path).
- 200 spoofed one-off sources each ask the second NetQuake server once (answered).
And throughout: two browsers refresh every server of the three UDP protocols (tokens chosen per
server) and read both Soldat lobbies' lists over TCP, once at the start and once after the attack.

``build()`` returns the frames and a ledger of the payload bytes written per protocol (requests,
the replies that answer them, unrequested replies), from which the tests compute the true
amplification. ``--spoofed N PATH`` writes N requests from N distinct spoofed sources instead (the
capture for measuring time and memory on a million spoofed requests).

    python tools/make_reflection.py                    # captures/reflection.pcap
    python tools/make_reflection.py --spoofed 1000000 /tmp/spoofed.pcap
"""

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import capkit  # noqa: E402
import dpkt  # noqa: E402
import netquake_peer as nq  # noqa: E402
import odamex_peer as od  # noqa: E402
import soldat_peer as sp  # noqa: E402
import teeframe_peer as tf  # noqa: E402

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "captures", "reflection.pcap")
START = capkit.DEFAULT_TS          # a whole second
ATTACK = START + 10                # the attack's first second
VICTIM = "198.51.100.66"
BLIND_VICTIM = "198.51.100.99"
BROWSERS = ("192.0.2.20", "192.0.2.21")
TEEFRAME = (("203.0.113.10", 8303), ("203.0.113.11", 8303), ("203.0.113.12", 8303))
NETQUAKE = (("203.0.113.20", 26000), ("203.0.113.21", 26000), ("203.0.113.22", 26000))
ODAMEX = (("203.0.113.30", 10666), ("203.0.113.31", 10666), ("203.0.113.32", 10666))
SOLDAT = (("203.0.113.40", 13073), ("203.0.113.41", 13073))
TEEFRAME_CLIENTS = (40, 6, 3)      # the first server's reply takes two packets
SPOOF_TOKEN = (0x1337, 0x42)       # the spoofing tool's extra token and token
RTT = 0.02


class Capture:
    """Frames as they are written, and the bytes per protocol: payload, and whole frames (wire)."""

    def __init__(self):
        self.frames = []   # (ts, frame bytes)
        self.ledger = {}   # protocol -> requests, request_bytes, reply_bytes, unrequested_bytes, *_wire

    def udp(self, ts, src, dst, payload):
        """Write a datagram; return the frame's length."""
        frame = capkit.ethernet(capkit.udp_packet(*src, *dst, payload))
        self.frames.append((ts, frame))
        return len(frame)

    def query(self, ts, protocol, client, server, request, replies):
        """A request and the replies that answer it, RTT later, half a millisecond apart."""
        entry = self._entry(protocol)
        entry["request_wire"] += self.udp(ts, client, server, request)
        entry["requests"] += 1
        entry["request_bytes"] += len(request)
        for index, reply in enumerate(replies):
            entry["reply_wire"] += self.udp(ts + RTT + index * 0.0005, server, client, reply)
            entry["reply_bytes"] += len(reply)

    def unrequested(self, ts, protocol, server, client, reply):
        self.udp(ts, server, client, reply)
        self._entry(protocol)["unrequested_bytes"] += len(reply)

    def soldat(self, ts, client, lobby, request, reply):
        """A lobby exchange over TCP: handshake, the request, the reply in two segments, the close."""
        entry = self._entry("soldat")
        entry["requests"] += 1
        entry["request_bytes"] += len(request)
        entry["reply_bytes"] += len(reply)
        syn, ack, fin = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_FIN
        half = len(reply) // 2
        segments = [(client, lobby, b"", 0, 0, syn), (lobby, client, b"", 0, 1, syn | ack),
                    (client, lobby, b"", 1, 1, ack), (client, lobby, request, 1, 1, ack | dpkt.tcp.TH_PUSH),
                    (lobby, client, reply[:half], 1, 1 + len(request), ack),
                    (lobby, client, reply[half:], 1 + half, 1 + len(request), ack | dpkt.tcp.TH_PUSH),
                    (lobby, client, b"", 1 + len(reply), 1 + len(request), fin | ack),
                    (client, lobby, b"", 1 + len(request), 2 + len(reply), fin | ack),
                    (lobby, client, b"", 2 + len(reply), 2 + len(request), ack)]
        for index, (src, dst, data, seq, acked, flags) in enumerate(segments):
            packet = capkit.tcp_packet(*src, *dst, data, seq=seq, ack=acked, flags=flags)
            self.frames.append((ts + index * 0.002, capkit.ethernet(packet)))

    def _entry(self, protocol):
        return self.ledger.setdefault(protocol, {"requests": 0, "request_bytes": 0, "reply_bytes": 0,
                                                 "unrequested_bytes": 0, "request_wire": 0, "reply_wire": 0})

    def ordered(self):
        return sorted(self.frames, key=lambda frame: frame[0])


# -- what the servers answer ------------------------------------------------------------------------------
def teeframe_reply(index, extra_token, token):
    combined = (extra_token << 8) | token
    return tf.response_packets(combined, tf.sample_clients(TEEFRAME_CLIENTS[index]),
                               name=f"reflector {index + 1} | teeframe.example")


def netquake_reply(index):
    host, port = NETQUAKE[index]
    return [nq.ccrep_server_info(f"{host}:{port}", f"Quake server {index + 1}", "e1m1", index + 2, 16)]


def odamex_reply(index):
    players = [(f"player{n}", n * 3, 40 + n, 0) for n in range(index + 2)]
    return [od.server_info(token=1000 + index, name=f"Odamex reflector {index + 1}", players=players,
                           max_players=16, layout="real", extension=False)]


# -- who asks --------------------------------------------------------------------------------------------
def browser_refresh(capture, ts, browser, rng):
    """One browser refresh: every server of the UDP protocols once, a new token per TeeFrame server,
    then both Soldat lobbies."""
    for index, server in enumerate(TEEFRAME):
        extra_token, token = rng.randrange(1 << 16), rng.randrange(256)
        client = (browser, 50000 + index)
        capture.query(ts, "teeframe", client, server, tf.gie3(extra_token, token),
                      teeframe_reply(index, extra_token, token))
        ts += 0.01
    for index, server in enumerate(NETQUAKE):
        capture.query(ts, "netquake", (browser, 50010), server, nq.ccreq_server_info(), netquake_reply(index))
        ts += 0.01
    for index, server in enumerate(ODAMEX):
        capture.query(ts, "odamex", (browser, 50020), server, od.request(), odamex_reply(index))
        ts += 0.01
    for index, lobby in enumerate(SOLDAT):
        capture.soldat(ts, (browser, 50030 + index), lobby, sp.request(), sp.lobby_reply())
        ts += 0.05


def attack(capture, rng):
    """Five seconds of spoofed requests from the victim's address, all answered."""
    plan = [("netquake", NETQUAKE[0], 125, lambda: nq.ccreq_server_info(), lambda: netquake_reply(0))]
    plan += [("netquake", NETQUAKE[i], 10, nq.ccreq_server_info, lambda i=i: netquake_reply(i)) for i in (1, 2)]
    plan += [("teeframe", TEEFRAME[i], 35, lambda: tf.gie3(*SPOOF_TOKEN),
              lambda i=i: teeframe_reply(i, *SPOOF_TOKEN)) for i in range(3)]
    plan += [("odamex", ODAMEX[i], 10, od.request, lambda i=i: odamex_reply(i)) for i in range(3)]
    for offset, (protocol, server, count, request, replies) in enumerate(plan):
        for n in range(count):
            ts = ATTACK + 0.003 * offset + n * 4.9 / count
            capture.query(ts, protocol, (VICTIM, rng.randrange(1024, 65536)), server, request(), replies())


def blind_victim(capture):
    """Replies to an address whose requests this capture does not hold: 35 from each NetQuake server."""
    for index, server in enumerate(NETQUAKE):
        for n in range(35):
            capture.unrequested(ATTACK + 0.01 + 0.001 * index + n * 4.9 / 35, "netquake", server,
                                (BLIND_VICTIM, 27000), netquake_reply(index)[0])


def one_off_sources(capture, rng):
    """200 spoofed sources, each asking the second NetQuake server once."""
    for n in range(200):
        source = (f"100.64.{n // 250}.{n % 250 + 1}", rng.randrange(1024, 65536))
        capture.query(ATTACK + 0.0007 + n * 0.024, "netquake", source, NETQUAKE[1], nq.ccreq_server_info(),
                      netquake_reply(1))


def build(seed=19):
    """(frames in time order, ledger) of the reflection capture."""
    rng = random.Random(seed)
    capture = Capture()
    for number, browser in enumerate(BROWSERS):
        browser_refresh(capture, START + 1 + number * 0.4, browser, rng)
        browser_refresh(capture, ATTACK + 8 + number * 0.4, browser, rng)
    attack(capture, rng)
    blind_victim(capture)
    one_off_sources(capture, rng)
    return capture.ordered(), capture.ledger


def write_spoofed(path, count, seed=1):
    """``count`` TeeFrame requests from ``count`` distinct spoofed sources to three servers, 10,000 a
    second, none answered; written frame by frame."""
    rng = random.Random(seed)
    request = tf.gie3(*SPOOF_TOKEN)
    with open(path, "wb") as handle:
        writer = dpkt.pcap.Writer(handle, snaplen=65535, linktype=1)
        for n in range(count):
            source = f"{10 + n // 15_625_000}.{n // 62500 % 250}.{n // 250 % 250}.{n % 250 + 1}"
            frame = capkit.ethernet(capkit.udp_packet(source, rng.randrange(1024, 65536), *TEEFRAME[n % 3], request))
            writer.writepkt(frame, ts=START + n / 10000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=PATH)
    parser.add_argument("--spoofed", type=int, metavar="N", help="write N requests from N spoofed sources instead")
    args = parser.parse_args()
    if args.spoofed:
        write_spoofed(args.path, args.spoofed)
        return
    frames, _ = build()
    capkit.write_pcap(args.path, frames)


if __name__ == "__main__":
    main()
