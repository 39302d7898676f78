// HomeRing (queues/home_ring.h) with one seeded bug (tests/explore/seed_bug.py
// home_ring_tail_relaxed): the owner publishes the tail relaxed. A claimer that reads the
// new tail is not ordered after the item's payload, written before the push: a data race.
// The copy is included first, so its include guard keeps the shipped header out of this
// translation unit.
#include "tests/explore/seeded/home_ring_tail_relaxed/home_ring.h"  // first: replaces the shipped queues/home_ring.h

#include "gtest/gtest.h"
#include "tests/explore/home_ring_scenario.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(HomeRingSeededTest, TailRelaxed) {
  explore::Options options = testing::SeededBugOptions();
  options.memory_model = explore::Options::MemoryModel::kCpp20;
  testing::ExpectSeededBugFound(options, &testing::HomeRingGrowthAndOneTaker, "home_ring_tail_relaxed",
                                "check failed: data race: a read is not ordered after thread 0's write (happens-before)");
}

}  // namespace
}  // namespace fairsched
