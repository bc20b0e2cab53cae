# Issue 21 (live capture and replay): a pipe on stdin read as live; --replay cuts long
# silences of capture time. Exec'd by tests/run.py with its helpers.
import signal  # noqa: E402


def retimed_capture(tmp, name, new_time):
    """The truth capture with record i's time (us) set to new_time(i, times), where times are
    all the records' own, in order."""
    data = open(truth_pcap(), "rb").read()
    off, recs = 24, []
    while off < len(data):
        cap = int.from_bytes(data[off + 8:off + 12], "little")
        recs.append(bytearray(data[off:off + 16 + cap]))
        off += 16 + cap
    times = [int.from_bytes(r[0:4], "little") * 1000000 + int.from_bytes(r[4:8], "little") for r in recs]
    for i, r in enumerate(recs):
        t = new_time(i, times)
        r[0:4] = (t // 1000000).to_bytes(4, "little")
        r[4:8] = (t % 1000000).to_bytes(4, "little")
    out = os.path.join(tmp, name)
    open(out, "wb").write(data[:24] + b"".join(bytes(r) for r in recs))
    return out


def shifted_capture(tmp, gap_us):
    """The truth capture with its second half gap_us later (a capture that jumps)."""
    return retimed_capture(tmp, "jump.pcap",
                           lambda i, ts: ts[i] + gap_us if i >= len(ts) // 2 else ts[i])


@test("replay-cuts-long-silences", ("release", "asan"))
def t_replay_gaps(binary, tmp):
    """A capture that jumps 5.8 years replays (5 times its pace) in seconds: the silence is cut to
    --max-gap (default 5 s) and said; the rows are the offline rows (flows keep their own
    times). --max-gap 0.5 cuts it shorter still."""
    jump = shifted_capture(tmp, int(5.8 * 365.25 * 86400 * 1e6))
    want = strip_ids(rows(analyse(binary, [jump], tmp, ["--no-dpi"], "off.db")))
    for extra, most in (([], 8.0), (["--max-gap", "0.5"], 6.0)):
        db = os.path.join(tmp, "r%d.db" % len(extra))
        t0 = time.monotonic()
        rc, out, err = run(["--no-dpi", "--replay=5", "--no-ui", "-r", jump, "-o", db] + extra, binary,
                           timeout=60)
        took = time.monotonic() - t0
        eq(rc, 0, "exit: " + err)
        assert "replay skipped 5.8 years of idle capture (1 gap over %s s)" % (extra[1] if extra else "5") \
            in err, err
        assert took < most, "replay took %.1f s" % took
        eq(strip_ids(rows(db)), want, "rows " + " ".join(extra))
    eq(run(["--max-gap", "x", "-r", jump], binary)[0], 1, "bad --max-gap")


@test("replay-says-it-cut-a-silence-on-screen")
def t_replay_gap_screen(binary, tmp):
    """The dashboard's title line says what the replay skipped."""
    if not shutil.which("tmux"):
        raise Skip("tmux not installed")
    jump = shifted_capture(tmp, int(5.8 * 365.25 * 86400 * 1e6))
    db = os.path.join(tmp, "g.db")
    tmux("new-session", "-d", "-s", "gap", "-x", "140", "-y", "30",
         "%s --replay --max-gap 1 -r %s -o %s --no-dpi" % (binary, jump, db))
    try:
        seen = wait_for(lambda: "skipped 5.8 years idle" in
                        tmux("capture-pane", "-p", "-t", "gap").stdout, 20, "the note on screen")
        eq(seen, True, "note")
    finally:
        tmux("send-keys", "-t", "gap", "q")
        time.sleep(0.5)
        tmux("kill-session", "-t", "gap")


def live_timed_capture(tmp):
    """The truth capture with its times moved to end now, as tcpdump -w - on a live interface
    would write them."""
    now = int(time.time() * 1e6)
    return retimed_capture(tmp, "now.pcap", lambda i, ts: ts[i] + now - ts[-1])


@test("pipe-that-stays-open-is-read-as-live", ("release", "asan"))
def t_pipe_open(binary, tmp):
    """tcpdump -w - | iwscope -r -: with the writer still there (its packets' times follow the
    wall clock), the flows are in the database within two seconds (committed, WAL for readers),
    not at the end of input; when the pipe closes the rows equal the file's; SIGINT while it
    waits ends the run at once, interrupted, without an error."""
    cap = live_timed_capture(tmp)
    want = strip_ids(rows(analyse(binary, [cap], tmp, ["--no-dpi"], "file.db")))
    for stop in ("eof", "sigint"):
        db = os.path.join(tmp, "pipe-%s.db" % stop)
        p = subprocess.Popen([binary, "-q", "--no-dpi", "-r", "-", "-o", db], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        p.stdin.write(open(cap, "rb").read())
        p.stdin.flush()
        t0 = time.monotonic()
        wait_for(lambda: (count_rows(db) or 0) >= len(want) - 1, 10, "rows while the pipe is open")
        assert time.monotonic() - t0 < 2.5, "rows came after %.1f s" % (time.monotonic() - t0)
        eq(count_rows(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 1, "still running")
        eq(rows(db, "PRAGMA journal_mode")[0]["journal_mode"], "wal", "journal")
        if stop == "eof":
            p.stdin.close()
        else:
            p.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        p.wait(timeout=10)
        err = p.stderr.read()
        if not p.stdin.closed:
            p.stdin.close()
        assert time.monotonic() - t0 < 3, "took %.1f s to end" % (time.monotonic() - t0)
        status = rows(db, "SELECT status FROM runs")[0]["status"]
        if stop == "eof":
            eq((p.returncode, status), (0, "complete"), err.decode())
            eq(strip_ids(rows(db)), want, "rows")
        else:
            eq((p.returncode, status, err.decode()), (0, "interrupted", ""), "SIGINT")
