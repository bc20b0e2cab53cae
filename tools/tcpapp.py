#!/usr/bin/env python3
"""Tiny request/response app for the ground-truth harness.

server: answers "SEND n\\n" with n zero bytes written at once (one send, TCP_NODELAY), and
        "TAKE n\\n"+n bytes with "OK\\n"; then closes. (Not HTTP's words: nDPI must not know it.)
client: runs the transfers given as OP:N arguments one after another and prints one JSON line
        per transfer with its local port, so the harness can match flows to truth.
"""
import json
import socket
import sys
import time


def recv_line(conn):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            break
        buf += chunk
    return buf.decode().strip()


def serve(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = ls.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        op, n = recv_line(conn).split()
        n = int(n)
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
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(65536):
            pass
        conn.close()


def client(host, port, transfers, pause):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    for t in transfers:
        op, n = t.split(":")
        n = int(n)
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.connect((host, port))
        cport = s.getsockname()[1]
        if op == "GET":
            s.sendall(("SEND %d\n" % n).encode())
        else:
            s.sendall(("TAKE %d\n" % n).encode() + bytes(n))
        got = 0
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += len(chunk)
        s.close()
        print(json.dumps({"op": op, "n": n, "client_port": cport, "received": got}), flush=True)
        time.sleep(pause)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        client(sys.argv[2], int(sys.argv[3]), sys.argv[5:], float(sys.argv[4]))
