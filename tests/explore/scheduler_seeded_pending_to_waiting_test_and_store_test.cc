// The real scheduler with one seeded bug (tests/explore/seed_bug.py
// pending_to_waiting_test_and_store): the sched-role's PENDING -> WAITING step as a test and a
// store instead of a CAS. The scratch copy of sched/task.h is included first, so its include guard
// keeps the shipped file out of this translation unit; the explorer must report the bug with this
// exact message.
#include "tests/explore/seeded/pending_to_waiting_test_and_store/task.h"  // first: replaces the shipped sched/task.h

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(SchedulerSeededTest, PendingToWaitingTestAndStore) {
  testing::ExpectSeededBugFound(
      [] { testing::WakeupRacesWait<>(false, 1); },
      "pending_to_waiting_test_and_store",
      "check failed: WaitEmpty timed out with every worker asleep, "
      "after 0 of 1 runs");
}

}  // namespace
}  // namespace fairsched
