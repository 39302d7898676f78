// The LocalBatch ring with one seeded bug (tests/explore/seed_bug.py
// local_batch_owner_does_not_wait): TakeAsOwner does not wait for a take-over in progress,
// so the owner can publish an item while a taker still holds earlier ones it has taken and
// not yet published. The scenario's per-owner order check must report it. The copy is
// included first, so its include guard keeps the shipped header out of this translation
// unit. Two preemptions (the taker is switched away after its CAS, and back after the
// owner's publication), sleep sets off.
#include "tests/explore/seeded/local_batch_owner_does_not_wait/local_batch.h"  // first: replaces the shipped sched/internal/local_batch.h

#include "gtest/gtest.h"
#include "tests/explore/local_batch_scenario.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(LocalBatchSeededTest, OwnerDoesNotWait) {
  explore::Options options = testing::SeededBugOptions();
  options.preemption_bound = 2;
  testing::ExpectSeededBugFound(options, &testing::LocalBatchTakeOvers,
                                "local_batch_owner_does_not_wait",
                                "check failed: per-owner order: item 2 came out in publication 0, "
                                "before item 1 (appended earlier) in publication 1");
}

}  // namespace
}  // namespace fairsched
