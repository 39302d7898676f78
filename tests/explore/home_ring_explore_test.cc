// HomeRing (queues/home_ring.h) under the interleaving explorer; the scenario and its checks
// are in home_ring_scenario.h: an owner pushing four items through a ring of two (slot reuse
// and growth) and popping, against a taker of half the ring and a taker of up to three items, with
// sequentially consistent values and three preemptions; and three pushes through two slots
// (a growth) against one taker under the C++20 model with one preemption (two with
// FAIRSCHED_EXPLORE_DEEP=1).
#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/home_ring_scenario.h"

namespace fairsched {
namespace {

void ExpectHomeRingPasses(void (*scenario)(), int bound, explore::Options::MemoryModel model,
                          const char* name) {
  explore::Options options;
  options.preemption_bound = bound;
  options.memory_model = model;
  const explore::Result result = explore::Explore(options, scenario);
  testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

TEST(HomeRingExploreTest, OwnerAndTwoTakersSequentiallyConsistent) {
  ExpectHomeRingPasses(&testing::HomeRingOwnerAndTwoTakers, 3,
                       explore::Options::MemoryModel::kSequentiallyConsistent,
                       "home ring: owner + half taker + taker of 3, 2 slots");
}

TEST(HomeRingExploreTest, GrowthAndOneTakerCpp20) {
  ExpectHomeRingPasses(&testing::HomeRingGrowthAndOneTaker, testing::DeepExploration() ? 2 : 1,
                       explore::Options::MemoryModel::kCpp20,
                       "home ring: 3 pushes through 2 slots + half taker, C++20 model");
}

}  // namespace
}  // namespace fairsched
