// Tests for the futex seam of //sync:primitives (FutexWait/FutexWake): futex(2) on Linux,
// WaitOnAddress/WakeByAddress* on Windows (sync/futex_windows.cc; run under Wine by
// `bazel test --config=mingw`, which exercises Wine's implementation of these calls, not
// Windows' own). Every wait has a deadline, so a lost wake fails a test instead of hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "sync/primitives.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Far enough that reaching it means the wake or the compare did not work.
constexpr seconds kNeverReached{10};

// Sleeps on `word` while it holds 0, until it changes or `deadline` passes (the callers'
// loop every FutexWait user writes: returns may be early or spurious).
void WaitWhileZero(Atomic<std::uint32_t>& word, SteadyClock::time_point deadline) {
  // Acquire: pairs with the release store of the thread that changes the word.
  while (word.load(std::memory_order_acquire) == 0 && SteadyClock::now() < deadline) {
    FutexWait(&word, 0u, deadline);
  }
}

TEST(FutexTest, WaitReturnsAtOnceWhenTheWordDiffers) {
  Atomic<std::uint32_t> word{1};
  const auto start = SteadyClock::now();
  FutexWait(&word, 0u, start + kNeverReached);
  EXPECT_LT(SteadyClock::now() - start, seconds(5));
}

TEST(FutexTest, WakeEndsAWait) {
  Atomic<std::uint32_t> word{0};
  const auto start = SteadyClock::now();
  std::thread waiter([&] { WaitWhileZero(word, start + kNeverReached); });
  std::this_thread::sleep_for(milliseconds(20));  // usually asleep by now; either way works
  word.store(1, std::memory_order_release);
  FutexWake(&word, 1);
  waiter.join();
  EXPECT_LT(SteadyClock::now() - start, seconds(5)) << "the wake was lost";
}

TEST(FutexTest, WakeOfSeveralEndsEveryWait) {
  constexpr int kWaiters = 3;
  Atomic<std::uint32_t> word{0};
  const auto start = SteadyClock::now();
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&] { WaitWhileZero(word, start + kNeverReached); });
  }
  std::this_thread::sleep_for(milliseconds(20));
  word.store(1, std::memory_order_release);
  FutexWake(&word, kWaiters);
  for (std::thread& t : waiters) t.join();
  EXPECT_LT(SteadyClock::now() - start, seconds(5)) << "a waiter was not woken";
}

TEST(FutexTest, DeadlineEndsAWaitWithoutSpinning) {
  Atomic<std::uint32_t> word{0};
  // A rest shorter than the millisecond granularity of WaitOnAddress: a wait that rounded it
  // down to 0 would return at once, again and again until the deadline (one such call costs
  // about 0.1 ms under Wine on the CI machine, so about nine calls).
  const auto deadline = SteadyClock::now() + std::chrono::microseconds(900);
  int calls = 0;
  while (SteadyClock::now() < deadline) {
    FutexWait(&word, 0u, deadline);
    ++calls;
  }
  EXPECT_LT(SteadyClock::now() - deadline, seconds(5));
  // One call, give or take a spurious return.
  EXPECT_LE(calls, 3);
}

}  // namespace
}  // namespace fairsched
