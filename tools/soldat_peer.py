"""A Soldat lobby and client that talk the client-lobby protocol over real TCP sockets.

The lobby writes its reply in small chunks of awkward sizes, with TCP_NODELAY and a
pause between writes, so that lines are split across segments and one segment may
finish several lines. Either separator encoding: Latin-1 A9 or UTF-8 C2 A9.

    python tools/soldat_peer.py lobby --port 13073 [--utf8]
    python tools/soldat_peer.py query 127.0.0.1 13073 [--utf8]
"""

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from udp_responder import ServerThread, bound_socket  # noqa: E402

LATIN1, UTF8 = "latin-1", "utf-8"
CHUNKS = (7, 31, 3, 64, 1, 90, 17, 45)

SERVERS = [
    (42, "192.0.2.10", 23073, 3, 5, 12, "ctf_Ash", "Soldat CTF Classic", 2, 5, 5, 2, 0, 0, 1, 1, 0, 0, "DE"),
    (42, "192.0.2.11", 23074, 1, 0, 16, "Blox", "Pointmatch Ünited", 0, 3, 4, 3, 0, 1, 1, 0, 1, 0, "PL"),
    (41, "198.51.100.7", 23073, 6, 7, 10, "htf_Void", "Hold the flag", 1, 0, 6, 1, 1, 0, 1, 1, 0, 1, "A1"),
    (42, "203.0.113.99", 24000, 2, 2, 32, "Arena2", "TM night", 0, 2, 5, 3, 0, 0, 0, 0, 0, 0, "US"),
]
FILTERS = (42, "1", "0", "!", "0", "0", "1", "0", "0", "1", "0", -1, "0")


def line(type_char, fields, encoding=LATIN1):
    """A lobby line: type, © before each field, \\n."""
    sep = "©"
    return (type_char + "".join(sep + str(f) for f in fields) + "\n").encode(encoding)


def request(filters=FILTERS, encoding=LATIN1):
    return line("e", filters, encoding)


def list_begin(count, encoding=LATIN1):
    return line("f", [count], encoding)


def server_entry(fields, encoding=LATIN1):
    return line("g", fields, encoding)


def list_end(encoding=LATIN1):
    return line("h", [""] * 5, encoding)


def lobby_reply(servers=SERVERS, encoding=LATIN1, count=None):
    return (list_begin(len(servers) if count is None else count, encoding)
            + b"".join(server_entry(s, encoding) for s in servers) + list_end(encoding))


def send_chunked(sock, data, chunks=CHUNKS, pause=0.01):
    pos, i = 0, 0
    while pos < len(data):
        size = chunks[i % len(chunks)]
        sock.sendall(data[pos:pos + size])
        pos += size
        i += 1
        time.sleep(pause)


class Lobby(ServerThread):
    def __init__(self, host="127.0.0.1", port=13073, encoding=LATIN1, servers=SERVERS):
        super().__init__(bound_socket(socket.SOCK_STREAM, host, port))
        self.encoding = encoding
        self.servers = servers
        self.sock.listen(8)
        self.sock.settimeout(0.1)

    def _loop(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(2)
                received = b""
                while not received.endswith(b"\n"):
                    part = conn.recv(4096)
                    if not part:
                        break
                    received += part
                if received.startswith(b"e"):
                    send_chunked(conn, lobby_reply(self.servers, self.encoding))
                try:
                    conn.shutdown(socket.SHUT_WR)
                    while conn.recv(4096):
                        pass
                except OSError:
                    pass


def query(host, port, encoding=LATIN1, timeout=3):
    """Send the request in two writes (split inside a field), read to the end line, close."""
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    data = request(encoding=encoding)
    sock.sendall(data[:5])
    time.sleep(0.01)
    sock.sendall(data[5:])
    reply = b""
    while True:
        part = sock.recv(4096)
        if not part:
            break
        reply += part
    sock.close()
    return reply


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("lobby")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=13073)
    serve.add_argument("--utf8", action="store_true")
    ask = sub.add_parser("query")
    ask.add_argument("host")
    ask.add_argument("port", type=int)
    ask.add_argument("--utf8", action="store_true")
    args = parser.parse_args()
    encoding = UTF8 if args.utf8 else LATIN1
    if args.command == "lobby":
        Lobby(args.host, args.port, encoding).start().serve_forever()
    else:
        print(query(args.host, args.port, encoding).decode(encoding, "replace"))


if __name__ == "__main__":
    main()
