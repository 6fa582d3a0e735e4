"""Servers on a thread, the base of the test peers in tools/: UDP responders, and the Soldat lobby's TCP."""

import socket
import threading


def bound_socket(kind, host, port):
    sock = socket.socket(socket.AF_INET, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


class ServerThread:
    """A bound socket served on a daemon thread by ``_loop``, which returns once ``_stop`` is set."""

    def __init__(self, sock):
        self.sock = sock
        self.address = sock.getsockname()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self._stop.set()
        self.thread.join(timeout=2)
        self.sock.close()

    def serve_forever(self):
        try:
            self.thread.join()
        except KeyboardInterrupt:
            self.stop()

    def _loop(self):
        raise NotImplementedError


class UdpResponder(ServerThread):
    """Subclasses define ``replies(packet)``: the datagrams to send back (none, one or several)."""

    def __init__(self, host="127.0.0.1", port=0):
        super().__init__(bound_socket(socket.SOCK_DGRAM, host, port))

    def replies(self, packet):
        raise NotImplementedError

    def _loop(self):
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                packet, peer = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            for reply in self.replies(packet):
                self.sock.sendto(reply, peer)
