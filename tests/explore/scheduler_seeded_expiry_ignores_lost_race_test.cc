// The real scheduler with one seeded bug (tests/explore/seed_bug.py expiry_ignores_lost_race): the
// expiry path readies a task a waker has won. The scratch copy of sched/internal/sched_role.h is
// included first, so its include guard keeps the shipped file out of this translation unit; the
// explorer must report the bug with this exact message.
// First: replaces the shipped sched/internal/sched_role.h.
#include "tests/explore/seeded/expiry_ignores_lost_race/sched_role.h"

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(SchedulerSeededTest, ExpiryIgnoresLostRace) {
  testing::ExpectSeededBugFound(
      [] { testing::WakeupRacesWait<>(true, 1); },
      "expiry_ignores_lost_race",
      "check failed: WaitEmpty timed out with every worker asleep, "
      "after 2 of 1 runs");
}

}  // namespace
}  // namespace fairsched
