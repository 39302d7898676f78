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
// (StopRacesPost in scheduler_scenarios.h), both in the search with two preemptions (sleep
// sets on) and in random schedules (seed 1); which of B and C is lost depends on the
// schedule each search reaches first. On one worker there is only the first queue: the bug
// cannot show.
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

// The two-preemption search first reaches a schedule that loses one of B and C, the random
// one a schedule that loses both.
constexpr char kOneLost[] =
    "check failed: Stop did not return: its WaitEmpty was never woken, with every worker "
    "asleep, after 1 of 2 runs";
constexpr char kBothLost[] =
    "check failed: Stop did not return: its WaitEmpty was never woken, with every worker "
    "asleep, after 0 of 2 runs";

TEST(SchedulerSeededTest, HomeDrainFirstQueueOnly) {
  explore::Options two_preemptions;
  two_preemptions.preemption_bound = 2;
  testing::ExpectSeededBugFound(two_preemptions, &HeldPostOnTwoWorkers,
                                "home_drain_first_queue_only (two preemptions)", kOneLost);
  explore::Options random;
  random.strategy = explore::Options::Strategy::kRandom;
  random.max_executions = 2000;
  testing::ExpectSeededBugFound(random, &HeldPostOnTwoWorkers,
                                "home_drain_first_queue_only (random)", kBothLost);
}

}  // namespace
}  // namespace fairsched
