"""One iwscope run per test session for the same binary, options and input files.

Several tests read the same committed captures with the same command: each truth scenario's
captures (truth:NAME, the tshark cross-check, the users' conditions' whole capture), the link
captures (link:NAME, the tshark cross-check), ../shared/captures (the names against tshark,
the verdicts read by eye). The first test to ask runs iwscope; the others, in this process or
in another job of tests/run.py, get a copy of the database it wrote and its exit status,
stdout and stderr, so each still asserts what it asserts on the output of that very command
(a sanitizer's report is in the stderr every one of them reads).

On only where IWSCOPE_RUN_CACHE names a folder (tests/run.py makes one per session, removed
at its end), and only for a command made of -q, --no-dpi, --timing, -r FILE and -o DB whose
database does not exist yet: those options set independent things, so their order does not
change what iwscope does (files keep theirs). The key is the binary and every input file (path,
size, modification time), the options and the sanitizer settings in the environment.

value() does the same for what a test computes from files (what tshark reads in a capture).
"""
import fcntl
import hashlib
import json
import os
import pickle
import shutil
import subprocess

FLAGS = ("-q", "--no-dpi", "--timing")
ENV_KEYS = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS")


def _stamp(path):
    st = os.stat(path)
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


def key(binary, args, env):
    """The cache key of binary + args (None where the command is not one this module shares),
    and the database args name."""
    flags, inputs, db, i = set(), [], None, 0
    while i < len(args):
        a = args[i]
        if a in FLAGS:
            flags.add(a)
            i += 1
        elif a in ("-r", "-o") and i + 1 < len(args):
            if a == "-o":
                if db is not None:
                    return None, None
                db = args[i + 1]
            elif args[i + 1] == "-" or not os.path.isfile(args[i + 1]):
                return None, None
            else:
                inputs.append(_stamp(args[i + 1]))
            i += 2
        else:
            return None, None
    if db is None or not inputs:
        return None, None
    env = os.environ if env is None else env
    what = [_stamp(binary), sorted(flags), inputs, [env.get(k) for k in ENV_KEYS]]
    return hashlib.sha1(json.dumps(what).encode()).hexdigest(), db


def run(binary, args, env=None, timeout=None):
    """subprocess.run([binary] + args) with stdout and stderr captured (bytes): (returncode,
    stdout, stderr). Shared across the session as the module says; otherwise run as asked."""
    folder = os.environ.get("IWSCOPE_RUN_CACHE")
    k, db = key(binary, args, env) if folder else (None, None)
    if k is None or os.path.exists(db):
        return _run(binary, args, env, timeout)
    base = os.path.join(folder, k)
    with open(base + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another job running the same command: wait for it
        try:
            if not os.path.exists(base + ".json"):
                rc, out, err = _run(binary, args, env, timeout)
                files = [sfx for sfx in ("", "-wal", "-shm") if os.path.exists(db + sfx)]
                for sfx in files:
                    shutil.copyfile(db + sfx, base + ".db" + sfx)
                for name, data in (("out", out), ("err", err)):
                    with open(base + "." + name, "wb") as f:
                        f.write(data)
                with open(base + ".json.tmp", "w") as f:
                    json.dump({"rc": rc, "files": files}, f)
                os.replace(base + ".json.tmp", base + ".json")
                return rc, out, err
            meta = json.load(open(base + ".json"))
            for sfx in meta["files"]:
                shutil.copyfile(base + ".db" + sfx, db + sfx)
            return meta["rc"], open(base + ".out", "rb").read(), open(base + ".err", "rb").read()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def value(what, files, compute):
    """compute() once per session for what (a name) and the files it reads (their path, size
    and modification time are in the key): another test, in this job or another, gets what the
    first computed (a picklable value). Without IWSCOPE_RUN_CACHE, compute() every time."""
    folder = os.environ.get("IWSCOPE_RUN_CACHE")
    if not folder:
        return compute()
    k = hashlib.sha1(json.dumps([what] + [_stamp(f) for f in files]).encode()).hexdigest()
    base = os.path.join(folder, "v-" + k)
    with open(base + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.path.exists(base + ".pickle"):
                with open(base + ".pickle", "rb") as f:
                    return pickle.load(f)
            v = compute()
            with open(base + ".tmp", "wb") as f:
                pickle.dump(v, f)
            os.replace(base + ".tmp", base + ".pickle")
            return v
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(binary, args, env, timeout):
    r = subprocess.run([binary] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=timeout)
    return r.returncode, r.stdout, r.stderr
