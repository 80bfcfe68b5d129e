#!/usr/bin/env python3
"""Checks the sources against the component rules of docs/architecture.md.

The rules are the table between the "architecture rules" markers of that
file: per component, its folder, the public headers it owns, the
components whose public headers it may include and the outside libraries
whose headers it may include. For every .c, .h and .cpp file in a
component's folder:

  - #include "x.h" must name a file of that same folder, or, in a part of
    a component (a row whose folder lies inside another row's folder: the
    agent's gobject/, gtk4/, …), a file of the folder of a component or
    part it may include (the agent's neutral headers, gobject/'s);
  - #include <pacer/...> must be a header the component owns, or one owned by
    a component it may include;
  - #include of a known outside library's header needs that library in the
    component's list (C library and POSIX headers are always allowed);

and the component's meson.build may not reach into another folder of src/
(include_directories('../…')). Every folder of src/ must be a row; a
folder inside a component's folder is either a row of its own (a part)
or a folder of the component's second table (below).

A component whose folder has subfolders has a second table, between the
"NAME rules" markers (e.g. "server rules: begin"): per subfolder (relative
to the component's folder), the subfolders it may include and its outside
libraries (a subset of the component's). Each .c and .h file of such a
component lies in one of those subfolders, and:

  - #include "x.h" names a file of its own subfolder (which is included
    by its bare name only);
  - #include "a/b.h" names a file of subfolder a (a path from the
    component's folder: "store/sqlite/x.h" is of store/sqlite), which
    must be its own or one it may include; a subfolder is not part of its
    parent (store/sqlite is not store);
  - a header whose name ends in _int.h is private to its subfolder: no
    other includes it, whatever the table says;
  - an outside library's header needs the library in the subfolder's list.

A subfolder of a component without such a table is itself a violation.
In such a component names lead to files: every function or variable a
.c file defines outside `static` carries the file's name as its prefix
(store_dash_rows in store_dash.c, sqlite_seal in sqlite_seal.c; main is
main.c's).

Usage: check-architecture.py SOURCE_ROOT [STAMP]. Prints each violation as
FILE:LINE: reason and exits 1 when there is any; with STAMP, touches it on
success (a build output).
"""
import fnmatch
import os
import re
import sys

BEGIN = "<!-- architecture rules: begin -->"
END = "<!-- architecture rules: end -->"

# Header prefixes of the outside libraries the table may name.
LIBRARIES = {
    "expat": ["expat.h"],
    "sqlite3": ["sqlite3.h"],
    "curl": ["curl/"],
    "zstd": ["zstd.h"],
    "zlib": ["zlib.h"],
    "elfutils": ["elfutils/", "libelf.h", "gelf.h", "dwarf.h"],
    "glib": ["glib.h", "glib/", "glib-object.h", "gio/", "gobject/"],
    "gtk": ["gtk/", "gdk/"],
    "display": ["wayland-client.h", "wayland-client-core.h", "wayland-client-protocol.h", "wayland-egl.h",
                "xcb/", "X11/", "GL/", "EGL/", "vulkan/"],
    "soup": ["libsoup/"],
    "qt": ["QtCore/", "QtGui/", "QtWidgets/", "QtNetwork/", "QtQml/", "QtQuick/"],
    "microhttpd": ["microhttpd.h"],
    "nghttp2": ["nghttp2/"],
    "gnutls": ["gnutls/"],
    "jansson": ["jansson.h"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_rules(root):
    path = os.path.join(root, "docs", "architecture.md")
    text = open(path, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        sys.exit("%s: the architecture rules table (between %s and %s) is missing" % (path, BEGIN, END))
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rules = {}
    for line in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5:
            sys.exit("%s: a rules row needs 5 cells: %r" % (path, line))
        name, folder, owns, may, libs = cells

        def words(cell):
            return [] if cell in ("—", "-", "") else [w.strip("` ,") for w in re.split(r"[\s,]+", cell) if w.strip("` ,")]

        rules[name] = {
            "folder": folder.strip("`").rstrip("/"),
            "owns": words(owns),
            "may": words(may),
            "libs": words(libs),
        }
    for name, r in rules.items():
        for other in r["may"]:
            if other not in rules:
                sys.exit("%s: component %s may include %s, which is not in the table" % (path, name, other))
        for lib in r["libs"]:
            if lib not in LIBRARIES:
                sys.exit("%s: component %s names an unknown library %s (known: %s)"
                         % (path, name, lib, ", ".join(sorted(LIBRARIES))))
    return rules


def read_inner(root, rules):
    """The subfolder rules of each component that has them: {component: {subfolder: rule}}."""
    path = os.path.join(root, "docs", "architecture.md")
    text = open(path, encoding="utf-8").read()
    inner = {}
    for name, r in rules.items():
        begin, end = "<!-- %s rules: begin -->" % name, "<!-- %s rules: end -->" % name
        if begin not in text:
            continue
        if end not in text:
            sys.exit("%s: %s without %s" % (path, begin, end))
        table = text.split(begin, 1)[1].split(end, 1)[0]
        folders = {}
        for line in table.strip().splitlines()[2:]:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 4:
                sys.exit("%s: a %s rules row needs 4 cells (folder, job, may include, outside libraries): %r"
                         % (path, name, line))
            folder, _job, may, libs = cells

            def words(cell):
                return [] if cell in ("—", "-", "") else [w.strip("`/ ,") for w in re.split(r"[\s,]+", cell)
                                                          if w.strip("`/ ,")]

            folders[folder.strip("`").rstrip("/")] = {"may": words(may), "libs": words(libs)}
        for f, fr in folders.items():
            for other in fr["may"]:
                if other not in folders:
                    sys.exit("%s: %s/%s may include %s, which is not in the %s rules"
                             % (path, r["folder"], f, other, name))
            for lib in fr["libs"]:
                if lib not in r["libs"]:
                    sys.exit("%s: %s/%s names the library %s, which component %s may not use"
                             % (path, r["folder"], f, lib, name))
        inner[name] = folders
    return inner


def owner_of(header, rules):
    for name, r in rules.items():
        for pattern in r["owns"]:
            if fnmatch.fnmatch(header, pattern):
                return name
    return None


def library_of(header):
    for lib, prefixes in LIBRARIES.items():
        for p in prefixes:
            if header == p or (p.endswith("/") and header.startswith(p)):
                return lib
    return None


DEFINITION = re.compile(r"^(?!static\b|typedef\b|extern\b|struct\b|enum\b|union\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*(\(|=|\[)")


def check_names(path, rel, problems):
    """The non-static definitions of a .c file carry its name as prefix."""
    base = os.path.basename(path)[:-2]
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    for n, line in enumerate(lines, 1):
        if not line or line[0] in " \t#/{}*" or line.endswith(";") and "(" in line and "=" not in line:
            continue
        m = DEFINITION.match(line)
        if not m:
            continue
        ident, kind = m.groups()
        if kind == "(":
            # a definition: the parameters close and a body follows
            rest = "\n".join(lines[n - 1:n + 6])
            if not re.match(r"[^;{]*\)\s*\{", rest, re.S):
                continue
        if ident == "main" or ident == base or ident.startswith(base + "_"):
            continue
        problems.append("%s:%d: %s is defined here but does not carry the file's name (%s_…)" % (rel, n, ident, base))


def check_file(root, path, rules, name, sub, inner, problems):
    """One .c or .h file of component name; sub: its subfolder
    (relative to the component's folder) when the component has inner
    rules (inner: those rules), else None."""
    r = rules[name]
    rel = os.path.relpath(path, root)
    folder = os.path.join(root, r["folder"])
    here = os.path.dirname(path)
    libs = inner[sub]["libs"] if sub is not None else r["libs"]
    where = "%s/%s" % (r["folder"], sub) if sub else r["folder"]
    for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        kind, header = m.groups()
        if kind == '"':
            if "/" not in header:
                places = [here] + [os.path.join(root, rules[o]["folder"]) for o in r["may"]
                                   if sub is None and is_part_of(rules[o]["folder"], r["folder"], rules)]
                if not any(os.path.exists(os.path.join(p, header)) for p in places):
                    problems.append('%s:%d: "%s" is not a header of %s; use a public header <pacer/…>%s'
                                    % (rel, n, header, where, " or a path from %s/" % r["folder"] if sub is not None else ""))
                continue
            if sub is None:
                problems.append('%s:%d: "%s" is not a header of %s (%s); use a public header <pacer/…>'
                                % (rel, n, header, name, r["folder"]))
                continue
            target = os.path.dirname(header)
            if target == sub:
                problems.append('%s:%d: "%s" is a header of its own folder: include it by its bare name'
                                % (rel, n, header))
            elif not os.path.exists(os.path.join(folder, header)) or target not in inner:
                problems.append('%s:%d: "%s" is not a header of a folder of %s (%s/…)' % (rel, n, header, name, r["folder"]))
            elif target != sub and target not in inner[sub]["may"]:
                problems.append('%s:%d: %s/ may not include "%s" (of %s/; it may include: %s)'
                                % (rel, n, sub, header, target,
                                   ", ".join(f + "/" for f in inner[sub]["may"]) or "only its own headers"))
            elif target != sub and header.endswith("_int.h"):
                problems.append('%s:%d: "%s" is private to %s/ (an _int.h header): %s/ may not include it'
                                % (rel, n, header, target, sub))
            continue
        if header.startswith("pacer/"):
            owner = owner_of(header, rules)
            if owner is None:
                problems.append("%s:%d: <%s> belongs to no component in docs/architecture.md" % (rel, n, header))
            elif owner != name and owner not in r["may"]:
                problems.append("%s:%d: %s may not include <%s> (component %s; it may include: %s)"
                                % (rel, n, name, header, owner, ", ".join(r["may"]) or "nothing of ours"))
            continue
        lib = library_of(header)
        if lib and lib not in libs:
            problems.append("%s:%d: %s may not use %s (<%s>; its outside libraries: %s)"
                            % (rel, n, where, lib, header, ", ".join(libs) or "none"))


def check(root):
    rules = read_rules(root)
    inner = read_inner(root, rules)
    problems = []
    for name, r in rules.items():
        folder = os.path.join(root, r["folder"])
        if not os.path.isdir(folder):
            problems.append("docs/architecture.md: the folder of %s, %s, does not exist" % (name, r["folder"]))
            continue
        folders = inner.get(name)
        for f in sorted(folders or []):
            if not os.path.isdir(os.path.join(folder, f)):
                problems.append("docs/architecture.md: the folder %s/%s of %s does not exist" % (r["folder"], f, name))
        parts = {os.path.join(root, o["folder"]) for o in rules.values() if o is not r}
        for here, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if os.path.join(here, d) not in parts)  # a part checks itself
            sub = os.path.relpath(here, folder)
            sub = "" if sub == "." else sub
            if sub and folders is None:
                problems.append("%s: a subfolder of %s that is neither a part of it (a row) nor a folder of its rules "
                                "in docs/architecture.md"
                                % (os.path.relpath(here, root), name))
                dirs[:] = []
                continue
            for entry in sorted(files):
                path = os.path.join(here, entry)
                rel = os.path.relpath(path, root)
                if entry == "meson.build":
                    for n, line in enumerate(open(path, encoding="utf-8"), 1):
                        if re.search(r"include_directories\([^)]*['\"]\.\.", line):
                            problems.append("%s:%d: a component's build sees include/ and its own folder only" % (rel, n))
                    continue
                if not entry.endswith((".c", ".h", ".cpp")):
                    continue
                if folders is not None and sub not in folders:
                    problems.append("%s: %s/ is not a folder of the %s rules in docs/architecture.md"
                                    % (rel, os.path.join(r["folder"], sub) if sub else r["folder"], name))
                    continue
                check_file(root, path, rules, name, sub if folders is not None else None, folders, problems)
                if folders is not None and entry.endswith(".c"):
                    check_names(path, rel, problems)
    # every folder of src/ is a component of the table
    listed = {r["folder"] for r in rules.values()}
    for entry in sorted(os.listdir(os.path.join(root, "src"))):
        if os.path.isdir(os.path.join(root, "src", entry)) and "src/" + entry not in listed:
            problems.append("src/%s: a folder that is no component of docs/architecture.md" % entry)
    return problems


def is_part_of(folder, part, rules):
    """Whether `folder` and `part` belong to one component: one lies inside
    the other, or both inside a third row's folder."""
    def inside(a, b):
        return a == b or a.startswith(b + "/")
    if inside(part, folder) or inside(folder, part):
        return True
    return any(inside(folder, r["folder"]) and inside(part, r["folder"]) for r in rules.values()
               if r["folder"] not in (folder, part))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    problems = check(sys.argv[1])
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("check-architecture: %d violation(s) of docs/architecture.md" % len(problems), file=sys.stderr)
        return 1
    if len(sys.argv) == 3:
        with open(sys.argv[2], "w") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
