// The order check on a scheduler with a seeded bug (tests/explore/seed_bug.py
// claim_in_place_ignores_front: a lone worker claims its local batch to run in place
// without looking at the front queue, so its held posts start ahead of posts waiting there
// that were made before them). tests/explore/BUILD compiles this file with the seeded copy
// of sched/internal/held_posts.h included first. The scenario
// (RunOutsidePostsBesideALoneRePoster) makes the case on every run: A and B wait in the
// front queue, T's re-post is held, the ready queue is empty. The checker must name the
// step where the worker claims T although A (or B) had joined the shared FIFO before T was
// posted.
#include <string>

#include "gtest/gtest.h"
#include "tests/sched/trace_checker.h"
#include "tests/sched/trace_scenarios.h"

namespace fairsched::testing {
namespace {

TEST(TraceSeededClaimTest, ClaimInPlaceAheadOfTheFrontQueueIsRejectedAtTheClaim) {
  const std::vector<SchedEvent> trace = RunOutsidePostsBesideALoneRePoster();
  const TraceVerdict verdict = CheckTrace(trace);
  ASSERT_FALSE(verdict.ok);
  const SchedEvent& bad = trace[verdict.index];
  // Which of A (t2) and B (t3) the message names depends on the run (both had joined
  // before T's re-post; a clang build named B), so either is accepted.
  const std::string head = "step " + std::to_string(bad.seq) + ": thread " +
                           std::to_string(bad.thread) +
                           " kClaimLocal t1: t1 joins the shared FIFO before ";
  ASSERT_EQ(verdict.message.substr(0, head.size()), head) << verdict.message;
  const std::string rest = verdict.message.substr(head.size());
  EXPECT_TRUE(rest.starts_with("t2, which had joined it (by step ") ||
              rest.starts_with("t3, which had joined it (by step "))
      << verdict.message;
  EXPECT_TRUE(verdict.message.ends_with(") before t1 was posted [Order]")) << verdict.message;
}

}  // namespace
}  // namespace fairsched::testing
