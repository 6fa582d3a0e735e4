"""Which protocol a datagram is given to: false positives of the heuristics and of the default ports (outside
probe of recognition and decode-as)."""
import struct

import capkit
from conftest import jsonl, run_cli


def _pcap(tmp_path, packets, name="r.pcap"):
    """``packets``: (src, sport, dst, dport, payload), 20 ms apart."""
    path = tmp_path / name
    capkit.write_pcap(path, [(capkit.DEFAULT_TS + i * 0.02, capkit.ethernet(capkit.udp_packet(*packet)))
                             for i, packet in enumerate(packets)])
    return path


def _protocols(path, *args):
    code, out, err = run_cli("-T", "jsonl", *args, path)
    assert code == 0, err
    return [r["protocol"] for r in jsonl(out) if r["kind"] == "frame"]


def test_one_rtp_packet_that_looks_like_netquake_does_not_make_its_stream_netquake(tmp_path):
    """RTP (PCMU) starts 80 00; a packet whose sequence number equals its length and whose timestamp's first byte
    is a command byte passes the exact test once. The rest of the call, whose lengths do not match, is not
    NetQuake: the docs ask for a correct length off the default port."""
    packets = []
    for i, seq in enumerate(range(168, 180)):
        rtp = struct.pack("!BBHII", 0x80, 0x00, seq, 0x02000000 + 160 * i, 0x1234ABCD) + b"\xff" * 160
        packets.append(("192.168.1.10", 16384, "192.168.1.20", 16386, rtp))
    protocols = _protocols(_pcap(tmp_path, packets))
    assert protocols.count("netquake") == 1  # seq 172 == 172 bytes: the one the heuristic cannot tell apart
    assert protocols[4] == "netquake"


def test_off_the_port_a_netquake_reply_the_snap_length_cut_is_still_netquake(tmp_path):
    """On 26001 (a second server's port) the length test counts the bytes the capture did not keep: a server info
    reply cut at 62 bytes of its frame is NetQuake, with its cut reported, as it was before the exact test."""
    import netquake_peer as nq
    reply = nq.ccrep_server_info("10.0.0.1:26001", "host", "e1m1", 2, 8)
    frames = [capkit.ethernet(capkit.udp_packet("10.0.0.9", 40000, "10.0.0.1", 26001, nq.ccreq_server_info())),
              capkit.ethernet(capkit.udp_packet("10.0.0.1", 26001, "10.0.0.9", 40000, reply))]
    path = tmp_path / "cut.pcap"
    capkit.write_pcap(path, [(capkit.DEFAULT_TS, frames[0]), (capkit.DEFAULT_TS + 0.02, frames[1][:62],
                                                               len(frames[1]))])
    code, out, err = run_cli("-T", "jsonl", path)
    records = [r for r in jsonl(out) if r["kind"] == "frame"]
    assert [r["protocol"] for r in records] == ["netquake", "netquake"]
    assert records[1]["messages"][0]["message"] == "CCREP_SERVER_INFO" and len(frames[1]) > 62


def test_off_the_port_netquake_control_needs_80_00(tmp_path):
    """docs/netquake.md: recognition off the default port needs `80 00`; a first byte of ff is not it."""
    payload = b"\xff\x00\x00\x06\x03\x01"
    assert _protocols(_pcap(tmp_path, [("10.0.0.9", 40000, "10.0.0.1", 40001, payload)])) == ["udp"]


def test_a_game_port_against_a_well_known_port_is_a_client_port(tmp_path):
    """DNS and NTP from a client whose ephemeral port is 26000: tshark shows DNS and NTP (the lower port first),
    not NetQuake with length errors."""
    dns_query = bytes.fromhex("9a0101000001000000000000076578616d706c6503636f6d0000010001")
    ntp = bytes([0xE3, 0, 6, 0xEC]) + bytes(44)
    packets = [("10.0.0.5", 26000, "10.0.0.1", 53, dns_query), ("10.0.0.1", 53, "10.0.0.5", 26000, dns_query),
               ("10.0.0.5", 26000, "10.0.0.1", 123, ntp)]
    assert _protocols(_pcap(tmp_path, packets)) == ["udp", "udp", "udp"]
    # decode-as still forces it
    assert _protocols(_pcap(tmp_path, packets[:1], "f.pcap"), "-d", "udp.port==26000,netquake") == ["netquake"]


def test_another_protocols_server_on_a_default_port_is_still_recognized(tmp_path):
    """A TeeFrame server on 26000 (NetQuake's port): its replies are TeeFrame, as its request is, not NetQuake
    'Unknown command 0xff'. The registry: default ports only decide which heuristics are tried first."""
    request = bytes.fromhex("ffffffffffffffffffff676965332a")
    reply = bytes.fromhex("ffffffffffffffffffff696e6633340030") + \
        b".6.4\0vanilla server\0ctf5\0CTF\x000\x000\x0016\x000\x0016\x00"
    odamex_request = struct.pack("<i", 777123) + b"abcd"
    packets = [("10.0.0.9", 40000, "10.0.0.1", 26000, request), ("10.0.0.1", 26000, "10.0.0.9", 40000, reply),
               ("10.0.0.9", 40001, "10.0.0.1", 26000, odamex_request)]
    assert _protocols(_pcap(tmp_path, packets)) == ["teeframe", "teeframe", "odamex"]
    # what no heuristic takes on 26000 is still NetQuake's, to be reported
    junk = b"\x80\x00\x00\x63\x02QUAKE\x00\x03"
    assert _protocols(_pcap(tmp_path, [("10.0.0.9", 40000, "10.0.0.1", 26000, junk)], "j.pcap")) == ["netquake"]
