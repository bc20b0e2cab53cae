# Capture on a live interface: real traffic between network namespaces, iwscope on the
# client's veth (root); errors opening an interface.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("live-capture", ("release", "asan"))
def t_live(binary, tmp):
    need_root()
    tr = netns()
    os.chmod(tmp, 0o755)
    procs = []
    db = os.path.join(tmp, "live.db")
    try:
        procs += tr.lab({"name": "live", "iw": 10}, 10000, 10000, app_server=True)
        cap = subprocess.Popen(["ip", "netns", "exec", tr.NS["c"], binary, "-i", "c0", "-o", db,
                                "-Z", "nobody", "--no-ui", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=ENV)
        procs.append(cap)
        wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 10, "the run row")
        uid = [l for l in open("/proc/%d/status" % cap.pid).read().splitlines() if l.startswith("Uid:")]
        # ip netns exec execs iwscope in place, so cap.pid is iwscope's
        eq(uid[0].split()[1:3], ["65534", "65534"], "-Z nobody: real and effective uid")
        cl = subprocess.run(["ip", "netns", "exec", tr.NS["c"], "python3", tr.APP, "client", tr.S4,
                             "8080", "0.2", "GET:43440", "GET:43440", "GET:43440"],
                            stdout=subprocess.PIPE, text=True, timeout=60)
        eq(len(cl.stdout.splitlines()), 3, "transfers")
        # rows arrive while the capture still runs (finished flows, committed each second)
        wait_for(lambda: (count_rows(db) or 0) >= 3, 10, "rows during the capture")
        eq(cap.poll(), None, "iwscope still running")
        got = count_rows(db, "SELECT count(*) FROM flows WHERE s_iw_limit = 'cwnd' AND s_iw_segs = 10")
        eq(got, 3, "IW10 flows written during the capture")
        # a connection still open at SIGINT is written too
        hold = subprocess.Popen(["ip", "netns", "exec", tr.NS["c"], "python3", "-c",
                                 "import socket,time; s=socket.create_connection(('%s',8080)); time.sleep(8)" % tr.S4],
                                stderr=subprocess.DEVNULL)
        procs.append(hold)
        time.sleep(1.0)
        cap.send_signal(2)
        out, err = cap.communicate(timeout=20)
        eq(cap.returncode, 0, "exit after SIGINT: " + err)
        assert "packets received by the capture" in err, err
        eq(len([l for l in out.splitlines() if l.startswith("{")]), 4, "JSON lines on stdout")
        r = rows(db, "SELECT status, pcap_received, pcap_dropped, filter, options FROM runs")[0]
        # Ctrl-C is how a live capture ends (as tcpdump's): complete, not interrupted (issue 31)
        eq((r["status"], r["pcap_dropped"], r["filter"]), ("complete", 0, "tcp or udp"), "run")
        # the live defaults, said in runs and on stderr (issue 21: a ring for a second of stall)
        eq(r["options"], "snaplen=9216 buffer_kib=131072", "what the capture was opened with")
        assert "dropped (snaplen=9216 buffer_kib=131072)" in err, err
        assert r["pcap_received"] > 0
        eq([x["end_reason"] for x in rows(db)][-1], "capture_end", "open flow written at SIGINT")
        eq(len(rows(db)), 4, "flows")
    finally:
        for p in procs:
            tr.stop(p)
        tr.teardown()


@test("live-errors", ("release", "asan"))
def t_live_errors(binary, tmp):
    need_root()
    rc, _, err = run(["-i", "nosuchif0", "-o", os.path.join(tmp, "x.db"), "--no-ui"], binary)
    eq(rc, 2, "exit")
    assert "nosuchif0: no such interface" in err and err.count("\n") == 1, err
    assert not os.path.exists(os.path.join(tmp, "x.db")), "database created without a capture"
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", binary, "-i", "lo",
                        "-o", os.path.join(tmp, "y.db"), "--no-ui"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    eq(r.returncode, 2, "exit without permission")
    assert "permission" in r.stderr.lower() and r.stderr.count("\n") == 1, r.stderr
    eq(run(["-i", "lo", "-r", truth_pcap()], binary)[0], 1, "-i with -r")
