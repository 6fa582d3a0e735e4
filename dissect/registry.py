"""Protocols: how they declare themselves, how they are found, and which one a payload belongs to.

A protocol is a ``Dissector`` subclass that declares, in its own module: key, title, transports,
default ports, the heuristic (``claims``), the decoder (``decode``), for TCP a stream parser, its
analyzer class, a field table and a finding table. Protocols are found through the entry-point group
``dissect.protocols`` (the built-ins are registered there too, in pyproject.toml), so a fifth
protocol is a package of its own with one entry point.

Heuristics run on any port; default ports only decide which heuristics are tried first.
``-d udp.port==N,PROTO`` forces a dissector.
"""

import importlib
import importlib.machinery
import os
import re
import sys

from .analysis.base import Analyzer
from .capture.layers import Packet
from .capture.tables import FRAME_FIELDS, FRAME_FINDINGS, LAYER_KEYS, SHARED_FINDINGS
from .core import Truncated, Unterminated
from .core.cursor import new_cursor
from .core.escape import tell
from .core.model import new_message
from .core.tables import FieldTable, FindingTable
from .plugin_guard import guard_analyzer, guard_dissector

ENTRY_POINT_GROUP = "dissect.protocols"
_GROUP_HEADER = f"[{ENTRY_POINT_GROUP}]"  # its section in a distribution's entry_points.txt
BUILTINS = {
    "netquake": "dissect.dissectors.netquake:NetQuake",
    "odamex": "dissect.dissectors.odamex:Odamex",
    "soldat": "dissect.dissectors.soldat:Soldat",
    "teeframe": "dissect.dissectors.teeframe:TeeFrame",
}


WELL_KNOWN_PORTS = 1024  # a port below this on either side is a registered service's, not a game default port's


class UsageError(Exception):
    pass


class Dissector:
    """Base of every protocol. Subclasses set the class attributes and implement ``claims`` and ``decode``."""

    key = ""
    title = ""
    transports = ("udp",)
    ports = ()
    fields = None        # FieldTable: every key the protocol emits
    findings = None      # FindingTable: every finding it raises
    analyzer = Analyzer  # cross-packet tracker class (or "module:Class", imported when loaded): one per run
    truncated = None     # FindingSpec for a field that runs off the end of the message
    unterminated = None  # FindingSpec for a string without its terminator (default: truncated)
    cut_findings = ()    # FindingSpecs the missing end of a message the capture cut explains (beside truncated)
    stream_parser = None  # TCP protocols: a method returning a parser with feed, gap and close
    examples = ()        # valid messages (bytes): where property tests and fuzzers start from

    def claims(self, payload, packet, on_port):
        """Cheap test: is this payload ours? ``on_port`` is true on a default or forced port."""
        raise NotImplementedError

    def decode(self, cur, msg, packet):
        """Read the message through ``cur``; may raise Truncated."""
        raise NotImplementedError

    def observe(self, packet, msg):
        """Learn from a decoded message (conversations, ports); called after each datagram's decode, where a
        protocol overrides it (``Registry.observing``)."""

    def dissect(self, payload, tree=True, packet=None, offset=0):
        """Decode one message; never raises. Unreadable parts become findings. (The pipeline calls
        ``dissect_message`` itself: a protocol overrides ``decode``, not this.)"""
        return dissect_message(self, payload, tree, packet, offset)


def dissect_message(dissector, payload, tree, packet, offset):
    """``dissector.dissect(payload, tree, packet, offset)``: the message, its Cursor and their attributes typed
    (registry.pxd)."""
    msg = new_message(dissector.key, payload, offset)
    cur = new_cursor(msg, payload, tree, 0)
    decoded = packet if type(packet) is Packet else None  # typed (registry.pxd): its cut read in C
    snapped = decoded is not None and decoded.cut
    if snapped:
        cur.missing = decoded.cut
    try:
        dissector.decode(cur, msg, packet)
    except Unterminated as exc:
        msg.report(dissector.unterminated or dissector.truncated,
                   f"{exc.name} is not null-terminated: the string runs off the end of the message at offset "
                   f"{exc.offset}", exc.offset, exc.available)
    except Truncated as exc:
        msg.report(dissector.truncated, f"{exc.name} runs off the end of the message: {exc.needed} bytes needed at "
                                        f"offset {exc.offset}, {exc.available} left", exc.offset, exc.available)
    except Exception as exc:  # a dissector bug must not take the frame down with it
        msg.report(dissector.findings.dissector_error, f"internal dissector error: {type(exc).__name__}: {exc}",
                   cur.pos, 0)
    if snapped:
        _cut_by_capture(dissector, msg, cur.missing)
    if not msg.name:
        msg.name = "unknown"
    if not msg.info:
        msg.info = f"{msg.name} [Malformed]" if (_faults(msg) if snapped else msg.findings) else msg.name
    if snapped:
        msg.info += " [Packet size limited during capture]"  # as Wireshark's Info column says it
    return msg


def _cut_by_capture(dissector, msg, missing):
    """A message whose last ``missing`` bytes the capture did not keep (snap length): the findings that the
    missing end explains (running off the end, ``cut_findings``) give way to one ``capture.cut_message``."""
    explained = {dissector.truncated.code, *(spec.code for spec in dissector.cut_findings)}
    if dissector.unterminated is not None:
        explained.add(dissector.unterminated.code)
    msg.findings[:] = [finding for finding in msg.findings if finding.code not in explained]
    kept = msg.length
    msg.report(FRAME_FINDINGS.cut_message, f"the capture kept {kept} of the message's {kept + missing} bytes",
               kept, 0)


def _faults(msg):
    """Whether any finding but ``capture.cut_message`` is on the message."""
    return any(finding.code != FRAME_FINDINGS.cut_message.code for finding in msg.findings)


# -- discovery ---------------------------------------------------------------------------------------
_PROTOCOLS = {}   # key -> Dissector subclass, filled once per process by load_protocols
_PROBLEMS = []    # one line for each plugin that could not be loaded


def load_protocols():
    """The registered protocols, key -> Dissector subclass: the built-ins, then every entry point of the
    group ``dissect.protocols``. A plugin that fails to import or to validate is reported in one line on
    stderr and skipped; the others keep working."""
    if _PROTOCOLS:
        return _PROTOCOLS
    found = dict(BUILTINS)
    for entry in _entry_points():
        if entry.name in BUILTINS:
            if entry.value != BUILTINS[entry.name]:
                _problem(f"plugin {entry.name} ({entry.value}) skipped: the key {entry.name!r} is a built-in protocol")
            continue
        found[entry.name] = entry
    for name, target in found.items():
        try:
            cls = _resolve(target)
            if isinstance(getattr(cls, "analyzer", None), str):
                cls.analyzer = _resolve(cls.analyzer)
            check_protocol(cls, name)
        except (Exception, SystemExit) as exc:  # a plugin's bug (or its sys.exit()): one line, never a traceback
            _problem(f"protocol {name} skipped: {type(exc).__name__}: {exc}")
            continue
        clash = _field_clash(cls)
        if clash:
            _problem(f"protocol {name} skipped: {clash}")
            continue
        _PROTOCOLS[cls.key] = cls
    return _PROTOCOLS


def register(cls):
    """Add a protocol in this process without an entry point (tests, notebooks); returns the class."""
    load_protocols()
    if isinstance(cls.analyzer, str):
        cls.analyzer = _resolve(cls.analyzer)
    check_protocol(cls, cls.key)
    clash = _field_clash(cls)
    if clash:
        raise ValueError(f"{cls.key}: {clash}")
    if cls.key in _PROTOCOLS and _PROTOCOLS[cls.key] is not cls:
        raise ValueError(f"a protocol with the key {cls.key!r} is registered already")
    _PROTOCOLS[cls.key] = cls
    return cls


def plugin_problems():
    """What went wrong loading plugins, one line each (already written to stderr)."""
    load_protocols()
    return list(_PROBLEMS)


def _entry_points():
    if not _plugins_declared():
        return []
    try:
        from importlib import metadata
        return list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    except Exception as exc:  # a broken distribution on sys.path
        _problem(f"plugins not loaded: {type(exc).__name__}: {exc}")
        return []


def _plugins_declared():
    """Whether some distribution may declare an entry point of the group besides the built-ins' own.

    importlib.metadata takes about 30 ms to import and scan, as long as the rest of the start, and finds
    nothing but the built-ins on most machines. The distributions it reads in a folder of sys.path keep
    their entry points in ``NAME.dist-info/entry_points.txt`` (or ``.egg-info``): a look at those files
    answers. Whatever is not a folder (a zip file), a folder that cannot be listed, and a finder that lists
    distributions of its own are left to importlib.metadata."""
    if any(hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder
           for finder in sys.meta_path):
        return True
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return True
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            return True
        for name in names:
            if name.endswith((".dist-info", ".egg-info")) and _declares_plugin(os.path.join(folder, name)):
                return True
    return False


def _declares_plugin(distribution):
    """Whether the distribution's entry_points.txt has an entry in the group that is not a built-in's."""
    try:
        with open(os.path.join(distribution, "entry_points.txt"), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except (FileNotFoundError, NotADirectoryError):  # no entry points, or an .egg-info that is a file
        return False
    except OSError:
        return True
    section = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == _GROUP_HEADER and line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            if BUILTINS.get(name.strip()) != value.strip():
                return True
    return False


def _resolve(target):
    """An entry point, or a "module:name" string, to the object it names."""
    if isinstance(target, str):
        module, _, name = target.partition(":")
        return getattr(importlib.import_module(module), name)
    return target.load()


def _problem(line):
    if line in _PROBLEMS:  # a plugin that fails each time a run's Registry makes it is told once
        return
    _PROBLEMS.append(line)
    tell(str(line))


def check_protocol(cls, name):
    """Raise ValueError where a protocol class does not declare what the registry needs."""
    if not (isinstance(cls, type) and issubclass(cls, Dissector)):
        raise ValueError(f"{cls!r} is not a dissect.Dissector subclass")
    if cls.key != name or not re.fullmatch(r"[a-z][a-z0-9_]*", cls.key or ""):
        raise ValueError(f"key {cls.key!r} must be the entry point's name {name!r}, in lower case")
    if not isinstance(cls.fields, FieldTable) or cls.fields.protocol != cls.key:
        raise ValueError(f"{cls.key}: fields must be a FieldTable of protocol {cls.key!r}")
    if not isinstance(cls.findings, FindingTable) or cls.findings.protocol != cls.key:
        raise ValueError(f"{cls.key}: findings must be a FindingTable of protocol {cls.key!r}")
    if f"{cls.key}.dissector_error" not in cls.findings:
        raise ValueError(f"{cls.key}: findings must be a FindingTable made with messages=True (it declares "
                         f"{cls.key}.dissector_error, which reports what the protocol's own code raises)")
    if cls.truncated is None or cls.truncated.code not in cls.findings:
        raise ValueError(f"{cls.key}: truncated must be an entry of its finding table")
    if any(getattr(spec, "code", None) not in cls.findings for spec in cls.cut_findings):
        raise ValueError(f"{cls.key}: cut_findings must be entries of its finding table")
    if not (isinstance(cls.analyzer, type) and issubclass(cls.analyzer, Analyzer)):
        raise ValueError(f"{cls.key}: analyzer must be a dissect.Analyzer subclass")
    if not cls.transports or not set(cls.transports) <= {"udp", "tcp"}:
        raise ValueError(f"{cls.key}: transports must be udp and/or tcp")
    declared = _declared_problem(cls)
    if declared:
        raise ValueError(f"{cls.key}: {declared}")
    if not cls.examples or not all(isinstance(example, bytes) for example in cls.examples):
        raise ValueError(f"{cls.key}: examples must hold at least one valid message (bytes)")
    if "tcp" in cls.transports and cls.stream_parser is None:
        raise ValueError(f"{cls.key}: a TCP protocol needs a stream_parser")


def _declared_problem(protocol):
    """What is wrong with the title and ports a protocol (its class, or a plugin's instance) declares ("" for
    nothing): the summary pads the title, the registry walks the ports."""
    if not isinstance(protocol.title, str):
        return f"title must be text, not a {type(protocol.title).__name__}"
    ports = protocol.ports
    if isinstance(ports, (str, bytes)) or not isinstance(ports, (tuple, list, set, frozenset)):
        return f"ports must be a tuple of port numbers, not a {type(ports).__name__}"
    bad = [port for port in ports if type(port) is not int or not 0 <= port <= 65535]
    if bad:
        return f"ports must be numbers from 0 to 65535 ({bad[0]!r:.40} is not)"
    return ""


def _field_clash(cls):
    taken = {table.protocol for table in FRAME_FIELDS} | {table.protocol for table in SHARED_FINDINGS}
    if cls.key in taken or cls.key in LAYER_KEYS:
        return f"the key {cls.key!r} is taken by dissect's own fields and layers"
    return ""


# -- decode-as -------------------------------------------------------------------------------------
DECODE_AS = re.compile(r"^(udp|tcp)\.port\s*==\s*(\d{1,5})\s*,\s*([A-Za-z0-9_]+)$", re.IGNORECASE | re.ASCII)


def parse_decode_as(specs):
    """``['udp.port==27000,netquake']`` -> ``{('udp', 27000): 'netquake'}``."""
    protocols = load_protocols()
    table = {}
    for spec in specs or ():
        match = DECODE_AS.match(spec.strip())
        if not match:
            raise UsageError(f"bad --decode-as {spec!r}: expected udp.port==N,PROTO or tcp.port==N,PROTO")
        transport, port, name = match.group(1).lower(), int(match.group(2)), match.group(3)
        if port > 65535:
            raise UsageError(f"bad --decode-as {spec!r}: port {port} is out of range")
        proto = protocol_key(name)
        if proto is None:
            raise UsageError(f"bad --decode-as {spec!r}: unknown protocol {name!r} "
                             f"(known: {', '.join(sorted(protocols))})")
        transports = tuple(protocols[proto].transports)
        if transport not in transports:  # as tshark: a protocol is forced only on the transport it runs on
            raise UsageError(f"bad --decode-as {spec!r}: {protocols[proto].title or proto} runs over "
                             f"{' and '.join(t.upper() for t in transports)}, not {transport.upper()}")
        table[(transport, port)] = proto
    return table


def protocol_key(name):
    """The key of the protocol named ``name`` by its key or its title, in any case; None when none is."""
    wanted = name.lower()
    for key, cls in load_protocols().items():
        if wanted in (key, (cls.title or "").lower()):
            return key
    return None


class Registry:
    """One per run: holds the dissector instances and their per-run state."""

    __slots__ = ("dissectors", "forced", "by_port", "order", "plans", "faults")

    def __init__(self, decode_as=None):
        self.faults = []  # what plugins' guards found outside a message, for the pipeline to add to the frame
        self.dissectors = {}
        for key, cls in load_protocols().items():
            dissector = self._made(key, cls)
            if dissector is not None:
                self.dissectors[key] = dissector
        self.forced = {k: self.dissectors[v] for k, v in (decode_as or {}).items() if v in self.dissectors}
        self.by_port = {}
        for dissector in self.dissectors.values():
            for transport in dissector.transports:
                for port in dissector.ports:
                    self.by_port.setdefault((transport, port), []).append(dissector)
        self.order = {t: [d for d in self.dissectors.values() if t in d.transports] for t in ("udp", "tcp")}
        # transport -> ({default port: what select tries there, in order}, what it tries on any other port)
        self.plans = {t: ({}, self._plan(t, ())) for t in self.order}
        for (transport, port), port_dissectors in self.by_port.items():
            self.plans[transport][0][port] = self._plan(transport, port_dissectors)

    def _made(self, key, cls):
        """The instance of protocol ``key`` for this run; a plugin's behind guards (plugin_guard), or None where
        making it fails (said in one line: the other protocols work)."""
        if key in BUILTINS:
            return cls()
        try:
            dissector = cls()
            declared = _declared_problem(dissector)  # its __init__ may set them anew
            if declared:
                raise ValueError(declared)
            return guard_dissector(dissector, self.faults, _observes(dissector), frozenset(BUILTINS))
        except Exception as exc:
            _problem(f"protocol {key} skipped: {type(exc).__name__}: {exc}")
            return None

    def _plan(self, transport, port_dissectors):
        """(claims, on_port, dissector) for each heuristic to try: the exact (off-port) heuristics first, the
        dissectors of the port before the others, then the port's own lenient on-port tests, so that another
        protocol's message on a port a protocol has by default (a TeeFrame or Odamex server on 26000) is still
        its own, while what no heuristic takes there is the port's. The bound methods are taken once, not per
        payload."""
        others = [d for d in self.order[transport] if d not in port_dissectors]
        return tuple([(d.claims, False, d) for d in port_dissectors] + [(d.claims, False, d) for d in others]
                     + [(d.claims, True, d) for d in port_dissectors])

    def get(self, key):
        return self.dissectors[key]

    def take_faults(self):
        """The plugin faults waiting for a record, and none left waiting (the list is emptied in place: the guards
        hold it)."""
        taken = list(self.faults)
        self.faults.clear()
        return taken

    def make_analyzers(self):
        """A fresh analyzer for each protocol, key -> analyzer."""
        return {key: dissector.analyzer() if key in BUILTINS else guard_analyzer(dissector)
                for key, dissector in self.dissectors.items()}

    def observing(self):
        """The keys of the protocols whose ``observe`` is not Dissector's, which learns nothing (overridden by the
        class or set on the instance): the pipeline calls only theirs."""
        return frozenset(key for key, dissector in self.dissectors.items() if _observes(dissector))

    def select(self, packet, payload):
        """The dissector for this payload, or None."""
        transport = packet.transport
        if self.forced:
            forced = self.forced.get((transport, packet.dport)) or self.forced.get((transport, packet.sport))
            if forced is not None:
                return forced
        plans = self.plans.get(transport)
        if plans is None:
            return None
        plan_by_port, elsewhere = plans
        sport, dport = packet.sport, packet.dport
        low = sport if sport < dport else dport
        if low < WELL_KNOWN_PORTS and low not in plan_by_port:
            # As Wireshark tries the lower port first: a game's default port against a well-known one that no
            # protocol here has (DNS, NTP, syslog from a client whose ephemeral port is 26000) is not that game's
            # server; the exact heuristics still run.
            plan = elsewhere
        else:
            plan = plan_by_port.get(dport) or plan_by_port.get(sport) or elsewhere
        for claims, on_port, dissector in plan:
            if claims(payload, packet, on_port):
                return dissector
        return None


def _observes(dissector):
    """Whether ``dissector``'s ``observe`` is not Dissector's, which learns nothing."""
    return getattr(dissector.observe, "__func__", None) is not Dissector.observe


def all_field_tables():
    """Every FieldTable: the frame and transport layers', then each protocol's."""
    return [*FRAME_FIELDS, *(cls.fields for _, cls in sorted(load_protocols().items()))]


def all_finding_tables():
    return [*SHARED_FINDINGS, *(cls.findings for _, cls in sorted(load_protocols().items()))]
