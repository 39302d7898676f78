// coro::Semaphore: a counting semaphore for spawned coroutines. Waiters do not block their
// worker, are served in strict FIFO order, and released permits go straight to them.
//
// Contract:
//   - The semaphore holds a count of permits (initially `initial`, at most kMaxCount).
//   - `co_await Acquire(n)` (n >= 1) returns once the coroutine has taken n permits. Like
//     Mutex::Lock it cannot fail: neither Cancel nor Stop ends it.
//   - `co_await AcquireUntil(deadline, n)` waits at most until `deadline`, and gives up when
//     the coroutine is cancelled or the scheduler stops: kOk (took n), kDeadline,
//     kCancelled or kShutdown (took none). Free permits are taken at once even by a
//     cancelled coroutine; a deadline already passed makes it a TryAcquire.
//   - `TryAcquire(n)` takes n permits if they are free and nobody waits; never waits.
//   - `Release(n)` (n >= 1; any thread, coroutine or not) adds n permits. Strict FIFO, no
//     barging: while coroutines wait, released permits go to the oldest waiter first, and
//     nobody (not even TryAcquire of a smaller amount) takes permits ahead of it: a waiter
//     for 3 permits holds back a later waiter for 1 until it got its 3. A waiter that timed
//     out or was cancelled leaves the queue, and permits being handed to it go to the next.
//   - Debug builds abort with a message on: n < 1, an initial count outside [0, kMaxCount],
//     more than kMaxCount permits, destroying a semaphore with waiters. Acquire outside a spawned coroutine aborts in debug builds.
//   - Cost: TryAcquire, an uncontended Acquire and a Release without waiters are one
//     compare-and-swap loop on one word each and take no lock.
#ifndef FAIRSCHED_CORO_SEMAPHORE_H_
#define FAIRSCHED_CORO_SEMAPHORE_H_

#include <cstdint>

#include "coro/runtime_types.h"
#include "coro/wait_list.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

class Semaphore {
 public:
  static constexpr std::int64_t kMaxCount = std::int64_t{1} << 62;

  explicit Semaphore(std::int64_t initial = 0) : state_(Encode(CheckedCount(initial))) {}
  ~Semaphore() {
    // Relaxed: whoever destroys the semaphore must already be ordered after its last user.
    FAIRSCHED_DCHECK((state_.load(std::memory_order_relaxed) & kHasWaiters) == 0,
                     "a coro::Semaphore is destroyed while coroutines wait for it");
  }
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // co_await -> void: the coroutine took n permits. Uncancellable.
  auto Acquire(std::int64_t n = 1) {
    struct Awaiter {
      internal::ListWaitAwaiter<Semaphore> wait;
      bool await_ready() { return wait.await_ready(); }
      void await_suspend(std::coroutine_handle<> handle) { wait.await_suspend(handle); }
      void await_resume() {
        [[maybe_unused]] const WaitStatus status = wait.await_resume();
        FAIRSCHED_DCHECK(status == WaitStatus::kOk, "an uncancellable Acquire ended without it");
      }
    };
    return Awaiter{{this, CheckedRequest(n), WaitMode::kUncancellable, kTaskDeadlineInfinite}};
  }

  // co_await -> WaitStatus: kOk if the coroutine took n permits.
  internal::ListWaitAwaiter<Semaphore> AcquireUntil(TaskDeadline deadline, std::int64_t n = 1) {
    return internal::ListWaitAwaiter<Semaphore>(this, CheckedRequest(n), WaitMode::kCancellable,
                                                deadline);
  }

  bool TryAcquire(std::int64_t n = 1) { return TryAcquireFast(CheckedRequest(n)); }

  void Release(std::int64_t n = 1) {
    const std::uint64_t add = CheckedRequest(n);
    for (;;) {
      // Relaxed: a first guess for the CAS loop (which orders what it needs).
      std::uint64_t state = state_.load(std::memory_order_relaxed);
      while ((state & kHasWaiters) == 0) {
        FAIRSCHED_DCHECK(CountOf(state) + add <= static_cast<std::uint64_t>(kMaxCount),
                         "coro::Semaphore::Release: more than kMaxCount permits");
        // Release: what we did before releasing happens-before the acquirer's use of the
        // permits (its acquire CAS reads this value or a later one of the release sequence).
        if (state_.compare_exchange_weak(state, state + Encode(add), std::memory_order_release,
                                         std::memory_order_relaxed)) {
          return;
        }
      }
      MutexLock lock(wait_list_.lock());
      // Acquire: permits added by lock-free Releases (release CASes) may be handed to a
      // waiter below, whose wakeup must then carry their releasers' writes too.
      state = state_.load(std::memory_order_acquire);
      // With kHasWaiters set only list-lock holders change state_. If the last waiter left
      // while we came here, the bit is clear again: back to the lock-free path.
      if ((state & kHasWaiters) != 0) {
        GrantLocked(CountOf(state) + add);
        return;
      }
    }
  }

  // The free permits (a snapshot for tests and monitoring; relaxed: it orders nothing).
  std::int64_t Available() const {
    return static_cast<std::int64_t>(CountOf(state_.load(std::memory_order_relaxed)));
  }

 private:
  template <typename Primitive>
  friend class internal::ListWaitAwaiter;

  // state_: count << 1 | kHasWaiters. While kHasWaiters is set the wait list may be
  // non-empty and only holders of the list lock change state_ (every lock-free CAS expects
  // the bit clear), so the slow paths read and write it plainly under that lock.
  static constexpr std::uint64_t kHasWaiters = 1;
  static std::uint64_t Encode(std::uint64_t count) { return count << 1; }
  static std::uint64_t CountOf(std::uint64_t state) { return state >> 1; }
  static std::uint64_t CheckedCount(std::int64_t count) {
    FAIRSCHED_DCHECK(count >= 0 && count <= kMaxCount,
                     "coro::Semaphore: count outside [0, kMaxCount]");
    return static_cast<std::uint64_t>(count);
  }
  static std::uint64_t CheckedRequest(std::int64_t n) {
    FAIRSCHED_DCHECK(n >= 1 && n <= kMaxCount, "coro::Semaphore: n must be in [1, kMaxCount]");
    return static_cast<std::uint64_t>(n);
  }

  // Takes n permits if they are free and nobody waits. Acquire: the releaser's writes
  // happen-before our use of the permits.
  bool TryAcquireFast(std::uint64_t n) {
    std::uint64_t state = state_.load(std::memory_order_relaxed);  // a first guess, as above
    while ((state & kHasWaiters) == 0 && CountOf(state) >= n) {
      if (state_.compare_exchange_weak(state, state - Encode(n), std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  // List lock held: take the permits, or set kHasWaiters before queueing (FIFO: with the
  // bit already set somebody is queued ahead of us, so we queue even if permits are free).
  bool TryAcquireLocked(std::uint64_t n) {
    std::uint64_t state = state_.load(std::memory_order_relaxed);  // a first guess, as above
    for (;;) {
      if ((state & kHasWaiters) != 0) return false;
      if (CountOf(state) >= n) {
        if (state_.compare_exchange_weak(state, state - Encode(n), std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return true;
        }
        continue;
      }
      // Relaxed: the bit carries no data (the node is published by the list lock); the CAS
      // makes a racing lock-free Release either land before (we see its count) or fail
      // and come to the list lock (it sees our node).
      if (state_.compare_exchange_weak(state, state | kHasWaiters, std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
        return false;
      }
    }
  }

  // List lock held; a waiter unlinked itself. It may have been the one holding back the
  // permits (FIFO), so serve the queue again with what is free.
  // Acquire, as in Release: the free permits may come from lock-free Releases.
  void WaiterLeftLocked() { GrantLocked(CountOf(state_.load(std::memory_order_acquire))); }

  // List lock held, kHasWaiters set: hands `available` permits to the waiters from the
  // front, then stores what is left (and whether anyone still waits).
  void GrantLocked(std::uint64_t available) {
    FAIRSCHED_DCHECK(available <= static_cast<std::uint64_t>(kMaxCount),
                     "coro::Semaphore::Release: more than kMaxCount permits");
    while (!wait_list_.empty() && wait_list_.front()->request <= available) {
      internal::WaitNode* node = wait_list_.PopFront();
      available -= node->request;
      // The permits are the waiter's before it wakes; they are handed over with the wake
      // (release CAS on its wait word, acquired when it resumes).
      if (!internal::WaitList::WakePopped(node)) available += node->request;  // it left
    }
    // Release: a later lock-free TryAcquire that reads this value sees what the releasers
    // (who came here through the list lock) wrote before Release.
    state_.store(Encode(available) | (wait_list_.empty() ? 0 : kHasWaiters),
                 std::memory_order_release);
  }

  Atomic<std::uint64_t> state_;
  internal::WaitList wait_list_;
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_SEMAPHORE_H_
