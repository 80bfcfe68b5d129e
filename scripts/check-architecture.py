#!/usr/bin/env python3
"""Checks the sources against the component rules of docs/architecture.md.

The rules are the table between the "architecture rules" markers of that
file: per component, its folder, the public headers it owns, the components
whose public headers it may include and the outside libraries whose headers
it may include. For every .c and .h file in a component's folder:

  - #include "x.h" must name a file of that same folder, or, in a part of
    a component (a row whose folder lies inside another row's folder: the
    agent's gobject/, gtk4/, …), a file of the folder of a component or
    part it may include (the agent's neutral headers, gobject/'s);
  - #include <pacer/...> must be a header the component owns, or one owned by
    a component it may include;
  - #include of a known outside library's header needs that library in the
    component's list (C library and POSIX headers are always allowed);

and the component's meson.build may not reach into another folder of src/
(include_directories('../…')). Every folder of src/, and every folder
inside a component's folder that holds sources, must be a row.

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
    "microhttpd": ["microhttpd.h"],
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


def check(root):
    rules = read_rules(root)
    problems = []
    for name, r in rules.items():
        folder = os.path.join(root, r["folder"])
        if not os.path.isdir(folder):
            problems.append("docs/architecture.md: the folder of %s, %s, does not exist" % (name, r["folder"]))
            continue
        for entry in sorted(os.listdir(folder)):
            path = os.path.join(folder, entry)
            rel = os.path.relpath(path, root)
            if entry == "meson.build":
                for n, line in enumerate(open(path, encoding="utf-8"), 1):
                    if re.search(r"include_directories\([^)]*['\"]\.\.", line):
                        problems.append("%s:%d: a component's build sees include/ and its own folder only" % (rel, n))
                continue
            if not entry.endswith((".c", ".h")):
                continue
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, header = m.groups()
                if kind == '"':
                    places = [folder] + [os.path.join(root, rules[o]["folder"]) for o in r["may"]
                                         if is_part_of(rules[o]["folder"], r["folder"], rules)]
                    if "/" in header or not any(os.path.exists(os.path.join(p, header)) for p in places):
                        problems.append('%s:%d: "%s" is not a header of %s (%s); use a public header <pacer/…>'
                                        % (rel, n, header, name, r["folder"]))
                    continue
                if header.startswith("pacer/"):
                    owner = owner_of(header, rules)
                    if owner is None:
                        problems.append("%s:%d: <%s> belongs to no component in docs/architecture.md"
                                        % (rel, n, header))
                    elif owner != name and owner not in r["may"]:
                        problems.append("%s:%d: %s may not include <%s> (component %s; it may include: %s)"
                                        % (rel, n, name, header, owner, ", ".join(r["may"]) or "nothing of ours"))
                    continue
                lib = library_of(header)
                if lib and lib not in r["libs"]:
                    problems.append("%s:%d: %s may not use %s (<%s>; its outside libraries: %s)"
                                    % (rel, n, name, lib, header, ", ".join(r["libs"]) or "none"))
    # every folder of src/ is a component of the table, and every folder
    # with sources inside a component's folder is a part of it
    listed = {r["folder"] for r in rules.values()}
    for entry in sorted(os.listdir(os.path.join(root, "src"))):
        if os.path.isdir(os.path.join(root, "src", entry)) and "src/" + entry not in listed:
            problems.append("src/%s: a folder that is no component of docs/architecture.md" % entry)
    for r in rules.values():
        base = os.path.join(root, r["folder"])
        if not os.path.isdir(base):
            continue
        for entry in sorted(os.listdir(base)):
            sub = os.path.join(base, entry)
            has_sources = os.path.isdir(sub) and any(f.endswith((".c", ".h", ".cc", ".cpp")) for f in os.listdir(sub))
            if has_sources and r["folder"] + "/" + entry not in listed:
                problems.append("%s/%s: a folder of sources that is no part of docs/architecture.md"
                                % (r["folder"], entry))
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
