"""Odamex launcher-protocol peers over real UDP sockets: a server, a master, and a launcher.

The builders write both layouts of the server-info reply: the spec's (CTF bool
after the WAD hashes) and the real servers' (CTF bool right after teamplay),
with or without the newer servers' extension.

    python tools/odamex_peer.py serve --port 10666
    python tools/odamex_peer.py master --port 15000
    python tools/odamex_peer.py query 127.0.0.1 10666
"""

import argparse
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from udp_responder import UdpResponder  # noqa: E402

LAUNCHER = struct.pack("<i", 777123)
SERVER_INFO = struct.pack("<i", 5560020)
HASH = "a6f8ea9e4b8ce10fd9a5bb6e0ef17d24"


def s(text):
    return text.encode("latin-1") + b"\0"


def request(key=None):
    return LAUNCHER + (key or b"")


def master_list(servers, count=None):
    body = struct.pack("<h", len(servers) if count is None else count)
    for ip, port in servers:
        body += socket.inet_aton(ip) + struct.pack("<H", port)
    return LAUNCHER + body


def server_info(token=7, name="Odamex test server", players=(), max_players=8, map_name="MAP01",
                pwads=(("ukraine.wad", HASH),), game_type=1, skill=3, teamplay=False, ctf=False,
                website="https://odamex.example", score_limit=5, team_scores=None, layout="spec", key=None,
                extension=None):
    """``players``: (name, frags, ping, team) tuples; ``team_scores``: {'blue': n, 'red': n, 'gold': n}."""
    teams = teamplay or (ctf and layout == "real")
    out = SERVER_INFO + struct.pack("<i", token) + (key or b"") + s(name)
    out += bytes([len(players), max_players]) + s(map_name) + bytes([len(pwads)])
    out += b"".join(s(pwad) for pwad, _ in pwads)
    out += bytes([game_type, skill, int(teamplay)])
    if layout == "real":
        out += bytes([int(ctf)])
    for pname, frags, ping, team in players:
        out += s(pname) + struct.pack("<hi", frags, ping) + (bytes([team]) if teams else b"")
    out += b"".join(s(digest) for _, digest in pwads)
    if layout == "spec":
        out += bytes([int(ctf)])
    out += s(website)
    if teamplay or ctf:
        out += struct.pack("<i", score_limit)
        for team in ("blue", "red", "gold"):
            score = (team_scores or {}).get(team)
            out += bytes([score is not None]) + (struct.pack("<i", score) if score is not None else b"")
    if extension is not None:
        out += extension_block(len(players), **extension)
    return out


def extension_block(count, version=5, email="admin@odamex.example", time_limit=20, time_left=12, frag_limit=50,
                    flags=(1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0), stats=None, max_players=8, spectators=None,
                    password=0, game_version=0x000A00, patches=()):
    out = struct.pack("<h", version) + s(email) + struct.pack("<hhh", time_limit, time_left, frag_limit)
    out += bytes(flags)
    for i in range(count):
        kills, deaths, minutes = (stats or {}).get(i, (10 + i, i, 5))
        out += struct.pack("<hhh", kills, deaths, minutes)
    out += struct.pack("<I", 0x01020304) + struct.pack("<h", max_players)
    out += bytes((spectators or [0] * count)[i] for i in range(count))
    out += struct.pack("<I", 0x01020305) + struct.pack("<h", password) + struct.pack("<I", game_version)
    out += bytes([len(patches)]) + b"".join(s(p) for p in patches)
    return out


PLAYERS = [("Doomguy", 12, 48, 1), ("Marine", -2, 112, 2), ("Chaingunner", 5, 33, 1)]


class Peer(UdpResponder):
    """A UDP peer that answers 777123 with a fixed reply (a server or a master)."""

    def __init__(self, reply, host="127.0.0.1", port=10666):
        super().__init__(host, port)
        self.reply = reply

    def replies(self, packet):
        if packet[:4] != LAUNCHER:
            return []
        return [self.reply(packet[4:8] if len(packet) == 8 else None)]


def server(host="127.0.0.1", port=10666, **info):
    return Peer(lambda key: server_info(key=key, **info), host, port)


def master(servers, host="127.0.0.1", port=15000):
    return Peer(lambda key: master_list(servers), host, port)


def query(host, port, key=None, timeout=0.5):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(timeout)
    sock.sendto(request(key), (host, port))
    try:
        return sock.recv(4096)
    except socket.timeout:
        return None
    finally:
        sock.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, port in (("serve", 10666), ("master", 15000)):
        cmd = sub.add_parser(name)
        cmd.add_argument("--host", default="127.0.0.1")
        cmd.add_argument("--port", type=int, default=port)
    ask = sub.add_parser("query")
    ask.add_argument("host")
    ask.add_argument("port", type=int)
    args = parser.parse_args()
    if args.command == "query":
        reply = query(args.host, args.port)
        print(reply.hex(" ") if reply else "no reply")
        return
    peer = (server(args.host, args.port, players=PLAYERS) if args.command == "serve"
            else master([("127.0.0.1", 10666)], args.host, args.port))
    peer.start().serve_forever()


if __name__ == "__main__":
    main()
