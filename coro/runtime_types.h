// The small value types every part of the coroutine runtime speaks in: why a wait ended
// (WakeReason), why a coroutine is cancelled (CancelReason), whether Cancel and Stop end a
// wait (WaitMode), how a coroutine is spawned (SpawnOptions), and DeadlineAfter. They sit
// below the wait word, the coroutine state and the public headers (coro/wait.h,
// coro/cancel.h, coro/spawn.h), which all use them.
//
// Contract:
//   - The enumerators and their order are part of the API (a WakeReason is stored in three
//     bits of the wait word, coro/internal/wait_word.h).
//   - ToString returns a static string for every value ("?" for one out of range).
//   - DeadlineAfter(d) is now + d, saturating: a duration too large to add means "no
//     deadline" (kTaskDeadlineInfinite).
#ifndef FAIRSCHED_CORO_RUNTIME_TYPES_H_
#define FAIRSCHED_CORO_RUNTIME_TYPES_H_

#include <chrono>
#include <cstdint>

#include "sched/task.h"

namespace fairsched::coro {

// Why a wait ended.
enum class WakeReason : std::uint8_t {
  kWakeup,     // Waker::Wakeup, CoroutineRef::Wakeup (or a remembered one)
  kSignal,     // Waker::Signal, CoroutineRef::Signal (or a remembered one)
  kDeadline,   // the wait's own deadline passed
  kCancelled,  // Cancel, a parent's cancellation, or the coroutine's cancellation deadline
  kShutdown,   // the scheduler is stopping
};
// Why a coroutine is cancelled (kNone: it is not).
enum class CancelReason : std::uint8_t { kNone, kRequested, kDeadline, kShutdown };

inline const char* ToString(WakeReason reason) {
  switch (reason) {
    case WakeReason::kWakeup:
      return "wakeup";
    case WakeReason::kSignal:
      return "signal";
    case WakeReason::kDeadline:
      return "deadline";
    case WakeReason::kCancelled:
      return "cancelled";
    case WakeReason::kShutdown:
      return "shutdown";
  }
  return "?";
}
inline const char* ToString(CancelReason reason) {
  switch (reason) {
    case CancelReason::kNone:
      return "none";
    case CancelReason::kRequested:
      return "requested";
    case CancelReason::kDeadline:
      return "deadline";
    case CancelReason::kShutdown:
      return "shutdown";
  }
  return "?";
}

// Whether Cancel and Stop end a wait. Uncancellable waits are for waits that must see
// their event (joining a coroutine, taking back a resource handed over): they still end at
// their deadline.
enum class WaitMode : std::uint8_t { kCancellable, kUncancellable };

struct SpawnOptions {
  // Cancel the coroutine (reason kDeadline) at this time. A child's is at most its parent's.
  TaskDeadline deadline = kTaskDeadlineInfinite;
  // When Spawn is called inside a spawned coroutine: make the new one its child (cancelled
  // with it, bounded by its deadline). Ignored elsewhere.
  bool child_of_current = true;
};

// now + duration, saturating: a huge duration means "no deadline".
inline TaskDeadline DeadlineAfter(std::chrono::nanoseconds duration) {
  const TaskDeadline now = TaskClock::now();
  const auto step = std::chrono::duration_cast<TaskClock::duration>(duration);
  return step >= kTaskDeadlineInfinite - now ? kTaskDeadlineInfinite : now + step;
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_RUNTIME_TYPES_H_
