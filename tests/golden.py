#!/usr/bin/env python3
"""Golden captures: tests/golden/TESTLIST names captures and the rows iwscope must give for each
(tests/golden/*.tsv). tests/area_golden.py makes each line a test, golden:NAME (golden-manifest
checks the list itself); this file also (re)writes an expected file and the committed hostile captures.

    python3 tests/golden.py --update NAME...     write tests/golden/NAME.tsv from build/iwscope
    python3 tests/golden.py --update all         every line (look at `git diff` before committing)
    python3 tests/golden.py --show NAME          print what build/iwscope gives now, write nothing
    python3 tests/golden.py --write-hostile      tests/golden/hostile-* again from tests/hostile.py

A regression from a bug report is a capture plus a line: put the capture under tests/golden/,
add `NAME CAPTURE [OPTIONS...]` to TESTLIST, run --update NAME, read the rows against the
packets, commit the three.
"""
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import runcache  # noqa: E402
ROOT = os.path.dirname(HERE)
GOLDEN = os.path.join(HERE, "golden")
TESTLIST = os.path.join(GOLDEN, "TESTLIST")

# The run's counters and the flows' columns that the method decides, from the capture alone:
# no ids, keys or absolute times (rtt and pauses are differences of capture times), nothing nDPI
# decides (every line runs --no-dpi unless it says otherwise, and app_*, server_name and
# dpi_method are left out even then).
RUN_COLS = ["status", "packets", "bytes", "tcp_packets", "decode_errors", "flows", "evicted"]
SIDE_COLS = ["syn_win", "mss", "wscale", "sack", "ts", "tfo", "ttl", "ittl", "olayout", "quirks",
             "syn_bytes", "syn_retx", "rwnd_class", "pkts", "bytes", "iw_bytes", "iw_segs", "smss",
             "iw_limit", "iw_class", "iw_rule", "iw_std", "iw_end", "iw_next", "iw_pause_us"]
FLOW_COLS = (["ip_ver", "client_ip", "client_port", "server_ip", "server_port", "handshake",
              "rtt_us", "rtt_c_us", "rtt_s_us"] +
             ["c_" + c for c in SIDE_COLS] + ["s_" + c for c in SIDE_COLS] + ["end_reason"])
FLOW_ORDER = "ts_us, client_ip, client_port, server_ip, server_port, flow_key"


class Line:
    """One TESTLIST line: NAME CAPTURE [OPTIONS...]."""

    def __init__(self, lineno, fields):
        self.lineno = lineno
        self.name, self.capture, self.options = fields[0], fields[1], fields[2:]
        self.path = os.path.normpath(os.path.join(ROOT, self.capture))
        self.expected = os.path.join(GOLDEN, self.name + ".tsv")
        self.shared = self.capture.startswith("../shared/")

    def __repr__(self):
        return "TESTLIST:%d %s" % (self.lineno, self.name)


def manifest():
    """The TESTLIST lines, in order; a malformed line or a name used twice raises ValueError."""
    out, names = [], set()
    for i, raw in enumerate(open(TESTLIST), 1):
        text = raw.split("#", 1)[0].split()
        if not text:
            continue
        if len(text) < 2:
            raise ValueError("TESTLIST:%d: want NAME CAPTURE [OPTIONS...]" % i)
        line = Line(i, text)
        if line.name in names:
            raise ValueError("TESTLIST:%d: %s listed twice" % (i, line.name))
        names.add(line.name)
        out.append(line)
    return out


def _cell(v):
    if v is None:
        return "\\N"
    return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _table(db, cols, table, order):
    con = sqlite3.connect(db)
    try:
        rs = con.execute("SELECT %s FROM %s ORDER BY %s" % (", ".join(cols), table, order)).fetchall()
    finally:
        con.close()
    return ["\t".join(cols)] + ["\t".join(_cell(v) for v in r) for r in rs]


def snapshot(binary, line, tmp, env=None):
    """What binary gives for line now, as the expected file's text: the exit status, the run's
    counters, the decode problems by reason, and the flows (one per row)."""
    db = os.path.join(tmp, line.name + ".db")
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    # a run other tests of the session make too (a truth capture with --no-dpi) is made once
    rc, _, err = runcache.run(binary, ["-q", "-r", line.path, "-o", db] + line.options, env, timeout=300)
    err = err.decode(errors="replace")
    if "Sanitizer" in err or "runtime error:" in err:
        raise AssertionError("%r: sanitizer report:\n%s" % (line, err[-3000:]))
    out = ["# %s: iwscope -r %s %s" % (line.name, line.capture, " ".join(line.options)),
           "exit\t%d" % rc]
    if not os.path.exists(db):
        out.append("# no database")
        return "\n".join(out) + "\n"
    out.append("# runs")
    out += _table(db, RUN_COLS, "runs", "id")
    out.append("# run_decode")
    out += _table(db, ["reason", "packets"], "run_decode", "reason")
    out.append("# flows")
    out += _table(db, FLOW_COLS, "flows", FLOW_ORDER)
    return "\n".join(out) + "\n"


def differences(want, got, limit=12):
    """Lines saying where got differs from want, column by column for the flows."""
    w, g = want.splitlines(), got.splitlines()
    msgs = []
    header = None
    for i in range(max(len(w), len(g))):
        a = w[i] if i < len(w) else "<missing>"
        b = g[i] if i < len(g) else "<missing>"
        if a.startswith("ip_ver\t"):
            header = a.split("\t")
        if a == b:
            continue
        if header and a != "<missing>" and b != "<missing>" and a.count("\t") == b.count("\t") == len(header) - 1:
            cols = ["%s %s -> %s" % (h, x, y) for h, x, y in zip(header, a.split("\t"), b.split("\t")) if x != y]
            ident = "\t".join(a.split("\t")[1:5])
            msgs.append("line %d (%s): %s" % (i + 1, ident, ", ".join(cols)))
        else:
            msgs.append("line %d: want %r\n             got  %r" % (i + 1, a[:200], b[:200]))
        if len(msgs) >= limit:
            msgs.append("...")
            break
    return msgs


def main():
    args = sys.argv[1:]
    binary = os.path.join(ROOT, "build", "iwscope")
    if "--binary" in args:
        i = args.index("--binary")
        binary = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if args[:1] == ["--write-hostile"]:
        sys.path.insert(0, HERE)
        import hostile
        for p in hostile.write_all(GOLDEN):
            print("wrote", os.path.relpath(p, ROOT))
        return 0
    if args[:1] not in (["--update"], ["--show"]) or len(args) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    lines = {ln.name: ln for ln in manifest()}
    names = list(lines) if args[1:] == ["all"] else args[1:]
    import tempfile
    tmp = tempfile.mkdtemp(prefix="iwscope-golden-")
    try:
        for name in names:
            if name not in lines:
                print("%s: not in %s" % (name, os.path.relpath(TESTLIST, ROOT)), file=sys.stderr)
                return 1
            ln = lines[name]
            if not os.path.exists(ln.path):
                print("%s: %s not present, skipped" % (name, ln.capture), file=sys.stderr)
                continue
            text = snapshot(binary, ln, tmp)
            if args[0] == "--show":
                sys.stdout.write(text)
                continue
            old = open(ln.expected).read() if os.path.exists(ln.expected) else None
            open(ln.expected, "w").write(text)
            print("%s %s" % ("unchanged" if old == text else "wrote", os.path.relpath(ln.expected, ROOT)))
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
