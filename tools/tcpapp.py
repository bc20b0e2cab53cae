#!/usr/bin/env python3
"""Tiny request/response app for the ground-truth harness.

server HOST PORT [--tfo] [--cc NAME] [--max-pacing BYTES_PER_S]
        one thread per connection; answers
          "SEND n\\n"  with n zero bytes written at once (one send, TCP_NODELAY),
          "TAKE n\\n"+n bytes with "OK\\n",
          "NAGLE n\\n" with Nagle on (TCP_NODELAY never set): a 300-byte header, a 5 ms sleep,
                       then a body of n zero bytes (two writes), and no FIN before all of
                       it has left;
        then closes. (Not HTTP's words: nDPI must not know it.) --tfo sets TCP_FASTOPEN on the
        listener (the namespace's net.ipv4.tcp_fastopen must enable the server side). --cc sets
        the listener's congestion control (TCP_CONGESTION: any the kernel has, where a namespace's
        sysctl may only choose the allowed ones); --max-pacing sets SO_MAX_PACING_RATE on each
        connection before it sends (Linux then paces it itself, no fq needed).
client HOST PORT PAUSE SPEC...
        SPEC is OP:N[:OPTION...], OP one of GET (SEND n), PUT (TAKE n), NAGLE (NAGLE n);
        options: rcvbuf=BYTES (SO_RCVBUF set before connecting), tfo (the request rides the SYN:
        sendto with MSG_FASTOPEN; the namespace's net.ipv4.tcp_fastopen must allow it),
        par=K (K such connections at once, one thread each, their requests sent together so
        the responses interleave). Specs run one after another, PAUSE seconds apart. Prints one
        JSON line per connection with its local port, so the harness can match flows to truth.
"""
import fcntl
import json
import socket
import struct
import sys
import threading
import time

NAGLE_HEADER = 300
NAGLE_SLEEP = 0.005
SIOCOUTQNSD = 0x894B
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)


def recv_line(conn):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            break
        buf += chunk
    return buf.decode().strip()


def unsent(conn):
    """Bytes written but not yet sent (SIOCOUTQNSD)."""
    return struct.unpack("i", fcntl.ioctl(conn.fileno(), SIOCOUTQNSD, struct.pack("i", 0)))[0]


def handle(conn, pacing=None):
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        if pacing:
            conn.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, pacing)
        op, n = recv_line(conn).split()
        n = int(n)
        # NAGLE never sets TCP_NODELAY: clearing it later would leave Linux's TCP_NAGLE_PUSH
        # set, and Nagle would not hold anything back
        if op != "NAGLE":
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if op == "SEND":
            conn.sendall(bytes(n))
        elif op == "TAKE":
            got = 0
            while got < n:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                got += len(chunk)
            conn.sendall(b"OK\n")
        elif op == "NAGLE":
            conn.sendall(bytes(NAGLE_HEADER))
            time.sleep(NAGLE_SLEEP)
            conn.sendall(bytes(n))
            # a FIN would ride the held short segment and push it out (Linux lets a segment
            # with FIN past Nagle): close only when everything has been sent
            end = time.time() + 10
            while unsent(conn) and time.time() < end:
                time.sleep(0.001)
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(65536):
            pass
    except OSError:
        pass
    finally:
        conn.close()


def serve(host, port, tfo=False, cc=None, pacing=None):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if tfo:
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_FASTOPEN, 16)
    if cc:
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    ls.bind((host, port))
    ls.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=handle, args=(conn, pacing), daemon=True).start()


def parse_spec(spec):
    parts = spec.split(":")
    opts = {}
    for o in parts[2:]:
        k, _, v = o.partition("=")
        opts[k] = v
    return parts[0], int(parts[1]), opts


def request(op, n):
    if op == "GET":
        return ("SEND %d\n" % n).encode()
    if op == "NAGLE":
        return ("NAGLE %d\n" % n).encode()
    return ("TAKE %d\n" % n).encode() + bytes(n)


def one(host, port, spec, barrier=None):
    op, n, opts = parse_spec(spec)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if "rcvbuf" in opts:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(opts["rcvbuf"]))
    req = request(op, n)
    if "tfo" in opts:
        if barrier:
            barrier.wait()
        s.sendto(req, socket.MSG_FASTOPEN, (host, port))
    else:
        s.connect((host, port))
        if barrier:
            barrier.wait()
        s.sendall(req)
    cport = s.getsockname()[1]
    got = 0
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += len(chunk)
    s.close()
    return {"op": op, "n": n, "spec": spec, "client_port": cport, "received": got}


def client(host, port, transfers, pause):
    for spec in transfers:
        _, _, opts = parse_spec(spec)
        k = int(opts.get("par", 1))
        if k == 1:
            recs = [one(host, port, spec)]
        else:
            barrier = threading.Barrier(k)
            recs = [None] * k

            def worker(i):
                recs[i] = one(host, port, spec, barrier)

            threads = [threading.Thread(target=worker, args=(i,)) for i in range(k)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if any(r is None for r in recs):
                raise RuntimeError("a parallel transfer failed: %s" % spec)
        for r in recs:
            print(json.dumps(r), flush=True)
        time.sleep(pause)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        rest = sys.argv[4:]

        def opt(name):
            return rest[rest.index(name) + 1] if name in rest else None
        pace = opt("--max-pacing")
        serve(sys.argv[2], int(sys.argv[3]), "--tfo" in rest, opt("--cc"), int(pace) if pace else None)
    else:
        client(sys.argv[2], int(sys.argv[3]), sys.argv[5:], float(sys.argv[4]))
