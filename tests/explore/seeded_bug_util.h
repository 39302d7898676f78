// The check of a seeded-bug explore test (a scratch copy of shipped code with one bug,
// written by tests/explore/seed_bug.py): the depth-first search must fail with exactly the
// expected message (a failed check's " (file:line)" suffix aside).
#ifndef FAIRSCHED_TESTS_EXPLORE_SEEDED_BUG_UTIL_H_
#define FAIRSCHED_TESTS_EXPLORE_SEEDED_BUG_UTIL_H_

#include <cstdio>
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"

namespace fairsched::testing {

// The failure without the source location a failed check appends (" (file:line)"; the
// explorer's own messages may end in a parenthesis too, without a line number).
inline std::string FailureWithoutLocation(const std::string& failure) {
  const std::size_t open = failure.rfind(" (");
  if (open == std::string::npos || failure.back() != ')') return failure;
  const std::string inside = failure.substr(open + 2, failure.size() - open - 3);
  const std::size_t colon = inside.rfind(':');
  if (colon == std::string::npos || colon + 1 == inside.size() ||
      inside.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
    return failure;
  }
  return failure.substr(0, open);
}

// Runs the search `options` ask for; it must fail with `expected`.
inline void ExpectSeededBugFound(const explore::Options& options,
                                 const std::function<void()>& scenario, const char* name,
                                 const std::string& expected) {
  const explore::Result result = explore::Explore(options, scenario);
  PrintCounts(name, result);
  ASSERT_TRUE(result.failed) << name << " not found: " << result.Report();
  EXPECT_EQ(FailureWithoutLocation(result.failure), expected) << name << ": " << result.Report();
  std::printf("seeded %s found after %llu schedules: %s\n", name,
              static_cast<unsigned long long>(result.executions), result.failure.c_str());
}

// Seeded bugs are searched with one preemption and without sleep sets by default: with a
// preemption bound, sleep sets may skip a schedule that needs one preemption, keeping only
// an equivalent one that needs two (see sync/explore/README.md); without them every
// schedule within the bound is run, until the first failure.
inline explore::Options SeededBugOptions() {
  explore::Options options;
  options.preemption_bound = 1;
  options.sleep_sets = false;
  return options;
}

inline void ExpectSeededBugFound(const std::function<void()>& scenario, const char* name,
                                 const std::string& expected) {
  ExpectSeededBugFound(SeededBugOptions(), scenario, name, expected);
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_SEEDED_BUG_UTIL_H_
