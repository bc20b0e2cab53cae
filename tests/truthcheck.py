#!/usr/bin/env python3
"""Checks iwscope's first-flight verdicts against tests/pcaps/truth/*.truth.json at every
vantage point (client, mid, server) and by both rules (TSecr by default, --timing forced).
Used by tests/run.py; run alone for a table: python3 tests/truthcheck.py BINARY [-v]."""
import glob
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUTH = os.path.join(ROOT, "tests", "pcaps", "truth")
VANTAGES = ("client", "mid", "server")


def analyse(binary, pcap, timing):
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "t.db")
        cmd = [binary, "-q", "--no-dpi", "-r", pcap, "-o", db] + (["--timing"] if timing else [])
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr))
        con = sqlite3.connect(db)
        con.row_factory = sqlite3.Row
        rows = {row["client_port"]: dict(row) for row in con.execute("SELECT * FROM flows")}
        con.close()
        return rows


def check(binary, scenario="*"):
    """Yields (case name, ok, detail) for every flow, sender, vantage and rule."""
    for path in sorted(glob.glob(os.path.join(TRUTH, scenario + ".truth.json"))):
        truth = json.load(open(path))
        name = truth["scenario"]
        rules = [False, True] if truth["config"].get("ts", True) else [False]
        for vantage in VANTAGES:
            pcap = os.path.join(TRUTH, "%s.%s.pcap" % (name, vantage))
            for timing in rules:
                rows = analyse(binary, pcap, timing)
                for t in truth["flows"]:
                    p = "c" if t["sender"] == "client" else "s"
                    case = "%s/%s/%s/%s:%d" % (name, vantage, "timing" if timing else "default",
                                                t["sender"], t["client_port"])
                    row = rows.get(t["client_port"])
                    if row is None:
                        yield case, False, "flow missing"
                        continue
                    got = (row[p + "_iw_limit"], row[p + "_iw_segs"])
                    want_rule = "timing" if (timing or not truth["config"].get("ts", True)) else "tsecr"
                    ok = got[0] == t["limit"]
                    if "segs" in t:
                        ok = ok and got[1] == t["segs"]
                    if t["limit"] != "loss" and row[p + "_iw_rule"] != want_rule:
                        ok = False
                    if t["limit"] == "cwnd" and row[p + "_smss"] != t["smss"]:
                        ok = False
                    yield case, ok, "want %s %s smss %s, got %s %s smss %s rule %s" % (
                        t["limit"], t.get("segs", ""), t["smss"], got[0], got[1],
                        row[p + "_smss"], row[p + "_iw_rule"])


if __name__ == "__main__":
    verbose = "-v" in sys.argv
    bad = 0
    n = 0
    for case, ok, detail in check(sys.argv[1]):
        n += 1
        if not ok:
            bad += 1
        if verbose or not ok:
            print("%-4s %-52s %s" % ("ok" if ok else "FAIL", case, detail))
    print("%d cases, %d wrong" % (n, bad))
    sys.exit(1 if bad else 0)
