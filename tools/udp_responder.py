"""A UDP server on a thread that answers each datagram: the base of the test peers in tools/."""

import socket
import threading


class UdpResponder:
    """Subclasses define ``replies(packet)``: the datagrams to send back (none, one or several)."""

    def __init__(self, host="127.0.0.1", port=0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.address = self.sock.getsockname()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self._stop.set()
        self.sock.close()

    def serve_forever(self):
        try:
            self.thread.join()
        except KeyboardInterrupt:
            self.stop()

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
