// HomeRing (queues/home_ring.h) with one seeded bug (tests/explore/seed_bug.py
// home_ring_grow_relaxed): a growth swaps the ring pointer relaxed. A claimer that reads the
// new ring may read a slot's value from before the copy into it: a slot with no item.
// The copy is included first, so its include guard keeps the shipped header out of this
// translation unit.
#include "tests/explore/seeded/home_ring_grow_relaxed/home_ring.h"  // first: replaces the shipped queues/home_ring.h

#include "gtest/gtest.h"
#include "tests/explore/home_ring_scenario.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(HomeRingSeededTest, GrowRelaxed) {
  explore::Options options = testing::SeededBugOptions();
  options.memory_model = explore::Options::MemoryModel::kCpp20;
  testing::ExpectSeededBugFound(options, &testing::HomeRingGrowthAndOneTaker, "home_ring_grow_relaxed",
                                "check failed: a claim returned a slot that never held an item");
}

}  // namespace
}  // namespace fairsched
