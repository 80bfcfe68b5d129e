#!/usr/bin/env python3
"""bench-upload's driver (make bench BENCH=client-upload): the measured app's
cost, per record, to take a record from its JSON line to an OTLP request
body, before (JSON line -> record -> OTLP JSON -> protobuf) and after (OTLP
built from the record on the writer thread, put together by the uploader).

Counted under callgrind (exact, repeatable): instructions per record of
each stage (encode; gzip of the protobuf; the SQLite spool's work of a
batch in the form each path spools), JSON texts read per record (calls of
the JSON reader, jread_init: a record's line each, and the batch's OTLP
JSON once a batch, so the bytes read are printed too) and heap allocations per record (malloc,
calloc, realloc). Then the native run's thread CPU time per record, the
median of 11 runs, and the bytes per record: JSON line, spooled OTLP body,
request (the same both ways: the bench checks), gzip.

Usage: run.py BUILD_DIR [RECORDS]   (RECORDS a batch, default 500)"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

build = sys.argv[1] if len(sys.argv) > 1 else "build"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
exe = os.path.join(build, "bench", "upload", "bench-upload")
ALLOC = ("malloc", "calloc", "realloc")
STAGES = ("encode", "gzip", "spool")


def parse_dump(path):
    label, ir, calls, callee = None, 0, {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("desc: Trigger: Client Request: "):
                label = line[len("desc: Trigger: Client Request: "):].strip()
            elif line.startswith("summary:"):
                ir = int(line.split()[1])
            elif line.startswith("cfn="):
                callee = line[4:].strip()
            elif line.startswith("calls=") and callee:
                calls[callee] = calls.get(callee, 0) + int(line[6:].split()[0])
    return label, ir, calls


def callgrind():
    if not shutil.which("valgrind"):
        print("callgrind: valgrind is not installed (scripts/install-deps.sh installs it): counts skipped")
        return None
    d = tempfile.mkdtemp(prefix="bench-upload-")
    try:
        p = subprocess.run(["valgrind", "--tool=callgrind", "--compress-strings=no",
                            "--compress-pos=no", "--callgrind-out-file=" + os.path.join(d, "cg.out"),
                            exe, "--callgrind", str(n)], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("bench-upload under callgrind failed:\n" + p.stderr[-2000:])
        out = {}
        for path in glob.glob(os.path.join(d, "cg.out.*")):
            label, ir, calls = parse_dump(path)
            if label:
                out[label] = (ir, calls)
        return out
    finally:
        shutil.rmtree(d)


def main():
    native = subprocess.run([exe, str(n)], capture_output=True, text=True, check=True).stdout.split("\n")
    cpu, sizes, order = {}, {}, []
    for line in native:
        f = line.split()
        if f and f[0] == "cpu":
            cpu[f[1]] = float(f[2])
        elif f and f[0] == "bytes":
            order.append(f[1])
            sizes[f[1]] = [int(x) for x in f[2:]]

    cg = callgrind()
    print("per record, batches of %d records; before = JSON line -> record -> OTLP JSON -> protobuf, "
          "after = OTLP from the record" % n)
    if cg:
        print()
        print("instructions (callgrind)     %12s %12s %8s" % ("before", "after", "after/before"))
        for w in order:
            for s in STAGES:
                b = cg["%s/before/%s" % (w, s)][0] / n
                a = cg["%s/after/%s" % (w, s)][0] / n
                print("  %-12s %-8s      %12.0f %12.0f %8.2f" % (w if s == "encode" else "", s, b, a, a / b))
            be = sum(cg["%s/before/%s" % (w, s)][0] for s in ("encode", "gzip")) / n
            af = sum(cg["%s/after/%s" % (w, s)][0] for s in ("encode", "gzip")) / n
            print("  %-12s %-8s      %12.0f %12.0f %8.2f" % ("", "enc+gzip", be, af, af / be))
        print()
        print("encode stage: JSON texts read (and their bytes) / heap allocations")
        print("  %-12s %16s %16s   %10s %10s" % ("", "read before", "read after", "alloc bef.", "alloc aft."))
        for w in order:
            c = [cg["%s/%s/encode" % (w, p)][1] for p in ("before", "after")]
            reads = [x.get("jread_init", 0) / n for x in c]
            allocs = [sum(x.get(k, 0) for k in ALLOC) / n for x in c]
            cnt, line, _, _, _, otlp_json = sizes[w]
            text = (line + otlp_json) / cnt  # every line, then the batch's OTLP JSON
            print("  %-12s %5.2f (%6.0f B) %5.2f (%6.0f B)   %10.2f %10.2f"
                  % (w, reads[0], text, reads[1], 0, allocs[0], allocs[1]))
    print()
    print("thread CPU time, ns (median of 11, native)")
    print("  %-12s %-8s %10s %10s %8s" % ("", "", "before", "after", "ratio"))
    for w in order:
        for s in STAGES:
            b, a = cpu["%s/before/%s" % (w, s)], cpu["%s/after/%s" % (w, s)]
            print("  %-12s %-8s %10.0f %10.0f %8.2f" % (w if s == "encode" else "", s, b, a, a / b))
    print()
    print("bytes          JSON line   OTLP body   request    gzip   (body/line)")
    for w in order:
        cnt, line, body, req, gz, _ = sizes[w]
        print("  %-12s %9.0f %11.0f %9.0f %7.0f   %.2f" % (w, line / cnt, body / cnt, req / cnt, gz / cnt,
                                                       body / line))


main()
