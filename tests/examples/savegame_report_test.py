"""Tests tools/savegame/report.py on a small committed recording
(tests/examples/testdata/savegame_report: closed_loop/, connections/ with plan.json,
open_loop/ with plot_open_loop.py's summary.json; each part's runs in its runs.jsonl,
minimal records with hand-picked values): the medians and min-max it writes into the
savegame.md blocks and the README sentence, that it rewrites only between the markers, that
it refuses a file without them, and the plot and summaries it writes. Also the run order of
closed_loop.py, the open-file arithmetic of connection_sweep.py, and that the record scripts
append each run to their folder's runs.jsonl (a stand-in for the savegame binary)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), "fairsched")
TOOLS = os.path.join(RUNFILES, "tools/savegame")
REPORT = os.path.join(TOOLS, "report.py")
FIXTURE = os.path.join(RUNFILES, "tests/examples/testdata/savegame_report")
sys.path.insert(0, TOOLS)

import closed_loop  # noqa: E402
import connection_sweep  # noqa: E402
import savegame_runs  # noqa: E402
import sweep  # noqa: E402

MARKDOWN = """# title
before
<!-- savegame:closed_loop:begin -->
old closed
<!-- savegame:closed_loop:end -->
middle
<!-- savegame:connections:begin -->
<!-- savegame:connections:end -->
<!-- savegame:open_loop:begin -->
old open
<!-- savegame:open_loop:end -->
after
"""

README = """intro line
<!-- savegame:begin -->
old sentence 1.23x
<!-- savegame:end -->
outro line
"""


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.root = os.path.join(cls.work, "recording")
        shutil.copytree(FIXTURE, cls.root)
        cls.markdown = os.path.join(cls.work, "results", "savegame.md")
        os.makedirs(os.path.dirname(cls.markdown))
        with open(cls.markdown, "w") as f:
            f.write(MARKDOWN)
        cls.readme = os.path.join(cls.work, "README.md")
        with open(cls.readme, "w") as f:
            f.write(README)
        cls.completed = subprocess.run(
            [sys.executable, REPORT, cls.root, "--markdown", cls.markdown, "--readme",
             cls.readme], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(cls.completed.stdout)
        with open(cls.markdown) as f:
            cls.text = f.read()
        with open(cls.readme) as f:
            cls.sentence = f.read()

    def block(self, part):
        begin = "<!-- savegame:%s:begin -->" % part
        return self.text[self.text.index(begin) + len(begin):
                         self.text.index("<!-- savegame:%s:end -->" % part)]

    def test_runs(self):
        self.assertEqual(self.completed.returncode, 0, self.completed.stdout)

    def test_closed_loop_medians_and_ranges(self):
        block = self.block("closed_loop")
        # fairsched 1000/3000/2000 req/s, p50 5/7/6, workers (1.0,1.2) (1.4,1.6) (1.2,1.4).
        self.assertIn("| fairsched | 3 (3) | 2000 (1000-3000) | 6.00 (5.00-7.00) | "
                      "11.00 (10.00-12.00) | 21.00 (20.00-22.00) | 1.20 (1.00-1.40) / "
                      "1.40 (1.20-1.60) | 0.30 (0.30-0.30) | 0.25 (0.25-0.25) | "
                      "0.50 (0.50-0.50) |", block)
        self.assertIn("| updater | 3 (3) | 1000 (500-1500) |", block)
        self.assertIn("fairsched / updater, median req/s: 2.00x.", block)
        self.assertIn("(F U U F F U)", block)
        self.assertIn("1-minute load average 0.50-1.50", block)
        self.assertIn("2026-11-26T05:00:00Z - 2026-11-26T05:00:25Z", block)
        self.assertIn("](../recording/closed_loop)", block)
        self.assertNotIn("old closed", self.text)

    def test_connection_tables(self):
        block = self.block("connections")
        self.assertIn("Open files: 10000 connections need about 22256 open files", block)
        self.assertIn("| 16 | fairsched | 4000 | 2.00 | 10.00 | 0.0% | 1.00 / 1.00 | - |",
                      block)
        self.assertIn("| 16 | updater (5 ms tick) | 800 | 15.00 | 25.00 | 0.0% | "
                      "0.40 / 0.40 | 2 |", block)
        self.assertIn("| 8500 | updater (100 ms tick) | 2000 | 300 | 500 |", block)
        skewed = block[block.index("Skewed"):]
        self.assertIn("| 16 | updater (5 ms tick) | 700 | 16.00 | 30.00 | 0.0% | "
                      "0.90 / 0.30 | 0 |", skewed)
        self.assertNotIn("| 8500 |", skewed)
        # Rows: fairsched first, then the Updaters by tick.
        uniform = block[block.index("Uniform"):block.index("Skewed")]
        self.assertLess(uniform.index("| 16 | fairsched"),
                        uniform.index("| 16 | updater (5 ms tick)"))
        self.assertLess(uniform.index("| 16 | updater (5 ms tick)"),
                        uniform.index("| 16 | updater (100 ms tick)"))
        png = os.path.join(self.root, "connections", "connections.png")
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertIn("![connection sweep](../recording/connections/connections.png)", block)
        with open(os.path.join(self.root, "connections", "summary.json")) as f:
            self.assertEqual(len(json.load(f)["rows"]), 8)

    def test_open_loop_block(self):
        block = self.block("open_loop")
        self.assertIn("- fairsched: highest offered rate held: 16000 req/s", block)
        self.assertIn("- updater: highest offered rate held: 1000 req/s", block)
        self.assertIn("| updater | 32000 | 1 | 2000 | 4000 | 6000 | 32000 | 0.00% | no |",
                      block)
        self.assertIn("1-minute load average 0.30-3.00", block)
        self.assertNotIn("old open", self.text)

    def test_text_outside_the_markers_is_kept(self):
        for line in ("# title", "before", "middle", "after"):
            self.assertIn(line + "\n", self.text)
        self.assertTrue(self.sentence.startswith("intro line\n<!-- savegame:begin -->\n"))
        self.assertTrue(self.sentence.endswith("<!-- savegame:end -->\noutro line\n"))

    def test_readme_sentence(self):
        sentence = self.sentence.split("\n")[2]
        self.assertNotIn("1.23x", self.sentence)
        self.assertIn("in 3 alternated closed-loop runs per design (128 connections) fairsched "
                      "acknowledged 2000 (1000-3000) saves/s (median, min-max) against the "
                      "Updater's 1000 (500-1500) (2.00x)", sentence)
        self.assertIn("held p99 <= 100 ms up to 16000 offered req/s against the Updater's "
                      "1000", sentence)
        self.assertIn("with 16 connections in flight fairsched did 5.00x the Updater's "
                      "(5 ms tick) and 100.00x the Updater's (100 ms tick) req/s", sentence)
        self.assertIn("with 8500 connections in flight fairsched did 2.00x", sentence)
        self.assertIn("load average 0.30-3.00", sentence)
        self.assertIn("([details](results/savegame.md))", sentence)

    def test_a_file_without_markers_is_refused(self):
        plain = os.path.join(self.work, "plain.md")
        with open(plain, "w") as f:
            f.write("no markers here\n")
        run = subprocess.run([sys.executable, REPORT, self.root, "--readme", plain],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("needs the markers <!-- savegame:begin --> and <!-- savegame:end -->",
                      run.stdout)
        with open(plain) as f:
            self.assertEqual(f.read(), "no markers here\n")


class PlanTest(unittest.TestCase):
    def test_closed_loop_alternates(self):
        self.assertEqual(closed_loop.run_order(["a", "b"], 3), ["a", "b", "b", "a", "a", "b"])

    def test_open_files(self):
        # The fleet in a child process: one end of each connection in the job's process.
        self.assertEqual(connection_sweep.descriptors_needed(10000, 1000), 12256)
        self.assertEqual(connection_sweep.descriptors_needed(100, 1000), 556)
        self.assertEqual(connection_sweep.largest_fitting(10000, 1000), 7500)
        self.assertLessEqual(connection_sweep.descriptors_needed(7500, 1000), 10000)
        self.assertGreater(connection_sweep.descriptors_needed(8000, 1000), 10000)


# A stand-in for //examples:savegame: writes a minimal record of its flags to --json, or,
# with --seed=3, fails without a record.
FAKE_SAVEGAME = """#!%s
import json, sys
flags = dict(a[2:].split("=", 1) for a in sys.argv[1:])
if flags["seed"] == "3":
    sys.exit("fake savegame: no record for seed 3")
latency = {"p50": 1.0, "p99": 2.0, "p999": 3.0}
with open(flags["json"], "w") as f:
    json.dump({"record": "savegame-run/1", "design": flags["design"], "mode": "closed",
               "seed": int(flags["seed"]), "requests_per_second": 100.0, "sent": 10,
               "acknowledged": 10, "unsent": 0, "latency_ms": {"acknowledged": latency},
               "loadavg_before": {"1min": 0.5}, "check": {"passed": True, "message": ""},
               "threads": [{"name": "w0", "role": "server", "cpu_seconds": 0.5}]}, f)
"""


class RecordTest(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.binary = os.path.join(self.work, "savegame")
        with open(self.binary, "w") as f:
            f.write(FAKE_SAVEGAME % sys.executable)
        os.chmod(self.binary, 0o755)
        self.out = os.path.join(self.work, "closed_loop")

    def lines(self):
        with open(os.path.join(self.out, "runs.jsonl")) as f:
            return [json.loads(line) for line in f]

    def test_each_run_is_one_line_named_after_it_and_nothing_else_is_written(self):
        status = closed_loop.main(["--binary", self.binary, "--out", self.out, "--runs", "1",
                                   "--duration", "0.1"])
        self.assertEqual(status, 0)
        self.assertEqual(os.listdir(self.out), ["runs.jsonl"])
        self.assertEqual([(l["run"], l["design"], l["seed"]) for l in self.lines()],
                         [("00-fairsched", "fairsched", 1), ("01-updater", "updater", 2)])

    def test_a_new_recording_replaces_the_runs_and_a_run_without_record_adds_none(self):
        self.assertEqual(closed_loop.main(["--binary", self.binary, "--out", self.out,
                                           "--runs", "1", "--duration", "0.1"]), 0)
        # Seeds 1, 2 at 10 req/s, then 3 (no record), 4 at 20 req/s, designs alternating.
        status = sweep.main(["--binary", self.binary, "--out", self.out, "--rates", "10,20",
                             "--duration", "0.1"])
        self.assertEqual(status, 1)
        self.assertEqual([l["run"] for l in self.lines()],
                         ["fairsched-rate10-round0", "updater-rate10-round0",
                          "fairsched-rate20-round0"])
        # Read back sorted by run name.
        self.assertEqual([r["seed"] for r in savegame_runs.load_records(self.out)],
                         [1, 4, 2])

    def test_the_connection_sweep_keeps_its_plan_beside_the_runs(self):
        status = connection_sweep.main(["--binary", self.binary, "--out", self.out,
                                        "--points", "16", "--duration", "0.1",
                                        "--seed", "10"])
        self.assertEqual(status, 0)
        self.assertEqual(sorted(os.listdir(self.out)), ["plan.json", "runs.jsonl"])
        self.assertEqual(sorted(l["run"] for l in self.lines()),
                         ["%s-%s-conn16-round0" % (server, workload)
                          for server in ("fairsched", "updater", "updater_tick100")
                          for workload in ("skewed", "uniform")])
        # plan.json is no run record: load_records skips it.
        self.assertEqual(len(savegame_runs.load_records(self.out)), 6)

if __name__ == "__main__":
    unittest.main()
