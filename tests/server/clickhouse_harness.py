"""A real ClickHouse server for the tests (Debian's clickhouse-server), run as
a plain process on loopback: its own data directory, free ports, started
once per test process and stopped when it exits. Several servers make the
shards of a cluster (remote_servers names them all, so that a Distributed
table on any of them reaches both)."""
import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER = os.environ.get("CLICKHOUSE_SERVER", "/usr/sbin/clickhouse-server")

CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/log/server.log</log><errorlog>{dir}/log/error.log</errorlog>
    <size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>{dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>200</max_concurrent_queries>
  <keep_alive_timeout>30</keep_alive_timeout>
  <compression><case><min_part_size>1048576</min_part_size><min_part_size_ratio>0</min_part_size_ratio>
    <method>zstd</method></case>
    <case><min_part_size>16777216</min_part_size><min_part_size_ratio>0</min_part_size_ratio>
    <method>zstd</method><level>9</level></case></compression>
  <remote_servers>{clusters}</remote_servers>
</yandex>
"""

# pacer's profile is `default`; `reads` (reads only, as a server short of
# room or a replica without its keeper answers) is what a test switches it
# to (ClickHouse.set_pacer_profile).
USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default>
    <reads><max_memory_usage>4000000000</max_memory_usage><readonly>2</readonly></reads></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile>
      <quota>default</quota></default>
    <pacer><password>{password}</password><networks><ip>127.0.0.1</ip></networks><profile>{profile}</profile>
      <quota>default</quota></pacer>
  </users>
  <quotas><default></default></quotas>
</yandex>
"""

PASSWORD = "pw-%d" % os.getpid()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def available():
    return os.access(SERVER, os.X_OK)


def write_config(directory, http, tcp, clusters=None):
    """Writes a server's config.xml and users.xml into directory (made with
    the folders the config names): HTTP and native ports, remote_servers
    from clusters ({name: [(host, tcp_port), …]})."""
    for d in ("log", "data", "tmp", "user_files", "format_schemas"):
        os.makedirs(os.path.join(directory, d), exist_ok=True)
    xml = ""
    for name, shards in (clusters or {}).items():
        xml += "<%s>" % name
        for host, port in shards:
            xml += "<shard><replica><host>%s</host><port>%d</port></replica></shard>" % (host, port)
        xml += "</%s>" % name
    with open(os.path.join(directory, "config.xml"), "w") as f:
        f.write(CONFIG.format(dir=directory, http=http, tcp=tcp, clusters=xml))
    write_users(directory)


def write_users(directory, pacer_profile="default"):
    # written aside and renamed; the server reloads the file when its
    # modification time changes, which it reads in whole seconds
    path = os.path.join(directory, "users.xml")
    before = os.stat(path).st_mtime if os.path.exists(path) else 0
    with open(path + ".new", "w") as f:
        f.write(USERS.format(password=PASSWORD, profile=pacer_profile))
    os.replace(path + ".new", path)
    t = max(time.time(), before + 1)
    os.utime(path, (t, t))


class ClickHouse:
    """One clickhouse-server. clusters: {name: [(host, tcp_port), …]} for
    remote_servers (the ports of servers made with the same ports list)."""

    def __init__(self, http=None, tcp=None, clusters=None, directory=None):
        """directory: keep the server's data there (kept by close()); else a
        temporary one."""
        self.keep = directory is not None
        self.dir = os.path.abspath(directory) if directory else tempfile.mkdtemp(prefix="clickhouse-test-")
        self.http = http or free_port()
        self.tcp = tcp or free_port()
        write_config(self.dir, self.http, self.tcp, clusters)
        self.proc = None
        self.start()

    def start(self):
        self.out = open(os.path.join(self.dir, "log", "stdout.log"), "a")
        self.proc = subprocess.Popen([SERVER, "--config-file=" + os.path.join(self.dir, "config.xml")],
                                     stdout=self.out, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("clickhouse-server exited: %s" % self.log_tail())
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/ping" % self.http, timeout=2) as r:
                    if r.read().strip() == b"Ok.":
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("clickhouse-server did not answer within 60 s: %s" % self.log_tail())

    def log_tail(self):
        out = ""
        for name in ("stdout.log", "error.log"):
            p = os.path.join(self.dir, "log", name)
            if os.path.exists(p):
                out += open(p, errors="replace").read()[-2000:]
        return out

    def url(self, database, user=None):
        auth = "%s:%s@" % (user, PASSWORD) if user else ""
        return "http://%s127.0.0.1:%d/%s" % (auth, self.http, database)

    def sql(self, query, database=None, settings=None, timeout=60):
        """Runs a query, returns the answer's text (TabSeparated by default)."""
        params = dict(settings or {})
        if database:
            params["database"] = database
        req = urllib.request.Request("http://127.0.0.1:%d/?%s" % (self.http, urllib.parse.urlencode(params)),
                                     data=query.encode(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise AssertionError("ClickHouse: %s: %s" % (query[:200], e.read().decode()[:500]))

    def rows(self, query, database=None):
        text = self.sql(query + " FORMAT TabSeparated", database)
        return [line.split("\t") for line in text.splitlines()]

    def set_pacer_profile(self, profile, timeout=60):
        """Gives the user pacer the profile `default` or `reads` (inserts
        refused: READONLY), and waits until the server has reloaded it."""
        write_users(self.dir, profile)
        self.sql("CREATE TABLE IF NOT EXISTS default.profile_probe (x UInt8) ENGINE = Memory")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            req = urllib.request.Request("http://127.0.0.1:%d/?user=pacer&password=%s" % (self.http, PASSWORD),
                                         data=b"INSERT INTO default.profile_probe VALUES (1)", method="POST")
            try:
                with urllib.request.urlopen(req, timeout=10):
                    refused = False
            except urllib.error.HTTPError:
                refused = True
            if refused == (profile == "reads"):
                return
            time.sleep(0.2)
        raise AssertionError("ClickHouse did not take the profile %s within %d s" % (profile, timeout))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.out.close()

    def close(self):
        self.stop()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)


_shared = None


def shared():
    """The test process's one server, started on first use."""
    global _shared
    if _shared is None:
        _shared = ClickHouse()
        atexit.register(_shared.close)
    return _shared


if __name__ == "__main__":
    # clickhouse_harness.py config DIR HTTP_PORT TCP_PORT [CLUSTER=HOST:PORT,HOST:PORT…]:
    # writes a server's config as the tests make it (scripts/cluster-demo.sh)
    import sys
    a = sys.argv[1:]
    if len(a) < 4 or a[0] != "config":
        sys.exit("usage: clickhouse_harness.py config DIR HTTP_PORT TCP_PORT [CLUSTER=HOST:PORT,…]")
    cl = {}
    for spec in a[4:]:
        name, _, shards = spec.partition("=")
        cl[name] = [(h, int(p)) for h, _, p in (x.rpartition(":") for x in shards.split(","))]
    write_config(os.path.abspath(a[1]), int(a[2]), int(a[3]), cl)
