// The wait word with one seeded bug (tests/explore/seed_bug.py
// wait_word_hand_over_ignores_detach): Finish's hand-over does not look for kDetached, so
// when the JoinHandle let go first (dropping only its own reference) the coroutine's own
// reference is "handed over" to nobody and the state is never destroyed. The copy is
// included first, so its include guard keeps the shipped header out of this translation
// unit.
#include "tests/explore/seeded/wait_word_hand_over_ignores_detach/wait_word.h"  // first: replaces the shipped coro/internal/wait_word.h

#include "gtest/gtest.h"
#include "tests/explore/seeded_bug_util.h"
#include "tests/explore/wait_word_scenario.h"

namespace fairsched {
namespace {

TEST(WaitWordSeededTest, HandOverIgnoresDetach) {
  testing::ExpectSeededBugFound([] { coro::testing::FinishRacesHandle(false); },
                                "wait_word_hand_over_ignores_detach",
                                "check failed: the state was destroyed 0 times");
}

}  // namespace
}  // namespace fairsched
