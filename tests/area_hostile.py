# Hostile captures: headers that lie, options that never end, IPv6 extension chains, sequence
# wrap, time going backwards, mixed pcapng, a 1M SYN flood; each with its expected behaviour.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("hostile:caplen-beyond-snaplen-and-record", ("release", "asan"))
def t_caplen(binary, tmp):
    """A record claiming more bytes than the snaplen (or the file) ends the file with one
    message; rows before it are kept (exit 2)."""
    syn = one_syn()
    p = os.path.join(tmp, "big.pcap")
    raw_pcap(p, [(len(syn), len(syn), syn), (300000, 300000, b"\x00" * 64)])
    db = os.path.join(tmp, "a.db")
    rc, _, err = run(["-q", "-r", p, "-o", db], binary)
    eq(rc, 2, "exit")
    assert "big.pcap" in err and err.count("\n") == 1, err
    eq(len(rows(db)), 1, "row before the bad record")
    p = os.path.join(tmp, "short.pcap")
    raw_pcap(p, [(len(syn), len(syn), syn), (500, 500, syn)])  # record cut by the end of file
    rc, _, err = run(["-q", "-r", p, "-o", os.path.join(tmp, "b.db")], binary)
    eq(rc, 2, "exit for a record longer than the file")
    eq(len(rows(os.path.join(tmp, "b.db"))), 1, "row kept")


@test("hostile:zero-length-and-tiny-packets", ("release", "asan"))
def t_zero(binary, tmp):
    syn = one_syn()
    p = os.path.join(tmp, "zero.pcap")
    raw_pcap(p, [(0, 0, b""), (0, 60, b""), (1, 1, b"\x45"), (len(syn), len(syn), syn)])
    db = analyse(binary, [p], tmp, ["--no-dpi"])
    eq(len(rows(db)), 1, "the SYN after the empty records")
    got = {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}
    eq(got, {"truncated_link": 3}, "counted")


@test("hostile:header-lengths-past-the-packet", ("release", "asan"))
def t_lengths(binary, tmp):
    syn = bytearray(one_syn())
    bad_ihl = bytearray(syn)
    bad_ihl[14] = 0x4F                      # IHL 60 bytes, total length 40
    bad_ihl[16:18] = b"\x00\x28"
    cut_ihl = bytes(bad_ihl[:14 + 30])      # IHL 60 bytes, 30 captured
    bad_tot = bytearray(syn)
    bad_tot[16:18] = b"\xff\xff"            # total length 65535, 60 captured: payload from the header
    bad_doff = bytearray(syn)
    bad_doff[14 + 20 + 12] = 0xF0           # data offset 60 bytes > segment 40
    p = os.path.join(tmp, "len.pcap")
    craft.write_pcap(p, [(1.0, bytes(bad_ihl)), (1.05, cut_ihl), (1.1, bytes(bad_doff)),
                         (1.2, bytes(bad_tot))])
    db = analyse(binary, [p], tmp, ["--no-dpi"])
    got = {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}
    eq(got, {"bad_ip_header": 1, "truncated_ip": 1, "bad_tcp_header": 1}, "reasons")
    r = rows(db)
    eq(len(r), 1, "the SYN whose total length lies is kept")
    eq(r[0]["c_syn_bytes"], 65535 - 20 - 40, "its payload length comes from the IP header")


@test("hostile:options-that-never-end", ("release", "asan"))
def t_options(binary, tmp):
    c = craft.Conn(cport=41001)
    c.c(0, "S", 0, 0, opts=b"\x02\x04\x05\xb4\x08\x00\x01\x01")   # TS option of length 0
    c.s(0.01, "SA", 0, 1, opts=b"\x02\x04\x05\xb4\x03\x05\x07\x00")  # ws runs past the header
    p = os.path.join(tmp, "opts.pcap")
    craft.write_pcap(p, c.out)
    r = rows(analyse(binary, [p], tmp, ["--no-dpi"]))[0]
    eq((r["c_mss"], r["c_ts"], r["c_quirks"] & 1, r["c_olayout"]), (1460, None, 1, "mss,ts"), "client SYN")
    eq((r["s_mss"], r["s_wscale"], r["s_quirks"] & 1), (1460, None, 1), "server SYN-ACK")


@test("hostile:ipv6-extension-chains", ("release", "asan"))
def t_v6chain(binary, tmp):
    import struct
    tcp = craft.tcp(41002, 80, 1, 0, "S", opts=craft.tcp_options(mss=1440))
    def v6(next_hdr, payload):
        return struct.pack("!IHBB", 0x60000000, len(payload), next_hdr, 64) + b"\x20\x01" + b"\x00" * 13 + b"\x01" + b"\x20\x01" + b"\x00" * 13 + b"\x02" + payload
    def chain(n, last):
        body = tcp
        nxt = 6
        for _ in range(n):
            body = bytes([nxt, 0]) + b"\x01\x04\x00\x00\x00\x00" + body
            nxt = 60
        return v6(nxt, body)
    frames = [(1.0, craft.ether(chain(3, 6), 0x86dd)),          # 3 headers: decoded
              (1.1, craft.ether(chain(40, 6), 0x86dd)),         # 40 headers: refused
              (1.2, craft.ether(v6(60, b"\x06\xff" + b"\x00" * 6), 0x86dd)),  # length past the end
              (1.3, craft.ether(v6(50, b"\x00" * 16), 0x86dd))]  # ESP
    p = os.path.join(tmp, "v6.pcap")
    craft.write_pcap(p, frames)
    db = analyse(binary, [p], tmp, ["--no-dpi"])
    eq(len(rows(db)), 1, "flows")
    got = {r["reason"]: r["packets"] for r in rows(db, "SELECT reason, packets FROM run_decode")}
    eq(got, {"ipv6_ext_unsupported": 2, "bad_ip_header": 1}, "reasons")


@test("hostile:sequence-wrap-in-first-flight", ("release", "asan"))
def t_wrap(binary, tmp):
    """A server ISN 3000 bytes below 2^32: its IW10 flight wraps and is still IW10, by timing."""
    c = craft.Conn(cport=41003, sisn=2**32 - 3000, cisn=2**32 - 5)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.0001, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.0200, "A", 1, 1)
    c.c(0.0001, "PA", 1, 1, payload=b"get")
    for i in range(10):
        c.s(0.0001, "A", 1 + 1460 * i, 4, payload=bytes(1460))
    c.c(0.0199, "A", 4, 1 + 1460)
    for i in range(10, 14):
        c.s(0.0001, "A", 1 + 1460 * i, 4, payload=bytes(1460))
    p = os.path.join(tmp, "wrap.pcap")
    craft.write_pcap(p, c.out)
    r = rows(analyse(binary, [p], tmp, ["--no-dpi"]))[0]
    eq((r["s_iw_limit"], r["s_iw_segs"], r["s_iw_bytes"], r["s_iw_rule"]), ("cwnd", 10, 14600, "timing"), "flight")
    eq((r["c_iw_limit"], r["c_iw_segs"]), ("app", 1), "client flight across its own wrap")


@test("hostile:timestamps-going-backwards", ("release", "asan"))
def t_backwards(binary, tmp):
    c = craft.Conn(cport=41004)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.01, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.01, "A", 1, 1)
    pk = list(c.out)
    pk[1] = (pk[1][0] - 100.0, pk[1][1])   # the SYN-ACK stamped 100 s before the SYN
    p = os.path.join(tmp, "back.pcap")
    craft.write_pcap(p, pk)
    r = rows(analyse(binary, [p], tmp, ["--no-dpi"]))
    eq(len(r), 1, "one flow, not expired by the jump")
    eq((r[0]["handshake"], r[0]["rtt_s_us"]), ("complete", None), "no negative RTT")


@test("hostile:pcapng-interfaces-of-different-link-types", ("release", "asan"))
def t_pcapng_multi(binary, tmp):
    """libpcap refuses a pcapng whose interfaces differ in link type: one line, exit 2; a
    pcapng with one link type is read."""
    syn = one_syn()
    p = os.path.join(tmp, "multi.pcapng")
    pcapng(p, [1, 101], [(0, syn), (1, syn[14:])])
    rc, _, err = run(["-q", "-r", p, "-o", os.path.join(tmp, "a.db")], binary)
    eq(rc, 2, "exit")
    assert "multi.pcapng" in err and err.count("\n") == 1, err
    p = os.path.join(tmp, "one.pcapng")
    pcapng(p, [1, 1], [(0, syn), (1, syn)])
    db = analyse(binary, [p], tmp, ["--no-dpi"], "b.db")
    eq(rows(db, "SELECT c_syn_retx FROM flows")[0]["c_syn_retx"], 1, "second SYN is a retransmission")


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
