// The coroutine runtime with one seeded bug (tests/explore/seed_bug.py
// join_own_reference_not_handed_over): Finish drops the coroutine's own reference itself
// instead of handing it to the attached JoinHandle, so a join can return before the root
// frame (the parameters) is destroyed. The scratch copy of coro/internal/wait_word.h is
// included first, so its include guard keeps the shipped file out of this translation unit;
// the explorer must report the bug with this exact message.
#include "tests/explore/seeded/join_own_reference_not_handed_over/wait_word.h"  // first: replaces the shipped coro/internal/wait_word.h

#include "gtest/gtest.h"
#include "tests/explore/coro_join_scenarios.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(CoroJoinSeededTest, OwnReferenceNotHandedOver) {
  testing::ExpectSeededBugFound(&coro::testing::PlainThreadGet,
                                "join_own_reference_not_handed_over",
                                "check failed: Get returned before the coroutine's frame was "
                                "destroyed");
}

}  // namespace
}  // namespace fairsched
