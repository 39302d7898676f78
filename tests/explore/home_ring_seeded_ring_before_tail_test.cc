// HomeRing (queues/home_ring.h) with one seeded bug (tests/explore/seed_bug.py
// home_ring_ring_before_tail): a claimer reads the ring pointer before the tail. A growth in
// between swaps in a new ring and pushes into it; the claim counts those items and reads their
// slots from the old ring, which holds older items there.
// The copy is included first, so its include guard keeps the shipped header out of this
// translation unit.
#include "tests/explore/seeded/home_ring_ring_before_tail/home_ring.h"  // first: replaces the shipped queues/home_ring.h

#include "gtest/gtest.h"
#include "tests/explore/home_ring_scenario.h"
#include "tests/explore/seeded_bug_util.h"

namespace fairsched {
namespace {

TEST(HomeRingSeededTest, RingBeforeTail) {
  explore::Options options = testing::SeededBugOptions();
  options.memory_model = explore::Options::MemoryModel::kSequentiallyConsistent;
  options.preemption_bound = 2;  // one preemption does not reach it (181 schedules pass)
  testing::ExpectSeededBugFound(options, &testing::HomeRingOwnerAndTwoTakers, "home_ring_ring_before_tail",
                                "check failed: a claim did not return consecutive items oldest first");
}

}  // namespace
}  // namespace fairsched
