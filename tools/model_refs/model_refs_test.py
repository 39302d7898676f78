#!/usr/bin/env python3
"""model_refs_test: the models' `code:` references match the code, and the checker catches
stale ones.

Runs check_model_refs over every TLA+ specification (tla/*.tla) and Promela model
(tla/spin/*.pml), with the C++ sources they refer to as data, and requires no problem. Every
Promela model must carry references (the TLA+ ones may not yet). The fixtures in testdata/
hold deliberately wrong references, each of which must be reported with its own message.
"""

import glob
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_model_refs  # noqa: E402  (next to this file)

ROOT = os.path.join(os.environ.get("TEST_SRCDIR", ""), "fairsched")
TESTDATA = os.path.join(ROOT, "tools/model_refs/testdata")


def models(pattern):
    return sorted(glob.glob(os.path.join(ROOT, pattern)))


class ModelRefsTest(unittest.TestCase):
    def test_models_match_the_code(self):
        specs = models("tla/*.tla")
        promela = models("tla/spin/*.pml")
        self.assertGreaterEqual(len(specs), 5, "the TLA+ specifications are not in the data")
        self.assertGreaterEqual(len(promela), 6, "the Promela models are not in the data")
        labels = [os.path.relpath(m, ROOT) for m in specs + promela]
        problems, total = check_model_refs.check(specs + promela, ROOT, labels)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))
        print("model_refs_test: %d references in %d files match the code" %
              (total, len(labels)))
        for model in promela:
            _, count = check_model_refs.check([model], ROOT)
            self.assertGreater(count, 0, "%s has no code: references" % model)

    def test_trace_checker_quotes_the_spec(self):
        # tests/sched/trace_checker.cc quotes, at each step rule, the spec's text it follows.
        checker = os.path.join(ROOT, "tests/sched/trace_checker.cc")
        problems, total = check_model_refs.check([checker], ROOT, ["tests/sched/trace_checker.cc"])
        self.assertEqual(problems, [], "\n" + "\n".join(problems))
        self.assertGreaterEqual(total, 20, "the trace checker's rules lost their quotes")

    def test_stale_references_are_reported(self):
        problems, total = check_model_refs.check(
            [os.path.join(TESTDATA, "stale_refs.pml"), os.path.join(TESTDATA, "stale_refs.tla")],
            ROOT, ["stale_refs.pml", "stale_refs.tla"])
        self.assertEqual(problems, [
            "stale_refs.pml:4: no line of sync/auto_reset_event.cc contains "
            "'if (flag_.exchange(1, std::memory_order_acq_rel) != 0) {' (Send)",
            "stale_refs.pml:5: sync/no_such_file.cc does not exist",
            "stale_refs.pml:6: function SendTwice does not occur in sync/auto_reset_event.cc",
            "stale_refs.pml:7: code reference text '{' is too short to identify a line "
            "(at least 8 characters)",
            "stale_refs.pml:8: malformed code reference (want 'code: <path> <Function>: "
            "<text of a line>'): /* code: sync/auto_reset_event.cc waiters_.load(std::memory_order_seq_cst) */",
            "stale_refs.tla:3: no line of sync/auto_reset_event.cc contains "
            "'waiters_.fetch_add(2, std::memory_order_seq_cst);' (ReceiveUntil)",
        ])
        # Lines 4-7 and 9 of the .pml, lines 3 and 4 of the .tla parse as references.
        self.assertEqual(total, 7)

    def test_command_line_exit_status(self):
        stale = os.path.join(TESTDATA, "stale_refs.tla")
        self.assertEqual(check_model_refs.main(["--root", ROOT, stale]), 1)
        good = models("tla/spin/signal_futex.pml")
        self.assertEqual(check_model_refs.main(["--root", ROOT] + good), 0)


if __name__ == "__main__":
    unittest.main()
