"""Dissector registration, port tables, heuristics and decode-as.

Each protocol module defines a Dissector subclass and decorates it with
``@register``. Heuristics run on any port; default ports only decide which
heuristics are tried first. ``-d udp.port==N,PROTO`` forces a dissector.
"""

import re

from .core import Cursor, Message, Truncated, Unterminated

DISSECTORS = {}


def register(cls):
    DISSECTORS[cls.key] = cls
    return cls


class Dissector:
    key = ""
    title = ""
    transports = ("udp",)
    ports = ()
    truncated_code = ""      # finding for a field that runs off the end
    unterminated_code = ""   # finding for a string without terminator (defaults to truncated_code)
    truncated_rule = "every field of the message must be present"

    def claims(self, payload, packet, on_port):
        """Cheap test: is this payload ours? ``on_port`` is true on a default or forced port."""
        raise NotImplementedError

    def decode(self, cur, msg, packet):
        """Read the message through ``cur``; may raise Truncated."""
        raise NotImplementedError

    def observe(self, packet, msg):
        """Learn from a decoded message (conversations, ports); called after decode."""

    def dissect(self, payload, tree=True, packet=None, offset=0):
        """Decode one message; never raises. Unreadable parts become findings."""
        msg = Message(self.key, payload=payload, offset=offset)
        cur = Cursor(msg, payload, tree)
        try:
            self.decode(cur, msg, packet)
        except Unterminated as exc:
            code = self.unterminated_code or self.truncated_code
            msg.add_finding(code, "error", f"{exc.name} is not null-terminated: the string runs off the end "
                                           f"of the message at offset {exc.offset} ({self.truncated_rule})",
                            exc.offset, exc.available)
        except Truncated as exc:
            msg.add_finding(self.truncated_code, "error",
                            f"{exc.name} runs off the end of the message: {exc.needed} bytes needed at offset "
                            f"{exc.offset}, {exc.available} left ({self.truncated_rule})",
                            exc.offset, exc.available)
        except Exception as exc:  # a dissector bug must not take the frame down with it
            msg.add_finding(f"{self.key}.dissector_error", "error",
                            f"internal dissector error: {type(exc).__name__}: {exc}", cur.pos, 0)
        if not msg.name:
            msg.name = "unknown"
        if not msg.info:
            msg.info = f"{msg.name} [Malformed]" if msg.findings else msg.name
        return msg


DECODE_AS = re.compile(r"^(udp|tcp)\.port\s*==\s*(\d{1,5})\s*,\s*([a-z0-9_]+)$")


class UsageError(Exception):
    pass


def parse_decode_as(specs):
    """``['udp.port==27000,netquake']`` -> ``{('udp', 27000): 'netquake'}``."""
    table = {}
    for spec in specs or ():
        match = DECODE_AS.match(spec.strip())
        if not match:
            raise UsageError(f"bad --decode-as {spec!r}: expected udp.port==N,PROTO or tcp.port==N,PROTO")
        transport, port, proto = match.group(1), int(match.group(2)), match.group(3)
        if port > 65535:
            raise UsageError(f"bad --decode-as {spec!r}: port {port} is out of range")
        if proto not in DISSECTORS:
            raise UsageError(f"bad --decode-as {spec!r}: unknown protocol {proto!r} "
                             f"(known: {', '.join(sorted(DISSECTORS))})")
        table[(transport, port)] = proto
    return table


class Registry:
    """One per run: holds the dissector instances and their per-run state."""

    __slots__ = ("dissectors", "forced", "by_port", "order")

    def __init__(self, decode_as=None):
        load_protocols()
        self.dissectors = {key: cls() for key, cls in DISSECTORS.items()}
        self.forced = {k: self.dissectors[v] for k, v in (decode_as or {}).items()}
        self.by_port = {}
        for dissector in self.dissectors.values():
            for transport in dissector.transports:
                for port in dissector.ports:
                    self.by_port.setdefault((transport, port), []).append(dissector)
        self.order = {t: [d for d in self.dissectors.values() if t in d.transports] for t in ("udp", "tcp")}

    def get(self, key):
        return self.dissectors[key]

    def select(self, packet, payload):
        """The dissector for this payload, or None."""
        transport = packet.transport
        forced = self.forced.get((transport, packet.dport)) or self.forced.get((transport, packet.sport))
        if forced is not None:
            return forced
        on_port = self.by_port.get((transport, packet.dport)) or self.by_port.get((transport, packet.sport)) or ()
        for dissector in on_port:
            if dissector.claims(payload, packet, True):
                return dissector
        for dissector in self.order.get(transport, ()):
            if dissector not in on_port and dissector.claims(payload, packet, False):
                return dissector
        return None


def load_protocols():
    from .protocols import netquake, odamex, soldat, teeframe  # noqa: F401  (each registers itself)
