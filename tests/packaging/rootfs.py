"""A throwaway root for the packaging tests: this machine's / seen through
an overlay whose writes go to a tmpfs, in a mount namespace of its own.
dpkg installs the packages there for real — maintainer scripts, triggers,
dependencies checked against what this machine has — and the machine
itself is left untouched: when the namespace ends, the mounts and the
tmpfs go with it.

Commands run in it with chroot. /proc, /sys, /dev and /tmp are this
machine's (the tests' files and X's socket live in /tmp). Needs root,
unshare, nsenter and overlayfs.
"""
import os
import shutil
import subprocess


def missing():
    """Why a root cannot be made here, or None."""
    if os.geteuid() != 0:
        return "the packaging tests need root (mount namespaces, overlayfs)"
    for tool in ("unshare", "nsenter", "chroot", "dpkg"):
        if not shutil.which(tool):
            return "%s is missing" % tool
    with open("/proc/filesystems") as f:
        if "overlay" not in f.read():
            return "the kernel has no overlayfs"
    return None


class Root:
    """The root; its namespace is held by a process that close() ends."""

    def __init__(self, base):
        self.root = os.path.join(base, "root")
        layer = os.path.join(base, "layer")
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(layer, exist_ok=True)
        # The writes go to a tmpfs: an upper directory on / itself would
        # overlap the lower one, which overlayfs refuses.
        script = """set -e
mount -t tmpfs -o mode=0755 tmpfs '{layer}'
mkdir '{layer}/upper' '{layer}/work'
mount -t overlay overlay -o 'lowerdir=/,upperdir={layer}/upper,workdir={layer}/work' '{root}'
for d in proc sys dev tmp; do mount --rbind "/$d" '{root}'/"$d"; done
echo ready
exec sleep 86400
""".format(layer=layer, root=self.root)
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.holder.stdout.readline()
        if line.strip() != "ready":
            self.holder.kill()
            _, err = self.holder.communicate()
            raise RuntimeError("the throwaway root could not be made: %s" % err.strip())

    def command(self, args, cwd="/", env=None):
        """argv that runs args in the root, from cwd, with an environment of
        its own: PATH, LC_ALL and env. Nothing of the tests' environment
        (meson's LD_LIBRARY_PATH to the build's libraries) reaches it."""
        clean = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C.UTF-8", "HOME": "/root"}
        clean.update(env or {})
        return ["nsenter", "-t", str(self.holder.pid), "-m", "--", "chroot", self.root,
                "env", "-i", "-C", cwd, *("%s=%s" % kv for kv in clean.items()), *args]

    def prefix(self):
        """What to put before a command to run it in the root (from /)."""
        return self.command([])

    def run(self, args, cwd="/", check=True, timeout=120, env=None, **kw):
        """Runs args in the root to completion; text output captured. env:
        variables for it (above)."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        r = subprocess.run(self.command(args, cwd, env), timeout=timeout, **kw)
        if check and r.returncode != 0:
            raise AssertionError("in the root: %s: exit %d\n%s%s" % (" ".join(args), r.returncode,
                                                                     r.stdout or "", r.stderr or ""))
        return r

    def popen(self, args, cwd="/", env=None, **kw):
        return subprocess.Popen(self.command(args, cwd, env), **kw)

    def read(self, path):
        """The bytes of a file of the root."""
        return subprocess.run(self.command(["cat", path]), capture_output=True, check=True, timeout=30).stdout

    def exists(self, path):
        return subprocess.run(self.command(["test", "-e", path]), timeout=30).returncode == 0

    def close(self):
        if self.holder.poll() is None:
            self.holder.kill()
        self.holder.communicate()
