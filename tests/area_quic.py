# QUIC connections as flows (issue 28): every QUIC connection of ../shared/captures listed with
# tshark's version, server name and ALPN (tools/quiccheck.py), what a passive observer can
# state about each (amplification, Retry, 0-RTT, round trips), and QUIC rows beside TCP's.
# Run by tests/run.py with tests/helpers.py's names.
import importlib.util as quic_importlib
import struct

quic_spec = quic_importlib.spec_from_file_location("quiccheck", os.path.join(ROOT, "tools", "quiccheck.py"))
quiccheck = quic_importlib.module_from_spec(quic_spec)
quic_spec.loader.exec_module(quiccheck)


# Both builds' tests compare with the same tshark reads, and the ASan one's iwscope runs are
# shared-captures[asan]'s own (the same command): each made once per session (tests/runcache.py).
_quiccheck_tshark = quiccheck.tshark_connections


def _tshark_connections(path):
    """quiccheck.tshark_connections(path), read once per session."""
    return runcache.value("quiccheck.tshark_connections", [path], lambda: _quiccheck_tshark(path))


def _iwscope_connections(binary, path, d):
    """quiccheck.iwscope_connections (its command and rows) with the suite's environment, the
    run shared with the other tests that make it."""
    db = os.path.join(d, os.path.basename(path) + ".db")
    rc, _, err = runcache.run(binary, ["-q", "-r", path, "-o", db], ENV)
    if not os.path.exists(db):
        raise RuntimeError("%s: iwscope exited %d: %s" % (path, rc, err.decode(errors="replace").strip()))
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    got = con.execute("SELECT client_port, server_port, quic_version, server_name, alpn FROM flows "
                      "WHERE transport = 'quic'").fetchall()
    con.close()
    return [((r["client_port"], r["server_port"]), {"version": r["quic_version"], "sni": r["server_name"] or "",
                                                    "alpn": r["alpn"] or ""}) for r in got]


quiccheck.tshark_connections = _tshark_connections
quiccheck.iwscope_connections = _iwscope_connections


def quic_shared():
    if not os.path.isdir(SHARED):
        raise Skip("../shared/captures not present")
    if not shutil.which("tshark"):
        raise Skip("tshark not installed")
    caps = quiccheck.default_captures()
    if len(caps) < 10:
        raise Skip("only %d QUIC captures in ../shared/captures" % len(caps))
    return caps


@test("quic-connections-as-tshark-sees-them", ("release", "asan"))
def t_quic_vs_tshark(binary, tmp):
    """Each QUIC connection tshark shows in ../shared/captures (drafts 22-29, v1, mvfst, Google's
    Q035 in WeChat's capture, Q050 and T051, 0-RTT, Retry, version negotiation, ClientHellos
    split over several Initials) is one flow with transport quic, its client and server as
    tshark's, the version tshark shows last and, where tshark shows them, the same server name
    and first ALPN protocol; and iwscope lists no QUIC connection tshark does not."""
    out = list(quiccheck.compare(binary, quic_shared()))
    bad = ["%s %s %s" % (c, p, d) for c, p, _, _, d in out if d]
    eq(sum(1 for c, _, _, _, _ in out if c == "ndpi/wechat.pcap"), 3, "WeChat's Google QUIC Q035 connections")
    if len(out) < 20:
        raise AssertionError("only %d QUIC connections from tshark" % len(out))
    if bad:
        raise AssertionError("%d of %d differ:\n%s" % (len(bad), len(out), "\n".join(bad)))
    return "%d connections, version, name and ALPN as tshark's" % len(out)


QUIC_LOCAL = {"tcpdump/quic_retry.pcap": "retry.pcap",  # copies in tests/pcaps/quic (README.md there)
              "zeek/testing_btest_Traces_quic_curl-8.1.2-dev-http3-www-google-de.pcap": "curl-google.pcap"}


def quic_rows(binary, tmp, name):
    path = os.path.join(PCAPS, "quic", QUIC_LOCAL[name]) if name in QUIC_LOCAL else os.path.join(SHARED, name)
    if not os.path.exists(path):
        raise Skip(name + " not in ../shared/captures")
    db = analyse(binary, [path], tmp, ["--no-dpi"], os.path.basename(name) + ".db")
    return rows(db, "SELECT * FROM flows WHERE transport = 'quic'")


@test("quic-handshake-facts")
def t_quic_facts(binary, tmp):
    """What each handshake shows, against the packets (tshark -r F): curl's Initial is 1200
    bytes and Google's server answers with two datagrams of 1200 (2400 bytes, no more than
    3 x the client's 2400 before its Handshake packet); the Retry capture has quic_retry and a
    second round trip; draft-28's version negotiation has quic_vn, the version the client
    moved to and two round trips; 0-RTT is seen; Chromium's ClientHello split over several
    Initials still gives the name (without nDPI). No server is seen sending more than 3 x the
    client's bytes seen before the client's address was validated, in any shared capture (near
    the client that is no proof: quic-amplification-only-where-the-server-stopped)."""
    r = quic_rows(binary, tmp, "zeek/testing_btest_Traces_quic_curl-8.1.2-dev-http3-www-google-de.pcap")
    eq([(x["quic_c_initial"], x["quic_c_preval"], x["quic_s_preval"], x["s_iw_segs"], x["s_iw_bytes"],
         x["quic_hs_rtts"], x["handshake"]) for x in r], [(1200, 2400, 2400, 2, 2400, 1, "complete")], "curl")
    r = quic_rows(binary, tmp, "tcpdump/quic_retry.pcap")
    eq([(x["quic_retry"], x["quic_hs_rtts"], x["server_name"], x["alpn"]) for x in r],
       [(1, 2, "localhost", "h3")], "retry")
    r = quic_rows(binary, tmp, "ndpi/quic-28.pcap")
    eq([(x["quic_vn"], hex(x["quic_version"]), x["quic_hs_rtts"]) for x in r], [(1, "0xff00001b", 2)], "VN")
    r = quic_rows(binary, tmp, "ndpi/quic_0RTT.pcap")
    eq(sorted((x["server_port"], x["quic_0rtt"]) for x in r), [(443, 1), (4443, 1)], "0-RTT")
    r = quic_rows(binary, tmp, "zeek/testing_btest_Traces_quic_chromium-115.0.5790.110-google-de-fragmented.pcap")
    eq([x["server_name"] for x in r], ["www.google.de"], "a ClientHello in pieces")
    db = analyse(binary, quic_shared(), tmp, ["--no-dpi"], "all.db")
    checked = 0
    one_dir = 0
    for x in rows(db, "SELECT * FROM flows WHERE transport = 'quic'"):
        if x["quic_c_preval"] is None and 0x51303030 <= x["quic_version"] < 0x51303436:
            continue  # Google QUIC before Q046: when the address was validated is not seen
        if x["quic_c_preval"] is None:  # one direction in sight: nothing to compare
            eq(x["c_pkts"] == 0 or x["s_pkts"] == 0, True, "NULL preval with both sides seen")
            one_dir += 1
            continue
        assert x["quic_s_preval"] <= 3 * x["quic_c_preval"], x
        checked += 1
    eq(checked >= 15, True, "connections checked: %d (%d one direction)" % (checked, one_dir))
    return "curl, Retry, VN, 0-RTT, a split hello; 3x held everywhere"


@test("quic-beside-tcp")
def t_quic_beside_tcp(binary, tmp):
    """A QUIC capture and a TCP one as one run: TCP rows say transport tcp and carry no QUIC
    fields; QUIC rows carry no TCP SYN fields and their first flights are lower bounds in
    datagrams (never an exact IW: the packets' numbers and ACKs are encrypted)."""
    path = os.path.join(SHARED, "zeek", "testing_btest_Traces_quic_firefox-102.13.0esr-blog-cloudflare-com.pcap")
    if not os.path.exists(path):
        raise Skip("the Firefox QUIC capture is not in ../shared/captures")
    db = analyse(binary, [path, truth_pcap()], tmp, ["--no-dpi"])
    by = {}
    for r in rows(db):
        by.setdefault(r["transport"], []).append(r)
    eq(sorted(by), ["quic", "tcp"], "transports")
    for r in by["tcp"]:
        eq((r["quic_version"], r["alpn"], r["quic_c_preval"]), (None, None, None), "a TCP row's QUIC fields")
    q = by["quic"][0]
    eq((q["c_syn_win"], q["s_mss"], q["quic_version"], q["alpn"], q["server_name"]),
       (None, None, 1, "h3", "blog.cloudflare.com"), "the QUIC row")
    eq(q["s_iw_limit"] in ("ambiguous", "amplification") and q["s_iw_class"].startswith(">=IW"), True,
       "a lower bound: %s %s" % (q["s_iw_limit"], q["s_iw_class"]))
    return "tcp rows %d, quic row %s %s" % (len(by["tcp"]), q["s_iw_limit"], q["s_iw_class"])


@test("quic-amplification-only-where-the-server-stopped")
def t_quic_amp_not_claimed(binary, tmp):
    """Firefox against Cloudflare, captured near the client (tshark -r F -Y quic): the server's
    datagrams 2-4 (3600 bytes) arrive at 23.2-25.35 ms, the client's next (frame 5) at 25.59 ms
    and the server's 6-8 (2671 bytes) at 25.79 ms, 0.2 ms later on a 23 ms round trip: sent
    before frame 5 reached the server, so its flight went on past 3 x the client's 1357 bytes.
    The flight counted (3 datagrams, 3600 bytes) is a lower bound; the 3x limit did not stop it:
    ambiguous, quic_amp_limited 0, one round trip."""
    r = quic_rows(binary, tmp, "zeek/testing_btest_Traces_quic_firefox-102.13.0esr-blog-cloudflare-com.pcap")
    eq([(x["s_iw_limit"], x["quic_amp_limited"], x["s_iw_segs"], x["s_iw_bytes"], x["quic_hs_rtts"])
        for x in r], [("ambiguous", 0, 3, 3600, 1)], "Cloudflare's first flight")
    return "ambiguous >=IW3, not amplification"


@test("quic-gquic-unread-is-null")
def t_quic_gquic_null(binary, tmp):
    """Google QUIC Q050's packets are not read past their long header (tshark -r
    ndpi/quic_q50.pcap: Q050 long headers, then short ones): whether it had a Retry, 0-RTT or
    the spin bit, and so its round trips, are unknown (NULL), not 0; a version negotiation (the
    invariant packet, read for every version) none. T051 carries IETF QUIC's Initials: read."""
    r = quic_rows(binary, tmp, "ndpi/quic_q50.pcap")
    eq([(x["quic_version"], x["quic_retry"], x["quic_0rtt"], x["quic_spin"], x["quic_hs_rtts"], x["quic_vn"])
        for x in r], [(0x51303530, None, None, None, None, 0)], "Q050")
    r = quic_rows(binary, tmp, "ndpi/wechat.pcap")  # Q035: the public header (tshark streams 4, 6, 9)
    eq(sorted((x["client_port"], x["quic_version"], x["handshake"], x["quic_retry"], x["quic_c_preval"],
               x["quic_amp_limited"]) for x in r),
       [(p, 0x51303335, "complete", None, None, None) for p in (35601, 51507, 57591)], "Q035")
    r = quic_rows(binary, tmp, "ndpi/quic_t51.pcap")
    eq([(x["quic_version"], x["quic_retry"], x["quic_0rtt"], x["quic_hs_rtts"]) for x in r],
       [(0x54303531, 0, 0, 1)], "T051")
    return "Q050: retry, 0-RTT, spin and round trips NULL; T051 read"


@test("quic-verbose-line-says-quic", ("release", "asan"))
def t_quic_verbose_line(binary, tmp):
    """-v prints a line per flow with its transport after the addresses (the JSON lines have the
    column transport): curl's QUIC connection to Google says quic, a TCP flow beside it tcp."""
    _, out, _ = run(["--no-dpi", "-v", "-r", os.path.join(PCAPS, "quic", "curl-google.pcap"), "-r", truth_pcap(),
                     "-o", os.path.join(tmp, "v.db")], binary, 0)
    lines = out.splitlines()
    eq([l for l in lines if l.startswith("172.17.0.2.34347 ")],
       ["172.17.0.2.34347 > 64.233.166.94.443 quic complete - syn_win -/- rwnd -/- "
        "server >=IW2 ambiguous client >=IW1 ambiguous"], "the QUIC line")
    eq({l.split()[3] for l in lines}, {"quic", "tcp"}, "every line's transport")
    return "%d lines" % len(lines)


def gso_merge(src, dst, frames, jumbo=False):
    """Writes src to dst with the UDP payloads of frames (1-based numbers of consecutive
    Ethernet/IPv4/UDP frames of one sender) sent as one datagram, as a capture on a sending
    host that uses UDP GSO shows them (the stack splits it after the capture point)."""
    data = open(src, "rb").read()
    out, recs, off = [data[:24]], [], 24
    while off + 16 <= len(data):
        hdr = data[off:off + 16]
        incl = struct.unpack("<I", hdr[8:12])[0]
        recs.append((hdr, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    first = recs[frames[0] - 1]
    payload = b"".join(recs[n - 1][1][42:] for n in frames)
    if jumbo:  # no packet of the connection where the second segment would begin
        cut = len(recs[frames[0] - 1][1]) - 42
        payload = payload[:cut] + bytes(b ^ 0x5a for b in payload[cut:cut + 32]) + payload[cut + 32:]
    eth, ip = first[1][:14], bytearray(first[1][14:34])
    udp = bytearray(first[1][34:42])
    struct.pack_into("!H", ip, 2, 20 + 8 + len(payload))
    struct.pack_into("!H", ip, 10, 0)
    s = sum(struct.unpack("!10H", bytes(ip)))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    struct.pack_into("!H", ip, 10, ~s & 0xffff)
    struct.pack_into("!HH", udp, 4, 8 + len(payload), 0)
    frame = eth + bytes(ip) + bytes(udp) + payload
    for i, (hdr, body) in enumerate(recs, 1):
        if i == frames[0]:
            hdr = hdr[:8] + struct.pack("<II", len(frame), len(frame))
            body = frame
        elif i in frames:
            continue
        out.append(hdr + body)
    open(dst, "wb").write(b"".join(out))


@test("quic-gso-super-datagram")
def t_quic_gso(binary, tmp):
    """A GSO super-datagram counts as the datagrams it carries, as TSO does for TCP: Google's
    two 1200-byte datagrams of its first flight (curl-google.pcap frames 2 and 3) sent as one
    2400-byte datagram still count 2 datagrams (the connection's next packet, its DCID, begins
    at byte 1200) and 2400 bytes, and the server's packets count one fewer. The same datagram
    with nothing of the connection at any offset from 1200 to 1472 (a jumbo-frame path's one
    large datagram) counts one: never more than were sent."""
    src = os.path.join(PCAPS, "quic", "curl-google.pcap")
    gso = os.path.join(tmp, "gso.pcap")
    gso_merge(src, gso, [2, 3])
    db = analyse(binary, [gso], tmp, ["--no-dpi"], "gso.db")
    r = rows(db, "SELECT * FROM flows WHERE transport = 'quic'")
    eq([(x["s_iw_segs"], x["s_iw_bytes"], x["quic_s_preval"], x["s_pkts"]) for x in r],
       [(2, 2400, 2400, rows(analyse(binary, [src], tmp, ["--no-dpi"], "plain.db"),
                              "SELECT s_pkts FROM flows")[0]["s_pkts"] - 1)], "first flight in one datagram")
    jumbo = os.path.join(tmp, "jumbo.pcap")
    gso_merge(src, jumbo, [2, 3], jumbo=True)
    r = rows(analyse(binary, [jumbo], tmp, ["--no-dpi"], "jumbo.db"), "SELECT * FROM flows WHERE transport = 'quic'")
    eq([(x["s_iw_segs"], x["s_iw_bytes"]) for x in r], [(1, 2400)], "one large datagram")
    return "2400 B in one datagram: 2 datagrams; without a packet at a boundary: 1"


@test("quic-evicted-no-second-row")
def t_quic_evicted(binary, tmp):
    """QUIC connections evicted from a full flow table stay one row each: 2000 of the QUIC lab's
    connections (tools/benchgen, one start every 100 us, about a thousand open at once) under
    --flow-cap 1536 give 2000 connections with hundreds evicted, and a second row only where a
    connection evicted after its lone first Initial sent it again; before, an evicted
    connection's later Handshake packets started a second row. (The fingerprints sit in sets of eight of a table
    4x the cap, hashed with a seed of each run's: under a smaller cap a set can overflow, by
    chance, and forget one connection.)"""
    gen = os.path.join(ROOT, "build", "benchgen")
    if not os.path.exists(gen):
        raise AssertionError("build/benchgen first (make test builds it)")
    srcs = sorted(glob.glob(os.path.join(PCAPS, "quictruth", "*.server.pcap")))
    cap = os.path.join(tmp, "q.pcap")
    subprocess.run([gen, cap, "2000", "100"] + srcs, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    db = analyse(binary, [cap], tmp, ["--no-dpi", "--flow-cap", "1536"], "q.db")
    conns = rows(db, "SELECT client_ip, client_port, count(*) AS n, min(rowid) AS first FROM flows "
                     "WHERE transport = 'quic' GROUP BY 1, 2")
    ev = rows(db, "SELECT evicted FROM runs")[0]["evicted"]
    eq(len(conns), 2000, "connections")
    # a connection evicted after its first Initial alone, whose client sent that Initial again
    # (its keys still those of its own DCID: a new connection, for all a reused socket shows,
    # as a retransmitted SYN is for TCP) goes on in a second row; nothing else starts one
    firsts = rows(db, "SELECT f.c_pkts + f.s_pkts AS pkts, c.n FROM flows f JOIN (SELECT client_ip, "
                      "client_port, count(*) AS n, min(rowid) AS first FROM flows GROUP BY 1, 2) c "
                      "ON f.client_ip = c.client_ip AND f.client_port = c.client_port AND f.rowid = c.first")
    eq(sorted({x["n"] for x in firsts}) <= [1, 2], True, "rows per connection")
    eq([x["pkts"] for x in firsts if x["n"] == 2 and x["pkts"] != 1], [], "a second row after more than a lone Initial")
    eq(ev > 100, True, "evicted: %d" % ev)
    return "2000 connections, %d evicted, %d went on after a lone Initial" % (ev, sum(x["n"] == 2 for x in firsts))
