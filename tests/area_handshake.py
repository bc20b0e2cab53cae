# Handshakes made by hand (outcomes the Linux stack will not produce on request) and the flow
# table's cap and eviction.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("handshake-outcomes", ("release", "asan"))
def t_handshakes(binary, tmp):
    syn = dict(opts=craft.tcp_options(mss=1460, sok=True, ts=(100, 0), ws=7))
    synack = dict(opts=craft.tcp_options(mss=1400, sok=True, ts=(900, 100), ws=9), win=65160)
    # complete, with a retransmitted SYN and SYN-ACK, then data and FIN both ways
    c = craft.Conn(cport=40001)
    c.c(0, "S", 0, 0, win=29200, ttl=57, **syn)
    c.c(1.0, "S", 0, 0, win=29200, ttl=57, **syn)
    c.s(0.010, "SA", 0, 1, **synack)
    c.s(0.200, "SA", 0, 1, **synack)
    c.c(0.020, "A", 1, 1)
    c.c(0.001, "PA", 1, 1, payload=b"x" * 100)
    c.s(0.030, "FA", 1, 101)
    c.c(0.030, "FA", 101, 2)
    c.s(0.030, "A", 2, 102)
    r = handshake_db(binary, tmp, c.out, "complete")
    eq(len(r), 1, "flows")
    r = r[0]
    want = {"handshake": "complete", "c_syn_retx": 1, "s_syn_retx": 1, "rtt_s_us": 1010000 - 1000000 + 0,
            "c_syn_win": 29200, "c_mss": 1460, "c_wscale": 7, "c_sack": 1, "c_ts": 100, "c_ttl": 57,
            "c_ittl": 64, "c_olayout": "mss,sok,ts,nop,ws", "c_rwnd_class": "20MSS",
            "s_syn_win": 65160, "s_mss": 1400, "s_wscale": 9, "s_rwnd_class": "64KB",
            "c_bytes": 100, "s_bytes": 0, "end_reason": "fin", "c_iw_limit": "app",
            "c_iw_segs": 1, "s_iw_limit": "none", "server_port": 80, "client_port": 40001}
    # the RTT legs use the first SYN and SYN-ACK: SYN at 0, SYN retx at 1.0, SYN-ACK at 1.01
    want["rtt_s_us"] = 1010000
    want["rtt_c_us"] = 220000
    want["rtt_us"] = 1230000
    for k, v in want.items():
        eq(r[k], v, k)
    # refused: SYN answered by RST
    c = craft.Conn(cport=40002)
    c.c(0, "S", 0, 0, **syn)
    c.s(0.01, "RA", 0, 1)
    r = handshake_db(binary, tmp, c.out, "refused")[0]
    eq((r["handshake"], r["end_reason"], r["s_syn_win"]), ("refused", "rst", None), "refused")
    # unanswered SYN
    c = craft.Conn(cport=40003)
    c.c(0, "S", 0, 0, **syn)
    r = handshake_db(binary, tmp, c.out, "synonly")[0]
    eq((r["handshake"], r["synack_us"], r["rtt_us"]), ("syn_only", None, None), "syn only")
    # mid-stream: kept with handshake none, client guessed from the ports
    c = craft.Conn(cport=40004, sport=443)
    c.s(0, "PA", 100, 100, payload=b"y" * 50)
    c.c(0.01, "A", 100, 150)
    r = handshake_db(binary, tmp, c.out, "midstream")[0]
    eq((r["handshake"], r["client_port"], r["server_port"], r["s_iw_limit"], r["syn_us"]),
       ("none", 40004, 443, None, None), "mid-stream")
    # simultaneous open
    c = craft.Conn(cport=40005, sport=40006)
    c.c(0, "S", 0, 0, **syn)
    c.s(0.001, "S", 0, 0, **syn)
    c.s(0.01, "SA", 0, 1, **syn)
    c.c(0.001, "SA", 0, 1, **syn)
    r = handshake_db(binary, tmp, c.out, "simultaneous")[0]
    eq(r["handshake"], "simultaneous", "simultaneous")
    # port reuse: a new SYN with a new ISN after FIN starts a new flow
    c = craft.Conn(cport=40007)
    c.c(0, "S", 0, 0, **syn)
    c.s(0.01, "SA", 0, 1, **synack)
    c.c(0.01, "A", 1, 1)
    c.c(0.01, "FA", 1, 1)
    c.s(0.01, "FA", 1, 2)
    c.c(0.01, "A", 2, 2)
    c.cisn += 100000
    c.c(0.5, "S", 0, 0, **syn)
    c.s(0.01, "SA", 0, 1, **synack)
    c.c(0.01, "A", 1, 1)
    r = handshake_db(binary, tmp, c.out, "reuse")
    eq([(x["handshake"], x["end_reason"]) for x in r], [("complete", "reuse"), ("complete", "capture_end")], "reuse")


@test("flow-table-cap-and-eviction", ("release", "asan"))
def t_eviction(binary, tmp):
    pk = []
    for i in range(100):
        c = craft.Conn(cport=20000 + i, t0=1700000000.0 + i * 0.001)
        c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
        pk += c.out
    p = os.path.join(tmp, "syns.pcap")
    craft.write_pcap(p, pk)
    db = analyse(binary, [p], tmp, ["--no-dpi", "--flow-cap", "16"], "e.db")
    run_row = rows(db, "SELECT flows, evicted FROM runs")[0]
    eq(run_row, {"flows": 100, "evicted": 84}, "run")
    eq(len(rows(db)), 100, "rows")
    eq(len(rows(db, "SELECT * FROM flows WHERE end_reason = 'evicted'")), 84, "evicted rows")


@test("evicted-connection-continues-without-a-second-row", ("release", "asan"))
def t_eviction_continuation(binary, tmp):
    """100 connections open at once in a table of 16: each is evicted after its handshake and
    request, and its later packets (the response, the ACK, the FINs) are known as its own: one
    row a connection, none starting mid-stream; the summary says what eviction cost."""
    pk = []
    for i in range(100):
        c = craft.Conn(cport=20000 + i, t0=1700000000.0 + i * 0.001)
        c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
        c.s(0.0002, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
        c.c(0.0002, "A", 1, 1)
        c.c(0.00001, "PA", 1, 1, payload=b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        pk += c.out
    for i in range(100):  # all open; then each answers and closes
        c = craft.Conn(cport=20000 + i, t0=1700000001.0 + i * 0.001)
        c.s(0, "PA", 1, 35, payload=b"x" * 1000)
        c.c(0.0002, "A", 35, 1001)
        c.c(0.0001, "FA", 35, 1001)
        c.s(0.0001, "FA", 1001, 36)
        c.c(0.0001, "A", 36, 1002)
        pk += c.out
    pk.sort(key=lambda x: x[0])
    p = os.path.join(tmp, "open.pcap")
    craft.write_pcap(p, pk)
    db = os.path.join(tmp, "c.db")
    rc, _, err = run(["--no-dpi", "-r", p, "-o", db, "--flow-cap", "16"], binary)
    eq(rc, 0, "exit: " + err)
    got = rows(db, "SELECT handshake, count(*) AS n FROM flows GROUP BY handshake")
    eq(got, [{"handshake": "complete", "n": 100}], "one row a connection, each from its SYN")
    eq(rows(db, "SELECT flows, evicted FROM runs")[0], {"flows": 100, "evicted": 84}, "run")
    assert "84 evicted early" in err and "later packets of theirs not analysed" in err, err
