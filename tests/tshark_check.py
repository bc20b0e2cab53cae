"""Cross-check of stored SYN / SYN-ACK fields against tshark, a decoder nobody here wrote."""
import contextlib
import fcntl
import hashlib
import os
import pickle
import sqlite3
import subprocess
import threading

FIELDS = ["frame.time_epoch", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst",
          "tcp.dstport", "tcp.flags.ack", "tcp.window_size_value", "tcp.options.mss_val",
          "tcp.options.wscale.shift", "tcp.option_kind", "tcp.options.timestamp.tsval",
          "ip.ttl", "ipv6.hlim"]


def _us(epoch):
    sec, _, frac = epoch.partition(".")
    return int(sec) * 1000000 + int((frac + "000000")[:6])


def _last(v):
    return v.split(",")[-1] if v else ""


# One tshark read per capture per test run serves every test that compares with it: the
# SYNs (this module) and the HTTP Host / TLS SNI of each stream (names_check.py).
NAME_FIELDS = ["tcp.flags.syn", "tcp.stream", "http.host", "tls.handshake.extensions_server_name"]
FILTER = "tcp.flags.syn==1 || http.host || tls.handshake.extensions_server_name"
_cache, _lock = {}, threading.Lock()
# tests/run.py runs tests in several processes: they share what tshark read through this folder
# (read when used: run.py sets it after this module is imported)
def _disk():
    return os.environ.get("IWSCOPE_TSHARK_CACHE")


def _disk_path(key):
    return os.path.join(_disk(), hashlib.sha1(repr(key).encode()).hexdigest() + ".pickle")


def _disk_get(key):
    """What another test process stored for key, or None."""
    if not _disk() or not os.path.exists(_disk_path(key)):
        return None
    with open(_disk_path(key), "rb") as f:
        return pickle.load(f)


def _disk_put(key, val):
    if _disk():
        tmp = _disk_path(key) + ".%d" % os.getpid()
        with open(tmp, "wb") as f:
            pickle.dump(val, f)
        os.replace(tmp, _disk_path(key))


def _read(pcap):
    """(SYNs, names) of pcap, from the cache or tshark."""
    key = (pcap, os.stat(pcap).st_mtime_ns)
    with _lock:
        if key in _cache:
            return _cache[key]
    out = _disk_get(key)
    if out is None:
        out = _split(_run(pcap, []))
        _disk_put(key, out)
    with _lock:
        _cache[key] = out
    return out


def tshark_syns(pcap):
    """[(time_us, src, sport, dst, dport, is_synack, fields dict)] for every SYN tshark sees."""
    return _read(pcap)[0]


def tshark_names(pcap):
    """[(stream, client ip, client port, server ip, server port, name)] for every frame that
    carries an HTTP Host or a TLS SNI (its sender is the client); the first Host of a frame
    with several requests. Stream numbers are those of the file tshark read (a merged one
    after prefetch)."""
    return _read(pcap)[1]


def _split(frames):
    syns, names = [], []
    for _, syn, name in frames:
        if syn:
            syns.append(syn)
        if name:
            names.append(name)
    return syns, names


def _sections(path):
    """Section Header Blocks in a pcapng file (tshark numbers frames by section)."""
    n, off = 0, 0
    with open(path, "rb") as f:
        data = f.read()
    order = "<"
    while off + 12 <= len(data):
        btype = int.from_bytes(data[off:off + 4], "little")
        if btype == 0x0A0D0D0A:
            order = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            n += 1
        blen = int.from_bytes(data[off + 4:off + 8], "little" if order == "<" else "big")
        if blen < 12 or blen % 4:
            break
        off += blen
    return n


def prefetch(pcaps, tmp, jobs=None):
    """Reads many captures with one tshark per core instead of one per capture (tshark spends
    ~0.45 s starting): each becomes a pcapng file (editcap), the files are concatenated as
    sections, and each frame's section number says which capture it came from. A capture that
    editcap cannot turn into a whole file is left to tshark_syns' own reading."""
    with _disk_lock():
        _prefetch(pcaps, tmp, jobs)


@contextlib.contextmanager
def _disk_lock():
    """One test process reads with tshark at a time; the others then find it on disk."""
    if not _disk():
        yield
        return
    with open(os.path.join(_disk(), "lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _prefetch(pcaps, tmp, jobs):
    import concurrent.futures
    jobs = jobs or os.cpu_count() or 2
    for p in pcaps:
        key = (p, os.stat(p).st_mtime_ns)
        got = _disk_get(key) if key not in _cache else None
        if got is not None:
            _cache[key] = got
    pcaps = [p for p in pcaps if (p, os.stat(p).st_mtime_ns) not in _cache]

    def convert(i, p):
        out = os.path.join(tmp, "ng%d.pcapng" % i)
        r = subprocess.run(["editcap", "-F", "pcapng", p, out], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if r.returncode != 0 or not os.path.exists(out):
            return None
        n = _sections(out)
        return (p, out, n) if n >= 1 else None

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        conv = [c for c in pool.map(convert, range(len(pcaps)), pcaps) if c]
    conv.sort(key=lambda c: -os.path.getsize(c[1]))
    groups = [[] for _ in range(jobs)]
    sizes = [0] * jobs
    for c in conv:  # largest first onto the lightest group
        g = sizes.index(min(sizes))
        groups[g].append(c)
        sizes[g] += os.path.getsize(c[1])

    def read(gi, group):
        if not group:
            return
        merged = os.path.join(tmp, "merged%d.pcapng" % gi)
        owner = {}
        with open(merged, "wb") as m:
            sec = 0
            for p, out, n in group:
                with open(out, "rb") as f:
                    m.write(f.read())
                for k in range(n):
                    owner[sec + 1 + k] = p
                sec += n
        found = {p: [] for p, _, _ in group}
        for sec, syn, name in _run(merged, ["frame.section_number"]):
            p = owner.get(int(sec))
            if p is not None:
                found[p].append((sec, syn, name))
        with _lock:
            for p, _, _ in group:
                _cache[(p, os.stat(p).st_mtime_ns)] = _split(found[p])
                _disk_put((p, os.stat(p).st_mtime_ns), _cache[(p, os.stat(p).st_mtime_ns)])

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(read, range(jobs), groups))


def _run(pcap, extra):
    """(the first extra field, a SYN or None, a name record or None) for every frame of pcap
    that is a SYN or carries a Host or an SNI."""
    # the VNC dissector spends 48 s on one suricata-verify capture (rfb-protocol-3.8): what is
    # compared here never needs it
    cmd = ["tshark", "-n", "--disable-protocol", "vnc", "-r", pcap, "-Y", FILTER, "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=a"]
    names = extra + FIELDS + NAME_FIELDS
    for f in names:
        cmd += ["-e", f]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       timeout=600)
    out = []
    for line in r.stdout.splitlines():
        v = dict(zip(names, line.split("\t")))
        if not v.get("tcp.srcport"):
            continue
        v6 = bool(v.get("ipv6.src"))
        src = _last(v["ipv6.src"]) if v6 else _last(v["ip.src"])
        dst = _last(v["ipv6.dst"]) if v6 else _last(v["ip.dst"])
        kinds = [k for k in _last_group(v.get("tcp.option_kind", ""))]

        def num(name):
            x = _last(v.get(name, ""))
            return int(x, 0) if x else None

        fields = {
            "syn_win": num("tcp.window_size_value"),
            "mss": num("tcp.options.mss_val"),
            "wscale": num("tcp.options.wscale.shift"),
            "ts": num("tcp.options.timestamp.tsval"),
            "sack": 1 if "4" in kinds else 0,
            "ttl": num("ipv6.hlim") if v6 else num("ip.ttl"),
        }
        syn = None
        if _last(v.get("tcp.flags.syn", "")) in ("1", "True"):
            syn = (_us(v["frame.time_epoch"]), src, int(_last(v["tcp.srcport"])), dst,
                   int(_last(v["tcp.dstport"])), _last(v["tcp.flags.ack"]) in ("1", "True"), fields)
        # several HTTP requests in one frame: the first one's Host
        host = (_first(v.get("tls.handshake.extensions_server_name", "")) or
                _first(v.get("http.host", "")))
        name = ((int(_last(v["tcp.stream"])), src, int(_last(v["tcp.srcport"])), dst,
                 int(_last(v["tcp.dstport"])), host) if host and v.get("tcp.stream") else None)
        if syn or name:
            out.append((v[extra[0]] if extra else None, syn, name))
    return out


def _first(v):
    return v.split(",")[0] if v else ""


def _last_group(kinds):
    return kinds.split(",") if kinds else []


def compare(db, pcap):
    """Returns (checked, problems): problems are one-line descriptions."""
    syns = tshark_syns(pcap)
    by_key = {}
    for s in syns:
        by_key.setdefault((s[0], s[1], s[2], s[3], s[4], s[5]), s)
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    # QUIC rows carry the QUIC handshake's times in syn_us and synack_us: no SYN for tshark
    rows = list(con.execute("SELECT * FROM flows WHERE coalesce(transport, 'tcp') = 'tcp'"))
    con.close()
    problems, checked = [], 0
    tuples = set()
    for r in rows:
        tuples.add((r["client_ip"], r["client_port"], r["server_ip"], r["server_port"]))
        tuples.add((r["server_ip"], r["server_port"], r["client_ip"], r["client_port"]))
        sides = []
        if r["syn_us"] is not None:
            sides.append(("c", (r["syn_us"], r["client_ip"], r["client_port"], r["server_ip"],
                                r["server_port"], False)))
        if r["synack_us"] is not None and r["handshake"] != "simultaneous":
            sides.append(("s", (r["synack_us"], r["server_ip"], r["server_port"], r["client_ip"],
                                r["client_port"], True)))
        for p, key in sides:
            s = by_key.get(key)
            if s is None:
                problems.append("%s: tshark has no %s at %s" % (pcap, "SYN-ACK" if key[5] else "SYN", key))
                continue
            checked += 1
            for name, want in s[6].items():
                got = r[p + "_" + name]
                if name == "sack" and got is None:
                    continue  # options cut by the snaplen: unknown
                if got != want:
                    problems.append("%s: flow %s:%s %s_%s = %r, tshark says %r" % (
                        pcap, r["client_ip"], r["client_port"], p, name, got, want))
    for s in syns:
        if (s[1], s[2], s[3], s[4]) not in tuples:
            problems.append("%s: tshark SYN %s:%s > %s:%s at %d has no flow" % (
                pcap, s[1], s[2], s[3], s[4], s[0]))
    return checked, problems
