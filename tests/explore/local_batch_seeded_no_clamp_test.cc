// The LocalBatch ring with one seeded bug (tests/explore/seed_bug.py local_batch_no_clamp):
// Take does not clamp a stale head (count = tail - head > Capacity), so a taker would read
// `count` slots into its buffer of Capacity. In the scratch copy an explorer check stands
// where that overrun would begin (the harness cannot see inside TakeOver's own buffer), so
// the explorer reports it before anything is written past the array. The copy is included
// first, so its include guard keeps the shipped header out of this translation unit.
//
// Only the C++20 model reaches it: under sequential consistency the owner cannot refill
// the ring while a taker holds a head older than its own CAS (it waits for the take-over in
// progress), so no head is stale by more than Capacity (three preemptions, sleep sets off:
// every schedule passes). Under the C++20 model a taker's head load may read a value older
// than the owner's CAS, and its tail load the owner's refill: found without a preemption.
#include "tests/explore/seeded/local_batch_no_clamp/local_batch.h"  // first: replaces the shipped sched/internal/local_batch.h

#include "gtest/gtest.h"
#include "tests/explore/local_batch_scenario.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(LocalBatchSeededTest, NoClamp) {
  explore::Options options = testing::SeededBugOptions();
  options.memory_model = explore::Options::MemoryModel::kCpp20;
  testing::ExpectSeededBugFound(options, &testing::LocalBatchTakeOvers, "local_batch_no_clamp",
                                "check failed: a take would read more slots than Capacity into "
                                "its buffer (stale head, no clamp)");
}

}  // namespace
}  // namespace fairsched
