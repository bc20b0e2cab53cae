#!/usr/bin/env python3
"""iwscope test suite: runs every test against the release build and (where marked) the
ASan+UBSan build, prints PASS / FAIL / SKIP per test and ends with `N passed, N failed`.

    python3 tests/run.py [-k SUBSTRING]... [-v] [--list] [--jobs N] [--times [N]]

-k selects the tests whose name holds SUBSTRING; given more than once, those that hold any.
--jobs N runs N tests side by side (default: 2 where the process may use two CPUs, else 1),
and with N > 1 the WAITING areas in one job more.
--times [N] prints, before the totals, the N slowest tests (default 15) with each one's wall
time and the CPU time it and the processes it started used.

The tests are in tests/area_*.py, one file per area, run in the order of the file names. Each
registers its tests with @test and uses tests/helpers.py's names (run, rows, analyse, eq, Skip,
tmux, chromium, pg_database, ...) without importing them: each file is run in a namespace of its
own that starts as a copy of helpers.py's, so a name one area file defines is its own; what two
areas share lives in helpers.py.

Side by side: each job is a process forked after the areas are loaded, which asks this one for
its next test and reports how it went. The tests of an area in BUNDLED run in one job, in
order (they share a server the job starts, or a pool their first test starts). The tests that
time the machine (a live capture, a replay, a delay line, a signal in the middle of a run:
ALONE) run last, with none of the others beside them: side by side with each other only, on
--jobs jobs (each makes network namespaces of its own, named with its process id; they mostly
wait, for a replay's pace or a lab's traffic), and beside them, at the lowest priority, the
BACKGROUND tests, which only compute. Then the truth labs made again live (SOLO: their delay
lines and applications are timed to the millisecond), one at a time with nothing beside them.
Within each part the units in LONG start first.
The WAITING areas (the PostgreSQL and ClickHouse servers' tests, which mostly wait for them,
and the dashboard's and Chromium's) run in one more job beside the others.
"""
import glob
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import helpers  # noqa: E402

# areas whose tests share one job: the suite's PostgreSQL server, its ClickHouse cluster, a
# tmux server, the golden lines' pool of runs
BUNDLED = ("area_pg", "area_ch", "area_ui", "area_golden")
# what the machine's timing decides: live capture, replay, the truth labs' delay lines, SIGINT
ALONE = ("live", "replay", "sigint", "pipe-that-stays-open")
# ... and of those, the ones run with nothing at all beside them: the truth labs made again
SOLO = ("truth-lab-live", "quictruth-lab-live")
# BUNDLED areas that wait much (for their servers to start, stop and come back, for Chromium,
# for a dashboard under tmux: a tenth to a half of their time on a CPU): run one after another
# in a job of their own beside the --jobs others
WAITING = ("area_pg", "area_ch", "area_ui")
# ... at a higher priority than the others (where the runner may raise it: root): their
# servers restart within a probe's replay and their dashboards answer within set times, and
# the little CPU they want is theirs at once
WAITING_NICE = -5
# long tests that only compute (no time limit, no timing, no server; each reads captures one
# per core at a time): run beside the ALONE ones, which mostly wait, at the lowest priority
# (nice 19): the CPU an ALONE test wants is its own at once
BACKGROUND = ("truth-under-users-conditions[release]", "real-verdicts-read-by-eye[release]")
# the longest tests (or BUNDLED areas), longest first (tests/run.py --times): started first so
# that no job is left running a long one alone at the end. Only the order: every test runs.
LONG = ("shared-captures[asan]", "area_ui", "tshark-crosscheck-test-captures[asan]",
        "fuzz-smoke[release]", "quictruth-conditions[release]",
        "names-vs-tshark-shared-captures[release]", "threads-give-the-same-rows[release]",
        "quic-connections-as-tshark-sees-them[asan]")


def load_areas():
    """Runs every tests/area_*.py, each in a fresh namespace seeded with helpers.py's names;
    returns (name, fn, binary, area) in order."""
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "area_*.py"))):
        area_name = os.path.basename(path)[:-3]
        n = len(helpers.TESTS)
        area = dict(vars(helpers), __name__=area_name, __file__=path)
        exec(compile(open(path).read(), path, "exec"), area)
        out += [t + (area_name,) for t in helpers.TESTS[n:]]
    return out


def cpu_seconds():
    """User and system time of this process and of the children it has waited for."""
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF,
               resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))


CPU = {}  # test name -> CPU seconds (this process's tests; a job reports its own)


def run_one(name, fn, binary, verbose):
    """Runs one test in a directory of its own: (status, seconds, text to print). Its CPU time
    (the test's and its waited-for children's: tests run one at a time in a process) goes to
    CPU."""
    tmp = tempfile.mkdtemp(prefix="iwscope-test-")
    start, cpu = time.time(), cpu_seconds()
    try:
        note = fn(binary, tmp)
        return "PASS", time.time() - start, "  " + note if note else ""
    except helpers.Skip as e:
        return "SKIP", time.time() - start, str(e)
    except Exception as e:  # noqa: BLE001 - every failure is reported the same way
        msg = str(e) if isinstance(e, AssertionError) and not verbose else traceback.format_exc()
        lines = msg.splitlines()[:40 if not verbose else 400]
        return "FAIL", time.time() - start, "".join("\n     " + line for line in lines)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        CPU[name] = cpu_seconds() - cpu


class Tally:
    def __init__(self):
        self.n = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        self.times = []  # (wall seconds, CPU seconds, name)

    def show(self, name, status, secs, text, cpu=None):
        self.n[status] += 1
        self.times.append((secs, CPU.get(name) if cpu is None else cpu, name))
        if status == "SKIP":
            print("SKIP %-48s %s" % (name, text))
        else:
            print("%s %-48s %5.1fs%s" % (status, name, secs, text))
        sys.stdout.flush()


def units_of(tests):
    """The side-by-side part as units a job takes whole (a BUNDLED area's tests, or one test),
    the ALONE tests and the SOLO ones, one a unit: lists of indices into tests."""
    units, alone, solo, bundles = [], [], [], {}
    for i, (name, _, _, area) in enumerate(tests):
        if any(a in name for a in SOLO):
            solo.append(i)
        elif any(a in name for a in ALONE):
            alone.append(i)
        elif area in BUNDLED:
            if area not in bundles:
                bundles[area] = []
                units.append(bundles[area])
            bundles[area].append(i)
        else:
            units.append([i])
    return by_length(units, tests), by_length([[i] for i in alone], tests), [[i] for i in solo]


def by_length(units, tests):
    """units with those holding a LONG test or area first, in LONG's order (a stable sort)."""
    def rank(u):
        for k, long in enumerate(LONG):
            if any(long in (tests[i][0], tests[i][3]) for i in u):
                return k
        return len(LONG)
    return sorted(units, key=rank)


def job(tests, units, verbose, ask, answer):
    """A forked job: asks for a unit (an index into units, or -1 to stop) and reports each test
    of it as one JSON line."""
    r, w = os.fdopen(answer, "r"), os.fdopen(ask, "w")
    w.write("ready\n")
    w.flush()
    for line in r:
        u = int(line)
        if u < 0:
            break
        for i in units[u]:
            name, fn, binary, _ = tests[i]
            status, secs, text = run_one(name, fn, binary, verbose)
            w.write(json.dumps([i, status, secs, text, CPU[name]]) + "\n")
            w.flush()
        w.write("ready\n")
        w.flush()
    w.close()
    sys.exit(0)  # the servers this job started stop (atexit)


def side_by_side(tests, lanes, verbose, tally):
    """Runs the units of each lane, a list of (units, number of jobs, niceness), on that many
    forked jobs of its own, at that niceness; returns how many tests they held."""
    units = [u for lane, _, _ in lanes for u in lane]
    queues, first = [], 0
    for lane, _, _ in lanes:
        queues.append(list(range(first, first + len(lane))))
        first += len(lane)
    workers = {}  # fd it reports on -> (pid, file it reads its units from, read buffer, lane)
    for q, (lane, jobs, nice) in enumerate(lanes):
        for _ in range(min(jobs, len(lane))):
            ask_r, ask_w = os.pipe()
            ans_r, ans_w = os.pipe()
            sys.stdout.flush()  # else a job would print what the runner had buffered again
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                if nice:
                    try:
                        os.nice(nice)  # inherited by every process its tests start
                    except OSError:
                        pass  # a higher priority needs root: as the others then
                os.close(ask_r)
                os.close(ans_w)
                for fd, _w in workers.items():
                    os.close(fd)
                    _w[1].close()
                job(tests, units, verbose, ask_w, ans_r)
            os.close(ask_w)
            os.close(ans_r)
            workers[ask_r] = (pid, os.fdopen(ans_w, "w"), b"", q)
    while workers:
        ready, _, _ = select.select(list(workers), [], [])
        for fd in ready:
            pid, tell, buf, q = workers[fd]
            data = os.read(fd, 65536)
            if not data:  # the job ended (or died: its tests were not reported)
                os.waitpid(pid, 0)
                tell.close()
                os.close(fd)
                del workers[fd]
                continue
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line == b"ready":
                    tell.write("%d\n" % (queues[q].pop(0) if queues[q] else -1))
                    tell.flush()
                else:
                    i, status, secs, text, cpu = json.loads(line)
                    tally.show(tests[i][0], status, secs, text, cpu)
            workers[fd] = (pid, tell, buf, q)
    return sum(len(u) for u in units)


def main():
    # A shell runs a command put in the background with SIGINT and SIGQUIT ignored, and every
    # process the tests start would inherit that: the lab's servers, delay lines and tcpdump
    # would then outlive the SIGINT that ends them (each stop waiting out its 5 s timeout). A
    # handler of our own is reset to the default in every child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, lambda *_: sys.exit(131))
    args = sys.argv[1:]
    # what tshark read, shared by the jobs (tests/tshark_check.py reads it when used)
    # every test's files in one folder, in memory where there is room (see scratch_root)
    top = tempfile.mkdtemp(prefix="iwscope-tests-", dir=scratch_root())
    os.chmod(top, 0o755)  # the servers run as postgres and clickhouse, -Z drops to nobody
    tempfile.tempdir = top
    os.environ["TMPDIR"] = top
    shared_tmp = os.path.join(top, "shared")
    os.mkdir(shared_tmp)
    os.environ["IWSCOPE_TSHARK_CACHE"] = shared_tmp
    os.environ["IWSCOPE_TEST_SESSION"] = str(os.getpid())  # names its tmux server (helpers.py)
    # iwscope runs several tests make alike, made once (tests/runcache.py)
    os.environ["IWSCOPE_RUN_CACHE"] = os.path.join(top, "runs")
    os.mkdir(os.environ["IWSCOPE_RUN_CACHE"])
    me = os.getpid()
    try:
        return run_all(args)
    finally:
        if os.getpid() == me:  # not as a job exits (sys.exit in a forked job comes here too)
            shutil.rmtree(top, ignore_errors=True)
            if shutil.which("tmux"):  # the session's tmux server and the socket tmux leaves
                helpers.tmux("kill-server")
                sock = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), "tmux-%d" % os.getuid(),
                                    helpers.tmux_server())
                if os.path.exists(sock):
                    os.unlink(sock)


SCRATCH_FREE = 3 << 30  # the suite's files took ~0.5 GB at most at a time here


def scratch_root():
    """A tmpfs for the tests' files (/dev/shm) where it has SCRATCH_FREE bytes free, else None
    (TMPDIR, /tmp). SQLite syncs every transaction to disk: each iwscope run here waited ~60 ms
    for it on a disk, nothing on a tmpfs, and the suite makes thousands of databases. What the
    tests assert does not depend on the file system (a test that needs one of a kind, a full
    or a read-only one, mounts its own). TMPDIR set by the caller is kept."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        st = os.statvfs("/dev/shm")
        mounts = open("/proc/mounts").read().split("\n")
    except OSError:
        return None
    tmpfs = any(m.split()[1:3] == ["/dev/shm", "tmpfs"] for m in mounts if m.strip())
    if not tmpfs or not os.access("/dev/shm", os.W_OK) or st.f_bavail * st.f_frsize < SCRATCH_FREE:
        return None
    return "/dev/shm"


def show_times(tally, n):
    """The n slowest tests: wall and CPU seconds (CPU: the test's own process and every process
    it started and waited for, over all cores; above the wall time where they ran in parallel)."""
    wall = sum(t[0] for t in tally.times)
    cpu = sum(t[1] or 0 for t in tally.times)
    print("slowest %d of %d tests (wall s, CPU s); all tests: %.0f s wall, %.0f s CPU" % (
        min(n, len(tally.times)), len(tally.times), wall, cpu))
    for secs, c, name in sorted(tally.times, key=lambda t: -t[0])[:n]:
        print("  %7.1f %7.1f  %s" % (secs, c or 0, name))


def usage_error(args):
    """The first argument run_all does not take, or None: an unknown option or a missing value
    must not start the whole suite."""
    i = 0
    while i < len(args):
        if args[i] == "--times":  # an optional count
            i += 2 if i + 1 < len(args) and args[i + 1].isdigit() else 1
        elif args[i] in ("-k", "--jobs"):
            if i + 1 == len(args):
                return "%s needs a value" % args[i]
            if args[i] == "--jobs" and not args[i + 1].isdigit():
                return "--jobs takes a number, not %r" % args[i + 1]
            i += 2
        elif args[i] in ("-v", "--list"):
            i += 1
        else:
            return "unknown argument %r" % args[i]
    return None


def run_all(args):
    if "-h" in args or "--help" in args:
        print(__doc__.strip())
        return 0
    bad = usage_error(args)
    if bad:
        print("tests/run.py: %s (see --help)" % bad, file=sys.stderr)
        return 2
    pats = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-k"]
    tests = [t for t in load_areas() if not pats or any(p in t[0] for p in pats)]
    helpers.SELECTED[:] = [t[0] for t in tests]
    if "--list" in args:
        for t in tests:
            print(t[0])
        print("%d tests" % len(tests))
        return 0
    verbose = "-v" in args
    jobs = int(args[args.index("--jobs") + 1]) if "--jobs" in args[:-1] else \
        min(2, len(os.sched_getaffinity(0)))
    tally = Tally()
    t0 = time.time()
    units, alone, solo = units_of(tests)
    waiting = [u for u in units if tests[u[0]][3] in WAITING]
    background = [u for u in units if any(tests[i][0] in BACKGROUND for i in u)]
    units = [u for u in units if u not in waiting and u not in background]
    # the WAITING areas in a lane of their own beside the others; then the ALONE tests, and the
    # BACKGROUND ones at the lowest priority on a job of their own; then the SOLO ones, one at
    # a time
    for part in ([(units, jobs, 0), (waiting, 1, WAITING_NICE)], [(alone, jobs, 0), (background, 1, 19)],
                 [(solo, 1, 0)]):
        if jobs > 1:
            before = sum(tally.n.values())
            lost = side_by_side(tests, part, verbose, tally) - (sum(tally.n.values()) - before)
            if lost:  # a job that died took its tests with it: each counts as failed
                tally.n["FAIL"] += lost
                print("FAIL %d tests: their job ended before reporting them" % lost)
            continue
        for i in (i for lane, _, _ in part for u in lane for i in u):
            name, fn, binary, _ = tests[i]
            tally.show(name, *run_one(name, fn, binary, verbose))
    if "--times" in args:
        i = args.index("--times")
        show_times(tally, int(args[i + 1]) if i + 1 < len(args) and args[i + 1].isdigit() else 15)
    print("%d skipped, %.0fs" % (tally.n["SKIP"], time.time() - t0))
    print("%d passed, %d failed" % (tally.n["PASS"], tally.n["FAIL"]))
    return 1 if tally.n["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
