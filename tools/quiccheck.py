#!/usr/bin/env python3
"""Every QUIC connection of the captures given (default: every capture of ../shared/captures
whose name says quic or doq, and those tshark finds QUIC in: BY_CONTENT) as tshark sees it beside iwscope's row: the UDP ports, the version (the
last long header's, as tshark's quic.version / gquic.version), the server name (the
ClientHello's SNI, or gQUIC's SNI tag) and the first ALPN protocol.

    python3 tools/quiccheck.py [--bin build/iwscope] [-v] [CAPTURE ...]

Prints one line per connection that differs (and with -v every one), then a summary; exits 1
when a connection tshark lists is missing from iwscope's rows, is there the other way round or
twice, or differs, or when iwscope lists a QUIC connection tshark does not."""
import argparse
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "captures")

FIELDS = ["udp.stream", "udp.srcport", "udp.dstport", "quic.long.packet_type", "quic.version",
          "gquic.version", "tls.handshake.extensions_server_name", "gquic.tag.sni",
          "tls.handshake.extensions_alpn_str"]


# Captures whose names do not say QUIC but whose packets hold it: tshark -Y "quic || gquic" over
# every capture of ../shared/captures finds these besides the named ones (Google QUIC Q035 in
# WeChat's traffic).
BY_CONTENT = ("ndpi/wechat.pcap",)


def default_captures():
    """The captures of ../shared/captures that hold QUIC: those whose names say so (quic, DNS
    over QUIC) and those tshark finds QUIC in (BY_CONTENT)."""
    named = [p for p in glob.glob(os.path.join(SHARED, "*", "*.pcap*"))
             if any(k in os.path.basename(p).lower() for k in ("quic", "doq"))]
    found = [os.path.join(SHARED, p) for p in BY_CONTENT if os.path.exists(os.path.join(SHARED, p))]
    return sorted(set(named + found))


def tshark_connections(path):
    """{(client port, server port): {"version", "sni", "alpn"}} from tshark's QUIC dissection;
    the client is the sender of the stream's first QUIC packet."""
    cmd = ["tshark", "-r", path, "-Y", "quic || gquic", "-T", "fields", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    conns = {}
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        s = v["udp.stream"]
        if s not in conns:
            conns[s] = {"ports": (int(v["udp.srcport"]), int(v["udp.dstport"])), "version": None,
                        "sni": "", "alpn": ""}
        c = conns[s]
        ver = v.get("quic.version") or v.get("gquic.version") or ""
        if ver and ver not in ("0x00000000",):
            c["version"] = int(ver, 16) if ver.startswith("0x") else int.from_bytes(ver.encode(), "big")
        name = v.get("tls.handshake.extensions_server_name") or v.get("gquic.tag.sni") or ""
        if name and not c["sni"]:
            c["sni"] = name.lower()
        if v.get("tls.handshake.extensions_alpn_str") and not c["alpn"]:
            c["alpn"] = v["tls.handshake.extensions_alpn_str"]
    return {c["ports"]: c for c in conns.values()}


def iwscope_connections(binary, path, d):
    """[((client port, server port), {"version", "sni", "alpn"})] of iwscope's QUIC rows, every
    row (duplicates too)."""
    db = os.path.join(d, os.path.basename(path) + ".db")
    r = subprocess.run([binary, "-q", "-r", path, "-o", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if not os.path.exists(db):
        raise RuntimeError("%s: iwscope exited %d: %s" % (path, r.returncode, r.stderr.strip()))
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = con.execute("SELECT client_port, server_port, quic_version, server_name, alpn FROM flows "
                       "WHERE transport = 'quic'").fetchall()
    con.close()
    return [((r["client_port"], r["server_port"]), {"version": r["quic_version"], "sni": r["server_name"] or "",
                                                    "alpn": r["alpn"] or ""}) for r in rows]


def compare(binary, paths):
    """Yields (capture, ports, tshark's, iwscope's or None, what differs): a connection tshark
    lists must be one iwscope row with the same client and server ports (a row the other way
    round is "reversed", two rows "duplicate"), and every iwscope QUIC row must be a connection
    tshark lists ("extra", with tshark's None)."""
    with tempfile.TemporaryDirectory() as d:
        for path in paths:
            want = tshark_connections(path)
            got = iwscope_connections(binary, path, d)
            cap = os.path.relpath(path, SHARED)
            for ports, t in sorted(want.items()):
                same = [g for p, g in got if p == ports]
                g = same[0] if same else None
                diff = []
                if len(same) > 1:
                    diff.append("duplicate")
                if g is None:
                    diff.append("reversed" if any(p == ports[::-1] for p, _ in got) else "missing")
                else:
                    for k in ("version", "sni", "alpn"):
                        if t[k] and t[k] != g[k]:
                            diff.append(k)
                yield cap, ports, t, g, diff
            for ports, g in got:
                if ports not in want:
                    yield cap, ports, None, g, ["extra"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "iwscope"))
    ap.add_argument("-v", action="store_true")
    ap.add_argument("captures", nargs="*")
    a = ap.parse_args()
    n = bad = 0
    for cap, ports, t, g, diff in compare(a.bin, a.captures or default_captures()):
        n += 1
        bad += bool(diff)
        if diff or a.v:
            print("%-4s %s %d->%d tshark: %s; iwscope: %s" % (
                "DIFF" if diff else "ok", cap, ports[0], ports[1],
                "%s %s %s" % (hex(t["version"] or 0), t["sni"], t["alpn"]) if t else "-",
                "%s %s %s" % (hex(g["version"] or 0), g["sni"], g["alpn"]) if g else "-"), ", ".join(diff))
    print("%d QUIC connections, %d differ from tshark" % (n, bad))
    return 1 if bad or not n else 0


if __name__ == "__main__":
    sys.exit(main())
