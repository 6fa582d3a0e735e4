"""A small NetQuake server and query client that talk over real UDP sockets.

They write what real Quake writes: the 4-byte big-endian header, and the payload
longs (port, colors, frags, connect_time) little-endian. Used to make the sample
captures and by the live-capture tests.

    python tools/netquake_peer.py serve --port 26000
    python tools/netquake_peer.py query 127.0.0.1 26000
"""

import argparse
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from udp_responder import UdpResponder  # noqa: E402

CTL = 0x8000
RULES = [("fraglimit", "20"), ("timelimit", "15"), ("teamplay", "0"), ("noexit", "0"),
         ("sv_friction", "4"), ("sv_gravity", "800"), ("sv_maxspeed", "320")]
PLAYERS = [("Ranger", 4 * 16 + 13, 12, 754), ("Grunt", 0, -1, 31), ("Shambler", 13 * 16 + 2, 3, 12)]


def control(command, body=b""):
    """A control packet: flags 0x8000, big-endian length inclusive of the header, command, body."""
    return struct.pack(">HHB", CTL, 5 + len(body), command) + body


def cstr(text):
    return text.encode("latin-1") + b"\0"


def ccreq_connect(game="QUAKE", version=3):
    return control(0x01, cstr(game) + bytes([version]))


def ccreq_server_info(game="QUAKE", version=3):
    return control(0x02, cstr(game) + bytes([version]))


def ccreq_player_info(number):
    return control(0x03, bytes([number]))


def ccreq_rule_info(rule=""):
    return control(0x04, cstr(rule))


def ccrep_accept(port):
    return control(0x81, struct.pack("<i", port))


def ccrep_reject(reason):
    return control(0x82, cstr(reason))


def ccrep_server_info(address, host, level, current, maximum, version=3):
    return control(0x83, cstr(address) + cstr(host) + cstr(level) + bytes([current, maximum, version]))


def ccrep_player_info(number, name, colors, frags, connect_time, address):
    return control(0x84, bytes([number]) + cstr(name) + struct.pack("<iii", colors, frags, connect_time)
                   + cstr(address))


def ccrep_rule_info(rule=None, value=None):
    """With no rule: the 5-byte end-of-rules reply."""
    if rule is None:
        return control(0x85)
    return control(0x85, cstr(rule) + cstr(value))


def data_packet(flags, sequence, data=b""):
    return struct.pack(">HHI", flags, 8 + len(data), sequence) + data


class Server(UdpResponder):
    """Answers control requests like a Quake 1.06 server with three players."""

    def __init__(self, host="127.0.0.1", port=26000, max_players=8, full=False):
        super().__init__(host, port)
        self.max_players = max_players
        self.full = full
        self.game_socks = []

    def stop(self):
        super().stop()
        for sock in self.game_socks:
            sock.close()

    def replies(self, packet):
        reply = self.answer(packet)
        return [reply] if reply else []

    def answer(self, packet):
        if len(packet) < 5 or packet[0:2] != b"\x80\x00":
            return None
        command, body = packet[4], packet[5:]
        if command == 0x02:
            host, port = self.address
            return ccrep_server_info(f"{host}:{port}", "dissect test server", "e1m1", len(PLAYERS),
                                     self.max_players)
        if command == 0x03 and body and body[0] < len(PLAYERS):
            name, colors, frags, seconds = PLAYERS[body[0]]
            return ccrep_player_info(body[0], name, colors, frags, seconds, f"192.0.2.{10 + body[0]}:26000")
        if command == 0x04:
            asked = body.split(b"\0", 1)[0].decode("latin-1")
            names = [rule for rule, _ in RULES]
            index = 0 if not asked else (names.index(asked) + 1 if asked in names else len(names))
            return ccrep_rule_info(*RULES[index]) if index < len(RULES) else ccrep_rule_info()
        if command == 0x01:
            if self.full:
                return ccrep_reject("Server is full.\n")
            game = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            game.bind((self.address[0], 0))
            self.game_socks.append(game)
            return ccrep_accept(game.getsockname()[1])
        return None


def query(host, port, timeout=1.0, connect=True):
    """A client session: server info, a player walk, a rule walk, then a connect. Returns the replies."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(timeout)
    target = (host, port)
    replies = []

    def ask(packet):
        sock.sendto(packet, target)
        try:
            reply = sock.recv(2048)
        except socket.timeout:
            return None
        replies.append(reply)
        return reply

    info = ask(ccreq_server_info())
    players = info[5:].split(b"\0")[3][0] if info else 0
    for number in range(players):
        ask(ccreq_player_info(number))
    rule = ""
    while True:
        reply = ask(ccreq_rule_info(rule))
        if reply is None or len(reply) == 5:
            break
        rule = reply[5:].split(b"\0", 1)[0].decode("latin-1")
    if connect:
        accepted = ask(ccreq_connect())
        if accepted and accepted[4] == 0x81:
            game_port = struct.unpack("<i", accepted[5:9])[0]
            sock.sendto(data_packet(0x0010, 1, b"\x01"), (host, game_port))
            sock.sendto(data_packet(0x0009, 0, b"\x04stuff"), (host, game_port))
    sock.close()
    return replies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=26000)
    ask = sub.add_parser("query")
    ask.add_argument("host")
    ask.add_argument("port", type=int)
    args = parser.parse_args()
    if args.command == "serve":
        Server(args.host, args.port).start().serve_forever()
    else:
        for reply in query(args.host, args.port):
            print(reply.hex(" "))


if __name__ == "__main__":
    main()
