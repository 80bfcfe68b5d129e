"""The rules inside pacerd (docs/architecture.md, "Inside the server"), as
scripts/check-architecture.py enforces them: the tree as it is passes, and
a copy of it with one forbidden include planted fails, naming the file,
the line and the rule — an analysis file that includes a store backend's
private header, a folder that includes one it may not, the backend-neutral
store that includes SQLite, a file in a folder the rules do not name."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.environ.get("PACER_SOURCE_ROOT", "."))
CHECK = os.path.join(ROOT, "scripts", "check-architecture.py")


def run(root):
    p = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
    return p.returncode, p.stderr


class Architecture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pacer-arch-")
        os.makedirs(os.path.join(self.tmp, "docs"))
        shutil.copy(os.path.join(ROOT, "docs", "architecture.md"), os.path.join(self.tmp, "docs"))
        shutil.copytree(os.path.join(ROOT, "src"), os.path.join(self.tmp, "src"),
                        ignore=shutil.ignore_patterns("*.o", "*.a"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def plant(self, rel, text):
        path = os.path.join(self.tmp, "src", "server", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def test_tree_passes(self):
        rc, err = run(ROOT)
        self.assertEqual(rc, 0, err)
        rc, err = run(self.tmp)
        self.assertEqual(rc, 0, err)

    def test_analysis_including_a_backends_private_header(self):
        self.plant("analysis/planted.c", '/* planted */\n#include "store/sqlite/store_int.h"\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn("src/server/analysis/planted.c:2:", err)
        self.assertIn("store/sqlite/store_int.h", err)

    def test_a_folder_it_may_not_include(self):
        # the HTTP layer knows nothing of the store
        self.plant("http/planted.c", '#include <stdio.h>\n#include "store/store.h"\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn("src/server/http/planted.c:2: http/ may not include \"store/store.h\"", err)

    def test_a_subfolder_is_not_its_parent(self):
        # store/ may include its own headers, not those of store/clickhouse/
        self.plant("store/planted.c", '#include "store/clickhouse/ch_client.h"\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn("src/server/store/planted.c:1: store/ may not include", err)

    def test_an_outside_library_of_another_folder(self):
        self.plant("api/planted.c", '#include <microhttpd.h>\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn("src/server/api/planted.c:1: src/server/api may not use microhttpd", err)

    def test_the_store_interface_naming_a_backend(self):
        # store/ serves every backend: SQLite's header is store/sqlite/'s own
        self.plant("store/planted.h", '#include <sqlite3.h>\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn("src/server/store/planted.h:1: src/server/store may not use sqlite3", err)

    def test_a_folder_the_rules_do_not_name(self):
        self.plant("misc/planted.c", '#include <stdio.h>\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn("src/server/misc/planted.c: src/server/misc/ is not a folder of the server rules", err)

    def test_a_name_that_does_not_lead_to_its_file(self):
        # issues_db.c's functions are issues_db_*: another name is refused
        self.plant("analysis/planted.c", '#include "issues_db.h"\n\nint iss_mark_get(void)\n{\n    return 0;\n}\n\n'
                   'static int helper(void)\n{\n    return 1;\n}\n\nint planted_ok(void)\n{\n    return helper();\n}\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn("src/server/analysis/planted.c:3: iss_mark_get is defined here but does not carry the file's "
                      "name (planted_…)", err)
        self.assertNotIn("helper", err)
        self.assertNotIn("planted_ok", err)

    def test_a_bare_name_of_another_folder(self):
        self.plant("api/planted.c", '#include "store.h"\n')
        rc, err = run(self.tmp)
        self.assertEqual(rc, 1, err)
        self.assertIn('src/server/api/planted.c:1: "store.h" is not a header of src/server/api', err)


if __name__ == "__main__":
    unittest.main()
