"""Quake III Arena / ioquake3 out-of-band server query: getstatus/statusResponse, getinfo/infoResponse.

A dissect protocol plugin. Every out-of-band packet starts with four FF bytes and a text command.
A client asks ``getstatus [challenge]`` or ``getinfo [challenge]``; the server answers
``statusResponse\\n<info string>\\n<players>`` (one ``SCORE PING "NAME"`` line a player) or
``infoResponse\\n<info string>``. An info string is ``\\key\\value`` pairs; ioquake3 caps it at 1024
bytes (MAX_INFO_STRING).
"""

import re

import struct

from dissect import AnalysisRecord, Analyzer, Dissector, Field, FieldTable, FindingTable

U32BE = struct.Struct(">I")
OOB = b"\xff\xff\xff\xff"
PORT = 27960
MAX_INFO_STRING = 1024
REQUESTS = {"getstatus": "statusResponse", "getinfo": "infoResponse"}
REPLIES = {reply: request for request, reply in REQUESTS.items()}
COMMANDS = (*REQUESTS, *REPLIES)
PLAYER_LINE = re.compile(rb'^(-?\d{1,10}) (-?\d{1,10}) "(.*)"$')
MAX_PENDING = 4096

F = FieldTable("quake3", messages=True, title="Quake3", entries=[
    ("header", "Out-of-band header", "uint32", "four FF bytes: a connectionless packet"),
    ("command", "Command", "string", "getstatus, getinfo, statusResponse or infoResponse"),
    ("challenge", "Challenge", "string", "what a request asks the server to echo (optional)"),
    ("info", "Info string", "none", "the server's variables, \\key\\value pairs"),
    ("info.key", "Key", "string", "a server variable's name"),
    ("info.value", "Value", "string", "a server variable's value"),
    ("hostname", "Host name", "string", "generated: the sv_hostname (or hostname) variable"),
    ("map", "Map", "string", "generated: the mapname variable"),
    ("max_clients", "Max clients", "int", "generated: the sv_maxclients variable"),
    ("num_players", "Players", "int", "generated: the player lines of a statusResponse"),
    ("player", "Player", "none", "one player line: score, ping and quoted name"),
    ("player.score", "Score", "int", "the player's score"),
    ("player.ping", "Ping", "int", "the player's ping in milliseconds"),
    ("player.name", "Name", "string", "the player's name, colour codes included"),
    ("request_in", "Request in frame", "uint32", "generated: the frame of the request this reply answers"),
    ("response_time", "Response time", "float", "generated: seconds from the request to this reply"),
])

W = FindingTable("quake3", messages=True, entries=[
    ("truncated", "error", "a reply's command line ends with a newline"),
    ("unknown_command", "note", "the query commands are getstatus, getinfo, statusResponse and infoResponse"),
    ("bad_infostring", "warning", "an info string is \\key\\value pairs: it starts with a backslash and every key "
                                  "has a value"),
    ("info_too_long", "warning", "ioquake3 keeps an info string under MAX_INFO_STRING, 1024 bytes"),
    ("bad_player_line", "warning", 'a player line is SCORE PING "NAME"'),
    ("unanswered", "note", "a server answers getstatus with statusResponse and getinfo with infoResponse"),
])


# A child whose last part is an attribute of the entry (F.player.name is the entry's display name,
# F.info.key its key) is reached through ``children``.
PLAYER_NAME = F.player.children["name"]
INFO_KEY = F.info.children["key"]


class Quake3(Dissector):
    key = "quake3"
    title = "Quake3"
    transports = ("udp",)
    ports = (PORT,)
    fields = F
    findings = W
    analyzer = "dissect_quake3:Quake3Analyzer"
    truncated = W.truncated
    # Valid messages: where dissect's property tests and fuzzers start from.
    examples = (
        OOB + b"getstatus",
        OOB + b"getinfo xxx",
        OOB + b'statusResponse\n\\sv_hostname\\Arena\\mapname\\q3dm17\\sv_maxclients\\16\n5 48 "Sarge"\n',
        OOB + b"infoResponse\n\\hostname\\Arena\\mapname\\q3dm17\\clients\\1",
    )

    def claims(self, payload, packet, on_port):
        if not payload.startswith(OOB):
            return False
        word = payload[4:20].split(b"\n", 1)[0].split(b" ", 1)[0]
        return on_port or word.decode("latin-1") in COMMANDS

    def decode(self, cur, msg, packet):
        cur.number(U32BE, F.header)
        start = cur.pos
        line = _line(cur)
        command, _, challenge = line.partition(" ")
        cur.add(F.command, start, len(command), command)
        cur.last_offset, cur.last_length = start, len(command)
        msg.name = command or "empty"
        msg.values["command"] = command
        if command in REQUESTS:
            if challenge:
                cur.add(F.challenge, start + len(command) + 1, len(challenge), challenge)
            msg.values["challenge"] = challenge
            msg.info = f"{command}" + (f" challenge={challenge}" if challenge else "")
        elif command in REPLIES:
            self._reply(cur, msg, command)
        else:
            cur.flag_last(W.unknown_command, f"command {command!r}")
            msg.info = f"unknown command {command!r}"

    def _reply(self, cur, msg, command):
        info = _info_string(cur, msg)
        values = msg.values
        values["info"] = info
        values["hostname"] = info.get("sv_hostname", info.get("hostname"))
        values["map"] = info.get("mapname")
        values["max_clients"] = _int(info.get("sv_maxclients"))
        for spec, name in ((F.hostname, "hostname"), (F.map, "map"), (F.max_clients, "max_clients")):
            if values[name] is not None:
                cur.add(spec, 0, 0, values[name], generated=True)
        if command == "statusResponse":
            players = _players(cur)
            values["players"] = players
            cur.add(F.num_players, 0, 0, len(players), generated=True)
        msg.info = f'{command} "{values["hostname"] or ""}" map={values["map"]}' + (
            f" players {len(values['players'])}/{values['max_clients']}" if command == "statusResponse" else "")


def _line(cur):
    """The text up to the next newline (or the end); the cursor moves past the newline."""
    end = cur.data.find(b"\n", cur.pos, cur.end)
    stop = cur.end if end < 0 else end
    text = bytes(cur.data[cur.pos:stop]).decode("latin-1")
    cur.pos = cur.end if end < 0 else end + 1
    return text


def _info_string(cur, msg):
    start = cur.pos
    end = cur.data.find(b"\n", start, cur.end)
    stop = cur.end if end < 0 else end
    raw = bytes(cur.data[start:stop])
    info = {}
    with cur.subtree(F.info):
        if raw and not raw.startswith(b"\\"):
            cur.finding(W.bad_infostring, "the info string does not start with a backslash", start, len(raw))
        parts = raw.split(b"\\")[1:] if raw.startswith(b"\\") else []
        offset = start + 1
        for index in range(0, len(parts), 2):
            key = parts[index].decode("latin-1")
            cur.add(INFO_KEY, offset, len(parts[index]), key)
            offset += len(parts[index]) + 1
            if index + 1 >= len(parts):
                cur.finding(W.bad_infostring, f"key {key!r} has no value", offset - 1, 0)
                break
            value = parts[index + 1].decode("latin-1")
            cur.add(F.info.value, offset, len(parts[index + 1]), value)
            offset += len(parts[index + 1]) + 1
            info[key] = value
        cur.pos = stop
    if len(raw) >= MAX_INFO_STRING:
        cur.finding(W.info_too_long, f"the info string is {len(raw)} bytes", start, len(raw))
    if end >= 0:
        cur.pos = end + 1
    return info


def _players(cur):
    players = []
    while cur.pos < cur.end:
        start = cur.pos
        end = cur.data.find(b"\n", start, cur.end)
        stop = cur.end if end < 0 else end
        raw = bytes(cur.data[start:stop])
        following = cur.end if end < 0 else end + 1
        match = PLAYER_LINE.match(raw)
        if raw and match is None:
            cur.finding(W.bad_player_line, f"{raw[:40]!r} is not a player line", start, len(raw))
        elif match is not None:
            players.append(_player(cur, start, stop, match, len(players) + 1))
        cur.pos = following
    return players



def _player(cur, start, stop, match, number):
    player = {"score": int(match.group(1)), "ping": int(match.group(2)), "name": match.group(3).decode("latin-1")}
    with cur.subtree(F.player, name=f"Player {number}: {player['name']}"):
        cur.add(F.player.score, start, len(match.group(1)), player["score"])
        cur.add(F.player.ping, start + match.start(2), len(match.group(2)), player["ping"])
        cur.add(PLAYER_NAME, start + match.start(3), len(match.group(3)), player["name"])
        cur.pos = stop  # the subtree spans the line, its newline not included
    return player


def _int(text):
    try:
        return int(text) if text is not None and len(text) < 20 else None
    except ValueError:
        return None


class Quake3Analyzer(Analyzer):
    """Pairs each reply with the last request of its kind from the same client to the same server;
    one ``status`` analysis record a reply; unanswered requests are noted at the end."""

    def __init__(self):
        self.pending = {}  # (client, server, request command) -> (frame, ts)
        self.requests = 0
        self.answered = 0

    def feed(self, record, msg, tree):
        command = msg.values.get("command")
        if command in REQUESTS:
            self.requests += 1
            key = (record.src, record.sport, record.dst, record.dport, command)
            self.pending.pop(key, None)
            self.pending[key] = (record.number, record.ts)
            while len(self.pending) > MAX_PENDING:
                self.pending.pop(next(iter(self.pending)))
            return []
        if command not in REPLIES:
            return []
        request = self.pending.pop((record.dst, record.dport, record.src, record.sport, REPLIES[command]), None)
        result = {"server": f"{record.src}:{record.sport}", "hostname": msg.values.get("hostname"),
                  "map": msg.values.get("map"), "max_clients": msg.values.get("max_clients"),
                  "players": len(msg.values.get("players") or ()), "response_time": None}
        frames = [record.number]
        if request is not None:
            self.answered += 1
            elapsed = max(0.0, record.ts - request[1])
            result["response_time"] = elapsed
            frames.insert(0, request[0])
            if tree:
                msg.fields.append(Field(F.request_in.key, F.request_in.name, 0, 0, request[0], generated=True))
                msg.fields.append(Field(F.response_time.key, F.response_time.name, 0, 0, elapsed,
                                        display=f"{elapsed * 1000:.3f} ms", generated=True))
        summary = f'{command} from {result["server"]}: "{result["hostname"]}" map {result["map"]}'
        return [AnalysisRecord("quake3", "status", frames, result, [], summary)]

    def finish(self):
        out = []
        for (client, cport, server, sport, command), (frame, _) in self.pending.items():
            finding = W.unanswered.at(f"{command} from {client}:{cport} to {server}:{sport} got no reply")
            out.append(AnalysisRecord("quake3", "unanswered", [frame], {"request": command}, [finding],
                                      f"{command} to {server}:{sport} unanswered"))
        self.pending.clear()
        return out

    def merge(self, other):
        self.requests += other.requests
        self.answered += other.answered
        self.pending.update(other.pending)

    def stats(self):
        return {"requests": self.requests, "answered": self.answered}
