// The LocalBatch ring with one seeded bug (tests/explore/seed_bug.py
// local_batch_owner_skips_claim): PublishAsOwner publishes without the claim, so the owner
// and a take-over read the same items and both publish them. The explorer reports it as
// the two publications' unordered writes to one item's record (a data race, which is how
// "published twice" shows when nothing orders the two). The copy is included first, so
// its include guard keeps the shipped header out of this translation unit.
#include "tests/explore/seeded/local_batch_owner_skips_claim/local_batch.h"  // first: replaces the shipped sched/internal/local_batch.h

#include "gtest/gtest.h"
#include "tests/explore/local_batch_scenario.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(LocalBatchSeededTest, OwnerSkipsClaim) {
  explore::Options options = testing::SeededBugOptions();
  options.preemption_bound = 2;
  testing::ExpectSeededBugFound(options, &testing::LocalBatchTakeOvers,
                                "local_batch_owner_skips_claim",
                                "check failed: data race: a read is not ordered after thread 0's "
                                "write (happens-before)");
}

}  // namespace
}  // namespace fairsched
