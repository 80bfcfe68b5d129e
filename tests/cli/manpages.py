"""pacer's manual pages against its help: the words of each page, rendered
by man, must be those of `pacer --help` and `pacer CMD --help`.

Used by tests/cli/test_man.py (the build's pages) and by the packaging
suite (the pages and the pacer a package installed, run in its root: each
function takes `prefix`, the command that runs a program there).
"""
import os
import re
import subprocess

# What groff may print for characters the page escapes as ASCII (a
# terminal without Debian's mappings): hyphens, minus, quotes.
_ASCII = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2212": "-", "\u2018": "'", "\u2019": "'"})


def render(page, width=100, prefix=()):
    """The page (a .1 file, gzip'd or not) as man prints it, formatting
    stripped."""
    env = dict(os.environ, MANWIDTH=str(width), MAN_KEEP_FORMATTING="", LC_ALL="C.UTF-8")
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    r = subprocess.run([*prefix, "man", "-l", page], capture_output=True, env=env, timeout=60)
    if r.returncode != 0:
        raise AssertionError("man -l %s: exit %d: %s" % (page, r.returncode, r.stderr.decode(errors="replace")))
    text = r.stdout.decode("utf-8")
    text = re.sub(".\b", "", text)  # overstrikes, if man left any
    return text.translate(_ASCII)


def sections(text):
    """{SECTION: [lines]} of a rendered page (headings at column 0)."""
    out, name = {}, None
    lines = text.splitlines()
    for line in lines[1:-1]:  # the header and the footer
        if line and not line[0].isspace():
            name = line.strip()
            out[name] = []
        elif name:
            out[name].append(line)
    return out


def squeeze(text):
    """The text without any white space: line breaks and filling are the
    page's, the characters must be the help's."""
    return re.sub(r"\s+", "", text)


def help_text(pacer, command=None, prefix=()):
    args = [pacer, "--help"] if command is None else [pacer, command, "--help"]
    r = subprocess.run([*prefix, *args], capture_output=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError("%s: exit %d" % (" ".join(args), r.returncode))
    return r.stdout.decode("utf-8")


def commands(pacer, prefix=()):
    """[(name, summary)] of `pacer --help`'s command list."""
    text = help_text(pacer, prefix=prefix)
    block = text.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    return [tuple(re.match(r"  (\S+)\s+(.*)", line).groups()) for line in block.splitlines()]


def problems(pacer, page_of, prefix=(), exists=os.path.exists):
    """Every difference between the pages and the help, as sentences; []
    when they agree. page_of(NAME) is the path of NAME's page (pacer,
    pacer-run, ...); exists(PATH) says whether it is there."""
    found = []
    cmds = commands(pacer, prefix)
    pages = [("pacer", None, "Automatic performance monitoring for native Linux applications")]
    pages += [("pacer-" + name, name, summary) for name, summary in cmds]
    for page_name, command, summary in pages:
        path = page_of(page_name)
        if not exists(path):
            found.append("%s: no manual page (%s)" % (page_name, path))
            continue
        secs = sections(render(path, prefix=prefix))
        name_line = " ".join(" ".join(secs.get("NAME", [])).split())
        want = "%s - %s" % (page_name, summary.rstrip("."))
        if name_line != want:
            found.append("%s: NAME says %r, the help %r" % (page_name, name_line, want))
        body = "\n".join(secs.get("SYNOPSIS", []) + secs.get("DESCRIPTION", []))
        help_ = help_text(pacer, command, prefix)
        help_ = re.sub(r"^usage: ", "", help_, flags=re.M)
        a, b = squeeze(body), squeeze(help_)
        if a != b:
            i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            found.append("%s: the page and `%s --help` differ at character %d: page ...%r..., help ...%r..."
                         % (page_name, "pacer" if command is None else "pacer " + command, i,
                            a[max(0, i - 40):i + 40], b[max(0, i - 40):i + 40]))
        if "SEE ALSO" not in secs:
            found.append("%s: no SEE ALSO section" % page_name)
    return found
