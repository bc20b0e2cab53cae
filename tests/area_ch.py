# Past one database server: a real ClickHouse cluster (two shards of Debian's clickhouse-server
# 18.16, started by the tests: helpers.ch_cluster) written through its Distributed tables by two
# probes at once while a shard is stopped and started again; the schema against SQLite's;
# batches sent twice; refused targets; reports and plots read from it.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


def ch_flows(shard, db, where=""):
    """The flows of db through the Distributed (or one server's) table, FINAL, typed like
    SQLite's rows (integers as int, NULL as None), without row_version."""
    out = []
    for r in shard.rows("SELECT * FROM flows FINAL %s" % where, db):
        r.pop("row_version", None)
        out.append({k: (int(v) if v is not None and v.lstrip("-").isdigit() else v) for k, v in r.items()})
    return out


def ch_sqlite_columns(db):
    cols = {}
    for r in rows(db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"):
        cols[r["name"]] = [c["name"] for c in rows(db, "SELECT name FROM pragma_table_info('%s')" % r["name"])]
    return cols


@test("clickhouse-schema-matches-sqlite")
def t_ch_schema(binary, tmp):
    """A probe writing to an empty ClickHouse database creates the one-server schema: the
    tables and views of SQLite with the same columns in the same order (row_version added to
    the tables); ReplacingMergeTree partitioned by day, ordered by server then time; the
    cluster form has local tables and Distributed ones sharded by the server address."""
    c, name = ch_database(tmp)
    s = c.shards[0]
    db = analyse(binary, [truth_pcap()], tmp, ["--no-dpi"])
    run(["-q", "--no-dpi", "-r", truth_pcap(), "-o", s.uri(name), "--spool", os.path.join(tmp, "sp.db")],
        binary, 0)
    lite = ch_sqlite_columns(db)
    ch = {}
    for r in s.rows("SELECT table, name FROM system.columns WHERE database = '%s'" % name):
        ch.setdefault(r["table"], []).append(r["name"])
    eq(sorted(ch), sorted(list(lite) + ["iwscope_schema"]), "tables and views")
    for t in lite:
        eq([x for x in ch[t] if x != "row_version"], lite[t], "columns of " + t)
    eng = {r["name"]: r for r in s.rows("SELECT name, engine, partition_key, sorting_key FROM system.tables "
                                        "WHERE database = '%s'" % name)}
    eq(eng["flows"]["engine"], "ReplacingMergeTree", "flows' engine")
    eq(eng["flows"]["sorting_key"], "server_ip, server_port, ts_us, probe, run_id, flow_key", "flows' order")
    assert "toDate" in eng["flows"]["partition_key"], eng["flows"]
    eq(len(ch_flows(s, name)), count_rows(db), "flows written")
    # QUIC connections through the sink too: every column as SQLite has it
    quic = [os.path.join(PCAPS, "quic", f) for f in ("curl-google.pcap", "retry.pcap")]
    ref = rows(analyse(binary, quic, tmp, ["--no-dpi"], "quic.db"), "SELECT * FROM flows")
    run(["-q", "--no-dpi", "--probe", "q", "-o", s.uri(name), "--spool", os.path.join(tmp, "sp.db")]
        + [x for f in quic for x in ("-r", f)], binary, 0)
    got = ch_flows(s, name, "WHERE probe = 'q'")
    eq(sorted(r["transport"] for r in got), sorted(r["transport"] for r in ref), "transports")
    assert any(r["transport"] == "quic" for r in got), got
    eq(comparable(got), comparable(ref), "QUIC rows equal SQLite's")
    # the cluster form, as run on each shard by helpers.ch_database
    _, one, _ = run(["schema", "clickhouse", "--database", "x"], binary, 0)
    _, two, _ = run(["schema", "clickhouse", "--cluster", "fleet", "--database", "x"], binary, 0)
    assert "{" not in one and "ENGINE = Distributed" not in one and "x.flows (" in one, one[:400]
    assert "CREATE TABLE IF NOT EXISTS x.flows_local (" in two, two[:400]
    assert "ENGINE = Distributed(fleet, x, flows_local, cityHash64(server_ip))" in two, two
    rc, _, err = run(["schema", "clickhouse", "--cluster"], binary)
    eq(rc, 1, "usage: " + err)


@test("clickhouse-cluster-two-probes-shard-restarted", ("release", "asan"))
def t_ch_cluster(binary, tmp):
    """Two probes replay captures into a two-shard cluster at once, each through another
    node's Distributed tables (inserts wait for every shard); shard 1 is stopped 2 s in and
    started 2 s later. Each probe spools what a shard could not take and drains after it:
    every flow of both captures is there exactly once (through FINAL and after OPTIMIZE ...
    FINAL), equal to what an SQLite run of the same capture writes, spread over both shards."""
    c, name = ch_database(tmp, cluster=True)
    caps = {"east": (os.path.join(PCAPS, "demo.pcap"), "0.5", 0),     # 10 flows in ~12 s
            "west": (keepalive_pcap(tmp), "0.4", 1)}                 # written early, updated at ~7.5 s
    procs = {}
    for probe, (cap, speed, shard) in caps.items():
        procs[probe] = subprocess.Popen(
            [binary, "-r", cap, "--replay=" + speed, "--no-ui", "--probe", probe, "-o",
             c.shards[shard].uri(name), "--spool", os.path.join(tmp, probe + ".spool")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(2)
    c.stop(1)
    time.sleep(2)
    c.start(1)
    errs = {}
    for probe, p in procs.items():
        _, errs[probe] = p.communicate(timeout=120)
        eq(p.returncode, 0, probe + ": " + errs[probe])
        assert "Sanitizer" not in errs[probe], errs[probe]
    s0 = c.shards[0]
    for probe, (cap, _, _) in caps.items():
        err = errs[probe]
        line = [x for x in err.splitlines() if x.startswith("iwscope: clickhouse: ")]
        assert line, "no summary: " + repr(err)
        m = re.search(r"; (\d+) waited in the spool while the server was unreachable, (\d+) drained", line[0])
        if probe == "east":  # flows end all through the outage: some had to wait, all drained
            assert "spooling to" in err and "is back; draining the spool" in err, repr(err)
            assert m and int(m.group(1)) > 0 and m.group(1) == m.group(2), line[0]
        else:
            assert not m or m.group(1) == m.group(2), line[0]
        eq(count_rows(os.path.join(tmp, probe + ".spool")), 0, "spool left empty")
        ref = rows(analyse(binary, [cap], tmp, ["--probe", probe], probe + ".db"), "SELECT * FROM flows")
        got = ch_flows(s0, name, "WHERE probe = '%s'" % probe)
        eq(len(got), len(ref), probe + " flows")
        eq(len({tuple(r[k] for k in FLOW_KEY) for r in got}), len(ref), probe + " distinct flows")
        eq(comparable(got), comparable(ref), probe + " rows equal SQLite's")
        run_row = s0.rows("SELECT status, flows FROM runs FINAL WHERE probe = '%s'" % probe, name)
        eq(run_row, [{"status": "complete", "flows": str(len(ref))}], probe + " run")
    west = s0.rows("SELECT end_reason FROM flows FINAL WHERE probe = 'west'", name)
    eq(west, [{"end_reason": "fin"}], "west's final row")
    # what the probes wrote through the outage reads as SQLite's rows of the same captures do
    both = os.path.join(tmp, "both.db")
    run(["merge", os.path.join(tmp, "east.db"), os.path.join(tmp, "west.db"), "-o", both], binary, 0)
    for by in ([], ["--by", "server"]):
        _, a, _ = run(["report", both, "--format", "json"] + by, binary, 0)
        _, b, _ = run(["report", c.shards[1].uri(name), "--format", "json"] + by, binary, 0)
        a, b = json.loads(a), json.loads(b)
        for r in a.get("runs", []) + b.get("runs", []):  # each store numbers its runs
            for k in ("run_id",):
                r.pop(k, None)
        eq(b, a, "report %s after the outage" % " ".join(by))
    # the copies merged away: exactly once in the tables themselves, each server on one shard
    per_shard = []
    for s in c.shards:
        s.query("OPTIMIZE TABLE flows_local FINAL", name)
        s.query("OPTIMIZE TABLE runs_local FINAL", name)
        per_shard.append({r["server_ip"] for r in s.rows("SELECT server_ip FROM flows_local", name)})
    eq(int(s0.query("SELECT count() FROM flows", name)), 11, "flows after OPTIMIZE FINAL")
    eq(int(s0.query("SELECT count() FROM runs", name)), 2, "runs after OPTIMIZE FINAL")
    assert per_shard[0] and per_shard[1] and not per_shard[0] & per_shard[1], per_shard


def ch_answered(shard, since, queries):
    """The queries iwscope's HTTP client sent shard at or after since (the server's time), as
    the server logged them when they finished: (query, rows sent back). A query's line may be
    logged after its client has its answer: waited for until there are as many as queries
    (at most 5 s)."""
    deadline = time.time() + 5
    while True:
        shard.query("SYSTEM FLUSH LOGS")
        got = [(r["query"], int(r["result_rows"])) for r in shard.rows(
            "SELECT query, result_rows FROM system.query_log WHERE type = 2 AND is_initial_query = 1 "
            "AND http_user_agent = 'iwscope' AND query_start_time >= toDateTime(%s) "
            "ORDER BY query_start_time" % since)]
        if len(got) >= queries or time.time() > deadline:
            return got
        time.sleep(0.2)


@test("clickhouse-report-and-plot-equal-sqlite")
def t_ch_report(binary, tmp):
    """Every report table and every chart from the cluster (read through either node) equals
    the SQLite file's of the same rows; merged twice, nothing counts twice. ClickHouse answers
    each question itself: what comes back is the report's rows, not the flows."""
    c, name = ch_database(tmp, cluster=True)
    caps = [os.path.join(PCAPS, "demo.pcap"), os.path.join(PCAPS, "dpi", "apps.mid.pcap"),
            os.path.join(PCAPS, "quic", "retry.pcap")]
    dbs = [analyse(binary, [cp], tmp, ["--probe", "p%d" % i], "%d.db" % i) for i, cp in enumerate(caps)]
    # 100 connections in a table of 16: 84 evicted early (the summary's "evicted" table)
    syns = []
    for i in range(100):
        conn = craft.Conn(cport=20000 + i, t0=1700000000.0 + i * 0.001)
        conn.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
        syns += conn.out
    craft.write_pcap(os.path.join(tmp, "syns.pcap"), syns)
    dbs.append(analyse(binary, [os.path.join(tmp, "syns.pcap")], tmp,
                       ["--no-dpi", "--flow-cap", "16", "--probe", "p3"], "3.db"))
    # no capture of ours has a QUIC server past the 3x limit: the retry capture's made one
    with sqlite3.connect(dbs[2]) as lite:
        lite.execute("UPDATE flows SET quic_s_preval = 3 * quic_c_preval + 7 WHERE transport = 'quic'")
    all_db = os.path.join(tmp, "all.db")
    run(["merge"] + dbs + ["-o", all_db], binary, 0)
    uri = c.shards[0].uri(name)
    for _ in range(2):  # a batch sent again collapses into its first copy
        _, _, err = run(["merge"] + dbs + ["-o", uri], binary, 0)
        assert "4 runs, 116 flows" in err, err
    eq(int(c.shards[0].query("SELECT count() FROM flows FINAL", name)), 116, "flows through FINAL")
    assert int(c.shards[0].query("SELECT count() FROM flows", name)) > 116, "copies not merged yet"
    reports = {}
    node = c.shards[1]
    for by in ([], ["--by", "server"], ["--by", "app"], ["--by", "rwnd"], ["--by", "standard"], ["--by", "transport"], ["--by", "client"]):
        for fmt in ("table", "json"):
            _, a, _ = run(["report", all_db, "--format", fmt] + by, binary, 0)
            if fmt == "json":
                time.sleep(1)  # the log's times are seconds: this report's queries, none before
                since = int(node.query("SELECT toUnixTimestamp(now())"))
            _, b, _ = run(["report", node.uri(name), "--format", fmt] + by, binary, 0)
            eq(b, a, "report %s %s" % (fmt, " ".join(by)))
            reports[(fmt,) + tuple(by)] = json.loads(a) if fmt == "json" else a
            if fmt == "json":  # the rows sent back: the schema's version, then each table's
                tables = reports[(fmt,) + tuple(by)]
                got = ch_answered(node, since, 1 + len(tables))
                eq(len(got), 1 + len(tables), "queries for report %s: %r" % (by, got))
                want = 1 + sum(len(t) for t in tables.values())
                eq(sum(n for _, n in got), want, "rows ClickHouse sent for report %s: %r" % (by, got))
    summary = reports[("json",)]
    eq(sorted((r["probe"], r["flows"]) for r in summary["runs"]), [("p0", 10), ("p1", 5), ("p2", 1), ("p3", 100)],
       "the runs reported")
    eq([(r["probe"], r["flows"], r["complete"], r["no_exact_server_iw"]) for r in summary["evicted"]],
       [("p3", 84, 0, 84)], "the evicted flows")
    eq(sum(r["flows"] for r in summary["handshakes"]), 116, "handshakes")
    amp = reports[("json", "--by", "transport")]["quic_amplification"]
    eq([(r["quic_s_preval"] - 3 * r["quic_c_preval"]) for r in amp], [7], "past the 3x limit")
    eq([(r["name"], r["alpn"], r["retry"]) for r in reports[("json", "--by", "transport")]["quic_versions"]],
       [("v1", "h3", 1)], "QUIC by version")
    for target, d in ((all_db, "s"), (uri, "c")):
        run(["plot", target, "-o", os.path.join(tmp, d)], binary, 0)
    for f in ("iw_histogram.svg", "ff_bytes_cdf.svg", "syn_window.svg", "rtt_vs_ff.svg"):
        eq(open(os.path.join(tmp, "c", f)).read(), open(os.path.join(tmp, "s", f)).read(), f)
    # ClickHouse's own views give SQLite's rows (probes: less its times, each store's own)
    views = [r["name"] for r in rows(all_db, "SELECT name FROM sqlite_master WHERE type = 'view'")]
    assert "server_iw" in views and len(views) >= 8, views
    for v in views:
        cols = [x["name"] for x in rows(all_db, "SELECT name FROM pragma_table_info('%s')" % v)
                if not (v == "probes" and x["name"].endswith(("_us", "_seen", "first", "last")))]
        sel = "SELECT %s FROM %s" % (", ".join(cols), v)
        want = sorted(tuple(str(x) if x is not None else None for x in r.values()) for r in rows(all_db, sel))
        got = sorted(tuple(r.values()) for r in c.shards[0].rows(sel, name))
        eq(got, want, v + " in ClickHouse")


@test("clickhouse-refused-targets-and-password", ("release", "asan"))
def t_ch_refused(binary, tmp):
    """A wrong password, an unknown host, a port nobody listens on, a missing database: one
    line, exit 2, no spool made, the password never printed; report says the same. The
    password may come from CLICKHOUSE_PASSWORD or a file, and never shows in the process list,
    the runs or messages."""
    c, name = ch_database(tmp)
    s = c.shards[0]
    spool = os.path.join(tmp, "never.spool")
    cases = [(s.uri(name, password="wrong-pw"), "Wrong password for user iw"),
             ("clickhouse://iw:pw@no-such-host.invalid/x", "unknown host no-such-host.invalid"),
             (s.uri(name, port=pgserver.free_port()), "nothing answers at 127.0.0.1 port"),
             (s.uri("no_such_db"), "Database no_such_db doesn't exist")]
    for target, want in cases:
        for args in (["-r", truth_pcap(), "-o", target, "--spool", spool], ["report", target]):
            rc, out, err = run(args, binary)
            eq(rc, 2, "exit for %s: %s" % (args[0], err))
            eq(len(err.splitlines()), 1, "one line: " + err)
            assert want in err, err
            assert "wrong-pw" not in err and chserver.PASSWORD not in err, "password shown: " + err
        assert not os.path.exists(spool), "spool created for " + target
    # a usage error that repeats an argument stars its password too
    rc, _, err = run(["report", s.uri(name, password="first-pw"), s.uri(name, password="second-pw")], binary)
    eq(rc, 1, "usage: " + err)
    assert "one database only" in err and "iw:***@" in err, err
    assert "second-pw" not in err, "password shown: " + err  # the URI the message repeats
    # the password from the environment, then from a file
    bare = s.uri(name, password=None)
    env = dict(ENV, CLICKHOUSE_PASSWORD=chserver.PASSWORD)
    r = subprocess.run([binary, "-q", "-r", truth_pcap(), "--probe", "env", "-o", bare, "--spool", spool],
                       env=env, capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, r.stderr)
    pw = os.path.join(tmp, "pw")
    with open(pw, "w") as f:
        f.write(chserver.PASSWORD + "\n")
    _, out, _ = run(["report", bare + "?password_file=" + pw, "--format", "json"], binary, 0)
    eq([x["probe"] for x in json.loads(out)["runs"]], ["env"], "read with the file's password")
    # in the process list while a run goes on: starred
    p = subprocess.Popen([binary, "-r", os.path.join(PCAPS, "demo.pcap"), "--replay=0.5", "--no-ui",
                          "--probe", "ps", "-o", s.uri(name), "--spool", spool],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(1)
    cmdline = open("/proc/%d/cmdline" % p.pid, "rb").read().decode(errors="replace")
    p.kill()
    p.communicate()
    assert chserver.PASSWORD not in cmdline and "iw:*********@" in cmdline, cmdline
    text = s.query("SELECT * FROM runs FINAL FORMAT TabSeparated", name)
    assert chserver.PASSWORD not in text, text


@test("clickhouse-same-source-twice-replace")
def t_ch_replace(binary, tmp):
    """The same capture again into ClickHouse: refused in one line (exit 2, nothing changed);
    --append adds a second run; --replace deletes the earlier runs' rows (ALTER TABLE ...
    DELETE, waited for: gone, not only hidden by FINAL) and takes their place. On a cluster
    --replace is refused in one line: a Distributed table takes no delete."""
    c, name = ch_database(tmp)
    s = c.shards[0]
    src = os.path.join(PCAPS, "demo.pcap")
    base = ["-q", "--no-dpi", "--probe", "p", "--spool", os.path.join(tmp, "sp.db"), "-r", src, "-o"]

    def count(sql, db=name):
        return int(s.query(sql, db))

    run(base + [s.uri(name)], binary, 0)
    n = count("SELECT count() FROM flows FINAL")
    eq(n, 10, "flows")
    rc, _, err = run(base[1:] + [s.uri(name)], binary)
    eq((rc, err.count("\n")), (2, 1), "refused in one line: " + err)
    assert "analysed there before" in err and "%d flows" % n in err and "--replace" in err, err
    eq(count("SELECT count() FROM flows FINAL"), n, "nothing changed")
    run(base + [s.uri(name), "--append"], binary, 0)
    eq(count("SELECT count() FROM flows FINAL"), 2 * n, "--append")
    earlier = ", ".join(r["id"] for r in s.rows("SELECT id FROM runs FINAL", name))
    rc, _, err = run(base[1:] + [s.uri(name), "--replace"], binary, 0)
    assert "replaced 2 earlier runs of %s (%d flows)" % (src, 2 * n) in err, err
    eq(count("SELECT count() FROM runs FINAL"), 1, "runs after --replace")
    eq(count("SELECT count() FROM flows FINAL"), n, "flows after --replace")
    for table, col in (("flows", "run_id"), ("run_decode", "run_id"), ("runs", "id")):
        eq(count("SELECT count() FROM %s WHERE %s IN (%s)" % (table, col, earlier)), 0,
           "rows of the earlier runs left in " + table)
    _, out, _ = run(["report", s.uri(name), "--format", "json"], binary, 0)
    eq([(r["probe"], r["flows"]) for r in json.loads(out)["runs"]], [("p", n)], "the runs reported")
    # a run that ended without a flow (a failed one) is no earlier analysis: the retry goes on
    s.query("ALTER TABLE flows DELETE WHERE 1", name)
    s.query("ALTER TABLE runs UPDATE status = 'failed' WHERE 1", name)
    for _ in range(100):
        if not count("SELECT count() FROM system.mutations WHERE database = currentDatabase() AND NOT is_done"):
            break
        time.sleep(0.1)
    rc, _, err = run(base[1:] + [s.uri(name)], binary)
    eq(rc, 0, "the retry after a failed run without flows: " + err)
    eq(count("SELECT count() FROM flows FINAL"), n, "the retry's flows")
    # a cluster: the rows would have to be deleted on each shard
    c, cl = ch_database(os.path.join(tmp, os.path.basename(tmp) + "_cluster"), cluster=True)
    run(base + [s.uri(cl)], binary, 0)
    rc, _, err = run(base[1:] + [s.uri(cl), "--replace"], binary)
    eq((rc, err.count("\n")), (2, 1), "refused in one line: " + err)
    assert "--replace cannot delete it through Distributed tables" in err and "--append" in err, err
    eq((count("SELECT count() FROM runs FINAL", cl), count("SELECT count() FROM flows FINAL", cl)),
       (1, n), "nothing changed on the cluster")
