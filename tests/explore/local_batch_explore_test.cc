// The LocalBatch ring (sched/internal/local_batch.h) under the interleaving
// explorer; the scenarios and checks are in local_batch_scenario.h:
//   - OwnerAndTwoTakers: an owner appending 4 items through a ring of 2 and publishing
//     them (PublishAsOwner) while two idle threads try to take the batch over
//     (TryTakeOver): each item published once, batches oldest first, no publication above
//     Capacity, publications in append order;
//   - LookerFindsNothingHidden: the same checks, plus a busy worker's look (TakeOver when
//     the batch does not look empty) that must find every item appended before it
//     published: the order bound's premise, that a publication never hides posts.
// Sequentially consistent values with three preemptions, and the C++20 model with one.
// FAIRSCHED_EXPLORE_DEEP=1: the same without sleep sets, and the C++20 model with two
// preemptions.
#include <string>

#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/local_batch_scenario.h"

namespace fairsched {
namespace {

void ExpectLocalBatchPasses(void (*scenario)(), int bound, bool sleep_sets,
                            explore::Options::MemoryModel model, const char* name) {
  explore::Options options;
  options.preemption_bound = bound;
  options.sleep_sets = sleep_sets;
  options.memory_model = model;
  const explore::Result result = explore::Explore(options, scenario);
  testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

void ExpectScenarioPasses(void (*scenario)(), const std::string& name) {
  constexpr auto kSc = explore::Options::MemoryModel::kSequentiallyConsistent;
  constexpr auto kCpp20 = explore::Options::MemoryModel::kCpp20;
  ExpectLocalBatchPasses(scenario, 3, true, kSc, name.c_str());
  if (testing::DeepExploration()) {
    ExpectLocalBatchPasses(scenario, 3, false, kSc, (name + ", sleep sets off").c_str());
  }
  ExpectLocalBatchPasses(scenario, testing::DeepExploration() ? 2 : 1, true, kCpp20,
                         (name + ", C++20 model").c_str());
}

TEST(LocalBatchExploreTest, OwnerAndTwoTakers) {
  ExpectScenarioPasses(&testing::LocalBatchTakeOvers,
                       "local batch: owner + 2 idle takers, capacity 2");
}

TEST(LocalBatchExploreTest, LookerFindsNothingHidden) {
  ExpectScenarioPasses(&testing::LocalBatchLookerFindsNothingHidden,
                       "local batch: owner + idle taker + busy looker, capacity 2");
}

}  // namespace
}  // namespace fairsched
