# The command line: several files as one capture, standard input, BPF filters, -c, --help;
# bad input gives one clear message, a non-zero exit, and keeps the rows already analysed.
# Run by tests/run.py with tests/helpers.py's names (see run.py).
import re


@test("several-files-are-one-capture", ("release", "asan"))
def t_multi(binary, tmp):
    """A capture split in two (inside flows) gives the rows of the whole."""
    src = truth_pcap()
    whole = strip_ids(rows(analyse(binary, [src], tmp, ["--no-dpi"], "w.db")))
    data = open(src, "rb").read()
    off, recs = 24, []
    while off < len(data):
        cap = int.from_bytes(data[off + 8:off + 12], "little")
        recs.append(data[off:off + 16 + cap])
        off += 16 + cap
    half = len(recs) // 2
    a, b = os.path.join(tmp, "a.pcap"), os.path.join(tmp, "b.pcap")
    open(a, "wb").write(data[:24] + b"".join(recs[:half]))
    open(b, "wb").write(data[:24] + b"".join(recs[half:]))
    split = strip_ids(rows(analyse(binary, [a, b], tmp, ["--no-dpi"], "s.db")))
    eq(split, whole, "rows")
    r = rows(os.path.join(tmp, "s.db"), "SELECT source, packets FROM runs")[0]
    eq(r["source"], a + " " + b, "source")
    eq(r["packets"], len(recs), "packets")
    # each flow says the file it began in (issue 31 item 6)
    got = [f["source_file"] for f in rows(os.path.join(tmp, "s.db"), "SELECT source_file FROM flows ORDER BY ts_us")]
    assert set(got) == {a, b} and got == sorted(got), got


@test("stdin", ("release", "asan"))
def t_stdin(binary, tmp):
    db = os.path.join(tmp, "i.db")
    run(["-q", "-r", "-", "-o", db, "--no-dpi"], binary, 0, stdin=open(truth_pcap(), "rb").read())
    want = strip_ids(rows(analyse(binary, [truth_pcap()], tmp, ["--no-dpi"], "f.db")))
    eq(strip_ids(rows(db)), want, "rows")


@test("bpf-filter", ("release", "asan"))
def t_filter(binary, tmp):
    cap = truth_pcap()
    all_rows = rows(analyse(binary, [cap], tmp, ["--no-dpi"], "a.db"))
    port = all_rows[0]["client_port"]
    one = rows(analyse(binary, [cap], tmp, ["--no-dpi", "tcp", "port", str(port)], "b.db"))
    eq([r["client_port"] for r in one], [port], "filtered flows")
    eq(rows(os.path.join(tmp, "b.db"), "SELECT filter FROM runs")[0]["filter"], "tcp port %d" % port, "filter")
    ff = os.path.join(tmp, "filter.txt")
    open(ff, "w").write("tcp\nport %d\n" % port)
    viaf = rows(analyse(binary, [cap], tmp, ["--no-dpi", "-F", ff], "c.db"))
    eq(len(viaf), 1, "flows with -F")
    none = rows(analyse(binary, [cap], tmp, ["--no-dpi", "udp"], "d.db"))
    eq(len(none), 0, "flows with udp filter")
    rc, _, err = run(["-r", cap, "-o", os.path.join(tmp, "e.db"), "tcp", "port", "nonsense"], binary)
    eq(rc, 1, "exit status for a bad filter")
    assert "filter" in err and err.count("\n") == 1, err
    assert not os.path.exists(os.path.join(tmp, "e.db")), "bad filter created the database"


@test("count", ("release", "asan"))
def t_count(binary, tmp):
    db = analyse(binary, [truth_pcap()], tmp, ["--no-dpi", "-c", "7"])
    eq(rows(db, "SELECT packets FROM runs")[0]["packets"], 7, "packets")


@test("help-version-usage", ("release", "asan"))
def t_cli(binary, tmp):
    rc, out, _ = run(["--help"], binary)
    eq(rc, 0, "--help")
    for opt in ("-r FILE", "-o DB", "-c COUNT", "-F", "--timing", "report"):
        assert opt in out, opt
    # what a row holds beyond the verdicts (issue 31: the file, the class "small", nDPI's method)
    for word in ("source_file (the -r file the flow began in", "small: below ten segments",
                 "dpi_method (how sure nDPI was: payload, offport, guess, none", '"MQTT?"'):
        assert word in " ".join(out.split()), word
    # QUIC is in the description, and --no-dpi says what it leaves (the QUIC name stays)
    flat = " ".join(out.split())
    assert "every TCP handshake and QUIC connection" in flat, flat
    assert "--no-dpi do not run nDPI (app_proto stays NULL, server_name too but on QUIC rows" in flat, flat
    man = open(os.path.join(ROOT, "man", "iwscope.1")).read()
    assert "iwscope \\- measure TCP and QUIC initial windows" in man.split(".SH SYNOPSIS")[0], "man NAME"
    assert "but on QUIC rows" in man.split("no\\-dpi", 2)[2][:300], "man --no-dpi"
    db = analyse(binary, [truth_pcap(), os.path.join(PCAPS, "quic", "curl-google.pcap")], tmp, ["--no-dpi"])
    eq(sorted({(r["transport"], r["server_name"]) for r in rows(db)}),
       [("quic", "www.google.de"), ("tcp", None)], "--no-dpi: names as the help says")
    rc, out, _ = run(["--version"], binary)
    eq(rc, 0, "--version")
    for word in ("iwscope", "libpcap", "nDPI", "SQLite"):
        assert word in out, word
    eq(run(["--bogus"], binary)[0], 1, "unknown option")
    eq(run([], binary)[0], 1, "no input")
    eq(run(["-r", truth_pcap(), "-c", "x"], binary)[0], 1, "bad count")
    eq(run(["report"], binary)[0], 1, "report without a database")


@test("version-memory-matches-readme")
def t_version_memory(binary, tmp):
    """--version states the bytes an open flow holds (struct flow, its buckets, the DPI stage's
    state) and nDPI's per-flow state; README's Memory section states the same figures."""
    rc, out, _ = run(["--version"], binary)
    eq(rc, 0, "--version")
    m = re.search(r"memory: (\d+) bytes per open flow, plus (\d+) bytes of nDPI state", out)
    assert m, out
    readme = open(os.path.join(ROOT, "README.md")).read()
    mem = readme[readme.index("### Memory"):readme.index("## How we know it is right")]
    assert "**%s bytes per open flow**" % m.group(1) in mem, "README says another flow size than %s" % m.group(1)
    assert "**%s bytes of nDPI flow state" % m.group(2) in mem, "README says another nDPI size than %s" % m.group(2)
    assert re.search(r"flow table: \d+ open flows at most by default", out), out
    return "%s + %s bytes" % (m.group(1), m.group(2))


# Bad input

@test("missing-file", ("release", "asan"))
def t_missing(binary, tmp):
    rc, _, err = run(["-r", os.path.join(tmp, "nope.pcap"), "-o", os.path.join(tmp, "m.db")], binary)
    eq(rc, 2, "exit")
    assert "nope.pcap" in err and "No such file" in err, err


@test("garbage-file", ("release", "asan"))
def t_garbage(binary, tmp):
    g = os.path.join(tmp, "garbage.pcap")
    open(g, "wb").write(os.urandom(4096))
    rc, _, err = run(["-r", g, "-o", os.path.join(tmp, "g.db")], binary)
    eq(rc, 2, "exit")
    assert "garbage.pcap" in err, err


@test("cut-mid-record-keeps-rows", ("release", "asan"))
def t_cut(binary, tmp):
    cut = cut_pcap(tmp)
    db = os.path.join(tmp, "c.db")
    rc, _, err = run(["-q", "--no-dpi", "-r", cut, "-o", db], binary)
    eq(rc, 2, "exit")
    assert "cut.pcap" in err and "truncated" in err, err
    got = rows(db)
    assert len(got) >= 2, "rows analysed before the cut were lost"
    eq(rows(db, "SELECT status, skipped_files FROM runs")[0], {"status": "failed", "skipped_files": 1}, "run")


# Errors that say why (issue 31 item 4)

@test("errors-say-why", ("release", "asan"))
def t_errors_say_why(binary, tmp):
    """-o into a missing folder, report of a missing file, -r DIRECTORY, a gzip-compressed
    capture: each one line that says what and why (not SQLite's "unable to open database file"),
    and -r DIRECTORY creates nothing."""
    cap = truth_pcap()
    rc, _, err = run(["-q", "-r", cap, "-o", os.path.join(tmp, "nope", "x.db")], binary)
    eq(rc, 2, "-o into a missing folder")
    assert "directory %s does not exist" % os.path.join(tmp, "nope") in err and err.count("\n") == 1, err
    rc, _, err = run(["report", os.path.join(tmp, "nonexist.db")], binary)
    eq(rc, 2, "report of a missing file")
    eq(err, "iwscope: report: %s: no such file\n" % os.path.join(tmp, "nonexist.db"), "report")
    folder = os.path.join(tmp, "dir")
    os.mkdir(folder)
    db = os.path.join(tmp, "d.db")
    rc, _, err = run(["-q", "-r", folder, "-r", cap, "-o", db], binary)
    eq((rc, err), (2, "iwscope: %s: is a directory, not a capture file\n" % folder), "-r DIRECTORY")
    assert not os.path.exists(db), "-r DIRECTORY left a database"
    gz = os.path.join(tmp, "t.pcap.gz")
    import gzip
    open(gz, "wb").write(gzip.compress(open(cap, "rb").read()))
    rc, _, err = run(["-q", "-r", gz, "-o", os.path.join(tmp, "g.db")], binary)
    eq(rc, 2, "only a gzip file")
    assert "gzip-compressed" in err and "zcat %s | iwscope -r -" % gz in err, err


@test("read-only-folder-says-permission-denied")
def t_readonly_folder(binary, tmp):
    """-o into a folder this user may not write: "Permission denied", not SQLite's words (run
    as nobody when root, as root can write anywhere)."""
    folder = os.path.join(tmp, "ro")
    os.mkdir(folder)
    os.chmod(folder, 0o555)
    os.chmod(tmp, 0o755)
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            raise Skip("root without setpriv: root writes any folder")
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    r = subprocess.run(prefix + [binary, "-q", "-r", truth_pcap(), "-o", os.path.join(folder, "x.db")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    err = r.stderr.decode()
    eq(r.returncode, 2, err)
    assert "cannot create the database in %s: Permission denied" % folder in err, err


@test("failed-empty-run-does-not-block-the-retry", ("release",))
def t_failed_empty_retry(binary, tmp):
    """A run that failed without writing a flow is no earlier analysis: the same files run
    again without --replace."""
    cap = truth_pcap()
    db = analyse(binary, [cap], tmp, ["--no-dpi"])
    con = sqlite3.connect(db)
    con.execute("DELETE FROM flows")
    con.execute("UPDATE runs SET status = 'failed', flows = 0")
    con.commit()
    con.close()
    run(["-q", "--no-dpi", "-r", cap, "-o", db], binary, 0)
    eq(count_rows(db), 4, "flows of the retry")
    rc, _, err = run(["-q", "--no-dpi", "-r", cap, "-o", db], binary)
    eq(rc, 2, "a run with flows still blocks: " + err)
    assert "--replace" in err, err
    # any run that ended without a flow is no earlier analysis (interrupted, partial, complete:
    # a capture without TCP); one still 'running' without flows may be another iwscope reading
    # the same files now, and blocks, saying so
    for status, blocks in (("interrupted", False), ("partial", False), ("complete", False),
                           ("running", True)):
        con = sqlite3.connect(db)
        con.execute("DELETE FROM flows")
        con.execute("DELETE FROM runs WHERE id <> (SELECT max(id) FROM runs)")
        con.execute("UPDATE runs SET status = ?, flows = 0, finished_us = CASE WHEN ? = 'running' "
                    "THEN NULL ELSE finished_us END", (status, status))
        con.commit()
        con.close()
        rc, _, err = run(["-q", "--no-dpi", "-r", cap, "-o", db], binary)
        eq(rc, 2 if blocks else 0, "a %s run without flows: %s" % (status, err))
        if blocks:
            assert "is being analysed here (run " in err and "still running, no flows yet" in err and \
                err.rstrip().endswith("--replace analyses it again in its place, --append adds it a second "
                                      "time"), err
            eq(count_rows(db), 0, "flows beside the running run")
        else:
            eq(count_rows(db), 4, "flows of the retry after a %s run without flows" % status)


@test("refused-retry-names-cause-and-hint", ("release",))
def t_refused_retry_long_source(binary, tmp):
    """Running a long -r list again (runs.source of 12,000 characters) is refused with one
    line that ends in the cause and the --replace hint: the list is shown as its first file and
    a count (it was cut at 1,024 bytes, in the middle of a path)."""
    files = []
    for i in range(120):
        f = os.path.join(tmp, "capture-from-a-probe-with-a-long-descriptive-name-%03d.pcap" % i)
        os.symlink(truth_pcap(), f)
        files.append(f)
    args = ["-q", "--no-dpi", "-o", os.path.join(tmp, "m2.db")]
    for f in files:
        args += ["-r", f]
    assert len(" ".join(files)) > 8000, len(" ".join(files))
    run(args, binary, 0)
    rc, _, err = run(args, binary)
    eq(rc, 2, "the second run: " + err)
    eq(err.count("\n"), 1, "one line: " + err)
    want = ("iwscope: %s: %s (and 119 more files) was analysed here before (run " %
            (os.path.join(tmp, "m2.db"), files[0]))
    assert err.startswith(want), (want, err)
    assert err.rstrip().endswith(" flows): --replace analyses it again in its place, --append adds it a "
                                 "second time"), err
    assert " 4 flows): " in err, err


# Runs over many files (issue 31 item 6)

@test("skipped-files-listed-partial-exit-3", ("release", "asan"))
def t_skipped_listed(binary, tmp):
    """A file of an unsupported link type among good ones: the others are analysed, the run is
    'partial' with exit status 3 (not 2: failed), the summary and runs.skipped list the file and
    why, the report shows it; each flow names its file; runs.source is whole past 4,095
    characters."""
    good = truth_pcap()
    bad = os.path.join(tmp, "wifi.pcap")
    craft.write_pcap(bad, [(1.0, b"\x00" * 40)], linktype=105)  # 802.11
    # long names: the whole list is more than 4,095 characters
    long_good = os.path.join(tmp, "g" * 200 + ".pcap")
    shutil.copy(good, long_good)
    bads = [bad]
    for i in range(20):
        bads.append(os.path.join(tmp, "%02d" % i + "w" * 200 + ".pcap"))
        shutil.copy(bad, bads[-1])
    db = os.path.join(tmp, "s.db")
    args = ["--no-dpi"]
    for f in bads + [long_good]:
        args += ["-r", f]
    rc, _, err = run(args + ["-o", db], binary)
    eq(rc, 3, "exit status: " + err)
    assert "21 input files not read whole" in err and "%s: unsupported link type" % bad in err, err
    assert "... and more" in err, err  # 20 lines at most on stderr
    r = rows(db, "SELECT status, skipped_files, skipped, source FROM runs")[0]
    eq((r["status"], r["skipped_files"]), ("partial", 21), "run")
    assert r["skipped"].startswith(bad + ": unsupported link type IEEE802_11"), r["skipped"]
    eq(len(r["skipped"].split("\n")), 21, "a line per file skipped")
    eq(r["source"], " ".join(bads + [long_good]), "source whole (%d characters)" % len(r["source"]))
    assert len(r["source"]) > 4095
    eq({f["source_file"] for f in rows(db)}, {long_good}, "flows' source_file")
    _, out, _ = run(["report", db], binary, 0)
    assert "unsupported link type" in out and "wifi.pcap" in out, out
    # every file skipped: nothing analysed, failed
    rc, _, err = run(["-q", "-r", bad, "-o", os.path.join(tmp, "n.db")], binary)
    eq(rc, 2, "every file skipped: " + err)
