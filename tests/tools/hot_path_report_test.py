"""Tests tools/bench_report/hot_path_report.py on raw files written here: benchmark names of
every binary parsed into family, contestant and arguments; medians and ranges over rounds;
ratios taken round by round; "before" files; perf profiles; the README block."""

import json
import os
import sys
import tempfile
import unittest

from tools.bench_report import hot_path_report as report
from tools.bench_report import runs


def bench(name, **values):
    return {"name": name, "run_name": name, "run_type": "iteration", "time_unit": "ns", **values}


def write(directory, name, benchmarks):
    """One run, appended to the recording's runs.jsonl as record_hot_path.sh does; a name
    ending in .json writes the run as a loose file instead (a recording not packed yet)."""
    data = {"context": {"load_avg": [0.5, 0.5, 0.5]}, "benchmarks": benchmarks}
    if name.endswith(".json"):
        with open(os.path.join(directory, name), "w") as f:
            json.dump(data, f)
    else:
        runs.append(os.path.join(directory, runs.RUNS_FILE), name, data)


YIELD = "yield/{}/coroutines:100000/steps:100/workers:1/min_time:0.500/real_time"
TOKIO = "yield/coroutines:100000/steps:100/workers:1/tokio"


class ParseNameTest(unittest.TestCase):
    def test_names_of_every_binary(self):
        self.assertEqual(report.parse_name(YIELD.format("fairsched")),
                         ("yield", "fairsched",
                          (("coroutines", "100000"), ("steps", "100"), ("workers", "1"))))
        self.assertEqual(report.parse_name(TOKIO)[1], "tokio")
        self.assertEqual(report.parse_name("w2/workers:2/trivial_sched/iterations:1/repeats:1/real_time"),
                         ("w2", "trivial_sched", (("workers", "2"),)))
        self.assertEqual(report.parse_name("loop/w2/iterations:1/repeats:1/real_time"),
                         ("loop/w2", "", ()))
        self.assertEqual(report.parse_name("mutex/handoff/coro_mutex/4/real_time"),
                         ("mutex/handoff", "coro_mutex", (("n", "4"),)))

    def test_short_symbol(self):
        self.assertEqual(
            report.short_symbol("fairsched::BasicTaskScheduler<fairsched::McspQueue<fairsched::Task>,"
                                " X>::ExecuteBatch(fairsched::Worker*)"),
            "BasicTaskScheduler::ExecuteBatch")
        # perf's empty source columns after a symbol are dropped.
        self.assertEqual(report.short_symbol("fairsched::Task::InlineHandler<X>  -      -     "),
                         "Task::InlineHandler")


class RenderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        # Two rounds. Round 1: fairsched 30 M/s, textbook 10, tokio 20; round 2: 20, 20, 10.
        # Per-round ratios vs textbook: 3.0 and 1.0 (median 2.0); vs tokio: 1.5 and 2.0.
        for rnd, (fair, textbook, tokio) in enumerate([(30e6, 10e6, 20e6), (20e6, 20e6, 10e6)], 1):
            write(self.dir, f"yield_bench_r{rnd}", [
                bench(YIELD.format("fairsched"), items_per_second=fair),
                bench(YIELD.format("fairsched_strict"), items_per_second=fair / 2),
                bench(YIELD.format("fairsched_home_ceiling4k"), items_per_second=fair / 5),
                bench(YIELD.format("textbook_pool"), items_per_second=textbook),
                bench(YIELD.format("local_queue"), items_per_second=100e6),
            ])
            write(self.dir, f"yield_bench_before_r{rnd}", [
                bench(YIELD.format("fairsched_before"), items_per_second=fair / 4)])
            write(self.dir, f"tokio_yield_r{rnd}", [bench(TOKIO, items_per_second=tokio)])
            write(self.dir, f"sched_bench_r{rnd}", [
                bench("w2/workers:1/fairsched/iterations:1/repeats:1/real_time", items_per_second=40e6),
                bench("w2/workers:1/fairsched_home/iterations:1/repeats:1/real_time",
                      items_per_second=10e6),
                bench("w2/workers:1/trivial_sched/iterations:1/repeats:1/real_time",
                      items_per_second=20e6),
                bench("loop/w2/iterations:1/repeats:1/real_time", items_per_second=200e6),
            ])
            write(self.dir, f"sched_bench_before_r{rnd}", [
                bench("w2/workers:1/fairsched/iterations:1/repeats:1/real_time", items_per_second=20e6)])
            write(self.dir, f"coro_bench_r{rnd}.json", [
                bench("spawn_complete/coro/workers:1/real_time", items_per_second=10e6),
                bench("memory/coro/iterations:3", bytes_per_suspended=224.0, bytes_per_frame=224.0),
            ])
        with open(os.path.join(self.dir, "machine.txt"), "w") as f:
            f.write("cores: 2\nyield_bench_r1 load_before=0.25\nyield_bench_r1 load_after=0.75\n")
        with open(os.path.join(self.dir, "profile_yield.txt"), "w") as f:
            f.write("# header\n    40.00%  [.] fairsched::Foo<int>::Run(int)\n"
                    "     2.50%  [k] do_syscall_64\n")
        with open(os.path.join(self.dir, "profile_yield_home.txt"), "w") as f:
            f.write("# header\n    15.00%  [.] fairsched::Bar::HomePush()\n")

    def test_tables_and_ratios(self):
        text, summary, loads = report.render(self.dir)
        # Medians over rounds with ranges, in M steps/s.
        self.assertIn("| 100,000 x 100, 1 | 25.0 (20.0-30.0) | 6.2 (5.0-7.5) | 12.5 (10.0-15.0) | "
                      "5.0 (4.0-6.0) | 15.0 (10.0-20.0) |", text)
        # The strict-order build, round by round: 2.00x in both rounds.
        self.assertIn("| 4.00x (4.00-4.00) | 2.00x (2.00-2.00) |", text)
        # Ratios round by round, not ratios of medians (25/15 would be 1.67).
        self.assertIn("2.00x (1.00-3.00)", text)
        ratios, limit = summary["yield"][("100000", "1")]
        self.assertAlmostEqual(ratios["tokio"][0], 1.75)
        self.assertAlmostEqual(limit[0], 0.25)
        self.assertAlmostEqual(summary["repost"]["1"]["trivial_sched"][0], 2.0)
        self.assertAlmostEqual(summary["repost"]["1"]["fairsched_before"][0], 2.0)
        self.assertAlmostEqual(summary["spawn_ns"], 100.0)
        self.assertEqual(summary["memory"], 224.0)
        self.assertEqual(loads, [0.25, 0.75])
        self.assertIn("| Foo::Run | 40.0 |", text)
        # The kHome profile beside the default's, row by row.
        self.assertIn("| yield: default order | % | yield: kHome | % |\n|---|---|---|---|\n"
                      "| Foo::Run | 40.0 | Bar::HomePush | 15.0 |", text)
        # The goals, from the same per-round ratios: ahead of Tokio (1.75x), 25% of the
        # plain queue (goal 85%), re-post 2.00x before.
        self.assertIn("| yield 100,000 coroutines, 1 worker(s): ahead of Tokio | 1.75x (1.50-2.00) | yes |",
                      text)
        self.assertIn("plain local queue | 25% (20-30%) | no |", text)
        self.assertIn("| re-post (sched_bench w2), 1 worker(s): not slower than before | "
                      "2.00x (2.00-2.00) | yes |", text)
        self.assertIn("| re-post (sched_bench w2), 2 worker(s): not slower than before | n/a | n/a |",
                      text)
        # kHome in the same rounds, read against the same goals: a fifth of the default's
        # yield (0.35x Tokio: 6/20 and 4/10), half of before's re-posts.
        self.assertIn("| yield 100,000 coroutines, 1 worker(s): ahead of Tokio | 1.75x (1.50-2.00) | yes | "
                      "0.35x (0.30-0.40) | no |", text)
        self.assertIn("| re-post (sched_bench w2), 1 worker(s): not slower than before | "
                      "2.00x (2.00-2.00) | yes | 0.50x (0.50-0.50) | no |", text)
        self.assertIn("| 0.35x (0.30-0.40) | 5% (4-6%) | 0.20x (0.20-0.20) |", text)

    def run_report(self, *args):
        """hot_path_report's main() on this test's raw files with `args`."""
        argv = sys.argv
        sys.argv = ["hot_path_report.py", self.dir, *args]
        try:
            report.main()
        finally:
            sys.argv = argv

    def test_readme_block_is_replaced(self):
        readme = os.path.join(self.dir, "README.md")
        with open(readme, "w") as f:
            f.write("intro\n<!-- hot_path:begin -->\nold figures\n<!-- hot_path:end -->\nrest\n")
        self.run_report("--out", os.path.join(self.dir, "hot_path.md"), "--readme", readme)
        with open(readme) as f:
            text = f.read()
        self.assertNotIn("old figures", text)
        self.assertTrue(text.startswith("intro\n<!-- hot_path:begin -->\nCoroutine yield"))
        self.assertIn("2.00x the textbook pool", text)
        self.assertIn("all rows, misses and profiles: `hot_path.md`", text)  # not absolute
        self.assertIn("under `PostOrder::kHome` (per-worker home queues), same rounds: 0.35x Tokio "
                      "at 100,000 coroutines, 1 worker.", text)
        self.assertIn("against `PostOrder::kStrict` (throughput ratio): 2.00x for yield, "
                      "100,000 coroutines at 1 worker", text)
        self.assertTrue(text.endswith("<!-- hot_path:end -->\nrest\n"))

    def test_notes_next_to_the_raw_files_are_appended(self):
        with open(os.path.join(self.dir, "notes.md"), "w") as f:
            f.write("## What this recording says\nthe analysis\n")
        out = os.path.join(self.dir, "hot_path.md")
        self.run_report("--out", out)
        with open(out) as f:
            text = f.read()
        self.assertTrue(text.endswith("## What this recording says\nthe analysis\n"))


if __name__ == "__main__":
    unittest.main()
