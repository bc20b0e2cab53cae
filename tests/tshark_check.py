"""Cross-check of stored SYN / SYN-ACK fields against tshark, a decoder nobody here wrote."""
import sqlite3
import subprocess

FIELDS = ["frame.time_epoch", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst",
          "tcp.dstport", "tcp.flags.ack", "tcp.window_size_value", "tcp.options.mss_val",
          "tcp.options.wscale.shift", "tcp.option_kind", "tcp.options.timestamp.tsval",
          "ip.ttl", "ipv6.hlim"]


def _us(epoch):
    sec, _, frac = epoch.partition(".")
    return int(sec) * 1000000 + int((frac + "000000")[:6])


def _last(v):
    return v.split(",")[-1] if v else ""


def tshark_syns(pcap):
    """[(time_us, src, sport, dst, dport, is_synack, fields dict)] for every SYN tshark sees."""
    cmd = ["tshark", "-n", "-r", pcap, "-Y", "tcp.flags.syn==1", "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=a"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       timeout=300)
    out = []
    for line in r.stdout.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        if not v.get("tcp.srcport"):
            continue
        v6 = bool(v.get("ipv6.src"))
        src = _last(v["ipv6.src"]) if v6 else _last(v["ip.src"])
        dst = _last(v["ipv6.dst"]) if v6 else _last(v["ip.dst"])
        kinds = [k for k in _last_group(v.get("tcp.option_kind", ""))]

        def num(name):
            x = _last(v.get(name, ""))
            return int(x, 0) if x else None

        fields = {
            "syn_win": num("tcp.window_size_value"),
            "mss": num("tcp.options.mss_val"),
            "wscale": num("tcp.options.wscale.shift"),
            "ts": num("tcp.options.timestamp.tsval"),
            "sack": 1 if "4" in kinds else 0,
            "ttl": num("ipv6.hlim") if v6 else num("ip.ttl"),
        }
        out.append((_us(v["frame.time_epoch"]), src, int(_last(v["tcp.srcport"])), dst,
                    int(_last(v["tcp.dstport"])), _last(v["tcp.flags.ack"]) in ("1", "True"),
                    fields))
    return out


def _last_group(kinds):
    return kinds.split(",") if kinds else []


def compare(db, pcap):
    """Returns (checked, problems): problems are one-line descriptions."""
    syns = tshark_syns(pcap)
    by_key = {}
    for s in syns:
        by_key.setdefault((s[0], s[1], s[2], s[3], s[4], s[5]), s)
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = list(con.execute("SELECT * FROM flows"))
    con.close()
    problems, checked = [], 0
    tuples = set()
    for r in rows:
        tuples.add((r["client_ip"], r["client_port"], r["server_ip"], r["server_port"]))
        tuples.add((r["server_ip"], r["server_port"], r["client_ip"], r["client_port"]))
        sides = []
        if r["syn_us"] is not None:
            sides.append(("c", (r["syn_us"], r["client_ip"], r["client_port"], r["server_ip"],
                                r["server_port"], False)))
        if r["synack_us"] is not None and r["handshake"] != "simultaneous":
            sides.append(("s", (r["synack_us"], r["server_ip"], r["server_port"], r["client_ip"],
                                r["client_port"], True)))
        for p, key in sides:
            s = by_key.get(key)
            if s is None:
                problems.append("%s: tshark has no %s at %s" % (pcap, "SYN-ACK" if key[5] else "SYN", key))
                continue
            checked += 1
            for name, want in s[6].items():
                got = r[p + "_" + name]
                if name == "sack" and got is None:
                    continue  # options cut by the snaplen: unknown
                if got != want:
                    problems.append("%s: flow %s:%s %s_%s = %r, tshark says %r" % (
                        pcap, r["client_ip"], r["client_port"], p, name, got, want))
    for s in syns:
        if (s[1], s[2], s[3], s[4]) not in tuples:
            problems.append("%s: tshark SYN %s:%s > %s:%s at %d has no flow" % (
                pcap, s[1], s[2], s[3], s[4], s[0]))
    return checked, problems
