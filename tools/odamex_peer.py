"""Odamex launcher-protocol peers over real UDP sockets: a server, a master, and a launcher.

The builders write the server-info reply in three layouts:
- ``real``: as Odamex's own server writes it (its old-protocol launcher reply): a
  bool "deathmatch" where the spec has the game type, the CTF bool right after
  the teamplay bool, a team byte for every player (Odamex's numbers: blue 0, red 1,
  green 2, TEAM_NONE after NUMTEAMS), the team block only in team deathmatch and
  CTF with one entry per team of the build, and the newer servers' extension;
- ``spec``: the spec's table as written: a team byte for every player (0 while
  teamplay is off), the CTF bool after the PWAD hashes, the three team bools
  always, the score limit and the scores only when teamplay or CTF is on;
- ``compact``: the spec without team bytes or team bools while teams are off.

    python tools/odamex_peer.py serve --port 10666 [--mode dm|coop|tdm|ctf] [--teams 2|3] [--layout real|spec]
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
SPEC_TEAMS = ("blue", "red", "gold")
REAL_TEAMS = ("blue", "red", "green")


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
                extension=None, mode=None, teams=3, teams_in_play=2):
    """``players``: (name, frags, ping, team) tuples, teams numbered as the layout numbers them;
    ``team_scores``: {'blue': n, 'red': n, 'gold' or 'green': n}. ``extension``: None for the layout's
    habit (real servers always write it), False for none, or a dict of ``extension_block`` arguments.
    The real layout takes its game ``mode`` (coop, dm, tdm, ctf; by default from game_type, teamplay
    and ctf) and the build's team count ``teams``."""
    common = dict(token=token, name=name, players=players, max_players=max_players, map_name=map_name, pwads=pwads,
                  skill=skill, website=website, score_limit=score_limit, team_scores=team_scores, key=key)
    if layout == "real":
        mode = mode or ("ctf" if ctf else "tdm" if teamplay else "dm" if game_type else "coop")
        out = real_server_info(mode=mode, teams=teams, teams_in_play=teams_in_play, **common)
        return out + extension_block(len(players), **(extension or {})) if extension is not False else out
    writer = compact_server_info if layout == "compact" else spec_server_info
    out = writer(game_type=game_type, teamplay=teamplay, ctf=ctf, **common)
    return out if extension is None or extension is False else out + extension_block(len(players), **extension)


def _head(token, key, name, players, max_players, map_name, pwads):
    out = SERVER_INFO + struct.pack("<i", token) + (key or b"") + s(name)
    out += bytes([len(players), max_players]) + s(map_name) + bytes([len(pwads)])
    return out + b"".join(s(pwad) for pwad, _ in pwads)


def _player(pname, frags, ping):
    return s(pname) + struct.pack("<hi", frags, ping)


def _hashes(pwads):
    return b"".join(s(digest) for _, digest in pwads)


def real_server_info(token=7, name="Odamex test server", players=(), max_players=8, map_name="MAP01",
                     pwads=(("ukraine.wad", HASH),), mode="dm", skill=3, website="https://odamex.example",
                     score_limit=5, team_scores=None, key=None, teams=3, teams_in_play=2):
    """The reply up to the team block as Odamex's server writes it (its extension is ``extension_block``).
    ``mode``: coop, dm, tdm or ctf; ``teams``: the build's team count (2, or 3 since 2020)."""
    team_game = mode in ("tdm", "ctf")
    team_none = teams + 1  # team_t: TEAM_BLUE, TEAM_RED[, TEAM_GREEN], NUMTEAMS, TEAM_NONE
    out = _head(token, key, name, players, max_players, map_name, pwads)
    out += bytes([mode in ("dm", "tdm"), skill, mode == "tdm", mode == "ctf"])
    for pname, frags, ping, team in players:
        out += _player(pname, frags, ping) + bytes([team if team_game else team_none])
    out += _hashes(pwads) + s(website)
    if team_game:
        out += struct.pack("<i", score_limit)
        in_play = 2 if mode == "ctf" else teams_in_play
        for index, team in enumerate(REAL_TEAMS[:teams]):
            score = (team_scores or {}).get(team, 0)
            out += (b"\1" + struct.pack("<i", score)) if index < in_play else b"\0"
    return out


def spec_server_info(token=7, name="Odamex test server", players=(), max_players=8, map_name="MAP01",
                     pwads=(("ukraine.wad", HASH),), game_type=1, skill=3, teamplay=False, ctf=False,
                     website="https://odamex.example", score_limit=5, team_scores=None, key=None):
    """The spec's table as written: every player's team byte (0 while teamplay is off), the CTF bool after
    the hashes, the three team bools always; the score limit and the scores only with teamplay or CTF."""
    teams_on = teamplay or ctf
    out = _head(token, key, name, players, max_players, map_name, pwads)
    out += bytes([game_type, skill, int(teamplay)])
    for pname, frags, ping, team in players:
        out += _player(pname, frags, ping) + bytes([team if teamplay else 0])
    out += _hashes(pwads) + bytes([int(ctf)]) + s(website)
    if teams_on:
        out += struct.pack("<i", score_limit)
    for team in SPEC_TEAMS:
        score = (team_scores or {}).get(team)
        out += bytes([score is not None])
        if teams_on and score is not None:
            out += struct.pack("<i", score)
    return out


def compact_server_info(token=7, name="Odamex test server", players=(), max_players=8, map_name="MAP01",
                        pwads=(("ukraine.wad", HASH),), game_type=1, skill=3, teamplay=False, ctf=False,
                        website="https://odamex.example", score_limit=5, team_scores=None, key=None):
    """The spec's fields without team bytes while teamplay is off and without the team block while teams are."""
    out = _head(token, key, name, players, max_players, map_name, pwads)
    out += bytes([game_type, skill, int(teamplay)])
    for pname, frags, ping, team in players:
        out += _player(pname, frags, ping) + (bytes([team]) if teamplay else b"")
    out += _hashes(pwads) + bytes([int(ctf)]) + s(website)
    if teamplay or ctf:
        out += struct.pack("<i", score_limit)
        for team in SPEC_TEAMS:
            score = (team_scores or {}).get(team)
            out += bytes([score is not None]) + (struct.pack("<i", score) if score is not None else b"")
    return out


def extension_block(count, version=65, email="admin@odamex.example", time_limit=20, time_left=12, frag_limit=50,
                    flags=(1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0), stats=None, max_players=8, spectators=None,
                    password=0, game_version=10 * 256 + 6 * 10, patches=()):
    """What newer servers write after the team block. Real servers write version 65, cleanmaps false, game
    version 10.6.0 (major * 256 + minor * 10 + patch) and no patch files."""
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


PLAYERS = [("Doomguy", 12, 48, 1), ("Marine", -2, 112, 2), ("Chaingunner", 5, 33, 1)]  # spec: Blue, Red, Blue
REAL_PLAYERS = [("Doomguy", 12, 48, 0), ("Marine", -2, 112, 1), ("Chaingunner", 5, 33, 0)]  # Blue, Red, Blue


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
    serve = sub.choices["serve"]
    serve.add_argument("--layout", choices=("real", "spec", "compact"), default="real")
    serve.add_argument("--mode", choices=("coop", "dm", "tdm", "ctf"), default="dm", help="real layout's game mode")
    serve.add_argument("--teams", type=int, choices=(2, 3), default=3, help="real layout: the build's team count")
    ask = sub.add_parser("query")
    ask.add_argument("host")
    ask.add_argument("port", type=int)
    args = parser.parse_args()
    if args.command == "query":
        reply = query(args.host, args.port)
        print(reply.hex(" ") if reply else "no reply")
        return
    if args.command == "serve":
        players = REAL_PLAYERS if args.layout == "real" else PLAYERS
        peer = server(args.host, args.port, players=players, layout=args.layout, mode=args.mode, teams=args.teams)
    else:
        peer = master([("127.0.0.1", 10666)], args.host, args.port)
    peer.start().serve_forever()


if __name__ == "__main__":
    main()
