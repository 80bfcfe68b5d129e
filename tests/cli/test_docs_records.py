"""docs/records.md, the record schema and the model agree: every record type
and field of the schema (`pacer schema --format json`) is documented with
its type and nothing else is; every field a page or startup record carries
is documented, and every documented field is emitted by some scenario (the
bundled demo events plus a warm start, a handoff and a run without a
toolkit adapter)."""
import json
import os
import re
import subprocess
import tempfile
import unittest

PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]


def documented_types():
    """{section: {field: type column}} of the field tables of records.md."""
    text = open(os.path.join(ROOT, "docs", "records.md")).read()
    sections = re.split(r"^## ", text, flags=re.M)
    fields = {}
    for s in sections[1:]:
        title = s.splitlines()[0].strip()
        name = "common" if title == "Common fields" else title.strip("`")
        fields[name] = dict(re.findall(r"^\| `([a-z_]+)` \| ([^|]+) \|", s, flags=re.M))
    return fields


def documented():
    return {name: set(f) for name, f in documented_types().items()}


def schema():
    p = subprocess.run([PACER, "schema", "--format", "json"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def emitted():
    warm = [
        {"t": 0, "ev": "launch"},
        {"t": 0, "ev": "toolkit", "class": "gtk3"},
        {"t": 1, "ev": "page_create", "page": 1, "class": "W", "kind": "window"},
        {"t": 2, "ev": "page_draw", "page": 1},
        {"t": 3, "ev": "page_destroy", "page": 1},
        {"t": 4, "ev": "page_create", "page": 2, "class": "W", "kind": "window"},
        {"t": 5, "ev": "page_draw", "page": 2},
    ]
    handoff = [
        {"t": 0, "ev": "launch"},
        {"t": 1, "ev": "main"},
        {"t": 2, "ev": "handoff"},
    ]
    toolkit_free = [
        {"t": 0, "ev": "launch"},
        {"t": 1, "ev": "main"},
        {"t": 2, "ev": "first_frame", "source": "wayland"},
    ]
    recs = []
    runs = [["--config", os.path.join(ROOT, "tests", "data", "shop.xml"),
             os.path.join(ROOT, "examples", "events", "shop-events.jsonl")]]
    files = []
    for events in (warm, handoff, toolkit_free):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write("".join(json.dumps(e) + "\n" for e in events))
        files.append(f.name)
        runs.append([f.name])
    try:
        for args in runs:
            p = subprocess.run([PACER, "replay"] + args, capture_output=True, text=True, check=True)
            recs += [json.loads(l) for l in p.stdout.splitlines()]
    finally:
        for name in files:
            os.unlink(name)
    keys = {}
    for r in recs:
        keys.setdefault(r["type"], set()).update(r.keys())
    return keys


class DocsMatchSchema(unittest.TestCase):
    def test_every_type_and_field(self):
        doc = documented_types()
        sch = schema()
        tables = {"common": sch["common"]}
        for t in sch["types"]:
            if t["fields"]:
                tables[t["name"]] = t["fields"]
            else:
                self.assertIn("`%s`" % t["name"], open(os.path.join(ROOT, "docs", "records.md")).read(),
                              "type %s is not mentioned in docs/records.md" % t["name"])
        for name, fields in tables.items():
            self.assertIn(name, doc, "docs/records.md has no section for %s records" % name)
            want = {f["name"]: f for f in fields}
            self.assertEqual(set(doc[name]), set(want), "%s: fields of docs/records.md vs the schema" % name)
            for fname, f in want.items():
                words = doc[name][fname].strip()
                # the table's type column starts with the schema's type word
                self.assertTrue(words.startswith(f["type"]),
                                "%s.%s: documented as %r, the schema says %s" % (name, fname, words, f["type"]))
                self.assertEqual("or null" in words, "nullable" in f["flags"],
                                 "%s.%s: 'or null' in the docs iff the schema says nullable" % (name, fname))


class DocsMatchRecords(unittest.TestCase):
    def test_fields(self):
        doc = documented()
        got = emitted()
        for t in ("page", "startup"):
            self.assertIn(t, got, f"no {t} record emitted")
            undocumented = got[t] - doc["common"] - doc[t]
            self.assertEqual(undocumented, set(), f"{t} fields missing from docs/records.md")
            never = doc[t] - got[t]
            self.assertEqual(never, set(), f"{t} fields documented but never emitted")
            self.assertEqual(doc["common"] - got[t], set(), f"{t} lacks common fields")


if __name__ == "__main__":
    unittest.main()
