"""Tests of tools/mutate/mutate.py: every mutation of the list still applies to the shipped
sources (its original text occurs exactly `count` times), a mutation keeps the replaced lines
as comments (so the models' quoted code stays findable), a stale mutation is refused, the CI
subset in tests/explore/BUILD is the list's "ci" mutations, and the kill table's verdicts."""

import os
import re
import unittest

from tools.mutate import mutate


def runfile(path):
    return os.path.join(os.environ.get("TEST_SRCDIR", "."), "fairsched", path)


class MutateTest(unittest.TestCase):
    def setUp(self):
        self.groups, self.mutations = mutate.load_list(runfile("tools/mutate/mutations.json"))

    def test_every_mutation_applies_to_the_shipped_sources(self):
        problems = mutate.check_applies(runfile(""), self.mutations)
        self.assertEqual(problems, [])
        self.assertGreaterEqual(len(self.mutations), 15)

    def test_replaced_lines_stay_as_comments(self):
        m = {"id": "x", "file": "f.h", "original": "  a.store(1, release);\n",
             "replacement": "  a.store(1, relaxed);\n"}
        out = mutate.apply_mutation("int f() {\n  a.store(1, release);\n}\n", m)
        self.assertEqual(out, "int f() {\n// mutate: was: a.store(1, release);\n"
                              "  a.store(1, relaxed);\n}\n")

    def test_part_of_a_line_and_several_occurrences(self):
        m = {"id": "x", "file": "f.h", "original": "load(acquire)", "replacement": "load(relaxed)",
             "count": 2}
        out = mutate.apply_mutation("x = a.load(acquire);\ny = b.load(acquire) + 1;\n", m)
        self.assertEqual(out, "// mutate: was: x = a.load(acquire);\nx = a.load(relaxed);\n"
                              "// mutate: was: y = b.load(acquire) + 1;\n"
                              "y = b.load(relaxed) + 1;\n")

    def test_a_stale_mutation_is_refused(self):
        m = {"id": "gone", "file": "f.h", "original": "fence();\n", "replacement": ""}
        with self.assertRaisesRegex(ValueError, "occurs 0 times"):
            mutate.apply_mutation("int x;\n", m)
        m["original"] = "x"
        with self.assertRaisesRegex(ValueError, "occurs 2 times"):
            mutate.apply_mutation("x x\n", m)

    def test_ci_subset_matches_the_explorer_test(self):
        with open(runfile("tests/explore/BUILD")) as f:
            build = f.read()
        block = build[build.index("MUTATION_SUBSET = ["):]
        block = block[:block.index("\n]")]
        in_build = sorted(re.findall(r'\("(\w+)", "//', block))
        in_list = sorted(m["id"] for m in self.mutations if m.get("ci"))
        self.assertEqual(in_build, in_list)
        self.assertLessEqual(len(in_list), 4)

    def test_table_verdicts(self):
        base = {"kind": "order", "file": "f.h", "expected": [], "model_refs": "pass",
                "killed_by": [], "timed_out": [], "build_failed": []}
        rows = [
            dict(base, id="a", killed_by=[{"target": "//tests/explore:t", "how": "counterexample"}]),
            dict(base, id="b"),
            dict(base, id="c", timed_out=["//tests/explore:u"]),
            dict(base, id="d", kind="semantic", build_failed=["//tests/explore:v"]),
        ]
        self.assertEqual([mutate.verdict(r) for r in rows],
                         ["killed", "survived", "timed out", "does not build"])
        table = mutate.render_table(rows)
        self.assertIn("| `a` | order | `f.h` | killed | `explore:t` (counterexample) |", table)
        self.assertIn("Killed 1 of 4 (order 1 of 3, semantic 0 of 1).", table)


if __name__ == "__main__":
    unittest.main()
