# Live capture on every core (livecap.c): a capture thread that only captures, workers with
# flow tables of their own, rows written by the main thread. Uses tests/run.py's helpers.
import signal  # noqa: E402
import struct  # noqa: E402

# Transfers of every kind the lab makes: one segment, one initial window, several windows,
# some side by side (par), in both families of request.
LIVE_TRANSFERS = (["GET:1000", "GET:14600", "GET:43440", "GET:120000", "GET:14600:par=4",
                   "GET:5000:par=3"] * 4)


def live_vs_offline(binary, tmp, suffix, workers, transfers=LIVE_TRANSFERS, env=None):
    """Captures the lab's traffic with iwscope -i (workers analysis threads) and with tcpdump
    side by side on the client's interface, then reads tcpdump's capture offline. Returns
    (live rows, offline rows, live run row, iwscope's stderr)."""
    need_root()
    tr = netns()
    ns = tr.names(suffix)
    os.chmod(tmp, 0o755)
    procs = []
    db, ref = os.path.join(tmp, "live.db"), os.path.join(tmp, "ref.pcap")
    # A socket that asks for receive timestamps turns on the kernel's timestamp at reception
    # for every packet (netstamp_needed): both packet sockets then read that one time, where
    # each would otherwise take the clock itself, microseconds apart.
    stamp = subprocess.Popen(["python3", "-c", "import socket,time; s=socket.socket(socket.AF_INET,"
                              " socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET,"
                              " 29, 1); print('on', flush=True); time.sleep(600)"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(stamp)
    eq(stamp.stdout.readline().strip(), "on", "receive timestamps (SO_TIMESTAMP, 29) asked for")
    try:
        procs += tr.lab({"name": "livecap", "iw": 10}, 4000, 4000, app_server=True, ns=ns)
        # the same snaplen as iwscope's live default: nDPI and names.c see the same bytes
        td = subprocess.Popen(["ip", "netns", "exec", ns["c"], "tcpdump", "-i", "c0", "-s", "9216",
                               "-U", "-w", ref, "tcp"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        procs.append(td)
        cap = subprocess.Popen(["ip", "netns", "exec", ns["c"], binary, "-i", "c0", "-o", db,
                                "--no-ui", "--threads", str(workers)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env=env or ENV)
        procs.append(cap)
        wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 15, "the run row")
        wait_for(lambda: os.path.exists(ref), 10, "tcpdump's capture")
        time.sleep(0.5)
        cl = subprocess.run(["ip", "netns", "exec", ns["c"], "python3", tr.APP, "client", tr.S4,
                             "8080", "0.05"] + list(transfers), stdout=subprocess.PIPE, text=True,
                            timeout=120)
        want = len(cl.stdout.splitlines())
        eq(want, flows_of(transfers), "transfers")
        # every flow ended with FIN: written a second later, while the capture runs
        wait_for(lambda: (count_rows(db) or 0) >= want, 20, "the rows of %d flows" % want)
        time.sleep(0.5)
        cap.send_signal(signal.SIGINT)
        td.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=30)
        td.communicate(timeout=10)
        eq(cap.returncode, 0, "iwscope's exit after SIGINT: " + err)
    finally:
        for p in procs:
            tr.stop(p)
        tr.teardown(ns)
    off = analyse(binary, [ref], tmp, [], "off.db")
    live_run = rows(db, "SELECT * FROM runs")[0]
    return rows(db), rows(off), live_run, err


def flows_alike(rs):
    """Flow rows without what names the run or numbers the flow within it (workers number
    theirs apart), sorted."""
    return comparable(rs, also=("flow_key",))


def check_live_vs_offline(live, off, run_row, err, want):
    eq(len(live), want, "live rows")
    eq(run_row["pcap_dropped"], 0, "packets dropped by the capture")
    a, b = flows_alike(live), flows_alike(off)
    if a != b:
        diff = [(dict(x), dict(y)) for x, y in zip(a, b) if x != y][:1]
        if diff:
            diff = [{k: (v, diff[0][1].get(k)) for k, v in diff[0][0].items()
                     if diff[0][1].get(k) != v}]
        raise AssertionError("live rows differ from tcpdump's capture read offline: %r" % diff)
    m = re.search(r"the capture waited ([0-9.]+) ms at most", err)
    assert m, "the longest stall is reported: " + err
    return float(m.group(1))


@test("live-rows-equal-offline-rows", ("release", "asan"))
def t_live_rows_equal(binary, tmp):
    """Two workers analyse beside the capture thread: each flow goes whole to one of them (both
    are used), and the rows are those of the same packets (tcpdump's capture) read offline."""
    live, off, run_row, err = live_vs_offline(binary, tmp, "-lr%d" % os.getpid(), 2)
    want = flows_of(LIVE_TRANSFERS)
    stall = check_live_vs_offline(live, off, run_row, err, want)
    # keys are numbered apart per worker: worker 0 odd, worker 1 even
    parity = {r["flow_key"] % 2 for r in live}
    eq(parity, {0, 1}, "flows analysed by both workers")
    eq(len({r["flow_key"] for r in live}), len(live), "flow keys unique in the run")
    counters = "SELECT packets, tcp_packets, flows FROM runs"
    eq(run_row["flows"], want, "flows counted over the workers")
    # every frame read was analysed; one arriving as both captures stop may be counted by the
    # kernel (libpcap's received) or by tcpdump alone
    off_packets = rows(os.path.join(tmp, "off.db"), counters)[0]["packets"]
    assert 0 <= run_row["pcap_received"] - run_row["packets"] <= 2, (run_row, err)
    assert abs(run_row["packets"] - off_packets) <= 2, (run_row["packets"], off_packets)
    return "%d flows alike, 0 dropped, the capture waited %.1f ms at most" % (len(live), stall)


@test("live-workers-under-tsan")
def t_live_tsan(binary, tmp):
    """The capture thread, two workers and the writer under ThreadSanitizer: no race reported,
    and the rows still equal the offline ones."""
    if not os.path.exists(TSAN_BIN):
        raise AssertionError("no ThreadSanitizer build: make tsan")
    env = dict(ENV, TSAN_OPTIONS="halt_on_error=1:exitcode=66")
    transfers = ["GET:14600", "GET:43440:par=3", "GET:1000"] * 2
    live, off, run_row, err = live_vs_offline(TSAN_BIN, tmp, "-lt%d" % os.getpid(), 2,
                                              transfers, env)
    assert "ThreadSanitizer" not in err, err
    check_live_vs_offline(live, off, run_row, err, flows_of(transfers))
    return "%d flows, no race" % len(live)


@test("threads-option-range", ("release",))
def t_threads_range(binary, tmp):
    """--threads takes 1 to 16 (live workers); anything else is a one-line usage error."""
    for bad in ("0", "17", "2x", "-1", ""):
        rc, _, err = run(["--threads", bad, "-r", truth_pcap(), "-o", os.path.join(tmp, "x.db")],
                         binary)
        eq(rc, 1, "--threads %r" % bad)
        assert err.count("\n") == 1 and "--threads" in err, err
    db = analyse(binary, [truth_pcap()], tmp, ["--threads", "16"], "t16.db")
    eq(count_rows(db) > 0, True, "--threads 16 on a file")


@test("live-interface-gone", ("release", "asan"))
def t_live_gone(binary, tmp):
    """The interface disappears under a live capture: one line naming it, exit 2, and the run
    recorded as failed (not complete), with what was analysed kept. Deleted at once, and set
    down first and deleted half a second later (the socket's one error then says "down", and
    only a later read finds the device gone: this hung until the capture read after quiet
    waits too)."""
    need_root()
    for down_first in (False, True):
        ns = "iwgone%d%s" % (os.getpid(), "d" if down_first else "")
        db = os.path.join(tmp, "gone%d.db" % down_first)
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            for cmd in (["ip", "link", "add", "a0", "type", "veth", "peer", "name", "b0"],
                        ["ip", "link", "set", "a0", "up"], ["ip", "link", "set", "b0", "up"]):
                subprocess.run(["ip", "netns", "exec", ns] + cmd, check=True)
            cap = subprocess.Popen(["ip", "netns", "exec", ns, binary, "-i", "a0", "--no-ui", "-o", db],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
            wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 15, "the run row")
            if down_first:
                subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "a0", "down"], check=True)
                time.sleep(0.5)
            subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "del", "a0"], check=True)
            try:
                _, err = cap.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                cap.kill()
                raise AssertionError("still capturing 20 s after a0 was deleted (down first: %s)"
                                     % down_first)
        finally:
            subprocess.run(["ip", "netns", "del", ns])
        eq(cap.returncode, 2, "exit when the interface went away: " + err)
        first = err.splitlines()[0]
        assert first.startswith("iwscope: a0: ") and "disappeared" in first, err
        eq(rows(db, "SELECT status FROM runs")[0]["status"], "failed", "the run's status")


SEND_FRAMES = """import socket, struct, sys
socks = []
for name in sys.argv[2:]:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((name, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    socks.append(s)
data = open(sys.argv[1], "rb").read()
i = 0
while i < len(data):
    k, n = struct.unpack_from("!BH", data, i)
    while True:
        try:
            socks[k].send(data[i + 3:i + 3 + n])
            break
        except BlockingIOError:
            pass
    i += 3 + n
"""


def frames_file(path, frames):
    """frames: (interface index, frame bytes), for SEND_FRAMES."""
    with open(path, "wb") as f:
        for k, fr in frames:
            f.write(struct.pack("!BH", k, len(fr)) + fr)
    return path


def live_backlog(binary, tmp, ports):
    """Eight connections closed (FIN both ways), iwscope stopped (SIGSTOP), 20,000 UDP
    datagrams then the eight last ACKs sent (within the 1 s a closed connection lingers),
    iwscope going on 3 s after the stop: (rows, run row, seconds the sending took). On one
    interface, or on two (a tap's ports: the client's packets on one, the server's on the
    other, merged by time in livestage.c)."""
    need_root()
    ns = "iwbl%d%d" % (os.getpid(), ports)
    db = os.path.join(tmp, "backlog%d.db" % ports)
    first, last = [], []
    for i in range(8):
        c = craft.Conn(cip="10.9.0.1", sip="10.9.0.2", cport=41000 + i, sport=80)
        c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460, sok=True, ws=7))
        c.s(0, "SA", 0, 1, opts=craft.tcp_options(mss=1460, sok=True, ws=7))
        c.c(0, "A", 1, 1)
        c.c(0, "PA", 1, 1, payload=b"GET / HTTP/1.1\r\n\r\n")
        c.s(0, "PA", 1, 19, payload=b"x" * 1000)
        c.c(0, "A", 19, 1001)
        c.c(0, "FA", 19, 1001)
        c.s(0, "FA", 1001, 20)
        c.c(0, "A", 20, 1002)  # the last ACK
        port = [0, 1, 0, 0, 1, 0, 0, 1, 0] if ports == 2 else [0] * 9  # the server's packets
        first += [(port[k], fr) for k, (_, fr) in enumerate(c.out[:8])]
        last.append((0, c.out[8][1]))
    udp = struct.pack("!HHHH", 40000, 9999, 8 + 32, 0) + b"u" * 32
    noise = [(0, craft.ether(craft.ipv4("10.9.0.3", "10.9.0.4", udp, proto=17)))] * 20000
    f1 = frames_file(os.path.join(tmp, "f1"), first)
    f2 = frames_file(os.path.join(tmp, "f2"), noise + last)
    sender = os.path.join(tmp, "send.py")
    with open(sender, "w") as f:
        f.write(SEND_FRAMES)
    pairs = [("a%d" % k, "b%d" % k) for k in range(ports)]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    cap = None
    try:
        for a, b in pairs:
            for cmd in (["ip", "link", "add", a, "type", "veth", "peer", "name", b],
                        ["ip", "link", "set", a, "up"], ["ip", "link", "set", b, "up"]):
                subprocess.run(["ip", "netns", "exec", ns] + cmd, check=True)
        ifaces = [x for _, b in pairs for x in ("-i", b)]
        cap = subprocess.Popen(["ip", "netns", "exec", ns, binary] + ifaces + ["--no-ui", "-o", db,
                                "--threads", "1"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env=ENV)
        wait_for(lambda: count_rows(db, "SELECT count(*) FROM runs") == 1, 15, "the run row")
        time.sleep(0.5)
        send = ["ip", "netns", "exec", ns, "python3", sender]
        subprocess.run(send + [f1] + [a for a, _ in pairs], check=True)
        time.sleep(0.15 if ports == 1 else 0.5)  # analysed (several ports: released in time order)
        os.kill(cap.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        subprocess.run(send + [f2] + [a for a, _ in pairs], check=True, timeout=60)
        sent_in = time.monotonic() - t0
        time.sleep(max(0.0, 3 - (time.monotonic() - t0)))
        os.kill(cap.pid, signal.SIGCONT)
        time.sleep(3)
        cap.send_signal(signal.SIGINT)
        _, err = cap.communicate(timeout=30)
        cap = None
    finally:
        if cap:
            os.kill(cap.pid, signal.SIGCONT)
            cap.kill()
        subprocess.run(["ip", "netns", "del", ns])
    run_row = rows(db, "SELECT * FROM runs")[0]
    got = rows(db, "SELECT client_port, handshake, end_reason, c_pkts, s_pkts FROM flows ORDER BY client_port")
    return got, run_row, sent_in


@test("live-last-ack-after-a-backlog", ("release", "asan"))
def t_live_backlog(binary, tmp):
    """A closed connection's last ACK that waited in the kernel's ring while iwscope was held
    up is still its own: one row a connection. Here iwscope is stopped (SIGSTOP) once eight
    connections have sent their FINs both ways; meanwhile 20,000 UDP datagrams, then their last
    ACKs (within the 1 s a closed connection lingers) queue in the kernel's ring; 3 s after the
    stop it goes on. The worker's clock moved to the wall clock whenever its ring ran short
    while older frames still waited in the kernel's: it ended the connections before their
    ACKs, which came back as rows of their own (1 M connections live, the row queue full:
    15,010 rows too many). On one interface and on two (a tap's two ports)."""
    said = []
    for ports in (1, 2):
        got, run_row, sent_in = live_backlog(binary, tmp, ports)
        # the ACKs must come within the linger of the FINs in the frames' own times
        assert sent_in < 0.7, "the datagrams and the ACKs took %.2f s to send" % sent_in
        eq(run_row["pcap_dropped"], 0, "frames dropped by the kernel (%d ports)" % ports)
        eq(run_row["packets"], 8 * 9 + 20000, "frames analysed (%d ports)" % ports)
        eq([(r["client_port"], r["handshake"], r["end_reason"], r["c_pkts"], r["s_pkts"]) for r in got],
           [(41000 + i, "complete", "fin", 6, 3) for i in range(8)],
           "one row a connection, its last ACK in it (%d ports)" % ports)
        said.append("%d port%s: sent in %.2f s" % (ports, "s" if ports > 1 else "", sent_in))
    return "8 connections, 8 rows, their last ACKs counted after a 3 s stop; " + "; ".join(said)
