# Server names: the name a client asks for (HTTP Host, TLS SNI) is stored for its flow whole,
# also when the request spans segments, comes out of order or follows a proxy's exchange.
# Run by tests/run.py with tests/helpers.py's names (test, run, rows, analyse, eq, Skip,
# SHARED, craft, PCAPS, first_payload, ...).
import names_check  # noqa: E402  (tests/ is on sys.path)


@test("names-vs-tshark-shared-captures")
def t_names_shared(binary, tmp):
    """For every TCP stream of ../shared/captures in which tshark shows an HTTP Host or a TLS
    SNI, that name's host part is the flow's server_name (tests/names_check.py says how they
    compare): at least 99.5% of them (issue 31 item 9). (The ASan build reads every shared capture, names.c
    included, in shared-captures[asan].)"""
    if not os.path.isdir(SHARED):
        raise Skip("../shared/captures not present")
    if not shutil.which("tshark"):
        raise Skip("tshark not installed")
    matched, total, misses = names_check.measure(binary, names_check.shared_pcaps(), tmp, env=ENV)
    if total < 300:
        raise AssertionError("only %d names from tshark" % total)
    pct = 100.0 * matched / total
    missed = ["%s %s:%s > %s:%s tshark %r stored %r" % (os.path.relpath(p, SHARED), t[0], t[1], t[2], t[3], n, s)
              for p, _, t, n, s in misses]
    if pct < 99.5:
        raise AssertionError("%d of %d names stored (%.1f%%), misses:\n%s" % (matched, total, pct, "\n".join(missed)))
    return "%d of %d names tshark shows stored for the same flow (%.1f%%); missed: %s" % (
        matched, total, pct, "; ".join(missed) or "none")


def _http_flow(c, req_parts, sport=80):
    """Handshake, the request in the given parts (each a segment), a reply, the close."""
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.01, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.01, "A", 1, 1)
    off = 1
    for part in req_parts:
        c.c(0.001, "PA", off, 1, payload=part)
        off += len(part)
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    c.s(0.01, "PA", 1, off, payload=resp)
    c.c(0.01, "FA", off, 1 + len(resp))
    c.s(0.001, "FA", 1 + len(resp), off + 1)
    c.c(0.001, "A", off + 1, 2 + len(resp))
    return c.out


def _names(db):
    return {r["client_port"]: r["server_name"] for r in rows(db)}


def _tshark_names(pcap):
    """{client port: tshark's Host or SNI} of a capture."""
    out = subprocess.run(["tshark", "-n", "-r", pcap, "-Y",
                          "tcp && (http.host || tls.handshake.extensions_server_name)", "-T", "fields",
                          "-e", "tcp.srcport", "-e", "http.host", "-e", "tls.handshake.extensions_server_name"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    res = {}
    for line in out.splitlines():
        port, host, sni = (line.split("\t") + ["", ""])[:3]
        res.setdefault(int(port), sni or host)
    return res


@test("names-ipv6-literal-host", ("release", "asan"))
def t_names_v6_host(binary, tmp):
    """An HTTP Host that is an IPv6 literal with a port, '[2001:db8::1]:8080', is stored whole
    as its host part, '[2001:db8::1]' (nDPI 4.2 cuts it at the first ':' to '['): over IPv6 in
    one segment, over IPv4 cut inside the literal, and with a bare LF after each line."""
    host = b"[2001:db8::1]:8080"
    req = b"GET /x HTTP/1.1\r\nHost: " + host + b"\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n"
    pk = _http_flow(craft.Conn(cip="2001:db8::10", sip="2001:db8::1", cport=41001, sport=8080), [req])
    pk += _http_flow(craft.Conn(cport=41002, sport=8080, t0=1700000001.0), [req[:30], req[30:]])
    lf = req.replace(b"\r\n", b"\n")
    pk += _http_flow(craft.Conn(cport=41003, sport=8080, t0=1700000002.0), [lf])
    p = os.path.join(tmp, "v6host.pcap")
    craft.write_pcap(p, pk)
    want = {41001: "[2001:db8::1]", 41002: "[2001:db8::1]", 41003: "[2001:db8::1]"}
    got = rows(analyse(binary, [p], tmp, [], "a.db"))
    eq({r["client_port"]: r["server_name"] for r in got}, want, "server_name")
    eq({r["client_port"]: r["client_ip"] for r in got}[41001], "2001:db8::10", "IPv6 flow")
    for r in got:
        assert (r["app_proto"] or "").startswith("HTTP"), r["app_proto"]
    eq(_names(analyse(binary, [p], tmp, ["--threads", "1"], "b.db")), want, "--threads 1")
    eq(set(_names(analyse(binary, [p], tmp, ["--no-dpi"], "c.db")).values()), {None}, "--no-dpi")
    if shutil.which("tshark"):  # a decoder nobody here wrote reads the same Host
        ts = _tshark_names(p)
        eq(ts.get(41001), host.decode(), "tshark's Host")
        eq(names_check.host_part(ts[41001]), want[41001], "tshark's host part")
    return "'%s' stored as %r" % (host.decode(), want[41001])


def _tls_flow(c, parts, before=()):
    """Handshake, client messages `before` (each answered by the server), then the segments
    of `parts` as (offset, bytes) in the order given, then the server's ACK and the close."""
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.01, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.01, "A", 1, 1)
    cs, ss = 1, 1
    for msg, reply in before:
        c.c(0.001, "PA", cs, ss, payload=msg)
        cs += len(msg)
        c.s(0.01, "PA", ss, cs, payload=reply)
        ss += len(reply)
    end = cs
    for off, data in parts:
        c.c(0.001, "PA", cs + off, ss, payload=data)
        end = max(end, cs + off + len(data))
    c.s(0.01, "A", ss, end)
    c.c(0.01, "RA", end, ss)
    return c.out


@test("names-split-client-hello", ("release", "asan"))
def t_names_split_hello(binary, tmp):
    """A real TLS ClientHello split over two segments has its SNI stored, also when the second
    half arrives first, when it comes in three parts with one retransmitted, and after a
    SOCKS5 exchange (the SNI is the name the client asks the proxy for)."""
    hello = first_payload(os.path.join(PCAPS, "dpi", "apps.client.pcap"), 443)
    sni = "tls12.iwscope.test"
    assert sni.encode() in hello[60:], "the SNI is past the first 60 bytes"
    cases = {
        42001: [(0, hello[:60]), (60, hello[60:])],                       # in order
        42002: [(60, hello[60:]), (0, hello[:60])],                       # second half first
        42003: [(0, hello[:40]), (100, hello[100:]), (0, hello[:100])],   # three, one again
    }
    pk = []
    for i, (port, parts) in enumerate(sorted(cases.items())):
        pk += _tls_flow(craft.Conn(cport=port, sport=443, t0=1700000000.0 + i), parts)
    socks = [(b"\x05\x01\x00", b"\x05\x00"),
             (b"\x05\x01\x00\x03\x12" + sni.encode() + b"\x01\xbb", b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")]
    pk += _tls_flow(craft.Conn(cport=42004, sport=1080, t0=1700000010.0),
                    [(0, hello[:60]), (60, hello[60:])], before=socks)
    p = os.path.join(tmp, "split.pcap")
    craft.write_pcap(p, pk)
    want = {42001: sni, 42002: sni, 42003: sni, 42004: sni}
    got = rows(analyse(binary, [p], tmp, [], "a.db"))
    eq({r["client_port"]: r["server_name"] for r in got}, want, "server_name")
    eq({r["client_port"]: r["app_proto"] for r in got}[42001], "TLS", "nDPI's protocol")
    eq(_names(analyse(binary, [p], tmp, ["--threads", "1"], "b.db")), want, "--threads 1")
    eq(set(_names(analyse(binary, [p], tmp, ["--no-dpi"], "c.db")).values()), {None}, "--no-dpi")
    if shutil.which("tshark"):  # tshark reassembles the in-order one the same way
        eq(_tshark_names(p).get(42001), sni, "tshark's SNI")
    return "%d split ClientHellos, SNI stored for each" % len(want)


@test("names-held-requests-freed", ("release", "asan"))
def t_names_held(binary, tmp):
    """1100 flows each send the first 60 bytes of a ClientHello and never the rest, and are
    still open when the capture ends: more than the 1024 requests held at once, each freed with
    its flow (ASan's leak check), none named; a complete one after them still is."""
    hello = first_payload(os.path.join(PCAPS, "dpi", "apps.client.pcap"), 443)
    pk = []
    for i in range(1100):
        c = craft.Conn(cport=20000 + i, sport=443, t0=1700000000.0 + i * 0.001)
        c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
        c.s(0.001, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
        c.c(0.001, "PA", 1, 1, payload=hello[:60])
        pk += c.out
    pk += _tls_flow(craft.Conn(cport=19999, sport=443, t0=1700000002.0), [(0, hello[:60]), (60, hello[60:])])
    pk.sort(key=lambda x: x[0])
    p = os.path.join(tmp, "held.pcap")
    craft.write_pcap(p, pk)
    names = _names(analyse(binary, [p], tmp, [], "a.db"))
    eq(len(names), 1101, "flows")
    eq(names.pop(19999), "tls12.iwscope.test", "the complete one")
    eq(set(names.values()), {None}, "the cut ones")
    return "1100 cut requests held and freed"
