#!/usr/bin/env python3
"""make bench: iwscope against real peers on the same captures, in one run, as ratios.

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


def measure(cmd, runs, cleanup=None):
    """Median wall and CPU seconds and the largest peak RSS (MiB) over runs. RSS comes from
    /usr/bin/time, so it is the command's own, not this Python process's image before exec."""
    res = []
    for _ in range(runs):
        if cleanup:
            cleanup()
        t0 = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M"] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(cmd), p.stderr[-500:]))
        _, user, sys_, rss = p.stderr.strip().splitlines()[-1].split()
        res.append((wall, float(user) + float(sys_), int(rss) / 1024.0))
    return (statistics.median(r[0] for r in res), statistics.median(r[1] for r in res),
            max(r[2] for r in res))


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


def main():
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    d = args[args.index("--dir") + 1] if "--dir" in args else "/tmp/iwscope-bench"
    os.makedirs(d, exist_ok=True)
    srcs = sorted(os.path.join(ROOT, "tests", "pcaps", "truth", f)
                  for f in os.listdir(os.path.join(ROOT, "tests", "pcaps", "truth"))
                  if f.endswith(".server.pcap") and not f.startswith("v6"))
    srcs.append(os.path.join(ROOT, "tests", "pcaps", "dpi", "apps.server.pcap"))
    big, hdr, long4 = (os.path.join(d, n) for n in ("big.pcap", "hdr.pcap", "long4.pcap"))
    flood = os.path.join(d, "flood.pcap")
    print("generating captures in %s ..." % d, flush=True)
    subprocess.run([GEN, big, "25000", "100"] + srcs, check=True)
    subprocess.run([GEN, hdr, "25000", "100", "96"] + srcs, check=True)
    subprocess.run([GEN, long4, "100000", "100", "96"] + srcs, check=True)
    import run as suite  # the test suite's SYN-flood writer
    suite.syn_flood(flood, 1000000)
    db = os.path.join(d, "bench.db")

    def clean():
        for s in ("", "-wal", "-shm"):
            if os.path.exists(db + s):
                os.unlink(db + s)

    for f in (big, hdr, long4):
        subprocess.run(["cat", f], stdout=subprocess.DEVNULL)  # warm the page cache
    rows = []

    def bench(label, capture, cmd, cleanup=None):
        w, c, r = measure(cmd, runs, cleanup)
        rows.append((label, capture, w, c, r, " ".join(os.path.basename(x) if x.startswith(d) else x for x in cmd)))
        print("%-34s %-11s %7.2f s %7.2f s %8.1f MiB" % (label, capture, w, c, r), flush=True)

    print("%-34s %-11s %9s %9s %12s" % ("command", "capture", "wall", "cpu", "peak RSS"))
    bench("tcpdump -r X -w /dev/null", "big", ["tcpdump", "-r", big, "-w", "/dev/null"])
    bench("iwscope (nDPI + SQLite)", "big", [IW, "-q", "-r", big, "-o", db], clean)
    bench("iwscope --threads 1", "big", [IW, "-q", "--threads", "1", "-r", big, "-o", db], clean)
    bench("iwscope --no-dpi", "big", [IW, "-q", "--no-dpi", "-r", big, "-o", db], clean)
    bench("tcptrace -n X", "big", ["tcptrace", "-n", big])
    bench("ndpiReader -i X -q", "big", ["ndpiReader", "-i", big, "-q"])
    bench("tcpdump -r X -w /dev/null", "headers96", ["tcpdump", "-r", hdr, "-w", "/dev/null"])
    bench("iwscope (nDPI + SQLite)", "headers96", [IW, "-q", "-r", hdr, "-o", db], clean)
    bench("iwscope --threads 1", "headers96", [IW, "-q", "--threads", "1", "-r", hdr, "-o", db], clean)
    bench("iwscope (nDPI + SQLite)", "headers96x4", [IW, "-q", "-r", long4, "-o", db], clean)
    bench("iwscope SYN flood, --flow-cap 65536", "flood1M", [IW, "-q", "-r", flood, "-o", db, "--flow-cap", "65536"], clean)
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

    def get(label, cap):
        return next(r for r in rows if r[0] == label and r[1] == cap)
    td = get("tcpdump -r X -w /dev/null", "big")
    iw = get("iwscope (nDPI + SQLite)", "big")
    nodpi = get("iwscope --no-dpi", "big")
    one = get("iwscope --threads 1", "big")
    hd1 = get("iwscope --threads 1", "headers96")
    tt = get("tcptrace -n X", "big")
    nd = get("ndpiReader -i X -q", "big")
    hd = get("iwscope (nDPI + SQLite)", "headers96")
    h4 = get("iwscope (nDPI + SQLite)", "headers96x4")
    fl = get("iwscope SYN flood, --flow-cap 65536", "flood1M")
    hdr_packets = npk
    ratios = [
        ("iwscope / tcpdump raw read (wall)", "%.2f x" % (iw[2] / td[2]), "<= 1.5 x"),
        ("iwscope --no-dpi / tcpdump raw read", "%.2f x" % (nodpi[2] / td[2]), ""),
        ("second thread (default) vs --threads 1 (wall)", "%.2f s vs %.2f s: %.2f x faster" % (iw[2], one[2], one[2] / iw[2]), "both cores used"),
        ("tcptrace / iwscope (wall)", "%.2f x faster" % (tt[2] / iw[2]), ">= 3 x"),
        ("ndpiReader / iwscope (wall)", "%.2f x faster" % (nd[2] / iw[2]), ">= 10 x"),
        ("iwscope peak RSS", "%.1f MiB" % iw[4], "<= 64 MiB"),
        ("peak RSS, 4x longer capture (same concurrency)", "%.1f MiB vs %.1f MiB" % (h4[4], hd[4]), "flat"),
        ("headers-only packets per second", "%.2f M/s (--threads 1: %.2f M/s)" % (hdr_packets / hd[2] / 1e6, hdr_packets / hd1[2] / 1e6), ">= 5 M/s"),
        ("SYN flood: flows, evicted, peak RSS", "%d, %d, %.1f MiB, %.2f s" % (fl_flows, fl_evicted, fl[4], fl[2]), "under the cap"),
    ]
    print()
    for name, val, target in ratios:
        print("%-48s %-28s %s" % (name, val, target))
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "w") as f:
        f.write("# Benchmark results\n\n")
        f.write("Reproduce: `make bench` (runs `python3 bench/run.py --runs %d`).\n\n" % runs)
        f.write("Machine: %s. Date: %s.\n\n" % (machine(), time.strftime("%Y-%m-%d")))
        f.write("Peers: %s; %s; %s. iwscope %s.\n\n" % (version(["tcpdump", "--version"]),
                version(["tcptrace", "-v"]), version(["ndpiReader", "-h"]) if False else "ndpiReader (libndpi-bin 4.2)",
                version([IW, "--version"]).split()[-1]))
        f.write("Capture `big`: %d packets, %d flows (tools/benchgen: the IPv4 ground-truth and nDPI "
                "captures of tests/pcaps cloned 25000 times, one start every 100 us), full-size packets, "
                "%.0f MB. `headers96`: the same cut to 96 bytes. `headers96x4`: 4x as many clones at the same "
                "spacing (4x longer, same concurrency). `flood1M`: 1 M SYNs from random addresses.\n\n"
                % (npk, nflows, os.path.getsize(big) / 1e6))
        f.write("Median of %d runs; peak RSS is the largest.\n\n" % runs)
        f.write("| command | capture | wall (s) | CPU (s) | peak RSS (MiB) |\n|---|---|---|---|---|\n")
        for r in rows:
            f.write("| `%s` | %s | %.2f | %.2f | %.1f |\n" % (r[0], r[1], r[2], r[3], r[4]))
        f.write("\n| measure | result | target |\n|---|---|---|\n")
        for name, val, target in ratios:
            f.write("| %s | %s | %s |\n" % (name, val, target))
        f.write("\nProfile: `perf record -g build/iwscope -q -r /tmp/iwscope-bench/big.pcap -o /tmp/p.db; "
                "perf report --no-children --sort pid,dso` (one line per thread; `--threads 1` for one "
                "profile of everything) or `valgrind --tool=callgrind` for instruction counts.\n")
    print("\nwrote bench/RESULTS.md")


if __name__ == "__main__":
    main()
