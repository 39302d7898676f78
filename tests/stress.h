// Shared knobs for the stress tests. Every stress test sizes its work as
// `base * StressScale()`, so CI runs it in seconds and a developer can run it for much
// longer with, for example:
//   ./bazelw test --config=tsan --test_env=FAIRSCHED_STRESS_SCALE=100 //tests/...
#ifndef FAIRSCHED_TESTS_STRESS_H_
#define FAIRSCHED_TESTS_STRESS_H_

#include <cstdint>
#include <cstdlib>

#include "sync/sanitizers.h"

namespace fairsched::testing {

// FAIRSCHED_STRESS_SCALE from the environment (a positive integer), or 1.
inline std::int64_t StressScale() {
  const char* text = std::getenv("FAIRSCHED_STRESS_SCALE");
  if (text == nullptr) return 1;
  const long long value = std::strtoll(text, nullptr, 10);
  return value > 0 ? value : 1;
}

// True in sanitizer builds, which run 5-20x slower: stress tests use smaller bases there.
inline constexpr bool kSanitized =
#if defined(FAIRSCHED_ASAN) || defined(FAIRSCHED_TSAN)
    true;
#else
    false;
#endif

// `base` scaled by the environment, divided by `sanitized_divisor` under a sanitizer.
inline std::int64_t StressIterations(std::int64_t base, std::int64_t sanitized_divisor = 10) {
  const std::int64_t n = base * StressScale();
  return kSanitized ? (n / sanitized_divisor > 0 ? n / sanitized_divisor : 1) : n;
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_STRESS_H_
