#!/usr/bin/env python3
"""Ground truth from the real Linux TCP stack (make truth; root).

Builds   client [c0] -- [r1c] router1 [r1m] -- [r2m] router2 [r2s] -- [s0] server
in network namespaces joined by veth pairs. Each router runs build/delayline, a user-space
delay line (this kernel has no netem): router1 holds the client-side one-way delay, router2 the
server-side one. On router1 a2b is client -> server (r1c -> r1m), on router2 b2a is
server -> client (r2s -> r2m). Offloads are off so frames stay MTU-sized. The server's IW is set
with `ip route ... initcwnd`, the client's receive window with `initrwnd`, its MSS with `advmss`;
per-namespace sysctls turn timestamps, SACK and window scaling off, choose the server's
congestion control and TCP Fast Open. tcpdump captures at the client (c0), mid-path (r1m,
between the two delays) and at the server (s0).

Two other topologies have no router: "lo", a server and its client in one namespace over
loopback (MTU 65536 or 1500, TSO/GSO on, the IW on the local route), captured once on lo
(NAME.host.pcap); "veth", client and server namespaces joined by one veth pair with TSO, GSO
and GRO on, captured at both ends. Their round trips are microseconds.

Each scenario runs in namespaces of its own (iwt-<role>-<pid>-<job>), so several can run side
by side (--jobs N); they are deleted when the scenario ends, also on failure.

For each scenario it writes tests/pcaps/truth/NAME.{client,mid,server}.pcap and NAME.truth.json:
for every flow and each sender, the configured IW, the smss, and the limit the flight must
have, with its segment count, derived from the configuration and, for receive windows, from what
the receiver advertised in the capture. Format of a flow entry:

    sender, client_port, server_port, iw, smss   as always
    limit   "cwnd" (segs == iw: the exact IW), "rwnd" (segs = what the advertised window held),
            "app", "nagle", "loss" (no segs), or "lower": nothing at this vantage point shows
            where the flight ended: no exact IW other than the true one ("iw"), and any lower
            bound must be <= iw (no segs)
    segs    the flight's segment count (absent for loss and lower)
    at      optional {"client"|"mid"|"server": {"limit": ..., "segs": ...}}: the verdict at
            that vantage point instead of limit/segs
    timing  optional {"limit": ..., "segs": ..., "at": {...}}: the verdict when the analyser
            must ignore timestamps (--timing) on a capture with timestamps; it replaces the
            entry's limit, segs and at altogether (see expected()).
    rule    optional "either": the verdict may come from either rule without --timing (round
            trips of microseconds: the echo may not separate the flights)

A scenario whose captures are not the path's three adds "vantages": ["host"] (loopback: one
capture, every vantage point at once) or ["client", "server"] (a veth pair), and its pcaps are
NAME.VANTAGE.pcap for those.

    python3 tools/truth.py [--out DIR] [--jobs N] [--list] [SCENARIO ...]
"""
import concurrent.futures
import json
import math
import os
import re
import struct
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DELAYLINE = os.path.join(ROOT, "build", "delayline")
APP = os.path.join(ROOT, "tools", "tcpapp.py")
ROLES = ("c", "r1", "r2", "s")
NS = {"c": "iwt-c", "r1": "iwt-r1", "r2": "iwt-r2", "s": "iwt-s"}  # the default (unsuffixed) lab
C4, S4 = "10.77.0.1", "10.77.0.2"
C6, S6 = "fd77::1", "fd77::2"
PORT = 8080
VANTAGES = (("client", "c", "c0"), ("mid", "r1", "r1m"), ("server", "s", "s0"))
# Where each topology captures (vantage, namespace role, interface): the path above; "lo", a
# server and its client in one namespace (role c) over loopback, one capture that is every
# vantage point at once; "veth", two namespaces joined by one veth pair with offloads on.
TOPOLOGIES = {"path": VANTAGES,
              "lo": (("host", "c", "lo"),),
              "veth": (("client", "c", "c0"), ("server", "s", "s0"))}
LO4 = "127.0.0.1"
PRINT_LOCK = threading.Lock()
RT = ["chrt", "-f", "20"]


def names(suffix=""):
    """The namespaces of one lab: NS itself without a suffix."""
    return {r: NS[r] + suffix for r in ROLES}


def sh(cmd, ns=None, check=True, **kw):
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kw)


def teardown(ns=None):
    for n in (ns or NS).values():
        sh(["ip", "netns", "del", n], check=False)


def mac(ns, dev):
    out = sh(["cat", "/sys/class/net/%s/address" % dev], ns=ns).stdout
    return out.strip()


def mss_of(sc):
    """The MSS the client advertises."""
    if sc.get("advmss"):
        return sc["advmss"]
    return server_mss(sc)


def server_mss(sc):
    """The MSS the server advertises (an IPv4 packet holds at most 65535 bytes: lo's 65536 MTU
    gives 65495)."""
    if sc.get("v6"):
        return sc.get("mtu", 1500) - 60
    return min(sc.get("mtu", 1500), 65535) - 40


def topology(sc):
    return sc.get("topology", "path")


def vantages(sc):
    """(vantage, role, interface) of the scenario's captures."""
    return TOPOLOGIES[topology(sc)]


def server_host(sc):
    if topology(sc) == "lo":
        return LO4
    return S6 if sc.get("v6") else S4


def sysctls(sc):
    """{role: {sysctl: value}} for the client and server namespaces."""
    out = {}
    for role in ("c", "s"):
        v = {"net.ipv4.tcp_timestamps": 1 if sc.get("ts", True) else 0,
             "net.ipv4.tcp_sack": 1 if sc.get("sack", True) else 0,
             "net.ipv4.tcp_window_scaling": 1 if sc.get("ws", True) else 0,
             "net.ipv4.tcp_no_metrics_save": 1,
             "net.ipv6.conf.all.accept_dad": 0,
             "net.ipv6.conf.default.accept_dad": 0}
        if role == "s" and sc.get("cc"):
            v["net.ipv4.tcp_congestion_control"] = sc["cc"]
        v.update(sc.get("sysctl", {}).get(role, {}))
        out[role] = v
    return out


def setup(sc, ns=None):
    ns = ns or NS
    teardown(ns)
    if topology(sc) == "lo":
        return setup_lo(sc, ns)
    if topology(sc) == "veth":
        return setup_veth(sc, ns)
    for n in ns.values():
        sh(["ip", "netns", "add", n])
        sh(["ip", "link", "set", "lo", "up"], ns=n)
    links = [("c0", "c", "r1c", "r1"), ("r1m", "r1", "r2m", "r2"), ("r2s", "r2", "s0", "s")]
    for a, na, b, nb in links:
        sh(["ip", "link", "add", a, "netns", ns[na], "type", "veth", "peer", "name", b,
            "netns", ns[nb]])
    for dev, n in [("c0", "c"), ("r1c", "r1"), ("r1m", "r1"), ("r2m", "r2"), ("r2s", "r2"),
                   ("s0", "s")]:
        if n in ("r1", "r2"):
            sh(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], ns=ns[n])
            sh(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], ns=ns[n])
        on = "on" if dev == "s0" and sc.get("server_offloads") else "off"
        # a scenario that needs the offloads on fails if they cannot be (it would quietly be
        # a plain one)
        sh(["ethtool", "-K", dev, "tso", on, "gso", on, "gro", on, "tx", on, "rx", on]
           + (["sg", "on"] if on == "on" else []), ns=ns[n], check=on == "on")
        if sc.get("mtu"):
            sh(["ip", "link", "set", dev, "mtu", str(sc["mtu"])], ns=ns[n])
        sh(["ip", "link", "set", dev, "up"], ns=ns[n])
    set_sysctls(sc, ns)
    addresses(sc, ns)


def set_sysctls(sc, ns):
    for role, values in sysctls(sc).items():
        for k, v in values.items():
            sh(["sysctl", "-qw", "%s=%s" % (k, v)], ns=ns[role])


def addresses(sc, ns):
    """c0 and s0's addresses, static neighbours, and the route metrics (IWs, the client's
    receive window and MSS)."""
    sh(["ip", "addr", "add", C4 + "/24", "dev", "c0"], ns=ns["c"])
    sh(["ip", "addr", "add", S4 + "/24", "dev", "s0"], ns=ns["s"])
    sh(["ip", "-6", "addr", "add", C6 + "/64", "dev", "c0", "nodad"], ns=ns["c"])
    sh(["ip", "-6", "addr", "add", S6 + "/64", "dev", "s0", "nodad"], ns=ns["s"])
    # static neighbours: no ARP / ND in the captures, no waiting for resolution
    cm, smac = mac(ns["c"], "c0"), mac(ns["s"], "s0")
    for ip, m in ((S4, smac), (S6, smac)):
        sh(["ip", "neigh", "replace", ip, "lladdr", m, "dev", "c0", "nud", "permanent"], ns=ns["c"])
    for ip, m in ((C4, cm), (C6, cm)):
        sh(["ip", "neigh", "replace", ip, "lladdr", m, "dev", "s0", "nud", "permanent"], ns=ns["s"])
    # route metrics: the server's IW, the client's IW, receive window and MSS
    srv = ["initcwnd", str(sc["iw"])]
    cli = ["initcwnd", str(sc.get("client_iw", 10))]
    if sc.get("initrwnd"):
        cli += ["initrwnd", str(sc["initrwnd"])]
    if sc.get("advmss"):
        cli += ["advmss", str(sc["advmss"])]
    for fam, net in (("-4", "10.77.0.0/24"), ("-6", "fd77::/64")):
        sh(["ip", fam, "route", "replace", net, "dev", "s0"] + srv, ns=ns["s"])
        sh(["ip", fam, "route", "replace", net, "dev", "c0"] + cli, ns=ns["c"])


def setup_lo(sc, ns):
    """One namespace (role c) whose loopback carries a server and its client: lo's MTU (65536
    unless sc says), its offloads as the kernel leaves them (TSO/GSO on), the scenario's sysctls,
    and the IW on the local route to 127.0.0.1 (both ends use it: the client's IW is the
    server's)."""
    n = ns["c"]
    sh(["ip", "netns", "add", n])
    sh(["ip", "link", "set", "lo", "mtu", str(sc.get("mtu", 65536))], ns=n)
    sh(["ip", "link", "set", "lo", "up"], ns=n)
    for k, v in sysctls(sc)["s"].items():
        sh(["sysctl", "-qw", "%s=%s" % (k, v)], ns=n)
    sh(["ip", "route", "replace", "local", LO4, "dev", "lo", "proto", "kernel", "scope", "host",
        "src", LO4, "table", "local", "initcwnd", str(sc["iw"])], ns=n)


def setup_veth(sc, ns):
    """Client and server namespaces joined by one veth pair (c0 -- s0) with TSO, GSO and GRO
    on, as a host's own traffic or a container's: no router, no delay line."""
    for r in ("c", "s"):
        sh(["ip", "netns", "add", ns[r]])
        sh(["ip", "link", "set", "lo", "up"], ns=ns[r])
    sh(["ip", "link", "add", "c0", "netns", ns["c"], "type", "veth", "peer", "name", "s0",
        "netns", ns["s"]])
    for dev, r in (("c0", "c"), ("s0", "s")):
        sh(["ethtool", "-K", dev, "tso", "on", "gso", "on", "gro", "on", "sg", "on", "tx", "on",
            "rx", "on"], ns=ns[r], check=False)
        if sc.get("mtu"):
            sh(["ip", "link", "set", dev, "mtu", str(sc["mtu"])], ns=ns[r])
        sh(["ip", "link", "set", dev, "up"], ns=ns[r])
    set_sysctls(sc, ns)
    addresses(sc, ns)


def delaylines(sc, d1_us, d2_us, drop=None):
    """The two delay lines' command lines: router1 (r1c -> r1m is a2b: client to server),
    router2 (r2m -> r2s is a2b: b2a is server to client)."""
    dl1 = [DELAYLINE, "r1c", "r1m", str(d1_us)] + list(sc.get("dl1", []))
    dl2 = [DELAYLINE, "r2m", "r2s", str(d2_us)] + (["--drop", drop] if drop else []) + \
        list(sc.get("dl2", [])) + (["--vnet"] if sc.get("server_offloads") else [])
    return dl1, dl2


def lab(sc, d1_us, d2_us, drop=None, app_server=False, ns=None):
    """setup(sc), then the two delay lines (client side d1_us, server side d2_us, optionally
    dropping a frame, plus sc's "dl1"/"dl2" options) and, if asked, tools/tcpapp.py serving on
    S4:PORT. Returns the started processes, for stop()."""
    ns = ns or NS
    setup(sc, ns)
    dl1, dl2 = delaylines(sc, d1_us, d2_us, drop)
    # real-time priority: with several labs side by side (and their clients starting) a delay
    # line waiting for a core would add milliseconds to a frame's delay
    procs = [start(RT + dl1, ns["r1"]), start(RT + dl2, ns["r2"])]
    if app_server:
        srv = start(["python3", APP, "server", S4, str(PORT)] + list(sc.get("server_args", [])),
                    ns["s"])
        procs.append(srv)
        wait_line(srv, "ready")
    return procs


def start(cmd, ns, **kw):
    return subprocess.Popen(["ip", "netns", "exec", ns] + cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def wait_line(proc, word, timeout=10):
    end = time.time() + timeout
    stream = proc.stderr if word == "listening" else proc.stdout
    while time.time() < end:
        line = stream.readline()
        if word in line:
            return
        if not line and proc.poll() is not None:
            break
    raise RuntimeError("process did not start: %s" % proc.args)


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(2)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------------------
# A small pcap reader: what the receiver advertised, and what the captures show

def read_pcap(path):
    """[(time_s, seg)] of the TCP segments in a pcap (Ethernet or Linux cooked), seg a dict:
    src, dst, sport, dport, flags, seq, ack, win, payload (from the IP header), opts
    ({"mss", "ws", "tsval", "tsecr", "sack_perm"})."""
    data = open(path, "rb").read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError("%s: not a pcap file" % path)
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    link = struct.unpack(e + "I", data[20:24])[0]
    off, out = 24, []
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        t = sec + frac / (1e9 if nano else 1e6)
        if link == 1:
            l3, etype = 14, struct.unpack(">H", frame[12:14])[0] if len(frame) >= 14 else 0
        elif link == 113:
            l3, etype = 16, struct.unpack(">H", frame[14:16])[0] if len(frame) >= 16 else 0
        else:
            continue
        seg = decode_ip(frame, l3, etype)
        if seg:
            out.append((t, seg))
    return out


def decode_ip(frame, l3, etype):
    if etype == 0x0800 and len(frame) >= l3 + 20 and frame[l3 + 9] == 6:
        ihl = (frame[l3] & 15) * 4
        tot = struct.unpack(">H", frame[l3 + 2:l3 + 4])[0]
        src, dst = frame[l3 + 12:l3 + 16], frame[l3 + 16:l3 + 20]
        tcp, plen = l3 + ihl, tot - ihl
    elif etype == 0x86dd and len(frame) >= l3 + 40 and frame[l3 + 6] == 6:
        plen = struct.unpack(">H", frame[l3 + 4:l3 + 6])[0]
        src, dst = frame[l3 + 8:l3 + 24], frame[l3 + 24:l3 + 40]
        tcp = l3 + 40
    else:
        return None
    if len(frame) < tcp + 20:
        return None
    sport, dport, seq, ack, offfl, win = struct.unpack(">HHIIHH", frame[tcp:tcp + 16])
    thl = (offfl >> 12) * 4
    opts, o, end = {}, tcp + 20, min(tcp + thl, len(frame))
    while o < end:
        kind = frame[o]
        if kind == 0:
            break
        if kind == 1:
            o += 1
            continue
        if o + 1 >= end or frame[o + 1] < 2:
            break
        ln = frame[o + 1]
        body = frame[o + 2:o + ln]
        if kind == 2 and ln == 4:
            opts["mss"] = struct.unpack(">H", body)[0]
        elif kind == 3 and ln == 3:
            opts["ws"] = body[0]
        elif kind == 4:
            opts["sack_perm"] = True
        elif kind == 8 and ln == 10:
            opts["tsval"], opts["tsecr"] = struct.unpack(">II", body)
        elif kind == 34:
            opts["tfo_cookie"] = body.hex()
        o += ln
    return {"src": bytes(src), "dst": bytes(dst), "sport": sport, "dport": dport,
            "flags": offfl & 0x1ff, "seq": seq, "ack": ack, "win": win,
            "payload": plen - thl, "opts": opts}


SYN, ACK, FIN, RST = 0x02, 0x10, 0x01, 0x04


def flow_segments(segs, cport):
    """[(t, seg, from_client)] of the connection with client port cport."""
    out = []
    for t, s in segs:
        if s["sport"] == cport and s["dport"] == PORT:
            out.append((t, s, True))
        elif s["dport"] == cport and s["sport"] == PORT:
            out.append((t, s, False))
    return out


def advertised_rwnd(fsegs):
    """The client's receive window as the server's first data finds it at this vantage point:
    the window of the client's last segment before the server's first data, scaled by the
    client's window scale when both SYNs carried the option (a SYN's own window is never
    scaled). None when the server sent no data."""
    syn = next((s for _, s, c in fsegs if c and s["flags"] & SYN), None)
    synack = next((s for _, s, c in fsegs if not c and s["flags"] & SYN), None)
    scale = 0
    if syn and synack and "ws" in syn["opts"] and "ws" in synack["opts"]:
        scale = syn["opts"]["ws"]
    last = None
    for _, s, c in fsegs:
        if c:
            last = s
        elif s["payload"] > 0:
            if last is None:
                return None
            return last["win"] if last["flags"] & SYN else last["win"] << scale
    return None


def window_fill(fsegs, rwnd):
    """True when the server's new data before the client's first ACK of it (at the server)
    ends with a short segment that ends exactly at the window's edge: Linux filled the rest of
    a small window with a partial segment."""
    isn = next((s["seq"] for _, s, c in fsegs if not c and s["flags"] & SYN), None)
    if isn is None or rwnd is None:
        return False
    last = None
    for _, s, c in fsegs:
        rel = (s["ack"] - isn - 1) % (1 << 32)
        if c and s["flags"] & ACK and not s["flags"] & SYN and 0 < rel < (1 << 31):
            break
        if not c and s["payload"] > 0:
            last = s
    if last is None:
        return False
    end = (last["seq"] + last["payload"] - isn - 1) % (1 << 32)
    return end == rwnd and last["payload"] < max(x["payload"] for _, x, c in fsegs if not c)


def observe(fsegs):
    """One line on the server's sending at this vantage point: its data segments before the
    client's first ACK of server data (as seen here), their spread, and the next new data."""
    isn = next((s["seq"] for _, s, c in fsegs if not c and s["flags"] & SYN), None)
    if isn is None:
        return "no SYN-ACK"
    data = [(t, s) for t, s, c in fsegs if not c and s["payload"] > 0]
    if not data:
        return "no server data"
    t0 = data[0][0]
    high, rexmit, newdata = isn + 1, 0, []
    for t, s in data:
        end = (s["seq"] + s["payload"]) % (1 << 32)
        if (end - high) % (1 << 32) >= (1 << 31) or end == high:
            rexmit += 1
            continue
        high = end
        newdata.append((t, s))
    # the client's first ACK of server data at this vantage point
    fa = None
    for t, s, c in fsegs:
        if c and s["flags"] & ACK and not s["flags"] & SYN:
            rel = (s["ack"] - isn - 1) % (1 << 32)
            if 0 < rel < (1 << 31):
                fa = t
                break
    before = [(t, s) for t, s in newdata if fa is None or t < fa]
    after = [(t, s) for t, s in newdata if fa is not None and t >= fa]
    line = "%d new data packets (%d bytes) in %.1f ms before the 1st ACK (at %s)" % (
        len(before), sum(s["payload"] for _, s in before), 1000 * (before[-1][0] - t0) if before else 0,
        "%.1f ms" % (1000 * (fa - t0)) if fa else "none")
    if len(before) > 1:
        gaps = [before[i + 1][0] - before[i][0] for i in range(len(before) - 1)]
        big = max(range(len(gaps)), key=lambda i: gaps[i])
        line += ", largest gap %.1f ms after seg %d" % (1000 * gaps[big], big + 1)
    if after:
        line += "; next new data at %.1f ms" % (1000 * (after[0][0] - t0))
    if rexmit:
        line += "; %d retransmissions" % rexmit
    return line


# ---------------------------------------------------------------------------------------------
# Expected verdicts

def expected(t, vantage, timing):
    """The verdict one truth.json flow entry t demands at a vantage point ("client", "mid",
    "server"), with timing True when the analyser was forced to ignore timestamps on a capture
    with timestamps: {"limit": ..., "segs": ... or None}."""
    src = t
    if timing and "timing" in t:
        src = t["timing"]
    e = {"limit": src["limit"], "segs": src.get("segs")}
    at = src.get("at", {}).get(vantage)
    if at:
        e = {"limit": at["limit"], "segs": at.get("segs")}
    return e


def spec_of(transfer):
    """("GET", n[, "opt:opt"]) -> the tcpapp client argument."""
    s = "%s:%d" % (transfer[0], transfer[1])
    return s + (":" + transfer[2] if len(transfer) > 2 and transfer[2] else "")


def truth_for(sc, transfer, cport, rwnds=None, fill=False):
    """Expected verdicts for both senders of one transfer, from the configuration and, for the
    client's receive window (sc "rwnd_from_capture"), from the captures: rwnds = {vantage: the
    window the client advertised before the server's first data}, fill = the server sent a
    short segment that filled the window's rest (Linux does for some small windows): the
    window then held floor(rwnd / smss) + 1 segments."""
    op, n = transfer[0], transfer[1]
    ts = sc.get("ts", True)
    c_mss = mss_of(sc)                    # what the client advertises
    s_mss = server_mss(sc)                # what the server advertises
    opt = 12 if ts else 0
    flows = []

    def flight(sender, iw, smss, nbytes, rwnd=None, loss=False):
        need = math.ceil(nbytes / smss)
        if loss:
            return {"sender": sender, "iw": iw, "smss": smss, "limit": "loss"}
        if rwnd is not None and min(iw, need) * smss + smss > rwnd and iw * smss > rwnd:
            return {"sender": sender, "iw": iw, "smss": smss, "limit": "rwnd",
                    "segs": rwnd // smss}
        if need <= iw:
            return {"sender": sender, "iw": iw, "smss": smss, "limit": "app", "segs": need}
        return {"sender": sender, "iw": iw, "smss": smss, "limit": "cwnd", "segs": iw}

    rwnd = sc["initrwnd"] * c_mss if sc.get("initrwnd") else None
    if op in ("GET", "NAGLE"):
        req = len(("SEND %d\n" if op == "GET" else "NAGLE %d\n") % n)
        flows.append(flight("client", sc.get("client_iw", 10), s_mss - opt, req))
        smss = c_mss - opt
        if sc.get("rwnd_from_capture"):
            per = {}
            for v, w in sorted(rwnds.items()):
                f = flight("server", sc["iw"], smss, n, w)
                if f["limit"] == "rwnd" and fill and w % smss:
                    f["segs"] += 1
                per[v] = {"limit": f["limit"], "segs": f["segs"]}
            first = per["server"]
            f = {"sender": "server", "iw": sc["iw"], "smss": smss, "limit": first["limit"],
                 "segs": first["segs"], "rwnd": rwnds["server"]}
            others = {v: x for v, x in per.items() if x != first}
            if others:
                f["at"] = others
        elif op == "NAGLE":
            # a short header, then the body: its full segments go while the window allows,
            # its short tail waits for the header's ACK
            full = n // smss
            if full == 0:
                f = {"sender": "server", "iw": sc["iw"], "smss": smss, "limit": "nagle", "segs": 1}
            elif 1 + full >= sc["iw"]:
                f = {"sender": "server", "iw": sc["iw"], "smss": smss, "limit": "cwnd",
                     "segs": sc["iw"]}
            else:
                raise ValueError("NAGLE %d: no clear truth at smss %d" % (n, smss))
        else:
            f = flight("server", sc["iw"], smss, n, rwnd, loss=bool(sc.get("drop")))
        if sc.get("server_limit"):
            f = {"sender": "server", "iw": sc["iw"], "smss": smss}
            f.update(sc["server_limit"])
        flows.append(f)
    else:
        req = len("TAKE %d\n" % n) + n
        flows.append(flight("client", sc.get("client_iw", 10), s_mss - opt, req,
                            loss=bool(sc.get("drop"))))
        flows.append(flight("server", sc["iw"], c_mss - opt, 3))
    # where nothing but timestamps shows the end of the server's flight: without them (no
    # timestamps negotiated, or the analyser told to ignore them) those vantages give "lower"
    blind = sc.get("blind")
    if blind:
        f = flows[1]
        exact = {"limit": f["limit"], "segs": f["segs"]}
        rest = {v: exact for v, _, _ in VANTAGES if v not in blind}
        lower = {"limit": "lower"}
        if rest:
            lower["at"] = rest
        if ts:
            f["timing"] = lower
        else:
            del f["segs"]
            f.update(lower)
    for f in flows:
        f["client_port"] = cport
        f["server_port"] = PORT
    return flows


def serial_gt(a, b):
    """a > b in 32-bit serial-number arithmetic (TSval, TSecr)."""
    return 0 < (a - b) % (1 << 32) < (1 << 31)


def echo_shows_end(fsegs, iw, smss, rwnd):
    """True when the server's packets at this vantage point show, by their timestamp echo alone,
    that its first flight was iw segments and that an ACK released what followed: both SYNs
    carry timestamps; the server's first new data, in order and without retransmissions, holds
    exactly iw segments (a super-packet counts ceil(payload / smss)) that all echo one TSecr E;
    the client's first ACK of server data carries a TSval newer than E (the client's clock
    ticked between its request and that ACK: on loopback or a LAN it often does not); the next
    new data echoes a newer TSecr than E (it was sent after the server processed that ACK); and
    the window held more than the flight (iw * smss <= rwnd)."""
    syn = next((s for _, s, c in fsegs if c and s["flags"] & SYN), None)
    synack = next((s for _, s, c in fsegs if not c and s["flags"] & SYN), None)
    if not syn or not synack or "tsval" not in syn["opts"] or "tsval" not in synack["opts"]:
        return False
    if rwnd is None or iw * smss > rwnd:
        return False
    isn, high = synack["seq"], (synack["seq"] + 1) % (1 << 32)
    echo, count, a1 = None, 0, None
    for _, s, c in fsegs:
        if c:
            rel = (s["ack"] - isn - 1) % (1 << 32)
            if a1 is None and s["flags"] & ACK and not s["flags"] & SYN and 0 < rel < (1 << 31):
                a1 = s
            continue
        if s["payload"] <= 0:
            continue
        if s["seq"] != high or "tsecr" not in s["opts"]:
            return False  # a retransmission or a hole before the flight's end
        high = (s["seq"] + s["payload"]) % (1 << 32)
        if echo is None:
            echo = s["opts"]["tsecr"]
        if s["opts"]["tsecr"] == echo:
            count += math.ceil(s["payload"] / smss)
            continue
        return (count == iw and serial_gt(s["opts"]["tsecr"], echo) and a1 is not None
                and serial_gt(a1["opts"].get("tsval", echo), echo))
    return False


def echo_truth(sc, flows, fs, rwnds):
    """The server's expectation where microsecond round trips leave only the timestamp echo
    (sc "echo_truth": loopback, a veth pair): at each vantage point, its true IW where the echo
    shows the flight's end (echo_shows_end), else "lower"; with timing forced, or without
    timestamps, "lower" everywhere: no pause, no round trip and no clock separates two flights
    that follow each other within microseconds."""
    for f in flows:
        if f["sender"] != "server":
            # the client's request: one segment, the server's data follows; whether the server's
            # ACK carries a newer TSval than its SYN-ACK (and the echo can be used) is chance
            f["rule"] = "either"
            continue
        shown = {v: sc.get("ts", True) and echo_shows_end(fs[v], f["iw"], f["smss"], rwnds[v])
                 for v in fs}
        for k in ("segs", "at", "timing"):
            f.pop(k, None)
        exact = {"limit": "cwnd", "segs": f["iw"]}
        f["limit"] = "lower"
        at = {v: exact for v, ok in shown.items() if ok}
        if at:
            f["at"] = at
            f["timing"] = {"limit": "lower"}


# ---------------------------------------------------------------------------------------------
# One scenario

def log(msg):
    with PRINT_LOCK:
        print(msg, flush=True)


def handshake_rtt_ms(sc):
    """The handshake's round trip (SYN to SYN-ACK at the client) the lab is set up to give, or
    None where it varies on purpose (jitter)."""
    if topology(sc) != "path":
        return 0.0
    if any("--jitter" in sc.get(k, []) for k in ("dl1", "dl2")):
        return None
    d1, d2 = sc.get("delay_ms", (15, 15))
    extra = 0
    for k in ("dl1", "dl2"):
        o = sc.get(k, [])
        if "--synack-delay" in o:
            extra += int(o[o.index("--synack-delay") + 1].split(":")[-1]) / 1000.0
    return 2 * (d1 + d2) + extra


def lab_problems(sc, segs, recs):
    """Where the captures show the lab itself late (a delay line that waited for a core): the
    client's handshake RTT more than 3 ms off the configured one."""
    want = handshake_rtt_ms(sc)
    out = []
    if want is None:
        return out
    for rec in recs:
        fs = flow_segments(segs["client" if "client" in segs else "host"], rec["client_port"])
        syn = next((t for t, s, c in fs if c and s["flags"] & SYN), None)
        synack = next((t for t, s, c in fs if not c and s["flags"] & SYN), None)
        if syn is None or synack is None:
            out.append("port %d: no handshake at the client" % rec["client_port"])
        elif abs(1000 * (synack - syn) - want) > 3:
            out.append("port %d: handshake RTT %.1f ms at the client, not %.1f" % (
                rec["client_port"], 1000 * (synack - syn), want))
    return out


def run(sc, outdir, ns=None, verbose=True, attempts=3):
    """Runs one scenario in the namespaces ns (default NS) and writes its files; the namespaces
    are gone when it returns, also on failure. A run whose captures show the lab late (see
    lab_problems) is done again, up to attempts times."""
    for attempt in range(attempts):
        problems = run_once(sc, outdir, ns, verbose, attempt == attempts - 1)
        if not problems:
            return
        log("%-22s lab late, again: %s" % (sc["name"], "; ".join(problems)))
    raise RuntimeError("lab late in %d attempts: %s" % (attempts, "; ".join(problems)))


def run_once(sc, outdir, ns, verbose, last):
    ns = ns or NS
    name = sc["name"]
    d1, d2 = sc.get("delay_ms", (15, 15))
    procs, caps, dls = [], {}, []
    host = server_host(sc)
    where = vantages(sc)
    try:
        if topology(sc) == "path":
            procs += lab(sc, d1 * 1000, d2 * 1000, sc.get("drop"), ns=ns)
            dls = procs[:2]
        else:
            setup(sc, ns)
        # the server's congestion control: tcpapp's --cc, else its namespace's default
        # (inherited from the host's: bbr on some kernels, cubic on most)
        sargs = list(sc.get("server_args", []))
        cc = sargs[sargs.index("--cc") + 1] if "--cc" in sargs else sh(
            ["sysctl", "-n", "net.ipv4.tcp_congestion_control"],
            ns=ns["s" if topology(sc) != "lo" else "c"]).stdout.strip()
        snap = str(sc.get("snaplen", 262144))
        for vantage, role, dev in where:
            path = os.path.join(outdir, "%s.%s.pcap" % (name, vantage))
            caps[vantage] = start(["tcpdump", "-i", dev, "-s", snap, "--immediate-mode", "-U",
                                   "-w", path, "tcp"], ns[role])
            wait_line(caps[vantage], "listening")
        srv = start(["python3", APP, "server", host, str(PORT)] + list(sc.get("server_args", [])),
                    ns["s"] if topology(sc) != "lo" else ns["c"])
        procs.append(srv)
        wait_line(srv, "ready")
        args = [spec_of(t) for t in sc["transfers"]]
        cl = sh(["python3", APP, "client", host, str(PORT), "0.3"] + args, ns=ns["c"], timeout=120)
        time.sleep(0.2 + 2 * (d1 + d2) / 1000.0 + sc.get("settle", 0))
        for p in caps.values():
            stop(p)
        for p in procs:
            stop(p)
        dlstat = [p.stderr.read().strip() for p in dls]
    finally:
        for p in list(caps.values()) + procs:
            stop(p)
        teardown(ns)
    for vantage in caps:
        path = os.path.join(outdir, "%s.%s.pcap" % (name, vantage))
        if os.path.getsize(path) <= 24:
            raise RuntimeError("%s: nothing captured" % path)
    held = [int(n) for n in re.findall(r"(\d+) burst tails held", "\n".join(dlstat))]
    if any("--hold-tail" in sc.get(k, []) for k in ("dl1", "dl2")) and not any(held):
        raise RuntimeError("the delay line held no burst's tail")
    segs = {v: read_pcap(os.path.join(outdir, "%s.%s.pcap" % (name, v))) for v, _, _ in where}
    recs = [json.loads(line) for line in cl.stdout.splitlines()]
    problems = lab_problems(sc, segs, recs)
    if problems and not last:
        return problems
    flows, notes = [], []
    specs = {spec_of(t): t for t in sc["transfers"]}
    # the vantage point nearest the server: its packets say what the server did
    near = "server" if "server" in segs else "host"
    for i, rec in enumerate(recs):
        # old tcpapp lines had no "spec": one line per transfer, in order
        t = specs[rec["spec"]] if "spec" in rec else sc["transfers"][i]
        fs = {v: flow_segments(segs[v], rec["client_port"]) for v in segs}
        rwnds = {v: advertised_rwnd(fs[v]) for v in fs}
        fill = window_fill(fs[near], rwnds[near])
        got = truth_for(sc, t, rec["client_port"], rwnds, fill)
        if sc.get("echo_truth"):
            echo_truth(sc, got, fs, rwnds)
        flows += got
        notes.append("  %s port %d: server rwnd %s; at %s: %s" % (
            rec.get("spec", ""), rec["client_port"], rwnds[near], near, observe(fs[near])))
    config = {k: v for k, v in sc.items() if k not in ("name", "blind", "server_limit", "echo_truth")}
    server = ["tcpapp.py", "server", host, str(PORT)] + list(sc.get("server_args", []))
    client = ["tcpapp.py", "client", host, str(PORT), "0.3"] + args
    if topology(sc) != "path":
        sysc = sysctls(sc)
        config["lab"] = {"topology": topology(sc),
                         "sysctl": {"host": sysc["s"]} if topology(sc) == "lo" else
                                   {"client": sysc["c"], "server": sysc["s"]},
                         "mtu": sc.get("mtu", 65536 if topology(sc) == "lo" else 1500),
                         "offloads": "tso gso gro on", "server": server, "client": client,
                         "server_cc": cc}
    elif any(k in sc for k in ("dl1", "dl2", "cc", "mtu", "sysctl", "server_args", "rwnd_from_capture")):
        # the new scenarios spell out the whole lab
        a, b = delaylines(sc, d1 * 1000, d2 * 1000, sc.get("drop"))
        config["lab"] = {"router1": [os.path.basename(a[0])] + a[1:],
                         "router2": [os.path.basename(b[0])] + b[1:],
                         "sysctl": {"client": sysctls(sc)["c"], "server": sysctls(sc)["s"]},
                         "mtu": sc.get("mtu", 1500), "server": server, "client": client,
                         "server_cc": cc}
    truth = {"scenario": name, "config": config, "ip_ver": 6 if sc.get("v6") else 4,
             "flows": flows}
    if topology(sc) != "path":
        truth["vantages"] = [v for v, _, _ in where]
    with open(os.path.join(outdir, name + ".truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")
    msg = "%-22s %d flows" % (name, len(recs))
    if verbose:
        msg += "\n" + "\n".join(notes) + "\n  " + "\n  ".join(
            l for s in dlstat for l in s.splitlines() if "delayline" in l)
    log(msg)
    return problems


# ---------------------------------------------------------------------------------------------
# The scenarios

def scenarios():
    S = 1448  # smss with timestamps at MSS 1460
    out = []
    for iw in (1, 2, 3, 16, 32):
        out.append({"name": "iw%d" % iw, "iw": iw, "transfers": [("GET", 3 * iw * S + 100)]})
    out.append({"name": "iw4_mss536", "iw": 4, "advmss": 536,
                "transfers": [("GET", 3 * 4 * 524 + 100)]})
    out.append({"name": "iw10", "iw": 10, "transfers": [
        ("GET", 30 * S), ("GET", 5000), ("GET", 10 * S), ("GET", 10 * S + 1)]})
    out.append({"name": "rwnd6k_iw3", "iw": 3, "initrwnd": 4, "transfers": [("GET", 20 * S)]})
    out.append({"name": "rwnd6k_iw10", "iw": 10, "initrwnd": 4, "transfers": [("GET", 20 * S)]})
    out.append({"name": "nots_iw10", "iw": 10, "ts": False,
                "transfers": [("GET", 30 * 1460), ("GET", 10 * 1460)]})
    out.append({"name": "nosack_nows_iw10", "iw": 10, "sack": False, "ws": False,
                "transfers": [("GET", 30 * S), ("GET", 3000)]})
    out.append({"name": "v6_iw10", "iw": 10, "v6": True,
                "transfers": [("GET", 30 * 1428), ("GET", 10 * 1428 + 1)]})
    out.append({"name": "snap96_iw10", "iw": 10, "snaplen": 96, "transfers": [("GET", 30 * S)]})
    out.append({"name": "delay_client_iw10", "iw": 10, "delay_ms": (40, 2),
                "transfers": [("GET", 30 * S)]})
    out.append({"name": "delay_server_iw10", "iw": 10, "delay_ms": (2, 40),
                "transfers": [("GET", 30 * S)]})
    out.append({"name": "nots_delay_client_iw10", "iw": 10, "ts": False, "delay_ms": (40, 2),
                "transfers": [("GET", 30 * 1460)]})
    out.append({"name": "nots_delay_server_iw10", "iw": 10, "ts": False, "delay_ms": (2, 40),
                "transfers": [("GET", 30 * 1460)]})
    out.append({"name": "upload_iw10", "iw": 10, "client_iw": 10,
                "transfers": [("PUT", 30 * S)]})
    out.append({"name": "upload_iw4", "iw": 10, "client_iw": 4,
                "transfers": [("PUT", 30 * S)]})
    out.append({"name": "loss_iw10", "iw": 10, "drop": "b2a:5", "transfers": [("GET", 30 * S)]})
    return out + rough_scenarios() + capture_scenarios()


def both_of(out, name, **sc):
    """Appends the scenario with timestamps (NAME) and without (nots_NAME); "RESP" in a transfer
    is 30 full segments (1448 or 1460 bytes), "RESP_LO" 1 MB."""
    for ts in (True, False):
        s = dict(sc, name=name if ts else "nots_" + name)
        if not ts:
            s["ts"] = False
        resp = {"RESP": 30 * (1448 if ts else 1460), "RESP_LO": 1000000}
        s["transfers"] = [tuple(resp.get(x, x) for x in t) for t in sc["transfers"]]
        out.append(s)


def rough_scenarios():
    """Paths as rough as real ones (losses, a slow SYN-ACK, aggregated ACKs, bottlenecks, BBR,
    Nagle, TFO, jumbo frames, a small receive buffer, parallel flows, jitter)."""
    out = []

    def both(name, **sc):
        both_of(out, name, **sc)

    R = [("GET", "RESP")]
    # (a) the k-th server data segment dropped at router2 (b2a: server -> client)
    for k in (1, 10):
        out.append({"name": "drop%d_iw10" % k, "iw": 10, "dl2": ["--drop", "b2a:%d" % k],
                    "server_limit": {"limit": "loss"}, "transfers": [("GET", 30 * 1448)]})
    both("drop12_iw10", iw=10, dl2=["--drop", "b2a:12"], transfers=R)
    # (b) SYN-ACKs 50 ms late: the handshake's RTT overstates the data's
    for iw in (4, 10):
        both("synack50_iw%d" % iw, iw=iw, dl2=["--synack-delay", "b2a:50000"],
             blind=["client", "mid"], transfers=R)
    # (c) the client's pure ACKs aggregated at router1 (a2b: client -> server) every 100 ms:
    # the server's tail-loss probe sends new data ~2 RTT after the burst, before any ACK
    both("holdacks_iw10", iw=10, dl1=["--hold-acks", "a2b:100000"], settle=0.3,
         blind=["client", "mid", "server"], transfers=R)
    # (d) a bottleneck server -> client at router2, 128 KB drop-tail queue
    both("rate20m_iw10", iw=10, dl2=["--rate", "b2a:20000000:131072"], transfers=R)
    both("rate2m_iw10", iw=10, dl2=["--rate", "b2a:2000000:131072"], settle=0.3,
         blind=["client", "mid"], transfers=R)
    # (e) BBR on the server (paced flights)
    both("bbr_iw10", iw=10, cc="bbr", transfers=R)
    out.append({"name": "bbr_iw32", "iw": 32, "cc": "bbr", "transfers": [("GET", 70 * 1448)]})
    # (f) Nagle on: a 300-byte header, 5 ms, then the body
    out.append({"name": "nagle_iw10", "iw": 10, "transfers": [("NAGLE", 1000), ("NAGLE", 40000)]})
    # (g) TCP Fast Open without cookies: the request rides the client's SYN, the server's
    # response leaves before the handshake's last ACK reaches it
    both("tfo_iw10", iw=10, server_args=["--tfo"],
         sysctl={"c": {"net.ipv4.tcp_fastopen": "0x5"}, "s": {"net.ipv4.tcp_fastopen": "0x202"}},
         transfers=[("GET", "RESP", "tfo")])
    # (h) jumbo frames: the client's window holds only a few 8948-byte segments
    # (the two biggest captures keep 200 bytes of each frame: every header, little payload)
    out.append({"name": "jumbo_iw10", "iw": 10, "mtu": 9000, "rwnd_from_capture": True,
                "snaplen": 200,
                "transfers": [("GET", 30 * 8948)]})
    # (i) the client's SO_RCVBUF set to 8192 before connecting
    out.append({"name": "rcvbuf8k_iw10", "iw": 10, "rwnd_from_capture": True,
                "transfers": [("GET", 30 * 1448, "rcvbuf=8192")]})
    # (j) six GETs at once, interleaved
    both("parallel6_iw10", iw=10, snaplen=200, transfers=[("GET", "RESP", "par=6")])
    # (k) jitter on both routers (seeded): up to 8 ms more per frame, order kept
    both("jitter8_iw10", iw=10, dl1=["--jitter", "8000", "--seed", "1"],
         dl2=["--jitter", "8000", "--seed", "2"], transfers=R)
    return out


def capture_scenarios():
    """The conditions real captures have (issue 27): the tail of a burst held by the last hop
    (Wi-Fi aggregation, a cellular scheduler), a server and its client on one host (loopback
    with TSO, a veth pair with offloads on: round trips of microseconds), a server that paces
    its flight over half or twice the round trip, a queue that spreads it over two."""
    out = []
    R = [("GET", "RESP")]
    # These pin the server's congestion control to cubic (tcpapp --cc): a kernel whose default
    # is bbr paces what follows the first 10 segments, and would give other flights elsewhere.
    cubic = ["--cc", "cubic"]
    # (l) router1 (the last hop before the client: an access point, a base station) holds the
    # frames of each server burst after the K-th for 20 ms (a third of the 60 ms RTT) or 60 ms
    # (one RTT: the tail reaches the client with the next flight). The server sent its IW at
    # once; the client sees K segments, a silence, then the tail, all with the burst's TSval
    # and TSecr. Only the timestamp echo shows the end at the client: without it, a tail 20 ms
    # after the burst looks like the next flight of a path whose handshake overstated the RTT
    # (synack50_*), and a tail 60 ms after it comes with the next flight.
    for iw, k in ((3, 2), (10, 5), (16, 12)):
        for hold in (20, 60):
            both_of(out, "tailhold%d_iw%d" % (hold, iw), iw=iw, snaplen=200, settle=0.2,
                    server_args=cubic, dl1=["--hold-tail", "b2a:%d:%d" % (k, hold * 1000)],
                    blind=["client"], transfers=R)
    # (m) loopback: server and client in one namespace, lo at MTU 65536 (one segment of 65483
    # bytes fills the client's first window: every flight is window-limited) and at MTU 1500
    # (TSO super-packets of half the window each: tcp_cwnd_test sends at most cwnd / 2 per
    # skb); round trips of microseconds. Only the echo can show a flight's end, and only when
    # the client's clock ticked between its request and its first ACK (echo_truth).
    for mtu, resp, tag in ((65536, "RESP_LO", "lo"), (1500, "RESP", "lo1500")):
        for iw in (3, 10, 16):
            both_of(out, "%s_iw%d" % (tag, iw), iw=iw, client_iw=iw, topology="lo", mtu=mtu,
                    delay_ms=(0, 0), snaplen=200, echo_truth=True, server_args=cubic,
                    transfers=[("GET", resp), ("GET", resp)])
    # (n) a host's own traffic over a veth pair with TSO, GSO and GRO on: captured
    # super-packets carry several segments at both ends
    for iw in (3, 10, 16):
        both_of(out, "vethtso_iw%d" % iw, iw=iw, topology="veth", delay_ms=(0, 0), snaplen=200,
                echo_truth=True, server_args=cubic, transfers=[("GET", "RESP"), ("GET", "RESP")])
    # (o) the server paces itself (SO_MAX_PACING_RATE: Linux paces in TCP; this kernel has no
    # fq). Linux never paces a connection's first 10 data segments (tcp_update_skb_after_send;
    # fq's initial quantum is 10 packets too), so the IW is 32: 10 at once, then 22 paced. At
    # cubic's own slow-start rate (2 cwnd / srtt, the cap far above it) they spread over a third
    # of the RTT: every vantage point can see the IW. Capped at 2 Mbit/s (6 ms a segment) they
    # spread over two RTTs: ACKs of the first segments reach the server before the IW has
    # left, what follows echoes them, and no vantage point can show the IW.
    both_of(out, "paced_iw32", iw=32, snaplen=200, settle=0.2,
            server_args=cubic + ["--max-pacing", "125000000"], transfers=[("GET", 70 * 1448)])
    both_of(out, "paced2m_iw32", iw=32, snaplen=200, settle=0.3,
            server_args=cubic + ["--max-pacing", "250000"], server_limit={"limit": "lower"},
            transfers=[("GET", 70 * 1448)])
    # (p) a 1 Mbit/s bottleneck at router2, before the mid-path capture: the flight spreads over
    # two RTTs there and at the client, the next flight right behind it (rate2m_iw10 spreads
    # it over one)
    both_of(out, "queue1m_iw10", iw=10, snaplen=200, settle=0.5, server_args=cubic,
            dl2=["--rate", "b2a:1000000:131072"], blind=["client", "mid"], transfers=R)
    # (q) a server's own capture on a real path: TSO, GSO and GRO on at the server's interface,
    # as on any Linux host (router2's delay line splits the super-packets on the wire, as a NIC
    # would): at the server, each flight is a few super-packets out and the client's packets
    # merged in; at mid-path and the client, segments
    for iw in (3, 10, 16):
        both_of(out, "srvtso_iw%d" % iw, iw=iw, snaplen=200, server_offloads=True,
                server_args=cubic, transfers=R + [("GET", 5000)])
    return out


def main():
    if os.geteuid() != 0:
        print("truth.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    args = sys.argv[1:]
    outdir = os.path.join(ROOT, "tests", "pcaps", "truth")
    jobs, want, listing = 1, [], False
    while args:
        a = args.pop(0)
        if a == "--out":
            outdir = args.pop(0)
        elif a == "--jobs":
            jobs = max(1, int(args.pop(0)))
        elif a == "--list":
            listing = True
        else:
            want.append(a)
    every = scenarios()
    known = {sc["name"] for sc in every}
    unknown = [w for w in want if w not in known]
    if unknown:
        print("truth.py: no scenario %s" % ", ".join(unknown), file=sys.stderr)
        return 2
    todo = [sc for sc in every if not want or sc["name"] in want]
    if listing:
        for sc in todo:
            print(sc["name"])
        return 0
    os.makedirs(outdir, exist_ok=True)
    t0 = time.time()
    failed = []

    def one(i, sc):
        try:
            run(sc, outdir, names("-%d-%d" % (os.getpid(), i)))
        except Exception as e:  # noqa: BLE001 - report every scenario, fail at the end
            failed.append(sc["name"])
            log("%-22s FAILED: %s" % (sc["name"], e))

    if jobs == 1:
        for i, sc in enumerate(todo):
            one(i, sc)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, range(len(todo)), todo))
    log("%d scenarios in %.1f s (--jobs %d)%s" % (
        len(todo), time.time() - t0, jobs, "; failed: " + " ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
