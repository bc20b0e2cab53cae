#!/usr/bin/env python3
"""make soak (root): live capture under sustained load, memory sampled.

The namespaces of tools/truth.py with 1 ms delay lines; iwscope captures on the client's veth
(--no-ui, nDPI and SQLite on) while client processes open connections as fast as they can
(each asks for 20 KB, so every flow has a real first flight). Every 10 s the log gets the flows
written so far and iwscope's resident memory (VmRSS). At the end: SIGINT, every flow committed;
the run fails if RSS grew more than 25% from the first minute's sample to the last.

    python3 tools/soak.py [SECONDS] [LOG]      (default 600 s, bench/soak.log)
"""
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402

LOAD = """
import socket, sys, time
end = time.time() + float(sys.argv[1])
n = 0
while time.time() < end:
    s = socket.create_connection(("10.77.0.2", 8080))
    s.sendall(b"SEND 20000\\n")
    while s.recv(65536):
        pass
    s.close()
    n += 1
print(n)
"""


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    log_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(truth.ROOT, "bench", "soak.log")
    if os.geteuid() != 0:
        print("soak.py: needs root", file=sys.stderr)
        return 2
    d = tempfile.mkdtemp(prefix="iwscope-soak-")
    db = os.path.join(d, "soak.db")
    procs = []
    log = open(log_path, "w")
    try:
        procs += truth.lab({"name": "soak", "iw": 10}, 1000, 1000, app_server=True)
        cap = subprocess.Popen(["ip", "netns", "exec", truth.NS["c"],
                                os.path.join(truth.ROOT, "build", "iwscope"), "-i", "c0", "-o", db,
                                "--no-ui", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        loads = [subprocess.Popen(["ip", "netns", "exec", truth.NS["c"], "python3", "-c", LOAD, str(seconds)],
                                  stdout=subprocess.PIPE, text=True) for _ in range(4)]
        samples = []
        t0 = time.time()
        while any(p.poll() is None for p in loads):
            time.sleep(10)
            try:
                con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
                flows = con.execute("SELECT count(*) FROM flows").fetchone()[0]
                con.close()
            except sqlite3.Error:
                flows = -1
            r = rss_kib(cap.pid)
            samples.append(r)
            log.write("t=%4.0fs flows=%7d rss=%6d KiB\n" % (time.time() - t0, flows, r))
            log.flush()
        made = sum(int(p.stdout.read().strip() or 0) for p in loads)
        cap.send_signal(2)
        _, err = cap.communicate(timeout=60)
        con = sqlite3.connect(db)
        flows = con.execute("SELECT count(*) FROM flows").fetchone()[0]
        status = con.execute("SELECT status FROM runs").fetchone()[0]
        con.close()
        base = samples[min(5, len(samples) - 1)]
        growth = (samples[-1] - base) / base if base else 0
        summary = ("%d connections made, %d flows written (status %s), %.0f flows/s; RSS %d KiB after "
                   "the first minute, %d KiB at the end (%+.1f%%), max %d KiB" % (
                       made, flows, status, flows / max(1.0, time.time() - t0), base, samples[-1],
                       100 * growth, max(samples)))
        log.write(summary + "\n")
        print(summary)
        ok = flows >= made and growth <= 0.25
        return 0 if ok else 1
    finally:
        for p in procs:
            truth.stop(p)
        truth.teardown()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
