# Hostile captures: headers that lie, options that never end, IPv6 extension chains, sequence
# wrap, time going backwards, mixed pcapng, a 1M SYN flood; each with its expected behaviour.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("hostile:caplen-beyond-snaplen-and-record", ("release", "asan"))
def t_caplen(binary, tmp):
    """A record claiming more bytes than the snaplen (or the file) ends the file with one
    message; rows before it are kept (exit 2)."""
    p = os.path.join(tmp, "big.pcap")
    hostile.hostile_caplen_big(p)
    db = os.path.join(tmp, "a.db")
    rc, _, err = run(["-q", "-r", p, "-o", db], binary)
    eq(rc, 2, "exit")
    assert "big.pcap" in err and err.count("\n") == 1, err
    eq(len(rows(db)), 1, "row before the bad record")
    p = os.path.join(tmp, "short.pcap")
    hostile.hostile_caplen_short(p)  # record cut by the end of file
    rc, _, err = run(["-q", "-r", p, "-o", os.path.join(tmp, "b.db")], binary)
    eq(rc, 2, "exit for a record longer than the file")
    eq(len(rows(os.path.join(tmp, "b.db"))), 1, "row kept")


@test("hostile:zero-length-and-tiny-packets", ("release", "asan"))
def t_zero(binary, tmp):
    p = os.path.join(tmp, "zero.pcap")
    hostile.hostile_zero(p)
    db = analyse(binary, [p], tmp, ["--no-dpi"])
    eq(len(rows(db)), 1, "the SYN after the empty records")
    got = {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}
    eq(got, {"truncated_link": 3}, "counted")


@test("hostile:header-lengths-past-the-packet", ("release", "asan"))
def t_lengths(binary, tmp):
    p = os.path.join(tmp, "len.pcap")
    hostile.hostile_lengths(p)
    db = analyse(binary, [p], tmp, ["--no-dpi"])
    got = {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}
    eq(got, {"bad_ip_header": 1, "truncated_ip": 1, "bad_tcp_header": 1}, "reasons")
    r = rows(db)
    eq(len(r), 1, "the SYN whose total length lies is kept")
    eq(r[0]["c_syn_bytes"], 65535 - 20 - 40, "its payload length comes from the IP header")


@test("hostile:options-that-never-end", ("release", "asan"))
def t_options(binary, tmp):
    p = os.path.join(tmp, "opts.pcap")
    hostile.hostile_options(p)
    r = rows(analyse(binary, [p], tmp, ["--no-dpi"]))[0]
    eq((r["c_mss"], r["c_ts"], r["c_quirks"] & 1, r["c_olayout"]), (1460, None, 1, "mss,ts"), "client SYN")
    eq((r["s_mss"], r["s_wscale"], r["s_quirks"] & 1), (1460, None, 1), "server SYN-ACK")


@test("hostile:ipv6-extension-chains", ("release", "asan"))
def t_v6chain(binary, tmp):
    p = os.path.join(tmp, "v6.pcap")
    hostile.hostile_v6chain(p)
    db = analyse(binary, [p], tmp, ["--no-dpi"])
    eq(len(rows(db)), 1, "flows")
    got = {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}
    eq(got, {"ipv6_ext_unsupported": 2, "bad_ip_header": 1}, "reasons")


@test("hostile:sequence-wrap-in-first-flight", ("release", "asan"))
def t_wrap(binary, tmp):
    """A server ISN 3000 bytes below 2^32: its IW10 flight wraps and is still IW10, by timing."""
    p = os.path.join(tmp, "wrap.pcap")
    hostile.hostile_wrap(p)
    r = rows(analyse(binary, [p], tmp, ["--no-dpi"]))[0]
    eq((r["s_iw_limit"], r["s_iw_segs"], r["s_iw_bytes"], r["s_iw_rule"]), ("cwnd", 10, 14600, "timing"), "flight")
    eq((r["c_iw_limit"], r["c_iw_segs"]), ("app", 1), "client flight across its own wrap")


@test("hostile:timestamps-going-backwards", ("release", "asan"))
def t_backwards(binary, tmp):
    p = os.path.join(tmp, "back.pcap")
    hostile.hostile_backwards(p)
    r = rows(analyse(binary, [p], tmp, ["--no-dpi"]))
    eq(len(r), 1, "one flow, not expired by the jump")
    eq((r[0]["handshake"], r[0]["rtt_s_us"]), ("complete", None), "no negative RTT")


@test("hostile:pcapng-interfaces-of-different-link-types", ("release", "asan"))
def t_pcapng_multi(binary, tmp):
    """A pcapng whose two interfaces differ in link type (Ethernet, raw IP), which libpcap
    refuses, is read whole, each packet by its own interface's link type: the raw-IP SYN is the
    Ethernet one's retransmission, as in the pcapng of two Ethernet interfaces."""
    p = os.path.join(tmp, "multi.pcapng")
    hostile.hostile_pcapng_multi(p)
    db = analyse(binary, [p], tmp, ["--no-dpi"], "a.db")
    eq(rows(db, "SELECT packets, tcp_packets, decode_errors FROM runs")[0],
       {"packets": 2, "tcp_packets": 2, "decode_errors": 0}, "both packets analysed")
    p = os.path.join(tmp, "one.pcapng")
    hostile.hostile_pcapng_one(p)
    one = analyse(binary, [p], tmp, ["--no-dpi"], "b.db")
    eq(rows(one, "SELECT c_syn_retx FROM flows")[0]["c_syn_retx"], 1, "second SYN is a retransmission")
    eq(comparable(rows(db)), comparable(rows(one)), "rows of the two-link-type file")


@test("hostile:syn-flood-1M")
def t_flood(binary, tmp):
    """1 M SYNs from random addresses: memory stays under the table cap, evictions counted."""
    import resource
    p = os.path.join(tmp, "flood.pcap")
    syn_flood(p, 1000000)
    db = os.path.join(tmp, "f.db")
    t0 = time.time()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", binary, "-q", "-r", p, "-o", db, "--flow-cap", "65536"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    eq(r.returncode, 0, "exit: " + r.stderr)
    rss_kib = int(r.stderr.strip().splitlines()[-1])
    run_row = rows(db, "SELECT packets, flows, evicted FROM runs")[0]
    eq(run_row["packets"], 1000000, "packets")
    eq(run_row["flows"], rows(db, "SELECT count(*) AS n FROM flows")[0]["n"], "rows = flows")
    assert run_row["evicted"] >= 1000000 - 65536 - 1000, run_row
    assert rss_kib < 96 * 1024, "peak RSS %d KiB" % rss_kib
    return "%d flows, %d evicted, peak RSS %.1f MiB, %.1f s" % (run_row["flows"], run_row["evicted"],
                                                                 rss_kib / 1024, time.time() - t0)
