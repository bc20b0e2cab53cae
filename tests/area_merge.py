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
    eq(rc, 3, "exit with a missing file: skipped, the others analysed (issue 31)")
    eq(err.count("\n"), 1, "one line: " + err)
    assert "missing.pcap" in err and "No such file" in err, err
    eq(comparable(rows(db)), want, "rows of the other two")
    eq(rows(db, "SELECT status, skipped_files FROM runs")[0], {"status": "partial", "skipped_files": 1}, "run")
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


# Live capture on two interfaces: a tap's two ports

# the columns that say what a flow is and what iwscope found, without its times (two captures
# of one packet are stamped microseconds apart)
TIMELESS = ("ts_us", "syn_us", "synack_us", "ack_us", "rtt_us", "rtt_c_us", "rtt_s_us",
            "c_ff_start_us", "s_ff_start_us", "c_ff_end_us", "s_ff_end_us", "c_iw_pause_us",
            "s_iw_pause_us", "duration_us", "flow_key")


def tap_ports(ns, probe):
    """A passive tap on the lab's middle link (router r1's r1m to router r2's r2m), its two
    ports in the namespace probe: every frame r2m receives (the client's) is copied out of tA0
    and arrives on tA1, every frame r1m receives (the server's) out of tB0 and arrives on tB1
    (tc mirred), as a tap's two ports give a connection's two directions. (The frames on that
    link were sent by the delay lines, so they carry no departure time: every packet socket
    reads the one time a copy arrived at, as on a real tap's ports. A frame TCP sent keeps
    its departure time across veth, and each socket would stamp its copy itself.)"""
    cmds = [(None, ["ip", "netns", "add", probe]),
            (probe, ["ip", "link", "set", "lo", "up"])]
    for where, dev, port in ((ns["r2"], "r2m", "tA"), (ns["r1"], "r1m", "tB")):
        cmds += [(where, ["ip", "link", "add", port + "0", "type", "veth", "peer", "name", port + "1",
                          "netns", probe])]
        for d, w in ((port + "0", where), (port + "1", probe)):
            cmds.append((w, ["ethtool", "-K", d, "tso", "off", "gso", "off", "gro", "off", "tx",
                             "off", "rx", "off"]))
            cmds.append((w, ["ip", "link", "set", d, "up"]))
        cmds += [(where, ["tc", "qdisc", "add", "dev", dev, "clsact"]),
                 (where, ["tc", "filter", "add", "dev", dev, "ingress", "u32", "match", "u32", "0",
                          "0", "action", "mirred", "egress", "mirror", "dev", port + "0"])]
    for where, cmd in cmds:
        r = subprocess.run((["ip", "netns", "exec", where] if where else []) + cmd,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0 and cmd[0] != "ethtool":
            if cmd[0] == "tc":
                raise Skip("tc cannot mirror here: " + r.stderr.strip())
            raise AssertionError("%s: %s" % (" ".join(cmd), r.stderr))


def tcp_ports(path):
    """(source, destination) port of every TCP/IPv4 frame of an Ethernet pcap file."""
    out = []
    for _, f in hostile.pcap_records(path)[1]:
        if f[12:14] == b"\x08\x00" and f[23] == 6:
            t = 14 + (f[14] & 15) * 4
            out.append(struct.unpack("!HH", f[t:t + 4]))
    return out


def live_side_by_side(binary, tr, ns, runs, transfers, procs, extra=(), env=None,
                      ready=lambda: True):
    """Starts `iwscope -i DEV ... -o DB --no-ui EXTRA` in namespace NETNS for each (DB, [DEV,
    ...], NETNS) of runs, side by side; once each wrote its run row and ready() holds, the lab's
    client (namespace ns["c"]) makes the transfers; once every run holds their rows, stops each
    with SIGINT, which it must exit 0 from. Returns (the flows made, each run's stderr). The
    processes go into procs, for the caller's clean-up."""
    caps = []
    for db, devs, where in runs:
        args = [a for d in devs for a in ("-i", d)]
        caps.append(subprocess.Popen(["ip", "netns", "exec", where, binary] + args +
                                     ["-o", db, "--no-ui"] + list(extra), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=env or ENV))
    procs += caps
    for db, _, _ in runs:
        wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 15, "the run row")
    wait_for(ready, 10, "the captures beside")
    time.sleep(0.5)
    cl = subprocess.run(["ip", "netns", "exec", ns["c"], "python3", tr.APP, "client", tr.S4,
                         "8080", "0.05"] + transfers, stdout=subprocess.PIPE, text=True, timeout=120)
    want = flows_of(transfers)
    eq(len(cl.stdout.splitlines()), want, "transfers")
    for db, _, _ in runs:
        wait_for(lambda: (count_rows(db) or 0) >= want, 20, "the rows of %d flows" % want)
    time.sleep(0.5)
    for c in caps:
        c.send_signal(signal.SIGINT)
    errs = [c.communicate(timeout=30)[1] for c in caps]
    for c, err in zip(caps, errs):
        eq(c.returncode, 0, "iwscope's exit after SIGINT: " + err)
    return want, errs


@test("live-two-interfaces-are-one-capture", ("release", "asan"))
def t_live_two(binary, tmp, env=None):
    """iwscope -i tA1 -i tB1 on a tap's two ports (each carrying one direction of the lab's
    traffic): the rows are those of tcpdump's recordings of the two ports read offline as one
    capture (-r A -r B), field by field, and every verdict and SYN column equals a capture of
    both directions on the same link (r1m); runs.source and the summary name both."""
    need_root()
    need_tool("tc")
    tr = netns()
    assert os.path.exists(tr.DELAYLINE), "the lab's delay line is not built: make tools"
    ns = tr.names("-m2%d" % os.getpid())
    probe = "iwt-p-m2%d" % os.getpid()
    os.chmod(tmp, 0o755)
    procs = []
    two, one = os.path.join(tmp, "two.db"), os.path.join(tmp, "one.db")
    pa, pb = os.path.join(tmp, "a.pcap"), os.path.join(tmp, "b.pcap")
    # receive time stamps for every packet, as in live_vs_offline: the packet sockets on one
    # interface then read one time per frame
    stamp = subprocess.Popen(["python3", "-c", "import socket,time; s=socket.socket(socket.AF_INET,"
                              " socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET,"
                              " 29, 1); print('on', flush=True); time.sleep(600)"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(stamp)
    eq(stamp.stdout.readline().strip(), "on", "receive timestamps asked for")
    transfers = ["GET:1000", "GET:14600", "GET:43440", "GET:120000", "GET:14600:par=3"] * 2
    try:
        procs += tr.lab({"name": "tap", "iw": 10}, 4000, 4000, app_server=True, ns=ns)
        tap_ports(ns, probe)
        tds = [subprocess.Popen(["ip", "netns", "exec", probe, "tcpdump", "-i", dev, "-s", "9216",
                                 "-U", "-w", out, "tcp"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for dev, out in (("tA1", pa), ("tB1", pb))]
        procs += tds
        want, errs = live_side_by_side(
            binary, tr, ns, [(two, ["tA1", "tB1"], probe), (one, ["r1m"], ns["r1"])], transfers,
            procs, ["--threads", "2"], env, ready=lambda: os.path.exists(pa) and os.path.exists(pb))
        for p in tds:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=10)
    finally:
        for p in procs:
            tr.stop(p)
        tr.teardown(ns)
        subprocess.run(["ip", "netns", "del", probe], stderr=subprocess.DEVNULL)
    # each port carried one direction
    eq({d for _, d in tcp_ports(pa)}, {8080}, "port A: client to server only")
    eq({s for s, _ in tcp_ports(pb)}, {8080}, "port B: server to client only")
    off = analyse(binary, [pa, pb], tmp, [], "off.db")
    live = rows(two)
    eq(len(live), want, "rows of the two-port capture")
    a, b = comparable(live, also=("flow_key",)), comparable(rows(off), also=("flow_key",))
    if a != b:
        diff = [{k: (v, dict(y).get(k)) for k, v in dict(x).items() if dict(y).get(k) != v}
                for x, y in zip(a, b) if x != y][:2]
        raise AssertionError("two-port rows differ from the ports' recordings read offline: %r" % diff)
    eq(comparable(live, also=TIMELESS), comparable(rows(one), also=TIMELESS),
       "verdict and SYN columns of two ports and of the link's interface")
    run_row = rows(two, "SELECT source, pcap_dropped, pcap_received, packets FROM runs")[0]
    eq((run_row["source"], run_row["pcap_dropped"]), ("tA1 tB1", 0), "run")
    assert abs(run_row["pcap_received"] - run_row["packets"]) <= 2, run_row
    assert re.search(r"tA1: \d+ received, 0 dropped; tB1: \d+ received, 0 dropped", errs[0]), errs[0]
    return "%d flows alike; %d packets over two ports" % (len(live), run_row["packets"])


@test("live-two-interfaces-under-tsan")
def t_live_two_tsan(binary, tmp):
    """The same two ports under ThreadSanitizer (the stages, the release in time order and the
    workers): no race reported, and the rows are the same."""
    if not os.path.exists(TSAN_BIN):
        raise AssertionError("no ThreadSanitizer build: make tsan")
    env = dict(ENV, TSAN_OPTIONS="halt_on_error=1:exitcode=66")
    return t_live_two(TSAN_BIN, tmp, env)


@test("live-several-interfaces-command-line", ("release", "asan"))
def t_live_cli(binary, tmp):
    """-i twice with one name, or more than 8 -i, is a one-line usage error; --help says that
    several -i are one capture. As root, an interface that cannot be opened among several is
    one line naming it, and no database is made."""
    db = os.path.join(tmp, "x.db")
    rc, _, err = run(["-i", "lo", "-i", "lo", "-o", db, "--no-ui"], binary)
    eq((rc, err.count("\n")), (1, 1), "the same interface twice: " + err)
    assert "-i lo given twice" in err, err
    rc, _, err = run([a for i in range(9) for a in ("-i", "x%d" % i)] + ["-o", db], binary)
    eq((rc, err.count("\n")), (1, 1), "nine interfaces: " + err)
    assert "at most 8" in err, err
    out = run(["--help"], binary)[1]
    assert "several -i" in out and "merged by packet time" in out, out
    if os.geteuid() == 0:
        rc, _, err = run(["-i", "lo", "-i", "nosuchif0", "-o", db, "--no-ui"], binary)
        eq(rc, 2, "exit")
        assert "nosuchif0: no such interface" in err and err.count("\n") == 1, err
    assert not os.path.exists(db), "database created without a capture"


@test("same-capture-twice-merged-or-piped", ("release", "asan"))
def t_same_capture_twice(binary, tmp):
    """The same capture in two files' runs (another name), merged: refused in one line naming
    both runs, unless --append; the same capture piped twice to -r -: a warning that its flows
    now count twice, and --replace puts the new run in the earlier one's place (runs.digest,
    issue 31 item 8)."""
    cap = truth_pcap()
    copy = os.path.join(tmp, "copy.pcap")
    shutil.copy(cap, copy)
    a = analyse(binary, [cap], tmp, ["--no-dpi"], "a.db")
    b = analyse(binary, [copy], tmp, ["--no-dpi"], "b.db")
    eq(len({r["digest"] for r in rows(a, "SELECT digest FROM runs") + rows(b, "SELECT digest FROM runs")}),
       1, "one digest for one capture")
    out = os.path.join(tmp, "m.db")
    rc, _, err = run(["merge", a, b, "-o", out], binary)
    eq(rc, 2, "merge of the same capture twice: " + err)
    assert "read the same capture" in err and "--append" in err, err
    eq(count_rows(out), 4, "only the first file's flows")
    run(["merge", "--append", a, b, "-o", out], binary, 0)
    eq(count_rows(out), 8, "--append: both")
    db = os.path.join(tmp, "p.db")
    data = open(cap, "rb").read()
    run(["-q", "--no-dpi", "-r", "-", "-o", db], binary, 0, stdin=data)
    rc, _, err = run(["-q", "--no-dpi", "-r", "-", "-o", db], binary, stdin=data)
    eq(rc, 0, err)
    assert "same capture as run" in err and "count twice" in err, err
    eq(count_rows(db), 8, "counted twice, as said")
    rc, _, err = run(["-q", "--no-dpi", "--replace", "-r", "-", "-o", db], binary, stdin=data)
    eq((rc, count_rows(db), count_rows(db, "SELECT count(*) FROM runs")), (0, 4, 1), "--replace: " + err)


def copy_counts(db):
    return {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}


@test("merge:packets-held-twice-count-once", ("release", "asan"))
def t_copies(binary, tmp):
    """A capture that holds every packet twice (a SPAN port given both ports of a link, two
    taps around a router: the copy 40 us later, its TTL one lower), the two capture points as
    two inputs (also with the second's snaplen 300: a QUIC datagram whole at one point and cut
    at the other), and the same file given twice: the rows of the capture itself, every column
    (nDPI's too), for TCP and QUIC; each copy counted in run_decode as 'copy'. Before, every
    TCP flight read 'loss' (no verdict) and QUIC's first flights counted twice."""
    import conditions
    out = []
    for k, cap in enumerate((truth_pcap(), os.path.join(PCAPS, "quictruth", "cc_cubic.mid.pcap"))):
        n = packets_of(cap)
        whole = rows(analyse(binary, [cap], tmp, [], "whole%d.db" % k))
        assert whole and not any(r["s_iw_limit"] == "loss" for r in whole), whole
        want = comparable(whole)
        dbl, late = os.path.join(tmp, "doubled%d.pcap" % k), os.path.join(tmp, "late%d.pcap" % k)
        conditions.doubled(cap, dbl)
        conditions.doubled(cap, late, copies_only=True)
        cut = os.path.join(tmp, "cut%d.pcap" % k)
        conditions.doubled(cap, cut, copies_only=True, snap=300)
        for name, files in (("doubled", [dbl]), ("two-points", [cap, late]), ("same-file", [cap, cap]),
                            ("two-snaplens", [cap, cut])):
            db = analyse(binary, files, tmp, [], "%s%d.db" % (name, k))
            eq(comparable(rows(db)), want, "%s: rows of %s" % (name, os.path.basename(cap)))
            eq(copy_counts(db).get("copy"), n, "%s: copies of %s" % (name, os.path.basename(cap)))
            eq(rows(db, "SELECT decode_errors, packets FROM runs")[0], {"decode_errors": 0, "packets": 2 * n},
               name + ": run")
        _, _, err = run(["--no-ui", "--no-dpi", "-r", dbl, "-o", os.path.join(tmp, "said%d.db" % k)],
                        binary, 0)
        assert "%d packets held twice" % n in err, err
        out.append("%s: %d flows" % (os.path.basename(cap), len(want)))
    return "; ".join(out) + ", alike doubled, from two capture points and from one file twice"


@test("real-captures-holding-copies", ("release", "asan"))
def t_real_copies(binary, tmp):
    """Real captures that hold packets twice (../shared/captures, each copy read by eye with
    tshark: equal IP ID, numbers and bytes, TTL one or two lower or the same, 0 to 300 us
    later): their copies counted; where every packet came twice, no flow reads 'loss' any
    more (each read 'loss' before: every segment looked sent again)."""
    if not os.path.isdir(SHARED):
        raise Skip("../shared/captures not present")
    want = {"suricata-verify/bug-5867-fp-drop-01__input.pcap": (75, True),  # all twice, IP ID 0
            "ndpi/ftp-start-tls.pcap": (16, True),   # TTL 63 and 61: before and after two hops
            "ndpi/h323.pcap": (10, False),           # one flow's, the same microsecond
            "zeek/testing_btest_Traces_rdp_rdp-no-cookie-mstshash.pcap": (10, False)}
    for rel, (n, all_twice) in want.items():
        db = analyse(binary, [os.path.join(SHARED, rel)], tmp, ["--no-dpi"], "r.db")
        eq(copy_counts(db).get("copy"), n, rel + ": copies")
        got = rows(db)
        assert got, rel
        if all_twice:
            assert not any("loss" in (r["c_iw_limit"], r["s_iw_limit"]) for r in got), (rel, got)
        os.remove(db)
    return "%d captures, %d copies" % (len(want), sum(n for n, _ in want.values()))


@test("live-both-ports-of-a-router-count-once", ("release", "asan"))
def t_live_both_ports(binary, tmp):
    """iwscope -i r1c -i r1m: both ports of the lab's first router (as a SPAN session given both
    ports of a link delivers them), so that every packet comes twice, the copy as late as the
    router delays it: the verdict and SYN columns are those of one port alone (-i r1m, captured
    at the same time), and about half the packets are counted as copies. Before, every flight
    read 'loss'."""
    need_root()
    tr = netns()
    assert os.path.exists(tr.DELAYLINE), "the lab's delay line is not built: make tools"
    ns = tr.names("-cp%d" % os.getpid())
    os.chmod(tmp, 0o755)
    procs = []
    both, one = os.path.join(tmp, "both.db"), os.path.join(tmp, "one.db")
    transfers = ["GET:1000", "GET:14600", "GET:43440", "GET:120000"] * 2
    try:
        # router1 delays client -> server by 300 us: each such packet's copy comes 300 us late
        procs += tr.lab({"name": "copies", "iw": 10}, 300, 20000, app_server=True, ns=ns)
        want, errs = live_side_by_side(binary, tr, ns, [(both, ["r1c", "r1m"], ns["r1"]),
                                                        (one, ["r1m"], ns["r1"])], transfers, procs)
    finally:
        for p in procs:
            tr.stop(p)
        tr.teardown(ns)
    got, alone = rows(both), rows(one)
    eq(len(got), want, "rows of the two ports")
    assert not any("loss" in (r["c_iw_limit"], r["s_iw_limit"]) for r in got), got
    assert sum(r["s_iw_limit"] == "cwnd" for r in got) >= 4, got
    eq(comparable(got, also=TIMELESS), comparable(alone, also=TIMELESS),
       "verdict and SYN columns of both ports and of one")
    copies = copy_counts(both).get("copy", 0)
    packets = rows(both, "SELECT packets FROM runs")[0]["packets"]
    assert abs(2 * copies - packets) <= 4, (copies, packets)
    assert "held twice" in errs[0], errs[0]
    return "%d flows alike; %d of %d packets copies" % (len(got), copies, packets)
