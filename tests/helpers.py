"""What the tests share: the test registry (@test, Skip), the binaries, running iwscope and
reading its rows, capture writers, tmux, headless Chromium and the PostgreSQL harness.

tests/run.py runs the tests; each tests/area_*.py holds the tests of one area and is run with
these names (and every area file's own) in its globals.
"""
import concurrent.futures
import ctypes.util
import glob
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import craft  # noqa: E402
import hostile  # noqa: E402
import tshark_check  # noqa: E402
import truthcheck  # noqa: E402
import conditions  # noqa: E402
import runcache  # noqa: E402

REL = os.path.join(ROOT, "build", "iwscope")
DBG = os.path.join(ROOT, "build-debug", "iwscope")
TSAN_BIN = os.path.join(ROOT, "build-tsan", "iwscope")  # make tsan; tests skip without it
PCAPS = os.path.join(ROOT, "tests", "pcaps")
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "captures"))
BINARIES = {"release": REL, "asan": DBG}
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87")

TESTS = []
SELECTED = []  # the names of the tests this run runs, in order (tests/run.py sets it)

# The columns each schema version added, last in their tables (the upgrade tests of SQLite and
# PostgreSQL take a database back by dropping them).
NEW_IN_3 = ["c_iw_end", "s_iw_end", "c_iw_next", "s_iw_next", "c_iw_pause_us", "s_iw_pause_us"]
NEW_IN_4 = ["c_acked_unseen", "s_acked_unseen"]             # flows
NEW_RUNS_IN_4 = ["one_direction", "syn_opts_cut", "acked_unseen"]
NEW_IN_5 = ["transport", "quic_version", "alpn", "quic_retry", "quic_vn", "quic_0rtt", "quic_spin",
            "quic_c_initial", "quic_c_preval", "quic_s_preval", "quic_amp_limited", "quic_hs_rtts",
            "source_file"]
NEW_RUNS_IN_5 = ["skipped", "digest"]
SCHEMA_VERSION = 6


class Skip(Exception):
    pass


def test(name, binaries=("release",)):
    def deco(fn):
        for b in binaries:
            TESTS.append(("%s[%s]" % (name, b), fn, BINARIES[b]))
        return fn
    return deco


def run(args, binary=REL, check_rc=None, stdin=None, timeout=300):
    r = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=ENV, input=stdin, timeout=timeout)
    return _checked(args, check_rc, r.returncode, r.stdout, r.stderr)


def _checked(args, check_rc, rc, out, err):
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    if "Sanitizer" in err or "runtime error:" in err:
        raise AssertionError("sanitizer report:\n" + err[-3000:])
    if check_rc is not None and rc != check_rc:
        raise AssertionError("%s exited %d (want %d): %s" % (" ".join(args), rc,
                                                            check_rc, err.strip()[-1000:]))
    return rc, out, err


def rows(db, sql="SELECT * FROM flows ORDER BY ts_us, client_port"):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    res = [dict(r) for r in con.execute(sql)]
    con.close()
    return res


def strip_ids(rs):
    """Rows without what names the run or its input file (run_id, id, source_file)."""
    return [{k: v for k, v in r.items() if k not in ("id", "run_id", "source_file")} for r in rs]


def analyse(binary, pcaps, tmp, extra=(), name="t.db", rc=0):
    db = os.path.join(tmp, name)
    args = ["-q"]
    for p in pcaps:
        args += ["-r", p]
    run(args + ["-o", db] + list(extra), binary, check_rc=rc)
    return db


def analyse_shared(binary, pcaps, tmp, extra=(), name="t.db", rc=0):
    """analyse() of committed captures that other tests read with the same command: the run is
    made once per test session (tests/runcache.py) and each test gets a copy of its database,
    its exit status and its stderr, checked here as run() checks them."""
    db = os.path.join(tmp, name)
    args = ["-q"]
    for p in pcaps:
        args += ["-r", p]
    args += ["-o", db] + list(extra)
    _checked(args, rc, *runcache.run(binary, args, ENV, timeout=300))
    return db


def eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))


# tools/verdicts.py: exact verdicts with their evidence

sys.path.insert(0, os.path.join(ROOT, "tools"))
import verdicts  # noqa: E402


# Captures and databases: paths, cut files, indexes, journals

def truth_pcap(name="iw10.mid"):
    return os.path.join(PCAPS, "truth", name + ".pcap")


def cut_pcap(tmp):
    """The truth capture cut in the middle of a record, two thirds in."""
    data = open(truth_pcap(), "rb").read()
    cut = os.path.join(tmp, "cut.pcap")
    open(cut, "wb").write(data[:len(data) * 2 // 3 + 7])
    return cut


def started_on_stdin(binary, db, extra=(), prefix=()):
    """iwscope reading a capture from a pipe that has sent only the file header: returned
    once its run is recorded and its threads have started, waiting for the first packet."""
    p = subprocess.Popen(list(prefix) + [binary, "-q", "-r", "-", "-o", db] + list(extra),
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env=ENV)
    p.stdin.write(open(truth_pcap(), "rb").read()[:24])
    p.stdin.flush()
    wait_for(lambda: os.path.exists(db) and count_rows(db, "SELECT count(*) FROM runs"), 10,
             "the run to begin")
    time.sleep(0.3)
    return p


def indexes(db):
    return {r["name"]: r["sql"] for r in rows(db, "SELECT name, sql FROM sqlite_master "
                                             "WHERE type = 'index' AND sql IS NOT NULL")}


def journal(path):
    """'wal' or 'rollback', from the file header's read/write versions (bytes 18-19), which
    reading them does not change, and whether a rollback journal file is left beside it."""
    head = open(path, "rb").read(20)
    mode = {(2, 2): "wal", (1, 1): "rollback"}.get((head[18], head[19]), repr(head[18:20]))
    return mode, os.path.exists(path + "-journal")


# Captures made by hand (tests/craft.py)

def handshake_db(binary, tmp, packets, name):
    p = os.path.join(tmp, name + ".pcap")
    craft.write_pcap(p, packets)
    return rows(analyse(binary, [p], tmp, ["--no-dpi"], name + ".db"))


def mixed_pcap(tmp):
    """One SYN among frames iwscope cannot analyse, one of each kind."""
    c = craft.Conn(cport=40010)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    t = c.t
    ip, tcpseg = craft.ipv4("192.0.2.1", "192.0.2.2", b"\x00" * 28, proto=17), None
    pk = list(c.out)
    pk.append((t + 0.1, craft.ether(ip)))                                            # UDP
    pk.append((t + 0.2, craft.ether(b"\x00" * 28, 0x0806)))                            # ARP
    pk.append((t + 0.3, craft.ether(craft.ipv4("192.0.2.1", "192.0.2.2", b"\x00" * 40, frag=0x2000))))
    pk.append((t + 0.4, craft.ether(craft.ipv4("192.0.2.1", "192.0.2.2", b"\x00" * 8))))  # cut TCP
    bad = craft.ipv4("192.0.2.1", "192.0.2.2", craft.tcp(1, 2, 0, 0, "A", doff=15))
    pk.append((t + 0.5, craft.ether(bad)))                                             # doff too big
    pk.append((t + 0.6, craft.ether(b"\x45\x00")))                                     # cut IP
    p = os.path.join(tmp, "mixed.pcap")
    craft.write_pcap(p, pk)
    return p


# What other tools see in a capture (ndpiReader, tshark)

def ndpireader_flows(pcap):
    """{client_port: (protocol name, hostname or None)} from ndpiReader -v 2."""
    import re
    out = subprocess.run(["ndpiReader", "-i", pcap, "-v", "2"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=120).stdout
    res = {}
    for line in out.splitlines():
        m = re.search(r"TCP \S+:(\d+) <-> \S+:\d+ \[proto: [\d.]+/([^\]]+)\]", line)
        if not m:
            continue
        h = re.search(r"\[Hostname/SNI: ([^\]]+)\]", line)
        res[int(m.group(1))] = (m.group(2), h.group(1) if h else None)
    return res


def tshark_names(pcap):
    out = subprocess.run(["tshark", "-n", "-r", pcap, "-Y", "tls.handshake.extensions_server_name || http.host",
                          "-T", "fields", "-e", "tcp.srcport", "-e", "tls.handshake.extensions_server_name",
                          "-e", "http.host"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    res = {}
    for line in out.splitlines():
        port, sni, host = (line.split("\t") + ["", ""])[:3]
        res[int(port)] = sni or host
    return res


def first_payload(pcap, port):
    """The first TCP payload a client sent to port in a classic Ethernet/IPv4 pcap."""
    import struct
    data = open(pcap, "rb").read()
    off = 24
    while off + 16 <= len(data):
        cap = struct.unpack("<I", data[off + 8:off + 12])[0]
        f = data[off + 16:off + 16 + cap]
        off += 16 + cap
        if f[12:14] != b"\x08\x00" or f[23] != 6:
            continue
        ihl = (f[14] & 15) * 4
        t = f[14 + ihl:]
        tot = struct.unpack("!H", f[16:18])[0]
        if struct.unpack("!H", t[2:4])[0] == port:
            pl = t[(t[12] >> 4) * 4:tot - ihl]
            if pl:
                return pl
    raise AssertionError("no payload to port %d in %s" % (port, pcap))


# Root, network namespaces, waiting for rows

def flows_of(transfers):
    """The connections tools/tcpapp.py makes for transfers ("GET:N:par=K" makes K)."""
    return sum(int(t.split("par=")[1]) if "par=" in t else 1 for t in transfers)


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces, live capture)")
    for tool in ("ip", "ethtool", "tcpdump"):
        if not shutil.which(tool):
            raise Skip("%s not installed" % tool)


def netns():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import truth
    return truth


def wait_for(cond, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)  # what is waited for is seen within 50 ms (each wait cost 0.1 s more at 0.2)
    raise AssertionError("timed out waiting for " + what)


def count_rows(db, sql="SELECT count(*) FROM flows"):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
        n = con.execute(sql).fetchone()[0]
        con.close()
        return n
    except sqlite3.Error:
        return None


# The dashboard under tmux; flows kept open

def tmux_server():
    """The tmux server of this test session's dashboards: its own (tests/run.py names the
    session), so that two suites on one machine do not share sessions."""
    return "iwscope-test-" + os.environ.get("IWSCOPE_TEST_SESSION", "0")


def tmux(*args):
    return tmux_retried(lambda: subprocess.run(["tmux", "-L", tmux_server()] + list(args),
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                               text=True), args)


def tmux_retried(call, args):
    """call() (a tmux command), made again while a new session finds the server exiting: the
    one whose last session a test just killed (tests run one after another in a job, and the
    ALONE ones side by side share a server) takes a moment to go, and a new one starts once it
    has gone."""
    for _ in range(20):
        r = call()
        if args[0] != "new-session" or r.returncode == 0 or "server exited unexpectedly" not in r.stderr:
            break
        time.sleep(0.1)
    return r


def pane(escapes=False):
    return tmux("capture-pane", "-p", "-t", "dash", *(["-e"] if escapes else [])).stdout


def dashboard(binary, tmp, env_prefix=""):
    db = os.path.join(tmp, "dash.db")
    cmd = "%s%s -r %s --replay=20 -o %s; echo EXITED rc=$?; sleep 60" % (
        env_prefix, binary, os.path.join(PCAPS, "demo.pcap"), db)
    tmux("kill-session", "-t", "dash")
    r = tmux("new-session", "-d", "-s", "dash", "-x", "100", "-y", "30", cmd)
    if r.returncode != 0:
        raise AssertionError("tmux: " + r.stderr)
    wait_for(lambda: "replay finished" in pane(), 30, "the replay to finish")
    return db


def keepalive_pcap(tmp):
    """A persistent connection whose first flights are both closed at about 0.1 s, which then
    idles until 3 s and ends with FIN: written early, updated at its end."""
    p = os.path.join(tmp, "keepalive.pcap")
    craft.write_pcap(p, keepalive_conn().out)
    return p


def keepalive_conn():
    c = craft.Conn(cport=41100, sport=8080)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.001, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.020, "A", 1, 1)
    c.c(0.001, "PA", 1, 1, payload=b"a" * 10)          # request 1
    for i in range(3):
        c.s(0.001, "A", 1 + 1000 * i, 11, payload=bytes(1000))
    c.c(0.020, "A", 11, 3001)
    c.c(0.030, "PA", 11, 3001, payload=b"b" * 10)      # request 2: the client's flight closes
    c.s(0.021, "PA", 3001, 21, payload=bytes(500))     # response 2: the server's flight closes
    c.c(0.020, "A", 21, 3501)
    c.c(2.900, "PA", 21, 3501, payload=b"c" * 10)      # much later: more traffic, then FIN
    c.s(0.020, "FA", 3501, 31)
    c.c(0.020, "FA", 31, 3502)
    return c


# Raw capture writers: headers that lie, pcapng, floods (tests/hostile.py)

from hostile import one_syn, pcapng, raw_pcap, syn_flood  # noqa: E402,F401


# Headless Chromium

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(tmp, *args):
    exe = shutil.which("chromium")
    if not exe:
        raise Skip("chromium not installed")
    prof = tempfile.mkdtemp(dir=tmp)
    r = subprocess.run([exe] + CHROMIUM_FLAGS + ["--user-data-dir=" + prof] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    return r.stdout


# A real PostgreSQL server, started by the tests (tests/pgserver.py)

import atexit  # noqa: E402
import pgserver  # noqa: E402

_PG = []


def pg_server():
    """The suite's private PostgreSQL server, started on first use (Skip when the server
    packages are missing: `make test` installs them)."""
    if not _PG:
        if not pgserver.bindir():
            raise Skip("PostgreSQL server not installed (make deps installs it)")
        srv = pgserver.PgServer()
        atexit.register(srv.close)
        _PG.append(srv)
    return _PG[0]


def pg_database(tmp):
    """A fresh database on the suite's server for one test; its URI."""
    srv = pg_server()
    name = "t_" + os.path.basename(tmp).replace("-", "_").replace(".", "_").lower()
    srv.psql("CREATE DATABASE %s" % name)
    return srv, srv.uri(name), name


import chserver  # noqa: E402

_CH = []


def ch_cluster():
    """The suite's private ClickHouse cluster (two shards, clickhouse-server 18.16), started on
    first use (Skip when the server package is missing: `make test` installs it)."""
    if not _CH:
        if not chserver.available():
            raise Skip("clickhouse-server not installed (make deps installs it)")
        c = chserver.ChCluster(2)
        atexit.register(c.close)
        _CH.append(c)
    return _CH[0]


def ch_database(tmp, cluster=False):
    """A fresh database for one test on every shard of the suite's cluster: empty, or with
    cluster the schema of `iwscope schema clickhouse --cluster` run on each shard. Its name."""
    c = ch_cluster()
    name = "t_" + os.path.basename(tmp).replace("-", "_").replace(".", "_").lower()
    for s in c.shards:
        s.query("CREATE DATABASE %s" % name)
    if cluster:
        _, ddl, _ = run(["schema", "clickhouse", "--cluster", chserver.CLUSTER, "--database", name],
                        REL, 0)
        ddl = re.sub(r"--[^\n]*", "", ddl)
        for s in c.shards:
            for stmt in (x.strip() for x in ddl.split(";")):
                if stmt:
                    s.query(stmt)
    return c, name


FLOW_KEY = ("probe", "run_id", "flow_key", "server_ip")


def pg_rows(srv, db, sql):
    """Rows as dicts, typed like SQLite's (integers as int, NULL as None)."""
    r = subprocess.run(["psql", "-X", "-q", "-h", srv.dir, "-p", str(srv.port), "-U", pgserver.USER,
                        "-d", db, "-v", "ON_ERROR_STOP=1", "--csv", "-c", sql],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("psql: " + r.stderr)
    import csv
    import io
    out = []
    for rec in csv.DictReader(io.StringIO(r.stdout)):
        out.append({k: (None if v == "" else int(v) if v.lstrip("-").isdigit() else v)
                    for k, v in rec.items()})
    return out


def comparable(rs, also=()):
    """Flow rows without what names the run (probe, run_id, source_file) and the columns in
    also, sorted."""
    left_out = ("probe", "run_id", "id", "source_file") + tuple(also)
    return sorted((tuple((k, r[k]) for k in sorted(r) if k not in left_out) for r in rs),
                  key=repr)
