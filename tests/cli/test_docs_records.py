"""docs/records.md and the model agree: every field a page or startup record
carries is documented, and every documented field is emitted by some
scenario (the bundled demo events plus a warm start)."""
import json
import os
import re
import subprocess
import tempfile
import unittest

PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]


def documented():
    text = open(os.path.join(ROOT, "docs", "records.md")).read()
    sections = re.split(r"^## ", text, flags=re.M)
    fields = {}
    for s in sections[1:]:
        title = s.splitlines()[0].strip()
        name = "common" if title == "Common fields" else title.strip("`")
        fields[name] = set(re.findall(r"^\| `([a-z_]+)` \|", s, flags=re.M))
    return fields


def emitted():
    warm = [
        {"t": 0, "ev": "launch"},
        {"t": 1, "ev": "page_create", "page": 1, "class": "W", "kind": "window"},
        {"t": 2, "ev": "page_draw", "page": 1},
        {"t": 3, "ev": "page_destroy", "page": 1},
        {"t": 4, "ev": "page_create", "page": 2, "class": "W", "kind": "window"},
        {"t": 5, "ev": "page_draw", "page": 2},
    ]
    recs = []
    runs = [["--config", os.path.join(ROOT, "tests", "data", "shop.xml"),
             os.path.join(ROOT, "examples", "events", "shop-events.jsonl")]]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("".join(json.dumps(e) + "\n" for e in warm))
    runs.append([f.name])
    try:
        for args in runs:
            p = subprocess.run([PACER, "replay"] + args, capture_output=True, text=True, check=True)
            recs += [json.loads(l) for l in p.stdout.splitlines()]
    finally:
        os.unlink(f.name)
    keys = {}
    for r in recs:
        keys.setdefault(r["type"], set()).update(r.keys())
    return keys


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
