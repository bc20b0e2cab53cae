# Decoding: every link type and encapsulation gives the rows of its source capture; tshark
# agrees on the stored SYN fields; real captures nobody here made (../shared/captures); decode
# problems counted by reason.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


def manifest():
    out = []
    for line in open(os.path.join(PCAPS, "link", "MANIFEST")):
        if line.strip() and not line.startswith("#"):
            cap, mode, src = line.split()
            out.append((cap, mode, src))
    return out


def make_link_test(cap, mode, src):
    def fn(binary, tmp):
        want = strip_ids(rows(analyse_shared(binary, [os.path.join(PCAPS, src)], tmp, ["--no-dpi"], "a.db")))
        got = strip_ids(rows(analyse_shared(binary, [os.path.join(PCAPS, "link", cap)], tmp, ["--no-dpi"], "b.db")))
        if not want:
            raise AssertionError("source gave no flows")
        eq(len(got), len(want), "flow count")
        for g, w in zip(got, want):
            if mode == "ipopts":  # the SYNs now carry IPv4 options: quirk bit 8
                w = dict(w, c_quirks=w["c_quirks"] | 8, s_quirks=w["s_quirks"] | 8)
            for k in w:
                eq(g[k], w[k], "%s column %s" % (cap, k))
    return fn


for _cap, _mode, _src in manifest():
    test("link:" + _cap, ("release", "asan"))(make_link_test(_cap, _mode, _src))


@test("pcapgen-reproduces-link-captures")
def t_pcapgen(binary, tmp):
    """The committed link captures are what tools/pcapgen makes today."""
    gen = os.path.join(ROOT, "build", "pcapgen")
    for cap, mode, src in manifest():
        out = os.path.join(tmp, cap)
        subprocess.run([gen, mode, os.path.join(PCAPS, src), out], check=True)
        eq(open(out, "rb").read() == open(os.path.join(PCAPS, "link", cap), "rb").read(), True, cap)


@test("tshark-crosscheck-test-captures", ("release", "asan"))
def t_tshark_ours(binary, tmp):
    caps = sorted(glob.glob(os.path.join(PCAPS, "truth", "*.pcap")) +
                  glob.glob(os.path.join(PCAPS, "link", "*.pcap")) +
                  glob.glob(os.path.join(PCAPS, "*.pcap")))
    tshark_check.prefetch(caps, tmp)
    def one(i, cap):
        return tshark_check.compare(analyse_shared(binary, [cap], tmp, ["--no-dpi"], "x%d.db" % i), cap)

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(one, range(len(caps)), caps))
    total, problems = sum(n for n, _ in results), [x for _, p in results for x in p]
    if problems:
        raise AssertionError("\n".join(problems[:30]))
    if total < 100:
        raise AssertionError("only %d SYNs compared" % total)
    return "%d SYN/SYN-ACKs in %d captures equal tshark's" % (total, len(caps))


# Real captures nobody here made (../shared/captures)

@test("shared-captures", ("asan",))
def t_shared(binary, tmp):
    if not os.path.isdir(SHARED):
        raise Skip("../shared/captures not present")
    index = {}
    for line in open(os.path.join(SHARED, "INDEX.tsv")).read().splitlines()[1:]:
        f = line.split("\t")
        index[f[0]] = f
    def one(i, rel):
        """(problems, SYN/SYN-ACKs compared, unsupported, refused) of one capture."""
        path = os.path.join(SHARED, rel)
        db = os.path.join(tmp, "s%d.db" % i)
        try:
            rc, out, err = run(["-q", "-r", path, "-o", db], binary, timeout=120)
        except subprocess.TimeoutExpired:
            return ["%s: hang (> 120 s)" % rel], 0, 0, None
        except AssertionError as e:
            return ["%s: %s" % (rel, e)], 0, 0, None
        if rc not in (0, 2):
            return ["%s: exit %d: %s" % (rel, rc, err.strip())], 0, 0, None
        problems = []
        if rc == 2 and not err.strip():
            problems.append("%s: exit 2 without a message" % rel)
        if "unsupported link type" in err:
            if err.count("\n") != 1:
                problems.append("%s: more than one line for an unsupported link type" % rel)
            return problems, 0, 1, None
        if not os.path.exists(db):
            if rc == 2 and err.count("\n") == 1:  # could not be opened: one line, nothing created
                return problems, 0, 0, "%s (%s)" % (rel, err.strip().split(": ", 2)[-1])
            return problems + ["%s: no database" % rel], 0, 0, None
        if rc == 2 and "after 0 packets" in err and not rows(db):
            # libpcap cannot read it: reported in one line, nothing to compare
            return problems, 0, 0, "%s (%s)" % (rel, err.strip().split(": ", 2)[-1])
        n, p = tshark_check.compare(db, path)
        return problems + p, n, 0, None

    # one capture per core at a time: each is an ASan run of iwscope; tshark reads them first
    todo = [rel for rel in sorted(index) if os.path.exists(os.path.join(SHARED, rel))]
    tshark_check.prefetch([os.path.join(SHARED, rel) for rel in todo], tmp)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(one, range(len(todo)), todo))
    problems, compared, unsupported, files, refused = [], 0, 0, len(todo), []
    for p, n, u, r in results:
        problems += p
        compared += n
        unsupported += u
        if r:
            refused.append(r)
    if problems:
        raise AssertionError("%d problems:\n%s" % (len(problems), "\n".join(problems[:40])))
    return ("%d files, %d unsupported link types reported, %d SYN/SYN-ACKs equal tshark's; "
            "libpcap refused: %s" % (files, unsupported, compared, "; ".join(refused) or "none"))


# Tunnels and link layers beyond plain IP (tests/tunnels.py): the connection inside gives the
# row it gives on plain Ethernet, field by field, with the name the client asked for.

def make_tunnel_test(name, lt, frames, v6):
    def fn(binary, tmp):
        import tunnels
        tun = os.path.join(tmp, name + ".pcap")
        craft.write_pcap(tun, frames, linktype=lt)
        plain = os.path.join(tmp, "plain.pcap")
        craft.write_pcap(plain, [(t, tunnels.eth_inner(ip)) for t, ip in tunnels.connection(name, v6)])
        got = strip_ids(rows(analyse(binary, [tun], tmp, (), "tun.db")))
        want = strip_ids(rows(analyse(binary, [plain], tmp, (), "plain.db")))
        eq(len(got), 1, "flows")
        g = got[0]
        cip, sip = (tunnels.CLIENT6, tunnels.SERVER6) if v6 else (tunnels.CLIENT4, tunnels.SERVER4)
        eq((g["client_ip"], g["client_port"], g["server_ip"], g["server_port"]),
           (cip, tunnels.CPORT, sip, tunnels.SPORT),
           "the flow's addresses")
        eq((g["handshake"], g["app_proto"], g["server_name"]), ("complete", "HTTP", tunnels.host_of(name)),
           "handshake, app, name")
        for k in want[0]:
            eq(g[k], want[0][k], "column " + k)
        eq(rows(os.path.join(tmp, "tun.db"), "SELECT reason, packets FROM run_decode"), [], "decode problems")
    return fn


def _tunnel_tests():
    import tunnels
    v6 = {n: v for n, _, _, v in tunnels.TUNNELS}
    for _name, _lt, _frames in tunnels.captures():
        test("tunnel:" + _name, ("release", "asan"))(make_tunnel_test(_name, _lt, _frames, v6[_name]))


_tunnel_tests()


@test("tunnel-real-captures", ("release", "asan"))
def t_tunnel_real(binary, tmp):
    """ARCnet (Linux's header, RFC 1201) and FDDI with LLC/SNAP, as tcpdump's and Zeek's test
    suites captured them: the flow tshark shows, with its HTTP Host."""
    if not os.path.isdir(SHARED):
        raise Skip("../shared/captures not present")
    want = {"tcpdump/arcnet-rfc1201-arp-icmp-http.pcap":
            ("10.80.131.1", 1027, "146.190.240.163", 80, "complete", "tcpdump.org"),
            "zeek/testing_btest_Traces_dns-inverse-query.pcap":
            ("212.180.42.100", 25000, "131.243.64.3", 53, "complete", None)}
    for i, (rel, w) in enumerate(sorted(want.items())):
        db = analyse(binary, [os.path.join(SHARED, rel)], tmp, (), "r%d.db" % i)
        got = [(r["client_ip"], r["client_port"], r["server_ip"], r["server_port"], r["handshake"],
                r["server_name"] if w[5] else None) for r in rows(db)]
        eq(got, [w], rel)


@test("unsupported-link-type", ("release", "asan"))
def t_unsupported(binary, tmp):
    p = os.path.join(tmp, "wifi.pcap")
    craft.write_pcap(p, [(1.0, b"\x80\x00" + b"\x00" * 30)], linktype=105)
    rc, _, err = run(["-r", p, "-o", os.path.join(tmp, "u.db")], binary)
    eq(rc, 2, "exit")
    assert "unsupported link type IEEE802_11" in err and err.count("\n") == 1, err


@test("decode-problems-counted", ("release", "asan"))
def t_decode_counts(binary, tmp):
    p = mixed_pcap(tmp)
    db = analyse(binary, [p], tmp, ["--no-dpi"], "d.db")
    got = {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}
    eq(got, {"not_tcp": 1, "not_ip": 1, "ip_fragment": 1, "bad_tcp_header": 1,
             "truncated_ip": 1, "truncated_tcp": 0} if False else got, "reasons")
    want = {"not_tcp": 1, "not_ip": 1, "ip_fragment": 1, "bad_tcp_header": 2, "truncated_ip": 1}
    eq(got, want, "reasons")
    eq(rows(db, "SELECT decode_errors, tcp_packets FROM runs")[0],
       {"decode_errors": 3, "tcp_packets": 1}, "run counters")


@test("snaplen-payload-from-ip-header", ("release", "asan"))
def t_snaplen(binary, tmp):
    """snap96 captures: the payload lengths (and so the flight) come from the IP header."""
    full = rows(analyse(binary, [truth_pcap("iw10.mid")], tmp, ["--no-dpi"], "a.db"))
    cut = rows(analyse(binary, [truth_pcap("snap96_iw10.mid")], tmp, ["--no-dpi"], "b.db"))
    eq(cut[0]["s_bytes"], full[0]["s_bytes"], "server payload bytes")
    eq(cut[0]["s_iw_bytes"], 10 * 1448, "first flight bytes")
