// FutexWait / FutexWake of sync/primitives.h for Windows 8 and later: WaitOnAddress and
// WakeByAddressSingle/All (synchronization.lib). Compiled only for Windows (sync/BUILD).
#include <windows.h>

#include <chrono>
#include <cstdint>

#include "sync/primitives.h"

namespace fairsched {

namespace {

// The wait for WaitOnAddress: INFINITE for no deadline, else the time left rounded up to
// whole milliseconds (rounding down would wake before the deadline, and with less than 1 ms
// left would spin on zero-length waits). A deadline already passed gives 0: the call then
// only compares the word, and the caller sees the clock.
DWORD MillisecondsUntil(SteadyClock::time_point deadline) {
  if (deadline == SteadyClock::time_point::max()) return INFINITE;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
  if (left.count() <= 0) return 0;
  // INFINITE (0xFFFFFFFF) would mean "no deadline"; cap just below it (about 49 days: the
  // caller's loop waits again).
  constexpr std::int64_t kLongestFinite = INFINITE - 1;
  return static_cast<DWORD>(left.count() < kLongestFinite ? left.count() : kLongestFinite);
}

}  // namespace

void FutexWait(Atomic<std::uint32_t>* word, std::uint32_t expected,
               SteadyClock::time_point deadline) {
  // Sleeps only while *word still equals `expected`, compared atomically with queueing us
  // against WakeByAddress* on the same address. Its result (woken, timed out) is not needed:
  // the caller re-checks its condition and the clock either way.
  WaitOnAddress(word, &expected, sizeof(expected), MillisecondsUntil(deadline));
}

void FutexWake(Atomic<std::uint32_t>* word, int count) {
  if (count == 1) {
    WakeByAddressSingle(word);
  } else {
    WakeByAddressAll(word);
  }
}

}  // namespace fairsched
