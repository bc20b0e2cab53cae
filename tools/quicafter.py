#!/usr/bin/env python3
"""The flight after the QUIC handshake, located by timing in the QUIC truth lab's captures
(tests/pcaps/quictruth), against the server's qlog: the figures of docs/METHOD.md "QUIC" ("Why
not the flight after the handshake"). For each scenario: how it ended (the truth's window or
the application), its bytes less all the server sent before it minus the true initial window
(excess), and at each vantage point (client, mid, server) the server's datagrams after the
client's first 1-RTT datagram up to a pause of half the handshake's round trip: WHOLE where
that is the truth's flight at all three.

    python3 tools/quicafter.py"""
import glob
import json
import os
import struct

D = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "pcaps", "quictruth")


def dgrams(p, sport_srv):
    """[(time_us, from_server, udp_payload_len, first byte)] of a lab capture's datagrams."""
    data = open(p, "rb").read(); off = 24; out = []
    while off + 16 <= len(data):
        sec, usec, cap, orig = struct.unpack("<IIII", data[off:off+16]); fr = data[off+16:off+16+cap]; off += 16 + cap
        if len(fr) < 42 or fr[12:14] != b"\x08\x00" or fr[23] != 17: continue
        ihl = (fr[14] & 15) * 4; sp, dp, ulen = struct.unpack("!HHH", fr[14+ihl:20+ihl])
        pl = fr[22+ihl:]
        out.append((sec*1e6+usec, sp == sport_srv, ulen - 8, pl[:1]))
    return out


def main():
    whole, ended_cwnd, excesses = {}, 0, []
    for tp in sorted(glob.glob(D + "/*.truth.json")):
        t = json.load(open(tp)); sc = t["scenario"]; ah = t["after_handshake"]
        srv = dgrams("%s/%s.server.pcap" % (D, sc), t["server_port"])
        # the server's datagrams as the truth numbers them: a Retry is not in its qlog
        s_only = [d for d in srv if d[1] and not (d[3] and d[3][0] & 0x80 and d[3][0] & 0x30 == 0x30)]
        prior = sum(d[2] for d in s_only[:ah["first_dgram"]])
        excess = ah["bytes"] - prior - t["cwnd_bytes"]
        ok_v = []
        for v in ("client", "mid", "server"):
            ds = dgrams("%s/%s.%s.pcap" % (D, sc, v), t["server_port"])
            c0 = ds[0][0]; s0 = next(d[0] for d in ds if d[1]); c1 = next(d[0] for d in ds if not d[1] and d[0] > s0)
            rtt = c1 - c0
            # the client's first 1-RTT datagram (short header): its request, with or after Finished
            i = next(i for i, d in enumerate(ds) if not d[1] and d[3] and not (d[3][0] & 0x80))
            fl = []; last = None
            for d in ds[i+1:]:
                if not d[1]: continue
                if last is not None and (d[0] - last) * 2 >= rtt: break
                fl.append(d); last = d[0]
            ok_v.append((len(fl), sum(d[2] for d in fl)))
        same = all(x == (ah["dgrams"], ah["bytes"]) for x in ok_v)
        whole[sc] = same
        if ah["ended"] == "cwnd":
            ended_cwnd += 1
            excesses.append(excess)
        print("%-14s ended %-4s excess %5d  truth %d/%d  found %s %s" % (sc, ah["ended"], excess, ah["dgrams"], ah["bytes"], ok_v, "WHOLE" if same else ""))
    print("whole at every vantage point: %d of %d; window-ended: %d, excess %d to %d bytes" % (
        sum(whole.values()), len(whole), ended_cwnd, min(excesses), max(excesses)))


if __name__ == "__main__":
    main()
