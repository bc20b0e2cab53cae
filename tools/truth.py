#!/usr/bin/env python3
"""Ground truth from the real Linux TCP stack (make truth; root).

Builds   client [c0] -- [r1c] router1 [r1m] -- [r2m] router2 [r2s] -- [s0] server
in network namespaces joined by veth pairs. Each router runs build/delayline, a user-space
delay line (this kernel has no netem): router1 holds the client-side one-way delay, router2 the
server-side one. Offloads are off so frames stay MTU-sized. The server's IW is set with
`ip route ... initcwnd`, the client's receive window with `initrwnd`, its MSS with `advmss`;
per-namespace sysctls turn timestamps, SACK and window scaling off. tcpdump captures at the
client (c0), mid-path (r1m, between the two delays) and at the server (s0).

For each scenario it writes tests/pcaps/truth/NAME.{client,mid,server}.pcap and NAME.truth.json:
for every flow and each sender, the configured IW, the smss, and the limit the flight must
have (cwnd / rwnd / app / loss) with its segment count, derived from the configuration.

    python3 tools/truth.py [--out DIR] [SCENARIO ...]
"""
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DELAYLINE = os.path.join(ROOT, "build", "delayline")
APP = os.path.join(ROOT, "tools", "tcpapp.py")
NS = {"c": "iwt-c", "r1": "iwt-r1", "r2": "iwt-r2", "s": "iwt-s"}
C4, S4 = "10.77.0.1", "10.77.0.2"
C6, S6 = "fd77::1", "fd77::2"
PORT = 8080


def sh(cmd, ns=None, check=True, **kw):
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, **kw)


def teardown():
    for ns in NS.values():
        sh(["ip", "netns", "del", ns], check=False)


def mac(ns, dev):
    out = sh(["cat", "/sys/class/net/%s/address" % dev], ns=ns).stdout
    return out.strip()


def setup(sc):
    teardown()
    for ns in NS.values():
        sh(["ip", "netns", "add", ns])
        sh(["ip", "link", "set", "lo", "up"], ns=ns)
    links = [("c0", "c", "r1c", "r1"), ("r1m", "r1", "r2m", "r2"), ("r2s", "r2", "s0", "s")]
    for a, na, b, nb in links:
        sh(["ip", "link", "add", a, "netns", NS[na], "type", "veth", "peer", "name", b,
            "netns", NS[nb]])
    for dev, n in [("c0", "c"), ("r1c", "r1"), ("r1m", "r1"), ("r2m", "r2"), ("r2s", "r2"),
                   ("s0", "s")]:
        if n in ("r1", "r2"):
            sh(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], ns=NS[n])
            sh(["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], ns=NS[n])
        sh(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
            "rx", "off"], ns=NS[n], check=False)
        sh(["ip", "link", "set", dev, "up"], ns=NS[n])
    for n in ("c", "s"):
        ns = NS[n]
        sh(["sysctl", "-qw", "net.ipv4.tcp_timestamps=%d" % (1 if sc.get("ts", True) else 0)], ns=ns)
        sh(["sysctl", "-qw", "net.ipv4.tcp_sack=%d" % (1 if sc.get("sack", True) else 0)], ns=ns)
        sh(["sysctl", "-qw", "net.ipv4.tcp_window_scaling=%d" % (1 if sc.get("ws", True) else 0)], ns=ns)
        sh(["sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"], ns=ns)
        sh(["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"], ns=ns)
        sh(["sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"], ns=ns)
    sh(["ip", "addr", "add", C4 + "/24", "dev", "c0"], ns=NS["c"])
    sh(["ip", "addr", "add", S4 + "/24", "dev", "s0"], ns=NS["s"])
    sh(["ip", "-6", "addr", "add", C6 + "/64", "dev", "c0", "nodad"], ns=NS["c"])
    sh(["ip", "-6", "addr", "add", S6 + "/64", "dev", "s0", "nodad"], ns=NS["s"])
    # static neighbours: no ARP / ND in the captures, no waiting for resolution
    cm, smac = mac(NS["c"], "c0"), mac(NS["s"], "s0")
    for ip, m in ((S4, smac), (S6, smac)):
        sh(["ip", "neigh", "replace", ip, "lladdr", m, "dev", "c0", "nud", "permanent"], ns=NS["c"])
    for ip, m in ((C4, cm), (C6, cm)):
        sh(["ip", "neigh", "replace", ip, "lladdr", m, "dev", "s0", "nud", "permanent"], ns=NS["s"])
    # route metrics: the server's IW, the client's IW, receive window and MSS
    srv = ["initcwnd", str(sc["iw"])]
    cli = ["initcwnd", str(sc.get("client_iw", 10))]
    if sc.get("initrwnd"):
        cli += ["initrwnd", str(sc["initrwnd"])]
    if sc.get("advmss"):
        cli += ["advmss", str(sc["advmss"])]
    for fam, net in (("-4", "10.77.0.0/24"), ("-6", "fd77::/64")):
        sh(["ip", fam, "route", "replace", net, "dev", "s0"] + srv, ns=NS["s"])
        sh(["ip", fam, "route", "replace", net, "dev", "c0"] + cli, ns=NS["c"])


def lab(sc, d1_us, d2_us, drop=None, app_server=False):
    """setup(sc), then the two delay lines (client side d1_us, server side d2_us, optionally
    dropping a frame) and, if asked, tools/tcpapp.py serving on S4:PORT. Returns the started
    processes, for stop()."""
    setup(sc)
    procs = [start([DELAYLINE, "r1c", "r1m", str(d1_us)], NS["r1"]),
             start([DELAYLINE, "r2m", "r2s", str(d2_us)] + (["--drop", drop] if drop else []), NS["r2"])]
    if app_server:
        srv = start(["python3", APP, "server", S4, str(PORT)], NS["s"])
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


def mss_of(sc):
    if sc.get("advmss"):
        return sc["advmss"]
    return 1440 if sc.get("v6") else 1460


def truth_for(sc, transfer, cport):
    """Expected verdicts for both senders of one transfer, from the configuration."""
    op, n = transfer
    ts = sc.get("ts", True)
    c_mss = mss_of(sc)                    # what the client advertises
    s_mss = 1440 if sc.get("v6") else 1460  # what the server advertises
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
    if op == "GET":
        req = len("SEND %d\n" % n)
        flows.append(flight("client", sc.get("client_iw", 10), s_mss - opt, req))
        flows.append(flight("server", sc["iw"], c_mss - opt, n, rwnd, loss=bool(sc.get("drop"))))
    else:
        req = len("TAKE %d\n" % n) + n
        flows.append(flight("client", sc.get("client_iw", 10), s_mss - opt, req,
                            loss=bool(sc.get("drop"))))
        flows.append(flight("server", sc["iw"], c_mss - opt, 3))
    for f in flows:
        f["client_port"] = cport
        f["server_port"] = PORT
    return flows


def run(sc, outdir):
    name = sc["name"]
    d1, d2 = sc.get("delay_ms", (15, 15))
    dl1, dl2 = lab(sc, d1 * 1000, d2 * 1000, sc.get("drop"))
    snap = str(sc.get("snaplen", 262144))
    caps = {}
    for vantage, ns, dev in (("client", "c", "c0"), ("mid", "r1", "r1m"), ("server", "s", "s0")):
        path = os.path.join(outdir, "%s.%s.pcap" % (name, vantage))
        caps[vantage] = start(["tcpdump", "-i", dev, "-s", snap, "--immediate-mode", "-U", "-w", path, "tcp"], NS[ns])
        wait_line(caps[vantage], "listening")
    host = S6 if sc.get("v6") else S4
    srv = start(["python3", APP, "server", host, str(PORT)], NS["s"])
    wait_line(srv, "ready")
    args = ["%s:%d" % t for t in sc["transfers"]]
    cl = sh(["python3", APP, "client", host, str(PORT), "0.3"] + args, ns=NS["c"], timeout=120)
    time.sleep(0.2 + 2 * (d1 + d2) / 1000.0)
    for p in caps.values():
        stop(p)
    stop(srv)
    stop(dl1)
    stop(dl2)
    teardown()
    for vantage in caps:
        path = os.path.join(outdir, "%s.%s.pcap" % (name, vantage))
        if os.path.getsize(path) <= 24:
            raise RuntimeError("%s: nothing captured" % path)
    flows = []
    for line, t in zip(cl.stdout.splitlines(), sc["transfers"]):
        rec = json.loads(line)
        flows += truth_for(sc, t, rec["client_port"])
    truth = {"scenario": name, "config": {k: v for k, v in sc.items() if k != "name"},
             "ip_ver": 6 if sc.get("v6") else 4, "flows": flows}
    with open(os.path.join(outdir, name + ".truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")
    print("%-22s %d flows" % (name, len(cl.stdout.splitlines())))


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
    return out


def main():
    if os.geteuid() != 0:
        print("truth.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    args = sys.argv[1:]
    outdir = os.path.join(ROOT, "tests", "pcaps", "truth")
    if args[:1] == ["--out"]:
        outdir, args = args[1], args[2:]
    os.makedirs(outdir, exist_ok=True)
    want = set(args)
    for sc in scenarios():
        if not want or sc["name"] in want:
            run(sc, outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
