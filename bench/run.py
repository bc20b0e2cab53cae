#!/usr/bin/env python3
"""make bench: iwscope against real peers on the same captures, in one run, as ratios.

Then many connections open at once (issue 29): tools/benchgen --open makes 20 k, 200 k and
1 M connections (handshake, a 100-byte request, ten 1448-byte segments, an ACK, all open at
once, then all closed; headers only), and iwscope with its defaults (nDPI, SQLite) is timed
against tcpdump's raw read of each, with its peak RSS per open connection and its rows
against the connections. `--open-only` runs that part alone and rewrites only its section of
bench/RESULTS.md.

Builds a large capture with tools/benchgen (real flows from tests/pcaps cloned with fresh
addresses and start offsets, so tens of thousands are open at once), its headers-only variant
(snaplen 96), a 4x longer one at the same concurrency, and a 1 M half-open SYN flood. Each
command runs RUNS times (default 5); the median wall time, CPU time and peak RSS are reported,
and bench/RESULTS.md is rewritten.

    python3 bench/run.py [--runs N] [--dir /tmp/iwscope-bench]
"""
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
IW = os.path.join(ROOT, "build", "iwscope")
GEN = os.path.join(ROOT, "build", "benchgen")


def run_once(cmd, warm=None, cleanup=None):
    """Wall and CPU seconds and peak RSS (MiB) of one run. RSS comes from /usr/bin/time, so it
    is the command's own, not this Python process's image before exec. warm is read first so
    that every command starts with the capture in the page cache (this machine's memory
    reclaim evicts it between runs)."""
    if warm:
        with open(warm, "rb") as f:
            while f.read(1 << 22):
                pass
    if cleanup:
        cleanup()
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), p.stderr[-500:]))
    _, user, sys_, rss = p.stderr.strip().splitlines()[-1].split()
    return wall, float(user) + float(sys_), int(rss) / 1024.0


BUSY = ["python3", "-c", "n = 0\nfor i in range(12000000): n += i"]


def parallelism():
    """How much a second busy process gets done alongside a first, as a factor (2.0: two full
    cores). Virtual machines often give less (shared hyperthreads, a busy host), and that caps
    what a second thread can gain."""
    t0 = time.monotonic()
    subprocess.run(BUSY, check=True)
    one = time.monotonic() - t0
    t0 = time.monotonic()
    ps = [subprocess.Popen(BUSY) for _ in range(2)]
    for p in ps:
        p.wait()
    two = time.monotonic() - t0
    return 2 * one / two


def machine():
    cpu = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = int(open("/proc/meminfo").readline().split()[1]) / 1024 / 1024
    return "%s, %d cores, %.0f GiB RAM, Linux %s" % (cpu, os.cpu_count(), mem, platform.release())


def version(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return (r.stdout.strip().splitlines() or ["?"])[0]


def sources():
    """The captures tools/benchgen clones into the benchmark's: the IPv4 ground truth and nDPI's."""
    truth = os.path.join(ROOT, "tests", "pcaps", "truth")
    srcs = sorted(os.path.join(truth, f) for f in os.listdir(truth)
                  if f.endswith(".server.pcap") and not f.startswith("v6"))
    return srcs + [os.path.join(ROOT, "tests", "pcaps", "dpi", "apps.server.pcap")]


def quic_sources(n_tcp):
    """The QUIC lab's captures next to the server (tools/quictruth.py: ngtcp2, one connection
    each), listed often enough beside n_tcp TCP sources (1.4 flows a clone on average) that
    about a third of the mixed capture's connections are QUIC, as a third of web requests are."""
    q = sorted(os.path.join(ROOT, "tests", "pcaps", "quictruth", f)
               for f in os.listdir(os.path.join(ROOT, "tests", "pcaps", "quictruth"))
               if f.endswith(".server.pcap"))
    return q * max(1, round(0.7 * n_tcp / len(q)))


OPEN_SIZES = (20000, 200000, 1000000)
OPEN_HEADING = "\n## Many connections open at once"


def open_connections(d, runs):
    """The open-connections benchmark: (markdown section, summary lines)."""
    import sqlite3
    caps = {}
    for n in OPEN_SIZES:
        caps[n] = os.path.join(d, "open%d.pcap" % n)
        if not os.path.exists(caps[n]):
            subprocess.run([GEN, caps[n], "--open", str(n)], check=True)
    db = os.path.join(d, "open.db")

    def clean():
        for s in ("", "-wal", "-shm"):
            if os.path.exists(db + s):
                os.unlink(db + s)

    plan = []
    for n in OPEN_SIZES:
        plan.append(("tcpdump", n, ["tcpdump", "-r", caps[n], "-w", "/dev/null"], None))
        plan.append(("iwscope", n, [IW, "-q", "-r", caps[n], "-o", db], clean))
    res = [[] for _ in plan]
    for rnd in range(runs):
        for i, (who, n, cmd, cleanup) in enumerate(plan):
            res[i].append(run_once(cmd, caps[n], cleanup))
        print("open connections: round %d of %d done" % (rnd + 1, runs), flush=True)
    rows_md = []
    lines = []
    for n in OPEN_SIZES:
        td = res[[i for i, p in enumerate(plan) if p[0] == "tcpdump" and p[1] == n][0]]
        iw = res[[i for i, p in enumerate(plan) if p[0] == "iwscope" and p[1] == n][0]]
        clean()
        subprocess.run([IW, "-q", "-r", caps[n], "-o", db], check=True)
        con = sqlite3.connect(db)
        flows, evicted, packets = con.execute("SELECT flows, evicted, packets FROM runs").fetchone()
        nrows = con.execute("SELECT count(*) FROM flows").fetchone()[0]
        con.close()
        clean()
        wall = statistics.median(r[0] for r in iw)
        cpu = statistics.median(r[1] for r in iw)
        rss = max(r[2] for r in iw)
        tdw = statistics.median(r[0] for r in td)
        ratio = statistics.median(a[0] / b[0] for a, b in zip(iw, td))
        per = rss * 1048576 / n
        rows_md.append("| %d | %d | %.2f | %.2f | %.2f | %.2f x | %.2f M/s | %.1f | %d | %d rows, %d evicted |"
                       % (n, packets, tdw, wall, cpu, ratio, packets / wall / 1e6, rss, per, nrows, evicted))
        lines.append("%8d open: %.2f s (tcpdump %.2f s, %.2f x), %.2f M packets/s, peak %.1f MiB = %d B a "
                     "connection, %d rows for %d connections, %d evicted"
                     % (n, wall, tdw, ratio, packets / wall / 1e6, rss, per, nrows, n, evicted))
    md = (OPEN_HEADING + "\n\n"
          "`tools/benchgen OUT --open N`: N connections (handshake, a 100-byte request, ten 1448-byte "
          "segments, the client's ACK; 18 packets each with the closing FINs; headers only, 83 bytes a "
          "packet on disk), one starting every 2 us, all open at once, then all closed in the same order. "
          "iwscope with its defaults (nDPI, SQLite, default flow cap) against `tcpdump -r X -w /dev/null`, "
          "%d rounds as above (times are medians, the ratio the median of per-round ratios, RSS the "
          "largest). Bytes a connection: the whole peak RSS over the connections open at once.\n\n"
          "| open connections | packets | tcpdump wall (s) | iwscope wall (s) | iwscope CPU (s) | "
          "iwscope / tcpdump | packets/s | peak RSS (MiB) | bytes a connection | rows |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n" % runs) + "\n".join(rows_md) + "\n"
    return md, lines


def replace_section(text, heading, section):
    """text with the section that begins at heading (up to the next "## ") replaced by section,
    or section inserted before the live and history sections when it has none."""
    if heading in text:
        a = text.index(heading)
        b = text.find("\n## ", a + len(heading))
        return text[:a] + section + (text[b:] if b >= 0 else "")
    for h in ("\n## Live capture", "\n## History"):
        if h in text:
            a = text.index(h)
            return text[:a] + section + text[a:]
    return text + section


def main():
    args = sys.argv[1:]
    if "--open-only" in args:
        runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 3
        d = args[args.index("--dir") + 1] if "--dir" in args else "/tmp/iwscope-bench"
        os.makedirs(d, exist_ok=True)
        md, lines = open_connections(d, runs)
        print("\n".join(lines))
        results_md = os.path.join(ROOT, "bench", "RESULTS.md")
        text = open(results_md).read() if os.path.exists(results_md) else "# Benchmark results\n"
        open(results_md, "w").write(replace_section(text, OPEN_HEADING, md))
        print("\nwrote its section of bench/RESULTS.md")
        return
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    d = args[args.index("--dir") + 1] if "--dir" in args else "/tmp/iwscope-bench"
    os.makedirs(d, exist_ok=True)
    srcs = sources()
    big, hdr, long4 = (os.path.join(d, n) for n in ("big.pcap", "hdr.pcap", "long4.pcap"))
    flood = os.path.join(d, "flood.pcap")
    print("generating captures in %s ..." % d, flush=True)
    subprocess.run([GEN, big, "25000", "100"] + srcs, check=True)
    subprocess.run([GEN, hdr, "25000", "100", "96"] + srcs, check=True)
    subprocess.run([GEN, long4, "100000", "100", "96"] + srcs, check=True)
    mix = os.path.join(d, "quicmix.pcap")
    subprocess.run([GEN, mix, "25000", "100"] + srcs + quic_sources(len(srcs)), check=True)
    import hostile  # the tests' SYN-flood writer
    hostile.syn_flood(flood, 1000000)
    db = os.path.join(d, "bench.db")

    def clean():
        for s in ("", "-wal", "-shm"):
            if os.path.exists(db + s):
                os.unlink(db + s)

    plan = []

    def bench(label, capture, path, cmd, cleanup=None):
        plan.append((label, capture, path, cmd, cleanup))

    bench("tcpdump -r X -w /dev/null", "big", big, ["tcpdump", "-r", big, "-w", "/dev/null"])
    bench("iwscope (nDPI + SQLite)", "big", big, [IW, "-q", "-r", big, "-o", db], clean)
    bench("iwscope --threads 1", "big", big, [IW, "-q", "--threads", "1", "-r", big, "-o", db], clean)
    bench("iwscope --no-dpi", "big", big, [IW, "-q", "--no-dpi", "-r", big, "-o", db], clean)
    bench("tcptrace -n X", "big", big, ["tcptrace", "-n", big])
    bench("ndpiReader -i X -q", "big", big, ["ndpiReader", "-i", big, "-q"])
    bench("tcpdump -r X -w /dev/null", "quicmix", mix, ["tcpdump", "-r", mix, "-w", "/dev/null"])
    bench("iwscope (nDPI + SQLite)", "quicmix", mix, [IW, "-q", "-r", mix, "-o", db], clean)
    bench("tcpdump -r X -w /dev/null", "headers96", hdr, ["tcpdump", "-r", hdr, "-w", "/dev/null"])
    bench("iwscope (nDPI + SQLite)", "headers96", hdr, [IW, "-q", "-r", hdr, "-o", db], clean)
    bench("iwscope --threads 1", "headers96", hdr, [IW, "-q", "--threads", "1", "-r", hdr, "-o", db], clean)
    bench("iwscope (nDPI + SQLite)", "headers96x4", long4, [IW, "-q", "-r", long4, "-o", db], clean)
    bench("iwscope SYN flood, --flow-cap 65536", "flood1M", flood,
          [IW, "-q", "-r", flood, "-o", db, "--flow-cap", "65536"], clean)
    # rounds: every command once per round, so a machine that speeds up or slows down during
    # the run (this one does, by tens of percent) shifts every command alike
    par = [parallelism()]
    results = [[] for _ in plan]
    for rnd in range(runs):
        for i, (label, capture, path, cmd, cleanup) in enumerate(plan):
            results[i].append(run_once(cmd, path, cleanup))
        print("round %d of %d done" % (rnd + 1, runs), flush=True)
    par.append(parallelism())
    open_md, open_lines = open_connections(d, runs)
    rows = []
    print("%-34s %-11s %9s %9s %12s" % ("command", "capture", "wall", "cpu", "peak RSS"))
    for (label, capture, path, cmd, cleanup), res in zip(plan, results):
        w = statistics.median(r[0] for r in res)
        c = statistics.median(r[1] for r in res)
        r = max(r[2] for r in res)
        rows.append((label, capture, w, c, r))
        print("%-34s %-11s %7.2f s %7.2f s %8.1f MiB" % (label, capture, w, c, r), flush=True)

    clean()
    out = subprocess.run([IW, "-q", "-r", big, "-o", db], check=True)
    import sqlite3
    con = sqlite3.connect(db)
    nflows, npk = con.execute("SELECT flows, packets FROM runs").fetchone()
    con.close()
    clean()
    subprocess.run([IW, "-q", "-r", flood, "-o", db, "--flow-cap", "65536"], check=True)
    con = sqlite3.connect(db)
    fl_flows, fl_evicted = con.execute("SELECT flows, evicted FROM runs").fetchone()
    con.close()
    clean()

    subprocess.run([IW, "-q", "-r", mix, "-o", db], check=True)
    con = sqlite3.connect(db)
    mix_quic, mix_flows = con.execute("SELECT sum(transport = 'quic'), count(*) FROM flows").fetchone()
    con.close()
    clean()

    def get(label, cap):
        return next(r for r in rows if r[0] == label and r[1] == cap)

    def per_round(num, den):
        """The median over rounds of num's wall time over den's (both run in every round)."""
        idx = {(p[0], p[1]): i for i, p in enumerate(plan)}
        a, b = results[idx[num]], results[idx[den]]
        return statistics.median(x[0] / y[0] for x, y in zip(a, b))
    BIG_IW = ("iwscope (nDPI + SQLite)", "big")
    iw = get("iwscope (nDPI + SQLite)", "big")
    one = get("iwscope --threads 1", "big")
    hd1 = get("iwscope --threads 1", "headers96")
    hd = get("iwscope (nDPI + SQLite)", "headers96")
    h4 = get("iwscope (nDPI + SQLite)", "headers96x4")
    fl = get("iwscope SYN flood, --flow-cap 65536", "flood1M")
    hdr_packets = npk
    TD = ("tcpdump -r X -w /dev/null", "big")
    ratios = [
        ("iwscope / tcpdump raw read (wall)", "%.2f x" % per_round(BIG_IW, TD), "<= 1.5 x"),
        ("iwscope --no-dpi / tcpdump raw read", "%.2f x" % per_round(("iwscope --no-dpi", "big"), TD), ""),
        ("second thread (default) vs --threads 1 (wall)", "%.2f s vs %.2f s: %.2f x faster" % (
            iw[2], one[2], per_round(("iwscope --threads 1", "big"), BIG_IW)), "both cores used"),
        ("this machine's second core (two busy processes vs one)", "%.2f x, %.2f x (before, after)" % tuple(par),
         "2.0 = a full core"),
        ("tcptrace / iwscope (wall)", "%.2f x faster" % per_round(("tcptrace -n X", "big"), BIG_IW), ">= 3 x"),
        ("ndpiReader / iwscope (wall)", "%.2f x faster" % per_round(("ndpiReader -i X -q", "big"), BIG_IW), ">= 10 x"),
        ("QUIC's cost: iwscope / tcpdump on `quicmix` against `big`", "%.2f x against %.2f x (%d of %d connections QUIC)" % (
            per_round(("iwscope (nDPI + SQLite)", "quicmix"), ("tcpdump -r X -w /dev/null", "quicmix")),
            per_round(BIG_IW, TD), mix_quic, mix_flows), "(QUIC datagrams cut to 64 B: tcpdump reads less)"),
        ("iwscope peak RSS", "%.1f MiB" % iw[4], "<= 64 MiB"),
        ("peak RSS, 4x longer capture (same concurrency)", "%.1f MiB vs %.1f MiB" % (h4[4], hd[4]), "flat"),
        ("headers-only packets per second", "%.2f M/s (--threads 1: %.2f M/s)" % (hdr_packets / hd[2] / 1e6, hdr_packets / hd1[2] / 1e6), ">= 5 M/s"),
        ("SYN flood: flows, evicted, peak RSS", "%d, %d, %.1f MiB, %.2f s" % (fl_flows, fl_evicted, fl[4], fl[2]), "under the cap"),
    ]
    print()
    for name, val, target in ratios:
        print("%-48s %-28s %s" % (name, val, target))
    print("\n".join(open_lines))
    results_md = os.path.join(ROOT, "bench", "RESULTS.md")
    live = ""  # bench/live.py's section (make bench-live) and the history stay as they were
    if os.path.exists(results_md):
        text = open(results_md).read()
        if OPEN_HEADING in text:  # written again below
            text = replace_section(text, OPEN_HEADING, "")
        kept = [text.index(h) for h in ("\n## Live capture", "\n## History") if h in text]
        if kept:
            live = text[min(kept):]
    with open(results_md, "w") as f:
        f.write("# Benchmark results\n\n")
        f.write("Reproduce: `make bench` (runs `python3 bench/run.py --runs %d`).\n\n" % runs)
        f.write("Machine: %s. Date: %s.\n\n" % (machine(), time.strftime("%Y-%m-%d")))
        f.write("Peers: %s; %s; %s. iwscope %s.\n\n" % (version(["tcpdump", "--version"]),
                version(["tcptrace", "-v"]), version(["ndpiReader", "-h"]) if False else "ndpiReader (libndpi-bin 4.2)",
                version([IW, "--version"]).split()[-1]))
        f.write("Capture `big`: %d packets, %d flows (tools/benchgen: the IPv4 ground-truth and nDPI "
                "captures of tests/pcaps cloned 25000 times, one start every 100 us), full-size packets, "
                "%.0f MB. `headers96`: the same cut to 96 bytes. `headers96x4`: 4x as many clones at the same "
                "spacing (4x longer, same concurrency). `quicmix`: `big`'s sources and the QUIC lab's captures "
                "(ngtcp2, next to the server), cloned alike, a third of the connections QUIC. "
                "`flood1M`: 1 M SYNs from random addresses.\n\n"
                % (npk, nflows, os.path.getsize(big) / 1e6))
        f.write("%d rounds; each round runs every command once, in the table's order, each one after "
                "reading its capture into the page cache. Times are medians over the rounds, ratios the "
                "median of the per-round ratios (so a machine that drifts shifts both sides alike); peak "
                "RSS is the largest.\n\n" % runs)
        f.write("| command | capture | wall (s) | CPU (s) | peak RSS (MiB) |\n|---|---|---|---|---|\n")
        for r in rows:
            f.write("| `%s` | %s | %.2f | %.2f | %.1f |\n" % (r[0], r[1], r[2], r[3], r[4]))
        f.write("\n| measure | result | target |\n|---|---|---|\n")
        for name, val, target in ratios:
            f.write("| %s | %s | %s |\n" % (name, val, target))
        f.write("\nProfile: `perf record -g build/iwscope -q -r /tmp/iwscope-bench/big.pcap -o /tmp/p.db; "
                "perf report --no-children --sort pid,dso` (one line per thread; `--threads 1` for one "
                "profile of everything) or `valgrind --tool=callgrind` for instruction counts.\n")
        f.write(open_md)
        f.write(live)
    print("\nwrote bench/RESULTS.md")


if __name__ == "__main__":
    main()
