#!/usr/bin/env python3
"""The truth lab's captures under the conditions users' captures have (docs/METHOD.md "How the
method is checked"): each scenario's capture at each vantage point judged again

    server    only the server's packets (one direction of an asymmetric path, a span port)
    client    only the client's packets
    snap68    every frame cut to 68 bytes (tcpdump's old default snaplen)
    snap54    cut to 54 bytes (Ethernet, IPv4 and TCP headers without options)
    twofiles  the two directions as two inputs (a tap's two ports): -r server -r client
    doubled   every frame twice, the copy 40 us later and its TTL one lower (a SPAN port given
              a link's two ports, `-i any` over a bridge, two taps around a router)
    jitter    every frame's time moved by up to 100 us either way, the frames in their order
              (stamped on several CPUs or queues, written in the order they were read): times
              that step back

What must hold under every condition: no false statement. An exact IW (cwnd) is false unless
the flight really was window-limited at its true IW (the truth says cwnd, or "lower": the true
IW is the only exact IW allowed); a lower bound is false when it exceeds the true IW. And the
one-direction versions keep most exact verdicts of the whole capture: of the flights the whole
capture judges exact (with timestamps), how many the sender's own direction still judges exact.

Used by tests/area_truth.py; alone: python3 tests/conditions.py BINARY [-v] [SCENARIO ...]."""
import concurrent.futures
import ctypes
import ctypes.util
import glob
import json
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runcache  # noqa: E402
import truthcheck  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUTH = os.path.join(ROOT, "tests", "pcaps", "truth")
VANTAGES = ("client", "mid", "server", "host")  # host: a loopback capture (lo_*, lo1500_*)
CONDITIONS = ("server", "client", "snap68", "snap54", "twofiles", "doubled", "jitter")
LOWER = ("app", "nagle", "ambiguous", "rwnd")


def derive(pcap, cond, port, d, proto="tcp"):
    """The input files of pcap under cond, made in directory d (proto: tcp, or udp for QUIC)."""
    base = os.path.join(d, os.path.basename(pcap))

    def direction(which):
        out = "%s.%s" % (base, which)
        if not os.path.exists(out):
            expr = "%s %s port %d" % (proto, "src" if which == "server" else "dst", port)
            tcpdump_w(pcap, out, expr)
        return out

    if cond in ("server", "client"):
        return [direction(cond)]
    if cond == "twofiles":
        return [direction("server"), direction("client")]
    out = "%s.%s" % (base, cond)
    if cond == "doubled":
        doubled(pcap, out)
        return [out]
    if cond == "jitter":
        jittered(pcap, out)
        return [out]
    subprocess.run(["editcap", "-s", cond[4:], pcap, out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return [out]


def pcap_read(pcap):
    """(file header, [(time us, frame, wire length)]) of a little-endian microsecond pcap."""
    with open(pcap, "rb") as f:
        head, data = f.read(24), f.read()
    if struct.unpack("<I", head[:4])[0] != 0xa1b2c3d4:
        raise ValueError("%s: not a little-endian microsecond pcap" % pcap)
    out, at = [], 0
    while at + 16 <= len(data):
        sec, usec, cap, wire = struct.unpack("<IIII", data[at:at + 16])
        out.append((sec * 1000000 + usec, data[at + 16:at + 16 + cap], wire))
        at += 16 + cap
    return head, out


def pcap_write(out, head, records):
    """Writes records [(time us, frame, wire length)] after pcap_read's file header."""
    with open(out, "wb") as f:
        f.write(head)
        for t, frame, wire in records:
            f.write(struct.pack("<IIII", t // 1000000, t % 1000000, len(frame), wire))
            f.write(frame)


def doubled(pcap, out, lag_us=40, copies_only=False, snap=None):
    """Writes pcap (classic pcap, microseconds, Ethernet) with every frame twice: the copy
    lag_us later with its IP TTL (hop limit) one lower and IPv4's header checksum made again,
    as a second capture point past a router would see it; frames in time order. copies_only:
    the copies alone (that capture point's own file); snap: the copies cut to that many bytes
    (a second capture point with another snaplen)."""
    head, frames = pcap_read(pcap)
    if struct.unpack("<I", head[20:24])[0] != 1:
        raise ValueError("%s: not an Ethernet pcap" % pcap)
    copies = []
    for t, frame, wire in frames:
        b = bytearray(frame)
        off, etype = 14, struct.unpack(">H", b[12:14])[0] if len(b) >= 14 else 0
        while etype in (0x8100, 0x88a8) and len(b) >= off + 4:
            etype, off = struct.unpack(">H", b[off + 2:off + 4])[0], off + 4
        if etype == 0x0800 and len(b) >= off + 20 and b[off + 8] > 0:
            b[off + 8] -= 1
            ihl = (b[off] & 0x0f) * 4
            b[off + 10:off + 12] = b"\0\0"
            words = sum(struct.unpack(">%dH" % (ihl // 2), bytes(b[off:off + ihl])))
            while words >> 16:
                words = (words & 0xffff) + (words >> 16)
            b[off + 10:off + 12] = struct.pack(">H", ~words & 0xffff)
        elif etype == 0x86dd and len(b) >= off + 40 and b[off + 7] > 0:
            b[off + 7] -= 1
        copies.append((t + lag_us, bytes(b[:snap] if snap else b), wire))
    # in time order, a frame before its copy at the same time (sorted is stable)
    pcap_write(out, head, sorted(([] if copies_only else frames) + copies, key=lambda r: r[0]))


def jittered(pcap, out, us=100):
    """Writes pcap (classic pcap, microseconds) with each frame's time moved by a random amount
    of up to us either way (seeded by the file's name: the same every run), the frames in their
    order: a capture whose clock steps back from one frame to the next."""
    import random
    head, frames = pcap_read(pcap)
    rnd = random.Random(os.path.basename(pcap))
    pcap_write(out, head, [(t + rnd.randint(-us, us), frame, wire) for t, frame, wire in frames])


class _Bpf(ctypes.Structure):
    _fields_ = [("bf_len", ctypes.c_uint), ("bf_insns", ctypes.c_void_p)]


def _libpcap():
    """libpcap with the prototypes tcpdump_w calls, or None."""
    name = ctypes.util.find_library("pcap")
    if not name:
        return None
    lib = ctypes.CDLL(name)
    lib.pcap_open_offline_with_tstamp_precision.restype = ctypes.c_void_p
    lib.pcap_open_offline_with_tstamp_precision.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p]
    lib.pcap_compile.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Bpf), ctypes.c_char_p, ctypes.c_int,
                                 ctypes.c_uint32]
    lib.pcap_setfilter.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Bpf)]
    lib.pcap_dump_open.restype = ctypes.c_void_p
    lib.pcap_dump_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.pcap_loop.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.pcap_dump_close.argtypes = [ctypes.c_void_p]
    lib.pcap_freecode.argtypes = [ctypes.POINTER(_Bpf)]
    lib.pcap_close.argtypes = [ctypes.c_void_p]
    return lib


_PCAP = _libpcap()


def tcpdump_w(pcap, out, expr):
    """What `tcpdump -r PCAP -w OUT EXPR` writes, made in this process by the libpcap calls
    tcpdump makes (the file opened with microsecond times, EXPR compiled optimised, and each
    packet that passes written by pcap_dump): a tcpdump process per file took ~22 ms of CPU,
    and the conditions make hundreds. tcpdump itself where libpcap cannot be loaded; the test
    compares the two on one capture each run (same_as_tcpdump)."""
    if _PCAP is None:
        return _tcpdump_w(pcap, out, expr)
    err = ctypes.create_string_buffer(256)
    p = _PCAP.pcap_open_offline_with_tstamp_precision(pcap.encode(), 0, err)  # 0: microseconds
    if not p:
        raise RuntimeError("%s: %s" % (pcap, err.value.decode(errors="replace")))
    prog = _Bpf()
    try:
        if _PCAP.pcap_compile(p, ctypes.byref(prog), expr.encode(), 1, 0) != 0 or \
                _PCAP.pcap_setfilter(p, ctypes.byref(prog)) != 0:
            raise RuntimeError("%s: cannot filter with %r" % (pcap, expr))
        dumper = _PCAP.pcap_dump_open(p, out.encode())
        if not dumper:
            raise RuntimeError("cannot write " + out)
        # pcap_dump is the callback itself: every packet is written in C, as tcpdump does
        rc = _PCAP.pcap_loop(p, -1, ctypes.cast(_PCAP.pcap_dump, ctypes.c_void_p), dumper)
        _PCAP.pcap_dump_close(dumper)
        if rc == -1:
            raise RuntimeError("%s: read error" % pcap)
    finally:
        _PCAP.pcap_freecode(ctypes.byref(prog))
        _PCAP.pcap_close(p)


def _tcpdump_w(pcap, out, expr):
    subprocess.run(["tcpdump", "-r", pcap, "-w", out, expr], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def same_as_tcpdump(pcap, expr, d):
    """Whether tcpdump_w(pcap) writes the very bytes tcpdump writes."""
    a, b = os.path.join(d, "same.mine"), os.path.join(d, "same.tcpdump")
    tcpdump_w(pcap, a, expr)
    _tcpdump_w(pcap, b, expr)
    return open(a, "rb").read() == open(b, "rb").read()


def analyse(binary, inputs, d, tag, env=None, shared=False):
    """{client port: [rows]} of the inputs read as one capture. shared: the run is one other
    tests of the session make too (the whole capture: tests/runcache.py)."""
    db = os.path.join(d, tag + ".db")
    args = ["-q", "--no-dpi", "-o", db]
    for i in inputs:
        args += ["-r", i]
    if shared:
        rc, _, err = runcache.run(binary, args, env)
    else:
        r = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        rc, err = r.returncode, r.stderr
    if rc != 0 or not os.path.exists(db):
        raise RuntimeError("%s exited %d: %s" % (" ".join([binary] + args), rc, err.decode(errors="replace")))
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = {}
    for row in con.execute("SELECT * FROM flows"):
        rows.setdefault(row["client_port"], []).append(dict(row))
    con.close()
    return rows


DOUBLED_SAME = ("iw_class", "iw_limit", "iw_segs", "iw_bytes", "iw_rule", "iw_end", "pkts", "bytes")


def doubled_differs(whole, doubled, p):
    """How sender p's columns read from the doubled capture differ from the whole capture's, or
    None."""
    cols = [p + "_" + c for c in DOUBLED_SAME]
    a = [[r.get(c) for c in cols] for r in whole]
    b = [[r.get(c) for c in cols] for r in doubled]
    return None if a == b else "doubled: %s, whole: %s (%s)" % (b, a, ", ".join(cols))


def false_statement(t, want_limit, rows, p):
    """Why the rows of flow t say something false about sender p's flight, or None."""
    for row in rows:
        lim, segs = row[p + "_iw_limit"], row[p + "_iw_segs"]
        if row["handshake"] in ("syn_only", "refused"):  # every lab connection was answered
            return "handshake %s: the SYN was answered" % row["handshake"]
        if lim == "none" and t.get("segs", 1) > 0:
            return "%s_iw_limit none: it sent data" % p
        if lim == "cwnd" and not (want_limit in ("cwnd", "lower") and segs == t["iw"]):
            return "exact IW%s (truth: %s, iw %d)" % (segs, want_limit, t["iw"])
        if lim in LOWER and segs is not None and segs > t["iw"]:
            return "%s >=IW%s above the true IW%d" % (lim, segs, t["iw"])
    return None


def exact(rows, p):
    return any(r[p + "_iw_limit"] == "cwnd" for r in rows)


def said(rows, p):
    """What the rows say of p's flight instead of an exact verdict (for a lost one: why)."""
    return "; ".join("%s %s segs, rule %s, end %s, next %s" % tuple(
        r[p + k] for k in ("_iw_limit", "_iw_segs", "_iw_rule", "_iw_end", "_iw_next")) for r in rows) or "no row"


def want_limit(t, vantage):
    return t.get("at", {}).get(vantage, {}).get("limit", t["limit"])


def scenario_events(binary, path, d, env=None):
    """The events of one scenario (see check), its derived captures made in directory d."""
    out = []
    truth = json.load(open(path))
    name = truth["scenario"]
    ts = truth["config"].get("ts", True)
    for vantage in VANTAGES:
        pcap = os.path.join(os.path.dirname(path), "%s.%s.pcap" % (name, vantage))
        if not os.path.exists(pcap):
            continue
        port = truth["flows"][0]["server_port"]
        whole = analyse(binary, [pcap], d, "%s.%s.whole" % (name, vantage), env, shared=True)
        for cond in CONDITIONS:
            rows = analyse(binary, derive(pcap, cond, port, d), d, "%s.%s.%s" % (name, vantage, cond), env)
            for t in truth["flows"]:
                p = "c" if t["sender"] == "client" else "s"
                case = "%s/%s/%s/%s:%d" % (name, vantage, cond, t["sender"], t["client_port"])
                got = rows.get(t["client_port"], [])
                out.append(("case", case, None))
                why = false_statement(t, want_limit(t, vantage), got, p)
                if why and any(o.startswith("%s/%s/" % (name, vantage)) and
                               o.endswith("/%s:%d" % (t["sender"], t["client_port"])) for o in truthcheck.OPEN):
                    out.append(("open", case, why))
                elif why:
                    out.append(("false", case, why))
                w = whole.get(t["client_port"], [])
                if cond == "doubled" and not why:
                    # a copy adds nothing: the verdicts are the whole capture's
                    why = doubled_differs(w, got, p)
                    if why:
                        out.append(("false", case, why))
                # a verdict the whole capture gets wrong (an open case) is none to keep
                if ts and cond == t["sender"] and exact(w, p) and not false_statement(
                        t, want_limit(t, vantage), w, p):
                    out.append(("keep", case, exact(got, p) or said(got, p)))
                    # a round trip of a millisecond or more: R's clock (1 ms on Linux) can
                    # tick between the request and its ACK, so S's echoes can say anything
                    if any((r.get("rtt_us") or 0) >= 1000 for r in w):
                        out.append(("keep_ms", case, exact(got, p)))
    return out


def check(binary, scenarios=None, truth_dir=TRUTH, env=None):
    """Yields ("false", case, detail) for each false statement and ("keep", case, kept) for each
    flight the whole capture judges exact with timestamps, kept or not by its sender's own
    direction; ("case", case, None) for every flight judged. Scenarios run side by side."""
    paths = [p for p in sorted(glob.glob(os.path.join(truth_dir, "*.truth.json")))
             if not scenarios or json.load(open(p))["scenario"] in scenarios]
    with tempfile.TemporaryDirectory() as d:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for events in pool.map(lambda p: scenario_events(binary, p, d, env), paths):
                yield from events


def kept_ms(events):
    """Of the exact verdicts to keep, those of round trips of 1 ms or more (where a 1 ms
    timestamp clock can move during the round trip): (kept, of)."""
    ms = [detail for kind, _, detail in events if kind == "keep_ms"]
    return sum(1 for d in ms if d is True), len(ms)


def summary(events):
    cases = false = keep = kept = 0
    lines = []
    for kind, case, detail in events:
        if kind == "keep_ms":
            continue
        if kind == "case":
            cases += 1
        elif kind == "open":
            lines.append("OPEN  %-56s %s" % (case, detail))
        elif kind == "false":
            false += 1
            lines.append("FALSE %-56s %s" % (case, detail))
        else:
            keep += 1
            kept += detail is True
            if detail is not True:
                lines.append("lost  %-56s %s" % (case, detail))
    return cases, false, keep, kept, lines


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "-v"]
    events = list(check(args[0], args[1:] or None))
    cases, false, keep, kept, lines = summary(events)
    for line in lines:
        if "-v" in sys.argv or line.startswith("FALSE"):
            print(line)
    kms, ms = kept_ms(events)
    print("%d flights judged under %d conditions: %d false statements; one direction kept %d of %d "
          "exact verdicts (%.0f%%); %d of %d (%.0f%%) at round trips of 1 ms or more" % (
              cases, len(CONDITIONS), false, kept, keep, 100.0 * kept / keep if keep else 100.0,
              kms, ms, 100.0 * kms / ms if ms else 100.0))
    sys.exit(1 if false else 0)
