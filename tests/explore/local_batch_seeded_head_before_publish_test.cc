// The LocalBatch ring with one seeded bug (tests/explore/seed_bug.py
// local_batch_head_before_publish): a publication moves the head past its items before it
// publishes them, as every take once did (take with one CAS, then
// push). A busy worker's look (LookAndTakeOver) that comes in between finds the batch
// empty and checks the items: out of the batch, not published. On the real scheduler that
// worker would go on starting later tasks for as long as the publisher is descheduled.
// The copy is included first, so its include guard keeps the shipped header out of this
// translation unit.
#include "tests/explore/seeded/local_batch_head_before_publish/local_batch.h"  // first: replaces the shipped sched/internal/local_batch.h

#include "gtest/gtest.h"
#include "tests/explore/local_batch_scenario.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(LocalBatchSeededTest, HeadBeforePublish) {
  testing::ExpectSeededBugFound(testing::SeededBugOptions(),
                                &testing::LocalBatchLookerFindsNothingHidden,
                                "local_batch_head_before_publish", "check failed: data race: a read is not ordered after thread 0's write (happens-before)");
}

}  // namespace
}  // namespace fairsched
