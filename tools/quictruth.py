#!/usr/bin/env python3
"""Ground truth for QUIC first flights (issue 28, item 4; root).

ngtcp2's example server and client (Debian's ngtcp2-server and ngtcp2-client: gtlsserver,
gtlsclient, a real RFC 9000 / 9002 stack) run in tools/truth.py's lab: client, two routers with
the user-space delay line (build/delayline), server, in namespaces of their own, captured next
to the client (c0), mid-path (r1m) and next to the server (s0). The server's qlog
(--qlog-dir) is the truth:

    cwnd_bytes     the congestion window of its first recovery:metrics_updated (RFC 9002 7.2:
                   min(10 * max_datagram, max(14720, 2 * max_datagram)) for ngtcp2's cc's)
    max_dgram      the server's maximum UDP payload (--max-udp-payload-size, else ngtcp2's 1452)
    iw_dgrams      cwnd_bytes // max_dgram: the initial window in full-size datagrams
    client_first   the client's datagrams and bytes the server received before it first sent
    first_flight   what the server sent before it processed any later client packet: its
                   datagrams (the qlog's packets grouped into datagrams by the sizes the server
                   capture shows), bytes (UDP payload), packets
    amp_limited    the first flight stopped with handshake CRYPTO data still unsent and the
                   congestion window not used up: the 3x limit (RFC 9000 8.1) bound it
    after_handshake  the first flight after the handshake (from the client's Finished until an
                   ACK of a 1-RTT packet sent after it reached the server): datagrams, bytes,
                   the congestion window at its start and end, whether it ended the response
                   (app) or filled the window (cwnd)

The captures keep every client datagram with a long header whole (its Initials: the SNI) and
cut the rest to 64 bytes of UDP payload (the QUIC header's first bytes), so that they stay small.

For each scenario it writes tests/pcaps/quictruth/NAME.{client,mid,server}.pcap and
NAME.truth.json.

    python3 tools/quictruth.py [--out DIR] [--jobs N] [--list] [--keep-qlog] [SCENARIO ...]
"""
import concurrent.futures
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import truth as lab  # noqa: E402  the namespaces, the delay line, process control

PORT = 4433
SNI = "lab.example"
QNS = {r: "iwq-" + r for r in lab.ROLES}
SERVER = "gtlsserver"
CLIENT = "gtlsclient"
CUT = 64  # UDP payload bytes kept of the datagrams that are not the client's long-header ones
NGTCP2_MAX_DGRAM = 1452  # ngtcp2 0.12's default maximum UDP payload it sends


def names(suffix):
    return {r: QNS[r] + suffix for r in lab.ROLES}


# ---------------------------------------------------------------------------------------------
# Certificates: a small chain (one P-256 certificate) and longer ones (RSA-2048 intermediates)

def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_chain(d, kind):
    """Writes key.pem and chain.pem in d: "small" a self-signed P-256 certificate for SNI;
    "rsaN" an RSA-2048 leaf signed through N-1 RSA-2048 intermediates by a root (the root not
    sent). Returns (key, chain, DER bytes of the chain sent)."""
    os.makedirs(d, exist_ok=True)
    san = "subjectAltName=DNS:" + SNI
    if kind == "small":
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "key.pem", "-out", "chain.pem", "-days", "3650", "-subj", "/CN=" + SNI,
                "-addext", san, cwd=d)
        sent = ["chain.pem"]
    else:
        n = int(kind[3:])
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca0.key", "-out",
                "ca0.pem", "-days", "3650", "-subj", "/CN=lab root", cwd=d)
        ext = os.path.join(d, "ext.cnf")
        with open(ext, "w") as f:
            f.write("[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\n"
                    "[leaf]\nbasicConstraints=CA:FALSE\n%s\n" % san.replace("=", " = ", 1))
        sent = []
        for i in range(1, n + 1):
            leaf = i == n
            key, csr, crt = ("key.pem", "leaf.csr", "leaf.pem") if leaf else \
                ("ca%d.key" % i, "ca%d.csr" % i, "ca%d.pem" % i)
            subj = "/CN=" + SNI if leaf else "/CN=lab intermediate %d" % i
            openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
                    "-subj", subj, cwd=d)
            openssl("x509", "-req", "-in", csr, "-CA", "ca%d.pem" % (i - 1), "-CAkey",
                    "ca%d.key" % (i - 1), "-CAcreateserial", "-out", crt, "-days", "3650",
                    "-extfile", ext, "-extensions", "leaf" if leaf else "ca", cwd=d)
            sent.insert(0, crt)
        with open(os.path.join(d, "chain.pem"), "w") as out:
            for c in sent:
                out.write(open(os.path.join(d, c)).read())
    der = 0
    for c in sent:
        r = subprocess.run(["openssl", "x509", "-in", os.path.join(d, c), "-outform", "DER"],
                           check=True, stdout=subprocess.PIPE)
        der += len(r.stdout)
    return os.path.join(d, "key.pem"), os.path.join(d, "chain.pem"), der


# ---------------------------------------------------------------------------------------------
# Captures: UDP datagrams of IPv4 over Ethernet

def read_udp(path):
    """[(time_s, src_port, dst_port, udp_payload_len, frame)] of a pcap's IPv4 UDP frames, and the
    file's header."""
    data = open(path, "rb").read()
    if data[:4] != b"\xd4\xc3\xb2\xa1":
        raise ValueError("%s: not a little-endian microsecond pcap" % path)
    out, off = [], 24
    while off + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
            continue
        ihl = (frame[14] & 15) * 4
        tot = struct.unpack(">H", frame[16:18])[0]
        sport, dport = struct.unpack(">HH", frame[14 + ihl:18 + ihl])
        out.append((sec + usec / 1e6, sport, dport, tot - ihl - 8, (sec, usec, orig, frame)))
    return data[:24], out


def is_retry(frame):
    """A QUIC v1 Retry: a long header (0x80) of type 3 (RFC 9000 17.2.5)."""
    udp = 14 + (frame[14] & 15) * 4 + 8
    return len(frame) > udp and frame[udp] & 0xb0 == 0xb0


def cut_capture(path):
    """Rewrites the capture with the client's long-header datagrams whole and every other frame
    cut to CUT bytes of UDP payload."""
    head, dgrams = read_udp(path)
    with open(path + ".tmp", "wb") as f:
        f.write(head)
        for _, sport, dport, plen, (sec, usec, orig, frame) in dgrams:
            ihl = (frame[14] & 15) * 4
            udp = 14 + ihl + 8
            whole = dport == PORT and len(frame) > udp and frame[udp] & 0x80
            if not whole:
                frame = frame[:udp + CUT]
            f.write(struct.pack("<IIII", sec, usec, len(frame), orig) + frame)
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------------------------------------
# The qlog: what the server did

def read_qlog(path):
    """The qlog's events (JSON-SEQ: records separated by RS), in order."""
    out = []
    for rec in open(path).read().split("\x1e"):
        rec = rec.strip()
        if rec:
            out.append(json.loads(rec))
    return out[1:]  # the first record is the trace's header


def group(packets, sizes):
    """The sent packets [(index, length)] grouped into datagrams whose UDP payloads are sizes, in
    order (coalesced packets, RFC 9000 12.2). Returns [[index, ...], ...] for as many datagrams as
    the packets fill; raises where they do not add up."""
    out, i = [], 0
    for size in sizes:
        if i >= len(packets):
            break
        dg, total = [], 0
        while i < len(packets) and total < size:
            dg.append(packets[i][0])
            total += packets[i][1]
            i += 1
        if total != size:
            raise RuntimeError("qlog packets do not add up to the captured datagram of %d bytes "
                               "(%d)" % (size, total))
        out.append(dg)
    if i < len(packets):
        raise RuntimeError("%d qlog packets beyond the captured datagrams" % (len(packets) - i))
    return out


def crypto_end(ev):
    """The end (offset + length) of the Handshake-space CRYPTO data in a packet_sent event."""
    d = ev["data"]
    if d["header"]["packet_type"] != "handshake":
        return 0
    return max([f["offset"] + f["length"] for f in d["frames"] if f["frame_type"] == "crypto"] or [0])


def flight_after(events, start):
    """The server's packets sent from events[start] on until it processed a client packet, as
    ([event indexes], next index)."""
    idx = []
    i = start
    while i < len(events):
        n = events[i].get("name")
        if n == "transport:packet_received":
            break
        if n == "transport:packet_sent":
            idx.append(i)
        i += 1
    return idx, i


def acks_after(ev, pn):
    """True when a received packet's ACK frame in the 1-RTT space acknowledges a packet number
    >= pn."""
    d = ev["data"]
    if d["header"]["packet_type"] != "1RTT":
        return False
    for f in d["frames"]:
        if f["frame_type"] == "ack":
            for r in f.get("acked_ranges", []):
                if r[-1] >= pn:
                    return True
    return False


def after_handshake(events, fin_rx, sent, by_dgram, dgram_of, sizes):
    """The server's first flight after the handshake: its datagrams from the client's Finished
    on until it processed an ACK of a 1-RTT packet sent in it (pacing gaps included: what the
    congestion window let out in one round trip), the window when it began and at its end,
    whether it filled the window (cwnd) or ended the response (app)."""
    idx = [i for i in sent if i > fin_rx]
    pn0 = next(events[i]["data"]["header"]["packet_number"] for i in idx
               if events[i]["data"]["header"]["packet_type"] == "1RTT")
    end = next((i for i in range(fin_rx + 1, len(events))
                if events[i].get("name") == "transport:packet_received" and acks_after(events[i], pn0)),
               len(events))
    idx = [i for i in idx if i < end]
    ds = sorted({dgram_of[i] for i in idx})
    # a datagram sent before the ACK was read is the flight's, whole
    metrics = [(i, e["data"]) for i, e in enumerate(events) if e.get("name") == "recovery:metrics_updated"]
    start_m = [m for i, m in metrics if i < fin_rx]
    end_m = [m for i, m in metrics if i < end]
    frames = [f for i in idx for f in events[i]["data"]["frames"]]
    fin = any(f.get("fin") for f in frames if f["frame_type"] == "stream" and f.get("stream_id") == 0)

    def only(kinds):
        return sum(1 for k in ds if all(f["frame_type"] in kinds for i in by_dgram[k]
                                        for f in events[i]["data"]["frames"]))
    return {"dgrams": len(ds), "bytes": sum(sizes[k] for k in ds), "first_dgram": ds[0] if ds else None,
            "cwnd_at_start": start_m[-1]["congestion_window"] if start_m else None,
            "cwnd_at_end": end_m[-1]["congestion_window"] if end_m else None,
            "in_flight_at_end": end_m[-1]["bytes_in_flight"] if end_m else None,
            "ended": "app" if fin else "cwnd", "ack_only_dgrams": only(("ack", "padding")),
            "probe_dgrams": only(("ping", "padding")),
            "sizes": sorted({sizes[k] for k in ds})}


def derive(events, srv_dgrams, max_dgram):
    """The truth from the server's qlog events and its datagrams as the server capture shows
    them ([(time, udp_payload_len)] from the server, in order)."""
    metrics = [e["data"] for e in events if e.get("name") == "recovery:metrics_updated"]
    cwnd0 = metrics[0]["congestion_window"]
    sent = [i for i, e in enumerate(events) if e.get("name") == "transport:packet_sent"]
    recv_before = [e for e in events[:sent[0]] if e.get("name") == "transport:packet_received"]
    sizes = [s for _, s in srv_dgrams]
    # every sent packet grouped into datagrams (all of them: the capture holds them all)
    by_dgram = group([(i, events[i]["data"]["raw"]["length"]) for i in sent], sizes)
    dgram_of = {i: k for k, dg in enumerate(by_dgram) for i in dg}

    def summary(idx):
        ds = sorted({dgram_of[i] for i in idx})
        return {"dgrams": len(ds), "bytes": sum(sizes[k] for k in ds), "packets": len(idx),
                "first_dgram": ds[0] if ds else None}

    ff_idx, nxt = flight_after(events, sent[0])
    ff = summary(ff_idx)
    hs_total = max(crypto_end(events[i]) for i in sent)
    hs_first = max([crypto_end(events[i]) for i in ff_idx] or [0])
    # a datagram is sent whole before the next client packet is read: a flight's last datagram
    # never splits (checked: its packets all precede the next packet_received)
    last = by_dgram[dgram_of[ff_idx[-1]]]
    if any(i >= nxt for i in last):
        raise RuntimeError("the first flight's last datagram spans a received packet")
    client_bytes = sum(e["data"]["raw"]["length"] for e in recv_before)
    amp_limited = hs_first < hs_total and ff["bytes"] < cwnd0
    truth = {"cwnd_bytes": cwnd0, "max_dgram": max_dgram, "iw_dgrams": cwnd0 // max_dgram,
             "client_first": {"packets": len(recv_before), "bytes": client_bytes},
             "first_flight": ff, "handshake_crypto": hs_total,
             "first_flight_crypto": hs_first, "amp_budget": 3 * client_bytes,
             "amp_limited": amp_limited}
    # the first flight after the handshake: from the client's Finished (a Handshake packet with
    # CRYPTO) until an ACK of any 1-RTT packet sent after it reached the server
    fin_rx = next((i for i, e in enumerate(events) if e.get("name") == "transport:packet_received"
                   and e["data"]["header"]["packet_type"] == "handshake"
                   and any(f["frame_type"] == "crypto" for f in e["data"]["frames"])), None)
    if fin_rx is not None:
        truth["after_handshake"] = after_handshake(events, fin_rx, sent, by_dgram, dgram_of, sizes)
    return truth


# ---------------------------------------------------------------------------------------------
# One scenario

def sc_args(sc):
    a = ["--cc", sc.get("cc", "cubic")]
    if sc.get("udp_payload"):
        a += ["--max-udp-payload-size", str(sc["udp_payload"])]
    if sc.get("no_pmtud"):
        a.append("--no-pmtud")
    if sc.get("retry"):
        a.append("--validate-addr")
    if sc.get("gso_dgrams"):
        a += ["--max-gso-dgrams", str(sc["gso_dgrams"])]
    if sc.get("tx_loss"):
        a += ["--tx-loss", str(sc["tx_loss"])]
    return a


def wait_udp(ns, timeout=5):
    end = time.time() + timeout
    while time.time() < end:
        out = lab.sh(["ss", "-Hlun", "sport", "=", ":%d" % PORT], ns=ns, check=False).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise RuntimeError("the QUIC server did not bind")


def wait_qlog(qdir, timeout):
    """The server's one qlog once complete (it is written out when the connection has closed)."""
    end = time.time() + timeout
    while time.time() < end:
        files = glob.glob(os.path.join(qdir, "*.sqlog"))
        if len(files) == 1:
            try:
                return read_qlog(files[0]), files[0]
            except ValueError:
                pass
        time.sleep(0.1)
    raise RuntimeError("no complete qlog in %s (%s)" % (qdir, os.listdir(qdir)))


def run_once(sc, outdir, ns, work):
    name = sc["name"]
    d1, d2 = sc.get("delay_ms", (10, 10))
    key, chain, der = make_chain(os.path.join(work, "cert"), sc.get("cert", "small"))
    www, qdir = os.path.join(work, "www"), os.path.join(work, "qlog")
    os.makedirs(www, exist_ok=True)
    shutil.rmtree(qdir, ignore_errors=True)
    os.makedirs(qdir)
    resp = sc.get("response", 50000)
    with open(os.path.join(www, "f"), "wb") as f:
        f.write(os.urandom(resp))
    lsc = {"iw": 10, "name": name}
    procs, caps = [], {}
    # the client asks for SNI by name (gtlsclient sends "localhost" for an address):
    # `ip netns exec` gives the namespace /etc/netns/NAME/hosts as its /etc/hosts
    etc = os.path.join("/etc/netns", ns["c"])
    try:
        os.makedirs(etc, exist_ok=True)
        with open(os.path.join(etc, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n%s %s\n" % (lab.S4, SNI))
        procs += lab.lab(lsc, d1 * 1000, d2 * 1000, ns=ns)
        for vantage, role, dev in lab.VANTAGES:
            path = os.path.join(outdir, "%s.%s.pcap" % (name, vantage))
            caps[vantage] = lab.start(["tcpdump", "-i", dev, "-s", "2000", "--immediate-mode",
                                       "-U", "-w", path, "udp port %d" % PORT], ns[role])
            lab.wait_line(caps[vantage], "listening")
        srv = lab.start([SERVER, "-q", "--htdocs", www, "--qlog-dir", qdir] + sc_args(sc)
                        + [lab.S4, str(PORT), key, chain], ns["s"])
        procs.append(srv)
        wait_udp(ns["s"])
        cl = lab.sh([CLIENT, "-q", "--exit-on-all-streams-close", "--timeout", "5s",
                     SNI, str(PORT), "https://%s/f" % SNI], ns=ns["c"], timeout=30, check=False)
        if cl.returncode != 0:
            raise RuntimeError("the client exited %d: %s" % (cl.returncode, cl.stderr[-500:]))
        events, qpath = wait_qlog(qdir, 5 + 6 * (d1 + d2) / 1000.0)
        time.sleep(0.1)
        for p in caps.values():
            lab.stop(p)
        for p in procs:
            lab.stop(p)
    finally:
        for p in list(caps.values()) + procs:
            lab.stop(p)
        lab.teardown(ns)
        shutil.rmtree(etc, ignore_errors=True)
    _, at_server = read_udp(os.path.join(outdir, "%s.server.pcap" % name))
    # a Retry is sent without a connection, so not in the qlog
    srv_dgrams = [(t, plen) for t, sp, dp, plen, rec in at_server
                  if sp == PORT and not is_retry(rec[3])]
    truth = derive(events, srv_dgrams, sc.get("udp_payload", NGTCP2_MAX_DGRAM))
    cports = sorted({dp for _, sp, dp, _, _ in at_server if sp == PORT})
    if len(cports) != 1:
        raise RuntimeError("%d client ports in the server capture" % len(cports))
    if sc.get("keep_qlog"):
        shutil.copy(qpath, os.path.join(outdir, name + ".server.sqlog"))
    for vantage, _, _ in lab.VANTAGES:
        cut_capture(os.path.join(outdir, "%s.%s.pcap" % (name, vantage)))
    config = {k: v for k, v in sc.items() if k not in ("name", "keep_qlog")}
    config.update({"delay_ms": [d1, d2], "cert_chain_der": der,
                   "server": [SERVER] + sc_args(sc), "response": resp})
    out = {"scenario": name, "config": config, "server_port": PORT, "client_port": cports[0],
           "server_name": SNI, "quic_version": 1}
    out.update(truth)
    with open(os.path.join(outdir, name + ".truth.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    ff, r = truth["first_flight"], truth.get("after_handshake", {})
    lab.log("%-18s cwnd %5d (%2d x %d)  first flight %d dgrams %5d B (client %d B, 3x %d)%s  "
            "after the handshake %s dgrams %s B (%s, cwnd %s..%s)" % (
                name, truth["cwnd_bytes"], truth["iw_dgrams"], truth["max_dgram"], ff["dgrams"],
                ff["bytes"], truth["client_first"]["bytes"], truth["amp_budget"],
                " AMP" if truth["amp_limited"] else "", r.get("dgrams"), r.get("bytes"),
                r.get("ended"), r.get("cwnd_at_start"), r.get("cwnd_at_end")))
    return out


def run(sc, outdir, ns, attempts=2):
    work = tempfile.mkdtemp(prefix="quictruth-")
    try:
        for attempt in range(attempts):
            try:
                return run_once(sc, outdir, ns, work)
            except RuntimeError as e:
                if attempt == attempts - 1:
                    raise
                lab.log("%-18s again: %s" % (sc["name"], e))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The scenarios: what changes a first flight

def scenarios():
    out = []
    for cc in ("cubic", "reno", "bbr", "bbr2"):
        out.append({"name": "cc_" + cc, "cc": cc})
    # the IW in bytes follows the maximum UDP payload (10 x it, up to 14720)
    for size in (1200, 1350):
        out.append({"name": "udp%d" % size, "udp_payload": size})
    out.append({"name": "nopmtud", "no_pmtud": True})
    # the response: one that fits in the window, one that fills many
    out.append({"name": "resp1k", "response": 1000})
    out.append({"name": "resp300k", "response": 300000})
    # certificate chains: 2 certificates fit in 3x the client's Initial, 5 do not
    out.append({"name": "cert2", "cert": "rsa2"})
    out.append({"name": "cert5", "cert": "rsa5"})
    out.append({"name": "cert5_rtt100", "cert": "rsa5", "delay_ms": (25, 25)})
    # a Retry validates the address first: the 3x limit no longer applies
    out.append({"name": "cert5_retry", "cert": "rsa5", "retry": True})
    out.append({"name": "rtt100", "delay_ms": (25, 25)})
    # asymmetric: the client's side slow (the handshake's round trip mostly near the client)
    out.append({"name": "slowclient", "delay_ms": (40, 2)})
    out.append({"name": "slowserver", "delay_ms": (2, 40)})
    # GSO off (one datagram per sendmsg: the flight leaves paced by the stack's own calls), and
    # a server that loses 1 in 10 of its datagrams (ngtcp2's --tx-loss drops them inside the
    # server: no vantage point sees them; its recovery, later datagrams, is what shows)
    out.append({"name": "gso_off", "gso_dgrams": 1})
    out.append({"name": "loss10", "tx_loss": 0.1, "response": 100000})
    return out


def main():
    if os.geteuid() != 0:
        print("quictruth.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    for b in (SERVER, CLIENT):
        if not shutil.which(b):
            print("quictruth.py: %s not installed (apt-get install ngtcp2-server ngtcp2-client)" % b,
                  file=sys.stderr)
            return 2
    args = sys.argv[1:]
    outdir = os.path.join(ROOT, "tests", "pcaps", "quictruth")
    jobs, want, listing, keep = 1, [], False, False
    while args:
        a = args.pop(0)
        if a == "--out":
            outdir = args.pop(0)
        elif a == "--jobs":
            jobs = max(1, int(args.pop(0)))
        elif a == "--list":
            listing = True
        elif a == "--keep-qlog":
            keep = True
        else:
            want.append(a)
    every = scenarios()
    unknown = [w for w in want if w not in {s["name"] for s in every}]
    if unknown:
        print("quictruth.py: no scenario %s" % ", ".join(unknown), file=sys.stderr)
        return 2
    todo = [dict(s, keep_qlog=keep) for s in every if not want or s["name"] in want]
    if listing:
        for s in todo:
            print(s["name"])
        return 0
    os.makedirs(outdir, exist_ok=True)
    t0, failed = time.time(), []

    def one(i, s):
        try:
            run(s, outdir, names("-%d-%d" % (os.getpid(), i)))
        except Exception as e:  # noqa: BLE001 - report every scenario, fail at the end
            failed.append(s["name"])
            lab.log("%-18s FAILED: %s" % (s["name"], e))

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, range(len(todo)), todo))
    lab.log("%d scenarios in %.1f s (--jobs %d)%s" % (
        len(todo), time.time() - t0, jobs, "; failed: " + " ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
