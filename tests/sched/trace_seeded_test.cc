// The trace check on a scheduler with a seeded bug (tests/explore/seed_bug.py
// expiry_ignores_lost_race: the expiry path readies a waiting task even when a waker won
// it, so the task runs twice). tests/explore/BUILD compiles this file with the seeded copy
// of sched/internal/sched_role.h included first. The scenario makes the race on every run;
// the checker must name the step where the role readies the task the waker owns, before
// the task's first start.
//
// The bug leaves the scheduler unable to stop (a run too many: its post counters never
// balance), so the run happens in a death-test child that reports the verdict on stderr
// and exits without stopping it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "tests/sched/trace_checker.h"
#include "tests/sched/trace_scenarios.h"

namespace fairsched::testing {
namespace {

// Prints what the run showed and exits: 0 if the checker rejected the trace at a step
// that comes before any start of the task it names, else 1.
[[noreturn]] void ReportAndExit(const WakeBeatsExpiryRun& run) {
  const TraceVerdict verdict = CheckTrace(run.trace);
  bool started_before = false;
  if (!verdict.ok) {
    for (std::size_t i = 0; i < verdict.index; ++i) {
      started_before = started_before || (run.trace[i].step == SchedStep::kStart &&
                                          run.trace[i].task == run.trace[verdict.index].task);
    }
  }
  std::fprintf(stderr, "raced=%d timer_runs=%d started_before=%d verdict: %s\n", run.raced ? 1 : 0,
               run.timer_runs, started_before ? 1 : 0,
               verdict.ok ? "accepted" : verdict.message.c_str());
  std::_Exit(!verdict.ok && run.raced && !started_before ? 0 : 1);
}

void RunAndReport() { ReportAndExit(RunWakeBeatsExpiry(&ReportAndExit)); }

TEST(TraceSeededTest, ExpiryThatIgnoresALostRaceIsRejectedAtItsReady) {
  EXPECT_EXIT(RunAndReport(), ::testing::ExitedWithCode(0),
              "raced=1 .* started_before=0 verdict: step [0-9]+: thread 2 kReady t1: t1 is made "
              "ready from the wait queue although a waker won it");
}

}  // namespace
}  // namespace fairsched::testing
