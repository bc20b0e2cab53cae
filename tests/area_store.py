# The SQLite store: schema and upgrades, the bulk load, refusals and read-only files, when a
# row is written, SIGINT, a full disk, readers and writers beside a run, merge.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("schema-2-file-upgraded-in-place", ("release", "asan"))
def t_sqlite_upgrade(binary, tmp):
    """tests/pcaps/schema2.db was written by the previous release (schema version 2, the demo
    capture). Reading it upgrades it once (report); writing to it adds a run; nothing is lost;
    a file of an unknown version is refused with one line."""
    db = os.path.join(tmp, "old.db")
    shutil.copy(os.path.join(PCAPS, "schema2.db"), db)
    eq(rows(db, "PRAGMA user_version")[0]["user_version"], 2, "fixture version")
    old = rows(db, "SELECT * FROM flows ORDER BY flow_key")
    rc, out, err = run(["report", db, "--by", "server"], binary)
    eq((rc, err), (0, ""), "report on a version-2 file")
    assert "Servers" in out, out
    eq(rows(db, "PRAGMA user_version")[0]["user_version"], SCHEMA_VERSION, "upgraded")
    cols = [c["name"] for c in rows(db, "SELECT name FROM pragma_table_info('flows')")]
    added = NEW_IN_3 + NEW_IN_4 + NEW_IN_5
    eq(cols[-len(added):], added, "new columns, at the end of a migrated table")
    new = rows(db, "SELECT * FROM flows ORDER BY flow_key")
    eq([{k: v for k, v in r.items() if k not in added} for r in new], old, "rows kept")
    eq({r["s_iw_end"] for r in new}, {None}, "evidence unknown for old rows")
    eq({r["transport"] for r in new}, {"tcp"}, "old rows: tcp")
    run(["-q", "--no-dpi", "--probe", "again", "-r", truth_pcap(), "-o", db], binary, 0)
    eq(rows(db, "SELECT count(*) AS n FROM flows WHERE probe = 'again' AND s_iw_end IS NOT NULL")[0]["n"] > 0,
       True, "a new run's evidence")
    views = sorted(r["name"] for r in rows(db, "SELECT name FROM sqlite_master WHERE type = 'view'"))
    fresh = analyse(binary, [truth_pcap()], tmp, ["--no-dpi"], "fresh.db")
    eq(views, sorted(r["name"] for r in rows(fresh, "SELECT name FROM sqlite_master WHERE type = 'view'")), "views")
    eq(rows(db, "SELECT sql FROM sqlite_master WHERE name = 'server_iw'"),
       rows(fresh, "SELECT sql FROM sqlite_master WHERE name = 'server_iw'"), "server_iw as a fresh file's")
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    rc, _, err = run(["report", db], binary)
    eq((rc, err.count("\n")), (2, 1), "version 1 refused in one line")
    assert "schema version 1" in err and "cannot upgrade" in err, err


@test("bulk-load-builds-the-server-index-at-the-end", ("release", "asan"))
def t_bulk_index(binary, tmp):
    """A file run into an empty flows table loads it without the secondary index
    (flows_server) and builds that once at the end: also when the run fails, and at the next
    open when it was killed. A run into a table with rows keeps the index all along.
    Such a load writes through a rollback journal, and leaves the file in WAL mode."""
    want = {"flows_key": "CREATE UNIQUE INDEX flows_key ON flows(probe, run_id, flow_key, server_ip)",
            "flows_server": "CREATE INDEX flows_server ON flows(server_ip, server_port)"}
    db = analyse(binary, [truth_pcap()], tmp, ["--no-dpi"], "a.db")
    eq(indexes(db), want, "after a run")
    eq(journal(db), ("wal", False), "journal after a run")
    plan = rows(db, "EXPLAIN QUERY PLAN SELECT * FROM flows WHERE server_ip = '10.0.0.1'")
    assert any("flows_server" in r["detail"] for r in plan), plan
    # a run that fails (the capture is cut) still leaves the index
    bad = os.path.join(tmp, "b.db")
    rc, _, _ = run(["-q", "--no-dpi", "-r", cut_pcap(tmp), "-o", bad], binary)
    eq(rc, 2, "exit of the cut run")
    eq(indexes(bad), want, "after a failed run")
    eq(journal(bad), ("wal", False), "journal after a failed run")
    # killed while loading: the index is not there (so the load really went without it) ...
    # (a capture file: a pipe on standard input is read as live capture, not bulk loaded)
    killed = os.path.join(tmp, "k.db")
    big = os.path.join(tmp, "big.pcap")
    srcs = sorted(glob.glob(os.path.join(PCAPS, "truth", "*.server.pcap")))
    subprocess.run([os.path.join(ROOT, "build", "benchgen"), big, "20000", "100", "96"] + srcs,
                   check=True, stdout=subprocess.DEVNULL)
    p = subprocess.Popen([binary, "-q", "--no-dpi", "--threads", "1", "-r", big, "-o", killed],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    end = time.time() + 20
    def loading():
        """The load has begun: its run recorded, the journal switched, the index dropped."""
        try:
            return (os.path.getsize(killed) >= 20 and journal(killed)[0] == "rollback" and
                    "flows_server" not in indexes(killed) and count_rows(killed, "SELECT count(*) FROM runs"))
        except (OSError, sqlite3.Error):
            return False
    while time.time() < end and p.poll() is None and not loading():
        time.sleep(0.002)
    p.kill()
    p.wait()
    eq(p.returncode, -9, "killed while loading (the load was over first)")
    eq(rows(killed, "SELECT count(*) AS n FROM runs")[0]["n"], 1, "the killed run was recorded")
    eq(sorted(indexes(killed)), ["flows_key"], "indexes while a bulk load runs")
    eq(journal(killed)[0], "rollback", "journal mode while a bulk load runs")
    # ... and the next run that opens the database builds it; that one writes early rows and
    # updates them in place (the upsert, where a bulk load writes plain inserts)
    analyse(binary, [truth_pcap()], tmp, ["--no-dpi", "--replay=50", "--no-ui"], "k.db")
    eq(indexes(killed), want, "after the next open")
    eq(journal(killed), ("wal", False), "journal after the next open")
    eq(rows(killed, "SELECT count(*) AS n FROM flows GROUP BY probe, run_id, flow_key, server_ip "
                    "HAVING n > 1"), [], "flows written twice")
    # into a table that has rows, the index stays: the second run of a file
    analyse(binary, [truth_pcap()], tmp, ["--no-dpi", "--append"], "a.db")
    eq(indexes(db), want, "after a second run")
    eq(rows(db, "SELECT count(DISTINCT run_id) AS n FROM flows")[0]["n"], 2, "runs")


@test("database-refusals", ("release", "asan"))
def t_db_refusals(binary, tmp):
    cap = truth_pcap()
    # a SQLite file of another application: refused, untouched
    other = os.path.join(tmp, "other.db")
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    before = hashlib.sha256(open(other, "rb").read()).hexdigest()
    rc, _, err = run(["-r", cap, "-o", other], binary)
    eq(rc, 2, "exit for a foreign database")
    assert "not an iwscope database" in err, err
    eq(hashlib.sha256(open(other, "rb").read()).hexdigest(), before, "foreign database changed")
    eq(os.path.exists(other + "-wal"), False, "WAL created next to a foreign database")
    # an iwscope database of another schema version
    db = analyse(binary, [cap], tmp, ["--no-dpi"], "v.db")
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    rc, _, err = run(["-r", cap, "-o", db], binary)
    eq(rc, 2, "exit for another schema version")
    assert "schema version 99" in err, err
    rc, _, err = run(["report", db], binary)
    eq(rc, 2, "report on another schema version")
    # not a database at all
    junk = os.path.join(tmp, "junk.db")
    open(junk, "wb").write(b"this is not a database" * 100)
    before = open(junk, "rb").read()
    rc, _, err = run(["-r", cap, "-o", junk], binary)
    eq(rc, 2, "exit for a corrupt database")
    assert "junk.db" in err and err.count("\n") == 1, err
    eq(open(junk, "rb").read(), before, "corrupt file changed")


@test("read-only-database", ("release", "asan"))
def t_readonly(binary, tmp):
    cap = truth_pcap()
    db = analyse(binary, [cap], tmp, ["--no-dpi"], "ro.db")
    os.chmod(db, 0o444)
    os.chmod(tmp, 0o555)
    try:
        cmd = ["-r", cap, "-o", db]
        if os.geteuid() == 0:  # root ignores permissions: write as nobody
            r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                binary] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            rc, err = r.returncode, r.stderr
        else:
            rc, _, err = run(cmd, binary)
    finally:
        os.chmod(tmp, 0o755)
    eq(rc, 2, "exit")
    assert "ro.db" in err and ("read-only" in err or "readonly" in err or "unable to open" in err), err
    eq(len(rows(db)), len(truthcheck.analyse(binary, cap, False)), "rows kept")


@test("schema-file-is-what-the-binary-creates", ("release", "asan"))
def t_schema(binary, tmp):
    db = analyse(binary, [truth_pcap()], tmp, ["--no-dpi"])
    ref = os.path.join(tmp, "ref.db")
    con = sqlite3.connect(ref)
    con.executescript(open(os.path.join(ROOT, "schema", "sqlite.sql")).read() +
                      open(os.path.join(ROOT, "schema", "views.sql")).read())
    con.close()
    q = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    eq(rows(db, q), rows(ref, q), "schema")
    _, out, _ = run(["schema", "sqlite"], binary, 0)
    eq(out, open(os.path.join(ROOT, "schema", "sqlite.sql")).read() +
       open(os.path.join(ROOT, "schema", "views.sql")).read(), "iwscope schema sqlite")


@test("file-rows-written-once-at-flow-end", ("release", "asan"))
def t_file_rows_at_end(binary, tmp):
    """Read at full speed, a capture file writes each flow once, when it ends: the long
    keepalive flow (verdicts final at 0.1 s, FIN at 3 s) comes after a short flow that ends at
    0.6 s. With --replay the keepalive's row is written early, so it comes first."""
    short = craft.Conn(cport=41200, sport=8080, t0=1700000000.5)
    short.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    short.s(0.001, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    short.c(0.020, "A", 1, 1)
    short.c(0.001, "PA", 1, 1, payload=b"x" * 10)
    short.s(0.020, "FPA", 1, 11, payload=b"y" * 100)
    short.c(0.020, "FA", 11, 102)
    short.s(0.020, "A", 102, 12)
    both = os.path.join(tmp, "both.pcap")
    craft.write_pcap(both, sorted(keepalive_conn().out + short.out, key=lambda p: p[0]))
    q = "SELECT client_port, end_reason FROM flows ORDER BY rowid"
    want = [{"client_port": 41200, "end_reason": "fin"}, {"client_port": 41100, "end_reason": "fin"}]
    for t in ("1", "2"):
        db = analyse(binary, [both], tmp, ["--no-dpi", "--threads", t], "f%s.db" % t)
        eq(rows(db, q), want, "file, --threads " + t)
    db = analyse(binary, [both], tmp, ["--no-dpi", "--replay=10", "--no-ui"], "r.db")
    eq(rows(db, q), want[::-1], "replay: the keepalive's early row first")


@test("long-flow-written-when-verdicts-are-final", ("release", "asan"))
def t_early(binary, tmp):
    """A persistent connection: two request/response exchanges close both first flights at
    about 0.1 s, then it idles until 3 s. Replayed at its own pace, its row is written (and its
    line printed) long before it ends; at its end the same row gets its final counters."""
    p = keepalive_pcap(tmp)
    db = os.path.join(tmp, "k.db")
    proc = subprocess.Popen([binary, "-q", "--no-dpi", "-r", p, "--replay", "--no-ui", "--json", "-o", db],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    t0 = time.time()
    line = proc.stdout.readline()
    t_line = time.time() - t0
    # committed within a second of being written, while the flow is still open
    mid = wait_for(lambda: count_rows(db) and rows(db, "SELECT rowid AS id, c_pkts, end_reason, s_iw_limit, s_iw_segs FROM flows"),
                   2.5, "the early row")
    eq(proc.poll(), None, "still replaying")
    out, err = proc.communicate(timeout=30)
    t_end = time.time() - t0
    eq(proc.returncode, 0, "exit: " + err)
    assert json.loads(line)["client_port"] == 41100, line
    assert t_line < 1.5 and t_end > 2.8, "line at %.2f s, end at %.2f s" % (t_line, t_end)
    eq(len(mid), 1, "row present while the flow is open")
    eq((mid[0]["end_reason"], mid[0]["s_iw_limit"], mid[0]["s_iw_segs"]), (None, "app", 3), "early row")
    final = rows(db, "SELECT rowid AS id, c_pkts, end_reason FROM flows")
    eq(len(final), 1, "still one row")
    eq((final[0]["id"], final[0]["end_reason"]), (mid[0]["id"], "fin"), "updated in place")
    assert final[0]["c_pkts"] > mid[0]["c_pkts"], (final, mid)
    eq(out.strip(), "", "one line per flow, printed once")


@test("sigint-offline-keeps-rows", ("release", "asan"))
def t_sigint(binary, tmp):
    p = os.path.join(tmp, "flood.pcap")
    syn_flood(p, 1000000, seed=2)
    db = os.path.join(tmp, "s.db")
    proc = subprocess.Popen([binary, "-r", p, "-o", db, "--flow-cap", "4096"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(1.0)
    proc.send_signal(2)
    _, err = proc.communicate(timeout=60)
    eq(proc.returncode, 0, "exit after SIGINT: " + err)
    assert "interrupted" in err, err
    r = rows(db, "SELECT status, packets, flows FROM runs")[0]
    eq(r["status"], "interrupted", "status")
    assert 0 < r["packets"] < 1000000, r
    eq(r["flows"], rows(db, "SELECT count(*) AS n FROM flows")[0]["n"], "every analysed flow written")


@test("full-disk", ("release", "asan"))
def t_full_disk(binary, tmp):
    need_root()
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt]).returncode != 0:
        raise Skip("cannot mount a tmpfs")
    try:
        p = os.path.join(tmp, "flood.pcap")
        syn_flood(p, 200000, seed=3)
        db = os.path.join(mnt, "full.db")
        rc, _, err = run(["-q", "-r", p, "-o", db, "--flow-cap", "1024"], binary)
        eq(rc, 2, "exit")
        assert "full.db" in err and "full" in err and err.count("\n") == 1, err
        con = sqlite3.connect(db)
        eq(con.execute("PRAGMA integrity_check").fetchone()[0], "ok", "integrity")
        n = con.execute("SELECT count(*) FROM flows").fetchone()[0]
        con.close()
        assert n > 0, "committed rows lost"
        return "%d committed rows survive a full disk" % n
    finally:
        subprocess.run(["umount", mnt])


@test("reader-never-sees-half-a-flow")
def t_reader(binary, tmp):
    """A reader polling while iwscope writes sees whole rows only, and never fewer than before."""
    p = os.path.join(tmp, "flood.pcap")
    syn_flood(p, 300000, seed=4)
    db = os.path.join(tmp, "r.db")
    proc = subprocess.Popen([binary, "-q", "--no-dpi", "-r", p, "-o", db, "--flow-cap", "2048"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    seen, polls = 0, 0
    while proc.poll() is None:
        n = count_rows(db)
        half = count_rows(db, "SELECT count(*) FROM flows WHERE handshake IS NULL OR client_ip IS NULL "
                              "OR c_pkts IS NULL OR s_pkts IS NULL OR c_syn_win IS NULL OR flow_key IS NULL")
        if n is not None and half is not None:
            polls += 1
            eq(half, 0, "rows missing columns")
            assert n >= seen, "row count went back from %d to %d" % (seen, n)
            seen = n
        time.sleep(0.05)
    eq(proc.returncode, 0, "writer")
    assert polls >= 3 and 0 < seen, "only %d reads during the run" % polls
    eq(count_rows(db), rows(db, "SELECT flows FROM runs")[0]["flows"], "final rows")
    return "%d reads during the run" % polls


@test("two-writers-one-database", ("release", "asan"))
def t_two_writers(binary, tmp):
    db = os.path.join(tmp, "shared.db")
    run(["-q", "--no-dpi", "-r", truth_pcap(), "-o", db], binary, 0)  # create it first
    procs = [subprocess.Popen([binary, "-q", "--no-dpi", "--probe", "w%d" % i, "-r", os.path.join(PCAPS, "demo.pcap"),
                               "-o", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
             for i in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        eq(p.returncode, 0, "a concurrent writer failed: " + err)
    eq(rows(db, "SELECT count(*) AS n FROM runs")[0]["n"], 4, "runs")
    eq(rows(db, "SELECT count(*) AS n FROM flows")[0]["n"], 4 + 3 * 10, "flows")


@test("merge-sqlite-files", ("release", "asan"))
def t_merge(binary, tmp):
    """Probes' files merge into one without a server; merging again adds nothing; a file that
    is not an iwscope database is reported and the others still merge."""
    a = analyse(binary, [os.path.join(PCAPS, "demo.pcap")], tmp, ["--probe", "a"], "a.db")
    b = analyse(binary, [truth_pcap()], tmp, ["--probe", "b"], "b.db")
    nb = count_rows(b)
    out = os.path.join(tmp, "all.db")
    _, _, err = run(["merge", a, b, "-o", out], binary, 0)
    assert "2 runs (2 new), %d flows (%d new)" % (10 + nb, 10 + nb) in err, err
    _, _, err = run(["merge", a, b, "-o", out], binary, 0)
    assert "(0 new)" in err and "2 runs (0 new)" in err, err
    eq(count_rows(out), 10 + nb, "flows")
    eq(comparable(rows(out, "SELECT * FROM flows WHERE probe = 'a'")), comparable(rows(a, "SELECT * FROM flows")), "a's rows")
    eq(rows(out, "SELECT probe, runs, flows FROM probes ORDER BY probe"),
       [{"probe": "a", "runs": 1, "flows": 10}, {"probe": "b", "runs": 1, "flows": nb}], "probes view")
    junk = os.path.join(tmp, "junk.db")
    open(junk, "w").write("not a database")
    rc, _, err = run(["merge", junk, a, "-o", os.path.join(tmp, "two.db")], binary)
    eq(rc, 2, "exit with a bad input")
    assert "junk.db" in err and "merged 1 of 2" in err, err
    eq(count_rows(os.path.join(tmp, "two.db")), 10, "the good file merged")
    rc, _, err = run(["merge", out, "-o", out], binary)
    eq(rc, 2, "merging a file into itself")


LACKS = "SELECT flows, one_direction, syn_opts_cut, acked_unseen FROM runs"


def tshark_fields(pcap, filt, *fields):
    args = ["tshark", "-n", "-r", pcap, "-Y", filt, "-T", "fields"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


@test("what-a-capture-lacks-counted", ("release", "asan"))
def t_lacks(binary, tmp):
    """runs.one_direction, syn_opts_cut and acked_unseen, and flows' c_/s_acked_unseen, count
    what a capture lacks, and the summary line and the report say it: the whole capture lacks
    nothing; cut to 54 bytes, every SYN and SYN-ACK has its options cut; the server's packets
    alone are every flow in one direction; one server data segment removed is its length
    acknowledged but never captured, in its flow's s_acked_unseen and the run's."""
    for tool in ("editcap", "tshark", "tcpdump"):
        if not shutil.which(tool):
            raise Skip(tool + " not installed")
    src = truth_pcap()
    whole = analyse(binary, [src], tmp, ["--no-dpi"], "whole.db")
    nflows = count_rows(whole)
    eq(rows(whole, LACKS), [{"flows": nflows, "one_direction": 0, "syn_opts_cut": 0, "acked_unseen": 0}],
       "the whole capture")
    eq({(r["c_acked_unseen"], r["s_acked_unseen"]) for r in rows(whole)}, {(0, 0)}, "its flows")

    def summary(pcap, name, extra=()):
        db = os.path.join(tmp, name)
        _, _, err = run(["--no-dpi", "-r", pcap, "-o", db] + list(extra), binary, 0)
        return db, err

    cut = os.path.join(tmp, "cut54.pcap")
    subprocess.run(["editcap", "-s", "54", src, cut], check=True)
    syns = len(tshark_fields(cut, "tcp.flags.syn == 1", "frame.number"))
    assert syns >= 2 * nflows, syns
    db, err = summary(cut, "cut.db")
    eq(rows(db, LACKS), [{"flows": nflows, "one_direction": 0, "syn_opts_cut": syns, "acked_unseen": 0}],
       "cut to 54 bytes")
    assert "; %d SYNs with options cut by the snaplen: verdicts there are exact only where" % syns in err, err

    srv = os.path.join(tmp, "server.pcap")
    subprocess.run(["tcpdump", "-r", src, "-w", srv, "tcp src port 8080"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for extra in ((), ("--threads", "1")):
        db, err = summary(srv, "server%d.db" % len(extra), extra)
        eq(rows(db, LACKS), [{"flows": nflows, "one_direction": nflows, "syn_opts_cut": 0, "acked_unseen": 0}],
           "the server's direction only %s" % (extra,))
        assert "; %d flows seen in one direction only:" % nflows in err, err

    # the fifth data segment of the server's first flow, gone from the capture
    seg = tshark_fields(src, "tcp.srcport == 8080 && tcp.len > 0 && tcp.stream == 0",
                        "frame.number", "tcp.len", "tcp.dstport")[4]
    frame, length, cport = int(seg[0]), int(seg[1]), int(seg[2])
    holed = os.path.join(tmp, "holed.pcap")
    subprocess.run(["editcap", src, holed, str(frame)], check=True)
    db, err = summary(holed, "holed.db")
    eq(rows(db, LACKS), [{"flows": nflows, "one_direction": 0, "syn_opts_cut": 0, "acked_unseen": length}],
       "a server segment removed")
    eq({r["client_port"]: (r["c_acked_unseen"], r["s_acked_unseen"]) for r in rows(db)},
       {r["client_port"]: (0, length if r["client_port"] == cport else 0) for r in rows(whole)},
       "the segment's flow")
    assert "; %s bytes acknowledged but never captured:" % format(length, ",") in err, err
    # the report says them, in every format
    _, out, _ = run(["report", db, "--format", "json"], binary, 0)
    got = json.loads(out)["runs"][0]
    eq((got["one_direction"], got["syn_opts_cut"], got["acked_unseen"]), (0, 0, length), "report json")
    _, out, _ = run(["report", db, "--format", "csv"], binary, 0)
    lines = out.splitlines()
    head = lines.index("# runs") + 1
    eq(dict(zip(lines[head].split(","), lines[head + 1].split(",")))["acked_unseen"], str(length), "report csv")
    _, out, _ = run(["report", db], binary, 0)
    assert "unseen_bytes" in out and "one_dir" in out and "syn_cut" in out, out
    # merge copies them
    merged = os.path.join(tmp, "merged.db")
    run(["merge", db, os.path.join(tmp, "cut.db"), "-o", merged], binary, 0)
    eq(sorted(rows(merged, LACKS), key=lambda r: r["acked_unseen"]),
       sorted(rows(db, LACKS) + rows(os.path.join(tmp, "cut.db"), LACKS), key=lambda r: r["acked_unseen"]),
       "merged runs")


@test("schema-5-file-upgraded-in-place", ("release", "asan"))
def t_sqlite_upgrade_5(binary, tmp):
    """A version-5 file (a fresh one taken back: version 5's views, without transport, and rows
    of an older version upgraded to 5, transport NULL) is upgraded when a run appends to it: the
    older rows read tcp, the views of first flights are made again with a row per transport,
    the rows stay."""
    db = analyse(binary, [truth_pcap()], tmp, ["--no-dpi", "--probe", "old"], "v5.db")
    con = sqlite3.connect(db)
    con.execute("DROP VIEW iw_classes")
    con.execute("CREATE VIEW iw_classes AS SELECT s_iw_class AS iw_class, s_iw_limit AS iw_limit, "
                "s_iw_std AS iw_std, count(*) AS flows FROM flows WHERE s_iw_class IS NOT NULL "
                "GROUP BY s_iw_class, s_iw_limit, s_iw_std")
    con.execute("UPDATE flows SET transport = NULL")
    con.execute("PRAGMA user_version = 5")
    con.commit()
    con.close()
    old = rows(db, "SELECT * FROM flows ORDER BY flow_key")
    eq({r["transport"] for r in old}, {None}, "version 5's upgrade left them NULL")
    run(["-q", "--no-dpi", "--probe", "new", "--append", "-r", os.path.join(PCAPS, "quic", "curl-google.pcap"),
         "-o", db], binary, 0)
    eq(rows(db, "PRAGMA user_version")[0]["user_version"], SCHEMA_VERSION, "upgraded")
    eq(rows(db, "SELECT * FROM flows WHERE probe = 'old' ORDER BY flow_key"),
       [dict(r, transport="tcp") for r in old], "rows kept, transport tcp")
    got = rows(db, "SELECT transport, sum(flows) AS n FROM iw_classes GROUP BY transport ORDER BY transport")
    eq(got, [{"transport": "quic", "n": 1}, {"transport": "tcp", "n": len(old)}], "iw_classes per transport")


@test("schema-3-file-upgraded-in-place", ("release", "asan"))
def t_sqlite_upgrade_3(binary, tmp):
    """A version-3 file (a fresh one taken back: versions 4's and 5's columns dropped) is upgraded when
    a run writes to it: its rows stay with the new columns NULL (unknown), the new columns come
    last, the new run's counters and flows have them."""
    db = analyse(binary, [truth_pcap()], tmp, ["--no-dpi", "--probe", "old"], "v3.db")
    con = sqlite3.connect(db)
    for v in [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]:
        con.execute("DROP VIEW %s" % v)
    for c in NEW_IN_4 + NEW_IN_5:
        con.execute("ALTER TABLE flows DROP COLUMN %s" % c)
    for c in NEW_RUNS_IN_4 + NEW_RUNS_IN_5:
        con.execute("ALTER TABLE runs DROP COLUMN %s" % c)
    con.execute("PRAGMA user_version = 3")
    con.commit()
    con.close()
    old = rows(db, "SELECT * FROM flows ORDER BY flow_key")
    run(["-q", "--no-dpi", "--probe", "new", "-r", truth_pcap(), "-o", db], binary, 0)
    eq(rows(db, "PRAGMA user_version")[0]["user_version"], SCHEMA_VERSION, "upgraded")
    cols = [c["name"] for c in rows(db, "SELECT name FROM pragma_table_info('flows')")]
    eq(cols[-len(NEW_IN_4 + NEW_IN_5):], NEW_IN_4 + NEW_IN_5, "flows' new columns last")
    cols = [c["name"] for c in rows(db, "SELECT name FROM pragma_table_info('runs')")]
    eq(cols[-5:], NEW_RUNS_IN_4 + NEW_RUNS_IN_5, "runs' new columns last")
    got = rows(db, "SELECT * FROM flows WHERE probe = 'old' ORDER BY flow_key")
    eq([{k: v for k, v in r.items() if k not in NEW_IN_4 + NEW_IN_5} for r in got], old, "rows kept")
    eq({r["transport"] for r in got}, {"tcp"}, "old rows: tcp")
    eq({r["transport"] for r in rows(db, "SELECT * FROM flows WHERE probe = 'new'")}, {"tcp"}, "new rows: tcp")
    eq({(r["c_acked_unseen"], r["s_acked_unseen"]) for r in got}, {(None, None)}, "unknown for old rows")
    eq({(r["c_acked_unseen"], r["s_acked_unseen"])
        for r in rows(db, "SELECT * FROM flows WHERE probe = 'new'")}, {(0, 0)}, "the new run's flows")
    eq(rows(db, "SELECT probe, one_direction, syn_opts_cut, acked_unseen FROM runs ORDER BY probe"),
       [{"probe": "new", "one_direction": 0, "syn_opts_cut": 0, "acked_unseen": 0},
        {"probe": "old", "one_direction": None, "syn_opts_cut": None, "acked_unseen": None}], "runs")
    fresh = analyse(binary, [truth_pcap()], tmp, ["--no-dpi"], "fresh.db")
    q = "SELECT name, sql FROM sqlite_master WHERE type = 'view' ORDER BY name"
    eq(rows(db, q), rows(fresh, q), "views as a fresh file's")
    _, out, _ = run(["report", db, "--format", "json"], binary, 0)
    eq([r["acked_unseen"] for r in json.loads(out)["runs"]], [0, None], "report: new, old")


@test("full-disk-run-says-what-is-stored")
def t_full_disk(binary, tmp):
    """A file system that fills up mid-run (a 300 KiB tmpfs): "database or disk is full", exit
    status 2, and the run's record counts the flows the file holds (0 here: the batch was rolled
    back), not those analysed (issue 31 item 5)."""
    if os.geteuid() != 0:
        raise Skip("needs root to mount a small tmpfs")
    conns = []
    for i in range(3000):
        c = craft.Conn(cport=20000 + i % 40000, cip="10.%d.%d.1" % (i // 250, i % 250),
                       t0=1700000000.0 + i * 0.001)
        c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
        c.s(0.0001, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
        c.c(0.0001, "A", 1, 1)
        c.c(0.0001, "FA", 1, 1)
        c.s(0.0001, "FA", 1, 2)
        conns += c.out
    cap = os.path.join(tmp, "many.pcap")
    craft.write_pcap(cap, sorted(conns, key=lambda p: p[0]))
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", mnt]).returncode:
        raise Skip("cannot mount a tmpfs here")
    try:
        db = os.path.join(mnt, "f.db")
        rc, _, err = run(["--no-dpi", "-r", cap, "-o", db], binary)
        eq(rc, 2, "exit status")
        assert "database or disk is full" in err, err
        stored = count_rows(db)
        r = rows(db, "SELECT status, flows FROM runs")[0]
        eq((r["status"], r["flows"]), ("failed", stored), "the run's record against the flows table")
    finally:
        subprocess.run(["umount", mnt])
    # A disk full at the run's start (120 KiB: room for the schema, not for the run's record and
    # the bulk load's preparation): no run is left 'running' with no flows, and once there is
    # room the same files run again without --replace (the retry used to be refused: "was
    # analysed here before ... 0 flows").
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=120k", "tmpfs", mnt]).returncode:
        raise Skip("cannot mount a tmpfs here")
    try:
        db = os.path.join(mnt, "start.db")
        cap = truth_pcap()
        rc, _, err = run(["-q", "--no-dpi", "-r", cap, "-o", db], binary)
        eq(rc, 2, "exit status on a full disk: " + err)
        assert "database or disk is full" in err and err.count("\n") == 1, err
        eq(count_rows(db), 0, "flows on the full disk")
        for r in rows(db, "SELECT status, flows, finished_us FROM runs"):
            eq((r["status"], r["flows"]), ("failed", 0), "a run the full disk stopped")
            assert r["finished_us"], r
        subprocess.run(["mount", "-o", "remount,size=4m", mnt], check=True)
        rc, _, err = run(["-q", "--no-dpi", "-r", cap, "-o", db], binary)
        eq(rc, 0, "the retry once there is room: " + err)
        eq(rows(db, "SELECT status, flows FROM runs WHERE status <> 'failed'"),
           [{"status": "complete", "flows": 4}], "the retry's run")
        eq(count_rows(db), 4, "the retry's flows")
    finally:
        subprocess.run(["umount", mnt])
