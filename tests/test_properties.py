"""Properties every dissector keeps, on random bytes and on mutations of valid messages."""

import struct

import netquake_peer as nq
import odamex_peer as od
import pytest
import soldat_peer as sp
import teeframe_peer as tf
import dissect as dissect_api
from dissect.dissectors.odamex import full_values
from helpers import dissect
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Every registered protocol, with the valid messages it declares (Dissector.examples).
VALID = {key: list(cls.examples) for key, cls in dissect_api.protocols().items()}
PROTOCOLS = sorted(VALID)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_invariants(msg, data):
    """Offsets lie inside the message, children inside their parents, and no dissector bug was caught."""
    assert msg.length == len(data)
    for top in msg.fields:
        _check_field(top, len(data))
    for finding in msg.findings:
        assert not finding.code.endswith("dissector_error"), finding.message
        if finding.offset is not None:
            assert 0 <= finding.offset <= len(data)
            assert finding.offset + (finding.length or 0) <= len(data)


def _check_field(field, size):
    assert 0 <= field.offset and field.length >= 0 and field.offset + field.length <= size, field
    assert isinstance(field.display, str)
    for child in field.children:
        if not child.generated:
            assert field.offset <= child.offset and child.offset + child.length <= field.offset + field.length, \
                (field, child)
        _check_field(child, size)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@SETTINGS
@given(data=st.binary(max_size=600))
def test_random_bytes_never_raise(protocol, data):
    for tree in (True, False):
        check_invariants(dissect(protocol, data, tree=tree), data)


@st.composite
def mutated(draw, protocol):
    base = bytearray(draw(st.sampled_from(VALID[protocol])))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "extreme", "unterminate", "insert"]))
        if not base:
            break
        pos = draw(st.integers(0, len(base) - 1))
        if kind == "flip":
            base[pos] = draw(st.integers(0, 255))
        elif kind == "cut":
            del base[pos:]
        elif kind == "extreme":
            value = draw(st.sampled_from([0, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF]))
            base[pos:pos + 4] = struct.pack("<I", value)
        elif kind == "unterminate":
            base = bytearray(bytes(base).replace(b"\0", b"A"))
        else:
            base[pos:pos] = draw(st.binary(min_size=1, max_size=20))
    return bytes(base)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@SETTINGS
@given(data=st.data())
def test_mutations_never_raise(protocol, data):
    payload = data.draw(mutated(protocol))
    full, light = dissect(protocol, payload, tree=True), dissect(protocol, payload, tree=False)
    check_invariants(full, payload)
    assert sorted(f.code for f in light.findings) == sorted(f.code for f in full.findings)
    assert light.info == full.info


# The views without a tree read less of a TeeFrame reply's client records and of an Odamex server-info reply, and
# read the rest when asked: once read, the values and the findings are the tree path's, whatever the bytes.
@pytest.mark.parametrize("protocol", ["teeframe", "odamex"])
@SETTINGS
@given(data=st.data())
def test_values_read_without_a_tree_are_the_tree_paths(protocol, data):
    payload = data.draw(mutated(protocol))
    full, light = dissect(protocol, payload, tree=True), dissect(protocol, payload, tree=False)
    if protocol == "odamex":
        full_values(light)
    assert light.values == full.values
    assert [f.as_dict() for f in light.findings] == [f.as_dict() for f in full.findings]


def _leaves(msg):
    return [(f.key, f.offset, f.length, f.value) for f in msg.walk() if not f.children and not f.generated]


def _record_boundaries(protocol, payload):
    """Cut points where a message is complete by itself: a TeeFrame packet may end after any record, the first
    four (or eight) bytes of any Odamex message are a whole launcher request, and the first six of a server-info
    reply a whole master update (its tag and a port: what a server sends a master)."""
    if protocol == "odamex":
        return {4, 8} | ({6} if payload[:4] == bytes.fromhex("d4d65400") else set())  # and 8: a keyed request
    if protocol != "teeframe":
        return set()
    msg = dissect(protocol, payload)
    return {c.offset + c.length for c in msg.fields_with("teeframe.client")} | \
        {f.offset + f.length for f in msg.fields if f.key == "teeframe.reserved"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_cut_keeps_the_fields_before_it_and_says_where_it_broke(protocol):
    for payload in VALID[protocol]:
        whole = dissect(protocol, payload)
        boundaries = _record_boundaries(protocol, payload)
        for cut in range(1, len(payload)):
            part = dissect(protocol, payload[:cut])
            check_invariants(part, payload[:cut])
            if cut not in boundaries:
                assert part.findings, (protocol, payload, cut)
            elif protocol == "odamex":
                continue  # the cut bytes are a whole, different message (a launcher request, a master update)
            before = [leaf for leaf in _leaves(whole) if leaf[1] + leaf[2] <= cut]
            if protocol == "odamex" and not part.values.get("extension"):
                # too little of the extension to tell it from trailing bytes (docs/odamex.md)
                before = [leaf for leaf in before if not leaf[0].startswith("odamex.ext.")]
            got = set(_leaves(part))
            if protocol == "odamex" and part.values.get("layout") != whole.values.get("layout"):
                continue
            missing = [leaf for leaf in before if leaf not in got]
            assert not missing, (protocol, cut, missing[:3])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_valid_messages_round_trip(protocol):
    for payload in VALID[protocol]:
        msg = dissect(protocol, payload)
        bad = [f for f in msg.findings if f.severity in ("warning", "error")]
        assert not bad, (payload, bad)
        check_invariants(msg, payload)


def test_round_trip_values():
    msg = dissect("netquake", nq.ccrep_player_info(1, "Ranger", 77, -3, 60, "1.2.3.4:5"))
    assert {k: msg.values[k] for k in ("player_number", "name", "colors", "frags", "connect_time", "address")} == \
        {"player_number": 1, "name": "Ranger", "colors": 77, "frags": -3, "connect_time": 60, "address": "1.2.3.4:5"}
    clients = tf.sample_clients(5)
    tee = dissect("teeframe", tf.iext(77, clients))
    assert [tuple(c.values()) for c in tee.values["clients"]] == [tuple(c) for c in clients]
    oda = dissect("odamex", od.server_info(players=od.PLAYERS, teamplay=True, team_scores={"blue": 3}))
    assert [tuple(p.values()) for p in oda.values["player_list"]] == od.PLAYERS
    sol = dissect("soldat", sp.server_entry(sp.SERVERS[2], sp.UTF8))
    assert tuple(sol.values[k] for k in ("version", "ip", "port", "name", "country")) == \
        (41, "198.51.100.7", 23073, "Hold the flag", "A1")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_declared_examples_are_valid_messages(protocol):
    """Every protocol declares examples, and they decode with no error or warning."""
    assert VALID[protocol]
    for payload in VALID[protocol]:
        msg = dissect(protocol, payload)
        assert [f.code for f in msg.findings if f.severity in ("error", "warning")] == [], msg.name


# Pieces of a Soldat line's body: both separators, their bytes alone, and runs that a scan could read as overlapping.
SOLDAT_PIECES = [b"\xa9", b"\xc2\xa9", b"\xc2", b"a", b"\xa9\xa9", b"\xc2\xc2\xa9", b"\xc2\xa9\xa9", b"\xa9\xc2"]


@SETTINGS
@given(st.lists(st.sampled_from(SOLDAT_PIECES), max_size=80), st.sampled_from([b"\xa9", b"\xc2\xa9"]))
def test_soldat_counts_the_fields_it_walks(pieces, separator):
    """A line of an unknown type shows its first 32 fields and counts the rest: together, the separators that a
    left-to-right reading finds in it, each field ending where the next separator begins."""
    body = separator + b"".join(pieces)
    msg = dissect("soldat", b"z" + body + b"\n")
    expected = len(body.split(separator)) - 1
    walked = [f for f in msg.fields if f.key == "soldat.field"]
    more = [f.value for f in msg.fields if f.key == "soldat.more_fields"]
    assert msg.info == f"{expected} fields"
    assert len(walked) == min(expected, 32) and sum(more) == expected - len(walked)
    for field in walked:
        after = field.offset + field.length
        assert after == len(body) + 1 or body.startswith(separator, after - 1)
        assert separator not in body[field.offset - 1:after - 1]
