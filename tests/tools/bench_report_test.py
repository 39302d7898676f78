"""Tests tools/bench_report: renders a report from the tiny JSON fixture in
testdata/bench_report/ and checks the tables (values, ratios, columns) and the plots (every
linked PNG is written and is a valid PNG), plus the benchmark-name parser on the naming
styles used under bench/."""

import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

from tools.bench_report import bench_report

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

    def test_reference_without_contestant(self):
        self.assertEqual(bench_report.parse_name("physical_limit/body_ns:0/real_time"),
                         ("physical_limit body_ns:0", "(reference)", "threads", 1))


class LoadResultsTest(unittest.TestCase):
    def test_microsecond_percentiles_become_nanoseconds(self):
        # sched_bench's wake-up benchmarks report p50_us/p99_us; the report keeps one unit.
        path = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")),
                            "wake_bench.json")
        with open(path, "w") as f:
            f.write('{"context": {}, "benchmarks": [{"name": "wake/workers:1/fairsched", '
                    '"run_name": "wake/workers:1/fairsched", "run_type": "iteration", '
                    '"iterations": 1, "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ms", '
                    '"p50_us": 1.5, "p99_us": 20.0, "parks_per_wake": 0.25}]}')
        _, results = bench_report.load_results(path)
        self.assertEqual(len(results), 1)
        self.assertEqual(results[0]["metrics"]["p50_ns"], 1500.0)
        self.assertEqual(results[0]["metrics"]["p99_ns"], 20000.0)
        self.assertNotIn("p50_us", results[0]["metrics"])


class RenderTest(unittest.TestCase):
    def render(self, *extra):
        out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        proc = subprocess.run([sys.executable, TOOL, "--from-json", FIXTURE, "--out", out] +
                              list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(os.path.join(out, "report.md")) as f:
            return out, f.read()

    def test_tables_have_values_ratios_and_counters(self):
        _, report = self.render("--no-plots")
        # sched_bench: medians with cv, ratios against both baselines and the best peer
        # (tbb_arena: fairsched beats it by the least), column order subject/baselines/peers.
        self.assertIn("| workers | fairsched | fairsched_trivial_policy | trivial_sched | "
                      "tbb_arena | asio_pool | fairsched vs fairsched_trivial_policy | "
                      "fairsched vs trivial_sched | fairsched vs best peer |", report)
        self.assertIn("| 1 | 8.00 ±5% | 4.00 ±5% | 2.00 ±5% | 5.00 ±5% | 1.00 ±5% | 2.00x | "
                      "4.00x | 1.60x (tbb_arena) |", report)
        self.assertIn("| 2 | 6.00 ±5% | 2.00 ±5% | 1.50 ±5% | 4.00 ±5% | 3.00 ±5% | 3.00x | "
                      "4.00x | 1.50x (tbb_arena) |", report)
        self.assertIn("| 2 | 0.25 | 0.25 |", report)  # lock_contended_per_task counters
        # Latency: percentiles in microseconds, ratios per percentile (lower is better).
        self.assertIn("| 1 | 2.0 / 10.0 | 4.0 / 50.0 | 2.00x / 5.00x |", report)
        # mpsc_queue_bench: single runs (no cv), producers named by the counter, a peer
        # that wins shows as a ratio below 1.
        self.assertIn("| producers | Mpsc | Locked | Moodycamel | Mpsc vs Locked | "
                      "Mpsc vs Moodycamel |", report)
        self.assertIn("| 2 | 20.00 | 5.00 | 40.00 | 4.00x | 0.50x |", report)
        self.assertIn("| 1 | 1 | 0.5 |", report)  # Locked: locks / contended per item
        self.assertNotIn("![", report)  # --no-plots

    def test_every_linked_plot_is_a_valid_png(self):
        out, report = self.render()
        links = [line.split("](", 1)[1].rstrip(")") for line in report.splitlines()
                 if line.startswith("![")]
        # Two throughput families over several thread counts and one latency family; the
        # single-point throughput family (physical_limit) gets no plot.
        self.assertEqual(len(links), 3, links)
        written = sorted(os.listdir(os.path.join(out, "plots")))
        self.assertEqual(sorted(os.path.basename(link) for link in links), written)
        for link in links:
            check_png(self, os.path.join(out, link))

    def test_empty_folder_is_a_clear_error(self):
        empty = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        proc = subprocess.run([sys.executable, TOOL, "--from-json", empty, "--no-plots"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("no benchmark JSON files", proc.stderr)


if __name__ == "__main__":
    unittest.main()
