#!/usr/bin/env python3
"""Prints, for every ground-truth capture, the server's initial window three ways: the truth
(from the kernel configuration), iwscope's answer, and tcptrace's `initial window` (data before
the first ACK seen at the capture point). Not a test: it shows why the vantage point matters.

    python3 tools/compare_tcptrace.py [BINARY]
"""
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUTH = os.path.join(ROOT, "tests", "pcaps", "truth")


def tcptrace_iw(pcap):
    """{client_port: server->client initial window in packets} from tcptrace -l."""
    out = subprocess.run(["tcptrace", "-l", "-n", pcap], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    res, port = {}, None
    for line in out.splitlines():
        m = re.match(r"\s+host \w+:\s+\S+:(\d+)$", line)
        if m and port is None:
            port = int(m.group(1))
            continue
        m = re.match(r"\s+initial window:\s+(\d+) pkts\s+initial window:\s+(\d+) pkts", line)
        if m and port is not None:
            res[port] = int(m.group(2))
            port = None
    return res


def iwscope_iw(binary, pcap):
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "t.db")
        subprocess.run([binary, "-q", "--no-dpi", "-r", pcap, "-o", db], check=True)
        con = sqlite3.connect(db)
        rows = {r[0]: (r[1], r[2]) for r in
                con.execute("SELECT client_port, s_iw_segs, s_iw_limit FROM flows")}
        con.close()
        return rows


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "iwscope")
    print("%-24s %-7s %6s  %-12s %-12s %s" % ("scenario", "vantage", "port", "truth",
                                              "iwscope", "tcptrace"))
    for path in sorted(glob.glob(os.path.join(TRUTH, "*.truth.json"))):
        truth = json.load(open(path))
        for vantage in truth.get("vantages", ("client", "mid", "server")):
            pcap = os.path.join(TRUTH, "%s.%s.pcap" % (truth["scenario"], vantage))
            ours, theirs = iwscope_iw(binary, pcap), tcptrace_iw(pcap)
            for t in truth["flows"]:
                if t["sender"] != "server":
                    continue
                port = t["client_port"]
                want = "%s %s" % (t["limit"], t.get("segs", "?"))
                got = ours.get(port)
                got = "%s %s" % (got[1], got[0]) if got else "missing"
                tt = theirs.get(port)
                print("%-24s %-7s %6d  %-12s %-12s %s" % (truth["scenario"], vantage, port, want,
                                                          got, "%s pkts" % tt if tt is not None else "-"))


if __name__ == "__main__":
    main()
