"""One HTTP connection inside each tunnel and link layer iwscope decodes beyond plain IP:
Teredo, AYIYA, Geneve, GRE over UDP, CAPWAP (802.3 and 802.11 inside), 4in6, PPPoE over QinQ,
LLC/SNAP in an 802.3 length frame, FDDI, ARCnet (Linux's and BSD's headers). Each is
(name, link type, frames); area_decode.py asserts the flow each gives, tests/fuzz/run.py
seeds fuzz_decode with them."""
import struct

import craft

CLIENT4, SERVER4 = "192.0.2.10", "198.51.100.20"
CLIENT6, SERVER6 = "2001:db8::10", "2001:db8:1::20"
CPORT, SPORT = 40123, 80


def host_of(name):
    return "%s.tunnel.test" % name


def connection(name, v6=False):
    """The IP packets of one HTTP connection: (time, ip packet), asking for host_of(name)."""
    cip, sip = (CLIENT6, SERVER6) if v6 else (CLIENT4, SERVER4)
    ip = (lambda s, d, seg: craft.ipv6(s, d, seg)) if v6 else (lambda s, d, seg: craft.ipv4(s, d, seg))
    req = ("GET / HTTP/1.1\r\nHost: %s\r\nUser-Agent: t\r\n\r\n" % host_of(name)).encode()
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    c, s = 1000, 5000
    syn_opts = craft.tcp_options(mss=1400, sok=True, ts=(1, 0), ws=7)
    segs = [
        (0.000, cip, sip, craft.tcp(CPORT, SPORT, c, 0, "S", 64240, syn_opts)),
        (0.030, sip, cip, craft.tcp(SPORT, CPORT, s, c + 1, "SA", 65160,
                                    craft.tcp_options(mss=1400, sok=True, ts=(9, 1), ws=7))),
        (0.031, cip, sip, craft.tcp(CPORT, SPORT, c + 1, s + 1, "A", 502)),
        (0.032, cip, sip, craft.tcp(CPORT, SPORT, c + 1, s + 1, "PA", 502, payload=req)),
        (0.062, sip, cip, craft.tcp(SPORT, CPORT, s + 1, c + 1 + len(req), "PA", 510, payload=resp)),
        (0.063, cip, sip, craft.tcp(CPORT, SPORT, c + 1 + len(req), s + 1 + len(resp), "FA", 502)),
        (0.093, sip, cip, craft.tcp(SPORT, CPORT, s + 1 + len(resp), c + 2 + len(req), "FA", 510)),
        (0.094, cip, sip, craft.tcp(CPORT, SPORT, c + 2 + len(req), s + 2 + len(resp), "A", 502)),
    ]
    return [(1700000000.0 + t, ip(a, b, seg)) for t, a, b, seg in segs]


def udp(sport, dport, payload):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def outer_udp(sport, dport, payload):
    """Ethernet, IPv4 between two tunnel endpoints, UDP."""
    return craft.ether(craft.ipv4("203.0.113.1", "203.0.113.2", udp(sport, dport, payload), proto=17))


def eth_inner(ip):
    return craft.ether(ip, 0x86DD if ip[0] >> 4 == 6 else 0x0800)


SNAP_IP4 = b"\xaa\xaa\x03\x00\x00\x00\x08\x00"


def teredo(ip):
    # an authentication indicator (id 2 bytes, value 0, nonce, confirmation), an origin
    # indication, then IPv6 (RFC 4380 5.1.1)
    auth = b"\x00\x01\x02\x00" + b"id" + b"\x11" * 8 + b"\x00"
    origin = b"\x00\x00" + b"\xbe\xef" + b"\x32\x32\x32\x32"
    return outer_udp(53000, 3544, auth + origin + ip)


def ayiya(ip):
    # 16-byte identity (2^4), a 20-byte SHA-1 signature (5 words), opcode 1 forward, next
    # header 41 (IPv6) or 4 (IPv4)
    hdr = bytes([0x41, 0x52, 0x11, 41 if ip[0] >> 4 == 6 else 4]) + struct.pack("!I", 1700000000) + b"\x22" * 16 + b"\x33" * 20
    return outer_udp(5072, 5072, hdr + ip)


def geneve(ip):
    opt = struct.pack("!HBB", 0x0102, 0x01, 1) + b"\x00\x00\x00\x07"  # one 4-byte option
    hdr = bytes([0x00 | 2, 0x00]) + struct.pack("!H", 0x6558) + b"\x00\x00\x2a\x00"
    return outer_udp(49152, 6081, hdr + opt + eth_inner(ip))


def gre_udp(ip):
    return outer_udp(49153, 4754, struct.pack("!HH", 0, 0x0800) + ip)


def capwap(ip, native, swap_fc=False):
    # HLEN 2 words, RID 1, WBID 1 (IEEE 802.11), T: the frame is 802.11 (native) or 802.3
    w0 = (2 << 19) | (1 << 14) | (1 << 9) | ((1 << 8) if native else 0)
    hdr = struct.pack("!II", w0, 0)
    if native:  # a QoS data frame to the AP (To DS), LLC/SNAP, IPv4; Cisco swaps the FC's bytes
        frame = (bytes([0x01, 0x88]) if swap_fc else bytes([0x88, 0x01])) + b"\x00\x00" + b"\x02\x00\x00\x00\x00\x01" * 3 + b"\x10\x00" + \
            b"\x00\x00" + SNAP_IP4 + ip
    else:
        frame = eth_inner(ip)
    return outer_udp(12222, 5247, hdr + frame)


def in6(ip):
    return craft.ether(craft.ipv6("2001:db8:ffff::1", "2001:db8:ffff::2", ip, proto=4), 0x86DD)


def pppoe_qinq(ip):
    ppp = struct.pack("!H", 0x0021) + ip
    pppoe = struct.pack("!BBHH", 0x11, 0, 0x1234, len(ppp)) + ppp
    tags = struct.pack("!HH", 100, 0x8100) + struct.pack("!HH", 200, 0x8864)
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + struct.pack("!H", 0x88A8) + tags + pppoe


def llc_snap(ip):
    body = SNAP_IP4 + ip
    frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + struct.pack("!H", len(body)) + body
    return frame + b"\x00" * max(0, 60 - len(frame))  # padded to Ethernet's minimum


def fddi(ip):
    return b"\x50" + b"\x00\x04\x00\x83\xa7\xaa" + b"\x00\x04\x00\x82\xa7\xaa" + SNAP_IP4 + ip


def arcnet_linux(ip):
    return bytes([0xbe, 0x50, 0x00, 0x00, 212, 0x00, 0x01, 0x65]) + ip


def arcnet_bsd(ip):
    return bytes([0xbe, 0x50, 212, 0x00, 0x01, 0x65]) + ip


# name, link type (pcap LINKTYPE), wrapper, inner IPv6
TUNNELS = [
    ("teredo", 1, teredo, True),
    ("ayiya", 1, ayiya, False),
    ("ayiya6", 1, ayiya, True),
    ("geneve", 1, geneve, False),
    ("gre-udp", 1, gre_udp, False),
    ("capwap-8023", 1, lambda ip: capwap(ip, False), False),
    ("capwap-80211", 1, lambda ip: capwap(ip, True, swap_fc=True), False),  # as Cisco's APs
    ("capwap-80211-rfc", 1, lambda ip: capwap(ip, True), False),  # RFC 5416's byte order
    ("4in6", 1, in6, False),
    ("pppoe-qinq", 1, pppoe_qinq, False),
    ("llc-snap", 1, llc_snap, False),
    ("fddi", 10, fddi, False),
    ("arcnet-linux", 129, arcnet_linux, False),
    ("arcnet", 7, arcnet_bsd, False),
]


def captures():
    """[(name, link type, [(time, frame)])] for every tunnel."""
    out = []
    for name, lt, wrap, v6 in TUNNELS:
        out.append((name, lt, [(t, wrap(ip)) for t, ip in connection(name, v6)]))
    return out
