"""A TeeFrame server and browser client that talk over real UDP sockets.

The server answers ``gie3`` like a real one: an ``iext`` with as many complete
client records as fit in 1400 bytes, then ``iex+`` packets numbered from 1 for
the rest; it answers the vanilla request with ``inf3``. Used to make the sample
captures and by the tests.

    python tools/teeframe_peer.py serve --port 8303 --clients 64
    python tools/teeframe_peer.py query 127.0.0.1 8303
"""

import argparse
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from udp_responder import UdpResponder  # noqa: E402

FF4 = b"\xff" * 4
LONG_NAME = ("dissect test server | 64 slots | DM | teeframe.example | Frankfurt, Germany | "
             "be nice, no blocking | discord: teeframe-example")
HEADER = b"\xff" * 6 + FF4
LIMIT = 1400

NAMES = ["nameless tee", "Tëe Brawler", "忍者の影忍", "brainless tee", "(connecting)", "Sp3ctator Deluxe",
         "ChillerDragon", "gutenTAG Tee"]
CLANS = ["Clan Teeeeee", "DDNet-Elite", "kekw kekw kk", "Ünicode Ü", "", "Σ Sigma Σ", "Chilli.*Tee", "FrameCrew12"]


def gie3(extra_token, token, reserved=b"\0\0", extra=b""):
    """The 15-byte extended request: 'xe', extra token, reserved, FF FF FF FF, 'gie3', token."""
    return b"xe" + struct.pack(">H", extra_token) + reserved + FF4 + b"gie3" + bytes([token]) + extra


def vanilla_gie3(token):
    return HEADER + b"gie3" + bytes([token])


def s(text):
    """A String: UTF-8 bytes and a null terminator."""
    return (text if isinstance(text, bytes) else str(text).encode("utf-8")) + b"\0"


def client_record(name, clan, country, score, is_player, reserved=""):
    return s(name) + s(clan) + s(country) + s(score) + s(is_player) + s(reserved)


def vanilla_record(name, clan, country, score, is_player):
    return s(name) + s(clan) + s(country) + s(score) + s(is_player)


def _cut(text, size):
    """At most ``size`` UTF-8 bytes of ``text``, never half a character."""
    return text.encode("utf-8")[:size].decode("utf-8", "ignore")


def sample_clients(count, spectators=2):
    """Clients like a busy server's: names and clans near their byte limits, UTF-8, a -9999 score."""
    clients = []
    for i in range(count):
        name = NAMES[i % len(NAMES)] if i < len(NAMES) else f"{_cut(NAMES[i % len(NAMES)], 12)} #{i:02d}"
        score = -9999 if i == 1 else 10000 + (i * 7919) % 90000
        clients.append((name, CLANS[i % len(CLANS)], [276, -1, 392, 840][i % 4], score,
                        0 if i >= count - spectators else 1))
        if name == "(connecting)":
            clients[-1] = (name, "", clients[-1][2], 0, 0)
    return clients


def iext_fields(token, version="0.6.4, 16.3", name=LONG_NAME, map_name="dm1_remake_2026", map_crc=-1155017543,
                map_size=5805, game_type="DM", flags=0, players=None, max_players=64, clients=(),
                max_clients=64, reserved="", num_clients=None):
    num_players = sum(1 for c in clients if c[4] == 1) if players is None else players
    return (s(token) + s(version) + s(name) + s(map_name) + s(map_crc) + s(map_size) + s(game_type) + s(flags)
            + s(num_players) + s(max_players) + s(len(clients) if num_clients is None else num_clients)
            + s(max_clients) + s(reserved))


def response_packets(token, clients, records=None, **info):
    """Split a server-info response the way a real server does: whole records, 1400 bytes at most."""
    records = [client_record(*c) for c in clients] if records is None else records
    head = HEADER + b"iext" + iext_fields(token, clients=clients, **info)
    packets, current, number = [], head, 0
    for record in records:
        if len(current) + len(record) > LIMIT:
            packets.append(current)
            number += 1
            current = HEADER + b"iex+" + s(token) + s(number) + s("")
        current += record
    packets.append(current)
    return packets


def iext(token, clients=(), **info):
    return HEADER + b"iext" + iext_fields(token, clients=clients, **info) + b"".join(
        client_record(*c) for c in clients)


def iex_plus(token, number, clients=(), reserved=""):
    return HEADER + b"iex+" + s(token) + s(number) + s(reserved) + b"".join(client_record(*c) for c in clients)


def inf3(token, clients=(), version="0.6.4", name="vanilla server", map_name="ctf5", game_type="CTF", flags=1,
         max_players=16, max_clients=16):
    players = sum(1 for c in clients if c[4] == 1)
    return (HEADER + b"inf3" + s(token) + s(version) + s(name) + s(map_name) + s(game_type) + s(flags)
            + s(players) + s(max_players) + s(len(clients)) + s(max_clients)
            + b"".join(vanilla_record(*c) for c in clients))


def sample_iext(token, clients=8):
    return iext(token, sample_clients(clients))


class Server(UdpResponder):
    """Answers gie3 (extended and vanilla) on a real UDP socket."""

    def __init__(self, host="127.0.0.1", port=8303, clients=64, name=LONG_NAME):
        super().__init__(host, port)
        self.clients = sample_clients(clients)
        self.name = name

    def replies(self, packet):
        return self.answer(packet)

    def answer(self, packet):
        if len(packet) < 15 or packet[6:14] != FF4 + b"gie3":
            return []
        if packet[0:2] == b"xe":
            token = (((packet[2] << 8) | packet[3]) << 8) | packet[14]
            return response_packets(token, self.clients, name=self.name)
        return [inf3(packet[14], self.clients[:16])]


def query(host, port, extra_token=0x1234, token=0x2A, timeout=0.5, vanilla=False):
    """Send one request and collect every reply until the socket goes quiet."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(timeout)
    sock.sendto(vanilla_gie3(token) if vanilla else gie3(extra_token, token), (host, port))
    replies = []
    try:
        while True:
            replies.append(sock.recv(2048))
    except socket.timeout:
        pass
    sock.close()
    return replies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8303)
    serve.add_argument("--clients", type=int, default=64)
    ask = sub.add_parser("query")
    ask.add_argument("host")
    ask.add_argument("port", type=int)
    args = parser.parse_args()
    if args.command == "serve":
        Server(args.host, args.port, args.clients).start().serve_forever()
    else:
        for reply in query(args.host, args.port):
            print(len(reply), reply[:14])


if __name__ == "__main__":
    main()
