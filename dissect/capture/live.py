"""Live capture with scapy (imported here only, so that reading files starts fast).

LiveCapture yields Frames like the file readers do, until the packet count or
duration is reached or ``stop()`` is called (from a signal handler), and can
write what it captured to a pcap file as it goes.
"""

import logging
import select
import socket
import struct
import sys
import time

from .files import Frame
from .writer import WriteError, open_writer, pick_format, whole_micros

PACKET_OUTGOING = 4
SOL_PACKET, PACKET_STATISTICS = 263, 6
ARPHRD_LINKTYPES = {1: 1, 772: 1, 65534: 101, 776: 101, 778: 101}  # Ethernet and loopback, tun/sit/gre
SNAPLEN = 262144
RECEIVE_BUFFER = 8 * 1024 * 1024   # absorbs bursts while a frame is being dissected (dumpcap uses 2 MiB)
# Linux's SO_RCVBUFFORCE (as root, a receive buffer past net.core.rmem_max), which Python's socket module does not
# name: without it the packet socket kept the kernel's default of about 200 KiB, and a burst of a few thousand
# datagrams was mostly dropped.
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33 if sys.platform.startswith("linux") else None)


class LiveError(Exception):
    """A one-line reason why live capture cannot start."""


def list_interfaces():
    """(index, name) of every interface, as ``dumpcap -D`` lists them."""
    return sorted(socket.if_nameindex())


def in_microseconds(ts):
    """``ts`` to the microsecond, the float a pcap of it reads back as (seconds + micros * 1e-6): what the views show
    of a live frame is what they show of it in the -w file."""
    seconds, micros = divmod(whole_micros(ts), 1_000_000)
    return seconds + micros * 1e-6


def interface_name(iface):
    """The interface ``-i`` names: by its name, or by its number in ``-D``'s list (as tshark takes them); else
    LiveError listing them."""
    try:
        socket.if_nametoindex(iface)
        return iface
    except OSError:
        pass
    numbered = dict(list_interfaces())
    if iface.isascii() and iface.isdigit() and int(iface) in numbered:
        return numbered[int(iface)]
    names = ", ".join(f"{index}. {name}" for index, name in sorted(numbered.items()))
    raise LiveError(f"no such interface: {iface} (interfaces: {names}; one at a time, no 'any')")


def _scapy_listen_socket():
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    try:
        from scapy.arch.linux import L2ListenSocket
        return L2ListenSocket
    except ImportError:  # not Linux: the platform's own listen socket
        import scapy.all  # noqa: F401
        from scapy.config import conf
        return conf.L2listen


def _widen_receive_buffer(sock):
    """Make the capture socket's receive buffer RECEIVE_BUFFER: forced where the system allows it (root), else as
    large as net.core.rmem_max lets it be."""
    if sock is None:
        return
    for option in (SO_RCVBUFFORCE, socket.SO_RCVBUF):
        if option is None:
            continue
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, RECEIVE_BUFFER)
            return
        except OSError:
            continue


class LiveCapture:
    def __init__(self, iface, bpf=None, count=None, duration=None, write=None, write_format=None):
        self.iface = iface = interface_name(iface)
        self.count = count
        self.duration = duration
        self.stopped = False
        self.received = 0
        self.dropped = None
        self.writer = None       # the -w writer while it takes frames
        self.write_error = None  # why writing -w failed (then capturing stopped), or None
        self._output = None      # the -w writer, kept after it is done for the times it could not hold
        listen = _scapy_listen_socket()
        self.sock = self._open(listen, iface, bpf)
        _widen_receive_buffer(getattr(self.sock, "ins", None))
        try:
            hatype = self.sock.ins.getsockname()[3]
        except (AttributeError, OSError, IndexError):
            hatype = 1
        self.linktype = ARPHRD_LINKTYPES.get(hatype, 1)
        self.loopback = hatype == 772
        if write:
            self._open_writer(write, write_format)

    @staticmethod
    def _open(listen, iface, bpf):
        from scapy.error import Scapy_Exception
        try:
            return listen(iface=iface, filter=bpf)
        except PermissionError:
            raise LiveError("capturing needs root or CAP_NET_RAW") from None
        except Scapy_Exception as exc:
            raise LiveError(f"bad capture filter {bpf!r}: {exc}") from None
        except OSError as exc:
            if exc.errno in (1, 13):
                raise LiveError("capturing needs root or CAP_NET_RAW") from None
            raise LiveError(f"cannot capture on {iface}: {exc.strerror or exc}") from None

    def _open_writer(self, path, file_format):
        try:
            self.writer = self._output = open_writer(path, pick_format(path, file_format), self.linktype)
        except WriteError as exc:
            self.sock.close()
            raise LiveError(str(exc)) from None

    @property
    def time_error(self):
        """The error of the -w times written as the nearest the file holds, or None."""
        return self._output.not_as_read_error() if self._output is not None else None

    def stop(self, *_):
        self.stopped = True

    def frames(self):
        """Frames as they arrive. After a stop request, what the kernel already queued is still read."""
        deadline = time.monotonic() + self.duration if self.duration else None
        last_flush = time.monotonic()
        while True:
            if self.count is not None and self.received >= self.count:
                break
            now = time.monotonic()
            draining = self.stopped or (deadline is not None and now >= deadline)
            wait = 0.0 if draining else 0.2 if deadline is None else max(0.0, min(0.2, deadline - now))
            try:
                ready, _, _ = select.select([self.sock.ins], [], [], wait)
            except InterruptedError:
                continue
            if self.writer is not None and now - last_flush > 0.5:
                self._write(self.writer.flush)
                last_flush = now
            if not ready:
                if draining:
                    break
                continue
            data, ts = self._receive()
            if data is None:
                continue
            self.received += 1
            frame = Frame(self.received, ts, len(data), len(data), self.linktype, data)
            if self.writer is not None:
                self._write(self.writer.write, frame)
            yield frame

    def _write(self, action, *args):
        """Write to the -w file; a failure (a full disk) is kept in ``write_error`` and stops the capture."""
        try:
            action(*args)
        except WriteError as exc:
            self.write_error = str(exc)
            self.stopped = True
            self.writer.abandon()
            self.writer = None

    def _receive(self):
        sock = self.sock
        try:
            if hasattr(sock, "_recv_raw"):
                data, sa_ll, ts = sock._recv_raw(sock.ins, SNAPLEN)
                # On loopback every packet is seen leaving and arriving: keep one (as libpcap does).
                if self.loopback and sa_ll and sa_ll[2] == PACKET_OUTGOING:
                    return None, None
            else:
                _, data, ts = sock.recv_raw(SNAPLEN)
        except (OSError, ValueError):
            return None, None
        if not data:
            return None, None
        return bytes(data), in_microseconds(ts if ts else time.time())

    def close(self):
        """Stop, read the kernel's drop counter where the platform has one, flush and close the -w file."""
        try:
            _packets, drops = struct.unpack("II", self.sock.ins.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
            self.dropped = drops
        except (AttributeError, OSError, struct.error):
            self.dropped = None
        try:
            self.sock.close()
        except OSError:
            pass
        if self.writer is not None:
            self._write(self.writer.finish, True)  # a file also synced to the disk
            self.writer = None
