"""Tests tools/bench_report/runs.py, the compact store of raw results: one minified JSON line
per run, named after the file it came from, values unchanged; reading a recording folder
(lines and loose files, sorted, a name twice refused); one run by RUNS.jsonl:RUN; unpacking
back to files; the command line the record scripts call."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from tools.bench_report import runs

TOOL = os.path.join(os.environ.get("TEST_SRCDIR", ""), "fairsched", "tools/bench_report/runs.py")
RUN = {"context": {"date": "2026-11-28", "load_avg": [1.5, 1.0, 0.25]},
       "benchmarks": [{"name": "w2/workers:1/fairsched", "items_per_second": 1.0e+06,
                       "real_time": 12.5, "iterations": 3, "error_occurred": False}]}


def folder():
    return tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))


class RunsTest(unittest.TestCase):
    def test_one_line_per_run_with_its_name_first_and_values_unchanged(self):
        path = os.path.join(folder(), "rec", runs.RUNS_FILE)
        runs.append(path, "sched_bench_r2", RUN)
        runs.append(path, "sched_bench_r1", RUN)
        with open(path) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[0].startswith('{"run":"sched_bench_r2","context":{'), lines[0])
        self.assertNotIn(" ", lines[0].replace("2026-11-28", ""))  # minified
        self.assertEqual(runs.read(path), [("sched_bench_r2", RUN), ("sched_bench_r1", RUN)])
        # A folder reads sorted by name, as the files of one run each used to be.
        self.assertEqual([name for name, _ in runs.read_dir(os.path.dirname(path))],
                         ["sched_bench_r1", "sched_bench_r2"])

    def test_a_run_with_its_own_run_key_or_not_an_object_is_refused(self):
        path = os.path.join(folder(), runs.RUNS_FILE)
        with self.assertRaises(runs.RunsError):
            runs.append(path, "x_r1", {"run": "other"})
        with self.assertRaises(runs.RunsError):
            runs.append(path, "x_r1", [1, 2])
        self.assertFalse(os.path.exists(path))

    def test_loose_files_are_read_with_the_lines_and_a_name_twice_is_an_error(self):
        d = folder()
        runs.append(os.path.join(d, runs.RUNS_FILE), "a_r1", RUN)
        for name in ("b_r1.json", "meta.json"):
            with open(os.path.join(d, name), "w") as f:
                json.dump(RUN, f)
        with open(os.path.join(d, "notes.md"), "w") as f:
            f.write("analysis\n")
        self.assertEqual(runs.read_dir(d), [("a_r1", RUN), ("b_r1", RUN)])
        with open(os.path.join(d, "a_r1.json"), "w") as f:
            json.dump(RUN, f)
        with self.assertRaisesRegex(runs.RunsError, "a_r1"):
            runs.read_dir(d)

    def test_a_bad_line_names_file_and_line(self):
        path = os.path.join(folder(), runs.RUNS_FILE)
        with open(path, "w") as f:
            f.write(runs.line("a_r1", RUN) + "\n" + '{"context": {}}\n')
        with self.assertRaisesRegex(runs.RunsError, r"runs.jsonl:2: not a run"):
            runs.read(path)

    def test_load_one_run_and_unpack_back_to_equal_files(self):
        d = folder()
        path = os.path.join(d, runs.RUNS_FILE)
        runs.append(path, "lifecycle_before", RUN)
        runs.append(path, "lifecycle_after", {"benchmarks": []})
        self.assertEqual(runs.load(path + ":lifecycle_before"), RUN)
        with self.assertRaisesRegex(runs.RunsError, "no run 'missing'"):
            runs.load(path + ":missing")
        written = runs.unpack(path, os.path.join(d, "files"))
        self.assertEqual([os.path.basename(p) for p in written],
                         ["lifecycle_before.json", "lifecycle_after.json"])
        self.assertEqual(runs.load(written[0]), RUN)  # a plain JSON file loads as itself

    def test_command_line_appends_files_named_after_them(self):
        d = folder()
        for name in ("yield_bench_r1.json", "go_yield_r1.json"):
            with open(os.path.join(d, name), "w") as f:
                json.dump(RUN, f, indent=2)
        target = os.path.join(d, "out", runs.RUNS_FILE)
        proc = subprocess.run([sys.executable, TOOL, "append", target,
                               os.path.join(d, "yield_bench_r1.json"),
                               os.path.join(d, "go_yield_r1.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(runs.read(target), [("yield_bench_r1", RUN), ("go_yield_r1", RUN)])
        proc = subprocess.run([sys.executable, TOOL, "list", target],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout, "yield_bench_r1\ngo_yield_r1\n")
        proc = subprocess.run([sys.executable, TOOL, "append", target,
                               os.path.join(d, "missing.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("missing.json", proc.stderr)


if __name__ == "__main__":
    unittest.main()
