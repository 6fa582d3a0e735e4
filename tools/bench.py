"""Benchmark dissect against tshark on captures that cannot flatter it.

    python tools/bench.py [--sizes 50000,400000] [--mix mixed|query|both] [--views summary,V,jsonl,stats]
                          [--runs 3] [--jobs 1] [--keep-dir DIR] [--capture FILE] [--dissect "CMD"]
                          [--baseline "CMD"] [--big-gb GB]

The captures (a fixed seed: the same bytes on every run and every machine), each at every --sizes:
- ``mixed``: every protocol dissect knows in a handful of fixed conversations repeated over and over,
  every tenth frame unrelated UDP or TCP (the mix the README's figures used so far).
- ``query``: query traffic only, shaped like a server browser's capture: many clients refresh their
  lists, each asking many distinct servers at once. TeeFrame browsers send gie3 (a few old ones the
  vanilla request) to dozens of servers, mostly empty or small, a few with 40-64 clients that answer
  in an iext and several iex+; NetQuake browsers ask for server info, some walk the players and the
  rules, a few connect (accepted, or rejected when full); Odamex launchers fetch the master's list,
  then ask servers of every game mode (FFA, coop, TDM, CTF) with 0-16 players; Soldat clients open a
  TCP connection to a lobby (SYN, request, the list in several segments, FINs), several at a time.
  A few servers are down and never answer. Of 50,000 frames about 42% are TeeFrame, 26% NetQuake,
  16.5% Odamex and 15.5% Soldat (two thirds of these handshake, bare ACK and FIN segments); the only
  findings are the notes on what real peers do. Write one with --keep-dir and look at it.
- ``given``: the file named by --capture, alone.
With --keep-dir the captures are written there (``query-50000.pcap``, ``mixed-400000.pcap``) and reused
when already present, so delete them after changing the generators here.

The views, each beside its tshark peer, all output to /dev/null:
    summary   dissect FILE             tshark -r FILE
    V         dissect -V FILE          tshark -r FILE -V
    jsonl     dissect -T jsonl FILE    tshark -r FILE -T json
    stats     dissect --stats FILE     tshark -r FILE -q -z io,phs
Each run alternates the two programs (dissect, tshark, then ``dissect -j J`` with --jobs J > 1), --runs
times, so that a slow spell of the machine falls on both. With --baseline CMD another build of dissect
(an earlier commit, say) takes its turn in the same rounds, and its rows, marked ``(baseline)``, compare it
with the same tshark runs: two builds measured one after the other can land on different spells of the
machine, and a change of a few percent then hides in them. The table gives medians over the runs:
- dissect / tshark frames/s: the capture's frames over the median wall time of the whole process
  (start-up included, as a user waits for it);
- ratio: the median dissect frames/s over the median tshark frames/s (above 1: dissect is faster),
  beside its target (summary and -V 1.5x, jsonl and stats 3x) and whether it meets it; a ``-j J`` row
  compares ``dissect -j J`` with the same tshark runs;
- ratio by CPU time: tshark's median CPU seconds (user and system) over dissect's, for one process only (a
  ``-j`` run's CPU seconds add up its processes'): where other processes take turns on the cores it moves less
  than the wall clock; on a virtual machine whose slow spells slow the CPU itself it moves with it;
- dissect µs/frame: the median wall time over the frames;
- peak RSS: the largest resident set over the runs (for -j, that of the largest single process).
Then, where tshark ran, the verdict, a row per capture and view: the one-process ratio against its target, and where it falls
short the speed still needed (target / ratio: how many times faster dissect would have to run); with --jobs J,
the ``-j J`` ratio and how many times one process's it is (the target: near J); and how many cells meet.
The header line names the date (UTC), the machine, the dissect build, its Python, and tshark's version.
The floor, per capture, timed inside a subprocess (start-up and imports excluded), median of the runs:
a bare Python loop that reads the file in 1 MiB blocks and steps over the pcap record headers with
struct, and dissect's own reader (``dissect.capture.sources.open_capture``, each Frame taken and
dropped). No view can be faster than its reader, and a pure Python program hardly faster than the
bare loop. --big-gb GB adds dissect's peak memory on a mixed capture of about GB gigabytes
(written to a temporary folder and removed; for -j, the summed PSS of all its processes).

The dissect under test is this tree's (``env PYTHONPATH=<this repository> python -m dissect``, with the
Python running this script) unless --dissect gives a command, split like a shell would, e.g.
``--dissect "env PYTHONPATH=/tmp/wt python3 -m dissect"`` for a worktree. Every command runs in an empty
temporary folder, because ``python -m`` puts the current folder first on the import path, before
PYTHONPATH. Its build (compiled or pure Python), Python version and the folder its package came from are
found by running the command's interpreter part (everything before ``-m dissect``) with ``-c``, so the
same environment and path apply; the floor's reader loop runs the same way (a command without
``-m dissect`` gets "build unknown", and the reader loop then runs in this script's Python). An installed
``dissect`` script (``--dissect /venv/bin/dissect``, as ``pip install .`` into a venv leaves it) is run as it
is, and its build found with the Python its first line names.
DISSECT_PURE_PYTHON set in this script's environment reaches every command.

Timing is noisy on a shared machine: read the medians of at least 3 runs.
"""

import argparse
import datetime
import hashlib
import heapq
import ipaddress
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import dpkt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import capkit  # noqa: E402
import netquake_peer as nq  # noqa: E402
import odamex_peer as od  # noqa: E402
import soldat_peer as sp  # noqa: E402
import teeframe_peer as tf  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIXES = ("mixed", "query")
VIEWS = {  # view: (dissect arguments before the file, tshark arguments after -r FILE, target ratio)
    "summary": ([], [], 1.5),
    "V": (["-V"], ["-V"], 1.5),
    "jsonl": (["-T", "jsonl"], ["-T", "json"], 3.0),
    "stats": (["--stats"], ["-q", "-z", "io,phs"], 3.0),
}


# -- the mixed capture (unchanged: the mix of the README's earlier figures) -----------------------------------

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
    browser, tee = ("10.0.0.8", 50000), ("10.0.0.2", 8303)
    launcher, oda = ("10.0.0.9", 40001), ("10.0.0.3", 10666)
    pairs = [(browser, tee, tf.gie3(0x1234, 0x2A)), (tee, browser, tf.sample_iext(0x12342A, clients=8)),
             (launcher, oda, od.request()),
             (oda, launcher, od.server_info(players=od.PLAYERS, teamplay=True, team_scores={"blue": 1}))]
    return [capkit.ethernet(capkit.udp_packet(*src, *dst, payload)) for src, dst, payload in pairs]


def soldat_lines():
    reply = sp.lobby_reply()
    return [sp.request()] + [reply[i:i + 60] for i in range(0, len(reply), 60)]


def write_mixed(path, count, seed=1):
    """Every tenth frame is noise; one in ten of the rest is a segment of a Soldat lobby stream."""
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


# -- the query capture: conversations -----------------------------------------------------------------------

SYN, FIN, ACK, PSH = dpkt.tcp.TH_SYN, dpkt.tcp.TH_FIN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH


class Exchange:
    """The frames of one UDP conversation, (µs, bytes): a client asks, the server answers a round trip
    later, the client thinks a moment before its next request."""

    def __init__(self, rng, start, client, server, rtt):
        self.rng = rng
        self.t = start
        self.client = client
        self.server = server
        self.rtt = rtt
        self.frames = []

    def ask(self, request, replies=()):
        self.frames.append((self.t, _udp(self.client, self.server, request)))
        t = self.t + self.rtt
        for reply in replies:
            self.frames.append((t, _udp(self.server, self.client, reply)))
            t += self.rng.randint(40, 400)
        self.t = t + self.rng.randint(200, 3000)
        return self


class TcpExchange(Exchange):
    """One TCP connection: each side's sequence number starts at a random ISN; SYN and FIN count one."""

    def __init__(self, rng, start, client, server, rtt):
        super().__init__(rng, start, client, server, rtt)
        self.next_seq = {True: rng.getrandbits(32), False: rng.getrandbits(32)}  # by "sent by the client"

    def segment(self, by_client, flags, payload=b"", after=0):
        """A segment ``after`` µs past the previous one, acknowledging all the other side sent so far."""
        self.t += after
        src, dst = (self.client, self.server) if by_client else (self.server, self.client)
        seq = self.next_seq[by_client]
        ack = self.next_seq[not by_client] if flags & ACK else 0
        packet = capkit.tcp_packet(*src, *dst, payload, seq=seq, ack=ack, flags=flags)
        self.frames.append((self.t, capkit.ethernet(packet)))
        self.next_seq[by_client] = (seq + len(payload) + (1 if flags & (SYN | FIN) else 0)) & 0xFFFFFFFF


def _udp(src, dst, payload):
    return capkit.ethernet(capkit.udp_packet(*src, *dst, payload))


# -- the query capture: the servers ---------------------------------------------------------------------------

TEE_VERSIONS = ("0.6.4, 16.3", "0.6.4, 17.4.2", "0.6.4, 18.0.3", "0.6.5", "0.6.4")
TEE_MAPS = ("dm1", "dm2", "ctf5", "Kobra 4", "Multeasymap", "Sunny Side Up", "Tutorial", "dm1_remake_2026")
TEE_TYPES = ("DM", "TDM", "CTF", "DDraceNetwork", "Gores", "iDDRace", "fng2")
NQ_MAPS = ("e1m1", "e1m2", "e2m3", "e3m4", "e4m1", "dm2", "dm3", "dm4", "dm6", "start")
NQ_NAMES = ("Ranger", "Grunt", "Shambler", "Fiend", "Vore", "Zombie", "Ogre", "Knight", "Enforcer", "Scrag",
            "Spawn", "Chthon", "Shub", "quaddamage", "[TF]Medic", "player")
OD_MAPS = ("MAP01", "MAP07", "MAP11", "MAP15", "MAP29", "E1M1", "E2M2", "E3M6")
OD_WADS = ("ukraine.wad", "dwango5.wad", "av.wad", "greenwar.wad", "odactf1.wad")
OD_NAMES = ("Doomguy", "Marine", "Chaingunner", "Imp", "Revenant", "Cacodemon", "Archvile", "Mancubus")
SOLDAT_MAPS = ("ctf_Ash", "ctf_Run", "Blox", "Arena2", "htf_Void", "inf_Moonshine", "Lothic", "Krab")
SOLDAT_WORDS = ("Soldat", "CTF", "Classic", "Pointmatch", "Ünited", "TM night", "Public", "Realistic", "#1")
ODAMEX_MASTER_PORT = 15000
COUNTRIES = ("DE", "PL", "US", "FI", "SE", "BR", "GB", "NL", "A1")
GAP_US = 16_000             # mean time between two refreshes (exponential): about 1,700 frames per second
REFRESHES = (("teeframe", 25), ("netquake", 13), ("odamex", 22), ("soldat", 40))  # relative weights


def _addresses(rng, network, count):
    """``count`` distinct host addresses of ``network``, in random order."""
    net = ipaddress.ip_network(network)
    return [str(net.network_address + n) for n in rng.sample(range(1, min(net.num_addresses - 1, 1 << 24)), count)]


def _server(rng, host, ports, down_share=0.04):
    """What every server has: its endpoint, whether it is down, its base round trip (µs)."""
    return {"addr": (host, rng.choice(ports)), "down": rng.random() < down_share, "rtt": rng.randint(8_000, 180_000)}


def teeframe_server(rng, host, host6, serial):
    server = _server(rng, host, (8303, 8303, 8303, 8304, 8305, 8306, 8310))
    server["addr6"] = (host6, server["addr"][1]) if host6 else None
    count = _tee_client_count(rng)
    clients = tf.sample_clients(count, spectators=rng.randint(0, min(2, count)))
    rng.shuffle(clients)
    players = sum(1 for c in clients if c[4] == 1)
    max_clients = 64 if count > 32 else rng.choice([m for m in (16, 24, 32, 64) if m >= count])
    game_type = rng.choice(TEE_TYPES)
    name = tf.LONG_NAME if rng.random() < 0.1 else f"{rng.choice(('DDNet', 'KoG', 'Unique', 'zCatch'))} " \
                                                    f"{game_type} {rng.choice(COUNTRIES)} #{serial}"
    server["clients"] = clients
    server["info"] = dict(version=rng.choice(TEE_VERSIONS), name=name, map_name=rng.choice(TEE_MAPS),
                          map_crc=rng.randint(-2**31, 2**31 - 1), map_size=rng.randint(2_000, 900_000),
                          game_type=game_type, flags=int(rng.random() < 0.1),
                          max_players=max(players, max_clients - rng.choice((0, 0, 4))), max_clients=max_clients)
    return server


def _tee_client_count(rng):
    """Most servers are empty or small; a few are big."""
    draw = rng.random()
    if draw < 0.40:
        return 0
    if draw < 0.86:
        return rng.randint(1, 16)
    if draw < 0.95:
        return rng.randint(17, 32)
    return rng.randint(40, 64)


def netquake_server(rng, host, serial):
    server = _server(rng, host, (26000, 26000, 26000, 26001, 26002))
    maximum = rng.choice((4, 8, 8, 12, 16))
    current = 0 if rng.random() < 0.35 else rng.randint(1, maximum)
    server.update(host_name=f"{rng.choice(('Quake', 'QuakeOne', 'DM', 'Clan Arena'))} server #{serial}",
                  level=rng.choice(NQ_MAPS), maximum=maximum,
                  players=[_quake_player(rng, number) for number in range(current)],
                  rules=[(rule, _rule_value(rng, rule, value)) for rule, value in nq.RULES])
    return server


def _quake_player(rng, number):
    colors = rng.randint(0, 13) * 16 + rng.randint(0, 13)
    return (number, rng.choice(NQ_NAMES), colors, rng.randint(-3, 60), rng.randint(5, 7200),
            f"192.0.2.{rng.randint(1, 254)}:{rng.randint(1024, 65535)}")


def _rule_value(rng, rule, default):
    choices = {"fraglimit": ("10", "20", "30", "50"), "timelimit": ("0", "10", "15", "20"), "teamplay": ("0", "1")}
    return rng.choice(choices.get(rule, (default,)))


def odamex_server(rng, host):
    server = _server(rng, host, (10666, 10666, 10666, 10667, 10668))
    mode = rng.choice(("dm", "dm", "coop", "tdm", "ctf"))
    teams = rng.choice((2, 3))
    in_play = 2 if mode == "ctf" or teams == 2 else rng.choice((2, 3))
    max_players = rng.choice((4, 8, 8, 12, 16))
    count = 0 if rng.random() < 0.3 else rng.randint(1, max_players)
    players = [(f"{rng.choice(OD_NAMES)}{i}", rng.randint(-2, 40), rng.randint(15, 250), rng.randrange(in_play))
               for i in range(count)]
    wads = rng.sample(OD_WADS, rng.randint(0, 2))
    server["info"] = dict(name=f"Odamex {mode.upper()} server {host}", players=players, max_players=max_players,
                          map_name=rng.choice(OD_MAPS), pwads=[(w, hashlib.md5(w.encode()).hexdigest()) for w in wads],
                          skill=rng.randint(0, 4), layout="real", mode=mode, teams=teams, teams_in_play=in_play,
                          score_limit=rng.choice((5, 10, 20)), extension={"max_players": max_players},
                          team_scores={team: rng.randint(0, 9) for team in od.REAL_TEAMS})
    return server


def soldat_entry(rng, host):
    maxplayers = rng.choice((8, 10, 12, 16, 24, 32))
    name = " ".join(rng.sample(SOLDAT_WORDS, 3))
    return (rng.choice((41, 42, 42)), host, rng.choice((23073, 23074, 23083, 24000)), rng.randint(1, 6),
            rng.randint(0, maxplayers), maxplayers, rng.choice(SOLDAT_MAPS), name, rng.randint(0, 4),
            rng.randint(0, 5), rng.randint(1, 10), rng.randint(0, 3), rng.randint(0, 1), rng.randint(0, 1),
            rng.randint(0, 1), rng.randint(0, 1), rng.randint(0, 1), rng.randint(0, 1), rng.choice(COUNTRIES))


# -- the query capture: refreshes -------------------------------------------------------------------------------

class QueryMix:
    """The servers, the clients, and what one client does in one refresh of its list."""

    def __init__(self, rng):
        self.rng = rng
        tee = _addresses(rng, "172.16.0.0/14", 700)
        tee6 = _addresses(rng, "2001:db8:5::/48", 700)
        self.tee = [teeframe_server(rng, host, tee6[i] if i % 7 == 0 else None, i) for i, host in enumerate(tee)]
        self.tee6 = [server for server in self.tee if server["addr6"]]
        self.quake = [netquake_server(rng, host, i) for i, host in enumerate(_addresses(rng, "172.20.0.0/14", 300))]
        self.quake_up = [server for server in self.quake if not server["down"]]
        self.odamex = [odamex_server(rng, host) for host in _addresses(rng, "172.24.0.0/14", 150)]
        self.masters = [(host, ODAMEX_MASTER_PORT) for host in ("172.24.0.1", "172.24.0.2")]
        self.lobbies = [(("172.28.0.1", 13073), sp.LATIN1), (("172.28.0.2", 13073), sp.UTF8)]
        self.soldat = [soldat_entry(rng, host) for host in _addresses(rng, "172.30.0.0/15", 150)]
        self.clients = _addresses(rng, "198.18.0.0/15", 6000)
        self.clients6 = _addresses(rng, "2001:db8:c::/48", 600)
        self.turns = {False: 0, True: 0}  # refreshes so far, by "over IPv6"

    def refresh(self, start):
        """The conversations of one refresh starting at ``start`` (µs), each a list of (µs, frame)."""
        kind = self.rng.choices([k for k, _ in REFRESHES], [w for _, w in REFRESHES])[0]
        return getattr(self, f"_{kind}")(start)

    def filler(self, start, room):
        """A conversation of at most ``room`` (1 or more) frames, to end the capture on its exact count."""
        server = self.rng.choice(self.quake_up)
        client = self._client()
        if room == 1:
            return Exchange(self.rng, start, client, server["addr"], server["rtt"]).ask(nq.ccreq_server_info()).frames
        return self._quake_info(Exchange(self.rng, start, client, server["addr"], server["rtt"]), server).frames

    def _client(self, six=False):
        """The next client in turn, on a fresh port: a host that refreshed moments ago would look like a
        reflection victim (abuse.reflection), so each waits for all the others before its next refresh."""
        pool = self.clients6 if six else self.clients
        host = pool[self.turns[six] % len(pool)]
        self.turns[six] += 1
        return host, self.rng.randint(32768, 60999)

    def _staggered(self, start, count):
        """A browser sends its requests a few milliseconds apart."""
        times, t = [], start
        for _ in range(count):
            times.append(t)
            t += self.rng.randint(1_000, 6_000)
        return times

    def _exchange(self, start, client, server, address=None):
        rtt = server["rtt"] + self.rng.randint(0, 20_000)
        return Exchange(self.rng, start, client, address or server["addr"], rtt)

    # TeeFrame: gie3 to a few dozen servers; a few old browsers send the vanilla request.
    def _teeframe(self, start):
        six = self.rng.random() < 0.1
        client = self._client(six)
        vanilla = self.rng.random() < 0.05
        pool = self.tee6 if six else self.tee
        servers = self.rng.sample(pool, min(len(pool), self.rng.randint(8, 40)))
        for t, server in zip(self._staggered(start, len(servers)), servers):
            address = server["addr6"] if six else server["addr"]
            yield self._tee_query(self._exchange(t, client, server, address), server, vanilla).frames

    def _tee_query(self, exchange, server, vanilla):
        token = self.rng.getrandbits(8)
        if vanilla:
            reply = [] if server["down"] else [self._inf3(token, server)]
            return exchange.ask(tf.vanilla_gie3(token), reply)
        extra = self.rng.getrandbits(16)
        combined = (extra << 8) | token
        replies = [] if server["down"] else tf.response_packets(combined, server["clients"], **server["info"])
        return exchange.ask(tf.gie3(extra, token), replies)

    @staticmethod
    def _inf3(token, server):
        info = server["info"]
        return tf.inf3(token, server["clients"][:16], version="0.6.4", name=info["name"], map_name=info["map_name"],
                       game_type=info["game_type"], flags=info["flags"], max_players=16, max_clients=16)

    # NetQuake: server info from a handful of servers; some walks of the players and the rules; a few connects.
    def _netquake(self, start):
        client = self._client()
        servers = self.rng.sample(self.quake, self.rng.randint(4, 16))
        for t, server in zip(self._staggered(start, len(servers)), servers):
            exchange = self._exchange(t, client, server)
            if server["down"]:
                yield exchange.ask(nq.ccreq_server_info()).frames
                continue
            self._quake_info(exchange, server)
            draw = self.rng.random()  # 22% walk the players, 12% the players and the rules, 6% connect
            if draw < 0.34:
                self._quake_players(exchange, server)
            if 0.22 <= draw < 0.34:
                self._quake_rules(exchange, server)
            if draw >= 0.94:
                self._quake_connect(exchange, server)
            yield exchange.frames

    @staticmethod
    def _quake_info(exchange, server):
        host, port = server["addr"]
        reply = nq.ccrep_server_info(f"{host}:{port}", server["host_name"], server["level"], len(server["players"]),
                                     server["maximum"])
        return exchange.ask(nq.ccreq_server_info(), [reply])

    @staticmethod
    def _quake_players(exchange, server):
        for player in server["players"]:
            exchange.ask(nq.ccreq_player_info(player[0]), [nq.ccrep_player_info(*player)])

    @staticmethod
    def _quake_rules(exchange, server):
        asked = ""
        for rule, value in server["rules"]:
            exchange.ask(nq.ccreq_rule_info(asked), [nq.ccrep_rule_info(rule, value)])
            asked = rule
        exchange.ask(nq.ccreq_rule_info(asked), [nq.ccrep_rule_info()])

    def _quake_connect(self, exchange, server):
        if len(server["players"]) >= server["maximum"]:
            exchange.ask(nq.ccreq_connect(), [nq.ccrep_reject("Server is full.\n")])
        else:
            exchange.ask(nq.ccreq_connect(), [nq.ccrep_accept(self.rng.randint(1024, 65535))])

    # Odamex: the master's list, then a handful of the servers it lists; some launchers add a 4-byte key.
    def _odamex(self, start):
        client = self._client()
        master = self.rng.choice(self.masters)
        listing = [server["addr"] for server in self.odamex]
        exchange = Exchange(self.rng, start, client, master, self.rng.randint(20_000, 120_000))
        yield exchange.ask(od.request(), [od.master_list(listing)]).frames
        servers = self.rng.sample(self.odamex, self.rng.randint(4, 16))
        for t, server in zip(self._staggered(exchange.t, len(servers)), servers):
            key = self.rng.getrandbits(32).to_bytes(4, "little") if self.rng.random() < 0.2 else None
            reply = [] if server["down"] else [od.server_info(token=self.rng.getrandbits(31), key=key,
                                                              **server["info"])]
            yield self._exchange(t, client, server).ask(od.request(key), reply).frames

    # Soldat: one TCP connection to a lobby: handshake, request, the list in segments, both FINs.
    def _soldat(self, start):
        lobby, encoding = self.rng.choice(self.lobbies)
        rtt = self.rng.randint(20_000, 150_000)
        connection = TcpExchange(self.rng, start, self._client(), lobby, rtt)
        connection.segment(True, SYN)
        connection.segment(False, SYN | ACK, after=rtt)
        connection.segment(True, ACK, after=self.rng.randint(20, 200))
        self._soldat_request(connection, encoding)
        self._soldat_list(connection, encoding)
        connection.segment(False, FIN | ACK, after=self.rng.randint(50, 500))
        connection.segment(True, ACK, after=rtt // 2)
        connection.segment(True, FIN | ACK, after=self.rng.randint(50, 2_000))
        connection.segment(False, ACK, after=rtt)
        yield connection.frames

    def _soldat_request(self, connection, encoding):
        filters = list(sp.FILTERS)
        filters[0] = self.rng.choice((0, 42, 42))
        filters[11] = self.rng.choice((-1, -1, -1, 0, 1, 2, 3, 6))
        request = sp.request(filters, encoding)
        parts = [request[:5], request[5:]] if self.rng.random() < 0.3 else [request]  # as the peer's client
        for part in parts:
            connection.segment(True, PSH | ACK, part, after=self.rng.randint(20, 400))

    def _soldat_list(self, connection, encoding):
        """The lobby's reply in segments of up to 1460 bytes, often smaller; the client acknowledges every
        second one."""
        entries = self.rng.sample(self.soldat, self.rng.randint(5, 45))
        reply = sp.lobby_reply(entries, encoding)
        pos, index = 0, 0
        while pos < len(reply):
            size = 1460 if self.rng.random() < 0.6 else self.rng.randint(100, 1400)
            after = connection.rtt if index == 0 else self.rng.randint(30, 300)
            connection.segment(False, PSH | ACK, reply[pos:pos + size], after=after)
            pos, index = pos + size, index + 1
            if index % 2 == 0:
                connection.segment(True, ACK, after=self.rng.randint(50, 500))


def query_frames(count, seed=7):
    """Exactly ``count`` (µs, frame) pairs in time order: refreshes start at random times, their
    conversations run side by side, and a heap merges their frames."""
    rng = random.Random(seed)
    mix = QueryMix(rng)
    heap, order, room, now = [], 0, count, 0
    while room:
        now += max(1, int(rng.expovariate(1 / GAP_US)))
        for frames in mix.refresh(now):
            if len(frames) > room:
                frames = mix.filler(now, room)
            for t, data in frames:
                heapq.heappush(heap, (t, order, data))
                order += 1
            room -= len(frames)
            if not room:
                break
        while heap and heap[0][0] <= now:  # every later refresh starts after ``now``
            t, _, data = heapq.heappop(heap)
            yield t, data
    while heap:
        t, _, data = heapq.heappop(heap)
        yield t, data


def write_query(path, count, seed=7):
    start = int(capkit.DEFAULT_TS) * 1_000_000
    capkit.write_pcap_us(path, ((start + t, data) for t, data in query_frames(count, seed)))


WRITERS = {"mixed": write_mixed, "query": write_query}


# -- running and measuring ------------------------------------------------------------------------------------

def run(cmd):
    """Run a command with stdout to /dev/null; return (seconds, peak RSS in MB, CPU seconds: user and system, of
    the process and the children it waited for)."""
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
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def summarize(samples, frames):
    """Median frames/s, median µs/frame, the largest peak RSS and the median CPU seconds of (seconds, MB, CPU
    seconds) samples."""
    seconds = statistics.median(s for s, _, _ in samples)
    return {"fps": frames / seconds, "us": seconds / frames * 1e6, "rss": max(m for _, m, _ in samples),
            "cpu": statistics.median(c for _, _, c in samples)}


FLOOR_PLAIN = """
import struct, sys, time
start = time.perf_counter()
count = 0
with open(sys.argv[1], "rb") as handle:
    head = handle.read(24)
    record = struct.Struct(("<" if head[:4] in (b"\\xd4\\xc3\\xb2\\xa1", b"\\x4d\\x3c\\xb2\\xa1") else ">") + "IIII")
    buffer, pos = b"", 0
    while True:
        block = handle.read(1 << 20)
        if not block:
            break
        buffer, pos = buffer[pos:] + block, 0
        end = len(buffer)
        while pos + 16 <= end:
            after = pos + 16 + record.unpack_from(buffer, pos)[2]
            if after > end:
                break
            count += 1
            pos = after
print(count, time.perf_counter() - start)
"""

FLOOR_READER = """
import sys, time
try:
    from dissect.capture.sources import open_capture
except ImportError:  # a build from before the sources module (open_capture was in files)
    from dissect.capture.files import open_capture
start = time.perf_counter()
count = 0
for _ in open_capture(sys.argv[1]):
    count += 1
print(count, time.perf_counter() - start)
"""


def timed_loop(python, code, path):
    """(frames, seconds) as printed by ``code`` run on ``path`` in a subprocess of ``python`` (a command)."""
    out = subprocess.run(python + ["-c", code, path], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"floor loop failed: {out.stderr.strip()[-300:]}")
    count, seconds = out.stdout.split()
    return int(count), float(seconds)


def floor(path, python, runs):
    """Median frames/s of the bare pcap loop (None for a file that is not plain pcap) and of dissect's reader,
    and the frames the reader counted."""
    plain = None
    if is_plain_pcap(path):
        plain = [timed_loop([sys.executable], FLOOR_PLAIN, path) for _ in range(runs)]
    reader = [timed_loop(python, FLOOR_READER, path) for _ in range(runs)]
    return (_median_rate(plain) if plain else None), _median_rate(reader), reader[0][0]


def _median_rate(samples):
    return samples[0][0] / statistics.median(seconds for _, seconds in samples)


def is_plain_pcap(path):
    with open(path, "rb") as handle:
        return handle.read(4) in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")


# -- the dissect under test ---------------------------------------------------------------------------------------

PROBE = ("import json, os, platform, dissect; print(json.dumps({'compiled': dissect.compiled(), "
         "'python': platform.python_version(), 'where': os.path.dirname(dissect.__file__)}))")


def interpreter(dissect_cmd):
    """The part of the dissect command before ``-m dissect``; for an installed ``dissect`` script (what ``pip
    install`` writes, its first line naming its Python), what comes before the script and that Python. None for
    any other command."""
    for i in range(len(dissect_cmd) - 1):
        if dissect_cmd[i] == "-m" and dissect_cmd[i + 1] == "dissect":
            return dissect_cmd[:i]
    if dissect_cmd:
        python = script_python(shutil.which(dissect_cmd[-1]) or dissect_cmd[-1])  # a bare name: as PATH finds it
        if python is not None:
            return dissect_cmd[:-1] + [python]
    return None


def script_python(path):
    """The Python that the script at ``path`` names on its first line (``#!/venv/bin/python``), or None."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    return words[0] if len(words) == 1 and "python" in os.path.basename(words[0]) else None


def describe_build(python):
    if python is None:
        return "dissect: build unknown (the command has no '-m dissect' and is no installed dissect script)"
    out = subprocess.run(python + ["-c", PROBE], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the dissect command's Python cannot import dissect: {out.stderr.strip()[-300:]}")
    found = json.loads(out.stdout)
    kind = "Cython-compiled" if found["compiled"] else "pure-Python"
    return f"dissect {kind} build from {found['where']}, Python {found['python']}"


def tshark_version(tshark):
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
    return platform.processor() or "unknown cpu"


def header(python, tshark, baseline=None):
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    base = "" if baseline is None else f" Baseline: {describe_build(interpreter(baseline))}."
    return (f"{date}. Machine: {os.cpu_count()} cores, {machine()}. {describe_build(python)}.{base} "
            f"{tshark_version(tshark)}.")


# -- captures ---------------------------------------------------------------------------------------------------

def captures(args, workdir):
    """(mix, path, frames) of every capture to measure, written when not already kept."""
    if args.capture:
        return [("given", args.capture, None)]
    folder = args.keep_dir or workdir
    os.makedirs(folder, exist_ok=True)
    out = []
    for mix in (MIXES if args.mix == "both" else (args.mix,)):
        for size in args.sizes:
            path = os.path.join(folder, f"{mix}-{size}.pcap")
            if not os.path.exists(path):
                write_atomically(WRITERS[mix], path, size)
            out.append((mix, path, size))
    return out


def write_atomically(writer, path, size):
    """A capture interrupted while being written never passes for a finished one."""
    partial = path + ".part"
    writer(partial, size)
    os.replace(partial, path)


# -- the tables ---------------------------------------------------------------------------------------------------

def speed_rows(mix, path, frames, cmd, tshark, args, baseline=None, verdicts=None):
    """The rows of one capture: each view of dissect beside its tshark peer (and the baseline build's, run in
    the same rounds). With ``verdicts`` a list, each view's (capture, view, target, ratio, -j ratio or None) is
    added to it for ``verdict_table``."""
    label = f"{mix}, {frames:,} frames, {os.path.getsize(path) / 1e6:.1f} MB"
    jobs = ["-j", str(args.jobs)] if args.jobs > 1 else None
    for view in args.views:
        ours, theirs, target = VIEWS[view]
        peer = [tshark, "-r", path] + theirs if tshark else None
        commands = [cmd + ours + [path], peer, cmd + jobs + ours + [path] if jobs else None]
        if baseline:
            commands += [baseline + ours + [path], baseline + jobs + ours + [path] if jobs else None]
        summaries = [summarize(taken, frames) if taken else None for taken in alternate(commands, args.runs)]
        peer = summaries[1]
        names = [view, None, f"{view} -j {args.jobs}", f"{view} (baseline)", f"{view} -j {args.jobs} (baseline)"]
        for name, ours in zip(names, summaries):
            if name and ours:
                print(row(label, name, ours, peer, target, " -j " not in name), flush=True)
        if peer is not None and verdicts is not None:
            one, parallel = (ours["fps"] / peer["fps"] if ours else None for ours in (summaries[0], summaries[2]))
            verdicts.append((f"{mix}, {frames:,} frames", view, target, one, parallel))


def alternate(commands, runs):
    """``runs`` rounds of the commands in turn (None: skipped); the (seconds, MB, CPU seconds) samples of each."""
    samples = [[] for _ in commands]
    for _ in range(runs):
        for command, taken in zip(commands, samples):
            if command:
                taken.append(run(command))
    return samples


TABLE_HEAD = ("| capture | view | dissect frames/s | tshark frames/s | ratio (target) | met? | ratio by CPU time | "
              "dissect µs/frame | peak RSS dissect / tshark |\n|---|---|---:|---:|---:|---|---:|---:|---|")


def row(label, view, ours, theirs, target, one_process=True):
    """A table row. The ratio by CPU time is tshark's median CPU seconds over dissect's (see the module's
    docstring). It is left out for ``-j``, whose CPU seconds add up its processes' and measure work, not speed."""
    if theirs is None:
        return (f"| {label} | {view} | {ours['fps']:,.0f} | (no tshark) | ({target}x) | | | {ours['us']:.1f} | "
                f"{ours['rss']:.0f} MB / |")
    ratio = ours["fps"] / theirs["fps"]
    met = "yes" if ratio >= target else "no"
    by_cpu = f"{theirs['cpu'] / ours['cpu']:.2f}x" if one_process and ours["cpu"] > 0 else "—"
    return (f"| {label} | {view} | {ours['fps']:,.0f} | {theirs['fps']:,.0f} | {ratio:.2f}x ({target}x) | {met} | "
            f"{by_cpu} | {ours['us']:.1f} | {ours['rss']:.0f} MB / {theirs['rss']:.0f} MB |")


def verdict_table(verdicts, jobs):
    """Each capture and view against its target, one process: the ratio to tshark, whether it meets the target,
    and if not how many times faster dissect would have to be (target / ratio); with -j, its ratio and how many
    times one process's speed it reaches. Then how many cells meet their targets."""
    head = "| capture | view | target | one process | met? | speed still needed |"
    if jobs > 1:
        head += f" -j {jobs} | -j {jobs} / one process (target: near {jobs}x) |"
    lines = ["\nVerdict: each target in one process, from the medians above.\n", head,
             "|---|---|" + "---:|" * 2 + "---|---:|" + ("---:|" * 2 if jobs > 1 else "")]
    met = 0
    for label, view, target, ratio, parallel in verdicts:
        hit = ratio >= target
        met += hit
        cells = [label, view, f"{target}x", f"{ratio:.2f}x", "yes" if hit else "no",
                 "—" if hit else f"{target / ratio:.2f}x"]
        if jobs > 1:
            cells += [f"{parallel:.2f}x", f"{parallel / ratio:.2f}x"] if parallel is not None else ["", ""]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\nTargets met in one process: {met} of {len(verdicts)}.")
    return "\n".join(lines)


def floor_table(measured):
    print("\nFloor: walking the records and nothing else (timed inside the process, start-up excluded).\n")
    print("| capture | bare pcap loop (struct) | dissect reader loop (open_capture) |\n|---|---:|---:|")
    for label, plain, reader in measured:
        print(f"| {label} | {_rate(plain)} | {_rate(reader)} |", flush=True)


def _rate(fps):
    return "n/a (not plain pcap)" if fps is None else f"{fps:,.0f} frames/s ({1e6 / fps:.2f} µs/frame)"


def memory_rows(small, big, cmd, jobs):
    """Peak memory on both captures: RSS of the one process, and for -j the sum over its processes."""
    head = "| capture | summary peak RSS | --stats peak RSS |"
    if jobs > 1:
        head += f" -j {jobs} summary, all processes | -j {jobs} --stats, all processes |"
    print("\n" + head)
    print("|---" * (head.count("|") - 1) + "|")
    for path in (small, big):
        cells = [f"{os.path.getsize(path) / 1e6:,.0f} MB"]
        cells += [f"{run(cmd + view + [path])[1]:.0f} MB" for view in ([], ["--stats"])]
        if jobs > 1:
            cells += [f"{tree_peak_pss(cmd + ['-j', str(jobs)] + view + [path]):.0f} MB (PSS)"
                      for view in ([], ["--stats"])]
        print("| " + " | ".join(cells) + " |", flush=True)


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


# -- main -------------------------------------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50000,400000", help="frames per capture, comma-separated")
    parser.add_argument("--mix", choices=MIXES + ("both",), default="both")
    parser.add_argument("--views", default=",".join(VIEWS), help=f"some of {','.join(VIEWS)}")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs per view; the table gives medians")
    parser.add_argument("--jobs", type=int, default=1, help="also run each dissect view with -j JOBS (1: skip)")
    parser.add_argument("--keep-dir", help="write the captures here, and reuse the ones already here")
    parser.add_argument("--capture", help="measure this capture only (labelled 'given')")
    parser.add_argument("--dissect", default=None, help='the dissect command (default: "python -m dissect" with '
                                                        "this interpreter)")
    parser.add_argument("--baseline", default=None, help="another dissect command, run in the same alternating "
                                                         "rounds: its rows are marked (baseline)")
    parser.add_argument("--big-gb", type=float, default=0.0,
                        help="also write a capture of this many GB and measure dissect's peak memory on it")
    args = parser.parse_args(argv)
    args.sizes = _sizes(parser, args.sizes)
    args.views = _views(parser, args.views)
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    return args


def _sizes(parser, text):
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--sizes: not a list of numbers: {text}")
    if not sizes or min(sizes) < 1:
        parser.error("--sizes: give one or more frame counts above 0")
    return sizes


def _views(parser, text):
    views = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [view for view in views if view not in VIEWS]
    if unknown or not views:
        parser.error(f"--views: {', '.join(unknown) or 'none given'}; choose from {', '.join(VIEWS)}")
    return views


def main(argv=None):
    args = parse_args(argv)
    cmd = shlex.split(args.dissect) if args.dissect else ["env", f"PYTHONPATH={REPO}", sys.executable, "-m", "dissect"]
    python = interpreter(cmd)
    baseline = shlex.split(args.baseline) if args.baseline else None
    tshark = shutil.which("tshark")
    args.capture, args.keep_dir = (os.path.abspath(p) if p else None for p in (args.capture, args.keep_dir))
    workdir = tempfile.mkdtemp(prefix="dissect-bench-")
    here = os.getcwd()
    os.chdir(workdir)  # python -m puts the current folder first on the path: it must not choose the dissect
    try:
        print(header(python, tshark, baseline), flush=True)
        measured = captures(args, workdir)
        if args.runs < 3:
            print(f"Only {args.runs} run(s) per figure: medians of fewer than 3 runs are noisy.")
        print("\n" + TABLE_HEAD, flush=True)
        floors, verdicts = [], []
        for mix, path, frames in measured:
            plain, reader, counted = floor(path, python or [sys.executable], args.runs)
            frames = frames or counted
            speed_rows(mix, path, frames, cmd, tshark, args, baseline, verdicts)
            floors.append((f"{mix}, {frames:,} frames", plain, reader))
        if verdicts:
            print(verdict_table(verdicts, args.jobs), flush=True)
        floor_table(floors)
        if args.big_gb:
            _, first, frames = measured[0]
            frames = frames or timed_loop(python or [sys.executable], FLOOR_READER, first)[0]
            big = os.path.join(workdir, "big.pcap")
            write_mixed(big, int(frames * args.big_gb * 1e9 / os.path.getsize(first)))
            memory_rows(first, big, cmd, args.jobs)
    finally:
        os.chdir(here)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
