// The real scheduler with one seeded bug (tests/explore/seed_bug.py wakeup_load_store):
// Task::TryWake (Wakeup) as a load and a store instead of one fetch_or. The scratch copy of
// sched/task.h is included first, so its include guard keeps the shipped file out of this
// translation unit; the explorer must report the bug with this exact message.
#include "tests/explore/seeded/wakeup_load_store/task.h"  // first: replaces the shipped sched/task.h

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(SchedulerSeededTest, WakeupLoadStore) {
  testing::ExpectSeededBugFound(
      [] { testing::WakeupRacesWait<>(false, 1); },
      "wakeup_load_store",
      "check failed: WaitEmpty timed out with every worker asleep, "
      "after 0 of 1 runs");
}

}  // namespace
}  // namespace fairsched
