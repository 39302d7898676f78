"""Tests tools/bench_report/compare.py on two tiny fixtures: medians and ranges over
repetitions, aggregates ignored, only names present in both files, ratios, and the load line."""

import io
import os
import unittest
from contextlib import redirect_stdout

from tools.bench_report import compare

FIXTURE = os.path.join(os.environ.get("TEST_SRCDIR", ""), "fairsched", "tests/tools/testdata/compare")


def run(*args):
    out = io.StringIO()
    with redirect_stdout(out):
        code = compare.main([os.path.join(FIXTURE, "runs.jsonl:before"),
                             os.path.join(FIXTURE, "runs.jsonl:after"), *args])
    return code, out.getvalue()


class CompareTest(unittest.TestCase):
    def test_median_range_and_ratio(self):
        code, text = run("--metrics", "real_time,rss_growth_kib")
        self.assertEqual(code, 0)
        self.assertIn("| stop/heap/waiting:1000/manual_time | real_time (ms) | 20 (10-30) | 2 | 0.1 |",
                      text)
        self.assertIn("| start_stop/cycles:2000 | rss_growth_kib | 2e+04 | 100 | 0.005 |", text)
        self.assertNotIn("only_before", text)

    def test_filter_and_load_lines(self):
        _, text = run("--metrics", "real_time", "--filter", "^start_stop")
        self.assertNotIn("stop/heap", text)
        self.assertIn("before: 2026-11-25T10:00:00, 2 CPUs, load average 0.10, 0.20, 0.30", text)
        self.assertIn("after: 2026-11-25T11:00:00, 2 CPUs, load average 0.00, 0.10, 0.20", text)


if __name__ == "__main__":
    unittest.main()
