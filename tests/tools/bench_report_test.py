"""Tests tools/bench_report: renders a report from the small raw-file fixture in
testdata/bench_report/ (three interleaved rounds of two binaries, in the layout --all writes)
and checks the tables (medians, ranges, per-round ratios, columns), the generated blocks of an
area document and of the README (where fairsched wins and where it does not), the plots, the
refusal of stale raw files, the block rewriting and the --all time plan, plus the
benchmark-name parser on the naming styles used under bench/."""

import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

from tools.bench_report import bench_report, blocks, record, runs

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), "fairsched")
TOOL = os.path.join(RUNFILES, "tools/bench_report/bench_report.py")
FIXTURE = os.path.join(RUNFILES, "tests/tools/testdata/bench_report")


def check_png(test, path):
    """Asserts that `path` is a well-formed PNG: signature, an IHDR chunk with a sane size
    and a correct CRC, and an IEND chunk at the end."""
    with open(path, "rb") as f:
        data = f.read()
    test.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n", path)
    length, kind = struct.unpack(">I4s", data[8:16])
    test.assertEqual(kind, b"IHDR", path)
    test.assertEqual(length, 13, path)
    width, height = struct.unpack(">II", data[16:24])
    test.assertGreater(width, 100, path)
    test.assertGreater(height, 100, path)
    (crc,) = struct.unpack(">I", data[16 + length:20 + length])
    test.assertEqual(crc, zlib.crc32(data[12:16 + length]) & 0xFFFFFFFF, path)
    test.assertEqual(data[-12:], b"\x00\x00\x00\x00IEND\xaeB`\x82", path)


def png_title(path):
    """The Title of a PNG's tEXt chunks, or None."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"tEXt":
            key, _, value = data[pos + 8:pos + 8 + length].partition(b"\0")
            if key == b"Title":
                return value.decode("latin-1")
        pos += 12 + length
    return None


class ParseNameTest(unittest.TestCase):
    def test_template_style_with_batch_suffix(self):
        self.assertEqual(bench_report.parse_name("BM_PushPop<McspBatch32>/2/manual_time"),
                         ("PushPop (batch 32)", "Mcsp", "arg", 2))

    def test_template_style_with_extra_argument(self):
        self.assertEqual(
            bench_report.parse_name("BM_PushPopAll<MpscAdapter, false>/4/manual_time"),
            ("PushPopAll (false)", "Mpsc", "arg", 4))

    def test_template_style_argument_named_by_function(self):
        self.assertEqual(bench_report.parse_name("BM_Expire<Wheel>/100000/manual_time"),
                         ("Expire", "Wheel", "timers", 100000))

    def test_path_style_workers(self):
        self.assertEqual(
            bench_report.parse_name("throughput/repost/body_ns:100/workers:4/tbb_arena/real_time"),
            ("throughput/repost body_ns:100", "tbb_arena", "workers", 4))

    def test_path_style_threads_suffix(self):
        self.assertEqual(
            bench_report.parse_name("signal/send_when_set/textbook/real_time/threads:2"),
            ("signal/send_when_set", "textbook", "threads", 2))

    def test_path_style_bare_number_is_the_argument(self):
        self.assertEqual(bench_report.parse_name("mutex/handoff/coro_mutex/4/real_time"),
                         ("mutex/handoff", "coro_mutex", "arg", 4))
        self.assertEqual(
            bench_report.parse_name("yield/fairsched/coroutines:100000/steps:100/workers:2/"
                                    "min_time:0.500/real_time"),
            ("yield coroutines:100000 steps:100", "fairsched", "workers", 2))

    def test_reference_without_contestant(self):
        self.assertEqual(bench_report.parse_name("physical_limit/body_ns:0/real_time"),
                         ("physical_limit body_ns:0", "(reference)", "threads", 1))


class LoadResultsTest(unittest.TestCase):
    def write(self, name, text):
        path = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_microsecond_percentiles_become_nanoseconds(self):
        # sched_bench's wake-up benchmarks report p50_us/p99_us; the report keeps one unit.
        path = self.write("wake_bench.json",
                          '{"context": {}, "benchmarks": [{"name": "wake/workers:1/fairsched", '
                          '"run_name": "wake/workers:1/fairsched", "run_type": "iteration", '
                          '"iterations": 1, "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ms", '
                          '"p50_us": 1.5, "p99_us": 20.0, "parks_per_wake": 0.25}]}')
        _, results = bench_report.load_results(path)
        self.assertEqual(len(results), 1)
        # The same run as one line of a recording's runs.jsonl.
        compact = os.path.join(os.path.dirname(path), runs.RUNS_FILE)
        runs.append_files(compact, [path])
        _, from_line = bench_report.load_results(compact + ":wake_bench")
        self.assertEqual(from_line, results)
        self.assertEqual(results[0]["metrics"]["p50_ns"], 1500.0)
        self.assertEqual(results[0]["metrics"]["p99_ns"], 20000.0)
        self.assertNotIn("p50_us", results[0]["metrics"])

    def test_round_runs_are_rounds_and_aggregates_are_skipped(self):
        # The fixture is a recording in the committed form: queues/runs.jsonl.
        files, results = bench_report.load_dir(os.path.join(FIXTURE, "queues"))
        self.assertEqual(sorted(f["round"] for f in files["mpsc_queue_bench"]), [1, 2, 3])
        mpsc = next(r for r in results if r["contestant"] == "Mpsc" and r["x"] == 2)
        self.assertEqual(mpsc["x_name"], "producers")
        self.assertEqual(mpsc["rounds"]["items_per_second"], {1: 20e6, 2: 30e6, 3: 10e6})
        self.assertEqual(mpsc["metrics"]["items_per_second"], 20e6)
        # A legacy file written with --benchmark_report_aggregates_only: its median only.
        path = self.write("old_bench.json", """{"context": {"load_avg": [1.5, 1, 1]},
            "benchmarks": [
            {"name": "w1/workers:1/fairsched_mean", "run_name": "w1/workers:1/fairsched",
             "run_type": "aggregate", "aggregate_name": "mean", "items_per_second": 9.0},
            {"name": "w1/workers:1/fairsched_median", "run_name": "w1/workers:1/fairsched",
             "run_type": "aggregate", "aggregate_name": "median", "items_per_second": 7.0}]}""")
        ctx, results = bench_report.load_results(path)
        self.assertEqual([r["metrics"]["items_per_second"] for r in results], [7.0])
        self.assertEqual(bench_report.file_load(ctx), [1.5])

    def test_stale_benchmark_names_are_found(self):
        # The cause of report.md showing the old Treiber queue's BM_PushPopAll under the
        # current queue's name: a raw file from an older binary. Names no source defines
        # any more are reported.
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        os.makedirs(os.path.join(root, "bench", "queues"))
        with open(os.path.join(root, "bench", "queues", "q.cc"), "w") as f:
            f.write('BENCHMARK_TEMPLATE(BM_PushPop, A); Register("wake/post" + s);\n')
        results = [{"binary": "b", "run": run} for run in (
            "BM_PushPop<MpscAdapter, true>/1/manual_time", "BM_PushPopAll<Mpsc, true>/1",
            "wake/post/gap_us:10/workers:1/fairsched", "latency/gap_ns:1000/fairsched")]
        self.assertEqual(bench_report.stale_benchmarks(results, root),
                         ["b: BM_PushPopAll<Mpsc, true>/1", "b: latency/gap_ns:1000/fairsched"])


class BlocksTest(unittest.TestCase):
    def test_replace_keeps_the_prose_around_the_block(self):
        text = "intro 1.5x\n<!-- perf:begin -->\nold 3.2x\n<!-- perf:end -->\nafter\n"
        self.assertEqual(blocks.replace_block(text, "perf", ["new", "lines"]),
                         "intro 1.5x\n<!-- perf:begin -->\nnew\nlines\n<!-- perf:end -->\n"
                         "after\n")
        self.assertEqual(blocks.block_names(text + "<!-- echo:echo/run1_results.txt:begin -->"),
                         ["perf", "echo:echo/run1_results.txt"])

    def test_missing_repeated_or_reversed_markers_are_errors(self):
        for text in ("no markers\n", "<!-- perf:begin -->\n<!-- perf:begin -->\n<!-- perf:end -->",
                     "<!-- perf:end -->\n<!-- perf:begin -->\n"):
            with self.assertRaises(blocks.BlockError):
                blocks.replace_block(text, "perf", ["x"])


class RecordPlanTest(unittest.TestCase):
    def test_the_plan_fits_the_budget_with_five_rounds_and_savegame(self):
        lines, total = record.time_plan(record.PLAN, 5, True, True)
        self.assertLessEqual(total, record.BUDGET_SECONDS, "\n".join(lines))
        self.assertIn("savegame (tools/savegame/record_all.sh)", "\n".join(lines))
        # Every area of bench/ is recorded: in the rounds, or (coro) by the hot path.
        self.assertEqual({s.area for s in record.PLAN} | {"coro"}, set(bench_report.AREAS))
        self.assertIn("coro_bench", record.HOT_PATH_TO_CORO)

    def test_plan_filters_reach_the_command_line(self):
        heap = next(s for s in record.PLAN if s.name == "binary_heap_bench")
        self.assertIn("--benchmark_filter=-SetWaitQueue>/1000000", heap.flags(0.05))
        self.assertIn("--benchmark_repetitions=1", heap.flags(0.05))


class RecordFilesTest(unittest.TestCase):
    def touch(self, *parts):
        path = os.path.join(*parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("{}")

    def add_runs(self, folder, *names):
        for name in names:
            runs.append(os.path.join(folder, runs.RUNS_FILE), name, {"benchmarks": [name]})

    def test_hot_path_rounds_are_shared_and_cleared_but_notes_stay(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        hot = os.path.join(root, "hot_path")
        self.add_runs(hot, "yield_bench_r1", "go_yield_r1", "coro_bench_before_r2")
        for name in ("yield_bench_r0.json", "yield_bench_r0.txt", "notes.md", "machine.txt",
                     "profile_yield.txt"):
            self.touch(hot, name)
        self.add_runs(os.path.join(root, "sched"), "sched_bench_r1", "lifecycle_bench_r1")
        self.add_runs(os.path.join(root, "coro"), "stale_bench_r9")
        record.share_rounds(root, hot)
        # coro.md's binaries, current code only, as lines of coro/runs.jsonl; the sched
        # rounds stand in for SKIP_SCHED.
        self.assertEqual(os.listdir(os.path.join(root, "coro")), [runs.RUNS_FILE])
        self.assertEqual([name for name, _ in runs.read_dir(os.path.join(root, "coro"))],
                         ["yield_bench_r0", "yield_bench_r1"])
        self.assertEqual([name for name, _ in runs.read(os.path.join(hot, runs.RUNS_FILE))],
                         ["yield_bench_r1", "go_yield_r1", "coro_bench_before_r2",
                          "sched_bench_r1"])
        # A new recording starts without the old runs, compact or loose.
        record.clear_rounds(hot)
        self.assertEqual(sorted(os.listdir(hot)), ["machine.txt", "notes.md", "profile_yield.txt"])

    def test_rounds_append_each_run_to_the_area_runs_jsonl(self):
        # A stand-in binary that writes Google Benchmark's JSON where --benchmark_out says.
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        bin_dir = os.path.join(root, "bin")
        os.makedirs(os.path.join(bin_dir, "bench", "queues"))
        fake = os.path.join(bin_dir, "bench", "queues", "fake_bench")
        with open(fake, "w") as f:
            f.write("#!" + sys.executable + "\n"
                    "import json, sys\n"
                    "out = [a.split('=', 1)[1] for a in sys.argv if a.startswith('--benchmark_out=')][0]\n"
                    "print('w1/workers:1/fairsched 1 ns')\n"
                    "json.dump({'context': {'date': 'd'}, 'benchmarks': [{'name': 'w1/workers:1/"
                    "fairsched', 'run_type': 'iteration', 'items_per_second': 5.0}]}, open(out, 'w'))\n")
        os.chmod(fake, 0o755)

        class FakeBenchReport:
            Progress = bench_report.Progress

            @staticmethod
            def bazel(_root, _args):
                return bin_dir + "\n"

        json_root = os.path.join(root, "json")
        self.add_runs(os.path.join(json_root, "queues"), "fake_bench_r7")  # an older recording
        steps = [record.Step("queues", "//bench/queues:fake_bench", 1)]
        commands, failed = record.run_rounds(FakeBenchReport, root, steps, 2, 0.01, json_root)
        self.assertEqual(failed, [])
        self.assertEqual(os.listdir(os.path.join(json_root, "queues")), [runs.RUNS_FILE])
        recorded = runs.read(os.path.join(json_root, "queues", runs.RUNS_FILE))
        self.assertEqual([name for name, _ in recorded], ["fake_bench_r1", "fake_bench_r2"])
        context = recorded[0][1]["context"]
        self.assertEqual(context["date"], "d")
        self.assertIn("fairsched_load_before", context)
        self.assertIn("runs.jsonl", commands["fake_bench"])
        files, results = bench_report.load_dir(os.path.join(json_root, "queues"))
        self.assertEqual(results[0]["rounds"]["items_per_second"], {1: 5.0, 2: 5.0})

    def test_new_rounds_clear_old_rounds_but_keep_the_echo_recording(self):
        root = tempfile.mkdtemp()
        io = os.path.join(root, "io")
        os.makedirs(os.path.join(io, "echo"))
        for name in ("io_backend_bench_r4.json", "io_backend_bench_r4.txt", runs.RUNS_FILE,
                     os.path.join("echo", "results.txt")):
            open(os.path.join(io, name), "w").close()
        record.prepare_area_folders(root, {"io", "queues"})
        self.assertEqual(["echo"], os.listdir(io))
        self.assertEqual(["results.txt"], os.listdir(os.path.join(io, "echo")))
        self.assertEqual([], os.listdir(os.path.join(root, "queues")))

    def test_an_echo_recording_replaces_results_and_keeps_the_older_recordings(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.touch(root, "io", "echo", "results.txt")
        self.touch(root, "io", "echo", "handler_ab_results.txt")
        commands = []

        def fake_run_script(_root, _label, cmd, _failed, env=None):
            commands.append(cmd)
            os.makedirs(cmd[-1], exist_ok=True)  # as echo_bench.sh's mkdir -p
            with open(os.path.join(cmd[-1], "results.txt"), "w") as f:
                f.write("new\n")
            return True

        saved = record.run_script
        record.run_script = fake_run_script
        try:
            record.record_echo("/repo", root, 5, [])
        finally:
            record.run_script = saved
        echo = os.path.join(root, "io", "echo")
        self.assertEqual(commands[0][:2], ["bench/io/echo_bench.sh", "5"])
        self.assertEqual(sorted(os.listdir(echo)), ["handler_ab_results.txt", "results.txt"])
        with open(os.path.join(echo, "results.txt")) as f:
            self.assertEqual(f.read(), "new\n")

    def test_a_full_recording_removes_the_flat_layout(self):
        root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        for name in ("mpsc_queue_bench.json", "mpsc_queue_bench.txt", "meta.json", runs.RUNS_FILE):
            self.touch(root, name)
        self.touch(root, "queues", "mcsp_queue_bench_r1.json")
        record.remove_flat_layout(root)
        self.assertEqual(os.listdir(root), ["queues"])


class RenderTest(unittest.TestCase):
    def render(self, *extra, docs=None):
        """Renders the fixture into a fresh folder holding `docs` ({file: text}) first."""
        out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        for name, text in (docs or {}).items():
            with open(os.path.join(out, name), "w") as f:
                f.write(text)
        proc = subprocess.run([sys.executable, TOOL, "--from-json", FIXTURE, "--out", out] +
                              list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(out, "report.md")) as f:
            return out, f.read()

    def test_tables_have_medians_ranges_and_per_round_ratios(self):
        _, report = self.render("--no-plots")
        self.assertIn("| producers | Mpsc | Locked | Moodycamel | Mpsc vs Locked | "
                      "Mpsc vs Moodycamel |", report)
        # Medians over the three rounds with their ranges; the ratio to moodycamel at 2
        # producers is the median of the per-round ratios 0.5, 1.5 and 2.0, not the
        # ratio of the medians (20 / 20 = 1.0).
        self.assertIn("| 2 | 20.00 (10.00-30.00) | 5.00 (4.00-6.00) | 20.00 (5.00-40.00) | "
                      "4.00x (2.50-5.00) | 1.50x (0.50-2.00) |", report)
        self.assertIn("| 1 | 2 | 0.5 |", report)  # Locked: locks / contended per item
        # sched_bench: column order subject / baselines / peers; a range that is one value
        # shows once; best peer is the one fairsched beats by the least.
        self.assertIn("| 1 | 8.00 | 4.00 | 2.00 | 5.00 | 1.00 | 2.00x | 4.00x | "
                      "1.60x (tbb_arena) |", report)
        # Latency: percentiles in microseconds, ratios per percentile (lower is better),
        # the textbook pool with the same spin as a second peer column.
        self.assertIn("| workers | fairsched | trivial_sched | trivial_sched_spin | "
                      "fairsched vs trivial_sched | fairsched vs trivial_sched_spin |", report)
        self.assertIn("| 2.00x / 4.00x / 5.00x | 1.50x (1.00-2.00) / 0.80x / 0.80x |", report)
        self.assertIn("`mpsc_queue_bench`: 3 round(s)", report)
        self.assertIn("load before/after each run 0.10-0.45", report)
        self.assertNotIn("![", report)  # --no-plots

    def test_area_docs_and_readme_blocks_are_rewritten(self):
        doc = ("# Queues\n\nProse 1.\n<!-- bench_report:queues:begin -->\nstale 3.2x\n"
               "<!-- bench_report:queues:end -->\nProse 2.\n")
        readme_text = "# R\n<!-- perf:begin -->\nold\n<!-- perf:end -->\nend\n"
        out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        readme = os.path.join(out, "README.md")
        with open(readme, "w") as f:
            f.write(readme_text)
        results = os.path.join(out, "results")
        os.makedirs(results)
        with open(os.path.join(results, "queues.md"), "w") as f:
            f.write(doc)
        proc = subprocess.run([sys.executable, TOOL, "--from-json", FIXTURE, "--out", results,
                               "--readme", readme, "--no-plots"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(results, "queues.md")) as f:
            text = f.read()
        self.assertNotIn("stale 3.2x", text)
        self.assertTrue(text.startswith("# Queues\n\nProse 1.\n<!-- bench_report:queues:begin"))
        self.assertTrue(text.endswith("<!-- bench_report:queues:end -->\nProse 2.\n"))
        self.assertIn("| 2 | 20.00 (10.00-30.00) |", text)
        self.assertNotIn("sched_bench", text)  # only the area's own binaries
        with open(readme) as f:
            text = f.read()
        self.assertNotIn("\nold\n", text)
        # Where fairsched wins and where it does not, each against its closest competitor.
        self.assertIn("front queue push + pop, producers write items (PushPop (true), "
                      "producers 2): 1.50x (0.50-2.00) Moodycamel", text)
        # One list per verdict: its heading, then one line per point.
        parts = text.split("\n\n")
        ahead = next(p for p in parts if p.startswith("**fairsched ahead"))
        level = next(p for p in parts if p.startswith("**level"))
        behind = next(p for p in parts if p.startswith("**fairsched behind"))
        self.assertIn("producers 2): 1.50x", ahead)
        self.assertIn("producers 1): 1.10x (1.00-1.20) Moodycamel", ahead)
        self.assertIn("one-shot posts from outside (w1) (w1, workers 2): 1.50x tbb_arena", ahead)
        # Wake-up at 1 ms: p50 against the spinning textbook pool is 1.5x, its p99 0.8x.
        self.assertIn("post-to-start latency (wake/post gap_us:1000, workers 1, p99): 0.80x "
                      "trivial_sched_spin", behind)
        self.assertEqual(level, "**level (median ratio 0.95-1.05):** none.")
        self.assertIn("\n- front queue push + pop", ahead)  # one item per line
        self.assertIn("1-minute load 0.10-0.90", text)
        self.assertTrue(text.endswith("<!-- perf:end -->\nend\n"))

    def test_every_linked_plot_is_a_valid_png_with_the_load_in_its_title(self):
        out, report = self.render()
        links = [line.split("](", 1)[1].rstrip(")") for line in report.splitlines()
                 if line.startswith("![")]
        # Two throughput families over several thread counts and one latency family.
        self.assertEqual(len(links), 3, links)
        written = sorted(os.listdir(os.path.join(out, "plots")))
        self.assertEqual(sorted(os.path.basename(link) for link in links), written)
        for link in links:
            check_png(self, os.path.join(out, link))
        # Each title states the load its binary's runs were recorded at (stored in the PNG's
        # Title text as well as drawn).
        titles = {os.path.basename(link): png_title(os.path.join(out, link)) for link in links}
        self.assertIn("1-min load 0.10-0.45", titles["mpsc_queue_bench__pushpop_true.png"])
        self.assertIn("1-min load 0.50-0.90", titles["sched_bench__w1.png"])

    def test_stale_raw_files_are_refused(self):
        folder = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        os.makedirs(os.path.join(folder, "queues"))
        with open(os.path.join(folder, "queues", "mpsc_queue_bench_r1.json"), "w") as f:
            f.write('{"context": {}, "benchmarks": [{"name": "BM_PushPopAll<MpscAdapter, '
                    'true>/1/manual_time", "run_type": "iteration", "items_per_second": 1.0}]}')
        sources = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        os.makedirs(os.path.join(sources, "bench"))
        with open(os.path.join(sources, "bench", "mpsc_queue_bench.cc"), "w") as f:
            f.write("BENCHMARK_TEMPLATE(BM_PushPop, MpscAdapter, true);\n")
        proc = subprocess.run([sys.executable, TOOL, "--from-json", folder, "--no-plots",
                               "--sources", sources],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("BM_PushPopAll<MpscAdapter, true>/1/manual_time", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(folder, "..", "report.md")))

    def test_empty_folder_is_a_clear_error(self):
        empty = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        proc = subprocess.run([sys.executable, TOOL, "--from-json", empty, "--no-plots"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no benchmark JSON files", proc.stderr)


if __name__ == "__main__":
    unittest.main()
