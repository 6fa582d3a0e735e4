"""A plugin's code behind guards: what it raises, and what it hands back that dissect cannot use, becomes its
``<key>.dissector_error`` finding, and the frame, the other protocols and the run go on.

The registry puts each plugin's hooks behind these (the built-ins' are not: their tests pin what they make, and
their frames' path pays for no guard). What a failure costs:

- ``claims``: the payload is not the plugin's; the other protocols are asked.
- ``decode``: caught as for every protocol (``dissect_message``); after it, the message is checked here: a name or
  info that is not text is replaced, a protocol that is not text or names a built-in protocol is put back (a
  built-in's analyzer would take the message as its own), fields that lie outside the message's bytes (or are not
  Fields, or are met twice in its tree) are dropped, a field's value nested deeper than MAX_VALUE_DEPTH (or one that
  holds itself) is dropped, findings placed outside it lose their position, and a message whose bytes or position
  the decoder changed gets them back. An analysis record's result is held to the same depth.
- ``observe`` and the analyzer's ``feed``: nothing learnt from that message, a finding on it.
- A stream parser's ``feed``, ``gap``, ``uncaptured`` or ``close``: that side of the stream is not dissected after
  it; the messages made before the failure are kept.
- The analyzer's ``stream_closed`` and ``finish``: an analysis record with the finding in place of what they
  concluded. ``stats``: ``{"error": ...}`` in place of its statistics; ``merge`` and ``follow`` (``-j``, many
  files), and an analyzer that cannot be pickled to be sent between processes: its statistics are the error from
  then on.

Findings that belong to a frame but no message (``claims``, stream parsers) wait in the registry's ``faults`` for
the pipeline to add to the frame's record.
"""

from .analysis.base import Analyzer
from .core.model import SEVERITY_RANK, AnalysisRecord, Field, Finding, Message

MAX_ERROR_TEXT = 200  # characters of an exception's text kept in a finding
MAX_DEPTH = 64        # levels of a plugin's field tree: deeper fields are dropped
MAX_VALUE_DEPTH = 32  # levels of lists, tuples and dicts in a plugin's field value or analysis record's result
MAX_MESSAGES = 65536  # messages a plugin's stream parser may make from one call (a line is at least its newline)


def guard_dissector(dissector, faults, observes, reserved=frozenset()):
    """Put the hooks of ``dissector`` (a plugin's instance) behind guards; ``faults``: the registry's list;
    ``observes``: its ``observe`` is its own (the pipeline calls only those); ``reserved``: the built-in
    protocols' keys, which its messages may not take."""
    error = dissector.findings.dissector_error
    dissector.claims = _claims(dissector.claims, error, faults)
    dissector.decode = _decode(dissector.decode, error, reserved)
    if observes:
        dissector.observe = _observe(dissector.observe, error)
    if dissector.stream_parser is not None:
        dissector.stream_parser = _stream_parser(dissector.stream_parser, error, faults, reserved)
    return dissector


def guard_analyzer(dissector):
    """A fresh analyzer for ``dissector`` (a plugin's instance), behind a guard."""
    error = dissector.findings.dissector_error
    try:
        return GuardedAnalyzer(dissector.key, error, dissector.analyzer())
    except Exception as exc:
        return GuardedAnalyzer(dissector.key, error, Analyzer(), failure("analyzer's __init__", exc))


def failure(hook, exc):
    """``hook`` raised ``exc``: what the finding says."""
    try:
        text = str(exc)
    except Exception:  # an exception whose text cannot be made
        text = "(no text)"
    if len(text) > MAX_ERROR_TEXT:
        text = text[:MAX_ERROR_TEXT] + "..."
    return f"the plugin's {hook} raised {type(exc).__name__}: {text}" if text else \
        f"the plugin's {hook} raised {type(exc).__name__}"


def fault_record(finding):
    """An analysis record for a finding that belongs to no frame: one made at the capture's end."""
    protocol = finding.code.rpartition(".")[0]
    return AnalysisRecord(protocol, "dissector_error", [], {"error": finding.message}, [finding],
                          f"{protocol}: {finding.message}")


# -- the dissector's hooks -----------------------------------------------------------------------------
def _claims(claims, error, faults):
    def guarded(payload, packet, on_port):
        try:
            return bool(claims(payload, packet, on_port))
        except Exception as exc:
            faults.append(error.at(failure("claims", exc) + ": the payload was left to the other protocols"))
            return False
    return guarded


def _decode(decode, error, reserved):
    def guarded(cur, msg, packet):
        given = (msg.payload, msg.offset, msg.length)
        try:
            decode(cur, msg, packet)
        finally:
            _restore(msg, given, error)
            check_message(msg, error, reserved)
    return guarded


def _observe(observe, error):
    def guarded(packet, msg):
        try:
            observe(packet, msg)
        except Exception as exc:
            msg.report(error, failure("observe", exc))
    return guarded


def _restore(msg, given, error):
    """The decoder changed the message's bytes or position, which its fields are placed in: they are put back. (Its
    protocol it may name: another key of its own package's.)"""
    names = ("payload", "offset", "length")
    changed = [name for name, value in zip(names, given) if _changed(getattr(msg, name), value)]
    if changed:
        for name, value in zip(names, given):
            setattr(msg, name, value)
        msg.report(error, f"the plugin's decode changed the message's {', '.join(changed)}: put back")


def _changed(now, given):
    return now is not given and (type(now) is not type(given) or now != given)


def check_message(msg, error, reserved=frozenset()):
    """Make a plugin's message one the views can show: see the module's docstring."""
    for name in ("name", "info"):
        value = getattr(msg, name)
        if value is not None and not isinstance(value, str):
            setattr(msg, name, "")
            msg.report(error, f"the plugin set the message's {name} to {type(value).__name__}, not text: not shown")
    _check_protocol(msg, error, reserved)
    dropped = []
    msg.fields[:] = _fields_inside(msg.fields, msg.length, 0, dropped, set())
    if dropped:
        msg.report(error, f"{len(dropped)} of the plugin's fields are not Fields, lie outside the message's "
                          f"{msg.length} bytes or are met twice in its tree: dropped (the first: "
                          f"{_described(dropped[0])})")
    _check_values(msg, error)
    _check_findings(msg, error)


def _check_protocol(msg, error, reserved):
    own = error.code.rpartition(".")[0]
    if not isinstance(msg.protocol, str):
        msg.report(error, f"the plugin set the message's protocol to {type(msg.protocol).__name__}, not a key: "
                          f"put back")
        msg.protocol = own
    elif msg.protocol in reserved:
        msg.report(error, f"the plugin set the message's protocol to {msg.protocol!r}, a built-in protocol's key: "
                          f"put back")
        msg.protocol = own


def _check_values(msg, error):
    """A field whose value the views cannot write (see value_problem) keeps its place without its value."""
    dropped = []
    pending = list(msg.fields)
    while pending:
        field = pending.pop()
        pending.extend(field.children)
        problem = value_problem(field.value)
        if problem:
            field.value = None
            dropped.append((field, problem))
    if dropped:
        field, problem = dropped[-1]  # the first met in the tree's order (the walk runs from its end)
        msg.report(error, f"{len(dropped)} of the plugin's field values {'are' if len(dropped) > 1 else 'is'} "
                          f"{problem}: dropped (the first: {_described(field)})")


def value_problem(value):
    """Why the views cannot write ``value`` ("" for nothing): lists, tuples and dicts nested deeper than
    MAX_VALUE_DEPTH, which a container that holds itself is. Walked without recursion; a container met again no
    deeper than it was walked at is not walked again (what lies under it was found within the depth from there), so
    a shared one costs at most MAX_VALUE_DEPTH walks."""
    walked = {}  # id -> the greatest depth it was walked at
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= MAX_VALUE_DEPTH:
            return f"nested deeper than {MAX_VALUE_DEPTH} levels (or holding itself)"
        if walked.get(id(item), -1) >= depth:
            continue
        walked[id(item)] = depth
        pending.extend((child, depth + 1) for child in children)
    return ""


def _fields_inside(fields, length, depth, dropped, seen):
    """``fields`` (a list or tuple) without those that are not Fields inside ``length`` bytes, each one's
    children the same way; the dropped ones added to ``dropped``. A field met again (``seen``: their ids) is
    dropped: a tree that holds a field twice, or holds itself, would be walked without end."""
    if not isinstance(fields, (list, tuple)):
        dropped.append(fields)
        return ()
    kept = []
    for field in fields:
        if depth >= MAX_DEPTH or not isinstance(field, Field) or id(field) in seen or \
                not _inside(field.offset, field.length, length):
            dropped.append(field)
            continue
        seen.add(id(field))
        field.children = _fields_inside(field.children, length, depth + 1, dropped, seen)
        kept.append(field)
    return fields if len(kept) == len(fields) else kept


def _inside(offset, size, length):
    return type(offset) is int and type(size) is int and 0 <= offset and 0 <= size and offset + size <= length


def _described(field):
    if not isinstance(field, Field):
        return f"a {type(field).__name__}"
    key = field.key if isinstance(field.key, str) else type(field.key).__name__
    return f"{key[:MAX_ERROR_TEXT]} at [{field.offset!r:.40}:{field.length!r:.40}]"


def _check_findings(msg, error):
    """Findings that are not Findings are dropped; a finding's position outside the message is dropped."""
    kept = []
    for finding in msg.findings:
        if not _usable_finding(finding):
            continue
        if finding.offset is not None and not _inside(finding.offset, finding.length or 0, msg.length):
            finding.offset = finding.length = None
        kept.append(finding)
    if len(kept) != len(msg.findings):
        dropped = len(msg.findings) - len(kept)
        msg.findings[:] = kept
        msg.report(error, f"{dropped} of the plugin's findings are not Findings with a code, a severity and a "
                          f"message: dropped")


def _usable_finding(finding):
    return isinstance(finding, Finding) and isinstance(finding.code, str) and isinstance(finding.message, str) \
        and isinstance(finding.severity, str) and finding.severity in SEVERITY_RANK


# -- stream parsers ------------------------------------------------------------------------------------
def _stream_parser(make, error, faults, reserved):
    def guarded():
        try:
            return GuardedParser(make(), error, faults, reserved)
        except Exception as exc:
            broken = GuardedParser(None, error, faults, reserved)
            broken._fail("stream_parser", exc)
            return broken
    return guarded


class GuardedParser:
    """A plugin's stream parser for one side of a stream, behind a guard; after a failure it takes no more."""

    __slots__ = ("parser", "error", "faults", "reserved", "broken")

    def __init__(self, parser, error, faults, reserved=frozenset()):
        self.parser = parser
        self.error = error
        self.faults = faults
        self.reserved = reserved
        self.broken = False

    def feed(self, chunk, tree, packet):
        return self._messages("feed", (chunk, tree, packet))

    def close(self, tree, packet):
        return self._messages("close", (tree, packet))

    def gap(self):
        self._call("gap")

    def uncaptured(self):
        self._call("uncaptured" if hasattr(self.parser, "uncaptured") else "gap")

    def _call(self, hook):
        if self.broken:
            return
        try:
            getattr(self.parser, hook)()
        except Exception as exc:
            self._fail(f"stream parser's {hook}", exc)

    def _messages(self, hook, args):
        out = []
        if self.broken:
            return out
        try:
            for msg in getattr(self.parser, hook)(*args):
                if len(out) >= MAX_MESSAGES:  # a parser that yields without end would hold the run
                    raise RuntimeError(f"more than {MAX_MESSAGES} messages from one call")
                if isinstance(msg, Message):
                    check_message(msg, self.error, self.reserved)
                    out.append(msg)
                else:
                    self.faults.append(self.error.at(f"the plugin's stream parser made a {type(msg).__name__}, "
                                                     f"not a Message: dropped"))
        except Exception as exc:
            self._fail(f"stream parser's {hook}", exc)
        return out

    def _fail(self, hook, exc):
        self.broken = True
        self.faults.append(self.error.at(failure(hook, exc) + ": this side of the stream is not dissected from here"))


# -- analyzers -----------------------------------------------------------------------------------------
class GuardedAnalyzer(Analyzer):
    """A plugin's analyzer behind a guard. Its other attributes are the analyzer's own (the HTML report reads a
    servers-seen table)."""

    def __init__(self, key, error, inner, broken=None):
        self.key = key
        self.error = error
        self.inner = inner
        self.broken = broken  # why its statistics cannot be trusted: a failed __init__, merge or follow
        # No Analyzer.__init__: it sets stats_off, which is the inner analyzer's (unpickled in -j's parent, too).

    def __reduce__(self):  # -j and the many-file runs send analyzers between processes
        import pickle  # here: the start of every run would pay for it, and only these runs pickle
        try:
            pickle.dumps(self.inner, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # what it holds cannot be sent (a lock, a socket): its statistics cannot be merged
            return GuardedAnalyzer, (self.key, self.error, Analyzer(),
                                     self.broken or failure("analyzer, sent between processes,", exc))
        return GuardedAnalyzer, (self.key, self.error, self.inner, self.broken)

    def __getattr__(self, name):
        if name in ("key", "error", "inner", "broken"):  # not set yet: being unpickled
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def stats_off(self):
        return getattr(self.inner, "stats_off", False)

    @stats_off.setter
    def stats_off(self, off):
        if isinstance(self.inner, Analyzer):
            self.inner.stats_off = off

    def feed(self, record, msg, tree):
        try:
            out = self.inner.feed(record, msg, tree)
        except Exception as exc:
            msg.report(self.error, failure("analyzer's feed", exc))
            return []
        records, bad = _records(out)
        if bad:
            msg.report(self.error, f"the plugin's analyzer's feed gave {bad}: dropped")
        return records

    def stream_closed(self, stream):
        return self._concluded("stream_closed", (stream,))

    def finish(self):
        return self._concluded("finish", ())

    def _concluded(self, hook, args):
        try:
            out = getattr(self.inner, hook)(*args)
        except Exception as exc:
            return [fault_record(self.error.at(failure(f"analyzer's {hook}", exc)))]
        records, bad = _records(out)
        if bad:
            records.append(fault_record(self.error.at(f"the plugin's analyzer's {hook} gave {bad}: dropped")))
        return records

    def merge(self, other):
        self._fold("merge", other)

    def follow(self, other):
        self._fold("follow", other)

    def _fold(self, hook, other):
        if getattr(other, "broken", None) is not None and self.broken is None:
            self.broken = other.broken
        try:
            getattr(self.inner, hook)(getattr(other, "inner", other))
        except Exception as exc:
            self.broken = self.broken or failure(f"analyzer's {hook}", exc)

    def stats(self):
        if self.broken is not None:
            return {"error": self.broken}
        try:
            stats = self.inner.stats()
        except Exception as exc:
            return {"error": failure("analyzer's stats", exc)}
        problem = _stats_problem(stats)
        return {"error": f"the plugin's analyzer's stats gave {problem}"} if problem else stats


def _stats_problem(stats):
    """What in an analyzer's ``stats()`` the views cannot read ("" for nothing): they read a dict, its counts of
    ``requests`` and ``answered``, its ``response_times`` (name -> count, min, mean, max) and ``servers`` (dicts)."""
    if not isinstance(stats, dict):
        return f"a {type(stats).__name__}, not a dict"
    if any(not _number(stats.get(name, 0)) for name in ("requests", "answered")):
        return "requests or answered that are not numbers"
    times = stats.get("response_times", {})
    if not isinstance(times, dict) or not all(
            isinstance(timing, dict) and all(_number(timing.get(name)) for name in ("count", "min", "mean", "max"))
            for timing in times.values()):
        return "response_times that are not name -> {count, min, mean, max}"
    servers = stats.get("servers", [])
    if not isinstance(servers, list) or not all(
            isinstance(server, dict) and isinstance(server.get("server"), str)
            and (server.get("response_time") is None or _number(server["response_time"])) for server in servers):
        return "servers that are not a list of dicts, each with its server's text"
    return ""


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _records(out):
    """The analysis records among what an analyzer gave, and what else it gave ("" for nothing)."""
    if isinstance(out, list) and all(_usable(record) for record in out):
        return out, ""
    if out is None or isinstance(out, (str, bytes, dict)) or not hasattr(out, "__iter__"):
        return [], f"a {type(out).__name__}, not a list of analysis records"
    try:
        items = list(out)
    except Exception as exc:
        return [], f"an iterable that raised {type(exc).__name__}"
    records = [record for record in items if _usable(record)]
    bad = len(items) - len(records)
    if not bad:
        return records, ""
    return records, f"{bad} object{'s' if bad > 1 else ''} that {'are' if bad > 1 else 'is'} not an analysis record " \
                    f"the views can show"


def _usable(record):
    """An analysis record the views can show: text where they read text, frame numbers, Findings, a result they can
    write."""
    return isinstance(record, AnalysisRecord) and isinstance(record.protocol, str) and isinstance(record.name, str) \
        and isinstance(record.summary, str) and isinstance(record.findings, list) \
        and all(_usable_finding(finding) for finding in record.findings) and isinstance(record.frames, list) \
        and all(number is None or type(number) is int for number in record.frames) \
        and not value_problem(record.result)
