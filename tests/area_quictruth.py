# QUIC against ground truth (issue 28, item 4): ngtcp2's server and client in the lab's
# namespaces, the server's qlog as the truth (tools/quictruth.py, tests/pcaps/quictruth), every
# scenario at every vantage point (tests/quictruthcheck.py); and two scenarios made again live.
# Run by tests/run.py with tests/helpers.py's names.
import struct

import quictruthcheck


def quictruth_scenarios():
    return sorted(json.load(open(p))["scenario"]
                  for p in glob.glob(os.path.join(PCAPS, "quictruth", "*.truth.json")))


def quictruth_cases(binary, scn, truth_dir=quictruthcheck.TRUTH):
    bad, n = [], 0
    for case, ok, detail, _, _ in quictruthcheck.check(binary, scn, truth_dir):
        n += 1
        if not ok:
            bad.append("%s: %s" % (case, detail))
    return n, bad


def make_quictruth_test(scn):
    def fn(binary, tmp):
        n, bad = quictruth_cases(binary, scn)
        if n != len(quictruthcheck.VANTAGES):
            raise AssertionError("%d vantage points for %s" % (n, scn))
        if bad:
            raise AssertionError("\n".join(bad))
        return "%d vantage points, nothing false" % n
    return fn


for _scn in quictruth_scenarios():
    test("quictruth:" + _scn, ("release", "asan"))(make_quictruth_test(_scn))


@test("quictruth-conditions")
def t_quictruth_conditions(binary, tmp):
    """Every QUIC scenario at every vantage point under the conditions users' captures have
    (tests/quictruthcheck.py: the server's datagrams alone, the client's alone, cut to 68 and 54
    bytes, the two directions as two files): nothing false. One direction hides the other's
    bytes, so no 3x comparison (quic_c_preval, quic_s_preval NULL) and no "sent nothing" for
    the side not seen; the two files say what the whole capture says."""
    if not shutil.which("tcpdump") or not shutil.which("editcap"):
        raise Skip("tcpdump or editcap not installed")
    first = sorted(glob.glob(os.path.join(PCAPS, "quictruth", "*.truth.json")))[0]
    pcap = first.replace(".truth.json", ".mid.pcap")
    eq(conditions.same_as_tcpdump(pcap, "udp src port %d" % json.load(open(first))["server_port"], tmp),
       True, "conditions.tcpdump_w writes what tcpdump -w writes")
    n, bad = 0, []
    for case, ok, detail in quictruthcheck.check_conditions(binary):
        n += 1
        if not ok:
            bad.append("%s: %s" % (case, detail))
    want = len(quictruth_scenarios()) * len(quictruthcheck.VANTAGES) * len(quictruthcheck.CONDITIONS)
    eq(n, want, "cases")
    if bad:
        raise AssertionError("%d of %d:\n%s" % (len(bad), n, "\n".join(bad[:20])))
    return "%d cases, nothing false" % n


def udp_times(pcap, client_port):
    """[(ts_us, from_client)] of the Ethernet/IPv4/UDP datagrams of a lab capture."""
    data = open(pcap, "rb").read()
    out, off = [], 24
    while off + 16 <= len(data):
        sec, usec, cap = struct.unpack("<III", data[off:off + 12])
        frame = data[off + 16:off + 16 + cap]
        off += 16 + cap
        if len(frame) >= 42 and frame[12:14] == b"\x08\x00" and frame[23] == 17:
            ihl = (frame[14] & 15) * 4
            sport = struct.unpack("!H", frame[14 + ihl:16 + ihl])[0]
            out.append((sec * 1000000 + usec, sport == client_port))
    return out


def server_stopped(pcap, client_port):
    """Whether the packets show the server's first flight stopped: its first datagram after the
    client's next one came half the handshake's round trip (the client's first datagram to its
    next) or more after the flight's last."""
    d = udp_times(pcap, client_port)
    first_s = next(i for i, (_, c) in enumerate(d) if not c)
    nxt_c = next(i for i in range(first_s, len(d)) if d[i][1])
    last_s = max(i for i in range(first_s, nxt_c) if not d[i][1])
    later = [t for t, c in d[nxt_c:] if not c]
    rtt = d[nxt_c][0] - d[0][0]
    return bool(later) and (later[0] - d[last_s][0]) * 2 >= rtt


@test("quictruth-amplification-found")
def t_quictruth_amp_found(binary, tmp):
    """Where the qlog says the 3x limit bound the server's first flight and the packets show
    it stopped (its next datagram after a pause of half the handshake's round trip), iwscope
    says so: s_iw_limit amplification, quic_amp_limited 1, the flight whole (every vantage point
    of cert5 and cert5_rtt100). Without this, the claim could vanish unnoticed: the other
    checks only forbid a false one."""
    n, bad = 0, []
    for path in sorted(glob.glob(os.path.join(PCAPS, "quictruth", "*.truth.json"))):
        truth = json.load(open(path))
        if not truth["amp_limited"]:
            continue
        for v in quictruthcheck.VANTAGES:
            pcap = os.path.join(PCAPS, "quictruth", "%s.%s.pcap" % (truth["scenario"], v))
            if not server_stopped(pcap, truth["client_port"]):
                continue
            n += 1
            r = [x for x in quictruthcheck.analyse(binary, pcap) if x["transport"] == "quic"]
            got = [(x["s_iw_limit"], x["quic_amp_limited"], x["s_iw_segs"], x["s_iw_bytes"]) for x in r]
            want = [("amplification", 1, truth["first_flight"]["dgrams"], truth["first_flight"]["bytes"])]
            if got != want:
                bad.append("%s/%s: %s, want %s" % (truth["scenario"], v, got, want))
    eq(n >= 6, True, "cases where the limit bound and the packets show it: %d" % n)
    if bad:
        raise AssertionError("\n".join(bad))
    return "%d cases: amplification" % n


@test("quictruth-covers")
def t_quictruth_covers(binary, tmp):
    """The committed truth spans what changes a first flight: three congestion controllers or
    more, initial windows of several byte sizes (the maximum UDP payload), a first flight the 3x
    limit bound and one it did not (a Retry), responses that end inside the window and beyond it;
    and the captures stay small (under 2 MB)."""
    truths = [json.load(open(p)) for p in glob.glob(os.path.join(PCAPS, "quictruth", "*.truth.json"))]
    eq(len(truths) >= 12, True, "%d scenarios" % len(truths))
    eq(len({t["config"].get("cc", "cubic") for t in truths}) >= 3, True, "congestion controllers")
    eq(len({t["cwnd_bytes"] for t in truths}) >= 3, True, "initial windows in bytes")
    eq(any(t["amp_limited"] for t in truths), True, "a flight the 3x limit bound")
    eq(any(t["config"].get("retry") and not t["amp_limited"] for t in truths), True, "a Retry")
    eq({t["after_handshake"]["ended"] for t in truths}, {"app", "cwnd"}, "responses")
    size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(PCAPS, "quictruth", "*")))
    eq(size < 2 * 1024 * 1024, True, "%d bytes" % size)
    return "%d scenarios, %d KB" % (len(truths), size // 1024)


# Made again live: the 3x limit (five certificates) and a window of 12000 bytes (1200-byte
# datagrams), side by side in namespaces of their own.
LIVE_QUICTRUTH = ["cert5", "udp1200"]


@test("quictruth-lab-live")
def t_quictruth_live(binary, tmp):
    """tools/quictruth.py makes LIVE_QUICTRUTH again with this machine's ngtcp2: the truth is the
    committed one (initial window, first flight, the 3x limit) and iwscope says nothing false
    about it at any vantage point."""
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces)")
    for b in ("gtlsserver", "gtlsclient", "tcpdump", "openssl"):
        if not shutil.which(b):
            raise Skip(b + " not installed (make quictruth installs it)")
    out = os.path.join(tmp, "quictruth")
    r = subprocess.run(["python3", os.path.join(ROOT, "tools", "quictruth.py"), "--jobs", "2", "--out", out]
                       + LIVE_QUICTRUTH, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("quictruth.py exited %d:\n%s" % (r.returncode, r.stdout[-3000:]))
    for scn in LIVE_QUICTRUTH:
        new = json.load(open(os.path.join(out, scn + ".truth.json")))
        old = json.load(open(os.path.join(PCAPS, "quictruth", scn + ".truth.json")))
        for k in ("cwnd_bytes", "iw_dgrams", "amp_limited"):
            eq(new[k], old[k], "%s %s" % (scn, k))
        eq((new["first_flight"]["dgrams"], new["first_flight"]["bytes"]),
           (old["first_flight"]["dgrams"], old["first_flight"]["bytes"]), scn + " first flight")
    n, bad = quictruth_cases(binary, "*", out)
    eq(n, len(LIVE_QUICTRUTH) * len(quictruthcheck.VANTAGES), "cases")
    if bad:
        raise AssertionError("\n".join(bad))
    return "%s made again: same truth, %d cases, nothing false" % (" ".join(LIVE_QUICTRUTH), n)
