#!/usr/bin/env python3
"""Seeds and runs the libFuzzer targets (make fuzz; make test runs a short smoke).

    python3 tests/fuzz/run.py SECONDS [TARGET ...]

Seed corpora come from tests/pcaps: single frames (prefixed by their link type's index) for
fuzz_decode (and tests/tunnels.py's frames inside tunnels), SYN option bytes for fuzz_options, the first records of each capture for
fuzz_capture, pcapng files of many shapes for fuzz_pcapng, hand-built connections (IW10, a
loss, no timestamps, TFO) for fuzz_flight, a ClientHello and an HTTP request in segments for fuzz_names. Corpora grow in build/fuzz-corpus/; a crash is saved in build/fuzz-artifacts/
and makes the run fail (copy it to tests/pcaps/fuzz/ as a regression capture)."""
import functools
import glob
import os
import re
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
LINKTYPE_TO_DLT = {101: 12}


def link_types():
    """The DLT values of decode_link_types (src/analysis/decode.c), in the table's order:
    fuzz_decode's first byte is an index into it."""
    src = open(os.path.join(ROOT, "src", "analysis", "decode.c")).read()
    table = src.split("decode_link_types[] = {", 1)[1].split("};", 1)[0]
    dlts = [int(m.group(1)) for m in re.finditer(r'^\s*\{\s*(\d+),\s*"', table, re.M)]
    assert dlts, "no link types in decode.c's decode_link_types"
    return dlts


DLTS = link_types()


def records(path, limit):
    data = open(path, "rb").read()
    if len(data) < 24 or data[:4] != b"\xd4\xc3\xb2\xa1":
        return None, []
    lt = struct.unpack("<I", data[20:24])[0]
    out, off = [], 24
    while off + 16 <= len(data) and len(out) < limit:
        cap = struct.unpack("<I", data[off + 8:off + 12])[0]
        out.append(data[off:off + 16 + cap])
        off += 16 + cap
    return lt, out


@functools.lru_cache(maxsize=None)
def suite():
    """The tests' capture writers (tests/helpers.py, tests/hostile.py), loaded once."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import types
    import helpers
    import hostile
    return types.SimpleNamespace(pcapng=hostile.pcapng, Ng=hostile.Ng, first_payload=helpers.first_payload)


def seed(target, corpus):
    os.makedirs(corpus, exist_ok=True)
    caps = sorted(glob.glob(os.path.join(ROOT, "tests", "pcaps", "link", "*.pcap")) +
                  glob.glob(os.path.join(ROOT, "tests", "pcaps", "dpi", "apps.client.pcap")) +
                  glob.glob(os.path.join(ROOT, "tests", "pcaps", "truth", "*.mid.pcap")))
    n = 0
    if target == "fuzz_flight":
        for name, recs in flight_seeds().items():
            open(os.path.join(corpus, name), "wb").write(b"".join(recs))
        return len(flight_seeds())
    if target == "fuzz_pcapng":
        for name, data in pcapng_seeds(caps).items():
            open(os.path.join(corpus, name), "wb").write(data)
        return len(pcapng_seeds(caps))
    if target == "fuzz_quic":
        for name, data in quic_seeds().items():
            open(os.path.join(corpus, name), "wb").write(data)
        return len(quic_seeds())
    if target == "fuzz_names":
        for name, data in names_seeds().items():
            open(os.path.join(corpus, name), "wb").write(data)
        return len(names_seeds())
    if target == "fuzz_decode":
        n += tunnel_seeds(corpus)
    for path in caps:
        lt, recs = records(path, 40)
        if lt is None:
            continue
        dlt = LINKTYPE_TO_DLT.get(lt, lt)
        name = os.path.basename(path)
        if target == "fuzz_decode" and dlt in DLTS:
            for i, r in enumerate(recs[:8]):
                open(os.path.join(corpus, "%s-%d" % (name, i)), "wb").write(bytes([DLTS.index(dlt)]) + r[16:])
                n += 1
        elif target == "fuzz_options" and dlt == 1:
            frame = recs[0][16:]
            ihl = (frame[14] & 15) * 4
            doff = (frame[14 + ihl + 12] >> 4) * 4
            opts = frame[14 + ihl + 20:14 + ihl + doff]
            open(os.path.join(corpus, name), "wb").write(b"\x00" + opts)
            n += 1
        elif target == "fuzz_pcapfile":
            data = open(path, "rb").read()
            head = data[:24] + b"".join(recs)
            open(os.path.join(corpus, name), "wb").write(head)
            # the same records as nanosecond and as big-endian files, and cut short
            nano = bytearray(head)
            nano[0:4] = struct.pack("<I", 0xa1b23c4d)
            open(os.path.join(corpus, name + ".nsec"), "wb").write(bytes(nano))
            swapped = bytearray(struct.pack(">IHHiIII", *struct.unpack("<IHHiIII", head[:24])))
            off = 24
            while off + 16 <= len(head):
                f4 = struct.unpack("<IIII", head[off:off + 16])
                swapped += struct.pack(">IIII", *f4) + head[off + 16:off + 16 + f4[2]]
                off += 16 + f4[2]
            open(os.path.join(corpus, name + ".be"), "wb").write(bytes(swapped))
            open(os.path.join(corpus, name + ".cut"), "wb").write(head[:len(head) - 7])
            suite().pcapng(os.path.join(corpus, name + ".pcapng"), [lt], [(0, r[16:]) for r in recs])
            n += 5
        elif target == "fuzz_capture":
            with open(path, "rb") as f:
                head = f.read(24)
            open(os.path.join(corpus, name), "wb").write(head + b"".join(recs))
            n += 1
    return n


def tunnel_seeds(corpus):
    """fuzz_decode's seeds inside tunnels and other link layers (tests/tunnels.py: Teredo,
    AYIYA, Geneve, GRE over UDP, CAPWAP, 4in6, PPPoE over QinQ, LLC/SNAP, FDDI, ARCnet): the
    handshake and the request of each."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import tunnels
    n = 0
    for name, lt, frames in tunnels.captures():
        dlt = LINKTYPE_TO_DLT.get(lt, lt)
        for i, (_, frame) in enumerate(frames[:4]):
            open(os.path.join(corpus, "tunnel-%s-%d" % (name, i)), "wb").write(bytes([DLTS.index(dlt)]) + frame)
            n += 1
    return n


def flight_record(dir, flags, dt_us, length=0, ts=True, seq=0, ack=0, mss=0, win=64240):
    """One packet of fuzz_flight's input (its comment gives the layout)."""
    opts = (2 if ts else 0) | (4 if flags & 0x02 else 0)
    return struct.pack(">BBHhhHHBBBB", dir | opts, flags, dt_us // 10, seq, ack, length, win,
                       1 if ts else 0, 0, mss // 8, 0)


def flight_seeds():
    """Connections fuzz_flight starts from: the shapes INFERENCE.md's rules are about."""
    SYN, ACK, PSH = 0x02, 0x10, 0x08
    out = {}
    for ts in (True, False):
        seg = 1448 if ts else 1460
        hs = [flight_record(0, SYN, 0, ts=ts, mss=1460), flight_record(1, SYN | ACK, 30000, ts=ts, mss=1460),
              flight_record(0, ACK, 100, ts=ts), flight_record(0, ACK | PSH, 100, 100, ts=ts)]
        burst = [flight_record(1, ACK, 30000 if i == 0 else 20, seg, ts=ts) for i in range(10)]
        nxt = [flight_record(0, ACK, 200, ts=ts)] + [flight_record(1, ACK, 30000 if i == 0 else 20, seg, ts=ts)
                                                      for i in range(20)]
        out["iw10" + ("" if ts else "-nots")] = hs + burst + nxt
        lost = list(burst)
        lost.append(flight_record(1, ACK, 200000, seg, ts=ts, seq=-seg))
        out["loss" + ("" if ts else "-nots")] = hs + lost
    out["tfo"] = [flight_record(0, SYN, 0, 120, mss=1460), flight_record(1, SYN | ACK, 30000, mss=1460)] + \
        [flight_record(1, ACK, 20, 1448) for _ in range(10)] + [flight_record(0, ACK, 30000)]
    return out


def pcapng_seeds(caps):
    """pcapng files fuzz_pcapng starts from: each link capture's first records in both byte
    orders, with nanosecond, 2^-20 s and offset time stamps, as simple and obsolete packet
    blocks; interfaces of three link types and two snapshot lengths; two sections, the second
    in the other byte order; blocks of other types between the packets."""
    Ng = suite().Ng
    out = {}
    mixed = []
    for path in caps:
        lt, recs = records(path, 12)
        if lt is None:
            continue
        name = os.path.basename(path)
        frames = [(struct.unpack("<II", r[:8]), r[16:]) for r in recs]
        for be in (False, True):
            ng = Ng(be)
            us = b"".join(ng.epb(0, s * 1000000 + u, f) for (s, u), f in frames)
            out["%s%s.pcapng" % (name, ".be" if be else "")] = ng.shb() + ng.idb(lt) + us
        ng = Ng()
        out[name + ".ns.pcapng"] = ng.shb() + ng.idb(lt, tsresol=9) + \
            b"".join(ng.epb(0, (s * 1000000 + u) * 1000 + 7, f) for (s, u), f in frames)
        out[name + ".bin.pcapng"] = ng.shb(minor=2) + ng.idb(lt, tsresol=0x94, tsoffset=1700000000) + \
            b"".join(ng.epb(0, (u << 20) // 1000000 + (s - 1700000000 << 20), f) for (s, u), f in frames)
        out[name + ".spb-pb.pcapng"] = ng.shb() + ng.idb(lt, snaplen=128) + ng.spb(frames[0][1]) + \
            b"".join(ng.pb(0, s * 1000000 + u, f[:128]) for (s, u), f in frames[1:])
        if lt in (1, 113, 101):
            mixed.append((lt, frames))
    ng, be = Ng(), Ng(True)
    ifaces = b"".join(ng.idb(lt, snaplen=262144 if i else 1500) for i, (lt, _) in enumerate(mixed[:3]))
    pkts = b"".join(ng.epb(i, s * 1000000 + u, f) for k in range(4)
                    for i, (lt, fr) in enumerate(mixed[:3]) for (s, u), f in fr[k:k + 1])
    stats = ng.block(5, struct.pack("<IIIHH", 0, 0, 0, 0, 0))  # an interface statistics block
    out["mixed.pcapng"] = ng.shb() + ifaces + pkts[:len(pkts) // 2] + stats + pkts[len(pkts) // 2:]
    if mixed:
        lt, fr = mixed[0]
        out["sections.pcapng"] = ng.shb() + ng.idb(lt) + ng.epb(0, 5, fr[0][1]) + \
            be.shb() + be.idb(lt, tsresol=9) + be.epb(0, 7000, fr[1][1])
    return out


def names_seeds():
    """Client segments fuzz_names starts from: a real ClientHello and an HTTP request, whole,
    split in order, the second part first, and after a SOCKS5 greeting."""
    hello = suite().first_payload(os.path.join(ROOT, "tests", "pcaps", "dpi", "apps.client.pcap"), 443)
    req = b"GET / HTTP/1.1\r\nUser-Agent: t\r\nHost: [2001:db8::1]:8080\r\n\r\n"

    def segs(syn, parts):
        return bytes([syn]) + b"".join(struct.pack(">hH", off, len(p)) + p for off, p in parts)
    out = {}
    for tag, m in (("tls", hello), ("http", req)):
        out[tag] = segs(1, [(0, m)])
        out[tag + "-split"] = segs(1, [(0, m[:40]), (40, m[40:])])
        out[tag + "-reversed"] = segs(1, [(40, m[40:]), (0, m[:40])])
        out[tag + "-socks"] = segs(0, [(0, b"\x05\x01\x00"), (3, m)])
    return out


@functools.lru_cache(maxsize=None)
def quic_seeds():
    """fuzz_quic's seeds: the first UDP datagrams of the QUIC captures in ../shared/captures
    (where present; mode 0), the ClientHello of tests/pcaps/dpi's TLS flow as a hello (mode 2)
    and as a CRYPTO frame (mode 1), Google QUIC's old public header (mode 3: one made here,
    WeChat's first where present)."""
    out = {}
    shared = os.path.join(os.path.dirname(ROOT), "shared", "captures")
    for path in sorted(glob.glob(os.path.join(shared, "*", "*quic*.pcap"))):
        lt, recs = records(path, 6)
        for i, r in enumerate(recs):
            frame = r[16:]
            off = {1: 14, 113: 16, 101: 0, 0: 4}.get(lt)
            if off is None or len(frame) < off + 28:
                continue
            ip = frame[off:]
            v = ip[0] >> 4
            udp = (ip[0] & 15) * 4 if v == 4 and ip[9] == 17 else 40 if v == 6 and ip[6] == 17 else None
            if udp is None:
                continue
            out["%s-%d" % (os.path.basename(path), i)] = b"\x00" + ip[udp + 8:]
    # Google QUIC's public header before Q046 (mode 3): one written here, and WeChat's
    out["gquic-q035"] = b"\x03\x0d" + bytes(range(8)) + b"Q035" + b"\x01" + b"\x00" * 40
    wechat = os.path.join(shared, "ndpi", "wechat.pcap")
    if os.path.exists(wechat):
        lt, recs = records(wechat, 2000)
        off = {1: 14, 113: 16, 101: 0, 0: 4}.get(lt)
        n = 0
        for i, r in enumerate(recs):
            ip = r[16:][off:] if off is not None else b""
            if n >= 4 or len(ip) < 41 or ip[0] >> 4 != 4 or ip[9] != 17:
                continue
            pl = ip[(ip[0] & 15) * 4 + 8:]
            if len(pl) > 13 and pl[0] & 0x83 == 0x01 and pl[0] & 0x08 and pl[9:11] == b"Q0":
                out["wechat-%d" % i] = b"\x03" + pl
                n += 1
    hello = suite().first_payload(os.path.join(ROOT, "tests", "pcaps", "dpi", "apps.client.pcap"), 443)
    if hello and len(hello) > 5:
        msg = hello[5:]
        out["hello"] = b"\x02" + msg
        out["crypto"] = b"\x01\x06\x00" + struct.pack(">H", 0x4000 | len(msg)) + msg + b"\x00" * 20
    return out


def fuzz(t, seconds):
    """Seeds and runs one target; returns (its summary lines, whether it failed)."""
    corpus = os.path.join(BUILD, "fuzz-corpus", t)
    arts = os.path.join(BUILD, "fuzz-artifacts") + "/"
    os.makedirs(arts, exist_ok=True)
    seeds = seed(t, corpus)
    r = subprocess.run([os.path.join(BUILD, t), corpus, "-max_total_time=%d" % seconds,
                        "-artifact_prefix=" + arts + t + "-", "-print_final_stats=1",
                        "-rss_limit_mb=2048", "-max_len=65536", "-timeout=10"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    runs = [l for l in r.stdout.splitlines() if l.startswith("stat::number_of_executed_units")]
    cov = [l for l in r.stdout.splitlines() if " cov: " in l]
    out = ["%s: %d seeds, %s, %s, exit %d" % (t, seeds, runs[-1].split()[-1] + " runs" if runs else "?",
                                              cov[-1].split(" cov: ")[1].split()[0] + " edges" if cov else "?",
                                              r.returncode)]
    if r.returncode != 0:
        out += r.stdout.splitlines()[-40:]
    return out, r.returncode != 0


def main():
    """Targets run side by side, one per core (each libFuzzer run is single-threaded)."""
    import concurrent.futures
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    targets = sys.argv[2:] or ["fuzz_decode", "fuzz_options", "fuzz_capture", "fuzz_pcapfile", "fuzz_pcapng",
                               "fuzz_flight", "fuzz_names", "fuzz_quic"]
    suite()  # loaded once, before the threads
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda t: fuzz(t, seconds), targets))
    for lines, _ in results:
        print("\n".join(lines))
    return 1 if any(bad for _, bad in results) else 0


if __name__ == "__main__":
    sys.exit(main())
