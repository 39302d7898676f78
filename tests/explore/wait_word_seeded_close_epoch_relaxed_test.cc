// The wait word with one seeded bug (tests/explore/seed_bug.py
// wait_word_close_epoch_relaxed): a Waker closes the wait with a relaxed CAS instead of a
// release one, so the coroutine that sees the wait closed reads what the waker wrote
// before waking without a happens-before edge: reported as a data race. The copy is
// included first, so its include guard keeps the shipped header out of this translation
// unit.
#include "tests/explore/seeded/wait_word_close_epoch_relaxed/wait_word.h"  // first: replaces the shipped coro/internal/wait_word.h

#include "gtest/gtest.h"
#include "tests/explore/seeded_bug_util.h"
#include "tests/explore/wait_word_scenario.h"

namespace fairsched {
namespace {

TEST(WaitWordSeededTest, CloseEpochRelaxed) {
  testing::ExpectSeededBugFound([] { coro::testing::WakeRacesSuspendAndCancel(false); },
                                "wait_word_close_epoch_relaxed",
                                "check failed: data race: a read is not ordered after thread "
                                "2's write (happens-before)");
}

}  // namespace
}  // namespace fairsched
