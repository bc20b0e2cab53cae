#!/usr/bin/env python3
"""Server names against tshark: for every TCP stream in which tshark shows an HTTP Host
(http.host) or a TLS SNI (tls.handshake.extensions_server_name), is that name the
server_name iwscope stored for the same flow?

    python3 tests/names_check.py [BINARY] [-v]     (BINARY: build/iwscope by default)

Rules of the comparison:
  * a stream is its (client ip, client port, server ip, server port): the sender of the frame
    that carries the Host or SNI is the client. The flow is iwscope's row with the same four
    values, the same way round (a name stored on a flow whose roles are swapped is a miss).
  * tshark's first name in the stream is the one compared (iwscope keeps one name per flow:
    its first request's); a stream whose rows do not exist in iwscope counts as a miss.
  * names compare by their host part: a ':port' is dropped, an IPv6 literal keeps its
    brackets ('[2001:db8::1]:8080' -> '[2001:db8::1]'), as RFC 3986's host; letters compare
    without case (DNS names are case-insensitive; nDPI lowers them).
tshark reads the captures through tshark_check (one merged pcapng per core, read once per
test run for the SYN cross-checks and the names alike)."""
import concurrent.futures
import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "captures"))
sys.path.insert(0, HERE)
import runcache  # noqa: E402
import tshark_check  # noqa: E402


def host_part(name):
    """The host of a Host header value or an SNI: no ':port', IPv6 literals in brackets."""
    if name is None:
        return None
    n = name.strip()
    if n.startswith("["):
        end = n.find("]")
        if end > 0:
            n = n[:end + 1]
    elif n.count(":") == 1:
        n = n.split(":")[0]
    return n.lower()


_cache = {}


def tshark_names(pcaps, tmp, jobs=None):
    """{pcap: [(stream, client ip, client port, server ip, server port, first name)]}, read
    once per process for the same files (a test's release and ASan runs share it)."""
    key = tuple((p, os.stat(p).st_mtime_ns) for p in pcaps)
    if key not in _cache:
        _cache[key] = _tshark_names(pcaps, tmp, jobs)
    return _cache[key]


def _tshark_names(pcaps, tmp, jobs=None):
    """tshark_check reads the captures (one merged read per core, shared with the SYN
    cross-checks of the same test run); per capture, the first name of each 4-tuple."""
    tshark_check.prefetch(pcaps, tmp, jobs)
    res = {}
    for p in pcaps:
        first = {}
        for rec in tshark_check.tshark_names(p):
            first.setdefault(rec[:5], rec)
        res[p] = sorted(first.values())
    return res


def stored_names(binary, pcap, db, env=None):
    """{(client ip, client port, server ip, server port): [server_name, ...]} or None when
    iwscope wrote no database. A sanitizer's report raises AssertionError."""
    _, _, err = runcache.run(binary, ["-q", "-r", pcap, "-o", db], env, timeout=300)
    err = err.decode(errors="replace")
    if "Sanitizer" in err or "runtime error:" in err:
        raise AssertionError("%s: sanitizer report:\n%s" % (pcap, err[-3000:]))
    if not os.path.exists(db):
        return None
    con = sqlite3.connect(db)
    out = {}
    for cip, cp, sip, sp, name in con.execute(
            "SELECT client_ip, client_port, server_ip, server_port, server_name FROM flows"):
        out.setdefault((cip, cp, sip, sp), []).append(name)
    con.close()
    return out


def measure(binary, pcaps, tmp, jobs=None, env=None):
    """(matched, total, misses): misses are (pcap, stream, tuple, tshark's name, stored); the
    stream numbers are those of the merged file tshark read, not the capture's own."""
    jobs = jobs or os.cpu_count() or 2
    want = tshark_names(pcaps, tmp, jobs)
    todo = [p for p in pcaps if want.get(p)]

    def one(i, p):
        return p, stored_names(binary, p, os.path.join(tmp, "n%d.db" % i), env)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        got = dict(pool.map(lambda a: one(*a), enumerate(todo)))
    matched, total, misses = 0, 0, []
    for p in todo:
        stored = got[p] or {}
        for stream, cip, cp, sip, sp, name in want[p]:
            total += 1
            names = stored.get((cip, cp, sip, sp), [])
            if host_part(name) in [host_part(n) for n in names]:
                matched += 1
            else:
                misses.append((p, stream, (cip, cp, sip, sp), name, names))
    return matched, total, misses


def shared_pcaps():
    out = []
    for line in open(os.path.join(SHARED, "INDEX.tsv")).read().splitlines()[1:]:
        rel = line.split("\t")[0]
        if os.path.exists(os.path.join(SHARED, rel)):
            out.append(os.path.join(SHARED, rel))
    return sorted(out)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    binary = args[0] if args else os.path.join(ROOT, "build", "iwscope")
    with tempfile.TemporaryDirectory(prefix="iwscope-names-") as tmp:
        matched, total, misses = measure(binary, shared_pcaps(), tmp)
    for p, stream, t, name, names in misses:
        print("MISS %s %s:%s > %s:%s tshark %r iwscope %r" % (
            os.path.relpath(p, SHARED), t[0], t[1], t[2], t[3], name, names))
    print("%d of %d names stored (%.1f%%)" % (matched, total, 100.0 * matched / max(total, 1)))


if __name__ == "__main__":
    main()
