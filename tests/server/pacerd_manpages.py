"""pacerd's manual pages and default config file against its help: the
words of pacerd(8) (SYNOPSIS and OPTIONS, rendered by man) are those of
`pacerd --help`; pacerd.conf(5) gives each option the file takes with the
same words, as NAME = ARG; the default pacerd.conf names each of those
options once, set or commented out.

Used by tests/server/test_pacerd_man.py (the build's files) and by the
packaging suite (the installed ones, with the installed pacerd, run in its
root: `prefix` is the command that runs a program there)."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from manpages import render, sections, squeeze  # noqa: E402

NOT_IN_FILE = ("help", "config")


def help_text(pacerd, prefix=()):
    r = subprocess.run([*prefix, pacerd, "--help"], capture_output=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError("pacerd --help: exit %d" % r.returncode)
    return r.stdout.decode("utf-8")


def help_options(help_):
    """The option names --help lists, in order."""
    return re.findall(r"^  --([a-z][a-z-]*)", help_, re.M)


def conf_options_text(help_):
    """What pacerd.conf(5)'s OPTIONS say, from the help: its options part
    without --help and --config, each "--NAME ARG" as "NAME = ARG"."""
    body = help_.split("\n\n", 1)[1]
    out, skip = [], False
    for line in body.splitlines():
        m = re.match(r"  --([a-z][a-z-]*)", line)
        if m:
            skip = m.group(1) in NOT_IN_FILE
            line = re.sub(r"^  --([a-z][a-z-]*)", r"\1 =", line)
        elif line and not line[0].isspace():
            skip = False  # a group's heading
        if not skip:
            out.append(line)
    return "\n".join(out)


def problems(pacerd, page8, page5, conf, prefix=(), exists=os.path.exists, read=None):
    """Every difference between the pages, the file and the help, as
    sentences; [] when they agree. read(PATH) gives a file's bytes."""
    read = read or (lambda p: open(p, "rb").read())
    found = []
    help_ = help_text(pacerd, prefix)
    for path in (page8, page5, conf):
        if not exists(path):
            found.append("%s: not there" % path)
    if found:
        return found

    def differ(what, a, b):
        a, b = squeeze(a), squeeze(b)
        if a != b:
            i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            found.append("%s differ at character %d: page ...%r..., help ...%r..."
                         % (what, i, a[max(0, i - 40):i + 40], b[max(0, i - 40):i + 40]))

    secs = sections(render(page8, prefix=prefix))
    name = " ".join(" ".join(secs.get("NAME", [])).split())
    if not name.startswith("pacerd - "):
        found.append("pacerd(8): NAME says %r" % name)
    differ("pacerd(8) and `pacerd --help`", "\n".join(secs.get("SYNOPSIS", []) + secs.get("OPTIONS", [])),
           re.sub(r"^usage: ", "", help_, flags=re.M))
    for s in ("DESCRIPTION", "RELOAD", "FILES", "SEE ALSO"):
        if s not in secs:
            found.append("pacerd(8): no %s section" % s)

    secs = sections(render(page5, prefix=prefix))
    opts = "\n".join(secs.get("OPTIONS", []))
    differ("pacerd.conf(5) and `pacerd --help`", opts.replace("[reload]", ""), conf_options_text(help_))
    for s in ("DESCRIPTION", "RELOAD", "EXAMPLE", "SEE ALSO"):
        if s not in secs:
            found.append("pacerd.conf(5): no %s section" % s)

    text = read(conf).decode("utf-8")
    for name in help_options(help_):
        n = len(re.findall(r"^#?%s = \S" % re.escape(name), text, re.M))
        want = 0 if name in NOT_IN_FILE else 1
        if n != want:
            found.append("%s: %s is there %d times, not %d" % (conf, name, n, want))
    return found
