// The real scheduler with one seeded bug (tests/explore/seed_bug.py exit_drops_local_batch): on
// exit_ a worker runs its claimed tasks but does not publish its local batch. A lone worker runs
// its local batch in place when its claimed tasks and the ready queue are empty and the front queue
// is empty (ClaimLocalInPlace), so the batch is left behind at exit only when it ends with nothing
// claimed while a post waits in the front queue: the worker took A alone, and C arrived while A
// ran. That needs three preemptions (the owner's, the poster's between its posts, the worker's);
// random schedules (seed 1) find it. The scratch copy of sched/internal/worker_loop.h is included
// first, so its include guard keeps the shipped file out of this translation unit.
// First: replaces the shipped sched/internal/worker_loop.h.
#include "tests/explore/seeded/exit_drops_local_batch/worker_loop.h"

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(SchedulerSeededTest, ExitDropsLocalBatch) {
  explore::Options options;
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = 2000;
  testing::ExpectSeededBugFound(
      options, [] { testing::StopRacesPost<>(testing::StopRace::kHeldPost); },
      "exit_drops_local_batch",
      "check failed: Stop did not return: its WaitEmpty was never woken, with every worker "
      "asleep, after 1 of 2 runs");
}

}  // namespace
}  // namespace fairsched
