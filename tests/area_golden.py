# The golden manifest (tests/golden/TESTLIST, as tcpdump's tests/TESTLIST): one line per capture,
# the rows iwscope must give for it in tests/golden/NAME.tsv (tests/golden.py writes them).
# Run by tests/run.py with tests/helpers.py's names (see run.py).
import golden  # noqa: E402  (tests/ is on sys.path)


@test("golden-manifest", ("release", "asan"))
def t_golden_manifest(binary, tmp):
    """Every TESTLIST line gives its expected rows (exit status, run counters, decode problems,
    flows); the committed hostile captures are still what tests/hostile.py writes. Lines whose
    ../shared capture is absent are skipped; tests/golden's and tests/pcaps' always run."""
    lines = golden.manifest()
    assert len(lines) >= 20, "only %d lines in TESTLIST" % len(lines)
    bad = []
    fresh = os.path.join(tmp, "hostile")
    os.mkdir(fresh)
    for p in hostile.write_all(fresh):
        name = os.path.basename(p)
        kept = os.path.join(golden.GOLDEN, name)
        if not os.path.exists(kept) or open(kept, "rb").read() != open(p, "rb").read():
            bad.append("tests/golden/%s is not what tests/hostile.py writes "
                       "(python3 tests/golden.py --write-hostile)" % name)
    todo, skipped = [], []
    for ln in lines:
        if not os.path.exists(ln.path):
            (skipped if ln.shared else bad).append("%r: %s absent" % (ln, ln.capture))
        elif not os.path.exists(ln.expected):
            bad.append("%r: no %s (python3 tests/golden.py --update %s)" % (
                ln, os.path.relpath(ln.expected, ROOT), ln.name))
        else:
            todo.append(ln)

    def check(ln):
        got = golden.snapshot(binary, ln, tmp, env=ENV)
        want = open(ln.expected).read()
        if got == want:
            return None
        return "%r differs (python3 tests/golden.py --show %s):\n  %s" % (
            ln, ln.name, "\n  ".join(golden.differences(want, got)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        bad += [m for m in pool.map(check, todo) if m]
    if bad:
        raise AssertionError("\n".join(bad))
    return "%d captures as expected%s" % (len(todo), ", %d skipped (../shared absent)" % len(skipped)
                                           if skipped else "")
