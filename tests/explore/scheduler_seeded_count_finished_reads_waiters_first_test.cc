// The real scheduler with one seeded bug (tests/explore/seed_bug.py
// count_finished_reads_waiters_first): CountFinished reads the WaitEmpty waiter count before
// counting the finished runs. The scratch copy of sched/task_scheduler.h is included first, so its
// include guard keeps the shipped file out of this translation unit; the explorer must report the
// bug with this exact message.
#include "tests/explore/seeded/count_finished_reads_waiters_first/task_scheduler.h"  // first: replaces the shipped sched/task_scheduler.h

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(SchedulerSeededTest, CountFinishedReadsWaitersFirst) {
  testing::ExpectSeededBugFound(
      [] { testing::PostFromOutside<>(2); },
      "count_finished_reads_waiters_first",
      "check failed: WaitEmpty was not woken: it returned at its de"
      "adline with every worker asleep, after 2 of 2 runs");
}

}  // namespace
}  // namespace fairsched
