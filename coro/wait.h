// Waiting inside a spawned coroutine: the wait primitive that coroutine mutexes, events,
// semaphores, task lists and IO operations are built on (PrepareWait, Waker, WaitWoken),
// and the ready-made waits (Yield, SleepFor/SleepUntil, WaitSignal).
//
// Contract:
//   - Every awaitable here, and PrepareWait, is for spawned coroutines only (coro/spawn.h;
//     debug builds check it). Awaiting one only records what the coroutine waits for; its
//     own scheduler task resumes it later, on whichever worker runs that task (thread-locals
//     read across a co_await may change).
//   - The wait primitive:
//       1. `Waker waker = PrepareWait(mode);` opens a new wait: it bumps the coroutine's
//          epoch and returns a waker bound to (coroutine, epoch).
//       2. Publish the waker wherever the event source finds it (a mutex's waiter list, ...).
//       3. `WakeReason why = co_await WaitWoken(deadline);` suspends until the wait is closed.
//     Exactly one party closes each wait: the first waker (Wakeup -> kWakeup, Signal ->
//     kSignal), Cancel (kCancelled; cancellable waits only), the deadline (kDeadline; or
//     kCancelled when the coroutine's own cancellation deadline came first), or Stop
//     (kShutdown; cancellable waits only). A waker that fires between steps 1 and 3 is not
//     lost: WaitWoken then returns at once. Everything the waker wrote before waking is
//     visible to the coroutine after it. Every PrepareWait is followed by its WaitWoken
//     before the next wait of the same coroutine.
//   - Wait identity (epochs): a Waker names the epoch it was prepared for. A waker from an
//     earlier wait (stale: that wait timed out or was cancelled, and the coroutine now
//     waits for something else) does nothing and returns false; it cannot end a later wait.
//     Each wait resumes the coroutine exactly once.
//   - WakeReason, WaitMode and DeadlineAfter are in coro/runtime_types.h.
#ifndef FAIRSCHED_CORO_WAIT_H_
#define FAIRSCHED_CORO_WAIT_H_

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <utility>

#include "coro/internal/coroutine_state.h"
#include "coro/runtime_types.h"
#include "sched/io_backend.h"
#include "sched/task.h"

namespace fairsched::coro {

// A reference to a wait of a coroutine (see "The wait primitive" above). Copyable; thread-safe;
// each copy keeps the coroutine's state alive. Empty when default-constructed.
class Waker {
 public:
  Waker() = default;
  Waker(const Waker& other) : state_(other.state_), epoch_(other.epoch_) {
    if (state_ != nullptr) state_->Ref();
  }
  Waker(Waker&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)), epoch_(other.epoch_) {}
  Waker& operator=(Waker other) noexcept {
    std::swap(state_, other.state_);
    std::swap(epoch_, other.epoch_);
    return *this;
  }
  ~Waker() {
    if (state_ != nullptr) state_->Unref();
  }

  // Ends the wait with kWakeup / kSignal. True if this call ended it; false if the wait
  // already ended (another waker, its deadline, Cancel, Stop) or a later wait has begun.
  // Everything the caller wrote before is visible to the coroutine when it wakes.
  bool Wakeup() const { return Wake(WakeReason::kWakeup); }
  bool Signal() const { return Wake(WakeReason::kSignal); }
  // Wakeup from inside an IO backend's delivery (an IoOpHandler, io/io_op.h, called on the
  // sched-role holder with the backend's `sink`): the same, but a coroutine of the sink's
  // scheduler goes straight to the ready queue instead of through the front queue.
  bool Wakeup(IoReadySink& sink) const {
    FAIRSCHED_DCHECK(state_ != nullptr, "Wakeup of an empty Waker");
    return state_ != nullptr && state_->WakeEpochFromRole(epoch_, WakeReason::kWakeup, sink);
  }

  explicit operator bool() const { return state_ != nullptr; }
  std::uint64_t epoch() const { return epoch_; }

 private:
  friend Waker PrepareWait(WaitMode mode);
  Waker(internal::CoroutineState* state, std::uint64_t epoch) : state_(state), epoch_(epoch) {
    state_->Ref();
  }
  bool Wake(WakeReason reason) const {
    FAIRSCHED_DCHECK(state_ != nullptr, "Wakeup/Signal of an empty Waker");
    return state_ != nullptr && state_->WakeEpoch(epoch_, reason);
  }

  internal::CoroutineState* state_ = nullptr;
  std::uint64_t epoch_ = 0;
};

// The low-level wait primitive, step 1 (inside a spawned coroutine): opens a new wait and
// returns its waker. Must be followed by `co_await WaitWoken(...)` before the next
// PrepareWait (or any other runtime wait).
[[nodiscard]] inline Waker PrepareWait(WaitMode mode = WaitMode::kCancellable) {
  internal::CoroutineState* state =
      internal::RequireCurrentState("PrepareWait outside a spawned coroutine");
  return Waker(state, state->OpenWait(mode, /*external=*/false));
}

namespace internal {
// Awaiter for a prepared wait; with `open_external` it first opens an external wait itself
// (SleepUntil, WaitSignal).
class WaitAwaiter {
 public:
  WaitAwaiter(TaskDeadline deadline, bool open_external)
      : deadline_(deadline), open_external_(open_external) {}
  bool await_ready() {
    state_ = RequireCurrentState("a coro wait outside a spawned coroutine");
    if (open_external_) state_->OpenWait(WaitMode::kCancellable, /*external=*/true);
    reason_is_set_ = state_->TakeClosedWait(&reason_);
    return reason_is_set_;
  }
  void await_suspend(std::coroutine_handle<> handle) { state_->SuspendForWait(handle, deadline_); }
  WakeReason await_resume() { return reason_is_set_ ? reason_ : state_->LastWakeReason(); }

 private:
  TaskDeadline deadline_;
  bool open_external_;
  bool reason_is_set_ = false;
  CoroutineState* state_ = nullptr;
  WakeReason reason_ = WakeReason::kWakeup;
};
}  // namespace internal

// The low-level wait primitive, step 2: suspends until the prepared wait ends (see "The wait
// primitive") or `deadline` passes; returns why.
inline internal::WaitAwaiter WaitWoken(TaskDeadline deadline = kTaskDeadlineInfinite) {
  return internal::WaitAwaiter(deadline, /*open_external=*/false);
}

// Re-posts the coroutine: it continues after the tasks already in the ready queue.
inline auto Yield() {
  struct Awaiter {
    bool await_ready() noexcept { return false; }
    void await_suspend(std::coroutine_handle<> handle) {
      internal::RequireCurrentState("Yield outside a spawned coroutine")->SuspendForYield(handle);
    }
    void await_resume() noexcept {}
  };
  return Awaiter{};
}

// Waits until `deadline` (kDeadline), or until CoroutineRef::Wakeup/Signal (kWakeup /
// kSignal; one that came earlier and was not consumed ends it at once), Cancel (kCancelled)
// or Stop (kShutdown). SleepUntil/SleepFor and WaitSignal are the same wait; the names say
// which outcome the caller expects.
inline internal::WaitAwaiter WaitSignal(TaskDeadline deadline = kTaskDeadlineInfinite) {
  return internal::WaitAwaiter(deadline, /*open_external=*/true);
}
inline internal::WaitAwaiter SleepUntil(TaskDeadline deadline) { return WaitSignal(deadline); }
inline internal::WaitAwaiter SleepFor(std::chrono::nanoseconds duration) {
  return WaitSignal(DeadlineAfter(duration));
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_WAIT_H_
