"""Hand-made packets for tests: a classic pcap writer and IPv4/IPv6 + TCP builders.
Used where a behaviour needs an exact packet sequence the Linux stack will not produce on
request (simultaneous open, refused SYN, port reuse, hostile headers)."""
import struct

LINKTYPE_ETHERNET = 1


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def tcp_options(mss=None, sok=False, ts=None, ws=None, raw=None):
    """Options in Linux's SYN order: mss, sok, ts, nop, ws."""
    if raw is not None:
        return raw
    o = b""
    if mss is not None:
        o += struct.pack("!BBH", 2, 4, mss)
    if sok:
        o += b"\x04\x02"
    if ts is not None:
        o += struct.pack("!BBII", 8, 10, ts[0], ts[1])
    elif sok:
        o = o[:-2] + b"\x01\x01\x04\x02"
    if ws is not None:
        o += b"\x01" + struct.pack("!BBB", 3, 3, ws)
    while len(o) % 4:
        o += b"\x00"
    return o


def tcp(sport, dport, seq, ack, flags, win=64240, opts=b"", payload=b"", doff=None):
    fl = 0
    for ch, bit in (("F", 1), ("S", 2), ("R", 4), ("P", 8), ("A", 16)):
        if ch in flags:
            fl |= bit
    hl = 20 + len(opts)
    d = doff if doff is not None else hl // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                       d << 4, fl, win, 0, 0) + opts + payload


def ipv4(src, dst, payload, proto=6, ttl=64, frag=0, tot=None):
    s = bytes(int(x) for x in src.split("."))
    d = bytes(int(x) for x in dst.split("."))
    length = tot if tot is not None else 20 + len(payload)
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, length, 1, frag, ttl, proto, 0, s, d)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def ipv6(src, dst, payload, proto=6, hlim=64):
    import socket
    return (struct.pack("!IHBB", 6 << 28, len(payload), proto, hlim) + socket.inet_pton(socket.AF_INET6, src)
            + socket.inet_pton(socket.AF_INET6, dst) + payload)


def ether(ip, ethertype=0x0800):
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + struct.pack("!H", ethertype) + ip


def write_pcap(path, packets, linktype=LINKTYPE_ETHERNET, snaplen=262144):
    """packets: list of (time_seconds_float, frame_bytes) or (time, frame, wire_len)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype))
        for p in packets:
            t, frame = p[0], p[1]
            wire = p[2] if len(p) > 2 else len(frame)
            sec = int(t)
            usec = int(round((t - sec) * 1e6))
            f.write(struct.pack("<IIII", sec, usec, len(frame), wire))
            f.write(frame)


class Conn:
    """Builds the packets of one TCP connection as Ethernet frames (IPv6 when the addresses
    are)."""

    def __init__(self, cip="192.0.2.10", sip="198.51.100.20", cport=40000, sport=80,
                 cisn=1000, sisn=5000, t0=1700000000.0):
        self.cip, self.sip, self.cport, self.sport = cip, sip, cport, sport
        self.cisn, self.sisn, self.t = cisn, sisn, t0
        self.out = []

    def _frame(self, src, dst, seg, ttl):
        if ":" in src:
            return ether(ipv6(src, dst, seg, hlim=ttl), 0x86DD)
        return ether(ipv4(src, dst, seg, ttl=ttl))

    def c(self, dt, flags, seq, ack, **kw):
        self.t += dt
        ttl = kw.pop("ttl", 64)
        self.out.append((self.t, self._frame(self.cip, self.sip, tcp(self.cport, self.sport,
                                                                     self.cisn + seq, self.sisn + ack, flags, **kw), ttl)))

    def s(self, dt, flags, seq, ack, **kw):
        self.t += dt
        ttl = kw.pop("ttl", 64)
        self.out.append((self.t, self._frame(self.sip, self.cip, tcp(self.sport, self.cport,
                                                                     self.sisn + seq, self.cisn + ack, flags, **kw), ttl)))
