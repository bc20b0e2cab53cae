#!/usr/bin/env python3
"""Real application traffic for the nDPI tests (make dpicaps; root).

Same namespaces as tools/truth.py (client -- delay -- mid -- delay -- server). The server runs
nginx (TLS 1.2 and 1.3 with a three-certificate RSA-4096 chain, so the server's first flight is
large, and plain HTTP/1.1), OpenSSH's sshd, and tools/tcpapp.py on a port nobody assigned; the
client uses curl, ssh and tcpapp. Captures at the client, mid-path and server go to
tests/pcaps/dpi/apps.{client,mid,server}.pcap; apps.expect.json lists each flow's expected
application and server name.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402

ROOT = truth.ROOT
OUT = os.path.join(ROOT, "tests", "pcaps", "dpi")


def certs(d, names=600):
    """root CA -> intermediate -> leaf for *.iwscope.test, RSA 4096."""
    def ossl(*a):
        subprocess.run(["openssl"] + list(a), check=True, cwd=d, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    ossl("req", "-x509", "-newkey", "rsa:4096", "-nodes", "-days", "3650", "-subj",
         "/CN=iwscope test root", "-keyout", "root.key", "-out", "root.pem",
         "-addext", "basicConstraints=critical,CA:TRUE")
    ossl("req", "-newkey", "rsa:4096", "-nodes", "-subj", "/CN=iwscope test intermediate",
         "-keyout", "int.key", "-out", "int.csr")
    open(os.path.join(d, "ca.ext"), "w").write("basicConstraints=critical,CA:TRUE\n")
    ossl("x509", "-req", "-in", "int.csr", "-CA", "root.pem", "-CAkey", "root.key",
         "-CAcreateserial", "-days", "3650", "-extfile", "ca.ext", "-out", "int.pem")
    ossl("req", "-newkey", "rsa:4096", "-nodes", "-subj", "/CN=iwscope.test",
         "-keyout", "leaf.key", "-out", "leaf.csr")
    # 600 names make a ~16 KB certificate: the server's first flight fills an IW10
    sans = ",".join("DNS:host%03d.iwscope.test" % i for i in range(names))
    open(os.path.join(d, "leaf.ext"), "w").write(
        "subjectAltName=DNS:iwscope.test,DNS:*.iwscope.test,%s\n" % sans)
    ossl("x509", "-req", "-in", "leaf.csr", "-CA", "int.pem", "-CAkey", "int.key",
         "-CAcreateserial", "-days", "3650", "-extfile", "leaf.ext", "-out", "leaf.pem")
    with open(os.path.join(d, "chain.pem"), "w") as f:
        for n in ("leaf.pem", "int.pem", "root.pem"):
            f.write(open(os.path.join(d, n)).read())


NGINX_CONF = """
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  server {{
    listen 80;
    listen 443 ssl;
    server_name iwscope.test *.iwscope.test;
    ssl_certificate {d}/chain.pem;
    ssl_certificate_key {d}/leaf.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    root {d}/www;
  }}
}}
"""

SSHD_CONF = """
Port 22
HostKey {d}/ssh_host_ed25519_key
PidFile {d}/sshd.pid
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
"""

# (client command, server port, expected nDPI protocol, expected server name)
FLOWS = [
    (["curl", "-s", "-k", "--tlsv1.2", "--tls-max", "1.2", "--resolve",
      "tls12.iwscope.test:443:10.77.0.2", "https://tls12.iwscope.test/big", "-o", "/dev/null"],
     443, "TLS", "tls12.iwscope.test"),
    (["curl", "-s", "-k", "--tlsv1.3", "--resolve", "tls13.iwscope.test:443:10.77.0.2",
      "https://tls13.iwscope.test/big", "-o", "/dev/null"], 443, "TLS", "tls13.iwscope.test"),
    (["curl", "-s", "--resolve", "www.iwscope.test:80:10.77.0.2",
      "http://www.iwscope.test/big", "-o", "/dev/null"], 80, "HTTP", "www.iwscope.test"),
    (["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
      "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=5", "nobody@10.77.0.2", "true"],
     22, "SSH", None),
    (["python3", truth.APP, "client", "10.77.0.2", "4777", "0.1", "GET:20000"], 4777,
     "Unknown", None),
]


def servers_up(d, sans, files):
    """Certificates, nginx and sshd configuration in d; files {name: size} under www/. Call
    after truth.setup(): it starts nginx and sshd in the server namespace."""
    certs(d, names=sans)
    os.makedirs(os.path.join(d, "www"))
    for name, size in files.items():
        open(os.path.join(d, "www", name), "wb").write(bytes(size))
    open(os.path.join(d, "nginx.conf"), "w").write(NGINX_CONF.format(d=d))
    open(os.path.join(d, "sshd_config"), "w").write(SSHD_CONF.format(d=d))
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                    os.path.join(d, "ssh_host_ed25519_key")], check=True)
    os.makedirs("/run/sshd", exist_ok=True)


def servers_start(d):
    subprocess.run(["ip", "netns", "exec", truth.NS["s"], "nginx", "-c",
                    os.path.join(d, "nginx.conf")], check=True)
    subprocess.run(["ip", "netns", "exec", truth.NS["s"], "/usr/sbin/sshd", "-f",
                    os.path.join(d, "sshd_config")], check=True)


def servers_down(d):
    for pidfile in ("nginx.pid", "sshd.pid"):
        try:
            os.kill(int(open(os.path.join(d, pidfile)).read()), 15)
        except (OSError, ValueError):
            pass


def main():
    if os.geteuid() != 0:
        print("dpicap.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    out = sys.argv[1] if len(sys.argv) > 1 else OUT
    os.makedirs(out, exist_ok=True)
    d = tempfile.mkdtemp(prefix="iwscope-dpi-")
    os.chmod(d, 0o755)
    procs = []
    try:
        servers_up(d, 600, {"big": 100000})
        procs += truth.lab({"name": "apps", "iw": 10}, 10000, 10000)
        caps = []
        for vantage, ns, dev in (("client", "c", "c0"), ("mid", "r1", "r1m"), ("server", "s", "s0")):
            path = os.path.join(out, "apps.%s.pcap" % vantage)
            p = truth.start(["tcpdump", "-i", dev, "--immediate-mode", "-U", "-w", path, "tcp"],
                            truth.NS[ns])
            truth.wait_line(p, "listening")
            caps.append(p)
        servers_start(d)
        app = truth.start(["python3", truth.APP, "server", "10.77.0.2", "4777"], truth.NS["s"])
        truth.wait_line(app, "ready")
        procs.append(app)
        time.sleep(0.5)
        expect = []
        for cmd, port, proto, name in FLOWS:
            r = subprocess.run(["ip", "netns", "exec", truth.NS["c"]] + cmd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
            if port != 22 and r.returncode != 0:
                raise RuntimeError("%s failed: %s" % (cmd[0], r.stderr))
            expect.append({"server_port": port, "app_proto": proto, "server_name": name,
                           "client": " ".join(cmd[:2])})
            time.sleep(0.3)
        time.sleep(0.5)
        for p in caps:
            truth.stop(p)
        servers_down(d)
        with open(os.path.join(out, "apps.expect.json"), "w") as f:
            json.dump(expect, f, indent=1)
            f.write("\n")
        print("apps: %d flows" % len(expect))
    finally:
        for p in procs:
            truth.stop(p)
        truth.teardown()
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
