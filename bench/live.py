#!/usr/bin/env python3
"""make bench-live (root): iwscope and tcpdump capturing live, the same replay at fixed rates.

Two network namespaces joined by a veth pair (names carry this process's id; both are deleted
at the end, also after Ctrl-C). tcpreplay sends the head of the `make bench` capture (first
--packets packets of big.pcap: clients 10.0.0.0/8, servers 172.16.0.0/12, every address
private) from one namespace at each --rates point and at --topspeed; in the other namespace one
receiver at a time captures on the veth end:

    tcpdump -i VETH -w /dev/null                  its "received by filter / dropped by kernel"
    iwscope -i VETH --no-ui -q -o DB              runs.pcap_received / runs.pcap_dropped

each stopped with SIGINT once tcpreplay is done and --settle seconds have passed. CPU per
packet is the receiver's on-CPU time (all its threads, /proc/PID/task/*/schedstat) from just
before tcpreplay starts to the SIGINT, over the packets it received: the start-up before and
the final flush after are left out (the whole run's CPU is in the markdown as well). The kernel
work of moving a packet across the veth runs in tcpreplay's context and is in neither.

One more replay at the lowest rate checks that live rows equal offline rows: iwscope captures
while `tcpdump -w ref.pcap` records the same interface (same snaplen); then `iwscope -r ref.pcap`
analyses what was on the wire and the two flows tables are compared row by row.

    python3 bench/live.py [--rates 50k,100k,200k,400k] [--runs N] [--packets N]
                          [--bin build/iwscope] [--capture big.pcap] [--append-results]

Needs root; without it, it says it is skipped and exits 0. Never downloads anything; the only
addresses used are the namespaces' own.
"""
import argparse
import collections
import os
import re
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as offline_bench  # noqa: E402  bench/run.py: the machine, versions, the capture's sources
BENCH_DIR = "/tmp/iwscope-bench"   # where bench/run.py leaves big.pcap
SECTION = "## Live capture"        # the heading of the RESULTS.md section this writes
OPEN_SECTION = "## Live capture, many connections open"  # ... and of --open's
# columns of flows that identify a run or a row in it, not the flow: left out of the comparison
NOT_COMPARED = ("probe", "run_id", "flow_key", "source_file")  # source_file: NULL live, by design
RECEIVERS = ("tcpdump", "iwscope")
ROW_KEY = ("client_ip", "client_port", "server_ip", "server_port")


def log(msg):
    print(msg, flush=True)


def sh(cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kw)


# ---------------------------------------------------------------------------------------------
# the capture

def private_v4(a):
    """10/8, 172.16/12, 192.168/16, 198.18/15 (benchmarking, RFC 2544)."""
    return (a[0] == 10 or (a[0] == 172 and 16 <= a[1] < 32) or (a[0] == 192 and a[1] == 168)
            or (a[0] == 198 and a[1] in (18, 19)))


def cut_capture(src, dst, n):
    """The first n packets of src (classic pcap) into dst. Returns (packets, largest frame).
    Every IPv4 address must be private or benchmarking space: the replay never carries another."""
    with open(src, "rb") as f, open(dst, "wb") as out:
        gh = f.read(24)
        magic = struct.unpack("<I", gh[:4])[0]
        if magic not in (0xa1b2c3d4, 0xa1b23c4d) or struct.unpack("<I", gh[20:24])[0] != 1:
            raise SystemExit("%s: not a little-endian Ethernet pcap" % src)
        out.write(gh)
        count = biggest = 0
        while count < n:
            rh = f.read(16)
            if len(rh) < 16:
                break
            caplen = struct.unpack("<I", rh[8:12])[0]
            data = f.read(caplen)
            if data[12:14] == b"\x08\x00" and len(data) >= 34:
                for a in (data[26:30], data[30:34]):
                    if not private_v4(a):
                        raise SystemExit("%s: packet %d has address %s, outside 10/8, 172.16/12, "
                                         "192.168/16 and 198.18/15: rewrite it first (tcprewrite "
                                         "--pnat)" % (src, count + 1, ".".join(map(str, a))))
            out.write(rh)
            out.write(data)
            count += 1
            biggest = max(biggest, caplen)
    return count, biggest


def bench_capture(path):
    """big.pcap of `make bench`: the one given, the one bench/run.py left, or made here the
    same way (tools/benchgen, 25000 clones 100 us apart)."""
    if path:
        return path
    big = os.path.join(BENCH_DIR, "big.pcap")
    if os.path.exists(big):
        return big
    gen = os.path.join(ROOT, "build", "benchgen")
    srcs = offline_bench.sources()
    os.makedirs(BENCH_DIR, exist_ok=True)
    log("generating %s (as bench/run.py does) ..." % big)
    subprocess.run([gen, big, "25000", "100"] + srcs, check=True)
    return big


# ---------------------------------------------------------------------------------------------
# the namespaces

class Lab:
    """Namespaces S (sender) and R (receiver), veth S.ifs <-> R.ifr, IPv6 off (no router
    solicitations or MLD in the counts). Deleted by close(), whatever happened."""

    def __init__(self, mtu):
        pid = os.getpid()
        self.ns_s, self.ns_r = "iwlb%ds" % pid, "iwlb%dr" % pid
        self.ifs, self.ifr = "lb%ds" % pid, "lb%dr" % pid   # < 16 characters
        self.made = []
        for ns in (self.ns_s, self.ns_r):
            sh(["ip", "netns", "add", ns])
            self.made.append(ns)
        sh(["ip", "link", "add", self.ifs, "netns", self.ns_s, "type", "veth",
            "peer", "name", self.ifr, "netns", self.ns_r])
        for ns, dev in ((self.ns_s, self.ifs), (self.ns_r, self.ifr)):
            for k in ("all", "default"):
                sh(self.cmd(ns, ["sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % k]))
            sh(self.cmd(ns, ["sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % dev]), check=False)
            if mtu > 1500:
                sh(self.cmd(ns, ["ip", "link", "set", dev, "mtu", str(mtu)]))
            sh(self.cmd(ns, ["ip", "link", "set", dev, "up"]))
            sh(self.cmd(ns, ["ip", "link", "set", "lo", "up"]))
        # frames are captured as they arrive, not merged (veth has no GRO by default; be sure)
        if shutil.which("ethtool"):
            sh(self.cmd(self.ns_r, ["ethtool", "-K", self.ifr, "gro", "off"]), check=False)

    @staticmethod
    def cmd(ns, argv):
        return ["ip", "netns", "exec", ns] + argv

    def close(self):
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        self.made = []


# ---------------------------------------------------------------------------------------------
# processes

CHILDREN = []   # receivers still running: ended by the cleanup whatever happens


def cpu_ns(pid):
    """On-CPU time of every thread of pid, in ns (schedstat), or None once it is gone."""
    total = 0
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return total


def start(argv, errpath):
    err = open(errpath, "w")
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
    err.close()
    p.t0 = time.monotonic()
    CHILDREN.append(p)
    return p


def wait_until(what, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if what():
            return True
        time.sleep(step)
    return False


def stop(p, timeout=120):
    """SIGINT, then wait: (seconds it took to exit, CPU seconds of its whole life, peak RSS in
    KiB)."""
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    end = t0 + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > end:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            p.returncode = -9
            break
        time.sleep(0.02)
    CHILDREN.remove(p)
    return time.monotonic() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def new_lab(labs, mtu):
    """A Lab of that MTU, kept in labs for in_lab to close."""
    labs.append(Lab(mtu))
    return labs[-1]


def in_lab(work, body):
    """body(labs), labs a list where body keeps the Lab it makes (new_lab): its result, or None
    when interrupted (said on stderr). Whatever happens, the children are killed, the lab's
    namespaces removed and work deleted."""
    labs = []
    try:
        return body(labs)
    except KeyboardInterrupt:
        print("\nbench/live.py: interrupted; namespaces removed", file=sys.stderr)
        return None
    finally:
        kill_children()
        for lab in labs:
            lab.close()
        shutil.rmtree(work, ignore_errors=True)


def kill_children():
    for p in list(CHILDREN):
        try:
            p.kill()
            p.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        CHILDREN.remove(p)


def tcpreplay(lab, pcap, rate):
    """Replays pcap at rate packets/s (None: --topspeed). Returns (sent, failed, seconds, pps)."""
    speed = ["--topspeed"] if rate is None else ["--pps=%d" % rate]
    r = sh(lab.cmd(lab.ns_s, ["tcpreplay", "-i", lab.ifs] + speed + [pcap]), check=False)
    out = r.stdout
    m = re.search(r"Actual: (\d+) packets \((\d+) bytes\) sent in ([\d.]+) seconds", out)
    pps = re.search(r"Rated: .*?([\d.]+) pps", out)
    failed = re.search(r"Failed packets:\s+(\d+)", out)
    if r.returncode != 0 or not m:
        raise RuntimeError("tcpreplay failed:\n" + out[-2000:])
    return (int(m.group(1)), int(failed.group(1)) if failed else 0, float(m.group(3)),
            float(pps.group(1)) if pps else 0.0)


# ---------------------------------------------------------------------------------------------
# receivers: each returns a dict with received, dropped, cpu_ns (capture window), cpu_s (life),
# stop_s (SIGINT to exit)

def tcpdump_stats(text):
    def num(what):
        m = re.search(r"(\d+) packets? %s" % what, text)
        return int(m.group(1)) if m else None
    return num("received by filter"), (num("dropped by kernel") or 0) + (num("dropped by interface") or 0)


def run_receiver(kind, lab, pcap, rate, args, work, ref=None):
    """One receiver capturing one replay. ref: also record the wire into this pcap (tcpdump
    beside iwscope, for the live = offline check)."""
    errpath = os.path.join(work, "%s.err" % kind)
    db = os.path.join(work, "live.db")
    side = None
    if kind == "tcpdump":
        p = start(lab.cmd(lab.ns_r, ["tcpdump", "-i", lab.ifr, "-w", "/dev/null"]), errpath)
        ready = lambda: "listening on" in open(errpath).read()  # noqa: E731
    else:
        for s in ("", "-wal", "-shm"):
            if os.path.exists(db + s):
                os.unlink(db + s)
        if ref:
            referr = os.path.join(work, "ref.err")
            side = start(lab.cmd(lab.ns_r, ["tcpdump", "-i", lab.ifr, "-s", str(args.snaplen),
                                            "-w", ref]), referr)
            if not wait_until(lambda: "listening on" in open(referr).read(), 10):
                raise RuntimeError("reference tcpdump did not start: " + open(referr).read())
        p = start(lab.cmd(lab.ns_r, [args.bin, "-i", lab.ifr, "--no-ui", "-q", "-o", db]), errpath)

        def ready():
            if not os.path.exists(db):
                return False
            try:
                con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=1)
                n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
                con.close()
                return n > 0
            except sqlite3.Error:
                return False
    if not wait_until(lambda: p.poll() is None and ready(), 15) or p.poll() is not None:
        raise RuntimeError("%s did not start: %s" % (kind, open(errpath).read()[-1000:]))
    started = time.monotonic() - p.t0
    time.sleep(0.2)
    c0 = cpu_ns(p.pid)
    sent, failed, secs, pps = tcpreplay(lab, pcap, rate)
    time.sleep(args.settle)
    c1 = cpu_ns(p.pid)
    stop_s, cpu_s, rss_kib = stop(p)
    err = open(errpath).read()
    res = {"sent": sent, "send_failed": failed, "send_s": secs, "pps": pps, "start_s": started,
           "stop_s": stop_s, "cpu_s": cpu_s, "cpu_ns": (c1 - c0) if c0 is not None and c1 is not None else None,
           "rss_kib": rss_kib, "exit": p.returncode, "stderr": err.strip()}
    if side:
        stop(side)
        res["ref_received"], res["ref_dropped"] = tcpdump_stats(open(os.path.join(work, "ref.err")).read())
    if kind == "tcpdump":
        res["received"], res["dropped"] = tcpdump_stats(err)
    else:
        con = sqlite3.connect(db)
        row = con.execute("SELECT pcap_received, pcap_dropped, packets, flows, evicted, status "
                          "FROM runs").fetchone()
        res["rows"] = con.execute("SELECT count(*) FROM flows").fetchone()[0]
        con.close()
        res["received"], res["dropped"], res["packets"], res["flows"], res["evicted"], res["status"] = row
        res["db"] = db
    if res["received"] is None:
        raise RuntimeError("%s: no received count (exit %s): %s" % (kind, p.returncode, err[-1000:]))
    return res


def worst(runs):
    """The run with the most drops (then the fewest received, then the most CPU per packet)."""
    return max(runs, key=lambda r: (r["dropped"], r["sent"] - r["received"], per_packet(r) or 0))


def per_packet(r):
    return r["cpu_ns"] / r["received"] if r["cpu_ns"] is not None and r["received"] else None


def drop_free(r):
    """Nothing dropped by the capture and nothing missing: received covers what was sent."""
    return r["dropped"] == 0 and r["received"] >= r["sent"] - r["send_failed"]


# ---------------------------------------------------------------------------------------------
# live rows = offline rows

def flow_rows(db):
    con = sqlite3.connect(db)
    cols = [c[1] for c in con.execute("PRAGMA table_info(flows)") if c[1] not in NOT_COMPARED]
    rows = [dict(zip(cols, r)) for r in con.execute("SELECT %s FROM flows" % ", ".join(cols))]
    con.close()
    return cols, rows


def compare_rows(live_db, off_db):
    """(equal, lines): the flows of the two runs, compared on every column but the run's."""
    cols, live = flow_rows(live_db)
    _, off = flow_rows(off_db)

    def index(rows):
        d = collections.defaultdict(list)
        for r in rows:
            d[tuple(r[k] for k in ROW_KEY)].append(r)
        return d
    li, oi = index(live), index(off)
    only_live = sum(len(v) for k, v in li.items() if k not in oi)
    only_off = sum(len(v) for k, v in oi.items() if k not in li)
    diff_cols = collections.Counter()
    examples = []
    differing = 0
    for k in li.keys() & oi.keys():
        a = sorted(li[k], key=lambda r: [str(r[c]) for c in cols])
        b = sorted(oi[k], key=lambda r: [str(r[c]) for c in cols])
        if len(a) != len(b):
            differing += 1
            examples.append("%s: %d live rows, %d offline" % (k, len(a), len(b)))
            continue
        for x, y in zip(a, b):
            d = [c for c in cols if x[c] != y[c]]
            if d:
                differing += 1
                diff_cols.update(d)
                if len(examples) < 5:
                    examples.append("%s:%s -> %s:%s: " % (x["client_ip"], x["client_port"], x["server_ip"],
                                                         x["server_port"]) +
                                    ", ".join("%s live %r offline %r" % (c, x[c], y[c]) for c in d[:4]))
    if not (only_live or only_off or differing) and len(live) == len(off):
        return True, ["live rows = offline rows: %d flows (%d columns compared)" % (len(live), len(cols))]
    lines = ["live rows != offline rows: %d live, %d offline; %d only live, %d only offline, %d differ"
             % (len(live), len(off), only_live, only_off, differing)]
    if diff_cols:
        lines.append("  columns that differ (rows): " + ", ".join("%s %d" % kv for kv in diff_cols.most_common()))
    lines += ["  " + e for e in examples]
    return False, lines


def live_offline_check(lab, pcap, rate, args, work):
    ref = os.path.join(work, "ref.pcap")
    log("live = offline check: iwscope and tcpdump -w ref.pcap at %s ..." % rate_name(rate))
    # Each packet socket stamps a frame itself when the kernel has not (the two captures then
    # differ by a microsecond here and there); a socket that asks for receive timestamps makes
    # the kernel stamp every frame once, on arrival, and both read that stamp.
    stamp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stamp.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_TIMESTAMP", 29), 1)  # 29: Linux
    time.sleep(0.5)
    try:
        r = run_receiver("iwscope", lab, pcap, rate, args, work, ref=ref)
    finally:
        stamp.close()
    off = os.path.join(work, "off.db")
    for s in ("", "-wal", "-shm"):
        if os.path.exists(off + s):
            os.unlink(off + s)
    subprocess.run([args.bin, "-r", ref, "-o", off, "-q"], check=True)
    equal, lines = compare_rows(r["db"], off)
    if r["dropped"] or r.get("ref_dropped") or r["received"] != r.get("ref_received"):
        lines.append("  (not a valid check: iwscope received %s dropped %s, the reference tcpdump "
                     "received %s dropped %s; both must see every packet)"
                     % (r["received"], r["dropped"], r.get("ref_received"), r.get("ref_dropped")))
        equal = None
    return equal, lines


# ---------------------------------------------------------------------------------------------
# reporting

def rate_name(rate):
    if rate is None:
        return "top"
    return "%dk" % (rate // 1000) if rate % 1000 == 0 else str(rate)


def parse_rates(text):
    out = []
    for t in text.split(","):
        t = t.strip().lower()
        if t in ("top", "topspeed"):
            continue
        out.append(int(float(t[:-1]) * 1000) if t.endswith("k") else int(t))
    return sorted(set(out)) + [None]   # top speed always last


def fmt(v, f="%d"):
    return "-" if v is None else f % v


def table(results, rates):
    """Rows of text: the rate asked for, packets sent, and per receiver the rate tcpreplay
    achieved while it captured, received, dropped, drop % and CPU ns per packet."""
    head = ("rate", "sent", "tcpdump pps", "recv", "drop", "drop%", "ns/pkt",
            "iwscope pps", "recv", "drop", "drop%", "ns/pkt", "stop s")
    rows = []
    for rate in rates:
        row = [rate_name(rate), str(min(r["sent"] for k in RECEIVERS for r in results[rate][k]))]
        for kind in RECEIVERS:
            w = worst(results[rate][kind])
            row += ["%.0f" % w["pps"], str(w["received"]), str(w["dropped"]),
                    "%.2f" % (100.0 * w["dropped"] / max(1, w["sent"])), fmt(per_packet(w), "%.0f")]
        row.append("%.1f" % max(r["stop_s"] for r in results[rate]["iwscope"]))
        rows.append(tuple(row))
    return head, rows


def highest_drop_free(results, rates, kind):
    """The highest rate below the first with drops (every run of kind drop-free up to it), with
    the rate tcpreplay achieved there (the sender shares the machine: at high rates it falls
    short)."""
    best = None
    for rate in rates:
        if not all(drop_free(r) for r in results[rate][kind]):
            break
        best = "%s (achieved %.0f pps)" % (rate_name(rate), min(r["pps"] for r in results[rate][kind]))
    return best or "none"


def commit():
    r = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=False)
    dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], check=False).stdout.strip()
    return (r.stdout.strip() or "?") + (" (with local changes)" if dirty else "")


def markdown(args, results, rates, npk, check, load):
    head, rows = table(results, rates)
    md = ["%s (bench/live.py)" % SECTION, "",
          "Reproduce: `make bench-live` (root; `python3 bench/live.py --runs %d --packets %d`)." % (args.runs, args.packets),
          "",
          "Date: %s. Machine: %s; load average %s at the start. iwscope commit %s. %s; %s." % (
              time.strftime("%Y-%m-%d %H:%M"), offline_bench.machine(), load, commit(), offline_bench.version(["tcpdump", "--version"]),
              offline_bench.version(["tcpreplay", "--version"])),
          "",
          "The first %d packets of `make bench`'s big.pcap, replayed by tcpreplay from one network "
          "namespace over a veth pair to the other, where one receiver at a time captures: "
          "`tcpdump -i VETH -w /dev/null` (its default buffer) or `iwscope -i VETH --no-ui -q -o DB` "
          "(its defaults: snaplen 9216, 128 MiB buffer, nDPI, SQLite). %d run(s) per point, the one "
          "with the most drops shown. received/dropped are each tool's libpcap counts; ns/pkt is the "
          "receiver's on-CPU time (all threads) from the replay's start to SIGINT over the packets it "
          "received; stop s is iwscope's time from SIGINT to exit." % (npk, args.runs), "",
          "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    md += ["", "Highest rate without drops: tcpdump %s, iwscope %s." % (
        highest_drop_free(results, rates, "tcpdump"), highest_drop_free(results, rates, "iwscope")), ""]
    md += ["Whole-run CPU seconds (start-up and final flush included), worst run: " + "; ".join(
        "%s tcpdump %.2f, iwscope %.2f" % (rate_name(rate), worst(results[rate]["tcpdump"])["cpu_s"],
                                          worst(results[rate]["iwscope"])["cpu_s"]) for rate in rates) + ".", ""]
    if check:
        md += ["Live rows against offline rows (iwscope -r on tcpdump's recording of the same replay, "
               "lowest rate): " + "; ".join(l.strip() for l in check[1]) + ".", ""]
    return "\n".join(md)


def append_results(md, section=SECTION):
    """Puts the section into bench/RESULTS.md in place of an earlier one, or before the history."""
    path = os.path.join(ROOT, "bench", "RESULTS.md")
    text = open(path).read()
    i = text.find("\n" + section + " (")  # the heading names the script after it
    if i >= 0:
        j = text.find("\n## ", i + 1)
        text = text[:i] + text[j:] if j >= 0 else text[:i]
    h = text.find("\n## History")  # the history of the offline figures stays last
    head, tail = (text[:h], text[h:]) if h >= 0 else (text, "")
    with open(path, "w") as f:
        f.write(head.rstrip("\n") + "\n\n" + md.rstrip("\n") + "\n" + tail)


# ---------------------------------------------------------------------------------------------
# --open: many connections open at once, live (issue 29 item 5)

def open_capture(n):
    """tools/benchgen's capture of n connections open at once (made once, kept in BENCH_DIR):
    its frames carry headers only, each record's length as captured, so a replay sends what
    a capture of the wire would hold."""
    os.makedirs(BENCH_DIR, exist_ok=True)
    path = os.path.join(BENCH_DIR, "open%d.pcap" % n)
    if not os.path.exists(path):
        gen = os.path.join(ROOT, "build", "benchgen")
        if not os.access(gen, os.X_OK):
            sh(["make", "-C", ROOT, "build/benchgen"])
        sh([gen, path + ".tmp", "--open", str(n)])
        os.rename(path + ".tmp", path)
    return path


def run_open(args, lab, work):
    """Each --open count replayed at --open-rate into tcpdump, then iwscope: dicts per count."""
    out = []
    for n in args.open:
        pcap = open_capture(n)
        res = {"n": n}
        for kind in RECEIVERS:
            r = run_receiver(kind, lab, pcap, args.open_rate, args, work)
            res[kind] = r
            if kind == "iwscope" and args.keep:
                os.makedirs(args.keep, exist_ok=True)
                shutil.copy(r["db"], os.path.join(args.keep, "open%d.db" % n))
            log("  open %d %-7s: sent %d in %.1f s (%.0f pps), received %d, dropped %d, peak %.1f MiB%s" % (
                n, kind, r["sent"], r["send_s"], r["pps"], r["received"], r["dropped"], r["rss_kib"] / 1024,
                ", rows %d, evicted %d" % (r["rows"], r["evicted"]) if kind == "iwscope" else ""))
        out.append(res)
    return out


def open_table(results):
    head = ("open connections", "packets sent", "pps achieved", "tcpdump recv", "drop",
            "iwscope recv", "drop", "ns/pkt", "peak RSS (MiB)", "bytes a connection", "rows", "evicted")
    rows = []
    for res in results:
        t, w = res["tcpdump"], res["iwscope"]
        rows.append((str(res["n"]), str(w["sent"]), "%.0f" % w["pps"], str(t["received"]), str(t["dropped"]),
                     str(w["received"]), str(w["dropped"]), fmt(per_packet(w), "%.0f"), "%.1f" % (w["rss_kib"] / 1024),
                     "%.0f" % (w["rss_kib"] * 1024.0 / res["n"]), str(w["rows"]), str(w["evicted"])))
    return head, rows


def open_markdown(args, results, load):
    head, rows = open_table(results)
    md = ["%s (bench/live.py --open)" % OPEN_SECTION, "",
          "Reproduce: `python3 bench/live.py --open %s --open-rate %d` (root)." % (
              ",".join(str(n) for n in args.open), args.open_rate), "",
          "Date: %s. Machine: %s; load average %s at the start. iwscope commit %s." % (
              time.strftime("%Y-%m-%d %H:%M"), offline_bench.machine(), load, commit()), "",
          "`tools/benchgen OUT --open N` (N connections all open at once, then all closed; headers "
          "only) replayed by tcpreplay at %d packets/s over the lab's veth pair into `tcpdump -i VETH "
          "-w /dev/null`, then into `iwscope -i VETH --no-ui -q -o DB` with its defaults (nDPI, SQLite, "
          "the flow table sized from the memory available and shared out among its workers). Peak RSS "
          "is iwscope's whole process (ru_maxrss); rows and evicted are its database's, which should "
          "say N and 0." % args.open_rate, "",
          "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(md) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rates", default="50k,100k,200k,400k",
                    help="packets per second, comma-separated (k = 1000); top speed is always added")
    ap.add_argument("--runs", type=int, default=1, help="runs per point; the worst is shown (default 1)")
    ap.add_argument("--packets", type=int, default=300000,
                    help="packets replayed: the head of the bench capture (default 300000: 6 s at 50k/s)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "iwscope"), help="the iwscope binary")
    ap.add_argument("--capture", help="the capture to cut (default %s/big.pcap, made if absent)" % BENCH_DIR)
    ap.add_argument("--settle", type=float, default=1.5,
                    help="seconds between tcpreplay's end and the receiver's SIGINT (default 1.5)")
    ap.add_argument("--no-check", action="store_true", help="skip the live = offline rows check")
    ap.add_argument("--open", type=lambda t: [int(float(x[:-1]) * (1000 if x[-1] in "kK" else 1000000))
                                              if x[-1] in "kKmM" else int(x) for x in t.split(",")],
                    help="instead: replay tools/benchgen's captures of N connections open at once "
                         "(comma-separated; k, M), into tcpdump and iwscope; rows, evictions, peak RSS")
    ap.add_argument("--open-rate", type=int, default=100000,
                    help="packets per second for --open (default 100000)")
    ap.add_argument("--keep", metavar="DIR",
                    help="--open: keep iwscope's database of each count in DIR (openN.db)")
    ap.add_argument("--append-results", action="store_true",
                    help="write the markdown section into bench/RESULTS.md (replacing an earlier one)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/live.py: skipped: the live benchmark needs root (network namespaces, veth, "
              "tcpreplay); run `sudo make bench-live`")
        return 0
    for tool in ("tcpreplay", "tcpdump", "ip"):
        if not shutil.which(tool):
            print("bench/live.py: %s is missing (make bench-live installs it)" % tool, file=sys.stderr)
            return 2
    args.bin = os.path.abspath(args.bin)
    if not os.access(args.bin, os.X_OK):
        print("bench/live.py: %s is not built (make)" % args.bin, file=sys.stderr)
        return 2
    args.snaplen = 9216
    m = re.search(r"-s SNAPLEN .*default (\d+)", sh([args.bin, "--help"], check=False).stdout)
    if m:
        args.snaplen = int(m.group(1))
    rates = parse_rates(args.rates)
    load = open("/proc/loadavg").read().split()[0]

    def on_term(sig, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started with &
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    work = tempfile.mkdtemp(prefix="iwscope-live-")
    if args.open:
        results = in_lab(work, lambda labs: run_open(args, new_lab(labs, 1500), work))
        if results is None:
            return 130
        md = open_markdown(args, results, load)
        print(md)
        if args.append_results:
            append_results(md, OPEN_SECTION)
            print("wrote the live --open section of bench/RESULTS.md")
        bad = [r["n"] for r in results if r["iwscope"]["rows"] != r["n"] or r["iwscope"]["evicted"]]
        return 1 if bad else 0
    def measure(labs):
        pcap = os.path.join(work, "replay.pcap")
        npk, biggest = cut_capture(bench_capture(args.capture), pcap, args.packets)
        log("replaying %d packets (largest frame %d bytes); rates %s; %d run(s) each; load %s"
            % (npk, biggest, ", ".join(rate_name(r) for r in rates), args.runs, load))
        lab = new_lab(labs, biggest - 14)
        results = {}
        for rate in rates:
            results[rate] = {"tcpdump": [], "iwscope": []}
            for n in range(args.runs):
                for kind in RECEIVERS:    # alternating, so drift hits both alike
                    r = run_receiver(kind, lab, pcap, rate, args, work)
                    results[rate][kind].append(r)
                    log("  %-4s %-7s run %d: sent %d in %.2f s (%.0f pps), received %d, dropped %d, "
                        "%s ns/pkt, stopped in %.1f s%s" % (
                            rate_name(rate), kind, n + 1, r["sent"], r["send_s"], r["pps"], r["received"],
                            r["dropped"], fmt(per_packet(r), "%.0f"), r["stop_s"],
                            "" if r["exit"] in (0, None) else ", exit %s: %s" % (r["exit"], r["stderr"][-300:])))
        check = None if args.no_check else live_offline_check(lab, pcap, rates[0], args, work)
        return results, npk, check

    done = in_lab(work, measure)
    if done is None:
        return 130
    results, npk, check = done
    head, rows = table(results, rates)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print()
    print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    print("\nhighest rate without drops: tcpdump %s, iwscope %s" % (
        highest_drop_free(results, rates, "tcpdump"), highest_drop_free(results, rates, "iwscope")))
    if check:
        print("\n".join(check[1]))
    md = markdown(args, results, rates, npk, check, load)
    if args.append_results:
        append_results(md)
        print("\nwrote the live section of bench/RESULTS.md")
    else:
        os.makedirs(BENCH_DIR, exist_ok=True)
        mdpath = os.path.join(BENCH_DIR, "live.md")
        with open(mdpath, "w") as f:
            f.write(md + "\n")
        print("\nmarkdown section: %s (--append-results puts it into bench/RESULTS.md)" % mdpath)
    return 0


if __name__ == "__main__":
    sys.exit(main())
