#!/usr/bin/env python3
"""Lists every exact first-flight verdict (iw_limit = 'cwnd') over a set of captures, with the
evidence beside it and the tshark command that shows its packets, so that a reader can check
each by eye (docs/METHOD.md, "Reading verdicts by eye").

    python3 tools/verdicts.py [--bin build/iwscope] [--all] [--summary] [CAPTURE|DIR ...]

Default captures: every file of ../shared/captures/INDEX.tsv. --all lists every measured flight
(lower bounds too), --summary prints only the counts by verdict. Output: one tab-separated line
per flight: capture, tcp.stream, sender, verdict, segs, bytes, smss, rule, end, next, pause_ms,
rtt_ms, app, then the tshark command.
"""
import concurrent.futures
import os
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "captures"))


def captures(args):
    if not args:
        index = os.path.join(SHARED, "INDEX.tsv")
        rels = [l.split("\t")[0] for l in open(index).read().splitlines()[1:]]
        return [os.path.join(SHARED, r) for r in rels if os.path.exists(os.path.join(SHARED, r))]
    out = []
    for a in args:
        if os.path.isdir(a):
            for d, _, files in os.walk(a):
                out += [os.path.join(d, f) for f in sorted(files) if f.endswith((".pcap", ".pcapng", ".cap"))]
        else:
            out.append(a)
    return out


def streams(path):
    """tshark's tcp.stream numbers by (client ip, client port, server ip, server port)."""
    r = subprocess.run(["tshark", "-r", path, "-n", "--disable-protocol", "vnc", "-Y",
                        "tcp.flags.syn == 1 && tcp.flags.ack == 0",
                        "-T", "fields", "-e", "tcp.stream", "-e", "ip.src", "-e", "ipv6.src",
                        "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = {}
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) < 7:
            continue
        src = (f[1] or f[2]).split(",")[-1]
        dst = (f[4] or f[5]).split(",")[-1]
        out.setdefault((src, f[3].split(",")[-1], dst, f[6].split(",")[-1]), f[0])
    return out


def analyse(binary, path, tmp, i):
    db = os.path.join(tmp, "v%d.db" % i)
    subprocess.run([binary, "-q", "-r", path, "-o", db], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM flows ORDER BY ts_us")]
    con.close()
    return rows


def main():
    args = sys.argv[1:]
    binary = os.path.join(ROOT, "build", "iwscope")
    every = summary = False
    while args and args[0].startswith("--"):
        if args[0] == "--bin":
            binary, args = args[1], args[2:]
        elif args[0] == "--all":
            every, args = True, args[1:]
        elif args[0] == "--summary":
            summary, args = True, args[1:]
        else:
            print(__doc__, file=sys.stderr)
            return 1
    paths = captures(args)
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda a: analyse(binary, a[1], tmp, a[0]), enumerate(paths)))
        for path, rows in zip(paths, results):
            ids = None
            for r in rows:
                for p, who in (("s", "server"), ("c", "client")):
                    lim = r[p + "_iw_limit"]
                    if lim is None or lim == "none":
                        continue
                    counts[(who, lim)] = counts.get((who, lim), 0) + 1
                    if summary or (lim != "cwnd" and not every):
                        continue
                    if ids is None:
                        ids = streams(path)
                    st = ids.get((r["client_ip"], str(r["client_port"]), r["server_ip"],
                                  str(r["server_port"])), "?")
                    ms = lambda v: "-" if v is None else "%.1f" % (v / 1000.0)
                    rel = os.path.relpath(path, SHARED) if path.startswith(SHARED) else path
                    print("\t".join(str(x) for x in (
                        rel, st, who, r[p + "_iw_class"], r[p + "_iw_segs"], r[p + "_iw_bytes"],
                        r[p + "_smss"], r[p + "_iw_rule"], r[p + "_iw_end"], r[p + "_iw_next"],
                        ms(r[p + "_iw_pause_us"]), ms(r["rtt_us"]), r["app_proto"],
                        "tshark -r %s -Y 'tcp.stream==%s'" % (path, st))))
    for (who, lim), n in sorted(counts.items()):
        print("# %s %s: %d" % (who, lim, n), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
