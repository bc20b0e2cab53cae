"""A private PostgreSQL 15 server for the tests: initdb + pg_ctl in a temporary directory, on
a port of its own and a socket in that directory, run as an unprivileged user (postgres when
the tests run as root). Password logins over TCP (scram-sha-256), trust on the socket."""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

PASSWORD = "iw-s3cret"
USER = "iw"


def bindir():
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(d, "pg_ctl")):
            return d
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class PgServer:
    def __init__(self):
        self.bin = bindir()
        if not self.bin:
            raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
        self.dir = tempfile.mkdtemp(prefix="iwscope-pg.")
        self.port = free_port()
        self.data = os.path.join(self.dir, "data")
        self.run_as = None
        if os.geteuid() == 0:  # postgres refuses to run as root
            self.run_as = "postgres"
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o755)
        pwfile = os.path.join(self.dir, "pw")
        with open(pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        if self.run_as:
            os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
        self._pg("initdb", "-D", self.data, "-U", USER, "--pwfile", pwfile,
                 "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        self.start()

    def _pg(self, tool, *args):
        cmd = [os.path.join(self.bin, tool), *args]
        if self.run_as:
            cmd = ["runuser", "-u", self.run_as, "--"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s %s" % (tool, r.stdout, r.stderr))
        return r

    def start(self):
        self._pg("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w", "-o",
                 "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off" % (self.port, self.dir),
                 "start")

    def stop(self):
        self._pg("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def uri(self, db="postgres", password=PASSWORD, host="127.0.0.1"):
        return "postgresql://%s:%s@%s:%d/%s" % (USER, password, host, self.port, db)

    def psql(self, sql, db="postgres"):
        """Rows of sql as lists of strings (over the socket)."""
        r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-h", self.dir, "-p", str(self.port), "-U", USER, "-d", db, "-c", sql],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("psql: " + r.stderr)
        return [line.split("\t") for line in r.stdout.splitlines() if line]

    def close(self):
        try:
            self.stop()
        except Exception:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
