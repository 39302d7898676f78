// The real scheduler with one seeded bug (tests/explore/seed_bug.py exit_drops_held_work):
// WorkerMain leaves as soon as it sees exit_, dropping a post its
// task made into the local batch and the ready tasks the lone worker claimed. The scratch
// copy of sched/internal/worker_loop.h is included first, so its include guard keeps the shipped
// file out of this translation unit; the explorer must report the bug with this exact
// message: Stop never returns, which the scenario's watchdog reports (StopRacesPost in
// scheduler_scenarios.h).
//
// The race needs two preemptions: every schedule with two, sleep sets on (without them the
// search takes about 45,000 schedules, 30 to 40 s, for each scenario), and random
// schedules (seed 1), which find it within a few.
// First: replaces the shipped sched/internal/worker_loop.h.
#include "tests/explore/seeded/exit_drops_held_work/worker_loop.h"

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

using testing::StopRace;

// B and C both lost: B in the local batch, C claimed.
constexpr char kHeldPostLost[] =
    "check failed: Stop did not return: its WaitEmpty was never woken, with every worker "
    "asleep, after 0 of 2 runs";
// The second (claimed) task lost.
constexpr char kClaimedLost[] =
    "check failed: Stop did not return: its WaitEmpty was never woken, with every worker "
    "asleep, after 1 of 2 runs";

void HeldPost() { testing::StopRacesPost<>(StopRace::kHeldPost); }
void Claimed() { testing::StopRacesPost<>(StopRace::kClaimed); }

explore::Options TwoPreemptions() {
  explore::Options options;
  options.preemption_bound = 2;
  return options;
}

explore::Options RandomSchedules() {
  explore::Options options;
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = 2000;
  return options;
}

TEST(SchedulerSeededTest, ExitDropsHeldPost) {
  testing::ExpectSeededBugFound(TwoPreemptions(), &HeldPost, "exit_drops_held_work (held post)",
                                kHeldPostLost);
  testing::ExpectSeededBugFound(RandomSchedules(), &HeldPost,
                                "exit_drops_held_work (held post, random)", kHeldPostLost);
}

TEST(SchedulerSeededTest, ExitDropsClaimedTasks) {
  testing::ExpectSeededBugFound(TwoPreemptions(), &Claimed, "exit_drops_held_work (claimed)",
                                kClaimedLost);
  testing::ExpectSeededBugFound(RandomSchedules(), &Claimed,
                                "exit_drops_held_work (claimed, random)", kClaimedLost);
}

// Under PostOrder::kHome a lone worker claims what it takes from its own queue, and a
// worker that leaves at exit_ with claimed tasks drops them the same way (its home queue
// is drained by Stop; its claims are not).
void ClaimedUnderHomeQueues() {
  testing::StopRacesPost<>(StopRace::kClaimed, PostOrder::kHome, 1);
}

TEST(SchedulerSeededTest, ExitDropsClaimedTasksUnderHomeQueues) {
  testing::ExpectSeededBugFound(TwoPreemptions(), &ClaimedUnderHomeQueues,
                                "exit_drops_held_work (claimed, home queues)", kClaimedLost);
  testing::ExpectSeededBugFound(RandomSchedules(), &ClaimedUnderHomeQueues,
                                "exit_drops_held_work (claimed, home queues, random)",
                                kClaimedLost);
}

}  // namespace
}  // namespace fairsched
