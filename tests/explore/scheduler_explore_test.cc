// The real BasicTaskScheduler under the interleaving explorer (scenarios in
// scheduler_scenarios.h): two workers, posts from outside racing the workers' start and
// another thread's WaitEmpty; a Wakeup racing a wait; Stop and restart; and, with one
// worker (two make it ten times longer), a Wakeup racing a deadline. Every schedule with
// one preemption is run (sleep sets on); the counts are printed (sync/explore/README.md
// quotes them).
#include "gtest/gtest.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/scheduler_scenarios.h"

static_assert(FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX, "the scheduler is checked on AutoResetEvent's futex path");

namespace fairsched {
namespace {

using testing::ExpectPass;

TEST(SchedulerExploreTest, PostFromOutside) {
  ExpectPass([] { testing::PostFromOutside<>(2); }, 1,
             "scheduler: 2 workers, 2 posts from outside, WaitEmpty");
}

TEST(SchedulerExploreTest, WakeupRacesWait) {
  ExpectPass([] { testing::WakeupRacesWait<>(false, 2); }, 1,
             "scheduler: 2 workers, Wakeup racing PostWait");
}

TEST(SchedulerExploreTest, WakeupRacesDeadline) {
  ExpectPass([] { testing::WakeupRacesWait<>(true, 1); }, 1,
             "scheduler: 1 worker, Wakeup racing a deadline");
}

TEST(SchedulerExploreTest, StopAndRestart) {
  ExpectPass(&testing::StopAndRestart<>, 1, "scheduler: 2 workers, Stop and restart");
}

}  // namespace
}  // namespace fairsched
