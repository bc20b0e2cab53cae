# Many probes, one database: a real PostgreSQL server started by the tests (helpers.pg_server);
# the schema against SQLite's, upgrades, a server restarted mid-run, an unreachable server,
# batches sent twice, refused logins, reports and plots read from it.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("pg-schema-matches-sqlite")
def t_pg_schema(binary, tmp):
    """Both dialects have the same tables and views with the same columns in the same order;
    the schema files are what the binary creates."""
    srv, uri, name = pg_database(tmp)
    db = analyse(binary, [truth_pcap()], tmp, ["--no-dpi"])
    run(["-q", "--no-dpi", "-r", truth_pcap(), "-o", uri, "--spool", os.path.join(tmp, "sp.db")],
        binary, 0)
    lite = {}
    for r in rows(db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"):
        lite[r["name"]] = [c["name"] for c in rows(db, "SELECT name FROM pragma_table_info('%s')" % r["name"])]
    pg = {}
    for r in pg_rows(srv, name, "SELECT table_name, column_name FROM information_schema.columns "
                     "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"):
        pg.setdefault(r["table_name"], []).append(r["column_name"])
    eq(sorted(pg), sorted(lite), "tables and views")
    for t in lite:
        eq(pg[t], lite[t], "columns of " + t)
    assert len(lite) >= 11 and "probe" in lite["flows"] and "probe" in lite["runs"], lite.keys()
    _, out, _ = run(["schema", "postgresql"], binary, 0)
    eq(out, open(os.path.join(ROOT, "schema", "postgresql.sql")).read() +
       open(os.path.join(ROOT, "schema", "views.sql")).read(), "iwscope schema postgresql")
    # the unique key a Citus table distributed by server_ip needs, and no foreign keys
    keys = pg_rows(srv, name, "SELECT indexdef FROM pg_indexes WHERE indexname = 'flows_key'")
    assert "(probe, run_id, flow_key, server_ip)" in keys[0]["indexdef"], keys
    eq(pg_rows(srv, name, "SELECT count(*) AS n FROM information_schema.table_constraints "
               "WHERE constraint_type = 'FOREIGN KEY'")[0]["n"], 0, "foreign keys")


@test("pg-schema-2-upgraded-in-place", ("release", "asan"))
def t_pg_upgrade(binary, tmp):
    """A version-2 PostgreSQL database (a fresh one taken back: the new columns dropped, the
    comment of version 2) is upgraded in place by the next probe's run: its rows stay, the new
    columns and version follow, the views are made again."""
    srv, uri, name = pg_database(tmp)
    run(["-q", "--no-dpi", "--probe", "old", "-r", truth_pcap(), "-o", uri,
         "--spool", os.path.join(tmp, "sp1.db")], binary, 0)
    srv.psql("DROP VIEW server_iw, iw_classes, iw_by_app, iw_by_name; ALTER TABLE flows %s; ALTER TABLE runs %s; "
             "COMMENT ON TABLE runs IS 'iwscope schema 2'"
             % (", ".join("DROP COLUMN %s" % c for c in NEW_IN_3 + NEW_IN_4 + NEW_IN_5),
                ", ".join("DROP COLUMN %s" % c for c in NEW_RUNS_IN_4 + NEW_RUNS_IN_5)), name)
    before = len(pg_rows(srv, name, "SELECT * FROM flows"))
    run(["-q", "--no-dpi", "--probe", "new", "-r", truth_pcap(), "-o", uri,
         "--spool", os.path.join(tmp, "sp2.db")], binary, 0)
    eq(pg_rows(srv, name, "SELECT obj_description('runs'::regclass) AS c")[0]["c"], "iwscope schema %d" % SCHEMA_VERSION, "version")
    got = pg_rows(srv, name, "SELECT probe, s_iw_end FROM flows ORDER BY probe")
    eq(len(got), 2 * before, "old rows kept, new ones added")
    eq({r["s_iw_end"] for r in got if r["probe"] == "old"}, {None}, "old rows have no evidence")
    tr = pg_rows(srv, name, "SELECT probe, transport FROM flows")
    eq({(r["probe"], r["transport"]) for r in tr}, {("old", "tcp"), ("new", "tcp")}, "old rows: tcp")
    assert {r["s_iw_end"] for r in got if r["probe"] == "new"} - {None}, got
    eq(len(pg_rows(srv, name, "SELECT * FROM server_iw")) > 0, True, "views made again")
    assert "nagle" in pg_rows(srv, name, "SELECT pg_get_viewdef('server_iw') AS d")[0]["d"], "version 3's view"
    cols = [r["column_name"] for r in pg_rows(srv, name, "SELECT column_name FROM information_schema.columns "
                                            "WHERE table_name = 'flows' ORDER BY ordinal_position")]
    eq(cols[-len(NEW_IN_3 + NEW_IN_4 + NEW_IN_5):], NEW_IN_3 + NEW_IN_4 + NEW_IN_5, "new columns at the end")
    got = pg_rows(srv, name, "SELECT probe, one_direction, syn_opts_cut, acked_unseen FROM runs ORDER BY probe")
    eq(got, [{"probe": "new", "one_direction": 0, "syn_opts_cut": 0, "acked_unseen": 0},
             {"probe": "old", "one_direction": None, "syn_opts_cut": None, "acked_unseen": None}],
       "run counters: the new run's, none for the old one")
    got = pg_rows(srv, name, "SELECT probe, s_acked_unseen FROM flows ORDER BY probe")
    eq({(r["probe"], r["s_acked_unseen"]) for r in got}, {("new", 0), ("old", None)}, "flows' acked_unseen")


@test("pg-two-probes-server-restarted-mid-run", ("release", "asan"))
def t_pg_restart(binary, tmp):
    """Two probes replay captures into one database at once; the server is stopped 2 s in and
    started 3 s later. Each probe spools meanwhile and drains on reconnect: every flow is in
    the database exactly once, equal to what an SQLite run of the same capture writes."""
    srv, uri, name = pg_database(tmp)
    caps = {"east": (os.path.join(PCAPS, "demo.pcap"), "0.5"),          # 10 flows in ~12 s
            "west": (keepalive_pcap(tmp), "0.25"),                     # written early, updated at ~12 s
            }
    procs = {}
    for probe, (cap, speed) in caps.items():
        procs[probe] = subprocess.Popen(
            [binary, "-r", cap, "--replay=" + speed, "--no-ui", "--probe", probe, "-o", uri,
             "--spool", os.path.join(tmp, probe + ".spool")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    # the outage comes once both probes have begun their runs (an ASan start on a busy machine
    # can take longer than the 2 s this test waited: the server stopped under a probe still
    # recording its run, which exits 2), then a second or two into their replays
    def begun():
        try:
            return len(pg_rows(srv, name, "SELECT probe FROM runs"))
        except AssertionError:  # no schema yet
            return 0
    end = time.monotonic() + 60
    while time.monotonic() < end and begun() < len(caps):
        time.sleep(0.1)
    time.sleep(1.5)
    srv.stop()
    time.sleep(3)
    srv.start()
    errs = {}
    for probe, p in procs.items():
        _, errs[probe] = p.communicate(timeout=120)
        eq(p.returncode, 0, probe + ": " + errs[probe])
        assert "Sanitizer" not in errs[probe], errs[probe]
    for probe, (cap, _) in caps.items():
        err = errs[probe]
        assert "spooling to" in err and "is back; draining the spool" in err, "no outage and recovery: " + repr(err)
        line = [x for x in err.splitlines() if x.startswith("iwscope: postgresql: ")]
        assert line, "no summary: " + repr(err)
        m = re.search(r"; (\d+) waited in the spool while the server was unreachable, (\d+) drained", line[0])
        if probe == "east":  # flows end all through the outage: some had to wait
            assert m and int(m.group(1)) > 0 and m.group(1) == m.group(2), line[0]
        else:  # its one row was sent before the outage or after it
            assert not m or m.group(1) == m.group(2), line[0]
        eq(count_rows(os.path.join(tmp, probe + ".spool")), 0, "spool left empty")
        ref = rows(analyse(binary, [cap], tmp, [], probe + ".db"), "SELECT * FROM flows")
        got = pg_rows(srv, name, "SELECT * FROM flows WHERE probe = '%s'" % probe)
        eq(len(got), len(ref), probe + " flows")
        eq(len({tuple(r[k] for k in FLOW_KEY) for r in got}), len(ref), probe + " distinct flows")
        eq(comparable(got), comparable(ref), probe + " rows equal SQLite's")
        run_row = pg_rows(srv, name, "SELECT status, flows FROM runs WHERE probe = '%s'" % probe)
        eq(run_row, [{"status": "complete", "flows": len(ref)}], probe + " run")
    # the persistent connection's row arrived early, then its final state replaced it
    west = pg_rows(srv, name, "SELECT end_reason FROM flows WHERE probe = 'west'")
    eq(west, [{"end_reason": "fin"}], "west's final row")


@test("pg-unreachable-for-a-whole-run", ("release", "asan"))
def t_pg_backlog(binary, tmp):
    """No server for a whole run: exit 0, the rows wait in the spool and the summary says so;
    the next run with that spool delivers them along with its own, once each."""
    srv, uri, name = pg_database(tmp)
    spool = os.path.join(tmp, "p.spool")
    dead = "postgresql://iw:x@127.0.0.1:%d/%s" % (pgserver.free_port(), name)
    first = [truth_pcap(), mixed_pcap(tmp)]
    _, _, err = run(["-r", first[0], "-r", first[1], "--probe", "p", "-o", dead, "--spool", spool],
                    binary, 0)
    ref = analyse(binary, first, tmp, [], "ref.db")
    n = count_rows(ref)
    eq(count_rows(spool), n, "rows in the spool")
    assert "%d flow rows wait in the spool %s" % (n, spool) in err, err
    assert "x@" not in err and ":***@" in err, "password shown: " + err
    _, _, err = run(["-r", os.path.join(PCAPS, "demo.pcap"), "--probe", "p", "-o", uri, "--spool", spool],
                    binary, 0)
    assert "(%d left by an earlier run)" % n in err, err
    eq(count_rows(spool), 0, "spool drained")
    eq(count_rows(spool, "SELECT count(*) FROM runs"), 0, "finished runs leave the spool")
    got = pg_rows(srv, name, "SELECT run_id, count(*) AS n FROM flows GROUP BY run_id ORDER BY run_id")
    eq([r["n"] for r in got], [n, 10], "flows per run")
    eq([r["status"] for r in pg_rows(srv, name, "SELECT status FROM runs ORDER BY id")],
       ["complete", "complete"], "both runs")
    want = rows(ref, "SELECT reason, packets FROM run_decode ORDER BY reason")
    assert len(want) >= 5, want
    eq(pg_rows(srv, name, "SELECT reason, packets FROM run_decode ORDER BY reason"), want,
       "decode counters of the spooled run")


@test("pg-batch-sent-twice-lands-once", ("release", "asan"))
def t_pg_idempotent(binary, tmp):
    """The upload path (COPY + upsert on (server_ip, probe, run, flow)) replays a whole database
    twice: nothing is added the second time. A stale early state never replaces a final row."""
    srv, uri, name = pg_database(tmp)
    a = analyse(binary, [os.path.join(PCAPS, "demo.pcap")], tmp, ["--probe", "a"], "a.db")
    for _ in range(2):
        _, _, err = run(["merge", a, "-o", uri], binary, 0)
        assert "1 runs, 10 flows" in err, err
    eq(pg_rows(srv, name, "SELECT count(*) AS n FROM flows")[0]["n"], 10, "flows")
    eq(pg_rows(srv, name, "SELECT count(*) AS n FROM runs")[0]["n"], 1, "runs")
    # an early copy of a flow (no end_reason) arriving after its final row changes nothing
    stale = os.path.join(tmp, "stale.db")
    shutil.copy(a, stale)
    con = sqlite3.connect(stale)
    con.execute("UPDATE flows SET end_reason = NULL, c_pkts = 1")
    con.commit()
    con.close()
    run(["merge", stale, "-o", uri], binary, 0)
    eq(pg_rows(srv, name, "SELECT count(*) AS n FROM flows WHERE end_reason IS NULL OR c_pkts = 1")[0]["n"],
       0, "final rows kept")


@test("pg-bad-login-and-unknown-host", ("release", "asan"))
def t_pg_refused(binary, tmp):
    """A wrong password, an unknown host, a missing database: one line, exit 2, no spool
    made, the password never printed; report says the same."""
    srv, uri, name = pg_database(tmp)
    spool = os.path.join(tmp, "never.spool")
    cases = [(srv.uri(name, password="wrong-pw"), "password authentication failed"),
             ("postgresql://iw:pw@no-such-host.invalid/x", "could not translate host name"),
             (srv.uri("no_such_db"), 'database "no_such_db" does not exist')]
    for target, want in cases:
        for args in (["-r", truth_pcap(), "-o", target, "--spool", spool], ["report", target]):
            rc, out, err = run(args, binary)
            eq(rc, 2, "exit for %s: %s" % (args[0], err))
            eq(len(err.splitlines()), 1, "one line: " + err)
            assert want in err, err
            assert "wrong-pw" not in err and pgserver.PASSWORD not in err, "password shown: " + err
        assert not os.path.exists(spool), "spool created for " + target
    # a database that has a table named runs of its own is left alone
    srv.psql("CREATE TABLE runs (x int)", name)
    rc, _, err = run(["-r", truth_pcap(), "-o", uri, "--spool", spool], binary)
    eq(rc, 2, "foreign runs table")
    assert "not an iwscope database" in err, err


@test("pg-report-and-plot-equal-sqlite")
def t_pg_report(binary, tmp):
    """Every report table and every chart from PostgreSQL equals the SQLite file's."""
    srv, uri, name = pg_database(tmp)
    caps = [os.path.join(PCAPS, "demo.pcap"), os.path.join(PCAPS, "dpi", "apps.mid.pcap"),
            os.path.join(PCAPS, "quic", "retry.pcap")]
    dbs = [analyse(binary, [c], tmp, ["--probe", "p%d" % i], "%d.db" % i) for i, c in enumerate(caps)]
    all_db = os.path.join(tmp, "all.db")
    run(["merge"] + dbs + ["-o", all_db], binary, 0)
    run(["merge"] + dbs + ["-o", uri], binary, 0)
    reports = {}
    for by in ([], ["--by", "server"], ["--by", "app"], ["--by", "rwnd"], ["--by", "standard"], ["--by", "transport"], ["--by", "client"]):
        for fmt in ("table", "json"):
            _, a, _ = run(["report", all_db, "--format", fmt] + by, binary, 0)
            _, b, _ = run(["report", uri, "--format", fmt] + by, binary, 0)
            eq(b, a, "report %s %s" % (fmt, " ".join(by)))
            reports[(fmt,) + tuple(by)] = json.loads(a) if fmt == "json" else a
    # equal, and about both captures: not two empty reports
    eq(sorted((r["probe"], r["flows"]) for r in reports[("json",)]["runs"]), [("p0", 10), ("p1", 5), ("p2", 1)],
       "the runs reported")
    eq([(r["name"], r["alpn"], r["retry"]) for r in reports[("json", "--by", "transport")]["quic_versions"]],
       [("v1", "h3", 1)], "QUIC by version")
    eq(sorted(r["iw_class"] for r in reports[("json", "--by", "standard")]["iw_by_standard"]),
       ["IW10", "IW16", "IW3"], "the servers' windows by standard")
    _, summary, _ = run(["report", uri], binary, 0)
    assert "p0" in summary and "p1" in summary and "IW16" in summary, summary
    for target, d in ((all_db, "s"), (uri, "p")):
        run(["plot", target, "-o", os.path.join(tmp, d)], binary, 0)
    for f in ("iw_histogram.svg", "ff_bytes_cdf.svg", "syn_window.svg", "rtt_vs_ff.svg"):
        eq(open(os.path.join(tmp, "p", f)).read(), open(os.path.join(tmp, "s", f)).read(), f)
