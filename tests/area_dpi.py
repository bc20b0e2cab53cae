# nDPI: real TLS 1.2 / 1.3, HTTP/1.1, SSH and an unknown protocol, seen from each vantage point;
# how many packets nDPI needs, and its state freed once it has decided.
# Run by tests/run.py with tests/helpers.py's names (see run.py).


def make_dpi_test(vantage):
    def fn(binary, tmp):
        pcap = os.path.join(PCAPS, "dpi", "apps.%s.pcap" % vantage)
        expect = json.load(open(os.path.join(PCAPS, "dpi", "apps.expect.json")))
        got = rows(analyse(binary, [pcap], tmp))
        eq(len(got), len(expect), "flows")
        ndpi = ndpireader_flows(pcap)
        names = tshark_names(pcap)
        for r, e in zip(got, expect):
            what = "%s flow to port %d" % (e["client"], e["server_port"])
            eq(r["server_port"], e["server_port"], what + " order")
            eq(r["app_proto"], e["app_proto"], what + " app_proto")
            if e["server_name"]:
                eq(r["server_name"], e["server_name"], what + " server_name")
            elif e["app_proto"] == "SSH":
                assert (r["server_name"] or "").startswith("SSH-2.0-"), r["server_name"]
            else:
                eq(r["server_name"], None, what + " server_name")
            eq(r["dpi_method"], "none" if e["app_proto"] == "Unknown" else "payload", what + " method")
            # a decoder nobody here wrote says the same
            eq(ndpi[r["client_port"]][0], r["app_proto"], what + " vs ndpiReader")
            eq(ndpi[r["client_port"]][1], r["server_name"], what + " name vs ndpiReader")
            if r["client_port"] in names:
                eq(names[r["client_port"]], r["server_name"], what + " name vs tshark")
        tls = [r for r in got if r["app_proto"] == "TLS"]
        eq([(r["s_iw_limit"], r["s_iw_segs"]) for r in tls], [("cwnd", 10)] * 2,
           "TLS server first flights (long certificate chain fills IW10)")
        eq(sorted(names.values()), ["tls12.iwscope.test", "tls13.iwscope.test", "www.iwscope.test"], "tshark names")
    return fn


for _v in ("client", "mid", "server"):
    test("dpi:" + _v, ("release", "asan"))(make_dpi_test(_v))


@test("dpi-default-packets-decide-what-8-do")
def t_dpi_default_packets(binary, tmp):
    """The default --dpi-packets (6) was chosen on evidence: on every TCP flow of the test
    captures, and of ../shared/captures when present, it decides exactly what 8 packets do
    (protocol, server name, method). 32 packets detect at most one flow more there."""
    caps = sorted(glob.glob(os.path.join(PCAPS, "**", "*.pcap"), recursive=True))
    if os.path.isdir(SHARED):
        caps += sorted(p for p in glob.glob(os.path.join(SHARED, "**", "*"), recursive=True)
                       if os.path.isfile(p) and not p.endswith((".md", ".tsv")))
    q = "SELECT flow_key, app_proto, server_name, dpi_method FROM flows ORDER BY flow_key"
    flows = decided = more = 0
    # 40 captures per run (read as one continuous capture; both sides of the comparison read
    # the same), because nDPI's start-up is most of a run on a small capture
    for i in range(0, len(caps), 40):
        group = caps[i:i + 40]
        files = [a for c in group for a in ("-r", c)]
        got = {}
        for n in ("", "8", "32"):
            db = os.path.join(tmp, "d%s.db" % n)
            for x in glob.glob(db + "*"):
                os.unlink(x)
            run(["-q", "--threads", "1", "-o", db] + files + (["--dpi-packets", n] if n else []),
                binary, timeout=300)
            got[n] = [tuple(r.values()) for r in rows(db, q)]
        eq(got[""], got["8"], "captures %d..%d: default vs --dpi-packets 8" % (i, i + len(group) - 1))
        flows += len(got[""])
        decided += sum(1 for r in got[""] if r[3] == "payload")
        more += sum(1 for r in got["32"] if r[3] == "payload") - sum(1 for r in got[""] if r[3] == "payload")
    assert flows >= 40 and decided >= 10, (flows, decided)  # not a vacuous comparison
    assert more <= 1, "32 packets decide %d flows more than the default" % more
    return "%d captures, %d flows, %d decided by payload, the same with 8; 32 decide %d more" % (
        len(caps), flows, decided, more)


@test("dpi-state-freed-once-decided", ("release", "asan"))
def t_dpi_freed(binary, tmp):
    """50 HTTP flows open at once, each decided at its request and response: nDPI never holds
    more than a couple of states, and --dpi-packets bounds the inspection."""
    pk = []
    for i in range(50):
        c = craft.Conn(cport=30000 + i, t0=1700000000.0 + i)
        c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
        c.s(0.01, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
        c.c(0.01, "A", 1, 1)
        req = b"GET /x HTTP/1.1\r\nHost: h%d.example\r\nUser-Agent: t\r\n\r\n" % i
        c.c(0.001, "PA", 1, 1, payload=req)
        resp = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
        c.s(0.01, "PA", 1, 1 + len(req), payload=resp)
        c.c(0.01, "A", 1 + len(req), 1 + len(resp))
        pk += c.out
    for i in range(50):  # every flow is still open: one more segment each, at the end
        c = craft.Conn(cport=30000 + i, t0=1700000100.0 + i * 0.01)
        c.c(0, "A", 200, 200)
        pk += c.out
    p = os.path.join(tmp, "http50.pcap")
    craft.write_pcap(p, pk)
    db = analyse(binary, [p], tmp, [], "a.db")
    eq(rows(db, "SELECT count(*) AS n FROM flows WHERE app_proto = 'HTTP' AND dpi_method = 'payload' "
                "AND server_name LIKE 'h%.example'")[0]["n"], 50, "HTTP flows")
    peak = rows(db, "SELECT dpi_peak_states FROM runs")[0]["dpi_peak_states"]
    assert 1 <= peak <= 2, "peak nDPI states %d" % peak
    # --dpi-packets bounds nDPI's inspection: a real TLS ClientHello split over two segments is
    # read whole by default, but with --dpi-packets 1 nDPI stops after the first half and guesses
    hello = first_payload(os.path.join(PCAPS, "dpi", "apps.client.pcap"), 443)
    c = craft.Conn(cport=30100, sport=443)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460))
    c.s(0.01, "SA", 0, 1, opts=craft.tcp_options(mss=1460))
    c.c(0.01, "A", 1, 1)
    c.c(0.001, "A", 1, 1, payload=hello[:60])
    c.c(0.001, "PA", 61, 1, payload=hello[60:])
    c.s(0.01, "A", 1, 1 + len(hello))
    p2 = os.path.join(tmp, "split-hello.pcap")
    craft.write_pcap(p2, c.out)
    whole = rows(analyse(binary, [p2], tmp, [], "b.db"))[0]
    eq((whole["app_proto"], whole["dpi_method"], whole["server_name"]), ("TLS", "payload", "tls12.iwscope.test"), "default")
    # the name is iwscope's own reading of the client's reassembled bytes (names.c), which
    # --dpi-packets does not bound
    cut = rows(analyse(binary, [p2], tmp, ["--dpi-packets", "1"], "c.db"))[0]
    eq((cut["dpi_method"], cut["server_name"]), ("guess", "tls12.iwscope.test"), "--dpi-packets 1")
    return "50 concurrent flows, at most %d nDPI states alive" % peak


def ftp_greeting_pcap(tmp):
    """An FTP session whose greeting's continuation lines nDPI takes a name from: on nDPI 4.2 it
    takes ' ' (Zeek's ipv6-multiline-reply capture; a held-out one gave '---------')."""
    c = craft.Conn(cport=40200, sport=21)
    c.c(0, "S", 0, 0, opts=craft.tcp_options(mss=1460, sok=True))
    c.s(0.03, "SA", 0, 1, opts=craft.tcp_options(mss=1460, sok=True))
    c.c(0.001, "A", 1, 1)
    seq = 1
    for line in (b"220----------\r\n", b"220-  Welcome\r\n", b"220 ready\r\n"):
        c.s(0.001, "PA", seq, 1, payload=line)
        seq += len(line)
    c.c(0.03, "PA", 1, seq, payload=b"USER anonymous\r\n")
    c.s(0.03, "PA", seq, 17, payload=b"331 Password required\r\n")
    seq += 23
    c.c(0.03, "PA", 17, seq, payload=b"PASS x\r\n")
    c.s(0.03, "PA", seq, 25, payload=b"230 ok\r\n")
    p = os.path.join(tmp, "ftp.pcap")
    craft.write_pcap(p, c.out)
    return p


@test("dpi-no-placeholder-names", ("release", "asan"))
def t_dpi_placeholder(binary, tmp):
    """A name nDPI read from a greeting's filler is not stored: FTP's ' ' or '---------' is no
    server's name (the app stays FTP_CONTROL)."""
    got = rows(analyse(binary, [ftp_greeting_pcap(tmp)], tmp), "SELECT app_proto, server_name FROM flows")
    eq(got, [{"app_proto": "FTP_CONTROL", "server_name": None}], "FTP flow")
    if os.path.isdir(SHARED):
        db = analyse(binary, [os.path.join(SHARED, "zeek", "testing_btest_Traces_ftp_ipv6-multiline-reply.pcap")],
                     tmp, (), "z.db")
        eq(rows(db, "SELECT server_port, server_name FROM flows"), [{"server_port": 21, "server_name": None}],
           "ipv6-multiline-reply")


@test("dpi-weak-match-said", ("release", "asan"))
def t_dpi_weak(binary, tmp):
    """nDPI's answer is stored with how sure nDPI was (dpi_method): LDAP on 389 that nDPI reads as
    MQTT (its pattern matched the payload; nDPI itself flags the protocol as off its port) is
    'offport', not 'payload'; an FTP flow nDPI only matched by its port is 'guess'; HTTP on 80
    read in the payload stays 'payload'."""
    if not os.path.isdir(SHARED):
        raise Skip("../shared/captures not present")
    want = {"suricata-verify/ldap-unbind__ldap.pcap": (389, "MQTT", "offport"),
            "zeek/testing_btest_Traces_ldap_ldap_search_umlaut.pcap": (389, "MQTT", "offport"),
            "zeek/testing_btest_Traces_ftp_ipv6-multiline-reply.pcap": (21, "FTP_CONTROL", "guess"),
            "tcpdump/arcnet-rfc1201-arp-icmp-http.pcap": (80, "HTTP", "payload")}
    for i, (rel, w) in enumerate(sorted(want.items())):
        db = analyse(binary, [os.path.join(SHARED, rel)], tmp, (), "w%d.db" % i)
        got = [(r["server_port"], r["app_proto"], r["dpi_method"])
               for r in rows(db, "SELECT server_port, app_proto, dpi_method FROM flows")]
        eq(got, [w], rel)


LEGEND = "app?: nDPI's guess is weak (dpi_method offport: off its port; guess: by port)"


@test("dpi-weak-guess-marked-in-text", ("release", "asan"))
def t_dpi_weak_marked(binary, tmp):
    """Where nDPI's answer is weak (dpi_method offport or guess) the text outputs mark the
    application, "MQTT?", and say once what the mark means: the -v line of LDAP on 389 that
    nDPI reads as MQTT, report --by server (SMTP on 25 read as MQTT) and --by app (its weak
    flows a row of their own); JSON and CSV keep app_proto as stored, with app_weak 1. HTTP
    read in the payload on 80 carries no mark and no legend (issue 31 item 10)."""
    if not os.path.isdir(SHARED):
        raise Skip("../shared/captures not present")
    ldap = os.path.join(SHARED, "suricata-verify", "ldap-unbind__ldap.pcap")
    smtp = os.path.join(SHARED, "suricata-verify", "smtp-attachment-md5__input.pcap")
    http = os.path.join(SHARED, "tcpdump", "arcnet-rfc1201-arp-icmp-http.pcap")
    db = os.path.join(tmp, "w.db")
    _, out, _ = run(["-v", "-r", ldap, "-o", db], binary, 0)
    eq(out.splitlines(), ["1.1.1.1.5555 > 2.2.2.2.389 tcp complete MQTT? syn_win 8192/8192 rwnd 8192/8192 "
                          "server - none client >=IW1 app", LEGEND], "-v lines")
    _, out, _ = run(["-v", "-r", http, "-o", os.path.join(tmp, "h.db")], binary, 0)
    assert " HTTP syn_win " in out and "?" not in out and "nDPI" not in out, out
    run(["-q", "-r", smtp, "-r", http, "-o", db, "--append"], binary, 0)
    _, out, _ = run(["report", db, "--by", "server"], binary, 0)
    lines = out.splitlines()
    row = [l.split() for l in lines if l.split()[:2] == ["172.16.92.2", "25"]]
    eq([r[-2:] for r in row], [["MQTT?", "linuxbox"]], "the SMTP server's row: " + out)
    http_row = [l.split() for l in lines if " 80 " in l]
    assert http_row and "HTTP" in http_row[0] and "HTTP?" not in out, out
    eq(lines.count("  " + LEGEND), 1, "the legend under the table: " + out)
    _, out, _ = run(["report", db, "--by", "app"], binary, 0)
    rwnd = out[out.index("Receiver classes by application"):].splitlines()
    eq(rwnd[1:6], ["  app    rwnd_class  flows", "  HTTP   6KB             1", "  MQTT?  64KB            1",
                   "  MQTT?  8192            1", "  " + LEGEND], "receiver classes by application")
    by_app = out[:out.index("Server initial windows by server name")].splitlines()
    eq([l.split()[0] for l in by_app[2:4]], ["HTTP", "MQTT?"], "IWs by application")
    eq(by_app[4], "  " + LEGEND, "its legend")
    _, js, _ = run(["report", db, "--by", "server", "--format", "json"], binary, 0)
    srv = {(r["server_ip"], r["server_port"]): (r["app_proto"], r["app_weak"]) for r in json.loads(js)["servers"]}
    eq(srv[("172.16.92.2", 25)], ("MQTT", 1), "JSON: the app as stored, app_weak 1")
    assert all(w == 0 for (ip, port), (app, w) in srv.items() if port == 80), srv
