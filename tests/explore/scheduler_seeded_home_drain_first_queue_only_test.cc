// The real scheduler under PostOrder::kHome with one seeded bug (tests/explore/seed_bug.py
// home_drain_first_queue_only): Stop, after the workers left, drains only the first
// worker's home queue, so a post left in the second worker's queue across the exit is
// retired with that worker. The scratch copy of sched/internal/home_queues.h is included
// first, so its include guard keeps the shipped file out of this translation unit.
//
// Built with NDEBUG: a debug build stops at RetireWorkers' check that a retired worker's
// queue is empty (an abort, which would end the search instead of failing one schedule);
// without it the lost post is what a release build sees, and the scenario's watchdog
// reports it: Stop never returns. The explorer must report exactly that, on two workers
// (StopRacesPost in scheduler_scenarios.h), both in the search with one preemption and in
// random schedules. On one worker there is only the first queue: the bug cannot show.
// First: replaces the shipped sched/internal/home_queues.h.
#include "tests/explore/seeded/home_drain_first_queue_only/home_queues.h"

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

using testing::StopRace;

void HeldPostOnTwoWorkers() {
  testing::StopRacesPost<>(StopRace::kHeldPost, PostOrder::kHome, 2);
}

// Which of B and C is lost depends on the schedule; the message names the count.
bool IsStopHang(const std::string& failure) {
  return failure.rfind(
             "check failed: Stop did not return: its WaitEmpty was never woken, with every "
             "worker asleep, after ",
             0) == 0;
}

void ExpectStopHangFound(const explore::Options& options, const char* name) {
  const explore::Result result = explore::Explore(options, &HeldPostOnTwoWorkers);
  testing::PrintCounts(name, result);
  ASSERT_TRUE(result.failed) << name << " not found: " << result.Report();
  const std::string failure = testing::FailureWithoutLocation(result.failure);
  EXPECT_TRUE(IsStopHang(failure)) << name << ": " << result.Report();
  std::printf("seeded %s found after %llu schedules: %s\n", name,
              static_cast<unsigned long long>(result.executions), failure.c_str());
}

TEST(SchedulerSeededTest, HomeDrainFirstQueueOnly) {
  explore::Options two_preemptions;
  two_preemptions.preemption_bound = 2;
  ExpectStopHangFound(two_preemptions, "home_drain_first_queue_only (two preemptions)");
  explore::Options random;
  random.strategy = explore::Options::Strategy::kRandom;
  random.max_executions = 2000;
  ExpectStopHangFound(random, "home_drain_first_queue_only (random)");
}

}  // namespace
}  // namespace fairsched
