"""Tests tools/lint/co_await_in_condition.py on snippets, then runs it over the repository.

The repository is found through the runfiles' README.md, which Bazel's sandbox links to the
source tree: the scan sees the workspace's sources as they are, not a declared subset.
"""
import os
import unittest

import co_await_in_condition as lint


class SnippetTest(unittest.TestCase):
    def found(self, text):
        return list(lint.findings("x.cc", text))

    def test_await_in_if_while_switch_conditions_is_found(self):
        self.assertEqual(len(self.found("if (co_await x != y) return;")), 1)
        self.assertEqual(len(self.found("while (!(co_await Next())) {}")), 1)
        self.assertEqual(len(self.found("switch (co_await Wait()) {}")), 1)
        self.assertEqual(len(self.found("} else if (\n  co_await a.Get() ==\n  3) {")), 1)

    def test_awaits_outside_conditions_are_fine(self):
        self.assertEqual(self.found("const auto r = co_await x;\nif (r != y) return;"), [])
        self.assertEqual(self.found("if (const auto r = co_await x; r != y) return;"), [])
        self.assertEqual(self.found("if (ready) co_await Yield();"), [])
        self.assertEqual(self.found("while (n < 3) co_await Yield();"), [])

    def test_finding_names_the_line(self):
        self.assertEqual(self.found("a;\nb;\nif (co_await x) {}"),
                         ["x.cc:3: co_await inside the condition of `if`"])


class RepositoryTest(unittest.TestCase):
    def test_no_source_awaits_inside_a_condition(self):
        readme = os.path.realpath("README.md")
        root = os.path.dirname(readme)
        self.assertTrue(os.path.isdir(os.path.join(root, "coro")), root)
        found = lint.scan([os.path.join(root, d)
                           for d in ("coro", "sched", "sync", "io", "examples", "tests",
                                     "bench", "docs", "queues")] + [readme])
        self.assertEqual(found, [], "\n".join(found))


if __name__ == "__main__":
    unittest.main()
