// Shared helpers of the explorer tests: how deep to search, and one line of schedule counts
// per exploration (the numbers sync/explore/README.md quotes come from these lines).
#ifndef FAIRSCHED_TESTS_EXPLORE_EXPLORE_TEST_UTIL_H_
#define FAIRSCHED_TESTS_EXPLORE_EXPLORE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sync/primitives.h"

namespace fairsched::testing {

// FAIRSCHED_EXPLORE_DEEP=1 turns on the slow searches (three preemptions, or two without
// sleep sets): tens of thousands of schedules, minutes in a sanitizer build, so not in CI.
inline bool DeepExploration() {
  const char* text = std::getenv("FAIRSCHED_EXPLORE_DEEP");
  return text != nullptr && std::string(text) == "1";
}

inline void PrintCounts(const char* name, const explore::Result& result) {
  std::printf("%s: %llu schedules (%llu cut short as covered), up to %llu steps, %s\n", name,
              static_cast<unsigned long long>(result.executions),
              static_cast<unsigned long long>(result.pruned),
              static_cast<unsigned long long>(result.max_depth),
              result.failed     ? "FAILED"
              : result.complete ? "complete"
                                : "cut short");
  std::fflush(stdout);
}

// Explores `scenario` depth-first with the given preemption bound (the other options at their
// defaults) and expects the search to finish without a failure.
inline void ExpectPass(void (*scenario)(), int bound, const char* name) {
  explore::Options options;
  options.preemption_bound = bound;
  const explore::Result result = explore::Explore(options, scenario);
  PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

// Explores `scenario` in 3,000 random schedules (a fixed seed) under the C++20 memory model
// and expects none to fail.
inline void ExpectPassUnderCpp20(void (*scenario)(), const char* name) {
  explore::Options options;
  options.memory_model = explore::Options::MemoryModel::kCpp20;
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = 3000;
  const explore::Result result = explore::Explore(options, scenario);
  PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_EXPLORE_TEST_UTIL_H_
