#!/usr/bin/env python3
"""Checks iwscope's first-flight verdicts against tests/pcaps/truth/*.truth.json at every
vantage point (client, mid, server, or those the file lists in "vantages") and by both rules
(TSecr by default, --timing forced).
Used by tests/run.py; run alone for a table: python3 tests/truthcheck.py BINARY [-v]."""
import glob
import json
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runcache  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUTH = os.path.join(ROOT, "tests", "pcaps", "truth")
VANTAGES = ("client", "mid", "server")
OPEN = {l.strip() for l in open(os.path.join(ROOT, "tests", "truth_open.txt"))
        if l.strip() and not l.startswith("#")}  # unless a truth file lists its own ("vantages")


def analyse(binary, pcap, timing, env=None):
    """{client port: row} of pcap read with --no-dpi (and --timing). The run is shared with the
    other tests of a tests/run.py session that make the same one (tests/runcache.py)."""
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "t.db")
        args = ["-q", "--no-dpi", "-r", pcap, "-o", db] + (["--timing"] if timing else [])
        rc, _, err = runcache.run(binary, args, env)
        if rc != 0:
            raise RuntimeError("%s exited %d: %s" % (" ".join([binary] + args), rc,
                                                     err.decode(errors="replace")))
        con = sqlite3.connect(db)
        con.row_factory = sqlite3.Row
        rows = {row["client_port"]: dict(row) for row in con.execute("SELECT * FROM flows")}
        con.close()
        return rows


def expectation(t, vantage, timing):
    """What must be said for flow t at vantage (client, mid, server), with timing forced or not:
    t's own keys, then its "timing" overrides (timestamps ignored), then the "at" overrides of
    this vantage point (t's, then those inside "timing"). An override that names a limit and no
    count drops the count."""
    want = {k: t[k] for k in ("limit", "segs", "iw", "smss") if k in t}

    def apply(o):
        if o and "limit" in o and "segs" not in o:
            want.pop("segs", None)
        want.update({k: v for k, v in (o or {}).items() if k in ("limit", "segs")})

    layers = [t] + ([t["timing"]] if timing and "timing" in t else [])
    for i, layer in enumerate(layers):
        if i:
            apply(layer)
        apply(layer.get("at", {}).get(vantage))
    return want


def verdict_ok(want, row, p):
    """A row's verdict for sender p against want. "lower": nothing here could know where the
    flight ended, so no exact IW but the true one, and any lower bound at most the true IW."""
    lim, segs = row[p + "_iw_limit"], row[p + "_iw_segs"]
    if want["limit"] == "lower":
        if lim == "cwnd":
            return segs == want["iw"]
        return lim in ("app", "nagle", "ambiguous", "rwnd", "loss") and (segs is None or segs <= want["iw"])
    if lim != want["limit"]:
        return False
    return "segs" not in want or segs == want["segs"]


def check(binary, scenario="*", truth_dir=TRUTH, env=None):
    """Yields (case name, ok, detail) for every flow, sender, vantage and rule; iwscope runs
    with env (None: this process's environment)."""
    for path in sorted(glob.glob(os.path.join(truth_dir, scenario + ".truth.json"))):
        truth = json.load(open(path))
        name = truth["scenario"]
        ts = truth["config"].get("ts", True)
        rules = [False, True] if ts else [False]
        # a loopback capture is every vantage point at once ("host"); a veth pair has no mid
        for vantage in truth.get("vantages", VANTAGES):
            pcap = os.path.join(truth_dir, "%s.%s.pcap" % (name, vantage))
            for timing in rules:
                rows = analyse(binary, pcap, timing, env)
                for t in truth["flows"]:
                    p = "c" if t["sender"] == "client" else "s"
                    case = "%s/%s/%s/%s:%d" % (name, vantage, "timing" if timing else "default",
                                                t["sender"], t["client_port"])
                    row = rows.get(t["client_port"])
                    if row is None:
                        yield case, False, "flow missing"
                        continue
                    want = expectation(t, vantage, timing)
                    # timing alone, away from the sender: a tail held on the way for up to a
                    # round trip arrives when released data would, so no exact IW is sure
                    # (docs/METHOD.md "Late tails"); a lower bound up to the true IW is right
                    if want["limit"] == "cwnd" and (timing or not ts) and \
                            vantage not in (t["sender"], "host"):
                        want = {"limit": "lower", "iw": t["iw"]}
                    ok = verdict_ok(want, row, p)
                    want_rule = "timing" if (timing or not ts) else "tsecr"
                    # "rule": "either": round trips of microseconds, where R's clock may not
                    # tick between its SYN and its first ACK, so the echo cannot separate the
                    # flights and timing is what is left (docs/METHOD.md, rule 1)
                    if t.get("rule") == "either" and not timing:
                        want_rule = row[p + "_iw_rule"]
                    if want["limit"] not in ("loss", "lower") and row[p + "_iw_rule"] != want_rule:
                        ok = False
                    if want["limit"] == "cwnd" and row[p + "_smss"] != t["smss"]:
                        ok = False
                    if not ok and case.rsplit(":", 1)[0] in {o.rsplit(":", 1)[0] for o in OPEN}:
                        yield case, True, "OPEN (tests/truth_open.txt)"
                        continue
                    yield case, ok, "want %s %s (iw %s) smss %s, got %s %s smss %s rule %s end %s next %s pause %s" % (
                        want["limit"], want.get("segs", ""), want.get("iw", ""), t["smss"],
                        row[p + "_iw_limit"], row[p + "_iw_segs"], row[p + "_smss"], row[p + "_iw_rule"],
                        row[p + "_iw_end"], row[p + "_iw_next"], row[p + "_iw_pause_us"])


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
