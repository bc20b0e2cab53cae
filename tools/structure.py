#!/usr/bin/env python3
"""The figures of iwscope's structure (issue 32), printed and checked:

    python3 tools/structure.py            # prints them; exit 1 if one is over its limit
    python3 tools/structure.py --report   # prints them only (exit 0)

(a) Includes go down the layers, never up. The layers, from the bottom:

        analysis < input < db < sinks < cmd < main

    src/<layer>/X.c is a module of <layer>, and include/X.h (the header of the same name) is
    that module's header, of the same layer; src/main.c is the top. A module's .c and its
    header may include the headers of their own layer or of a lower one.
    input sits above analysis: it drives it (capture.c asks decode_link_supported() of a
    file's link type, livecap.c's workers run engines), as STYLE.md's cmd -> input -> analysis
    has it; db sits above analysis (a run's record is struct run_info) and below the sinks.
    A header with no .c of its own name (config.h, clock.h, exitcode.h, bytes.h, dbrows.h,
    pkt.h, hugemem.h, record_columns.h ...) is shared, and so is sink.h (sink.c is only the
    loop over the sinks): it is the plug-in interface, a table of callbacks through which the
    analysis hands rows up without knowing the sinks. Anyone may include a shared header,
    provided it does not carry a higher layer in with it: its layer is the highest layer of
    the module headers it includes, directly or through other shared headers (sink.h and
    record_columns.h include record.h: analysis), and including it from below that layer is
    an upward include too; one that includes no module header is allowed everywhere.
    Only "quoted" includes count; <system> ones are not iwscope's.
(b) The longest functions in src/: a function starts at its first line at column 0 (the
    return type, or the name when that is on a line of its own) and ends at the first "}" at
    column 0 after its opening brace; its length counts both lines. The 10 longest are listed.
(c) The largest source files in src/ (.c, lines).

Limits: no upward include, no function over 120 lines, no file over 800 lines. Each offender
is printed on a line of its own starting with "over:".
"""
import glob
import os
import re
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ["analysis", "input", "db", "sinks", "cmd", "main"]
SHARED = {"sink.h"}  # has a .c, but is the plug-in interface (above)
FUNCTION_MAX = 120
FILE_MAX = 800
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rel(path):
    return os.path.relpath(path, ROOT)


def includes(path):
    """(line number, header name) of each quoted include of path."""
    out = []
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                out.append((n, os.path.basename(m.group(1))))
    return out


def module_layers():
    """{module name: layer index} from src/<layer>/<module>.c, and main."""
    mods = {"main": LAYERS.index("main")}
    for c in glob.glob(os.path.join(ROOT, "src", "*", "*.c")):
        layer = os.path.basename(os.path.dirname(c))
        if layer in LAYERS:
            mods[os.path.splitext(os.path.basename(c))[0]] = LAYERS.index(layer)
    return mods


def header_layers(mods):
    """{header name: (layer index, why)}: a module's header is its module's layer; a shared
    header the highest layer it brings in (-1 when none)."""
    headers = {os.path.basename(h): h for h in glob.glob(os.path.join(ROOT, "include", "*.h"))}
    known = {}

    def layer_of(name, seen):
        if name in known:
            return known[name]
        mod = os.path.splitext(name)[0]
        if mod in mods and name not in SHARED:
            known[name] = (mods[mod], "module")
            return known[name]
        best = (-1, "shared")
        if name in headers and name not in seen:
            for _, inc in includes(headers[name]):
                lay, _ = layer_of(inc, seen | {name})
                if lay > best[0]:
                    best = (lay, "shared, through " + inc)
        known[name] = best
        return best

    for name in headers:
        layer_of(name, frozenset())
    return known


def upward_includes():
    """Every include that goes up a layer: (file, line, text)."""
    mods = module_layers()
    hdr = header_layers(mods)
    files = []  # (path, layer index) of every module's .c and header
    for c in glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True):
        mod = os.path.splitext(os.path.basename(c))[0]
        if mod in mods:
            files.append((c, mods[mod]))
            h = os.path.join(ROOT, "include", mod + ".h")
            if os.path.exists(h):
                files.append((h, mods[mod]))
    bad = []
    for path, own in sorted(files):
        for n, inc in includes(path):
            lay, why = hdr.get(inc, (-1, "not in include/"))
            if lay > own:
                bad.append((rel(path), n, "includes %s (%s%s) from %s" % (
                    inc, LAYERS[lay], "" if why == "module" else ", " + why, LAYERS[own])))
    return bad


def functions(path):
    """(first line, length in lines, name) of each top-level function of path."""
    with open(path, errors="replace") as f:
        lines = f.read().split("\n")
    out = []
    start = None  # first line of the declaration being read
    i = 0
    while i < len(lines):
        line = lines[i]
        top = line[:1] not in ("", " ", "\t", "#", "/", "*", "}", "{")
        if top:
            start = i
        if start is not None and (line.startswith("{") or (top and line.rstrip().endswith("{"))):
            sig = " ".join(l.strip() for l in lines[start:i + 1])
            head = sig.split("(", 1)[0]
            if "(" in sig and "=" not in head and not re.match(r"(typedef|struct|union|enum)\b[^(]*\{", sig):
                end = i + 1
                while end < len(lines) and not lines[end].startswith("}"):
                    end += 1
                name = head.split()[-1].lstrip("*") if head.split() else "?"
                out.append((start + 1, end - start + 1, name))
                i = end
            start = None
        elif not top and line[:1] not in (" ", "\t"):
            start = None  # a blank line, comment or directive ends a declaration
        i += 1
    return out


def main(argv):
    report_only = "--report" in argv[1:]
    sources = sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True))
    over = []

    print("(a) includes up a layer (%s):" % " < ".join(LAYERS))
    bad = upward_includes()
    for path, n, what in bad:
        print("over: %s:%d: %s" % (path, n, what))
    over += bad
    print("  %d" % len(bad))

    print("(b) longest functions in src/ (limit %d lines):" % FUNCTION_MAX)
    funcs = sorted(((length, rel(p), line, name) for p in sources for line, length, name in functions(p)),
                   key=lambda f: (-f[0], f[1], f[2]))
    for length, path, line, name in funcs[:10]:
        print("  %5d  %s:%d %s" % (length, path, line, name))
    for length, path, line, name in funcs:
        if length > FUNCTION_MAX:
            print("over: %s:%d: %s is %d lines" % (path, line, name, length))
            over.append(path)

    print("(c) largest files in src/ (limit %d lines):" % FILE_MAX)
    sizes = []
    for p in sources:
        with open(p, errors="replace") as f:
            sizes.append((sum(1 for _ in f), rel(p)))
    sizes.sort(key=lambda s: (-s[0], s[1]))
    for n, path in sizes[:5]:
        print("  %5d  %s" % (n, path))
    for n, path in sizes:
        if n > FILE_MAX:
            print("over: %s is %d lines" % (path, n))
            over.append(path)

    return 0 if report_only or not over else 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # | head
    sys.exit(main(sys.argv))
