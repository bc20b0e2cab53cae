#!/usr/bin/env python3
"""Reads the truth lab's server flights with tshark (not truth.py's own pcap reader), so that a
truth file can be checked by a second reader against what the stack did.

For every server flight of each scenario it prints:
  - at the vantage point nearest the server (server, or loopback's host): the server's new data
    before the first ACK of its data reached that point, in segments (ceil(len / smss): a TSO
    super-packet counts what it carries), the TSecr values those segments echo, that ACK's
    TSval and what the next data echoes: with a configured IW of n and a larger response, n
    segments that all echo one TSecr, followed by data that echoes the ACK, is the IW sent
    before any ACK reached the server;
  - at the other vantage points: when the first IW * smss bytes arrived (ms after the first),
    their TSvals and TSecrs, and when the next data came and what it echoes (a tail held by the
    last hop, a flight spread by a queue or by pacing);
  - with --echo: the flow from the request on, in capture order: S:segments/eTSecr for server
    data, C:ackN/vTSval for the client's ACKs (loopback and veth: the echo is what separates
    flights a few microseconds apart);
  - the truth file's expectation.

    python3 tools/truthshow.py [--dir DIR] [--echo] SCENARIO...
"""
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = 8080
FIELDS = ["frame.time_relative", "tcp.srcport", "tcp.dstport", "tcp.len", "tcp.seq", "tcp.ack",
          "tcp.flags.syn", "tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr"]


def packets(pcap):
    """Every TCP segment of pcap as a dict (relative sequence numbers)."""
    cmd = ["tshark", "-r", pcap, "-o", "tcp.relative_sequence_numbers:TRUE", "-T", "fields"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         check=True).stdout
    rows = []
    for line in out.splitlines():
        v = line.split("\t")
        rows.append({"t": float(v[0]), "sport": int(v[1]), "dport": int(v[2]), "len": int(v[3]),
                     "seq": int(v[4]), "ack": int(v[5]), "syn": v[6] in ("1", "True"),
                     "tsval": int(v[7]) if v[7] else None, "tsecr": int(v[8]) if v[8] else None})
    return rows


def flow(rows, cport):
    return [r for r in rows if cport in (r["sport"], r["dport"])]


def first_ack(fr):
    """The client's first segment acknowledging server data."""
    return next((r for r in fr if r["dport"] == PORT and not r["syn"] and r["ack"] > 1), None)


def near_server(fr, smss):
    data = [r for r in fr if r["sport"] == PORT and r["len"] > 0]
    ack = first_ack(fr)
    t0 = data[0]["t"]
    before = [r for r in data if ack is None or r["t"] < ack["t"]]
    after = [r for r in data if ack is not None and r["t"] >= ack["t"]]
    return ("%d segs in %d packets (sizes %s) within %.1f ms before the first ACK of data at "
            "%.1f ms; TSecr %s; that ACK's TSval %s; next data %.2f ms later echoes %s" % (
                sum(math.ceil(r["len"] / smss) for r in before), len(before),
                sorted({r["len"] for r in before}), 1000 * (before[-1]["t"] - t0),
                1000 * (ack["t"] - t0) if ack else -1, sorted({r["tsecr"] for r in before}),
                ack["tsval"] if ack else None,
                1000 * (after[0]["t"] - before[-1]["t"]) if after else -1,
                after[0]["tsecr"] if after else None))


def arrival(fr, iw, smss):
    data = [r for r in fr if r["sport"] == PORT and r["len"] > 0]
    t0 = data[0]["t"]
    first = [r for r in data if r["seq"] < 1 + iw * smss]
    nxt = next((r for r in data if r["seq"] >= 1 + iw * smss), None)
    return "flight at ms [%s], TSval %s TSecr %s; next data at %.1f ms echoes %s" % (
        " ".join("%.1f" % (1000 * (r["t"] - t0)) for r in first),
        sorted({r["tsval"] for r in first}), sorted({r["tsecr"] for r in first}),
        1000 * (nxt["t"] - t0) if nxt else -1, nxt["tsecr"] if nxt else None)


def echoes(fr, smss, limit):
    out, n, request = [], 0, False
    for r in fr:
        if r["sport"] != PORT:
            if r["len"] > 0:
                request = True
                out.append("REQ/v%s" % r["tsval"])
            elif request and r["ack"] > 1 and not r["syn"]:
                out.append("C:ack%d/v%s" % (r["ack"], "-" if r["tsval"] is None else r["tsval"]))
        elif r["len"] > 0:
            k = math.ceil(r["len"] / smss)
            n += k
            out.append("S:%d/e%s" % (k, "-" if r["tsecr"] is None else r["tsecr"]))
            if n >= limit:
                break
    return " ".join(out)


def main():
    args = sys.argv[1:]
    d = os.path.join(ROOT, "tests", "pcaps", "truth")
    if "--dir" in args:
        i = args.index("--dir")
        d = args[i + 1]
        del args[i:i + 2]
    echo = "--echo" in args
    for name in [a for a in args if a != "--echo"]:
        truth = json.load(open(os.path.join(d, name + ".truth.json")))
        vs = truth.get("vantages", ["client", "mid", "server"])
        near = "server" if "server" in vs else "host"
        caps = {v: packets(os.path.join(d, "%s.%s.pcap" % (name, v))) for v in vs}
        print("== %s (server cc %s)" % (name, truth["config"].get("lab", {}).get("server_cc", "?")))
        for t in truth["flows"]:
            if t["sender"] != "server":
                continue
            fr = {v: flow(caps[v], t["client_port"]) for v in vs}
            print("  port %d, IW %d: at %s: %s" % (t["client_port"], t["iw"], near,
                                                   near_server(fr[near], t["smss"])))
            for v in vs:
                if v != near:
                    print("    %s: %s" % (v, arrival(fr[v], t["iw"], t["smss"])))
                if echo:
                    print("    %s echoes: %s" % (v, echoes(fr[v], t["smss"], 2 * t["iw"] + 2)))
            print("    truth: %s" % {k: t[k] for k in ("limit", "segs", "at", "timing") if k in t})


if __name__ == "__main__":
    main()
