#!/usr/bin/env python3
"""Checks iwscope's QUIC rows against tests/pcaps/quictruth/*.truth.json (tools/quictruth.py: the
server's qlog) at every vantage point (client, mid, server). Nothing false may be said:

  - the connection is one row: transport quic, version 1, the server name the client asked for;
  - the server's first flight is a lower bound (s_iw_limit ambiguous or amplification, never an
    exact IW), and its datagrams (s_iw_segs) and bytes (s_iw_bytes) never exceed the truth's
    initial window (iw_dgrams, cwnd_bytes) nor the server's true first flight;
  - quic_amp_limited = 1 only where the qlog shows the 3x limit bound that flight;
  - quic_s_preval <= 3 * quic_c_preval (no server seen past the limit: ngtcp2 keeps it).

Used by tests/area_quictruth.py; run alone for a table: python3 tests/quictruthcheck.py BINARY [-v]."""
import concurrent.futures
import glob
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conditions  # noqa: E402  the capture conditions, made as for TCP

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRUTH = os.path.join(ROOT, "tests", "pcaps", "quictruth")
VANTAGES = ("client", "mid", "server")


def analyse_many(binary, inputs):
    """iwscope's rows of the inputs read as one capture."""
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "q.db")
        cmd = [binary, "-q", "--no-dpi", "-o", db]
        for i in inputs:
            cmd += ["-r", i]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr))
        con = sqlite3.connect(db)
        con.row_factory = sqlite3.Row
        rows = [dict(x) for x in con.execute("SELECT * FROM flows")]
        con.close()
        return rows


def analyse(binary, pcap):
    """iwscope's QUIC rows of one capture."""
    return analyse_many(binary, [pcap])


def problems(truth, rows):
    """What is false or missing in rows (one capture's) against truth: [text]."""
    q = [r for r in rows if r["transport"] == "quic" and r["client_port"] == truth["client_port"]]
    if len(q) != 1:
        return ["%d QUIC rows for client port %d (of %d rows)" % (len(q), truth["client_port"], len(rows))]
    r, out = q[0], []
    ff = truth["first_flight"]
    if r["quic_version"] != truth["quic_version"]:
        out.append("version %s" % r["quic_version"])
    if r["server_name"] != truth["server_name"]:
        out.append("server_name %r" % r["server_name"])
    if r["server_port"] != truth["server_port"]:
        out.append("server_port %s" % r["server_port"])
    if r["s_iw_limit"] not in ("ambiguous", "amplification"):
        out.append("s_iw_limit %s: not a lower bound" % r["s_iw_limit"])
    segs, nbytes = r["s_iw_segs"] or 0, r["s_iw_bytes"] or 0
    if segs > ff["dgrams"] or segs > truth["iw_dgrams"]:
        out.append("s_iw_segs %d > first flight %d or IW %d" % (segs, ff["dgrams"], truth["iw_dgrams"]))
    if nbytes > ff["bytes"] or nbytes > truth["cwnd_bytes"]:
        out.append("s_iw_bytes %d > first flight %d or cwnd %d" % (nbytes, ff["bytes"], truth["cwnd_bytes"]))
    if r["quic_amp_limited"] == 1 and not truth["amp_limited"]:
        out.append("quic_amp_limited 1, the qlog says the flight was not bound by 3x")
    if r["quic_s_preval"] is None or r["quic_c_preval"] is None or \
            r["quic_s_preval"] > 3 * r["quic_c_preval"]:
        out.append("quic_s_preval %s > 3 x quic_c_preval %s" % (r["quic_s_preval"], r["quic_c_preval"]))
    return out


CONDITIONS = conditions.CONDITIONS


def condition_problems(truth, rows, cond):
    """What is false in rows under cond. What a condition hides may go unsaid (no name without
    the client's Initial, no verdict without the flight's end), but nothing said may be false:
    the two-file capture must say what the whole one says; a lower bound stays within the truth;
    no amplification where the qlog shows none; no server seen past 3x the client's bytes unless
    the client's bytes were all in sight."""
    if cond == "twofiles":
        return problems(truth, rows)
    q = [r for r in rows if r["transport"] == "quic" and r["client_port"] == truth["client_port"]]
    if len(q) > 1:
        return ["%d QUIC rows for client port %d" % (len(q), truth["client_port"])]
    if not q:
        return [] if cond == "client" or cond.startswith("snap") else ["no QUIC row"]
    r, out, ff = q[0], [], truth["first_flight"]
    if r["handshake"] == "syn_only":
        out.append("handshake syn_only: the server answered")
    for side, lim in (("c", r["c_iw_limit"]), ("s", r["s_iw_limit"])):
        if lim == "none":
            out.append("%s_iw_limit none: that side sent" % side)
    if cond in ("server", "client") and (r["quic_c_preval"], r["quic_s_preval"], r["quic_amp_limited"]) != (None, None, None):
        out.append("3x fields from one direction: %s %s %s" % (
            r["quic_c_preval"], r["quic_s_preval"], r["quic_amp_limited"]))
    if r["server_name"] not in (None, "", truth["server_name"]):
        out.append("server_name %r" % r["server_name"])
    if r["s_iw_limit"] not in (None, "ambiguous", "amplification"):
        out.append("s_iw_limit %s: not a lower bound" % r["s_iw_limit"])
    segs, nbytes = r["s_iw_segs"] or 0, r["s_iw_bytes"] or 0
    if segs > ff["dgrams"] or segs > truth["iw_dgrams"] or nbytes > ff["bytes"] or nbytes > truth["cwnd_bytes"]:
        out.append("s_iw %d dgrams %d B > first flight %d / %d B" % (segs, nbytes, ff["dgrams"], ff["bytes"]))
    if r["quic_amp_limited"] == 1 and not truth["amp_limited"]:
        out.append("quic_amp_limited 1, the qlog says the flight was not bound by 3x")
    if r["quic_s_preval"] is not None and r["quic_c_preval"] is not None and \
            r["quic_s_preval"] > 3 * r["quic_c_preval"]:
        out.append("quic_s_preval %s > 3 x quic_c_preval %s: a limit broken that ngtcp2 kept" % (
            r["quic_s_preval"], r["quic_c_preval"]))
    return out


DOUBLED_SAME = ("transport", "s_iw_limit", "s_iw_segs", "s_iw_bytes", "c_iw_segs", "c_iw_bytes",
                "c_pkts", "s_pkts", "quic_c_initial", "quic_c_preval", "quic_s_preval",
                "quic_amp_limited", "quic_hs_rtts")


def doubled_problems(whole, doubled):
    """Where the QUIC rows of a capture holding every datagram twice differ from the whole
    capture's: a copy adds nothing."""
    pick = lambda rows: [[r[c] for c in DOUBLED_SAME] for r in rows if r["transport"] == "quic"]
    a, b = pick(whole), pick(doubled)
    return [] if a == b else ["doubled: %s, whole: %s (%s)" % (b, a, ", ".join(DOUBLED_SAME))]


def check_conditions(binary, scenario="*", truth_dir=TRUTH):
    """Yields (case, ok, detail) for every scenario, vantage point and condition, in that order;
    the captures of each scenario and vantage point are made and read one per core at a time."""
    def one(d, truth, vantage):
        pcap = os.path.join(truth_dir, "%s.%s.pcap" % (truth["scenario"], vantage))
        out, whole = [], analyse_many(binary, [pcap])
        for cond in CONDITIONS:
            rows = analyse_many(binary, conditions.derive(pcap, cond, truth["server_port"], d, "udp"))
            bad = condition_problems(truth, rows, cond)
            if cond == "doubled":
                bad += doubled_problems(whole, rows)
            out.append(("%s/%s/%s" % (truth["scenario"], vantage, cond), not bad, "; ".join(bad)))
        return out

    todo = [(json.load(open(path)), vantage)
            for path in sorted(glob.glob(os.path.join(truth_dir, scenario + ".truth.json")))
            for vantage in VANTAGES]
    with tempfile.TemporaryDirectory() as d:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for cases in pool.map(lambda a: one(d, *a), todo):
                yield from cases


def summary(truth, rows):
    """One line of what iwscope said, for -v and the test's note."""
    r = next((x for x in rows if x["transport"] == "quic"), None)
    if r is None:
        return "no QUIC row"
    return "%s %s dgrams %s B amp %s preval %s/%s (truth: flight %d dgrams %d B, IW %d x %d = %d B%s)" % (
        r["s_iw_limit"], r["s_iw_segs"], r["s_iw_bytes"], r["quic_amp_limited"], r["quic_s_preval"],
        r["quic_c_preval"], truth["first_flight"]["dgrams"], truth["first_flight"]["bytes"],
        truth["iw_dgrams"], truth["max_dgram"], truth["cwnd_bytes"], ", 3x bound" if truth["amp_limited"] else "")


def check(binary, scenario="*", truth_dir=TRUTH):
    """Yields (case, ok, detail, row) for every scenario and vantage point."""
    for path in sorted(glob.glob(os.path.join(truth_dir, scenario + ".truth.json"))):
        truth = json.load(open(path))
        for vantage in VANTAGES:
            case = "%s/%s" % (truth["scenario"], vantage)
            rows = analyse(binary, os.path.join(truth_dir, "%s.%s.pcap" % (truth["scenario"], vantage)))
            bad = problems(truth, rows)
            r = next((x for x in rows if x["transport"] == "quic"), None)
            yield case, not bad, "; ".join(bad) or summary(truth, rows), r, truth


if __name__ == "__main__":
    verbose = "-v" in sys.argv
    n = wrong = 0
    for case, ok, detail, _, _ in check(sys.argv[1]):
        n += 1
        wrong += not ok
        if verbose or not ok:
            print("%-4s %-24s %s" % ("ok" if ok else "FAIL", case, detail))
    for case, ok, detail in check_conditions(sys.argv[1]):
        n += 1
        wrong += not ok
        if not ok:
            print("FAIL %-24s %s" % (case, detail))
    print("%d cases, %d wrong" % (n, wrong))
    sys.exit(1 if wrong else 0)
