// Interleaving exploration of Task's state machine (sched/task.h) as the scheduler drives it:
// one or two wakers racing the sched-role's receive, expiry and execution of one waiting
// task, every schedule with up to three preemptions (also without sleep sets with
// FAIRSCHED_EXPLORE_DEEP=1).
// See task_wake_scenario.h for what is checked.
#include <cstdint>

#include "gtest/gtest.h"
#include "sched/task.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/real_task_ops.h"
#include "tests/explore/task_wake_scenario.h"

namespace fairsched {
namespace {

using testing::RealTaskOps;

void ExpectPass(int wakers, int bound, const char* name, bool sleep_sets = true) {
  explore::Options options;
  options.preemption_bound = bound;
  options.sleep_sets = sleep_sets;
  const explore::Result result =
      explore::Explore(options, [wakers] { testing::WakersRaceExpiry<RealTaskOps>(wakers); });
  testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

TEST(TaskWakeExploreTest, OneSignalRacesExpiry) { ExpectPass(1, 3, "task 1 waker, bound 3"); }

TEST(TaskWakeExploreTest, SignalAndWakeupRaceExpiry) { ExpectPass(2, 3, "task 2 wakers, bound 3"); }

// Why this exploration exists: the stress test meant to catch a wakeup absorbed by a plain
// load (no release) passed with that bug (30/30). This exploration of the real Task catches
// it (the planted copy in planted_bugs_test shows the failure) and passes the real one.
TEST(TaskWakeExploreTest, AnAbsorbedWakeupPublishesTheWakersWrites) {
  explore::Options options;
  options.preemption_bound = 3;
  const explore::Result result = explore::Explore(
      options, [] { testing::AbsorbedWakeupPublishesTheWakersWrites<RealTaskOps>(); });
  testing::PrintCounts("task absorbed wakeup, bound 3", result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

TEST(TaskWakeExploreTest, DeepWithoutSleepSets) {
  if (!testing::DeepExploration()) GTEST_SKIP() << "set FAIRSCHED_EXPLORE_DEEP=1";
  ExpectPass(2, 3, "task 2 wakers, bound 3, no sleep sets", /*sleep_sets=*/false);
}

}  // namespace
}  // namespace fairsched
