"""Dissect a payload in-process, for dissector tests."""

from dissect.registry import Registry


def dissect(protocol, payload, tree=True, packet=None):
    return Registry().get(protocol).dissect(payload, tree, packet)


def field(msg, key):
    found = msg.get(key)
    assert found is not None, f"no field {key} in {[f.key for f in msg.walk()]}"
    return found


def span(msg, key):
    f = field(msg, key)
    return (f.offset, f.length, f.value)


def codes(msg):
    return sorted(f.code for f in msg.findings)
