# The command line: several files as one capture, standard input, BPF filters, -c, --help;
# bad input gives one clear message, a non-zero exit, and keeps the rows already analysed.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


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
    rc, out, _ = run(["--version"], binary)
    eq(rc, 0, "--version")
    for word in ("iwscope", "libpcap", "nDPI", "SQLite"):
        assert word in out, word
    eq(run(["--bogus"], binary)[0], 1, "unknown option")
    eq(run([], binary)[0], 1, "no input")
    eq(run(["-r", truth_pcap(), "-c", "x"], binary)[0], 1, "bad count")
    eq(run(["report"], binary)[0], 1, "report without a database")


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
