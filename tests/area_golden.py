# The golden manifest (tests/golden/TESTLIST, as tcpdump's tests/TESTLIST): one line per capture,
# the rows iwscope must give for it in tests/golden/NAME.tsv (tests/golden.py writes them). Each
# line is its own test, golden:NAME, on both builds; a line whose ../shared capture is absent is
# skipped, never passed.
# Run by tests/run.py with tests/helpers.py's names (see run.py).
import golden  # noqa: E402  (tests/ is on sys.path)

LINES = golden.manifest()
BUILDS = ("release", "asan")
_POOL = []      # one thread pool for every line's run, started by the first golden test
_RUNS = {}      # (binary, line name) -> the future of golden.snapshot's text


def _snapshot(binary, ln):
    """What binary gives for ln now (golden.snapshot in a directory of its own)."""
    tmp = tempfile.mkdtemp(prefix="iwscope-golden-")
    try:
        return golden.snapshot(binary, ln, tmp, env=ENV)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _started(binary, ln):
    """The future of ln's snapshot by binary. The first call starts the runs of every selected
    golden line that can run, one per core, so that the lines, tests of their own, still take
    the time they took as one test."""
    if not _POOL:
        _POOL.append(concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2))
        by_name = {x.name: x for x in LINES}
        for sel in SELECTED:
            m = re.match(r"golden:(.+)\[(\w+)\]$", sel)
            if m and m.group(1) in by_name and m.group(2) in BINARIES:
                x, b = by_name[m.group(1)], BINARIES[m.group(2)]
                if os.path.exists(x.path) and os.path.exists(x.expected) and os.path.exists(b):
                    _RUNS[(b, x.name)] = _POOL[0].submit(_snapshot, b, x)
    if (binary, ln.name) not in _RUNS:
        _RUNS[(binary, ln.name)] = _POOL[0].submit(_snapshot, binary, ln)
    return _RUNS.pop((binary, ln.name))


def golden_test(ln):
    """The test of one TESTLIST line: its rows (exit status, run counters, decode problems,
    flows) are NAME.tsv's."""
    def t_golden_line(binary, tmp):
        if not os.path.exists(ln.path):
            if ln.shared:
                raise Skip("%r: %s absent" % (ln, ln.capture))
            raise AssertionError("%r: %s absent" % (ln, ln.capture))
        if not os.path.exists(ln.expected):
            raise AssertionError("%r: no %s (python3 tests/golden.py --update %s)" % (
                ln, os.path.relpath(ln.expected, ROOT), ln.name))
        got = _started(binary, ln).result()
        want = open(ln.expected).read()
        if got != want:
            raise AssertionError("%r differs (python3 tests/golden.py --show %s):\n  %s" % (
                ln, ln.name, "\n  ".join(golden.differences(want, got))))
        flows = want.split("# flows\n", 1)[1].splitlines()[1:] if "# flows\n" in want else []
        return "%d flows as expected" % len(flows)
    t_golden_line.__doc__ = "TESTLIST:%d %s %s" % (ln.lineno, ln.capture, " ".join(ln.options))
    return t_golden_line


@test("golden-manifest", BUILDS)
def t_golden_manifest(binary, tmp):
    """TESTLIST is whole (20 lines at least, each with its expected rows) and the committed
    hostile captures are still what tests/hostile.py writes; each line is checked by its own
    golden:NAME test."""
    assert len(LINES) >= 20, "only %d lines in TESTLIST" % len(LINES)
    bad = []
    fresh = os.path.join(tmp, "hostile")
    os.mkdir(fresh)
    for p in hostile.write_all(fresh):
        name = os.path.basename(p)
        kept = os.path.join(golden.GOLDEN, name)
        if not os.path.exists(kept) or open(kept, "rb").read() != open(p, "rb").read():
            bad.append("tests/golden/%s is not what tests/hostile.py writes "
                       "(python3 tests/golden.py --write-hostile)" % name)
    for ln in LINES:
        if not os.path.exists(ln.expected):
            bad.append("%r: no %s (python3 tests/golden.py --update %s)" % (
                ln, os.path.relpath(ln.expected, ROOT), ln.name))
    if bad:
        raise AssertionError("\n".join(bad))
    return "%d lines" % len(LINES)


for _ln in LINES:
    test("golden:" + _ln.name, BUILDS)(golden_test(_ln))
