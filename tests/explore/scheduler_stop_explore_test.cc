// Stop racing an outside post on the real BasicTaskScheduler
// (StopRacesPost in scheduler_scenarios.h): one worker, execute_batch_size 1; the posts land
// between WaitEmpty's look and the exit_ store and the worker runs them while exit_ is set;
// what it then holds (a post its task made into the local batch, ready tasks it claimed)
// must be drained before Stop returns. The race needs two preemptions (one worker keeps
// the schedules short enough): every schedule with two (sleep sets on). B left in the local
// batch with nothing claimed needs three (see the scenario): 1,000 random schedules each as
// well (they find a copy that leaves the local batch behind within a few hundred:
// scheduler_seeded_exit_drops_local_batch_test). The counts are printed
// (sync/explore/README.md quotes them). FAIRSCHED_EXPLORE_DEEP=1: 20,000 random schedules
// each. The same races under PostOrder::kHome, on one worker and on two (see there).
#include "gtest/gtest.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/scheduler_scenarios.h"

static_assert(FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX, "the scheduler is checked on AutoResetEvent's futex path");

namespace fairsched {
namespace {

using testing::ExpectPass;
using testing::StopRace;

void ExpectRandomPass(void (*scenario)(), const char* name, int schedules = 1000) {
  explore::Options options;
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = testing::DeepExploration() ? 20000 : schedules;
  const explore::Result result = explore::Explore(options, scenario);
  testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
}

void HeldPost() { testing::StopRacesPost<>(StopRace::kHeldPost); }
void Claimed() { testing::StopRacesPost<>(StopRace::kClaimed); }

TEST(SchedulerStopExploreTest, StopRacesHeldPost) {
  ExpectPass(&HeldPost, 2,
             "scheduler: 1 worker, Stop racing a one-shot that posts (local batch) and a post");
  ExpectRandomPass(&HeldPost, "same, random schedules");
}

TEST(SchedulerStopExploreTest, StopRacesClaimedTasks) {
  ExpectPass(&Claimed, 2, "scheduler: 1 worker, Stop racing 2 posts claimed together");
  ExpectRandomPass(&Claimed, "same, random schedules");
}

// PostOrder::kHome: B goes into its poster's home queue, C into the role holder's; a worker
// that sees exit_ leaves them there, and Stop drains every queue after the workers left.
void HeldPostHome(int workers) {
  testing::StopRacesPost<>(StopRace::kHeldPost, PostOrder::kHome, workers);
}
void HeldPostHomeOneWorker() { HeldPostHome(1); }
void HeldPostHomeTwoWorkers() { HeldPostHome(2); }
void ClaimedHomeOneWorker() {
  testing::StopRacesPost<>(StopRace::kClaimed, PostOrder::kHome, 1);
}

TEST(SchedulerStopExploreTest, StopRacesHeldPostUnderHomeQueues) {
  ExpectPass(&HeldPostHomeOneWorker, 2,
             "scheduler, home queues: 1 worker, Stop racing a one-shot that posts and a post");
  ExpectRandomPass(&HeldPostHomeOneWorker, "same, random schedules");
}

TEST(SchedulerStopExploreTest, StopRacesClaimedTasksUnderHomeQueues) {
  ExpectPass(&ClaimedHomeOneWorker, 2,
             "scheduler, home queues: 1 worker, Stop racing 2 posts claimed together");
  ExpectRandomPass(&ClaimedHomeOneWorker, "same, random schedules");
}

// Two workers: the other worker may run on across the exit (inside an execution batch,
// taking from the holder's queue) or leave first, and either may hold the role that
// received A and C. Every schedule with one preemption, and 3,000 random ones: a post left
// in the second worker's queue needs two preemptions, and the search with two does not
// finish within 100,000 schedules (2 minutes); random schedules find the seeded copy that
// drains only the first queue within a few hundred
// (scheduler_seeded_home_drain_first_queue_only_test).
TEST(SchedulerStopExploreTest, StopRacesHeldPostUnderHomeQueuesOnTwoWorkers) {
  ExpectPass(&HeldPostHomeTwoWorkers, 1,
             "scheduler, home queues: 2 workers, Stop racing a one-shot that posts and a post");
  ExpectRandomPass(&HeldPostHomeTwoWorkers, "same, random schedules", 3000);
}

}  // namespace
}  // namespace fairsched
