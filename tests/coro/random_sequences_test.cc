// Randomized API sequences on the real coroutine runtime, checked against the model of its
// promises (tests/coro/random_sequences.h; docs/testing.md, "Randomized API sequences").
//
// Built twice more in tests/explore/BUILD with a seeded bug (a scratch copy of one coro
// header, forced in first with -include): there FAIRSCHED_RANDOM_SEEDED_BUG names the bug,
// and the test passes only if some run finds it.
// coro/mutex.h first, on purpose: the coroutine headers must not depend on include order
// (coro::Mutex once hid fairsched::Mutex inside coro/combinators.h, which then did not compile).
#include "coro/mutex.h"
#include "coro/combinators.h"

#include <gtest/gtest.h>

#include <cstdio>

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

#else

TEST(CoroRandomSequencesTest, FindsTheSeededBug) {
  const rs::Limits limits =
      rs::LimitsFromEnvironment(kSanitized ? 300 : 1000, kSanitized ? 50 : 18);
  const rs::Summary summary =
      rs::RunMany(limits, "seeded " FAIRSCHED_RANDOM_SEEDED_BUG, crs::RunScenario);
  ASSERT_GT(summary.failed_runs, 0) << "the seeded bug " FAIRSCHED_RANDOM_SEEDED_BUG
                                    << " was not found in " << summary.runs << " runs ("
                                    << summary.seconds << " s)";
  std::printf("seeded %s found by seed %llu after %lld run(s), %.1f s\n",
              FAIRSCHED_RANDOM_SEEDED_BUG,
              static_cast<unsigned long long>(summary.first_failure.seed),
              static_cast<long long>(summary.runs), summary.seconds);
}

#endif

}  // namespace
}  // namespace fairsched
