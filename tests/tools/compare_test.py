"""Tests tools/bench_report/compare.py on two tiny fixtures: medians and ranges over
repetitions, aggregates ignored, only names present in both files, ratios, the load line,
pooling the runs whose names share a prefix (PREFIX*), and the per-round ratio (--by-round)."""

import io
import os
import unittest
from contextlib import redirect_stdout

from tools.bench_report import compare

FIXTURE = os.path.join(os.environ.get("TEST_SRCDIR", ""), "fairsched", "tests/tools/testdata/compare")


def run(*args, before="before", after="after", runs="runs.jsonl"):
    out = io.StringIO()
    with redirect_stdout(out):
        code = compare.main([os.path.join(FIXTURE, f"{runs}:{before}"),
                             os.path.join(FIXTURE, f"{runs}:{after}"), *args])
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

    def test_pooled_runs(self):
        # "*" pools both runs of the fixture: before's three repetitions and after's one.
        _, text = run("--metrics", "real_time", before="*")
        self.assertIn("| stop/heap/waiting:1000/manual_time | real_time (ms) | 15 (2-30) | 2 | 0.133 |",
                      text)
        self.assertIn("before: 2026-11-25T10:00:00 (the first of 2 pooled runs), 2 CPUs", text)
        _, text = run("--metrics", "real_time", before="bef*")
        self.assertIn("| 20 (10-30) | 2 | 0.1 |", text)

    def test_pool_without_a_match_is_an_error(self):
        with self.assertRaises(Exception) as raised:
            run("--metrics", "real_time", before="nothing_like_this*")
        self.assertIn("no run starting with 'nothing_like_this'", str(raised.exception))

    def test_by_round(self):
        # Rounds 1-3 ran both builds: ratios 1.5, 0.8, 1.1 (median 1.1, two above 1); round 4
        # ran only "new" and counts in its pooled median (of 150, 80, 220, 999: 185)
        # but in no ratio. Both ways to name a pool: the round after the prefix, or the
        # prefix ending in the round's "r".
        _, text = run("--metrics", "items_per_second", "--by-round", runs="rounds.jsonl",
                      before="yield_base_*", after="yield_new_r*")
        self.assertIn("| yield/x | items_per_second | 100 (100-200) | 185 (80-999) | 1.85 "
                      "| 1.100 (0.80-1.50) | 2 of 3 |", text)

    def test_a_pool_ending_in_the_rounds_r_leaves_out_longer_build_names(self):
        # "yield_new_*" also pools the build "new_x", whose round 1 (1,500) moves that
        # round's ratio from 1.5 to 8.25 (median of 150 and 1,500 over 100);
        # "yield_new_r*" (the test above) keeps it out.
        _, text = run("--metrics", "items_per_second", "--by-round", runs="rounds.jsonl",
                      before="yield_base_r*", after="yield_new_*")
        self.assertIn("| 1.100 (0.80-8.25) | 2 of 3 |", text)

    def test_by_round_needs_rounds_on_both_sides(self):
        with self.assertRaises(Exception) as raised:
            run("--metrics", "real_time", "--by-round")
        self.assertIn("--by-round needs two pooled specs", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
