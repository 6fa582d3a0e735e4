"""The fields and findings below the protocols: frames, link and IP layers, transports, expert info.

A display filter may name any of these keys beside the protocols' own (``-G fields`` lists them all).
"""

from ..core.tables import FieldTable, FindingTable

# What a frame's Protocol column says when no protocol claims its payload (the top layer decoded), and for a
# bare --payload message before its protocol's: no protocol may take one of these keys.
LAYER_KEYS = frozenset(("frame", "eth", "vlan", "null", "sll", "sll2", "ipv4", "ipv6", "udp", "tcp", "payload"))

FRAME_FIELDS = (
    FieldTable("frame", [
        ("number", "Frame number", "uint32", "the frame's number in the capture, from 1"),
        ("len", "Frame length", "uint32", "the frame's length on the wire"),
        ("cap_len", "Captured length", "uint32", "the bytes of the frame that were captured"),
        ("time", "Arrival time", "time", "seconds since 1970-01-01 UTC"),
        ("protocol", "Protocol", "string", "the highest protocol decoded (a protocol key, or udp, tcp, ip ...)"),
    ], title="Frame"),
    FieldTable("eth", [], title="Ethernet II"),
    FieldTable("vlan", [], title="802.1Q Virtual LAN"),
    FieldTable("null", [], title="Null/Loopback"),
    FieldTable("sll", [], title="Linux cooked capture v1"),
    FieldTable("sll2", [], title="Linux cooked capture v2"),
    FieldTable("ip", [
        ("src", "Source address", "address", "IPv4 source address"),
        ("dst", "Destination address", "address", "IPv4 destination address"),
        ("addr", "Source or destination address", "address", "either IPv4 address"),
    ], title="Internet Protocol version 4"),
    FieldTable("ipv6", [
        ("src", "Source address", "address", "IPv6 source address"),
        ("dst", "Destination address", "address", "IPv6 destination address"),
        ("addr", "Source or destination address", "address", "either IPv6 address"),
    ], title="Internet Protocol version 6"),
    FieldTable("udp", [
        ("srcport", "Source port", "uint16", "UDP source port"),
        ("dstport", "Destination port", "uint16", "UDP destination port"),
        ("port", "Source or destination port", "uint16", "either UDP port"),
    ], title="User Datagram Protocol"),
    FieldTable("tcp", [
        ("srcport", "Source port", "uint16", "TCP source port"),
        ("dstport", "Destination port", "uint16", "TCP destination port"),
        ("port", "Source or destination port", "uint16", "either TCP port"),
        ("stream", "Stream index", "uint32", "the TCP connection's number in the capture, from 0"),
    ], title="Transmission Control Protocol"),
    FieldTable("expert", [
        ("code", "Finding code", "string", "the code of a finding on the frame (e.g. netquake.bad_flags)"),
        ("severity", "Severity", "string", "a finding's severity: error, warning, note or chat"),
    ], title="Expert info"),
    FieldTable("analysis", [], title="Analysis", root_type="string",
               root_description='the name of an analysis record (analysis == "server_info")'),
    FieldTable("abuse", [
        ("analysis", "Analysis", "string", "the name of an abuse analysis record: request_flood, reflection, "
                                           "unsolicited_replies, token_reuse (a protocol's) or state_evicted"),
    ], title="Abuse analysis", root_description="an abuse analysis record (reflection and flood analysis)"),
)

FRAME_FINDINGS = FindingTable("capture", [
    ("corrupt", "error", "every record of a capture file must be readable; reading resumes where it can"),
    ("truncated_frame", "warning", "a frame captured shorter than its wire length (snap length)"),
    ("cut_message", "note", "a message longer than the bytes the capture kept (snap length) is decoded as far as "
                            "they go; its missing end is no fault of the message"),
    ("time_backwards", "note", "frames of a capture are written in the order they arrived"),
])

TCP_FINDINGS = FindingTable("tcp", [
    ("stream_evicted", "warning", "TCP streams open at once are limited to keep memory bounded"),
    ("retransmission", "note", "bytes of a stream already delivered are not delivered again, nor bytes from before "
                               "the first one a capture that began mid-stream saw"),
    ("keep_alive", "note", "one byte just before the next expected byte, other than the byte delivered there, is a "
                           "keep-alive probe (RFC 1122, 4.2.3.6), not data: no conflict"),
    ("out_of_order", "note", "a segment ahead of the next expected byte waits for the gap to fill"),
    ("buffer_limit", "warning", "bytes held behind a gap are limited per stream and in all"),
    ("overlap_conflict", "warning", "bytes sent twice in a stream must be the same bytes"),
    ("lost_segment", "warning", "a stream's bytes arrive without gaps"),
    ("cut_segment", "note", "a segment the capture's snap length cut leaves a gap in the stream that is no loss: "
                            "parsing resumes after it"),
    ("port_reused", "note", "a SYN that does not start where an open stream's bytes began, on its ports, is a new "
                            "connection: the old stream ends there; so is, once a side of the stream has sent its "
                            "FIN, a segment without SYN more than 1 MiB past its side's next expected byte, or more "
                            "than 1 MiB before its side's first byte (no SYN seen)"),
    ("data_after_close", "warning", "a stream ends at an RST or when both sides have sent their FIN: bytes either "
                                    "side sends after it (data in flight when the RST came) are not dissected"),
])

IP_FINDINGS = FindingTable("ip", [
    ("fragments_evicted", "warning", "IPv4 datagrams in reassembly are limited to keep memory bounded"),
    ("bad_fragment", "warning", "an IPv4 datagram is at most 65535 bytes"),
    ("fragment_overlap", "warning", "the fragments of an IPv4 datagram do not overlap"),
    ("bad_total_length", "error", "RFC 791: the total length counts the datagram's header and data, so it is no "
                                  "less than the header length and no more than the frame holds on the wire; the "
                                  "bytes after the header are decoded all the same (a total length of 0, which TCP "
                                  "segmentation offload leaves, is not flagged)"),
])

IPV6_FINDINGS = FindingTable("ipv6", [
    ("bad_payload_length", "error", "RFC 8200: the payload length counts the bytes after the 40-byte header, no "
                                    "more than the frame holds on the wire; the bytes the frame has are decoded all "
                                    "the same"),
])

UDP_FINDINGS = FindingTable("udp", [
    ("bad_length", "error", "RFC 768: the length counts the datagram's header and data, so it is at least 8 and no "
                            "more than the IP header's payload length; the payload is decoded all the same, up to "
                            "the IP payload's end"),
])

DISSECT_FINDINGS = FindingTable("dissect", [
    ("internal_error", "error", "a bug in dissect: the frame is reported and the capture goes on"),
])

# Reflection and flood analysis (dissect/analysis/abuse.py) across every protocol. The thresholds are
# options: a rate sustained over a window, at least rate x window requests in window consecutive seconds.
ABUSE_FINDINGS = FindingTable("abuse", [
    ("request_flood", "warning", "one source sends one server fewer query requests than the rate threshold "
                                 "sustained over the window (--abuse-rate, default 20 per second; --abuse-window, "
                                 "default 5 s)"),
    ("reflection", "warning", "servers answer the address that asked: an address that sends nothing but query "
                              "requests, or that sent none, while 3 or more servers are each asked by it, or answer "
                              "it, at least once a second over the window and the rate threshold is reached in all, "
                              "has the shape of a reflection victim"),
    ("unsolicited_replies", "warning", "a reply answers a request seen in the capture and fits the protocol's size "
                                       "limit; replies without a request, or over the limit, reaching one address "
                                       "above the rate threshold are a sign of reflection or spoofing"),
    ("state_evicted", "note", "addresses, servers, the peers they count, the seconds of rate history they keep, "
                              "address pairs and open queries followed by the abuse analysis are limited to keep "
                              "memory bounded"),
])

SHARED_FINDINGS = (FRAME_FINDINGS, TCP_FINDINGS, IP_FINDINGS, IPV6_FINDINGS, UDP_FINDINGS, DISSECT_FINDINGS,
                   ABUSE_FINDINGS)
