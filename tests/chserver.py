"""Private ClickHouse servers for the tests: Debian's clickhouse-server (18.16) as a cluster of
shards, each with its own config and data folder in a temporary directory and ports of its own
(HTTP, native TCP, interserver), run as an unprivileged user (clickhouse when the tests run as
root). User iw with a password; the cluster "iwtest" names every shard (one replica each).
Queries are logged (system.query_log): tests read what a client asked and got back."""
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from pgserver import free_port

PASSWORD = "ch-s3cret"
USER = "iw"
CLUSTER = "iwtest"
BINARY = "/usr/sbin/clickhouse-server"

CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/log</log><errorlog>{dir}/err.log</errorlog>
    <console>0</console></logger>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{inter}</interserver_http_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>{dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>104857600</mark_cache_size>
  <uncompressed_cache_size>104857600</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <remote_servers>
    <{cluster}>
{shards}
    </{cluster}>
  </remote_servers>
</yandex>
"""

SHARD = """      <shard><replica><host>127.0.0.1</host><port>{tcp}</port>
        <user>{user}</user><password>{password}</password></replica></shard>"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage><log_queries>1</log_queries>
  </default></profiles>
  <users>
    <{user}><password>{password}</password><networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile><quota>default</quota></{user}>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
"""


def available():
    return os.path.exists(BINARY)


class Shard:
    def __init__(self, root, i):
        self.dir = os.path.join(root, "shard%d" % i)
        os.makedirs(self.dir)
        self.http, self.tcp, self.inter = free_port(), free_port(), free_port()
        self.proc = None

    def uri(self, db="default", password=PASSWORD, user=USER, host="127.0.0.1", port=None):
        cred = user + (":" + password if password is not None else "")
        return "clickhouse://%s@%s:%d/%s" % (cred, host, port or self.http, db)

    def query(self, sql, db="default"):
        """The text ClickHouse answers sql with (TabSeparated unless sql says FORMAT)."""
        url = "http://127.0.0.1:%d/?database=%s" % (self.http, urllib.parse.quote(db))
        req = urllib.request.Request(url, data=sql.encode(), headers={
            "X-ClickHouse-User": USER, "X-ClickHouse-Key": PASSWORD})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise RuntimeError("clickhouse: %s: %s" % (sql[:80], e.read().decode()[:400]))

    def rows(self, sql, db="default"):
        """Rows of sql as dicts of text (NULL as None)."""
        out = self.query(sql + " FORMAT TabSeparatedWithNames", db).splitlines()
        if not out:
            return []
        names = out[0].split("\t")
        return [dict(zip(names, (None if v == "\\N" else v for v in line.split("\t"))))
                for line in out[1:]]


class ChCluster:
    """n shards of one cluster, started; close() stops them and removes their folders."""

    def __init__(self, n=2):
        if not available():
            raise RuntimeError("clickhouse-server not found (apt-get install clickhouse-server)")
        self.root = tempfile.mkdtemp(prefix="iwscope-ch.")
        os.chmod(self.root, 0o755)
        self.shards = [Shard(self.root, i) for i in range(n)]
        self.run_as = "clickhouse" if os.geteuid() == 0 else None
        shards = "\n".join(SHARD.format(tcp=s.tcp, user=USER, password=PASSWORD)
                           for s in self.shards)
        for s in self.shards:
            for sub in ("data", "tmp", "user_files", "format_schemas"):
                os.makedirs(os.path.join(s.dir, sub))
            with open(os.path.join(s.dir, "config.xml"), "w") as f:
                f.write(CONFIG.format(dir=s.dir, http=s.http, tcp=s.tcp, inter=s.inter,
                                      cluster=CLUSTER, shards=shards))
            with open(os.path.join(s.dir, "users.xml"), "w") as f:
                f.write(USERS.format(user=USER, password=PASSWORD))
            if self.run_as:
                pw = pwd.getpwnam(self.run_as)
                for d, _, files in os.walk(s.dir):
                    os.chown(d, pw.pw_uid, pw.pw_gid)
                    for name in files:
                        os.chown(os.path.join(d, name), pw.pw_uid, pw.pw_gid)
        for i in range(n):
            self.start(i, wait=False)
        for i in range(n):
            self.wait(i)

    def start(self, i, wait=True):
        s = self.shards[i]
        cmd = [BINARY, "--config-file=" + os.path.join(s.dir, "config.xml")]
        if self.run_as:
            cmd = ["runuser", "-u", self.run_as, "--"] + cmd
        s.proc = subprocess.Popen(cmd, cwd=s.dir, stdout=subprocess.DEVNULL,
                                  stderr=open(os.path.join(s.dir, "stderr"), "ab"))
        if wait:
            self.wait(i)

    def wait(self, i):
        s = self.shards[i]
        deadline = time.time() + 30
        while time.time() < deadline:
            if s.proc.poll() is not None:
                raise RuntimeError("clickhouse-server exited: " +
                                   open(os.path.join(s.dir, "stderr")).read()[-800:])
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/ping" % s.http, timeout=1) as r:
                    if r.read().startswith(b"Ok"):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("clickhouse-server did not answer in 30 s")

    def stop(self, i):
        s = self.shards[i]
        if s.proc and s.proc.poll() is None:
            s.proc.terminate()  # runuser passes SIGTERM on
            try:
                s.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait()
        s.proc = None

    def close(self):
        for i in range(len(self.shards)):
            try:
                self.stop(i)
            except Exception:
                pass
        shutil.rmtree(self.root, ignore_errors=True)
