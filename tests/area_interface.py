# Capture on a live interface: real traffic between network namespaces, iwscope on the
# client's veth (root); errors opening an interface.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


@test("live-capture", ("release", "asan"))
def t_live(binary, tmp):
    need_root()
    tr = netns()
    ns = tr.names("-lc%d" % os.getpid())  # the lab's namespaces, this test's own
    os.chmod(tmp, 0o755)
    procs = []
    db = os.path.join(tmp, "live.db")
    try:
        procs += tr.lab({"name": "live", "iw": 10}, 10000, 10000, app_server=True, ns=ns)
        cap = subprocess.Popen(["ip", "netns", "exec", ns["c"], binary, "-i", "c0", "-o", db,
                                "-Z", "nobody", "--no-ui", "--json"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=ENV)
        procs.append(cap)
        wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 10, "the run row")

        def uid():  # ip netns exec execs iwscope in place, so cap.pid is iwscope's
            return [l for l in open("/proc/%d/status" % cap.pid).read().splitlines()
                    if l.startswith("Uid:")][0].split()[1:3]
        # the run row is written just before -Z drops root (analyse.c: plan_begin, then
        # plan_drop_privileges): on a busy machine the row can be read in between
        try:
            wait_for(lambda: uid() == ["65534", "65534"], 10, "-Z to take effect")
        except AssertionError:
            pass
        eq(uid(), ["65534", "65534"], "-Z nobody: real and effective uid")
        cl = subprocess.run(["ip", "netns", "exec", ns["c"], "python3", tr.APP, "client", tr.S4,
                             "8080", "0.2", "GET:43440", "GET:43440", "GET:43440"],
                            stdout=subprocess.PIPE, text=True, timeout=60)
        eq(len(cl.stdout.splitlines()), 3, "transfers")
        # rows arrive while the capture still runs (finished flows, committed each second)
        wait_for(lambda: (count_rows(db) or 0) >= 3, 10, "rows during the capture")
        eq(cap.poll(), None, "iwscope still running")
        got = count_rows(db, "SELECT count(*) FROM flows WHERE s_iw_limit = 'cwnd' AND s_iw_segs = 10")
        eq(got, 3, "IW10 flows written during the capture")
        # a connection still open at SIGINT is written too
        hold = subprocess.Popen(["ip", "netns", "exec", ns["c"], "python3", "-c",
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
        tr.teardown(ns)


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


# Stopping a live capture (issue 31 item 7): on a loopback interface the closing lines say why
# 'received' is twice the packets analysed; q in the dashboard ends the run as complete. Each
# test captures on the loopback of a network namespace of its own, with its own traffic.

LO_SERVE = r"""
import socket, sys, threading
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 8080)); srv.listen(8)
def serve():
    while True:
        c, _ = srv.accept(); c.recv(100); c.sendall(b"x" * 20000); c.close()
threading.Thread(target=serve, daemon=True).start()
for _ in range(int(sys.argv[1])):
    s = socket.create_connection(("127.0.0.1", 8080)); s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    while s.recv(65536): pass
    s.close()
"""


def lo_netns(tmp):
    """A network namespace of this test's own with its loopback up: its name."""
    if os.geteuid() != 0:
        raise Skip("needs root (a network namespace, live capture)")
    if not shutil.which("ip"):
        raise Skip("ip not installed")
    ns = "iwlo-%d-%s" % (os.getpid(), os.path.basename(tmp)[-6:])
    if subprocess.run(["ip", "netns", "add", ns]).returncode != 0:
        raise Skip("cannot make a network namespace here")
    subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
    return ns


def lo_traffic(ns, conns):
    r = subprocess.run(["ip", "netns", "exec", ns, "python3", "-c", LO_SERVE, str(conns)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    eq(r.returncode, 0, "the loopback's traffic: " + r.stderr)


@test("live-loopback-received-twice-said", ("release", "asan"))
def t_live_loopback(binary, tmp):
    """Capturing on lo (a namespace's own), the closing lines explain why libpcap's 'received'
    is twice the packets analysed (the kernel hands each loopback packet to a packet socket as
    sent and as received; libpcap keeps one): the line names lo, and the run's pcap_received is
    exactly twice its packets. Ctrl-C ends it as complete."""
    ns = lo_netns(tmp)
    os.chmod(tmp, 0o755)
    db = os.path.join(tmp, "lo.db")
    cap = None
    try:
        cap = subprocess.Popen(["ip", "netns", "exec", ns, binary, "-i", "lo", "-o", db, "--no-ui"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 10, "the run row")
        lo_traffic(ns, 3)
        wait_for(lambda: (count_rows(db) or 0) >= 3, 10, "the three flows")
        cap.send_signal(2)  # SIGINT
        out, err = cap.communicate(timeout=20)
        eq(cap.returncode, 0, "exit after SIGINT: " + err)
        line = ("iwscope: lo is a loopback interface: the kernel counts each of its packets twice (as "
                "sent and as received), libpcap hands over one copy, so 'received' is twice the packets "
                "analysed")
        eq([l for l in err.splitlines() if "loopback" in l], [line], "the closing line: " + err)
        r = rows(db, "SELECT status, packets, pcap_received, pcap_dropped FROM runs")[0]
        eq((r["status"], r["pcap_dropped"]), ("complete", 0), "the run")
        assert r["packets"] >= 3 * 7, r
        eq(r["pcap_received"], 2 * r["packets"], "received against analysed")
        assert "%d packets received by the capture" % r["pcap_received"] in err, err
        eq(count_rows(db), 3, "flows")
        return "%d received, %d analysed" % (r["pcap_received"], r["packets"])
    finally:
        if cap and cap.poll() is None:
            cap.kill()
            cap.communicate()
        subprocess.run(["ip", "netns", "del", ns])


@test("live-dashboard-q-ends-complete", ("release", "asan"))
def t_live_dashboard_q(binary, tmp):
    """q in the live dashboard (on a namespace's own lo) ends the capture after writing every
    flow: exit 0, the run complete (how every live run ends, not 'interrupted'), its end and
    flows recorded."""
    if not shutil.which("tmux"):
        raise Skip("tmux not installed")
    ns = lo_netns(tmp)
    os.chmod(tmp, 0o755)
    db = os.path.join(tmp, "q.db")
    sock = "iwscope-liveq-%d" % os.getpid()

    def tm(*args):
        return tmux_retried(lambda: subprocess.run(["tmux", "-L", sock] + list(args), stdout=subprocess.PIPE,
                                                   stderr=subprocess.PIPE, text=True), args)

    def screen():
        return tm("capture-pane", "-p", "-t", "q").stdout

    try:
        cmd = "ip netns exec %s %s -i lo -o %s; echo EXITED rc=$?; sleep 60" % (ns, binary, db)
        r = tm("new-session", "-d", "-s", "q", "-x", "120", "-y", "30", cmd)
        eq(r.returncode, 0, "tmux: " + r.stderr)
        wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 15, "the run row")
        wait_for(lambda: " iwscope" in screen(), 10, "the dashboard")
        lo_traffic(ns, 2)
        wait_for(lambda: (count_rows(db) or 0) >= 2, 10, "the two flows")
        tm("send-keys", "-t", "q", "q")
        wait_for(lambda: "EXITED" in screen(), 20, "the exit")
        text = screen()
        assert "EXITED rc=0" in text and "Sanitizer" not in text and "runtime error" not in text, text
        r = rows(db, "SELECT status, finished_us, flows FROM runs")[0]
        eq(r["status"], "complete", "q ends a live run as")
        assert r["finished_us"], r
        eq(r["flows"], count_rows(db), "the run's flows against the table")
        assert r["flows"] >= 2, r
    finally:
        tm("kill-server")
        # and its socket, which tmux leaves behind
        sock_path = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), "tmux-%d" % os.getuid(), sock)
        if os.path.exists(sock_path):
            os.unlink(sock_path)
        subprocess.run(["ip", "netns", "del", ns])
