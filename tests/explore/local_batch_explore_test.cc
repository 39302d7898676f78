// The LocalBatch ring (sched/internal/local_batch.h, issue 31) under the interleaving
// explorer: an owner appending 4 items through a ring of 2 and publishing them
// (TakeAsOwner) while two threads take the batch over (TakeOver); the checks are in
// local_batch_scenario.h (each item taken once, batches oldest first, no take above
// Capacity, publications in append order). Sequentially consistent values with three
// preemptions, and the C++20 model with one: under sequential consistency a taker's head is
// never stale by more than the ring (the owner waits for a take-over in progress before it
// refills), so only the C++20 model reaches Take's clamp (a taker's head load may read a
// value older than the owner's CAS). FAIRSCHED_EXPLORE_DEEP=1: the same without sleep sets,
// and the C++20 model with two preemptions (about 35,000 schedules).
#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/local_batch_scenario.h"

namespace fairsched {
namespace {

void ExpectLocalBatchPasses(int bound, bool sleep_sets, explore::Options::MemoryModel model,
                            const char* name) {
  explore::Options options;
  options.preemption_bound = bound;
  options.sleep_sets = sleep_sets;
  options.memory_model = model;
  const explore::Result result = explore::Explore(options, &testing::LocalBatchTakeOvers);
  testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

TEST(LocalBatchExploreTest, OwnerAndTwoTakers) {
  constexpr auto kSc = explore::Options::MemoryModel::kSequentiallyConsistent;
  ExpectLocalBatchPasses(3, true, kSc, "local batch: owner + 2 takers, capacity 2");
  if (testing::DeepExploration()) {
    ExpectLocalBatchPasses(3, false, kSc,
                           "local batch: owner + 2 takers, capacity 2, sleep sets off");
  }
}

TEST(LocalBatchExploreTest, OwnerAndTwoTakersCpp20) {
  constexpr auto kCpp20 = explore::Options::MemoryModel::kCpp20;
  ExpectLocalBatchPasses(testing::DeepExploration() ? 2 : 1, true, kCpp20,
                         "local batch: owner + 2 takers, capacity 2, C++20 model");
}

}  // namespace
}  // namespace fairsched
