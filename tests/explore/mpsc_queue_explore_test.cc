// Interleaving exploration of the scheduler's front queue (queues/mpsc_queue.h): two
// producers and one consumer, every schedule with up to two preemptions (three with
// FAIRSCHED_EXPLORE_DEEP=1). See front_queue_scenario.h for what is checked.
#include "gtest/gtest.h"
#include "queues/mpsc_queue.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/front_queue_scenario.h"

namespace fairsched {
namespace {

using testing::PrintCounts;
using testing::QueueItem;
using testing::TwoProducersOneConsumer;

void ExpectCompletePass(const explore::Options& options, const char* name) {
  const explore::Result result =
      explore::Explore(options, [] { TwoProducersOneConsumer<MpscQueue<QueueItem>>(); });
  PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
  if (options.strategy == explore::Options::Strategy::kDepthFirst) {
    EXPECT_TRUE(result.complete) << result.Report();
  }
}

TEST(MpscQueueExploreTest, TwoProducersOneConsumerTwoPreemptions) {
  explore::Options options;
  options.preemption_bound = 2;
  ExpectCompletePass(options, "mpsc 2 producers x 2 items, bound 2");
}

TEST(MpscQueueExploreTest, TwoProducersOneConsumerRandomSchedules) {
  explore::Options options;
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = 1000;
  ExpectCompletePass(options, "mpsc 2 producers x 2 items, 1000 random");
}

TEST(MpscQueueExploreTest, DeepThreePreemptionsAndNoSleepSets) {
  if (!testing::DeepExploration()) GTEST_SKIP() << "set FAIRSCHED_EXPLORE_DEEP=1";
  explore::Options options;
  options.preemption_bound = 3;
  ExpectCompletePass(options, "mpsc 2 producers x 2 items, bound 3");
  options.preemption_bound = 2;
  options.sleep_sets = false;
  ExpectCompletePass(options, "mpsc 2 producers x 2 items, bound 2, no sleep sets");
}

}  // namespace
}  // namespace fairsched
