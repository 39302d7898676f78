// Randomized API sequences on the real coroutine runtime, checked against the model of its
// promises (tests/coro/random_sequences.h; docs/testing.md, "Randomized API sequences").
//
// Built twice more in tests/explore/BUILD with a seeded bug (a scratch copy of one coro
// header, forced in first with -include): there FAIRSCHED_RANDOM_SEEDED_BUG names the bug,
// and the test passes only if some run finds it.

// coro/mutex.h first, on purpose: once it has declared coro::Mutex, a plain `Mutex` written
// in namespace fairsched::coro means that class, so this order checks that
// coro/combinators.h names the fairsched::Mutex it means.
#include "coro/mutex.h"
#include "coro/combinators.h"

#include <gtest/gtest.h>

#include "tests/coro/random_sequences.h"
#include "tests/sched/random_sequences.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using testing::kSanitized;
namespace crs = testing::coro_random_sequences;
namespace rs = testing::random_sequences;

#ifndef FAIRSCHED_RANDOM_SEEDED_BUG

TEST(CoroRandomSequencesTest, RuntimeKeepsItsPromises) {
  // CI size: runs from seed 1, at most 10 s (40 s under a sanitizer).
  const rs::Limits limits = rs::LimitsFromEnvironment(kSanitized ? 150 : 400, kSanitized ? 40 : 10);
  const rs::Summary summary = rs::RunMany(limits, "coroutines", crs::RunScenario);
  EXPECT_EQ(summary.failed_runs, 0) << "first failing seed " << summary.first_failure.seed
                                    << " (" << summary.first_failure.config << "):\n"
                                    << summary.first_failure.failure;
  EXPECT_GT(summary.runs, 0);
}

// The same scenarios on a scheduler under PostOrder::kHome.
TEST(CoroRandomSequencesTest, RuntimeKeepsItsPromisesUnderHomeQueues) {
  rs::Limits limits = rs::LimitsFromEnvironment(kSanitized ? 150 : 400, kSanitized ? 40 : 10);
  limits.home_queues = true;
  const rs::Summary summary = rs::RunMany(limits, "coroutines, home queues", crs::RunScenario);
  EXPECT_EQ(summary.failed_runs, 0) << "first failing seed " << summary.first_failure.seed
                                    << " (" << summary.first_failure.config << "):\n"
                                    << summary.first_failure.failure;
  EXPECT_GT(summary.runs, 0);
}

#else

TEST(CoroRandomSequencesTest, FindsTheSeededBug) {
  const rs::Limits limits =
      rs::LimitsFromEnvironment(kSanitized ? 300 : 1000, kSanitized ? 50 : 18);
  const rs::Summary summary =
      rs::RunMany(limits, "seeded " FAIRSCHED_RANDOM_SEEDED_BUG, crs::RunScenario);
  ASSERT_GT(summary.failed_runs, 0) << "the seeded bug " FAIRSCHED_RANDOM_SEEDED_BUG
                                    << " was not found in " << summary.runs << " runs ("
                                    << summary.seconds << " s)";
  // RunMany has printed the finding seed and how many runs it took.
}

#endif

}  // namespace
}  // namespace fairsched
