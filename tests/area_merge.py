# Several inputs as one capture (issue 27, part 3): -r files merged by packet time as mergecap
# does (a tap's two direction files, files that follow one another, standard input among
# them), pcapng files whose interfaces differ in link type or snapshot length (read by
# src/input/pcapng.c), and live capture on two interfaces at once.
# Run by tests/run.py with tests/helpers.py's names (see run.py).
import signal  # noqa: E402
import struct  # noqa: E402


def need_tool(*names):
    for name in names:
        if not shutil.which(name):
            raise Skip("%s not installed" % name)


def direction_files(tmp, src=None):
    """The truth capture (server port 8080) split by tcpdump into the client's packets (dirA)
    and the server's (dirB), as a passive tap's two ports give them."""
    need_tool("tcpdump")
    src = src or truth_pcap()
    a, b = os.path.join(tmp, "dirA.pcap"), os.path.join(tmp, "dirB.pcap")
    for out, f in ((a, "tcp dst port 8080"), (b, "tcp src port 8080")):
        subprocess.run(["tcpdump", "-r", src, "-w", out, f], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return a, b


def flow_rows(db):
    """Every flows column but the run's and the key that numbers flows within a run."""
    return comparable(rows(db), also=("flow_key",))


def packets_of(path):
    return int(subprocess.run(["capinfos", "-M", "-c", "-T", "-r", path], stdout=subprocess.PIPE,
                              text=True, check=True).stdout.split("\t")[-1])


@test("merge:two-direction-files-give-the-whole", ("release", "asan"))
def t_directions(binary, tmp):
    """A tap's two direction files (-r dirA -r dirB) are one capture: exactly the rows of the
    whole capture, every verdict and SYN column (nDPI's too), in either order on the command
    line; read one after the other they would be two rows per connection."""
    whole = truth_pcap()
    a, b = direction_files(tmp)
    want = comparable(rows(analyse(binary, [whole], tmp, [], "whole.db")))
    assert len(want) >= 4 and all(dict(r)["handshake"] == "complete" for r in want), want
    for name, files in (("ab", [a, b]), ("ba", [b, a])):
        db = analyse(binary, files, tmp, [], name + ".db")
        eq(comparable(rows(db)), want, "rows of -r %s" % " -r ".join(os.path.basename(f) for f in files))
        r = rows(db, "SELECT source, status, skipped_files, packets FROM runs")[0]
        eq((r["source"], r["status"], r["skipped_files"]), (" ".join(files), "complete", 0), "run")
        eq(r["packets"], packets_of(a) + packets_of(b), "packets")
    # what reading them one after the other gives (the old behaviour): no handshake is seen
    need_tool("mergecap")
    seq = os.path.join(tmp, "seq.pcap")
    subprocess.run(["mergecap", "-a", "-w", seq, "-F", "pcap", a, b], check=True)
    got = rows(analyse(binary, [seq], tmp, ["--no-dpi"], "seq.db"))
    assert got and not any(r["handshake"] == "complete" for r in got), "concatenated: %r" % got
    return "%d flows equal the whole capture's, in both orders" % len(want)


@test("merge:files-that-follow-one-another", ("release", "asan"))
def t_follow(binary, tmp):
    """A capture split at a packet index (editcap -r) gives the rows of the whole, the files
    given in order or not; -c counts the merged packets."""
    need_tool("editcap")
    whole = truth_pcap()
    n = packets_of(whole)
    a, b = os.path.join(tmp, "a.pcap"), os.path.join(tmp, "b.pcap")
    subprocess.run(["editcap", "-F", "pcap", "-r", whole, a, "1-%d" % (n // 2)], check=True)
    subprocess.run(["editcap", "-F", "pcap", "-r", whole, b, "%d-%d" % (n // 2 + 1, n)], check=True)
    want = comparable(rows(analyse(binary, [whole], tmp, ["--no-dpi"], "whole.db")))
    for name, files in (("ab", [a, b]), ("ba", [b, a])):
        got = comparable(rows(analyse(binary, files, tmp, ["--no-dpi"], name + ".db")))
        eq(got, want, "rows of %s" % name)
    db = analyse(binary, [b, a], tmp, ["--no-dpi", "-c", str(n // 2 + 3)], "c.db")
    eq(rows(db, "SELECT packets FROM runs")[0]["packets"], n // 2 + 3, "-c over the merge")
    return "%d packets split at %d" % (n, n // 2)


@test("merge:bad-and-piped-inputs-among-several", ("release", "asan"))
def t_bad_inputs(binary, tmp):
    """In a merge, a missing file and a file cut mid-record are each said in one line naming
    them; the other inputs are analysed whole (exit 2, the run failed, skipped_files counted).
    Standard input among files is merged like a file."""
    a, b = direction_files(tmp)
    want = comparable(rows(analyse(binary, [truth_pcap()], tmp, ["--no-dpi"], "whole.db")))
    missing = os.path.join(tmp, "missing.pcap")
    db = os.path.join(tmp, "m.db")
    rc, _, err = run(["-q", "--no-dpi", "-r", a, "-r", missing, "-r", b, "-o", db], binary)
    eq(rc, 2, "exit with a missing file")
    eq(err.count("\n"), 1, "one line: " + err)
    assert "missing.pcap" in err and "No such file" in err, err
    eq(comparable(rows(db)), want, "rows of the other two")
    eq(rows(db, "SELECT status, skipped_files FROM runs")[0], {"status": "failed", "skipped_files": 1}, "run")
    # dirB cut in its last record: every record before the cut is merged
    data = open(b, "rb").read()
    cut = os.path.join(tmp, "cut.pcap")
    open(cut, "wb").write(data[:-7])
    db = os.path.join(tmp, "c.db")
    rc, _, err = run(["-q", "--no-dpi", "-r", a, "-r", cut, "-o", db], binary)
    eq(rc, 2, "exit with a cut file")
    assert err.count("\n") == 1 and "cut.pcap" in err and "truncated" in err, err
    eq(rows(db, "SELECT packets FROM runs")[0]["packets"], packets_of(a) + packets_of(b) - 1,
       "packets before the cut")
    # standard input among files
    db = os.path.join(tmp, "s.db")
    run(["-q", "--no-dpi", "-r", a, "-r", "-", "-o", db], binary, 0, stdin=open(b, "rb").read())
    eq(comparable(rows(db)), want, "rows with dirB on standard input")


@test("merge:replay-merges-too", ("release",))
def t_replay(binary, tmp):
    """--replay reads several files merged by packet time, as a run at full speed does."""
    a, b = direction_files(tmp)
    want = comparable(rows(analyse(binary, [truth_pcap()], tmp, ["--no-dpi"], "whole.db")))
    db = os.path.join(tmp, "r.db")
    rc, _, err = run(["--no-dpi", "--replay=20", "--no-ui", "-r", a, "-r", b, "-o", db], binary,
                     timeout=60)
    eq(rc, 0, "exit: " + err)
    eq(comparable(rows(db)), want, "replayed rows")


def shifted(tmp, src, name, seconds, snaplen=None):
    """src with its times moved by seconds (editcap -t), cut to snaplen bytes if given."""
    out = os.path.join(tmp, name)
    subprocess.run(["editcap", "-F", "pcap", "-t", str(seconds)] + (["-s", str(snaplen)] if snaplen else []) +
                   [src, out], check=True)
    return out


def interfaces(path):
    """(link type, snapshot length) of each interface of a capture, as capinfos says them."""
    out = subprocess.run(["capinfos", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    links = re.findall(r"Encapsulation = (.+)", out)
    snaps = [int(x) for x in re.findall(r"Capture length = (\d+)", out)]
    return list(zip(links, snaps))


def pcapng_of(out, inputs):
    """A pcapng file of the records of classic pcap files, merged by time (ties: the earlier
    input), one interface per input: inputs = [(path, snaplen)], each record cut to snaplen,
    as dumpcap capturing on several interfaces writes it."""
    ng = hostile.Ng()
    body, recs = ng.shb(), []
    for i, (path, snaplen) in enumerate(inputs):
        lt, rs = hostile.pcap_records(path)
        body += ng.idb(lt, snaplen)
        recs += [(ts, i, f) for ts, f in rs]
    recs.sort(key=lambda r: (r[0], r[1]))
    body += b"".join(ng.epb(i, ts, f[:inputs[i][1]], len(f)) for ts, i, f in recs)
    open(out, "wb").write(body)
    return out


def libpcap_refuses(path, words):
    """tcpdump (libpcap) cannot read path, in words that say why."""
    r = subprocess.run(["tcpdump", "-r", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    assert r.returncode != 0 and words in r.stderr, "libpcap: " + r.stderr


def multi_link_inputs(tmp):
    """An Ethernet capture of IPv6 connections moved in time to overlap a Linux cooked (SLL)
    capture of IPv4 ones, and the same IPv6 capture cut to a 200-byte snapshot length."""
    need_tool("editcap", "mergecap", "capinfos")
    eth = shifted(tmp, os.path.join(PCAPS, "link", "v6-ether.pcap"), "v6-ether.pcap", -9.5)
    cut = shifted(tmp, os.path.join(PCAPS, "link", "v6-ether.pcap"), "v6-cut.pcap", -9.5, 200)
    data = bytearray(open(cut, "rb").read())  # editcap -s cuts the records, not the header's
    data[16:20] = struct.pack("<I", 200)
    open(cut, "wb").write(bytes(data))
    sll = os.path.join(PCAPS, "link", "v4-sll.pcap")
    return eth, cut, sll


@test("merge:pcapng-of-several-link-types-and-snaplens", ("release", "asan"))
def t_multi_link(binary, tmp):
    """mergecap's pcapng of an Ethernet and an SLL capture (two interface link types, which
    libpcap refuses) is read whole, each packet by its own interface's link type: its rows are
    those of the two inputs analysed alone; a BPF filter applies to both (compiled per link
    type); the same with two snapshot lengths (200 and 262144), and with two sections (two
    pcapng files one after the other, as cat makes them)."""
    eth, cut, sll = multi_link_inputs(tmp)
    alone = {p: flow_rows(analyse(binary, [p], tmp, ["--no-dpi"], os.path.basename(p) + ".db"))
             for p in (eth, cut, sll)}
    cases = []
    ng = os.path.join(tmp, "links.pcapng")
    subprocess.run(["mergecap", "-w", ng, eth, sll], check=True)
    eq(sorted({l for l, _ in interfaces(ng)}), ["Ethernet (1 - ether)", "Linux cooked-mode capture v1 (25 - linux-sll)"],
       "interface link types")
    cases.append((ng, eth, sll))
    libpcap_refuses(ng, "different from the type of the first interface")
    # mergecap keeps one snapshot length: two, as dumpcap -i eth0 -s 200 -i eth1 writes them
    v4e = os.path.join(PCAPS, "link", "v4-ether.pcap")
    snaps = pcapng_of(os.path.join(tmp, "snaplens.pcapng"), [(eth, 200), (v4e, 262144)])
    eq(sorted({s for _, s in interfaces(snaps)}), [200, 262144], "interface snapshot lengths")
    libpcap_refuses(snaps, "different from the snapshot length of the first interface")
    cases.append((snaps, cut, v4e))
    alone[v4e] = flow_rows(analyse(binary, [v4e], tmp, ["--no-dpi"], "v4e.db"))
    sect = os.path.join(tmp, "sections.pcapng")
    parts = []
    for p in (sll, eth):
        out = os.path.join(tmp, os.path.basename(p) + ".pcapng")
        subprocess.run(["editcap", "-F", "pcapng", p, out], check=True)
        parts.append(open(out, "rb").read())
    open(sect, "wb").write(b"".join(parts))
    cases.append((sect, sll, eth))
    for path, x, y in cases:
        db = os.path.join(tmp, os.path.basename(path) + ".db")
        rc, _, err = run(["-q", "--no-dpi", "-r", path, "-o", db], binary)
        eq((rc, err), (0, ""), os.path.basename(path))
        got = flow_rows(db)
        eq(got, sorted(alone[x] + alone[y], key=repr), "rows of %s" % os.path.basename(path))
        r = rows(db, "SELECT packets, decode_errors FROM runs")[0]
        eq(r, {"packets": packets_of(x) + packets_of(y), "decode_errors": 0}, "run of " + path)
    # the filter applies on both link types: only the IPv6 flows, then one IPv4 port
    v6 = flow_rows(analyse(binary, [ng], tmp, ["--no-dpi", "ip6"], "f6.db"))
    eq(v6, alone[eth], "filter ip6")
    port = rows(os.path.join(tmp, "v4-sll.pcap.db"))[0]["client_port"]
    one = rows(analyse(binary, [ng], tmp, ["--no-dpi", "tcp port %d" % port], "fp.db"))
    eq([(r["ip_ver"], r["client_port"]) for r in one], [(4, port)], "filter on the SLL interface's port")
    return "%d + %d flows, %d + %d flows" % (len(alone[eth]), len(alone[sll]), len(alone[cut]),
                                              len(alone[cases[1][2]]))


@test("merge:pcapng-cut-or-malformed-keeps-rows", ("release", "asan"))
def t_ng_cut(binary, tmp):
    """A pcapng file cut in a block, or whose block's trailer disagrees with its header: one
    line naming the file and the byte where it goes wrong, exit 2, the run failed, the rows
    analysed before kept. A filter that does not apply to one of its interfaces' link types is
    a usage error before anything is written."""
    eth, _, sll = multi_link_inputs(tmp)
    ng = os.path.join(tmp, "links.pcapng")
    subprocess.run(["mergecap", "-w", ng, eth, sll], check=True)
    whole = rows(analyse(binary, [ng], tmp, ["--no-dpi"], "whole.db"))
    data = open(ng, "rb").read()
    cut = os.path.join(tmp, "cut.pcapng")
    open(cut, "wb").write(data[:len(data) * 2 // 3 + 5])
    bad = bytearray(data)
    off = len(data) * 2 // 3  # the block at or after two thirds: its trailer made to disagree
    blk = 0
    while blk < off:
        blk += struct.unpack("<I", data[blk + 4:blk + 8])[0]
    n = struct.unpack("<I", data[blk + 4:blk + 8])[0]
    bad[blk + n - 4:blk + n] = struct.pack("<I", n + 4)
    badp = os.path.join(tmp, "bad.pcapng")
    open(badp, "wb").write(bytes(bad))
    for path, words in ((cut, "truncated"), (badp, "trailer")):
        db = os.path.join(tmp, os.path.basename(path) + ".db")
        rc, _, err = run(["-q", "--no-dpi", "-r", path, "-o", db], binary)
        eq(rc, 2, "exit for " + path)
        assert err.count("\n") == 1 and os.path.basename(path) in err and words in err and "byte" in err, err
        got = rows(db)
        assert 2 <= len(got) < len(whole) + 2, (len(got), len(whole))
        eq(rows(db, "SELECT status, skipped_files FROM runs")[0], {"status": "failed", "skipped_files": 1},
           "run of " + path)
    db = os.path.join(tmp, "ether.db")
    rc, _, err = run(["-q", "--no-dpi", "-r", ng, "-o", db, "ether", "host", "02:00:00:00:00:01"], binary)
    eq(rc, 1, "exit for a filter the SLL interface cannot take")
    assert err.count("\n") == 1 and "links.pcapng" in err and "filter" in err, err
    assert not os.path.exists(db), "database created"
