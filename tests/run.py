#!/usr/bin/env python3
"""iwscope test suite: runs every test against the release build and (where marked) the
ASan+UBSan build, prints PASS / FAIL / SKIP per test and ends with `N passed, N failed`.

    python3 tests/run.py [-k SUBSTRING]... [-v] [--list]

-k selects the tests whose name holds SUBSTRING; given more than once, those that hold any.

The tests are in tests/area_*.py, one file per area, run in the order of the file names. Each
registers its tests with @test and uses tests/helpers.py's names (run, rows, analyse, eq, Skip,
tmux, chromium, pg_database, ...) without importing them: each file is run in a namespace of its
own that starts as a copy of helpers.py's, so a name one area file defines is its own; what two
areas share lives in helpers.py.
"""
import glob
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import helpers  # noqa: E402



def load_areas():
    """Runs every tests/area_*.py, each in a fresh namespace seeded with helpers.py's names;
    returns helpers.TESTS, (name, fn, binary) in order."""
    for path in sorted(glob.glob(os.path.join(HERE, "area_*.py"))):
        area = dict(vars(helpers), __name__=os.path.basename(path)[:-3], __file__=path)
        exec(compile(open(path).read(), path, "exec"), area)
    return helpers.TESTS


def main():
    # A shell runs a command put in the background with SIGINT and SIGQUIT ignored, and every
    # process the tests start would inherit that: the lab's servers, delay lines and tcpdump
    # would then outlive the SIGINT that ends them (each stop waiting out its 5 s timeout). A
    # handler of our own is reset to the default in every child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, lambda *_: sys.exit(131))
    args = sys.argv[1:]
    pats = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-k"]
    tests = [t for t in load_areas() if not pats or any(p in t[0] for p in pats)]
    helpers.SELECTED[:] = [name for name, _, _ in tests]
    if "--list" in args:
        for name, _, _ in tests:
            print(name)
        print("%d tests" % len(tests))
        return 0
    verbose = "-v" in args
    passed = failed = skipped = 0
    t0 = time.time()
    for name, fn, binary in tests:
        tmp = tempfile.mkdtemp(prefix="iwscope-test-")
        start = time.time()
        try:
            note = fn(binary, tmp)
            passed += 1
            print("PASS %-48s %5.1fs%s" % (name, time.time() - start, "  " + note if note else ""))
        except helpers.Skip as e:
            skipped += 1
            print("SKIP %-48s %s" % (name, e))
        except Exception as e:  # noqa: BLE001 - every failure is reported the same way
            failed += 1
            print("FAIL %-48s %5.1fs" % (name, time.time() - start))
            msg = str(e) if isinstance(e, AssertionError) and not verbose else traceback.format_exc()
            for line in msg.splitlines()[:40 if not verbose else 400]:
                print("     " + line)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        sys.stdout.flush()
    print("%d skipped, %.0fs" % (skipped, time.time() - t0))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
