#!/usr/bin/env python3
"""The bundled demo capture, tests/pcaps/demo.pcap (make truth; root): three web servers with
different initial windows behind one capture point, as a CDN engineer would see them.

  10.77.0.2  api.modern.test   IW10 (Linux default)   HTTPS, HTTP, SSH
  10.77.0.3  old.origin.test   IW3  (RFC 3390 era)    HTTP; its clients offer a 6KB window
  10.77.0.4  www.bigcdn.test   IW16 (a CDN's custom)  HTTPS

The server's IW is chosen per source address with policy routing (ip rule from ADDR table N,
then initcwnd on that table's route). Captured at the client.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dpicap  # noqa: E402
import truth  # noqa: E402

SERVERS = [("10.77.0.2", 10, "api.modern.test"), ("10.77.0.3", 3, "old.origin.test"),
           ("10.77.0.4", 16, "www.bigcdn.test")]


def curl(url, host, addr, port):
    return ["curl", "-s", "-k", "--resolve", "%s:%d:%s" % (host, port, addr), url, "-o", "/dev/null"]


def main():
    if os.geteuid() != 0:
        print("mkdemo.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(truth.ROOT, "tests", "pcaps", "demo.pcap")
    d = tempfile.mkdtemp(prefix="iwscope-demo-")
    os.chmod(d, 0o755)
    procs = []
    try:
        # a ~30 KB certificate chain fills even the CDN's IW16
        dpicap.servers_up(d, 1200, {"big": 60000, "small": 2000})
        procs += truth.lab({"name": "demo", "iw": 10}, 20000, 15000)
        smac = truth.mac(truth.NS["s"], "s0")
        for i, (addr, iw, _) in enumerate(SERVERS[1:], start=3):
            truth.sh(["ip", "addr", "add", addr + "/24", "dev", "s0"], ns=truth.NS["s"])
            truth.sh(["ip", "rule", "add", "from", addr, "table", str(100 + i)], ns=truth.NS["s"])
            truth.sh(["ip", "route", "add", "10.77.0.0/24", "dev", "s0", "src", addr, "table",
                      str(100 + i), "initcwnd", str(iw)], ns=truth.NS["s"])
            truth.sh(["ip", "neigh", "replace", addr, "lladdr", smac, "dev", "c0", "nud",
                      "permanent"], ns=truth.NS["c"])
        # clients of the old origin offer the 6KB receive window of Linux <= 2.6.37
        truth.sh(["ip", "route", "add", "10.77.0.3/32", "dev", "c0", "initrwnd", "4"], ns=truth.NS["c"])
        cap = truth.start(["tcpdump", "-i", "c0", "--immediate-mode", "-U", "-w", out, "tcp"],
                          truth.NS["c"])
        truth.wait_line(cap, "listening")
        dpicap.servers_start(d)
        time.sleep(0.5)
        (a2, _, n2), (a3, _, n3), (a4, _, n4) = SERVERS
        cmds = [curl("https://%s/big" % n4, n4, a4, 443), curl("http://%s/big" % n3, n3, a3, 80),
                curl("https://%s/big" % n2, n2, a2, 443), curl("https://%s/small" % n4, n4, a4, 443),
                curl("http://%s/big" % n3, n3, a3, 80), curl("http://%s/small" % n2, n2, a2, 80),
                curl("https://%s/big" % n4, n4, a4, 443), curl("http://%s/small" % n3, n3, a3, 80),
                curl("https://%s/big" % n2, n2, a2, 443),
                ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
                 "UserKnownHostsFile=/dev/null", "nobody@" + a2, "true"]]
        for cmd in cmds:
            subprocess.run(["ip", "netns", "exec", truth.NS["c"]] + cmd, timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.2)
        time.sleep(0.5)
        truth.stop(cap)
        dpicap.servers_down(d)
        print("demo: %d connections -> %s" % (len(cmds), out))
    finally:
        for p in procs:
            truth.stop(p)
        truth.teardown()
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
