# The build and what ships: make install, hardening flags, the C unit tests, valgrind,
# libpq loaded on demand, a short run of every fuzz target.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("make-install")
def t_install(binary, tmp):
    r = subprocess.run(["make", "-s", "install", "DESTDIR=" + tmp, "PREFIX=/usr/local"], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    eq(r.returncode, 0, "make install: " + r.stdout)
    for f in ("bin/iwscope", "share/iwscope/sqlite.sql", "share/iwscope/postgresql.sql",
              "share/iwscope/views.sql", "share/man/man1/iwscope.1"):
        assert os.path.exists(os.path.join(tmp, "usr/local", f)), f
    rc, out, _ = run(["--version"], os.path.join(tmp, "usr/local/bin/iwscope"))
    eq(rc, 0, "installed binary")


@test("fuzz-smoke")
def t_fuzz(binary, tmp):
    """Each libFuzzer target for 6 s from the seed corpora, side by side (make fuzz runs them 10
    minutes)."""
    if not os.path.exists(os.path.join(ROOT, "build", "fuzz_capture")):
        raise Skip("fuzzers not built (make fuzzers needs clang)")
    r = subprocess.run(["python3", os.path.join(HERE, "fuzz", "run.py"), "6"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise AssertionError(r.stdout[-3000:])
    return "; ".join(r.stdout.strip().splitlines())


@test("hardened-binary")
def t_hardened(binary, tmp):
    """PIE, full RELRO, stack protector and FORTIFY in the release build."""
    out = subprocess.run(["readelf", "-h", "-d", "-s", "-W", binary], stdout=subprocess.PIPE, text=True).stdout
    assert "DYN (Position-Independent Executable" in out or "Type:                              DYN" in out, "not PIE"
    assert "BIND_NOW" in out or "FLAGS_1" in out and "NOW" in out, "no BIND_NOW"
    ph = subprocess.run(["readelf", "-l", "-W", binary], stdout=subprocess.PIPE, text=True).stdout
    assert "GNU_RELRO" in ph, "no RELRO"
    assert "__stack_chk_fail" in out, "no stack protector"
    assert "_chk@" in out, "no FORTIFY_SOURCE"


@test("unit", ("asan",))
def t_unit(binary, tmp):
    r = subprocess.run([os.path.join(ROOT, "build-debug", "unit")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=ENV)
    if r.returncode != 0:
        raise AssertionError(r.stdout)
    return r.stdout.strip().splitlines()[-1]


@test("valgrind")
def t_valgrind(binary, tmp):
    if not shutil.which("valgrind"):
        raise Skip("valgrind not installed")
    db = os.path.join(tmp, "vg.db")
    r = subprocess.run(["valgrind", "-q", "--error-exitcode=3", "--leak-check=full",
                        "--errors-for-leak-kinds=definite", binary, "-q", "-r",
                        truth_pcap("iw10.mid"), "-r", os.path.join(PCAPS, "link", "v6-v6ext.pcap"),
                        "-o", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise AssertionError("valgrind exit %d:\n%s" % (r.returncode, r.stderr[-3000:]))


@test("libpq-loaded-only-for-postgresql", ("release", "asan"))
def t_libpq_on_demand(binary, tmp):
    """libpq is loaded when a postgresql:// target is used, not linked: in a mount namespace
    where libpq.so.5 is an empty file, an SQLite run works and a PostgreSQL one says, in one
    line, that the library cannot be loaded."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise Skip("needs root and unshare (a mount namespace)")
    lib = ctypes.util.find_library("pq")
    path = next((os.path.join(d, lib) for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                                                 "/usr/lib", "/lib") if lib and os.path.exists(os.path.join(d, lib))), None)
    if not path:
        raise Skip("libpq.so.5 not found")
    db = os.path.join(tmp, "nolibpq.db")
    script = ('mount --bind /dev/null "$1" || exit 99; "$2" --version | grep "^libpq"; '
              '"$2" -q -r "$3" -o "$4"; echo "sqlite $?"; '
              '"$2" -q -r "$3" -o postgresql://iw@127.0.0.1:1/flows; echo "postgresql $?"')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", path, binary,
                        os.path.join(PCAPS, "demo.pcap"), db],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, timeout=120)
    if r.returncode == 99:
        raise Skip("cannot bind-mount over %s" % path)
    eq(r.stdout.splitlines(), ["libpq not found", "sqlite 0", "postgresql 2"], "outcomes")
    eq(count_rows(db, "SELECT count(*) FROM flows"), 10, "rows written without libpq")
    err = [l for l in r.stderr.splitlines() if l.strip()]
    eq(len(err), 1, "error lines: %r" % err)
    assert err[0].startswith("iwscope: cannot load the PostgreSQL client library: "), err


@test("structure-layers-functions-files")
def t_structure(binary, tmp):
    """tools/structure.py (issue 32): no include goes up a layer (analysis < input < db < sinks
    < cmd), no function in src/ is over 120 lines, no file over 800. The message lists each
    offender."""
    r = subprocess.run(["python3", os.path.join(ROOT, "tools", "structure.py")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    over = [l for l in r.stdout.splitlines() if l.startswith("over:")]
    if r.returncode != 0:
        raise AssertionError("structure.py exit %d:\n%s" % (r.returncode, "\n".join(over) or r.stdout))
    eq(over, [], "offenders")
