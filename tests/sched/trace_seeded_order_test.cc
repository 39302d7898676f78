// The order check on a scheduler with a seeded bug (tests/explore/seed_bug.py
// idle_post_skips_held_publish: a run-now post from a task that finds a worker idle is
// pushed without publishing its worker's held posts first, so it overtakes them).
// tests/explore/BUILD compiles this file with the seeded copy of
// sched/internal/held_posts.h included first. The scenario (RunIdleBetweenPosts) makes the
// race on every run: X is held, a worker goes idle, Y is posted. The checker must name the
// step where the role receives Y while X, posted before it by the same thread, has not
// joined the shared FIFO.
#include <string>

#include "gtest/gtest.h"
#include "tests/sched/trace_checker.h"
#include "tests/sched/trace_scenarios.h"

namespace fairsched::testing {
namespace {

TEST(TraceSeededOrderTest, IdlePostThatSkipsTheHeldPostsIsRejectedAtItsReceipt) {
  const IdleBetweenPostsRun run = RunIdleBetweenPosts();
  ASSERT_TRUE(run.raced) << "the idle worker's role pass never let the second post happen";
  const TraceVerdict verdict = CheckTrace(run.trace);
  ASSERT_FALSE(verdict.ok);
  const SchedEvent& bad = run.trace[verdict.index];
  const std::string expected = "step " + std::to_string(bad.seq) + ": thread " +
                               std::to_string(bad.thread) +
                               " kReceive t4: t4 joins the shared FIFO before t3, which the same "
                               "thread posted before it [PerPosterOrder]";
  EXPECT_EQ(verdict.message, expected);
}

}  // namespace
}  // namespace fairsched::testing
