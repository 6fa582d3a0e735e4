"""Make the sample captures in captures/ (described in captures/README.md).

Live captures: real peers from tools/ talk over loopback sockets while dumpcap
(from Debian's wireshark packages; needs root) records them. Crafted captures:
frames built with dpkt and written with dpkt's writers, for the damaged cases no
well-behaved peer would send.

    python tools/make_captures.py            # all of them
    python tools/make_captures.py --crafted  # only those that need no dumpcap
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import capkit  # noqa: E402
import netquake_peer as nq  # noqa: E402
import odamex_peer as od  # noqa: E402
import soldat_peer as sp  # noqa: E402
import teeframe_peer as tf  # noqa: E402

CAPTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "captures")


def live_capture(path, bpf, exchange):
    """Run ``exchange()`` while dumpcap records loopback traffic matching ``bpf`` into a pcap file."""
    dumpcap = shutil.which("dumpcap")
    if dumpcap is None:
        raise SystemExit("dumpcap not found: apt-get install tshark (or use --crafted)")
    proc = subprocess.Popen([dumpcap, "-q", "-P", "-i", "lo", "-f", bpf, "-w", path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # dumpcap needs a moment before it sees packets
    try:
        exchange()
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    os.chmod(path, 0o644)


def netquake_session(path):
    server = nq.Server("127.0.0.1", 26000).start()
    full = nq.Server("127.0.0.1", 26001, full=True).start()
    try:
        live_capture(path, "udp portrange 26000-65535 and host 127.0.0.1 and not port 53",
                     lambda: (nq.query("127.0.0.1", 26000), nq.query("127.0.0.1", 26001)))
    finally:
        server.stop()
        full.stop()


def netquake_damaged(path):
    """One frame per NetQuake finding, between clean frames, plus a frame cut by the snap length."""
    client, server = ("10.0.0.7", 40000), ("10.0.0.1", 26000)

    def up(payload):
        return capkit.udp_packet(client[0], client[1], server[0], server[1], payload)

    def down(payload):
        return capkit.udp_packet(server[0], server[1], client[0], client[1], payload)

    bad_length = bytearray(nq.ccreq_server_info())
    bad_length[3] = 40
    bad_flags = bytearray(nq.ccreq_server_info())
    bad_flags[1] = 0x01
    snapped = capkit.ethernet(down(nq.ccrep_server_info("10.0.0.1:26000", "cut by snaplen", "e1m1", 1, 8)))
    packets = [
        up(nq.ccreq_server_info()),                                    # 1 clean
        up(bytes(bad_length)),                                         # 2 length_mismatch
        up(bytes(bad_flags)),                                          # 3 bad_flags
        up(nq.control(0x07, b"\x01\x02")),                             # 4 unknown_command
        up(nq.ccreq_server_info(game="QUAKE2")),                       # 5 bad_game_name
        up(nq.ccreq_server_info(version=2)),                           # 6 bad_version
        down(nq.control(0x83, b"10.0.0.1:26000\0host\0")),             # 7 truncated
        down(nq.control(0x81, bytes([0x74, 0x65, 0, 0, 0xDE, 0xAD]))),  # 8 trailing_bytes
        down(nq.ccrep_player_info(0, "Rainbow", 0xEF, 1, 2, "x")),     # 9 bad colors (14, 15)
        down(nq.ccrep_server_info("10.0.0.1:26000", "fine", "e1m1", 1, 8)),  # 10 clean reply
    ]
    frames = [(capkit.DEFAULT_TS + i * 0.01, capkit.ethernet(p)) for i, p in enumerate(packets)]
    frames.append((capkit.DEFAULT_TS + 1, snapped[:60], len(snapped)))  # 11 truncated_frame
    capkit.write_pcap(path, frames)


def teeframe_session(path):
    """A browser querying a 64-client server (3 packets), a 5-client one (1 packet) and a vanilla one."""
    import socket
    big = tf.Server("127.0.0.1", 8303, clients=64).start()
    small = tf.Server("127.0.0.1", 8304, clients=5, name="small server").start()

    def exchange():
        tf.query("127.0.0.1", 8303, extra_token=0x1234, token=0x2A)
        tf.query("127.0.0.1", 8304, extra_token=0x0001, token=0x07)
        tf.query("127.0.0.1", 8304, token=0x33, vanilla=True)
        # Game traffic on the server's port is not connectionless: it must be left alone.
        game = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for seq in range(3):
            game.sendto(bytes([0x00, seq, 0x01]) + b"\x41\x00\x05game", ("127.0.0.1", 8303))
        game.close()
    try:
        live_capture(path, "udp and host 127.0.0.1 and (port 8303 or port 8304)", exchange)
    finally:
        big.stop()
        small.stop()


def teeframe_damaged(path):
    """Each assembly fault of the spec's 'Receiving Multiple Packets', with its own client and token."""
    server = ("10.0.0.2", 8303)
    clients = tf.sample_clients(64)
    frames = []
    ts = [capkit.DEFAULT_TS]

    def send(src, dst, payload):
        ts[0] += 0.001
        frames.append((ts[0], capkit.ethernet(capkit.udp_packet(*src, *dst, payload))))

    def exchange(port, extra, token, order=(0, 1, 2), reserved=b"\0\0", packets=None):
        client = ("10.0.0.9", port)
        send(client, server, tf.gie3(extra, token, reserved=reserved))
        packets = packets or tf.response_packets((extra << 8) | token, clients)
        for index in order:
            send(server, client, packets[index])

    exchange(50001, 0x0100, 0x01)                         # clean, 3 packets
    exchange(50002, 0x0200, 0x02, order=(0, 2))           # lost packet 1
    exchange(50003, 0x0300, 0x03, order=(0, 1, 1, 2))     # duplicate packet 1
    exchange(50004, 0x0400, 0x04, order=(2, 1, 0))        # reordered
    exchange(50005, 0x0500, 0x05, reserved=b"\xff\xff")  # reserved bytes set, as some clients do
    split = tf.response_packets(0x0606, clients)
    cut = split[1].rfind(b"\0", 0, len(split[1]) - 20) + 1
    split = [split[0], split[1][:cut + 9], split[2]]      # a record cut off at the end of packet 1
    exchange(50006, 0x0006, 0x06, packets=split)
    capkit.write_pcap(path, frames)


def odamex_session(path):
    """A launcher asks the master for its list, then each listed server for its info."""
    ffa_players = [("Doomguy", 12, 48, 0), ("Marine", 3, 112, 1)]
    peers = [
        od.master([("127.0.0.1", port) for port in range(10666, 10670)], port=15000),
        od.server(port=10666, players=ffa_players, layout="real", mode="dm", teams=2),     # real, free-for-all
        od.server(port=10667, players=od.REAL_PLAYERS, layout="real", mode="tdm", teams=3,  # real, team game
                  team_scores={"blue": 17, "red": 9}),
        od.server(port=10668, players=od.PLAYERS, ctf=True, teamplay=True, layout="spec",  # spec, CTF
                  team_scores={"blue": 2, "red": 1, "gold": 0}, name="CTF server", map_name="MAP07"),
        od.server(port=10669, players=od.PLAYERS, layout="spec"),                           # spec, teamplay off
    ]
    for peer in peers:
        peer.start()

    def exchange():
        od.query("127.0.0.1", 15000)
        od.query("127.0.0.1", 10666)
        od.query("127.0.0.1", 10667, key=b"\x11\x22\x33\x44")
        od.query("127.0.0.1", 10668)
        od.query("127.0.0.1", 10669)
    try:
        live_capture(path, "udp and host 127.0.0.1 and (port 15000 or portrange 10666-10669)", exchange)
    finally:
        for peer in peers:
            peer.stop()


def odamex_damaged(path):
    launcher, server, master = ("10.0.0.9", 40001), ("10.0.0.3", 10666), ("10.0.0.4", 15000)
    frames = []
    ts = [capkit.DEFAULT_TS]

    def send(src, dst, payload):
        ts[0] += 0.001
        frames.append((ts[0], capkit.ethernet(capkit.udp_packet(*src, *dst, payload))))

    send(launcher, master, od.request())
    send(master, launcher, od.master_list([("10.0.0.3", 10666)], count=4))                   # count_mismatch
    send(master, launcher, od.master_list([("10.0.0.3", 10666)])[:-2])                       # truncated entry
    good = od.server_info(players=od.PLAYERS, teamplay=True, team_scores={"blue": 1})
    send(server, launcher, good.replace(bytes([1, 3, 1]), bytes([7, 3, 1]), 1))             # game type 7
    send(server, launcher, good.replace(od.HASH.encode(), b"not-a-hash" + b"0" * 22))       # bad_hash
    send(server, launcher, od.server_info(players=od.PLAYERS, max_players=2))               # players > max
    send(server, launcher, good[:120])                                                       # truncated
    send(server, launcher, good + b"\x99\x98")                                               # trailing bytes
    real = od.server_info(players=od.REAL_PLAYERS, layout="real", mode="dm", teams=2)
    marine = od.s("Marine") + bytes.fromhex("feff 70000000")                                  # frags -2, ping 112
    send(server, launcher, real.replace(marine + b"\x03", marine + b"\x07"))                  # team 7, no team game
    capkit.write_pcap(path, frames)


def soldat_session(path):
    """Two real lobby exchanges over loopback TCP: Latin-1 separators on 13073, UTF-8 on 13074."""
    lobbies = [sp.Lobby(port=13073, encoding=sp.LATIN1).start(), sp.Lobby(port=13074, encoding=sp.UTF8).start()]

    def exchange():
        sp.query("127.0.0.1", 13073, sp.LATIN1)
        sp.query("127.0.0.1", 13074, sp.UTF8)
    try:
        live_capture(path, "tcp and host 127.0.0.1 and (port 13073 or port 13074)", exchange)
    finally:
        for lobby in lobbies:
            lobby.stop()


def _on_port(buf, port):
    import dpkt
    tcp = dpkt.ethernet.Ethernet(buf).data.data
    return isinstance(tcp, dpkt.tcp.TCP) and port in (tcp.sport, tcp.dport)


def _lobby_segments(frames, port=13073):
    """Indexes of the frames that carry lobby-to-client data on ``port``."""
    import dpkt
    out = []
    for index, (_, buf) in enumerate(frames):
        tcp = dpkt.ethernet.Ethernet(buf).data.data
        if isinstance(tcp, dpkt.tcp.TCP) and tcp.sport == port and tcp.data:
            out.append(index)
    return out


def soldat_damaged(session_path, reordered_path, lost_path):
    """Variants of the live Latin-1 exchange: segments reordered, retransmitted, overlapped, or lost."""
    import dpkt
    with open(session_path, "rb") as handle:
        frames = [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(handle)]
    frames = [f for f in frames if _on_port(f[1], 13073)]           # the Latin-1 connection only
    data = _lobby_segments(frames)
    reordered = list(frames)
    a, b = data[1], data[2]
    reordered[a], reordered[b] = reordered[b], reordered[a]            # an out-of-order pair
    retransmit = data[4]
    conflicting = bytearray(frames[data[5]][1])
    conflicting[-1] ^= 0x20                                            # same range, one byte differs
    reordered.insert(retransmit + 1, frames[retransmit])               # a plain retransmission
    reordered.insert(reordered.index(frames[data[5]]) + 1, (frames[data[5]][0], bytes(conflicting)))
    capkit.write_pcap(reordered_path, reordered)
    lost = [f for i, f in enumerate(frames) if i != data[3]]           # one lobby segment never arrives
    capkit.write_pcap(lost_path, lost)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crafted", action="store_true", help="only the captures that need no live capture")
    parser.add_argument("--only", nargs="+", choices=("netquake", "teeframe", "odamex", "soldat"),
                        help="only these protocols' captures")
    args = parser.parse_args()
    os.makedirs(CAPTURES, exist_ok=True)
    wanted = set(args.only or ("netquake", "teeframe", "odamex", "soldat"))

    def path(name):
        return os.path.join(CAPTURES, name)
    crafted = {"netquake": lambda: netquake_damaged(path("netquake-damaged.pcap")),
               "teeframe": lambda: teeframe_damaged(path("teeframe-damaged.pcap")),
               "odamex": lambda: odamex_damaged(path("odamex-damaged.pcap"))}
    live = {"netquake": lambda: netquake_session(path("netquake-session.pcap")),
            "teeframe": lambda: teeframe_session(path("teeframe-session.pcap")),
            "odamex": lambda: odamex_session(path("odamex-session.pcap")),
            "soldat": lambda: soldat_session(path("soldat-session.pcap"))}
    for name in sorted(wanted):
        if name in crafted:
            crafted[name]()
        if name in live and not args.crafted:
            live[name]()
    if "soldat" in wanted:
        soldat_damaged(path("soldat-session.pcap"), path("soldat-reordered.pcap"), path("soldat-lost.pcap"))
    print("captures written to", CAPTURES)


if __name__ == "__main__":
    main()
