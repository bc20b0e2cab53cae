# Threads: reading a file on one thread, nDPI and the writes on others; the same rows as one
# thread, the default thread count, ThreadSanitizer.
# Run by tests/run.py with tests/helpers.py's names (see run.py).

# dpi_peak_states is left out: it is counted in whichever nDPI context ran (the stage's with two threads)
RUN_COUNTERS = "SELECT packets, bytes, tcp_packets, decode_errors, flows, evicted FROM runs"


def thread_captures(tmp):
    caps = [os.path.join(PCAPS, "demo.pcap"), keepalive_pcap(tmp), mixed_pcap(tmp)]
    caps += sorted(glob.glob(os.path.join(PCAPS, "dpi", "*.pcap")))
    caps += sorted(glob.glob(os.path.join(PCAPS, "truth", "*.mid.pcap")))
    return caps


@test("threads-give-the-same-rows", ("release",))
def t_threads_same(binary, tmp):
    """--threads 1 and 2 write the same rows and run counters, capture by capture (nDPI sees
    each flow's packets in the same order on its own thread). Release only: the ASan build runs
    the two-thread path on every capture of shared-captures, and TSan has its own test."""
    def both(i, cap):
        got = {}
        for t in ("1", "2"):
            db = analyse(binary, [cap], tmp, ["--threads", t], "t%d-%s.db" % (i, t))
            got[t] = (comparable(rows(db, "SELECT * FROM flows")), rows(db, RUN_COUNTERS))
        return got

    caps = thread_captures(tmp)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        runs = list(pool.map(both, range(len(caps)), caps))  # one capture per core at a time
    n = 0
    for cap, got in zip(caps, runs):
        eq(got["2"][1], got["1"][1], "run counters, --threads 2 vs 1 on " + cap)
        if got["2"][0] != got["1"][0]:
            diff = [(x, y) for x, y in zip(got["2"][0], got["1"][0]) if x != y][:1]
            raise AssertionError("rows differ, --threads 2 vs 1 on %s: %r" % (cap, diff))
        n += len(got["1"][0])
    assert n > 40, n
    return "%d flows alike" % n


@test("threads-default-follows-usable-cpus")
def t_threads_default(binary, tmp):
    """--threads defaults to 2, or to 1 when the process may run on one CPU only (a second
    thread there only slows it down); an explicit --threads is kept. Counted in /proc while
    iwscope waits on a capture file that is a named pipe (standard input that is a pipe is
    read on one thread, as live capture)."""
    if not shutil.which("taskset"):
        raise Skip("no taskset")
    def threads(prefix, extra):
        n = len(os.listdir(tmp))
        fifo, db = os.path.join(tmp, "f%d.pcap" % n), os.path.join(tmp, "t%d.db" % n)
        os.mkfifo(fifo)
        p = subprocess.Popen(list(prefix) + [binary, "-q", "-r", fifo, "-o", db] + list(extra),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        w = open(fifo, "wb")
        try:
            w.write(open(truth_pcap(), "rb").read()[:24])
            w.flush()
            wait_for(lambda: os.path.exists(db) and count_rows(db, "SELECT count(*) FROM runs"), 10,
                     "the run to begin")
            time.sleep(0.3)
            return len(os.listdir("/proc/%d/task" % p.pid))
        finally:
            w.close()
            p.wait(timeout=30)
            eq(p.returncode, 0, "exit: " + p.stderr.read().decode())

    one_cpu = ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    eq(threads(one_cpu, []), 1, "threads on one CPU, by default")
    eq(threads(one_cpu, ["--threads", "2"]), 2, "threads on one CPU with --threads 2")
    want = 2 if len(os.sched_getaffinity(0)) >= 2 else 1
    eq(threads([], []), want, "threads by default on %d CPUs" % len(os.sched_getaffinity(0)))
    eq(threads([], ["--threads", "1"]), 1, "threads with --threads 1")


@test("threads-race-free-under-tsan")
def t_tsan(binary, tmp):
    """ThreadSanitizer on the threaded path over 1000 cloned flows (tools/benchgen): no data
    race, and the rows of the single-threaded release build. The capture is large enough for
    both threads to be busy at once: the stage runs every flow's nDPI and writes every row
    while the reading thread tracks the next flows."""
    gen = os.path.join(ROOT, "build", "benchgen")
    if not os.path.exists(TSAN_BIN) or not os.path.exists(gen):
        raise AssertionError("make tsan and build/benchgen first (make test does)")
    srcs = [os.path.join(PCAPS, "dpi", "apps.server.pcap")] + \
        sorted(glob.glob(os.path.join(PCAPS, "truth", "iw*.server.pcap")))[:4]
    cap = os.path.join(tmp, "clones.pcap")
    subprocess.run([gen, cap, "1000", "100"] + srcs, check=True, stdout=subprocess.DEVNULL)
    ref = analyse(REL, [cap], tmp, ["--threads", "1"], "ref.db")
    want = comparable(rows(ref, "SELECT * FROM flows"))
    for t in ("2",):
        db = os.path.join(tmp, "t%s.db" % t)
        r = subprocess.run([TSAN_BIN, "-q", "-r", cap, "-o", db, "--threads", t],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, TSAN_OPTIONS="halt_on_error=1:exitcode=66"))
        assert "ThreadSanitizer" not in r.stderr, r.stderr[-3000:]
        eq(r.returncode, 0, "tsan run: " + r.stderr[-500:])
        eq(comparable(rows(db, "SELECT * FROM flows")), want, "rows with --threads " + t)
    return "%d flows, no race" % len(want)
