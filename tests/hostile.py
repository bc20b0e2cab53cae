"""Hostile captures: the writers behind tests/area_hostile.py, and the committed copies of
their output in tests/golden/ (python3 tests/golden.py --write-hostile writes those again;
the golden-manifest test checks that they are still what these functions write).

Each hostile_* function writes one capture to path; HOSTILE lists them by golden file name.
"""
import os
import struct

import craft

def raw_pcap(path, records, snaplen=262144, linktype=1):
    """records: (caplen field, wire len field, data bytes) written as given, lies included."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype))
        for i, (cap, wire, data) in enumerate(records):
            f.write(struct.pack("<IIII", 1700000000 + i, 0, cap, wire) + data)


def one_syn():
    c = craft.Conn(cport=41000)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460, sok=True, ts=(1, 0), ws=7))
    return c.out[0][1]


def pcapng(path, interfaces, packets):
    """A pcapng file: interfaces = [linktype], packets = [(interface, frame)]."""
    def block(t, body):
        body += b"\x00" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", t, n) + body + struct.pack("<I", n)
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for lt in interfaces:
        out += block(1, struct.pack("<HHI", lt, 0, 262144))
    for i, (ifc, frame) in enumerate(packets):
        ts = (1700000000 + i) * 1000000
        out += block(6, struct.pack("<IIIII", ifc, ts >> 32, ts & 0xFFFFFFFF, len(frame), len(frame)) + frame)
    open(path, "wb").write(out)


class Ng:
    """pcapng blocks, written in either byte order (be: big-endian), for captures libpcap and
    iwscope must read alike: Ng().shb() + Ng().idb(1) + Ng().epb(0, ts, frame) ... joined."""

    def __init__(self, be=False):
        self.e = ">" if be else "<"

    def block(self, t, body):
        body += b"\x00" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack(self.e + "II", t, n) + body + struct.pack(self.e + "I", n)

    def shb(self, minor=0):
        return self.block(0x0A0D0D0A, struct.pack(self.e + "IHHq", 0x1A2B3C4D, 1, minor, -1))

    def idb(self, linktype, snaplen=262144, tsresol=None, tsoffset=None):
        """tsresol: the if_tsresol byte (6 = us, 9 = ns, 0x80 | n = 2^-n); tsoffset: seconds."""
        opts = b""
        if tsresol is not None:
            opts += struct.pack(self.e + "HHB3x", 9, 1, tsresol)
        if tsoffset is not None:
            opts += struct.pack(self.e + "HHq", 14, 8, tsoffset)
        if opts:
            opts += struct.pack(self.e + "HH", 0, 0)
        return self.block(1, struct.pack(self.e + "HHI", linktype, 0, snaplen) + opts)

    def epb(self, ifc, ts, frame, wirelen=None):
        """ts in the interface's units."""
        return self.block(6, struct.pack(self.e + "IIIII", ifc, ts >> 32, ts & 0xFFFFFFFF, len(frame),
                                         len(frame) if wirelen is None else wirelen) + frame)

    def pb(self, ifc, ts, frame):
        return self.block(2, struct.pack(self.e + "HHIIII", ifc, 0, ts >> 32, ts & 0xFFFFFFFF, len(frame),
                                         len(frame)) + frame)

    def spb(self, frame):
        return self.block(3, struct.pack(self.e + "I", len(frame)) + frame)


def pcap_records(path):
    """(linktype, [(ts_us, frame)]) of a little-endian microsecond pcap file."""
    data = open(path, "rb").read()
    lt = struct.unpack("<I", data[20:24])[0]
    out, off = [], 24
    while off + 16 <= len(data):
        sec, usec, cap = struct.unpack("<III", data[off:off + 12])
        out.append((sec * 1000000 + usec, data[off + 16:off + 16 + cap]))
        off += 16 + cap
    return lt, out


def syn_flood(path, n, seed=1):
    """n SYNs from random addresses and ports, one per microsecond."""
    import random
    rnd = random.Random(seed)
    head = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        t0 = 1700000000 * 1000000
        for i in range(n):
            src = rnd.getrandbits(32)
            ip = struct.pack("!BBHHHBBHII", 0x45, 0, 40, 0, 0, 64, 6, 0, src, 0xC6336414)
            tcp = struct.pack("!HHIIBBHHH", 1024 + (src & 0xFFFF) % 60000, 80, src, 0, 0x50, 2, 64240, 0, 0)
            t = t0 + i
            f.write(struct.pack("<IIII", t // 1000000, t % 1000000, 54, 54) + head + ip + tcp)


def hostile_caplen_big(path):
    """A SYN, then a record claiming 300000 bytes (more than the snaplen and the file)."""
    syn = one_syn()
    raw_pcap(path, [(len(syn), len(syn), syn), (300000, 300000, b"\x00" * 64)])


def hostile_caplen_short(path):
    """A SYN, then a record cut by the end of the file."""
    syn = one_syn()
    raw_pcap(path, [(len(syn), len(syn), syn), (500, 500, syn)])


def hostile_zero(path):
    """Empty and one-byte records, then a SYN."""
    syn = one_syn()
    raw_pcap(path, [(0, 0, b""), (0, 60, b""), (1, 1, b"\x45"), (len(syn), len(syn), syn)])


def hostile_lengths(path):
    """IP and TCP header lengths past the packet, and a total length that lies."""
    syn = bytearray(one_syn())
    bad_ihl = bytearray(syn)
    bad_ihl[14] = 0x4F                      # IHL 60 bytes, total length 40
    bad_ihl[16:18] = b"\x00\x28"
    cut_ihl = bytes(bad_ihl[:14 + 30])      # IHL 60 bytes, 30 captured
    bad_tot = bytearray(syn)
    bad_tot[16:18] = b"\xff\xff"            # total length 65535, 60 captured: payload from the header
    bad_doff = bytearray(syn)
    bad_doff[14 + 20 + 12] = 0xF0           # data offset 60 bytes > segment 40
    craft.write_pcap(path, [(1.0, bytes(bad_ihl)), (1.05, cut_ihl), (1.1, bytes(bad_doff)),
                            (1.2, bytes(bad_tot))])


def hostile_options(path):
    """A SYN whose TS option has length 0, a SYN-ACK whose window scale runs past the header."""
    c = craft.Conn(cport=41001)
    c.c(0, "S", 0, 0, opts=b"\x02\x04\x05\xb4\x08\x00\x01\x01")   # TS option of length 0
    c.s(0.01, "SA", 0, 1, opts=b"\x02\x04\x05\xb4\x03\x05\x07\x00")  # ws runs past the header
    craft.write_pcap(path, c.out)


def hostile_v6chain(path):
    """IPv6 SYNs behind 3 and 40 extension headers, one whose length runs past the end, ESP."""
    tcp = craft.tcp(41002, 80, 1, 0, "S", opts=craft.tcp_options(mss=1440))

    def v6(next_hdr, payload):
        return struct.pack("!IHBB", 0x60000000, len(payload), next_hdr, 64) + b"\x20\x01" + b"\x00" * 13 + \
            b"\x01" + b"\x20\x01" + b"\x00" * 13 + b"\x02" + payload

    def chain(n, last):
        body = tcp
        nxt = 6
        for _ in range(n):
            body = bytes([nxt, 0]) + b"\x01\x04\x00\x00\x00\x00" + body
            nxt = 60
        return v6(nxt, body)
    frames = [(1.0, craft.ether(chain(3, 6), 0x86dd)),          # 3 headers: decoded
              (1.1, craft.ether(chain(40, 6), 0x86dd)),         # 40 headers: refused
              (1.2, craft.ether(v6(60, b"\x06\xff" + b"\x00" * 6), 0x86dd)),  # length past the end
              (1.3, craft.ether(v6(50, b"\x00" * 16), 0x86dd))]  # ESP
    craft.write_pcap(path, frames)


def hostile_wrap(path):
    """A server ISN 3000 bytes below 2^32: its IW10 flight wraps (no timestamps)."""
    c = craft.Conn(cport=41003, sisn=2**32 - 3000, cisn=2**32 - 5)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.0001, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.0200, "A", 1, 1)
    c.c(0.0001, "PA", 1, 1, payload=b"get")
    for i in range(10):
        c.s(0.0001, "A", 1 + 1460 * i, 4, payload=bytes(1460))
    c.c(0.0199, "A", 4, 1 + 1460)
    for i in range(10, 14):
        c.s(0.0001, "A", 1 + 1460 * i, 4, payload=bytes(1460))
    craft.write_pcap(path, c.out)


def hostile_backwards(path):
    """A handshake whose SYN-ACK is stamped 100 s before the SYN."""
    c = craft.Conn(cport=41004)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.01, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.01, "A", 1, 1)
    pk = list(c.out)
    pk[1] = (pk[1][0] - 100.0, pk[1][1])   # the SYN-ACK stamped 100 s before the SYN
    craft.write_pcap(path, pk)


def hostile_pcapng_multi(path):
    """A pcapng whose two interfaces differ in link type (Ethernet, raw IP)."""
    syn = one_syn()
    pcapng(path, [1, 101], [(0, syn), (1, syn[14:])])


def hostile_pcapng_one(path):
    """A pcapng of two Ethernet interfaces, the same SYN on each."""
    syn = one_syn()
    pcapng(path, [1, 1], [(0, syn), (1, syn)])


def hostile_flood(path):
    """40 SYNs from random addresses (the 1M flood's first 40), for a table capped at 16."""
    syn_flood(path, 40)


# golden file name (in tests/golden/) -> writer
HOSTILE = {
    "hostile-caplen-big.pcap": hostile_caplen_big,
    "hostile-caplen-short.pcap": hostile_caplen_short,
    "hostile-zero.pcap": hostile_zero,
    "hostile-lengths.pcap": hostile_lengths,
    "hostile-options.pcap": hostile_options,
    "hostile-v6chain.pcap": hostile_v6chain,
    "hostile-wrap.pcap": hostile_wrap,
    "hostile-backwards.pcap": hostile_backwards,
    "hostile-pcapng-multi.pcapng": hostile_pcapng_multi,
    "hostile-pcapng-one.pcapng": hostile_pcapng_one,
    "hostile-flood.pcap": hostile_flood,
}


def write_all(folder):
    """Writes every HOSTILE capture into folder; returns their paths."""
    out = []
    for name, fn in HOSTILE.items():
        p = os.path.join(folder, name)
        fn(p)
        out.append(p)
    return out
