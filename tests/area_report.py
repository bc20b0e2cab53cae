# `iwscope report` and `iwscope plot` output: whole values and row limits, valid JSON and CSV
# whatever the wire says, read-only databases; the summary, the views, the demo's answer.
# Run by tests/run.py with tests/helpers.py's names (test, run, rows, analyse, eq, ...).
import csv
import io

SERVER_COLS = ["server_ip", "server_port", "transport", "flows", "exact_flows", "iw", "iw_min", "iw_max", "lower_bound",
               "iw_std", "verdict", "app_proto", "app_weak", "server_name"]


def strict_json(text, what):
    """json.loads that also refuses NaN and Infinity (Python takes them, JSON does not)."""
    def refuse(c):
        raise AssertionError("%s: %s is not JSON" % (what, c))
    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError as e:
        raise AssertionError("%s: not JSON: %s\n%s" % (what, e, text[:2000]))


def jq_accepts(text, what):
    if shutil.which("jq"):
        r = subprocess.run(["jq", "-e", "."], input=text.encode(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        eq(r.returncode, 0, "%s: jq: %s" % (what, r.stderr.decode(errors="replace").strip()))


def run_bytes(args, binary, env_extra=None):
    """Like run(), but standard output as bytes (the test reads the exact encoding)."""
    r = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=dict(ENV, **(env_extra or {})))
    err = r.stderr.decode(errors="replace")
    if "Sanitizer" in err or "runtime error:" in err:
        raise AssertionError("sanitizer report:\n" + err[-3000:])
    return r.returncode, r.stdout, err


def on_terminal(binary, args, cols=80):
    """Runs binary on a pseudo-terminal cols wide (UTF-8 locale); its output as text."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    p = subprocess.Popen([binary] + args, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                         env=dict(ENV, LANG="C.UTF-8", LC_ALL="C.UTF-8"))
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the child has closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    eq(p.wait(timeout=120), 0, "exit on a terminal")
    text = out.decode().replace("\r\n", "\n")
    if "Sanitizer" in text or "runtime error:" in text:
        raise AssertionError("sanitizer report:\n" + text[-3000:])
    return text


def add_servers(db, servers):
    """Copies the database's first flow once per (server_ip, server_name, server_port)."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    proto = dict(con.execute("SELECT * FROM flows ORDER BY ts_us LIMIT 1").fetchone())
    cols = list(proto)
    for i, (ip, name, port) in enumerate(servers):
        r = dict(proto, server_ip=ip, server_name=name, server_port=port,
                 flow_key=proto["flow_key"] + 1000 + i)
        con.execute("INSERT INTO flows (%s) VALUES (%s)" % (",".join(cols), ",".join("?" * len(cols))),
                    [r[c] for c in cols])
    con.commit()
    con.close()


def table_lines(out, title):
    """The data lines of one table of a report (after its heading and column titles)."""
    lines = out.split("\n")
    i = lines.index(title)
    body = []
    for line in lines[i + 2:]:
        if not line:
            break
        body.append(line)
    return body


# ---------------------------------------------------------------------------------------------
# Item 2: whole values into a pipe, the least useful part cut on a terminal, no hidden limits

@test("report-whole-values-and-row-limits", ("release", "asan"))
def t_report_whole(binary, tmp):
    db = analyse(binary, [truth_pcap("iw10.mid")], tmp, ["--no-dpi"])
    # five IPv6 servers alike but in the middle (two flows each: they come first), then 132
    # IPv4 servers with long names, after the capture's own server (four flows)
    v6 = ["2001:db8:1111:2222:3333:4444:5555:%x" % (0x2001 + i) for i in range(5)]
    servers = [(ip, "origin-%d.ipv6-only-service.example.org" % i, 443) for i, ip in enumerate(v6)] * 2
    servers += [("198.51.%d.%d" % (100 + i // 200, i % 200 + 1),
                 "edge-%03d.very-long-customer-name.eu-west-3.cdn.example.net" % i, 443) for i in range(132)]
    add_servers(db, servers)
    eq(rows(db, "SELECT count(*) AS n FROM server_iw")[0]["n"], 138, "servers in the database")
    names = rows(db, "SELECT count(*) AS n FROM iw_by_name")[0]["n"]
    assert names >= 137, names

    # into a pipe: every value whole, 100 rows and a line saying what was left out
    _, out, _ = run(["report", db, "--by", "server"], binary, 0)
    for ip in v6:
        assert "  %s  " % ip in out, "IPv6 address cut: %s\n%s" % (ip, out[:3000])
    shown = table_lines(out, "Servers: initial window verdicts")
    eq(len(shown), 101, "100 rows and the line about the rest")
    eq(shown[-1].split(None, 1)[1], "38 more rows (--limit 0 for all)", "rows left out")
    assert shown[-1].strip()[0] in "\u2026.", shown[-1]
    for line in shown[:-1]:
        assert line.split()[-1].endswith((".example.net", ".example.org", "-")), line
    whole = [l for l in shown if "very-long-customer-name.eu-west-3.cdn.example.net" in l]
    eq(len(whole), 100 - 6, "long names shown whole")
    pipe_rows = {l.split()[0]: l.split() for l in shown[:-1]}
    _, summary, _ = run(["report", db], binary, 0)
    assert "  " + truth_pcap("iw10.mid") + "  " in summary, "source cut:\n" + summary[:1500]

    # --limit: N rows (0 = all); a bad value is one line and exit 1
    _, out, _ = run(["report", db, "--by", "server", "--limit", "0"], binary, 0)
    shown = table_lines(out, "Servers: initial window verdicts")
    eq(len(shown), 138, "--limit 0 shows every row")
    assert "more row" not in out, out[-500:]
    _, out, _ = run(["report", db, "--by", "server", "--limit", "5"], binary, 0)
    shown = table_lines(out, "Servers: initial window verdicts")
    eq(len(shown), 6, "--limit 5")
    eq(shown[-1].split(None, 1)[1], "133 more rows (--limit 0 for all)", "--limit 5 leaves out")
    _, out, _ = run(["report", db, "--by", "app"], binary, 0)
    shown = table_lines(out, "Server initial windows by server name")
    eq((len(shown), shown[-1].split(None, 1)[1]),
       (51, "%d more rows (--limit 0 for all)" % (names - 50)), "server names: 50 by default")
    rc, out, err = run(["report", db, "--limit", "-1"], binary)
    eq((rc, out, err.count("\n")), (1, "", 1), "bad --limit: one line")
    assert "--limit" in err and "see --help" in err, err

    # CSV and JSON hold every row, whatever --limit says
    for extra in ([], ["--limit", "3"]):
        _, out, _ = run(["report", db, "--by", "server", "--format", "json"] + extra, binary, 0)
        eq(len(strict_json(out, "json")["servers"]), 138, "JSON rows %s" % extra)
        _, out, _ = run(["report", db, "--by", "server", "--format", "csv"] + extra, binary, 0)
        eq(len(list(csv.reader(io.StringIO(out, newline="")))), 139, "CSV rows and header %s" % extra)
    _, out, _ = run(["report", db, "--by", "app", "--format", "json"], binary, 0)
    eq(len(strict_json(out, "json")["iw_by_name"]), names, "every server name in JSON (was 50)")

    # on a 130-column terminal: names cut in the middle with a marker, addresses and numbers
    # never (the table needs 120 columns with a name cut to its least, 16)
    out = on_terminal(binary, ["report", db, "--by", "server"], 130)
    shown = table_lines(out, "Servers: initial window verdicts")
    wide = [l for l in out.split("\n") if len(l) > 130]
    eq(wide, [], "lines over 130 columns on a 130-column terminal")
    for ip in v6:
        assert "  %s  " % ip in out, "IPv6 address cut on a terminal: " + ip
    cut = [l for l in shown if "\u2026" in l and "example.net" in l]
    eq(len(cut), 100 - 6, "long names cut with a marker")
    for line in shown[:-1]:
        f = line.split()
        eq(f[:-1], pipe_rows[f[0]][:-1], "all but the name as in the pipe")
    for line in cut:
        name = line.split()[-1]
        assert name.startswith("edge-") and name.endswith(".example.net") and len(name) < 40, line
    # wide enough: nothing cut
    out = on_terminal(binary, ["report", db, "--by", "server"], 200)
    assert "\u2026 38 more rows" in out and out.count("\u2026") == 1, out[:2000]
    # a 100-column terminal cannot hold a row with an IPv6 address and 16 columns of name:
    # the table is shown whole (the terminal wraps its lines either way)
    out = on_terminal(binary, ["report", db, "--by", "server"], 100)
    eq(len([l for l in out.split("\n") if "very-long-customer-name.eu-west-3" in l]), 94,
       "whole names when no cut can make the table fit")


# ---------------------------------------------------------------------------------------------
# Item 3: JSON and CSV stay valid whatever names the wire brings

HOSTILE_HOSTS = [b"nan", b"0x1F", b"Infinity", b"1e5", b"-0", b'say "hi"\\there,you', b"cr\rlf\nname",
                 b"tab\t\x01\x1b[31mred", b"caf\xc3\xa9", b"bad\xff\xfeutf8", b"#hash"]


def hostile_pcap(path):
    """One HTTP connection per name in HOSTILE_HOSTS, each to its own server 198.51.100.N:80,
    the name as its Host header (nDPI stores it, lowercased, as server_name)."""
    packets = []
    for i, host in enumerate(HOSTILE_HOSTS):
        c = craft.Conn(cport=40000 + i, sip="198.51.100.%d" % (20 + i), t0=1700000000.0 + i)
        req = b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nUser-Agent: t\r\n\r\n"
        body = b"HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n" + b"x" * 4000
        c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
        c.s(0.01, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
        c.c(0.01, "A", 1, 1)
        c.c(0.001, "PA", 1, 1, payload=req)
        seq = 1
        for k in range(0, len(body), 1448):
            c.s(0.001 if k else 0.01, "A", seq, 1 + len(req), payload=body[k:k + 1448])
            seq += len(body[k:k + 1448])
        c.c(0.01, "A", 1 + len(req), seq)
        c.c(0.01, "FA", 1 + len(req), seq)
        c.s(0.01, "FA", seq, 2 + len(req))
        c.c(0.01, "A", 2 + len(req), seq + 1)
        packets += c.out
    packets.sort(key=lambda p: p[0])
    craft.write_pcap(path, packets)


def expected_name(host):
    """What a JSON reader gets for a Host: lowercased (nDPI), bytes that are not UTF-8 as U+FFFD."""
    return host.lower().decode("utf-8", errors="replace")


@test("report-json-csv-valid-for-any-name", ("release", "asan"))
def t_report_hostile(binary, tmp):
    pcap = os.path.join(tmp, "hosts.pcap")
    hostile_pcap(pcap)
    db = os.path.join(tmp, "h.db")
    rc, lines, err = run_bytes(["-r", pcap, "-o", db, "--no-ui", "-v", "--json"], binary)
    eq(rc, 0, "analysis: " + err)
    want = {"198.51.100.%d" % (20 + i): expected_name(h) for i, h in enumerate(HOSTILE_HOSTS)}
    # the JSON lines of -v --json: the same escaper; whatever the capture's reading stored
    # (names.c keeps printable ASCII of a Host), the lines say the same, as valid JSON
    stored = {r["server_ip"]: r["server_name"] for r in rows(db, "SELECT server_ip, server_name FROM flows")}
    eq(len(stored), len(HOSTILE_HOSTS), "a flow per host")
    seen = {}
    try:
        text = lines.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("-v --json lines are not UTF-8: %s" % e)
    for line in text.splitlines():
        r = strict_json(line, "-v --json line")
        seen[r["server_ip"]] = r["server_name"]
    eq(seen, stored, "names in the JSON lines")
    jq_accepts(lines.decode(), "-v --json lines")
    # the reports must hold any name a database can hold (an older release's, nDPI's banners,
    # a merged file): the hosts as the wire sent them, bytes and all
    con = sqlite3.connect(db)
    for i, h in enumerate(HOSTILE_HOSTS):
        con.execute("UPDATE flows SET server_name = CAST(? AS TEXT) WHERE server_ip = ?",
                    (h.lower(), "198.51.100.%d" % (20 + i)))
    con.commit()
    con.close()
    got = {r["server_ip"]: r["server_name"] for r in rows(db, "SELECT server_ip, CAST(server_name AS BLOB) "
                                                            "AS server_name FROM flows")}
    eq({ip: n.decode("utf-8", errors="replace") for ip, n in got.items()}, want, "hostile names in place")

    # report --format json: a text column stays a string, integers are numbers, NULL is null,
    # keys are the columns' names
    for by in ([], ["--by", "server"], ["--by", "app"], ["--by", "rwnd"], ["--by", "standard"], ["--by", "transport"], ["--by", "client"]):
        rc, raw, err = run_bytes(["report", db, "--format", "json"] + by, binary)
        eq(rc, 0, "report json %s: %s" % (by, err))
        try:
            text = raw.decode("utf-8")  # strict: the output is UTF-8 whatever the input was
        except UnicodeDecodeError as e:
            raise AssertionError("report json %s is not UTF-8: %s" % (by, e))
        assert "\x1b" not in text and "\x01" not in text, "control characters in JSON"
        j = strict_json(text, "report json %s" % by)
        jq_accepts(text, "report json %s" % by)
        for key, table in j.items():
            assert re.fullmatch(r"[a-z][a-z0-9_]*", key), "section key %r" % key
            for r in table:
                for k in r:
                    assert re.fullmatch(r"[a-z][a-z0-9_]*", k), "column key %r in %s" % (k, key)
    j = strict_json(run(["report", db, "--format", "json", "--by", "server"], binary, 0)[1], "servers")
    eq([list(r) for r in j["servers"]], [SERVER_COLS] * len(HOSTILE_HOSTS), "column names as keys")
    eq({r["server_ip"]: r["server_name"] for r in j["servers"]}, want, "server names in JSON")
    for r in j["servers"]:
        eq([type(r[c]).__name__ for c in ("server_port", "flows", "exact_flows")],
           ["int"] * 3, "integers are numbers")
        eq(r["verdict"] is None or isinstance(r["verdict"], str), True, "verdict text or null")
        eq(type(r["server_name"]), str, "a name that reads as a number stays a string")
        eq(r["iw_std"] is None or isinstance(r["iw_std"], str), True, "iw_std text or null")
    j = strict_json(run(["report", db, "--format", "json"], binary, 0)[1], "summary")
    eq(type(j["handshakes"][0]["pct"]), float, "pct a number")
    eq(j["runs"][0]["source"], pcap, "source whole")
    eq(j["disagreeing_servers"], [], "no disagreements")

    # CSV: RFC 4180, read back by Python's csv module to the same values
    rc, raw, _ = run_bytes(["report", db, "--format", "csv", "--by", "server"], binary)
    text = raw.decode("utf-8", errors="surrogateescape")
    eq((text.endswith("\r\n"), text.count("\r\n")), (True, 1 + len(HOSTILE_HOSTS)), "records end in CRLF")
    recs = list(csv.reader(io.StringIO(text, newline="")))
    eq(recs[0], SERVER_COLS, "CSV header: the column names")
    eq(len(recs), 1 + len(HOSTILE_HOSTS), "CSV records")
    by_ip = {r[0]: r for r in recs[1:]}
    for i, host in enumerate(HOSTILE_HOSTS):
        r = by_ip["198.51.100.%d" % (20 + i)]
        eq(len(r), len(SERVER_COLS), "fields in a record")
        eq(r[SERVER_COLS.index("server_name")].encode("utf-8", errors="surrogateescape"), host.lower(),
           "CSV keeps the name as sent")
    assert '"say ""hi""\\there,you"' in text, "quotes doubled inside a quoted field"
    assert '"#hash"' in text, "a field starting with # is quoted"
    # the summary: tables headed "# key", each readable
    text = run(["report", db, "--format", "csv"], binary, 0)[1]
    heads = [l for l in text.split("\r\n") if l.startswith("# ")]
    eq(heads[:3], ["# runs", "# skipped_files", "# handshakes"], "CSV tables headed by their keys")

    # a table on a terminal shows control characters escaped, never raw
    out = run(["report", db, "--by", "server"], binary, 0)[1]
    assert "\x1b" not in out and "\x01" not in out and "\r" not in out, "raw control characters"
    assert "\\x1b[31mred" in out and "cr\\x0dlf\\x0aname" in out, out


# ---------------------------------------------------------------------------------------------
# Item 5: report and plot never write: a read-only file system, a read-only file

def read_only_run(binary, ro_dir, args):
    """Runs binary in a private mount namespace where ro_dir is a read-only bind mount."""
    script = ('mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", ro_dir, binary] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    if "Sanitizer" in err or "runtime error:" in err:
        raise AssertionError("sanitizer report:\n" + err[-3000:])
    return r.returncode, out, err


def digest(d):
    return {f: hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
            for f in sorted(os.listdir(d))}


REPORTS = ([], ["--by", "server"], ["--by", "app"], ["--by", "rwnd"], ["--by", "standard"], ["--by", "transport"], ["--by", "client"])


@test("report-plot-read-only-file-system", ("release", "asan"))
def t_report_ro_fs(binary, tmp):
    if os.geteuid() != 0:
        raise Skip("needs root (a read-only bind mount)")
    if not shutil.which("unshare"):
        raise Skip("unshare not installed")
    ro = os.path.join(tmp, "ro")
    os.mkdir(ro)
    new = analyse(binary, [truth_pcap("iw10.mid"), truth_pcap("iw3.mid")], ro, [], "new.db")
    shutil.copy(new, os.path.join(tmp, "new-copy.db"))  # a reader leaves -wal and -shm beside it
    shutil.copy(os.path.join(PCAPS, "schema2.db"), os.path.join(ro, "old.db"))
    upgraded = os.path.join(tmp, "upgraded.db")  # what the old file reads as once upgraded
    shutil.copy(os.path.join(PCAPS, "schema2.db"), upgraded)
    run(["report", upgraded], binary, 0)
    eq(rows(upgraded, "PRAGMA user_version")[0]["user_version"], SCHEMA_VERSION, "a writable old file upgrades")
    before = digest(ro)
    eq(sorted(before), ["new.db", "old.db"], "files before")
    def both(name, same_as, by, fmt):
        """The report on the read-only file and on its writable copy."""
        args = ["report", os.path.join(ro, name), "--format", fmt] + by
        return args, read_only_run(binary, ro, args), run(["report", same_as, "--format", fmt] + by, binary, 0)[1]

    for name, same_as in (("new.db", os.path.join(tmp, "new-copy.db")), ("old.db", upgraded)):
        todo = [(name, same_as, by, fmt) for by in REPORTS for fmt in ("table", "json", "csv")]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            got = list(pool.map(lambda a: both(*a), todo))  # one report per core at a time
        for (_, _, by, fmt), (args, (rc, out, err), rw_out) in zip(todo, got):
            eq((rc, err), (0, ""), "%s on a read-only file system" % " ".join(args[2:]))
            eq(out, rw_out, "%s %s %s: as on a writable copy" % (name, fmt, by))
        plots = os.path.join(tmp, "plot-" + name)
        rc, _, err = read_only_run(binary, ro, ["plot", os.path.join(ro, name), "-o", plots])
        eq((rc, err), (0, ""), "plot %s on a read-only file system" % name)
        run(["plot", same_as, "-o", plots + "-rw"], binary, 0)
        for f in ("iw_histogram.svg", "ff_bytes_cdf.svg", "syn_window.svg", "rtt_vs_ff.svg"):
            eq(open(os.path.join(plots, f)).read(), open(os.path.join(plots + "-rw", f)).read(),
               "%s %s as on a writable copy" % (name, f))
    eq(digest(ro), before, "nothing written, no -wal or -shm made")
    eq(rows(os.path.join(ro, "old.db"), "PRAGMA user_version")[0]["user_version"], 2,
       "the old file read as it is")
    # merge reads the file's own tables: an old one it cannot upgrade is refused in one line
    rc, _, err = read_only_run(binary, ro, ["merge", os.path.join(ro, "old.db"), "-o",
                                            os.path.join(tmp, "merged.db")])
    eq(rc, 2, "merge of a read-only old file")
    assert "old.db" in err and "upgraded" in err, err
    # a log with rows that only a -shm file could read: one line saying so
    shutil.copy(new, os.path.join(tmp, "busy.db"))
    con = sqlite3.connect(os.path.join(tmp, "busy.db"))
    con.execute("PRAGMA wal_autocheckpoint = 0")
    con.execute("UPDATE flows SET server_name = 'in-the-log'")
    con.commit()
    shutil.copy(os.path.join(tmp, "busy.db"), os.path.join(ro, "busy.db"))
    shutil.copy(os.path.join(tmp, "busy.db-wal"), os.path.join(ro, "busy.db-wal"))
    con.close()
    rc, out, err = read_only_run(binary, ro, ["report", os.path.join(ro, "busy.db")])
    eq((rc, out, err.count("\n")), (2, "", 1), "unreadable log: one line, exit 2")
    assert "busy.db" in err and "write-ahead log" in err and "can be written" in err, err
    # a hot rollback journal (a bulk load killed midway) is not skipped either
    shutil.copy(new, os.path.join(tmp, "hot.db"))
    con = sqlite3.connect(os.path.join(tmp, "hot.db"))
    con.execute("PRAGMA journal_mode = delete")
    con.close()
    shutil.copy(os.path.join(tmp, "hot.db"), os.path.join(ro, "hot.db"))
    open(os.path.join(ro, "hot.db-journal"), "wb").write(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\0" * 504)
    rc, out, err = read_only_run(binary, ro, ["report", os.path.join(ro, "hot.db")])
    eq((rc, out, err.count("\n")), (2, "", 1), "hot journal: one line, exit 2")
    assert "hot.db" in err, err


@test("report-read-only-file", ("release", "asan"))
def t_report_ro_file(binary, tmp):
    """A database file the user may only read, in a folder they may not write to: report
    reads it (an old schema as it is), nothing changes."""
    d = os.path.join(tmp, "d")
    os.mkdir(d)
    new = analyse(binary, [truth_pcap("iw10.mid")], tmp, ["--no-dpi"], "new.db")
    shutil.copy(new, os.path.join(d, "new.db"))  # without the -wal and -shm a reader leaves
    shutil.copy(os.path.join(PCAPS, "schema2.db"), os.path.join(d, "old.db"))
    upgraded = os.path.join(tmp, "upgraded.db")
    shutil.copy(os.path.join(PCAPS, "schema2.db"), upgraded)
    want = {"new.db": run(["report", new, "--format", "json", "--by", "server"], binary, 0)[1],
            "old.db": run(["report", upgraded, "--format", "json", "--by", "server"], binary, 0)[1]}
    for f in os.listdir(d):
        os.chmod(os.path.join(d, f), 0o444)
    os.chmod(d, 0o555)
    before = digest(d)
    try:
        for name in ("new.db", "old.db"):
            args = ["report", os.path.join(d, name), "--format", "json", "--by", "server"]
            if os.geteuid() == 0:  # root ignores permissions: read as nobody
                os.chmod(tmp, 0o755)
                r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                    binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=ENV)
                rc, out, err = r.returncode, r.stdout, r.stderr
            else:
                rc, out, err = run(args, binary)
            eq((rc, err), (0, ""), "report on read-only %s" % name)
            eq(out, want[name], "%s as on a writable copy" % name)
    finally:
        os.chmod(d, 0o755)
    eq(digest(d), before, "nothing written")


@test("report", ("release", "asan"))
def t_report(binary, tmp):
    db = analyse(binary, [truth_pcap("iw10.mid"), truth_pcap("iw3.mid"), truth_pcap("rwnd6k_iw10.mid")],
                 tmp, ["--no-dpi"])
    rc, out, _ = run(["report", db], binary, 0)
    for needle in ("IW10", "IW3", "rfc6928", "rfc3390", "6KB", "64KB", "complete", ">=IW4"):
        assert needle in out, needle
    for by in ([], ["--by", "server"], ["--by", "app"], ["--by", "rwnd"], ["--by", "standard"], ["--by", "transport"], ["--by", "client"]):
        rc, out, err = run(["report", db] + by, binary)
        eq((rc, err), (0, ""), "report %s" % by)
    # into a pipe, values are whole (tests/area_report.py: terminals, limits, hostile names)
    out = run(["report", db], binary, 0)[1]
    assert " ".join(truth_pcap(n) for n in ("iw10.mid", "iw3.mid", "rwnd6k_iw10.mid")) in out, out
    rc, out, _ = run(["report", db, "--format", "json"], binary, 0)
    j = json.loads(out)
    iw = {(r["iw_class"], r["iw_limit"]): r["flows"] for r in j["iw_classes"]}
    eq(iw[("IW10", "cwnd")], 2, "IW10 flows")
    eq(iw[("IW3", "cwnd")], 1, "IW3 flows")
    rc, out, _ = run(["report", db, "--format", "csv", "--by", "server"], binary, 0)
    assert out.startswith("server_ip,server_port,transport,flows,exact_flows,iw,"), out
    eq(run(["report", os.path.join(tmp, "none.db")], binary)[0], 2, "missing database")


@test("views", ("release", "asan"))
def t_views(binary, tmp):
    db = analyse(binary, [truth_pcap("iw10.mid"), truth_pcap("iw16.mid")], tmp, ["--no-dpi"])
    v = rows(db, "SELECT * FROM server_iw")
    eq(len(v), 1, "one server")
    eq((v[0]["exact_flows"], v[0]["iw"], v[0]["disagree"], v[0]["lower_bound"]), (3, None, 1, 10), "verdict")
    eq((v[0]["iw_min"], v[0]["iw_max"]), (10, 16), "range")
    rc = rows(db, "SELECT * FROM rwnd_classes ORDER BY side")
    eq([(r["side"], r["rwnd_class"], r["flows"]) for r in rc],
       [("client", "64KB", 5), ("server", "64KB", 5)], "classes")


@test("dpi-report-by-app", ("release", "asan"))
def t_dpi_report(binary, tmp):
    db = analyse(binary, [os.path.join(PCAPS, "dpi", "apps.client.pcap")], tmp)
    got = rows(db, "SELECT app_proto, iw_class, iw_limit, flows FROM iw_by_app ORDER BY 1")
    eq([tuple(r.values()) for r in got], [("HTTP", "IW10", "cwnd", 1), ("SSH", ">=IW1", "app", 1),
                                          ("TLS", "IW10", "cwnd", 2), ("Unknown", "IW10", "cwnd", 1)], "iw_by_app")
    rc, out, _ = run(["report", db, "--by", "app"], binary, 0)
    assert "tls13.iwscope.test" in out and "TLS" in out, out
    # without nDPI the columns stay NULL
    db2 = analyse(binary, [os.path.join(PCAPS, "dpi", "apps.client.pcap")], tmp, ["--no-dpi"], "n.db")
    eq(rows(db2, "SELECT count(*) AS n FROM flows WHERE app_proto IS NOT NULL")[0]["n"], 0, "no-dpi")


@test("demo-answers-the-readme-question", ("release", "asan"))
def t_demo(binary, tmp):
    db = analyse(binary, [os.path.join(PCAPS, "demo.pcap")], tmp)
    got = rows(db, "SELECT server_ip, server_port, iw, iw_std, app_proto, server_name FROM server_iw "
                   "WHERE iw IS NOT NULL ORDER BY iw")
    eq([tuple(r.values()) for r in got],
       [("10.77.0.3", 80, 3, "rfc3390", "HTTP", "old.origin.test"),
        ("10.77.0.2", 443, 10, "rfc6928", "TLS", "api.modern.test"),
        ("10.77.0.4", 443, 16, "custom", "TLS", "www.bigcdn.test")], "server verdicts")
    eq(rows(db, "SELECT count(*) AS n FROM flows WHERE c_rwnd_class = '6KB'")[0]["n"], 3, "6KB clients")


@test("server-contradiction", ("release", "asan"))
def t_server_contradiction(binary, tmp):
    """A server whose exact IW another flow's lower bound contradicts (exact IW2, a flow with
    at least 3) is a contradiction: iw NULL, not split, both numbers shown, and not counted as
    an IW; exact flows that disagree among themselves are split; agreeing ones are exact."""
    db = analyse(binary, [truth_pcap("iw10.mid")], tmp, ["--no-dpi"])
    base = rows(db, "SELECT * FROM flows ORDER BY flow_key LIMIT 1")[0]
    con = sqlite3.connect(db)
    cols = list(base)
    key = max(r["flow_key"] for r in rows(db, "SELECT flow_key FROM flows")) + 1
    # (server, IW segments, limit): .1 contradicted, .2 split, .3 exact with a lower bound under it
    for ip, segs, limit in (("192.0.2.1", 2, "cwnd"), ("192.0.2.1", 2, "cwnd"), ("192.0.2.1", 3, "app"),
                            ("192.0.2.2", 2, "cwnd"), ("192.0.2.2", 4, "cwnd"),
                            ("192.0.2.3", 10, "cwnd"), ("192.0.2.3", 4, "rwnd")):
        r = dict(base, server_ip=ip, server_port=443, flow_key=key, s_iw_segs=segs, s_iw_limit=limit,
                 s_iw_class=("IW%d" if limit == "cwnd" else ">=IW%d") % segs,
                 s_iw_std="rfc2581" if limit == "cwnd" and segs == 2 else None)
        key += 1
        con.execute("INSERT INTO flows (%s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * len(cols))),
                    [r[c] for c in cols])
    con.commit()
    con.close()
    _, out, _ = run(["report", db, "--by", "server", "--format", "json"], binary, 0)
    got = {r["server_ip"]: {k: r[k] for k in ("exact_flows", "iw", "iw_min", "iw_max", "lower_bound",
                                              "iw_std", "verdict")}
           for r in strict_json(out, "json")["servers"] if r["server_ip"].startswith("192.0.2.")}
    eq(got, {"192.0.2.1": {"exact_flows": 2, "iw": None, "iw_min": 2, "iw_max": 2, "lower_bound": 3,
                           "iw_std": None, "verdict": "contradiction"},
             # a split server has no IW, so no standard either (issue 31: "rfc3390" beside "-")
             "192.0.2.2": {"exact_flows": 2, "iw": None, "iw_min": 2, "iw_max": 4, "lower_bound": None,
                           "iw_std": None, "verdict": "split"},
             "192.0.2.3": {"exact_flows": 1, "iw": 10, "iw_min": 10, "iw_max": 10, "lower_bound": 4,
                           "iw_std": None, "verdict": "exact"}}, "server verdicts")
    # the table shows both numbers and the word; the disagreeing servers say which kind
    _, out, _ = run(["report", db, "--by", "server"], binary, 0)
    line = [l for l in out.splitlines() if "192.0.2.1 " in l][0].split()
    eq(line[1:10], ["443", "tcp", "3", "2", "-", "2", "2", "3", "-"], "contradiction row: iw -, min, max, lb")
    eq(line[10], "contradiction", "its verdict")
    _, out, _ = run(["report", db, "--format", "json"], binary, 0)
    eq(sorted((r["server_ip"], r["verdict"]) for r in strict_json(out, "json")["disagreeing_servers"]),
       [("192.0.2.1", "contradiction"), ("192.0.2.2", "split")], "servers whose flows disagree")
    eq(rows(db, "SELECT count(*) AS n FROM server_iw WHERE iw IS NOT NULL AND server_ip LIKE '192.0.2.%'")[0]["n"],
       1, "only the exact server counts as an IW")


@test("server-name-and-app-most-common", ("release", "asan"))
def t_server_modal(binary, tmp):
    """Per server, the name and application shown are the most common among its flows (issue
    31: 10.9.0.2:80 showed tiny-rcvbuf.test, the alphabetically last, where most flows were
    modern.test), the first by name on a tie; a server's TCP and QUIC flows are two rows whose
    numbers do not mix (a QUIC lower bound in datagrams does not contradict a TCP IW)."""
    db = analyse(binary, [truth_pcap("iw10.mid")], tmp, ["--no-dpi"])
    base = rows(db, "SELECT * FROM flows ORDER BY flow_key LIMIT 1")[0]
    con = sqlite3.connect(db)
    cols = list(base)
    key = max(r["flow_key"] for r in rows(db, "SELECT flow_key FROM flows")) + 1
    flows = [("tcp", "modern.test", "HTTP", 10, "cwnd")] * 3 + [("tcp", "tiny-rcvbuf.test", "TLS", 10, "cwnd"),
                                                               ("quic", "tiny-rcvbuf.test", "QUIC", 40, "ambiguous"),
                                                               ("tcp", "b.test", "X", 10, "cwnd"),
                                                               ("tcp", "a.test", "Y", 10, "cwnd")]
    for i, (tr, name, app, segs, limit) in enumerate(flows):
        ip = "198.51.100.7" if i < 5 else "198.51.100.8"
        r = dict(base, server_ip=ip, server_port=80, flow_key=key, transport=tr, server_name=name, app_proto=app,
                 s_iw_segs=segs, s_iw_limit=limit, s_iw_class=("IW%d" if limit == "cwnd" else ">=IW%d") % segs,
                 s_iw_std="rfc6928" if limit == "cwnd" else None)
        key += 1
        con.execute("INSERT INTO flows (%s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * len(cols))),
                    [r[c] for c in cols])
    con.commit()
    con.close()
    got = rows(db, "SELECT server_ip, transport, flows, iw, lower_bound, verdict, app_proto, server_name "
                   "FROM server_iw WHERE server_ip LIKE '198.51.100.%' ORDER BY server_ip, transport")
    eq([tuple(r.values()) for r in got],
       [("198.51.100.7", "quic", 1, None, 40, None, "QUIC", "tiny-rcvbuf.test"),
        ("198.51.100.7", "tcp", 4, 10, None, "exact", "HTTP", "modern.test"),
        ("198.51.100.8", "tcp", 2, 10, None, "exact", "X", "a.test")], "per server and transport")
    return "the most common name and app; TCP and QUIC apart"


@test("report-by-client", ("release",))
def t_report_by_client(binary, tmp):
    """--by client (issue 31): one row per client with its most common SYN window and class, as
    the flows table says, and its flows whose window could not take an IW10 (6KB, 8192, small:
    a client behind SO_RCVBUF 2048 shows a 1460-byte window, class small, not other)."""
    db = analyse(binary, [os.path.join(PCAPS, "demo.pcap")], tmp, ["--no-dpi"])
    base = rows(db, "SELECT * FROM flows ORDER BY flow_key LIMIT 1")[0]
    con = sqlite3.connect(db)
    cols = list(base)
    key = max(r["flow_key"] for r in rows(db, "SELECT flow_key FROM flows")) + 1
    for win, cls in ((1460, "small"), (1460, "small"), (64240, "64KB")):
        r = dict(base, client_ip="203.0.113.9", flow_key=key, c_syn_win=win, c_rwnd_class=cls, c_mss=1460)
        key += 1
        con.execute("INSERT INTO flows (%s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * len(cols))),
                    [r[c] for c in cols])
    con.commit()
    con.close()
    _, out, _ = run(["report", db, "--by", "client", "--format", "json"], binary, 0)
    got = {r["client_ip"]: r for r in strict_json(out, "json")["clients"]}
    eq((got["203.0.113.9"]["flows"], got["203.0.113.9"]["rwnd_class"], got["203.0.113.9"]["syn_win"],
        got["203.0.113.9"]["windows"], got["203.0.113.9"]["below_iw10"]), (3, "small", 1460, 2, 2), "the new client")
    for ip, r in got.items():
        fl = rows(db, "SELECT c_rwnd_class, c_syn_win FROM flows WHERE client_ip = '%s' AND c_syn_win IS NOT NULL" % ip)
        eq(r["flows"], len(fl), ip + " flows")
        eq(r["below_iw10"], sum(f["c_rwnd_class"] in ("6KB", "8192", "small") for f in fl), ip + " below IW10")
    _, table, _ = run(["report", db, "--by", "client"], binary, 0)
    assert "Clients: receive windows (SYN)" in table and "203.0.113.9" in table, table
    return "%d clients" % len(got)


@test("report-first-flights-by-transport", ("release", "asan"))
def t_report_by_transport_apart(binary, tmp):
    """TCP's first flights count segments, QUIC's datagrams: the summary's tables of first
    flights (server initial windows, client first flights, why first flights stopped), --by
    app's, and the views iw_classes, iw_by_app and iw_by_name keep them apart by a column
    transport, even where a TCP and a QUIC flow share a class, a verdict and a name (a TCP row
    made here as >=IW2 ambiguous for www.google.de, as curl's QUIC flow to it is)."""
    db = analyse(binary, [truth_pcap("iw10.mid"), os.path.join(PCAPS, "quic", "curl-google.pcap")], tmp,
                 ["--no-dpi"])
    base = rows(db, "SELECT * FROM flows WHERE transport = 'tcp' ORDER BY flow_key LIMIT 1")[0]
    key = max(r["flow_key"] for r in rows(db, "SELECT flow_key FROM flows")) + 1
    r = dict(base, flow_key=key, server_name="www.google.de", s_iw_class=">=IW2", s_iw_limit="ambiguous",
             s_iw_std=None, c_iw_class=">=IW1", c_iw_limit="ambiguous")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO flows (%s) VALUES (%s)" % (", ".join(r), ", ".join("?" * len(r))), list(r.values()))
    con.commit()
    con.close()
    eq(rows(db, "SELECT transport, flows FROM iw_classes WHERE iw_class = '>=IW2' ORDER BY transport"),
       [{"transport": "quic", "flows": 1}, {"transport": "tcp", "flows": 1}], "iw_classes")
    eq(rows(db, "SELECT transport, flows, servers FROM iw_by_app WHERE iw_class = '>=IW2' ORDER BY transport"),
       [{"transport": "quic", "flows": 1, "servers": 1}, {"transport": "tcp", "flows": 1, "servers": 1}], "iw_by_app")
    eq(rows(db, "SELECT server_name, transport, flows FROM iw_by_name ORDER BY transport"),
       [{"server_name": "www.google.de", "transport": "quic", "flows": 1},
        {"server_name": "www.google.de", "transport": "tcp", "flows": 1}], "iw_by_name")
    j = json.loads(run(["report", db, "--format", "json"], binary, 0)[1])
    eq([(x["transport"], x["flows"]) for x in j["iw_classes"] if x["iw_class"] == ">=IW2"],
       [("tcp", 1), ("quic", 1)], "report: server initial windows")
    eq([(x["transport"], x["flows"]) for x in j["client_iw_classes"] if x["c_iw_limit"] == "ambiguous"],
       [("tcp", 1), ("quic", 1)], "report: client first flights")
    eq([(x["sender"], x["transport"], x["flows"]) for x in j["iw_limits"] if x["iw_limit"] == "ambiguous"],
       [("server", "tcp", 1), ("server", "quic", 1), ("client", "tcp", 1), ("client", "quic", 1)],
       "report: why first flights stopped")
    j = json.loads(run(["report", db, "--format", "json", "--by", "app"], binary, 0)[1])
    eq([(x["transport"], x["flows"]) for x in j["iw_by_app"] if x["iw_class"] == ">=IW2"],
       [("tcp", 1), ("quic", 1)], "report --by app")
    eq([(x["server_name"], x["transport"]) for x in j["iw_by_name"]],
       [("www.google.de", "tcp"), ("www.google.de", "quic")], "report: by name")
    out = run(["report", db], binary, 0)[1]
    assert "Server initial windows" in out and "  proto  iw_class" in out, out
    head = run(["report", db, "--format", "csv", "--by", "app"], binary, 0)[1]
    assert "app_proto,app_weak,transport,iw_class,iw_limit,flows,servers" in head, head
    return "tcp and quic rows apart in 3 views and 5 report tables"
