#!/usr/bin/env python3
"""`pacer schema`, run as a user would: the JSON form against facts of the
record schema that docs/records.md and docs/otlp-mapping.md state, and the
text form against the JSON form (every type and field is listed).

Environment: PACER is the built pacer binary, PACER_SOURCE_ROOT the source
tree (for docs/records.md).
"""
import json
import os
import re
import subprocess
import unittest

PACER = os.environ.get("PACER", "pacer")
ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))

TYPE_WORDS = {"string", "integer", "number", "bool", "object", "array", "array of strings"}
FLAGS = {"required", "nullable", "metric", "span_name", "url", "span_end", "span_fallback", "dimension"}
FIELD_KEYS = {"name", "type", "unit", "flags", "values", "semconv", "column", "meaning", "fields"}


def run(*args):
    return subprocess.run([PACER, "schema", *args], capture_output=True, text=True, timeout=60)


def walk(fields, depth=0):
    """Every field of a field list, nested ones included, with its depth."""
    for f in fields:
        yield f, depth
        yield from walk(f["fields"], depth + 1)


class SchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        p = run("--format", "json")
        assert p.returncode == 0, p.stderr
        cls.doc = json.loads(p.stdout)
        cls.types = {t["name"]: t for t in cls.doc["types"]}

    def field(self, type_name, *path):
        fields = self.types[type_name]["fields"]
        for name in path:
            found = [f for f in fields if f["name"] == name]
            self.assertEqual(len(found), 1, f"{type_name}: field {'.'.join(path)}")
            f = found[0]
            fields = f["fields"]
        return f

    # --- JSON ------------------------------------------------------------------

    def test_common_fields(self):
        names = [f["name"] for f in self.doc["common"]]
        self.assertEqual(names, ["type", "ts", "app", "version", "session", "pid"])
        common = {f["name"]: f for f in self.doc["common"]}
        self.assertIn("required", common["type"]["flags"])
        self.assertEqual((common["ts"]["type"], common["ts"]["unit"]), ("integer", "ns"))
        self.assertEqual(common["app"]["semconv"], "service.name")

    def test_page(self):
        page = self.types["page"]
        self.assertEqual((page["signal"], page["table"]), ("traces", "page_loads"))
        total = self.field("page", "total_ms")
        self.assertEqual((total["type"], total["unit"]), ("number", "ms"))
        self.assertIn("metric", total["flags"])
        metrics = [f["name"] for f in page["fields"] if "metric" in f["flags"]]
        self.assertEqual(metrics, ["initial_draw_ms", "api_load_ms", "final_draw_ms", "total_ms"])
        status = self.field("page", "status")
        self.assertEqual(status["values"], ["complete", "deadline_exceeded", "abandoned", "incomplete", "never_shown"])
        self.assertIn("required", status["flags"])
        # a list of objects: its members are listed
        apis = self.field("page", "apis")
        self.assertEqual(apis["type"], "array")
        self.assertEqual([f["name"] for f in apis["fields"]], ["url", "ms", "status"])
        self.assertIn("required", self.field("page", "apis", "url")["flags"])

    def test_startup(self):
        self.assertEqual(self.field("startup", "kind")["values"], ["cold", "warm", "handoff"])
        phases = self.field("startup", "phases")
        self.assertEqual(phases["type"], "object")
        launch = self.field("startup", "phases", "launch")
        self.assertEqual((launch["type"], launch["unit"]), ("integer", "ns"))
        for m in ("cold_ms", "warm_ms", "first_screen_ms"):
            self.assertIn("metric", self.field("startup", m)["flags"])

    def test_net(self):
        net = self.types["net"]
        self.assertEqual((net["signal"], net["table"]), ("traces", "requests"))
        status = self.field("net", "status")
        self.assertEqual(status["semconv"], "http.response.status_code")
        self.assertEqual((status["type"], status["column"]), ("integer", "status"))
        self.assertIn("nullable", self.field("net", "dns_ms")["flags"])
        self.assertEqual(self.field("net", "classes")["type"], "array of strings")
        self.assertEqual(self.field("net", "classes")["values"], ["error", "large_image", "slow"])

    def test_jank_and_frames(self):
        self.assertEqual(self.types["jank"]["signal"], "logs")
        self.assertIsNone(self.types["jank"]["table"])
        self.assertIn("required", self.field("jank", "stack", "function")["flags"])
        self.assertEqual(self.types["frames"]["signal"], "metrics")
        self.assertEqual([f["name"] for f in self.field("frames", "levels")["fields"]],
                         ["best", "normal", "middle", "high", "frozen"])

    def test_every_field_is_complete(self):
        for t in self.doc["types"]:
            self.assertEqual(set(t), {"name", "signal", "table", "meaning", "fields"}, t["name"])
            self.assertIn(t["signal"], ("traces", "logs", "metrics"))
            self.assertTrue(t["meaning"], t["name"])
            for f, _ in walk(t["fields"]):
                where = f"{t['name']}.{f['name']}"
                self.assertEqual(set(f), FIELD_KEYS, where)
                self.assertIn(f["type"], TYPE_WORDS, where)
                self.assertLessEqual(set(f["flags"]), FLAGS, where)
                self.assertTrue(f["meaning"], where)
                self.assertEqual(bool(f["fields"]), f["type"] in ("object", "array"), where)

    def test_documented_types_and_fields_are_in_the_schema(self):
        text = open(os.path.join(ROOT, "docs", "records.md")).read()
        documented = {}
        for section in re.split(r"^## ", text, flags=re.M)[1:]:
            title = section.splitlines()[0].strip()
            m = re.fullmatch(r"`([a-z_]+)`", title)
            if title == "Common fields":
                name = "common"
            elif m:
                name = m.group(1)
            else:
                continue
            documented[name] = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M))
        self.assertIn("page", documented)
        for name, fields in documented.items():
            if name == "common":
                have = {f["name"] for f in self.doc["common"]}
            else:
                self.assertIn(name, self.types, f"docs/records.md documents type {name}")
                have = {f["name"] for f in self.types[name]["fields"]}
            self.assertLessEqual(fields, have, f"{name}: documented fields missing from the schema")

    # --- text ------------------------------------------------------------------

    def test_text_lists_every_type_and_field(self):
        p = run()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, run("--format", "text").stdout)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith("common fields"))
        for t in self.doc["types"]:
            self.assertIn(f"{t['name']}: {t['meaning']}", lines)
        # one block per type: its fields, at their depth, in order
        field_line = re.compile(r"(?m)^( +)([a-z_]+) +(?:%s)(?:;| \(|$)" %
                                "|".join(sorted(TYPE_WORDS, key=len, reverse=True)))
        blocks = re.split(r"\n\n", p.stdout.strip())
        self.assertEqual(len(blocks), 1 + len(self.doc["types"]))
        for block, fields in zip(blocks, [self.doc["common"]] + [t["fields"] for t in self.doc["types"]]):
            listed = [(m.group(2), len(m.group(1)) // 2 - 1) for m in field_line.finditer(block)]
            self.assertEqual(listed, [(f["name"], d) for f, d in walk(fields)], block.splitlines()[0])
        self.assertRegex(p.stdout, r"(?m)^  total_ms +number \(ms\); metric, span_end; column total_ms$")
        self.assertRegex(p.stdout, r"(?m)^  status +integer; required; semconv http\.response\.status_code")
        self.assertIn("signal logs", p.stdout)

    # --- command line ------------------------------------------------------------

    def test_help(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("usage: pacer schema [--format text|json]", p.stdout)
        self.assertIn("nullable", p.stdout)
        top = subprocess.run([PACER, "--help"], capture_output=True, text=True)
        self.assertRegex(top.stdout, r"(?m)^  schema +Print the record schema")

    def test_usage_errors(self):
        for args in (["--format", "xml"], ["--format"], ["--bogus"], ["page"]):
            p = run(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("pacer schema: ", p.stderr)
            self.assertEqual(p.stdout, "", args)


if __name__ == "__main__":
    unittest.main()
