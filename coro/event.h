// coro::Event: a one-shot event for spawned coroutines. Once Set, it stays set; every
// coroutine waiting for it wakes, and every later wait returns at once.
//
// Contract:
//   - `Set()` (any thread, coroutine or not) sets the event and wakes all its waiters.
//     Idempotent: later calls do nothing. Everything written before Set() is visible to a
//     coroutine whose Wait returned kOk, and to a thread that saw IsSet() true.
//   - `co_await Wait(deadline)` (inside a spawned coroutine) returns kOk once the event is
//     set (at once if it already is), else kDeadline when `deadline` passes, kCancelled
//     when the coroutine is cancelled, kShutdown when the scheduler stops. Waiters do not
//     block their worker. A waiter that gives up leaves the list; a Set racing with its
//     deadline or cancellation reports exactly one of the two.
//   - `IsSet()`: whether Set() has been called (acquire; lock-free).
//   - Debug builds abort with a message when an event is destroyed while coroutines wait
//     for it.
#ifndef FAIRSCHED_CORO_EVENT_H_
#define FAIRSCHED_CORO_EVENT_H_

#include <cstdint>

#include "coro/runtime_types.h"
#include "coro/wait_list.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

class Event {
 public:
  Event() = default;
  ~Event() {
    [[maybe_unused]] bool has_waiters;
    {
      MutexLock lock(wait_list_.lock());
      has_waiters = !wait_list_.empty();
    }
    FAIRSCHED_DCHECK(!has_waiters, "a coro::Event is destroyed while coroutines wait for it");
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void Set() {
    // Fast path for repeated Sets. Relaxed: a caller that finds it set publishes nothing.
    if (set_.load(std::memory_order_relaxed)) return;
    MutexLock lock(wait_list_.lock());
    // Release: the setter's writes happen-before the acquire load of a waiter's fast path
    // (IsSet / Wait) that reads true. Under the list lock, so a waiter that checked the
    // flag under that lock and found it clear is already queued and is woken below.
    if (set_.exchange(true, std::memory_order_release)) return;
    while (internal::WaitNode* node = wait_list_.PopFront()) {
      // A waiter that already left (false) needs nothing: the event stays set for it.
      internal::WaitList::WakePopped(node);
    }
  }

  bool IsSet() const { return set_.load(std::memory_order_acquire); }

  // co_await -> WaitStatus (kOk: the event is set). Cancellable.
  internal::ListWaitAwaiter<Event> Wait(TaskDeadline deadline = kTaskDeadlineInfinite) {
    return internal::ListWaitAwaiter<Event>(this, 0, WaitMode::kCancellable, deadline);
  }

 private:
  template <typename Primitive>
  friend class internal::ListWaitAwaiter;

  bool TryAcquireFast(std::uint64_t) { return IsSet(); }
  // List lock held: the flag only turns true under this lock, so "clear" here means Set
  // has not run its wake loop yet and will find our node.
  bool TryAcquireLocked(std::uint64_t) { return IsSet(); }
  void WaiterLeftLocked() {}

  Atomic<bool> set_{false};
  internal::WaitList wait_list_;
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_EVENT_H_
