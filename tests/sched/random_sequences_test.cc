// Randomized API sequences on the real scheduler, checked against the model of its promises
// (tests/sched/random_sequences.h; docs/testing.md, "Randomized API sequences").
//
// Built twice more in tests/explore/BUILD with a seeded bug (a scratch copy of one scheduler
// header, forced in first with -include): there FAIRSCHED_RANDOM_SEEDED_BUG names the bug,
// and the test passes only if some run finds it.
#include <gtest/gtest.h>

#include "tests/sched/random_sequences.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using testing::kSanitized;
namespace rs = testing::random_sequences;

#ifndef FAIRSCHED_RANDOM_SEEDED_BUG

TEST(RandomSequencesTest, RealSchedulerKeepsItsPromises) {
  // CI size: runs from seed 1, at most 12 s (40 s under a sanitizer).
  const rs::Limits limits = rs::LimitsFromEnvironment(kSanitized ? 60 : 300, kSanitized ? 40 : 12);
  const rs::Summary summary = rs::RunMany(limits, "real scheduler");
  EXPECT_EQ(summary.failed_runs, 0) << "first failing seed " << summary.first_failure.seed
                                    << " (" << summary.first_failure.config << "):\n"
                                    << summary.first_failure.failure;
  EXPECT_GT(summary.runs, 0);
}

// The same scenarios with the schedulers that would run PostOrder::kBatched under
// PostOrder::kHome (the home queues' bound, exactly once, Stop, timers, wakeups).
TEST(RandomSequencesTest, RealSchedulerKeepsItsPromisesUnderHomeQueues) {
  rs::Limits limits = rs::LimitsFromEnvironment(kSanitized ? 60 : 300, kSanitized ? 40 : 12);
  limits.home_queues = true;
  const rs::Summary summary = rs::RunMany(limits, "real scheduler, home queues");
  EXPECT_EQ(summary.failed_runs, 0) << "first failing seed " << summary.first_failure.seed
                                    << " (" << summary.first_failure.config << "):\n"
                                    << summary.first_failure.failure;
  EXPECT_GT(summary.runs, 0);
}

#else

}  // namespace
}  // namespace fairsched

// A seeded bug may lose a task for good (the Stop race drops a one-shot with its worker's
// local batch): that leak is the bug's, found already, so LeakSanitizer stays quiet at exit.
extern "C" int __lsan_is_turned_off() { return 1; }

namespace fairsched {
namespace {

TEST(RandomSequencesTest, FindsTheSeededBug) {
  // A Stop that never returns is this bug's usual symptom: 2 s without progress calls it.
  const rs::Limits limits = rs::LimitsFromEnvironment(kSanitized ? 300 : 1000, kSanitized ? 50 : 18,
                                                      std::chrono::milliseconds(2000));
  const rs::Summary summary = rs::RunMany(limits, "seeded " FAIRSCHED_RANDOM_SEEDED_BUG);
  ASSERT_GT(summary.failed_runs, 0) << "the seeded bug " FAIRSCHED_RANDOM_SEEDED_BUG
                                    << " was not found in " << summary.runs << " runs ("
                                    << summary.seconds << " s)";
  std::printf("seeded %s found by seed %llu after %lld run(s), %.1f s%s\n",
              FAIRSCHED_RANDOM_SEEDED_BUG,
              static_cast<unsigned long long>(summary.first_failure.seed),
              static_cast<long long>(summary.runs), summary.seconds,
              summary.hung ? " (a Stop that did not return)" : "");
}

#endif

}  // namespace
}  // namespace fairsched
