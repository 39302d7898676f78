"""The soak pipeline in short (tools/soak): two runs sampled every 0.5 s side by side, a clean
one of 8 s and one of 10 s with the planted leaks (an fd and a parked coroutine per second).
The clean run's file has every column, its counters balance and the report passes; the
leaky run is reported as growth of exactly the two leaked gauges, also when its first
coroutine round ends after the warm-up; a final sample doctored to lose one task or to
duplicate one echo frame, and a run without its final sample, fail.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), "fairsched")
SOAK = os.path.join(RUNFILES, "tools/soak/soak")
REPORT = os.path.join(RUNFILES, "tools/soak/soak_report.py")
SAMPLE_COLUMNS = [
    "t", "phase", "load1", "rss_kb", "fds", "live_coroutines", "coroutines_between_rounds",
    "frame_pool_bytes", "io_ops", "echo_open", "kv_open", "tasks_in_flight",
    "one_shot_posted", "one_shot_allocations", "planted_leaks", "task_posted", "task_ran",
    "task_duplicated",
    "task_early", "coro_sent", "coro_received", "coro_lost", "coro_duplicated", "echo_sent",
    "echo_echoed", "echo_lost", "echo_duplicated", "kv_requests", "kv_answers", "kv_lost",
    "kv_wrong", "hostile_connections", "hostile_unexpected", "echo_accepted", "kv_accepted",
    "echo_dropped_idle", "echo_dropped_slow_reader", "echo_dropped_oversized", "kv_dropped",
]


def report(path, *flags):
    result = subprocess.run([sys.executable, REPORT, path, *flags], capture_output=True,
                            text=True, timeout=60, check=False)
    return result.returncode, result.stdout + result.stderr


def records(path):
    with open(path, encoding="utf-8") as raw:
        return [json.loads(line) for line in raw if line.strip()]


class SoakSmokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.clean = os.path.join(cls.dir, "clean.jsonl")
        cls.leaky = os.path.join(cls.dir, "leaky.jsonl")
        common = ["--interval=0.5", "--warmup=0.15"]
        # The leaky run is longer: the fd baseline dips by a connection (2 fds) now and then,
        # and 10 s put 6 leaked fds between the two thirds the rule compares (tolerance 3).
        runs = [subprocess.Popen([SOAK, f"--out={cls.clean}", "--seconds=8"] + common,
                                 stdout=subprocess.DEVNULL),
                subprocess.Popen([SOAK, f"--out={cls.leaky}", "--seconds=10",
                                  "--plant_leak=fd,task"] + common, stdout=subprocess.DEVNULL)]
        # Bounded: 8-10 s of load, then a drain the program itself bounds.
        cls.status = [run.wait(timeout=120) for run in runs]

    def test_clean_run_has_every_column_balances_and_passes(self):
        self.assertEqual(self.status[0], 0)
        lines = records(self.clean)
        self.assertIn("header", lines[0])
        samples = lines[1:]
        self.assertGreaterEqual(len(samples), 12)  # 16 at 0.5 s, and the final one
        for sample in samples:
            self.assertEqual(sorted(sample), sorted(SAMPLE_COLUMNS))
        final = samples[-1]
        self.assertEqual(final["phase"], "final")
        for total, done in [("task_posted", "task_ran"), ("coro_sent", "coro_received"),
                            ("echo_sent", "echo_echoed"), ("kv_requests", "kv_answers")]:
            self.assertGreater(final[done], 0, done)
            self.assertEqual(final[total], final[done], total)
        # Every hostile connection met the documented answer or close, and the first slow
        # reader (the second hostile client starts with one) was dropped by the write deadline.
        self.assertGreater(final["hostile_connections"], 0)
        self.assertEqual(final["hostile_unexpected"], 0)
        self.assertGreater(final["echo_dropped_slow_reader"], 0)
        self.assertEqual(final["tasks_in_flight"], 0)
        code, output = report(self.clean)
        self.assertEqual(code, 0, output)
        self.assertIn("soak: PASS", output)

    def test_planted_leaks_are_reported_as_growth(self):
        self.assertEqual(self.status[1], 0)
        code, output = report(self.leaky)
        self.assertEqual(code, 1, output)
        self.assertIn("FAIL: fds grew after warm-up", output)
        self.assertIn("FAIL: coroutines_between_rounds grew after warm-up", output)
        self.assertNotIn("do not balance", output)  # the leaks lose nothing
        self.assertNotIn("io_ops grew", output)

    def test_a_first_round_ending_after_the_warm_up_is_still_judged(self):
        # A sanitizer build under a loaded machine may end its first coroutine round after
        # the warm-up; until then the gauge reads -1. The leak must still be reported.
        def rounds_end_late(lines):
            seconds = float(lines[0]["header"]["seconds"])
            for sample in lines[1:]:
                if sample["t"] < 0.3 * seconds:
                    sample["coroutines_between_rounds"] = -1

        code, output = self.doctored("late_rounds.jsonl", rounds_end_late, source=self.leaky)
        self.assertEqual(code, 1, output)
        self.assertIn("FAIL: coroutines_between_rounds grew after warm-up", output)

    def doctored(self, name, change, *flags, source=None):
        lines = records(source or self.clean)
        change(lines)
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
        return report(path, *flags)

    def test_a_lost_or_duplicated_item_fails(self):
        def lose_a_task(lines):
            lines[-1]["task_ran"] -= 1

        def duplicate_an_echo(lines):
            lines[-1]["echo_duplicated"] = 1

        code, output = self.doctored("lost.jsonl", lose_a_task)
        self.assertEqual(code, 1, output)
        self.assertIn("FAIL: tasks do not balance", output)
        code, output = self.doctored("duplicated.jsonl", duplicate_an_echo)
        self.assertEqual(code, 1, output)
        self.assertIn("FAIL: echo frames do not balance", output)

    def test_a_run_without_its_final_sample_fails(self):
        code, output = self.doctored("cut.jsonl", lambda lines: lines.pop())
        self.assertEqual(code, 1, output)
        self.assertIn("no final sample", output)

    def test_readme_sentence_is_written_from_the_file_between_the_markers(self):
        readme = os.path.join(self.dir, "README.md")
        with open(readme, "w", encoding="utf-8") as out:
            out.write("before\n<!-- soak:begin -->\nold text\n<!-- soak:end -->\nafter\n")
        code, output = report(self.clean, "--readme", readme)
        self.assertEqual(code, 0, output)
        with open(readme, encoding="utf-8") as written:
            text = written.read()
        final = records(self.clean)[-1]
        self.assertTrue(text.startswith("before\n<!-- soak:begin -->\nSoak on this machine"))
        self.assertTrue(text.endswith("<!-- soak:end -->\nafter\n"))
        self.assertNotIn("old text", text)
        self.assertIn(f"{final['task_ran']:,} tasks", text)
        self.assertIn("none lost or duplicated", text)
        self.assertIn("**PASS**", text)
        # A failing file says so; a README without the markers is an error, left unchanged.
        def lose_a_task(lines):
            lines[-1]["task_ran"] -= 1

        code, output = self.doctored("lost_for_readme.jsonl", lose_a_task, "--readme", readme)
        self.assertEqual(code, 1, output)
        with open(readme, encoding="utf-8") as written:
            text = written.read()
        self.assertIn("NOT all exactly once", text)
        self.assertIn("**FAIL**", text)
        # An hour-long header brings the goals in: an 8-second run meets neither.
        def last_an_hour(lines):
            lines[0]["header"]["seconds"] = 3600

        self.doctored("hour_for_readme.jsonl", last_an_hour, "--readme", readme)
        with open(readme, encoding="utf-8") as written:
            self.assertIn("socket answers were not met", written.read())
        bare = os.path.join(self.dir, "BARE.md")
        with open(bare, "w", encoding="utf-8") as out:
            out.write("no markers\n")
        code, output = report(self.clean, "--readme", bare)
        self.assertEqual(code, 2, output)
        self.assertIn("needs the markers", output)
        with open(bare, encoding="utf-8") as unchanged:
            self.assertEqual(unchanged.read(), "no markers\n")


if __name__ == "__main__":
    unittest.main()
