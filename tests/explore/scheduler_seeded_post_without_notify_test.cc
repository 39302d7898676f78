// The real scheduler with one seeded bug (tests/explore/seed_bug.py post_without_notify): a post
// into an empty front queue does not notify the role holder. The scratch copy of
// sched/internal/idle.h is included first, so its include guard keeps the shipped file out of this
// translation unit; the explorer must report the bug with this exact message.
// First: replaces the shipped sched/internal/idle.h.
#include "tests/explore/seeded/post_without_notify/idle.h"

#include "gtest/gtest.h"
#include "tests/explore/scheduler_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(SchedulerSeededTest, PostWithoutNotify) {
  testing::ExpectSeededBugFound(
      [] { testing::PostFromOutside<>(1); },
      "post_without_notify",
      "check failed: WaitEmpty timed out with every worker asleep, "
      "after 1 of 2 runs");
}

}  // namespace
}  // namespace fairsched
