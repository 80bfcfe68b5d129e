#!/usr/bin/env python3
"""The Debian packages, as a user gets them: built from this tree
(scripts/build-deb.sh --nocheck: the build's own unit-test run is `make
deb`'s), checked by lintian, installed with dpkg into a throwaway root
(rootfs.py: this machine's / under an overlay) and run from there:

- what each package holds and depends on, computed (dlopen()ed libraries
  included), the SONAMEs the library packages are named after, the npm
  packages the dashboard bundles named in debian/copyright;
- pacerd's postinst: the user pacerd, /etc/pacer with a fresh admin token
  and a keys file readable by pacerd only, the unit enabled; purge removes
  them, and a new installation makes another token;
- the manual pages against the installed pacer's and pacerd's help, the
  installed pacerd.conf against pacerd's options;
- the unit: `systemd-analyze verify`, and `systemd-analyze security` at
  2.5 or better;
- the SDK and the trace runtime: programs built with pkg-config against
  the installed headers and libraries, run;
- the installed pacer runs the demo app with the installed agent (on a
  private Xvfb, against the demo API server), and sends its records to the
  installed pacerd — run as its unit runs it: as the user pacerd, with the
  unit's command line (the installed /etc/pacer/pacerd.conf, a free port
  given on the command line over it), its files in /etc/pacer and
  /var/lib/pacerd, a notification socket as systemd's (READY=1 once it
  listens) — which serves the dashboard from its installed files, takes a
  new key from a reload (SIGHUP) of its config file and refuses the old
  one, and answers with the records' numbers.

Environment: PACER_SOURCE_ROOT, PACKAGING_WORK (a directory of the build
for the packages and the root), SHOP_APP, SHOP_API_SERVER, SHOP_CONFIG.
PACER_DEBS names a directory of packages built before (make deb's dist/)
to test those instead of building.
"""
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("PACER_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
WORK = os.environ.get("PACKAGING_WORK", os.path.join(tempfile.gettempdir(), "pacer-packaging"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SOURCE, "tests", "agent"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "cli"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "server"))
import rootfs  # noqa: E402
from agentlib import APP_ENV, SHOP_APP, SHOP_CONFIG, ApiServer, Xvfb, read_jsonl, skip_unless  # noqa: E402
import manpages  # noqa: E402
import pacerd_manpages  # noqa: E402

PACKAGES = ["libpacer0", "libpacer-trace0", "libpacer-dev", "pacer", "pacer-qt", "pacerd"]
DELAYS = {"/api/config": 200, "/api/list": 300, "/api/test1": 300}
TRIPLET = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True,
                         check=True).stdout.strip()
LIBDIR = "/usr/lib/" + TRIPLET
UNIT = "/lib/systemd/system/pacerd.service"
CONF = "/etc/pacer/pacerd.conf"

debs = {}      # package → .deb path
changes = None
root = None
root_base = None


def setUpModule():
    global changes, root, root_base
    skip_unless(rootfs.missing() is None, rootfs.missing() or "")
    out = os.environ.get("PACER_DEBS")
    if not out:
        out = os.path.join(WORK, "dist")
        shutil.rmtree(out, ignore_errors=True)
        r = subprocess.run([os.path.join(SOURCE, "scripts", "build-deb.sh"), "--nocheck", "--no-lintian",
                            "--out", out, "--work", os.path.join(WORK, "build")],
                           capture_output=True, text=True, timeout=1200)
        if r.returncode != 0:
            raise RuntimeError("scripts/build-deb.sh failed:\n" + r.stdout + r.stderr)
    for p in PACKAGES:
        found = glob.glob(os.path.join(out, "%s_*.deb" % p))
        if len(found) != 1:
            raise RuntimeError("%s: %d packages named %s_*.deb" % (out, len(found), p))
        debs[p] = found[0]
    changes = glob.glob(os.path.join(out, "pacer_*.changes"))[0]
    os.makedirs(WORK, exist_ok=True)
    root_base = tempfile.mkdtemp(prefix="root-", dir=WORK)
    root = rootfs.Root(root_base)
    r = root.run(["dpkg", "-i", *[debs[p] for p in PACKAGES]], check=False, timeout=300)
    if r.returncode != 0:
        root.close()
        raise RuntimeError("dpkg -i in the throwaway root failed:\n" + r.stdout + r.stderr)


def tearDownModule():
    if root:
        root.close()
        # empty mount points here: the mounts were the namespace's
        shutil.rmtree(root_base, ignore_errors=True)


def deb_field(package, field):
    return subprocess.run(["dpkg-deb", "-f", debs[package], field], capture_output=True, text=True,
                          check=True).stdout.strip()


def deb_files(package):
    """{path: type} of a package's files ('-' file, 'l' link)."""
    out = subprocess.run(["dpkg-deb", "-c", debs[package]], capture_output=True, text=True, check=True).stdout
    files = {}
    for line in out.splitlines():
        parts = line.split(None, 5)
        path = parts[5].split(" -> ")[0].lstrip(".")
        if not path.endswith("/"):
            files[path] = parts[0][0]
    return files


def depends(package):
    """The package names of a package's Depends."""
    return {re.split(r"[ (:]", d.strip())[0] for d in deb_field(package, "Depends").split(",") if d.strip()}


class Packages(unittest.TestCase):
    def test_lintian_no_error_no_warning(self):
        r = subprocess.run(["lintian", "--display-info", changes], capture_output=True, text=True, timeout=300)
        tags = [line for line in r.stdout.splitlines() if re.match(r"[EW]: ", line)]
        self.assertEqual(tags, [], r.stdout + r.stderr)
        self.assertIn(r.returncode, (0, 2), r.stderr)

    def test_each_package_holds_its_part(self):
        files = {p: deb_files(p) for p in PACKAGES}
        want = {
            "libpacer0": [LIBDIR + "/libpacer.so.0"],
            "libpacer-trace0": [LIBDIR + "/libpacer-trace.so.0"],
            "libpacer-dev": ["/usr/include/pacer/pacer.h", "/usr/include/pacer/record.h",
                             "/usr/include/pacer/schema.h", LIBDIR + "/libpacer.so", LIBDIR + "/libpacer-trace.so",
                             LIBDIR + "/pkgconfig/pacer.pc", LIBDIR + "/pkgconfig/pacer-trace.pc"],
            "pacer": ["/usr/bin/pacer", LIBDIR + "/pacer/libpacer-agent.so", LIBDIR + "/pacer/libpacer-agent-heap.so",
                      LIBDIR + "/pacer/libpacer-agent-refs.so", "/usr/share/man/man1/pacer.1.gz",
                      "/usr/share/man/man1/pacer-run.1.gz", "/usr/share/doc/pacer/records.md.gz"],
            "pacer-qt": [LIBDIR + "/pacer/libpacer-qt%s.so" % part for part in
                         ("6", "6-widgets", "6-network", "5", "5-widgets", "5-network")],
            "pacerd": ["/usr/bin/pacerd", "/usr/share/pacer/web/index.html", "/usr/share/pacer/web/app.js",
                       "/usr/share/pacer/web/app.css", UNIT, "/usr/lib/sysusers.d/pacerd.conf", CONF,
                       "/usr/share/man/man8/pacerd.8.gz", "/usr/share/man/man5/pacerd.conf.5.gz"],
        }
        for p, paths in want.items():
            for path in paths:
                self.assertIn(path, files[p], "%s lacks %s" % (p, path))
        # the library packages hold their library and nothing else of pacer's
        for p in ("libpacer0", "libpacer-trace0"):
            others = [f for f in files[p] if not f.startswith((LIBDIR + "/lib", "/usr/share/doc/", "/usr/share/lintian/"))]
            self.assertEqual(others, [], p)
        # no file in two packages, no credentials in any: of /etc/pacer,
        # pacerd ships its config file alone, as a conffile (an admin's
        # changes survive an upgrade)
        seen = {}
        for p, fs in files.items():
            for f in fs:
                self.assertNotIn(f, seen, "%s is in %s and %s" % (f, seen.get(f), p))
                seen[f] = p
                if f.startswith("/etc/pacer"):
                    self.assertEqual((p, f), ("pacerd", CONF))
        control = subprocess.run(["dpkg-deb", "--ctrl-tarfile", debs["pacerd"]], capture_output=True,
                                 check=True).stdout
        conffiles = subprocess.run(["tar", "-xO", "./conffiles"], input=control, capture_output=True,
                                   check=True).stdout.decode().split()
        self.assertIn(CONF, conffiles)

    def test_libraries_named_after_their_soname(self):
        with tempfile.TemporaryDirectory() as tmp:
            for package, soname in (("libpacer0", "libpacer.so.0"), ("libpacer-trace0", "libpacer-trace.so.0")):
                subprocess.run(["dpkg-deb", "-x", debs[package], tmp], check=True)
                d = subprocess.run(["readelf", "-d", os.path.join(tmp, LIBDIR.lstrip("/"), soname)],
                                   capture_output=True, text=True, check=True).stdout
                self.assertIn("Library soname: [%s]" % soname, d)
                self.assertEqual(package, re.sub(r"\.so\.(\d+)$", r"\1", soname))
                shlibs = subprocess.run(["dpkg-deb", "--ctrl-tarfile", debs[package]], capture_output=True,
                                        check=True).stdout
                self.assertIn(b"./symbols", subprocess.run(["tar", "-t"], input=shlibs, capture_output=True).stdout)

    def test_depends_computed_dlopened_libraries_included(self):
        # what the tools link: computed by dpkg-shlibdeps
        self.assertIn("libpacer0", depends("pacer"))
        self.assertIn("libpacer0", depends("pacerd"))
        # the Qt adapter's libraries link Qt; the agent's package does not
        self.assertIn("pacer", depends("pacer-qt"))
        self.assertTrue({"libqt6core6", "libqt5core5a"} <= depends("pacer-qt"), depends("pacer-qt"))
        self.assertFalse([d for d in depends("pacer") if d.startswith("libqt")], depends("pacer"))
        self.assertIn("libmicrohttpd12", depends("pacerd"))
        self.assertIn("libzstd1", depends("libpacer-trace0"))
        self.assertEqual(depends("libpacer-dev") & {"libpacer0", "libpacer-trace0"}, {"libpacer0", "libpacer-trace0"})
        # what they load with dlopen(): every soname the sources name, the
        # package this machine has it from. The agent loads none itself: the
        # libraries it names (toolkits, display clients, libcurl) are the
        # app's, found only once the app loaded them (dlopen RTLD_NOLOAD)
        sonames = set()
        for d in ("src/base", "src/core", "src/symbols"):
            for f in glob.glob(os.path.join(SOURCE, d, "*.[ch]")):
                with open(f, encoding="utf-8") as src:
                    sonames |= set(re.findall(r'"(lib[a-z0-9_+-]+\.so\.\d+)"', src.read()))
        for f in glob.glob(os.path.join(SOURCE, "src/agent/**/*.[ch]"), recursive=True):
            with open(f, encoding="utf-8") as src:
                text = src.read()
            flags = re.findall(r"\bdlopen\(\s*\w+\s*,\s*([^)]*)\)", text)
            if f.endswith("src/agent/qt/qt.c"):
                # the one library it loads is pacer's own Qt adapter (package
                # pacer-qt, which it may do without), found beside the agent
                self.assertIn('"libpacer-qt%d.so"', text)
                flags = flags[1:]
            self.assertFalse([f for f in flags if "RTLD_NOLOAD" not in f],
                             "%s loads a library itself: its package belongs in the Depends" % f)
        self.assertIn("libcurl.so.4", sonames)
        for soname in sorted(sonames):
            path = subprocess.run(["sh", "-c", "ldconfig -p | awk '$1 == \"%s\" { print $NF; exit }'" % soname],
                                  capture_output=True, text=True).stdout.strip()
            self.assertTrue(path, "%s: not on this machine" % soname)
            # dpkg knows a file by the path its package has (/lib or /usr/lib)
            real = os.path.realpath(path)
            owner = ""
            for candidate in (real, re.sub(r"^/usr/lib/", "/lib/", real)):
                owner = owner or subprocess.run(["dpkg", "-S", candidate], capture_output=True,
                                                text=True).stdout.split(":")[0]
            self.assertTrue(owner, "%s: no package owns %s" % (soname, path))
            self.assertIn(owner, depends("pacer"), "pacer loads %s (%s) but does not depend on it" % (soname, owner))
            if soname != "libdw.so.1":  # the symbolizer is the agent's and the CLI's, not the SDK's
                self.assertIn(owner, depends("libpacer0"), "libpacer0 loads %s (%s)" % (soname, owner))

    def test_copyright_names_the_bundled_npm_packages(self):
        with open(os.path.join(SOURCE, "web", "package-lock.json")) as f:
            lock = json.load(f)
        with open(os.path.join(SOURCE, "debian", "copyright")) as f:
            text = " ".join(f.read().split()).lower()
        for path, info in lock["packages"].items():
            if not path or info.get("dev"):
                continue
            name = path.split("node_modules/")[-1]
            self.assertIn("%s %s" % (name, info["version"]), text,
                          "debian/copyright does not name %s %s, which the dashboard bundles" % (name, info["version"]))


class Installed(unittest.TestCase):
    def test_pacerd_user_and_credentials(self):
        user = root.run(["getent", "passwd", "pacerd"]).stdout.strip().split(":")
        self.assertLess(int(user[2]), 1000, user)
        self.assertEqual(user[5], "/var/lib/pacerd")
        self.assertTrue(user[6].endswith("nologin"), user)
        stat = root.run(["stat", "-c", "%n %a %U %G", "/etc/pacer", "/etc/pacer/admin-token",
                         "/etc/pacer/keys", CONF]).stdout.split("\n")
        self.assertEqual(stat[:4], ["/etc/pacer 750 root pacerd", "/etc/pacer/admin-token 640 root pacerd",
                                    "/etc/pacer/keys 640 root pacerd", CONF + " 644 root root"])
        # the config file names the credentials beside it, and the state directory
        conf = root.read(CONF).decode()
        self.assertEqual(re.findall(r"^([a-z-]+) = (.*)$", conf, re.M),
                         [("listen", "127.0.0.1:4318"), ("db", "/var/lib/pacerd/pacer.db"),
                          ("admin-token-file", "/etc/pacer/admin-token"), ("keys-file", "/etc/pacer/keys")])
        token = root.read("/etc/pacer/admin-token").decode()
        self.assertRegex(token, r"^[A-Za-z0-9+/=]{40,}\n$")
        keys = root.read("/etc/pacer/keys").decode()
        self.assertEqual([line for line in keys.splitlines() if line.strip() and not line.startswith("#")], [])
        # enabled: started at boot
        link = root.run(["readlink", "/etc/systemd/system/multi-user.target.wants/pacerd.service"]).stdout.strip()
        self.assertEqual(link, UNIT)

    def test_purge_removes_credentials_and_a_new_install_makes_another_token(self):
        before = root.read("/etc/pacer/admin-token")
        root.run(["install", "-d", "-o", "pacerd", "-g", "pacerd", "/var/lib/pacerd"])
        root.run(["dpkg", "--purge", "pacerd"])
        for path in ("/etc/pacer/admin-token", "/etc/pacer/keys", CONF, "/var/lib/pacerd", UNIT):
            self.assertFalse(root.exists(path), "%s is still there after purge" % path)
        root.run(["dpkg", "-i", debs["pacerd"]], timeout=120)
        after = root.read("/etc/pacer/admin-token")
        self.assertNotEqual(before, after)
        self.assertTrue(root.exists(UNIT))
        self.assertTrue(root.exists(CONF))

    def test_libraries_resolve_to_the_packages(self):
        for exe in ("/usr/bin/pacer", "/usr/bin/pacerd"):
            ldd = root.run(["ldd", exe]).stdout
            m = re.search(r"libpacer\.so\.0 => (\S+)", ldd)
            self.assertTrue(m, ldd)
            real = root.run(["realpath", m.group(1)]).stdout.strip()
            self.assertEqual(real, LIBDIR + "/libpacer.so." + self.version())
        self.assertEqual(root.run(["pacer", "--version"]).stdout.strip(), "pacer " + self.version())

    def version(self):
        return deb_field("libpacer0", "Version")

    def test_manual_pages_match_the_installed_help(self):
        found = manpages.problems("/usr/bin/pacer", lambda name: "/usr/share/man/man1/%s.1.gz" % name,
                                  prefix=root.prefix(), exists=root.exists)
        self.assertEqual(found, [])
        # man finds them by name
        r = root.run(["man", "-w", "pacer-run"])
        self.assertEqual(r.stdout.strip(), "/usr/share/man/man1/pacer-run.1.gz")
        # pacerd's, and its installed config file
        found = pacerd_manpages.problems("/usr/bin/pacerd", "/usr/share/man/man8/pacerd.8.gz",
                                         "/usr/share/man/man5/pacerd.conf.5.gz", CONF, prefix=root.prefix(),
                                         exists=root.exists, read=root.read)
        self.assertEqual(found, [])
        self.assertEqual(root.run(["man", "-w", "pacerd.conf"]).stdout.strip(), "/usr/share/man/man5/pacerd.conf.5.gz")
        self.assertEqual(root.run(["man", "-w", "8", "pacerd"]).stdout.strip(), "/usr/share/man/man8/pacerd.8.gz")

    def test_unit_verifies_and_is_sandboxed(self):
        r = root.run(["systemd-analyze", "verify", UNIT], check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("pacerd.service", r.stdout + r.stderr)
        # readiness told, reload by SIGHUP, the options in the config file
        unit = root.read(UNIT).decode()
        self.assertRegex(unit, r"(?m)^Type=notify$")
        self.assertRegex(unit, r"(?m)^ExecReload=/bin/kill -HUP \$MAINPID$")
        self.assertRegex(unit, r"(?m)^ExecStart=/usr/bin/pacerd --config /etc/pacer/pacerd.conf$")
        r = root.run(["systemd-analyze", "security", "--offline=true", UNIT], check=False)
        m = re.search(r"Overall exposure level for pacerd\.service: (\d+\.\d+)", r.stdout)
        self.assertTrue(m, r.stdout + r.stderr)
        self.assertLessEqual(float(m.group(1)), 2.5, r.stdout)
        # verify does find a broken unit (the check can fail)
        unit = root.read(UNIT).decode()
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            bad = os.path.join(tmp, "pacerd.service")
            with open(bad, "w") as f:
                f.write(unit.replace("/usr/bin/pacerd", "/usr/bin/pacerd-missing"))
            r = root.run(["systemd-analyze", "verify", bad], check=False)
            self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_sdk_and_trace_runtime_build_and_run(self):
        env = {"PKG_CONFIG_LIBDIR": LIBDIR + "/pkgconfig:/usr/share/pkgconfig"}
        with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
            app = os.path.join(tmp, "sdk_app")
            root.run(["sh", "-c", 'cc -o "$1" "$2" $(pkg-config --cflags --libs pacer)', "sh", app,
                      os.path.join(HERE, "sdk_app.c")], env=env)
            out = os.path.join(tmp, "records.jsonl")
            root.run([app, out])
            pages = [r for r in read_jsonl(out) if r["type"] == "page"]
            self.assertEqual([p["page"] for p in pages], ["SdkWindow"] * 3)
            self.assertTrue(all(p["app"] == "sdk-app" for p in pages))
            # a program built with the trace runtime's flags, traced by the
            # installed pacer and reported with its functions' names
            primes = os.path.join(tmp, "primes")
            root.run(["sh", "-c", 'cc -O1 -g $(pkg-config --cflags pacer-trace) -o "$1" "$2" '
                      '$(pkg-config --libs pacer-trace)', "sh", primes,
                      os.path.join(SOURCE, "examples", "trace", "primes.c")], env=env)
            trace = os.path.join(tmp, "primes.trace")
            root.run(["pacer", "trace", "record", "-o", trace, "--", primes, "2000"])
            report = root.run(["pacer", "trace", "report", trace]).stdout
            self.assertIn("is_prime_slow", report)
            self.assertIn("count", report)

    def test_demo_app_measured_and_received_by_installed_pacerd(self):
        # pacerd as its unit runs it: the unit's options, as the user pacerd,
        # with the state directory systemd would make; on a free port
        unit = root.read(UNIT).decode()
        exec_start = shlex.split(re.search(r"^ExecStart=(.*)$", unit, re.M).group(1))
        self.assertEqual(exec_start, ["/usr/bin/pacerd", "--config", CONF])
        # a free port over the file's 4318: the command line wins
        args = exec_start[1:] + ["--listen", "127.0.0.1:0"]
        root.run(["install", "-d", "-m", "0700", "-o", "pacerd", "-g", "pacerd", "/var/lib/pacerd"])
        notify_dir = tempfile.mkdtemp(dir="/tmp", prefix="pacerd-notify-")
        self.addCleanup(shutil.rmtree, notify_dir, ignore_errors=True)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(notify.close)
        notify.bind(os.path.join(notify_dir, "notify"))
        os.chmod(notify_dir, 0o755)
        os.chmod(os.path.join(notify_dir, "notify"), 0o777)  # as systemd's, for the user pacerd
        notify.settimeout(60)
        d = root.popen(["setpriv", "--reuid=pacerd", "--regid=pacerd", "--init-groups", "--", "/usr/bin/pacerd", *args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env={"NOTIFY_SOCKET": os.path.join(notify_dir, "notify")})
        try:
            line = d.stdout.readline()
            self.assertIn("listening on ", line, d.stderr.read() if d.poll() is not None else line)
            base = line.split("listening on ", 1)[1].strip()
            ready = notify.recv(4096).decode()
            self.assertEqual(ready, "READY=1\nSTATUS=listening on " + base)
            admin = root.read("/etc/pacer/admin-token").decode().strip()

            # the dashboard, from the installed files
            for path, name in (("/", "index.html"), ("/assets/app.js", "app.js"), ("/assets/app.css", "app.css")):
                with urllib.request.urlopen(base + path, timeout=10) as r:
                    self.assertEqual(r.status, 200)
                    self.assertEqual(r.read(), root.read("/usr/share/pacer/web/" + name), path)

            # an ingest key, as an admin adds one: in /etc/pacer/keys, then
            # SIGHUP (pacerd reads the file again)
            keys_before = root.read("/etc/pacer/keys")
            self.addCleanup(root.run, ["sh", "-c", 'printf "%s" "$1" > /etc/pacer/keys', "sh",
                                       keys_before.decode()])
            old_key = "pkg-old-" + os.urandom(12).hex()
            self.assertEqual(self.status(base + "/v1/config/shop", old_key), 401)
            root.run(["sh", "-c", 'echo "shop $1" >> /etc/pacer/keys', "sh", old_key])
            self.reload(d, notify)
            self.assertNotIn(self.status(base + "/v1/config/shop", old_key), (401, 403))
            # a key changed as an admin may do it through the config file:
            # keys-file names another file, holding another key; the reload
            # takes the new one and refuses the old one
            conf_before = root.read(CONF)
            self.addCleanup(root.run, ["sh", "-c", 'printf "%s" "$1" > ' + CONF, "sh", conf_before.decode()])
            self.addCleanup(root.run, ["rm", "-f", "/etc/pacer/keys.new"])
            key = "pkg-" + os.urandom(12).hex()
            root.run(["sh", "-c", 'umask 027; echo "shop $1" > /etc/pacer/keys.new; chgrp pacerd /etc/pacer/keys.new',
                      "sh", key])
            root.run(["sed", "-i", "s|^keys-file = .*|keys-file = keys.new|", CONF])
            self.assertEqual(self.status(base + "/v1/config/shop", key), 401)
            self.reload(d, notify)
            self.assertNotIn(self.status(base + "/v1/config/shop", key), (401, 403))
            self.assertEqual(self.status(base + "/v1/config/shop", old_key), 401)

            with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
                key_file = os.path.join(tmp, "shop.key")
                with open(key_file, "w") as f:
                    f.write(key + "\n")
                os.chmod(key_file, 0o600)
                out = os.path.join(tmp, "records.jsonl")
                with Xvfb() as x, ApiServer(DELAYS) as api:
                    env = dict(APP_ENV, DISPLAY=x.display)
                    r = root.run(["pacer", "run", "--config", SHOP_CONFIG, "--out", out, "--app", "shop",
                                  "--app-version", "pkg", "--server", base, "--key-file", key_file,
                                  "--spool", os.path.join(tmp, "spool.db"), "--",
                                  SHOP_APP, "--api", api.base, "--auto-exit"], env=env, timeout=120, check=False)
                self.assertEqual(r.returncode, 0, r.stderr)
                records = read_jsonl(out)
                nets = [n for n in records if n["type"] == "net"]
                self.assertEqual(len(nets), 4, r.stderr)
                pages = {p["page"]: p for p in records if p["type"] == "page"}
                home = pages["ShopHomeWindow"]
                self.assertEqual(home["status"], "complete")
                self.assertGreaterEqual(home["api_load_ms"], DELAYS["/api/config"] + DELAYS["/api/list"] - 1)

                got = {}
                deadline = time.monotonic() + 30
                while got.get("ShopMerchantPage", {}).get("count") != 2:
                    self.assertLess(time.monotonic(), deadline, "pacerd has %r" % got)
                    time.sleep(0.2)
                    got = {p["page"]: p for p in self.get(base + "/api/v1/pages?app=shop&version=pkg",
                                                          admin)["pages"]}
                self.assertEqual(got["ShopHomeWindow"]["count"], 1)
                want = home["total_ms"]
                self.assertAlmostEqual(got["ShopHomeWindow"]["metrics"]["total_ms"]["p50"], want, delta=want * 0.01)

            # the run used the installed agent: without it, pacer run says
            # so and names where it looked
            agent = LIBDIR + "/pacer/libpacer-agent.so"
            root.run(["mv", agent, agent + ".away"])
            try:
                r = root.run(["pacer", "run", "--out", "/dev/null", "--", "true"], check=False)
                self.assertIn(LIBDIR + "/pacer", r.stderr)
            finally:
                root.run(["mv", agent + ".away", agent])

            # the database is where the unit keeps it, pacerd's own
            owner = root.run(["stat", "-c", "%U %a", "/var/lib/pacerd/pacer.db"]).stdout.split()
            self.assertEqual(owner[0], "pacerd")
        finally:
            self.stop(d)

    def reload(self, d, notify):
        """SIGHUP, as ExecReload sends it; returns once pacerd told it is
        ready again (RELOADING=1, then READY=1)."""
        os.kill(self.pacerd_pid(d), signal.SIGHUP)
        self.assertTrue(notify.recv(4096).decode().startswith("RELOADING=1\n"))
        self.assertEqual(notify.recv(4096).decode(), "READY=1")

    @staticmethod
    def pacerd_pid(d):
        # nsenter, chroot, env and setpriv each exec the next: pacerd has
        # nsenter's pid (or is its child, where nsenter forks)
        with open("/proc/%d/comm" % d.pid) as f:
            if f.read().strip() == "pacerd":
                return d.pid
        with open("/proc/%d/task/%d/children" % (d.pid, d.pid)) as f:
            return int(f.read().split()[0])

    def stop(self, d):
        if d.poll() is None:
            try:
                os.kill(self.pacerd_pid(d), signal.SIGTERM)
            except (OSError, IndexError, ValueError):
                d.terminate()
            try:
                d.wait(40)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait()
        d.stdout.close()
        d.stderr.close()

    @staticmethod
    def status(url, token):
        req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    @staticmethod
    def get(url, token):
        req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)


if __name__ == "__main__":
    unittest.main(verbosity=2)
