// coro::Mutex: a mutual-exclusion lock for spawned coroutines that never blocks a worker
// thread, grants in strict FIFO order and hands the lock directly to the oldest waiter.
//
// Contract:
//   - Lock, TryLock, TryLockUntil, LockGuard and Unlock are called inside a spawned
//   coroutine (coro/spawn.h); the lock belongs to that coroutine (nested coro::Lazy coroutines it
//   awaits share it). Not recursive.
//   - `co_await mutex.Lock()` returns once the coroutine owns the lock. It waits without
//     blocking its worker, and waits until it gets the lock whatever happens: like
//     std::mutex::lock it cannot fail, so neither Cancel nor Stop ends it.
//   - `co_await mutex.TryLockUntil(deadline)` waits at most until `deadline` and gives up
//     early when the coroutine is cancelled or the scheduler stops: it returns kOk (owns the
//     lock), kDeadline, kCancelled or kShutdown (does not own it). A free mutex is taken at
//     once even by a cancelled coroutine; a deadline already passed makes it a TryLock.
//   - `TryLock()` takes the lock if it is free and nobody waits for it; never waits.
//   - `Unlock()` releases it. If coroutines wait, the oldest one becomes the owner inside
//     Unlock (direct hand-off) and is woken: nobody can take the lock in between, not even
//     the coroutine that just unlocked. Waiters are served strictly in the order they
//     started waiting. A waiter that times out or is cancelled leaves the queue; if it left
//     while Unlock was handing it the lock, Unlock notices (its Waker::Wakeup returns false)
//     and hands the lock to the next waiter, so the lock is never lost or given twice.
//   - `co_await mutex.LockGuard()` locks and returns a MutexGuard that unlocks when it goes
//     out of scope (also on an exception). `MutexGuard(mutex, std::adopt_lock)` adopts a
//     lock taken with TryLock / TryLockUntil.
//   - Debug builds abort with a message on: Unlock of an unlocked mutex, Unlock by a
//     coroutine that does not own it, Lock/TryLockUntil by the owner (it would wait for
//     itself forever), destroying a locked mutex or one with waiters. Every build aborts on
//     use outside a spawned coroutine (there would be no owner to record). Not detected: a
//     coroutine that finishes while it holds the lock (the lock stays held).
//   - Cost: TryLock, an uncontended Lock and an Unlock without waiters are one
//     compare-and-swap each and take no lock. The queue is behind a small internal mutex
//     (coro/wait_list.h) that only waiters and unlockers that have waiters touch.
#ifndef FAIRSCHED_CORO_MUTEX_H_
#define FAIRSCHED_CORO_MUTEX_H_

#include <cstdint>
#include <mutex>
#include <utility>

#include "coro/internal/coroutine_state.h"
#include "coro/runtime_types.h"
#include "coro/wait.h"
#include "coro/wait_list.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

class MutexGuard;

class Mutex {
 public:
  Mutex() = default;
  ~Mutex() {
    // Relaxed: whoever destroys the mutex must already be ordered after its last user.
    FAIRSCHED_DCHECK(state_.load(std::memory_order_relaxed) == 0,
                     "a coro::Mutex is destroyed while locked or while coroutines wait for it");
  }
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // co_await -> void: the coroutine owns the lock. Uncancellable (see above).
  auto Lock() {
    struct Awaiter {
      internal::ListWaitAwaiter<Mutex> wait;
      bool await_ready() { return wait.await_ready(); }
      void await_suspend(std::coroutine_handle<> handle) { wait.await_suspend(handle); }
      void await_resume() {
        [[maybe_unused]] const WaitStatus status = wait.await_resume();
        FAIRSCHED_DCHECK(status == WaitStatus::kOk, "an uncancellable Lock ended without it");
      }
    };
    return Awaiter{{this, CheckedSelf(), WaitMode::kUncancellable, kTaskDeadlineInfinite}};
  }

  // co_await -> WaitStatus: kOk if the coroutine now owns the lock.
  internal::ListWaitAwaiter<Mutex> TryLockUntil(TaskDeadline deadline) {
    return internal::ListWaitAwaiter<Mutex>(this, CheckedSelf(), WaitMode::kCancellable, deadline);
  }

  // co_await -> MutexGuard owning the lock.
  auto LockGuard();

  bool TryLock() { return TryAcquireFast(CheckedSelf()); }

  void Unlock() {
    // Relaxed: the owner bits are ours (only we change them while we own the lock) and the
    // waiters bit is re-checked by the CAS below.
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    FAIRSCHED_DCHECK(state != 0, "Unlock of a coro::Mutex that is not locked");
    FAIRSCHED_DCHECK((state & ~kHasWaiters) == Self(),
                     "Unlock of a coro::Mutex by a coroutine that does not own it");
    // Fast path, nobody waits: owner -> 0. Release: our critical section happens-before
    // the next owner's, which takes the lock with an acquire CAS that reads this 0 (or a
    // later value of the same release sequence). Fails if kHasWaiters is set (or was set
    // between the load and here): then the waiters are served under the list lock.
    if ((state & kHasWaiters) == 0 &&
        state_.compare_exchange_strong(state, 0, std::memory_order_release,
                                       std::memory_order_relaxed)) {
      return;
    }
    HandOff();
  }

  // True if some coroutine owns the lock (a snapshot, for tests and assertions; relaxed:
  // it orders nothing).
  bool IsLocked() const { return state_.load(std::memory_order_relaxed) != 0; }

 private:
  template <typename Primitive>
  friend class internal::ListWaitAwaiter;

  // state_: 0 = unlocked; otherwise the owner's CoroutineState address, with bit 0
  // (kHasWaiters) set while the wait list may be non-empty. Coroutine states are at least
  // 8-byte aligned, so bit 0 of an address is always free. While kHasWaiters is set, only
  // holders of the list lock change state_ (everyone else's CAS expects the bit clear), so
  // the slow paths read and write it plainly under that lock.
  static constexpr std::uint64_t kHasWaiters = 1;

  static std::uint64_t Self() { return reinterpret_cast<std::uintptr_t>(internal::CurrentState()); }
  static std::uint64_t CheckedSelf() {
    const std::uint64_t self = Self();
    FAIRSCHED_CHECK(self != 0, "coro::Mutex used outside a spawned coroutine");
    return self;
  }

  // 0 -> owner. Acquire: the previous owner's critical section (published by its release
  // CAS/store to 0) happens-before ours. Strong: a spurious failure would make TryLock lie.
  bool TryAcquireFast(std::uint64_t owner) {
    std::uint64_t expected = 0;
    return state_.compare_exchange_strong(expected, owner, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  // List lock held. Either takes a free mutex or announces that we are about to queue.
  bool TryAcquireLocked([[maybe_unused]] std::uint64_t owner) {
    // Relaxed: only a first guess for the CAS loop below, which orders what it needs.
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    for (;;) {
      if (state == 0) {
        // Free and (under the list lock, state 0) nobody waits. Acquire as in TryAcquireFast.
        if (state_.compare_exchange_weak(state, owner, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return true;
        }
        continue;
      }
      FAIRSCHED_DCHECK((state & ~kHasWaiters) != owner,
                       "a coroutine waits for a coro::Mutex it already owns (deadlock)");
      if ((state & kHasWaiters) != 0) return false;
      // Set kHasWaiters so that the owner's fast-path CAS fails and its Unlock comes to the
      // list lock, where it will find our node (pushed before we release the lock).
      // Relaxed: the bit carries no data; the node is published by the list lock. The CAS
      // (not a plain store) is what makes the race with the owner's fast-path unlock safe:
      // exactly one of the two succeeds on this word.
      if (state_.compare_exchange_weak(state, state | kHasWaiters, std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
        return false;
      }
    }
  }

  // List lock held; a waiter that timed out / was cancelled just unlinked itself. If it was
  // the last one, clear kHasWaiters so the owner's Unlock takes the fast path again. An RMW
  // (not a store): the owner has not changed under the list lock, and an RMW keeps the
  // release sequence of the last unlock intact for whoever acquires next.
  void WaiterLeftLocked() {
    if (wait_list_.empty()) state_.fetch_and(~kHasWaiters, std::memory_order_relaxed);
  }

  // Unlock with kHasWaiters set: hands the lock to the oldest waiter still waiting.
  void HandOff() {
    MutexLock lock(wait_list_.lock());
    while (internal::WaitNode* node = wait_list_.PopFront()) {
      // The waiter owns the lock from here on, before it even wakes: a running coroutine's
      // TryLock / Lock fast path sees a non-zero state and fails (no barging). Relaxed: the
      // critical section is handed to the waiter by its wakeup (release CAS on its wait
      // word, acquired when it resumes), which also makes it see this store.
      state_.store(node->request | (wait_list_.empty() ? 0 : kHasWaiters),
                   std::memory_order_relaxed);
      if (internal::WaitList::WakePopped(node)) return;
      // That waiter had already left (deadline / cancel / shutdown): try the next one.
    }
    // Nobody is waiting any more: unlock. Release, as in Unlock's fast path.
    state_.store(0, std::memory_order_release);
  }

  Atomic<std::uint64_t> state_{0};
  internal::WaitList wait_list_;
};

// Unlocks its mutex when destroyed (unless released). Move-only.
class MutexGuard {
 public:
  MutexGuard() = default;
  MutexGuard(Mutex& mutex, std::adopt_lock_t) : mutex_(&mutex) {}
  MutexGuard(MutexGuard&& other) noexcept : mutex_(std::exchange(other.mutex_, nullptr)) {}
  MutexGuard& operator=(MutexGuard&& other) noexcept {
    if (this != &other) {
      Unlock();
      mutex_ = std::exchange(other.mutex_, nullptr);
    }
    return *this;
  }
  ~MutexGuard() { Unlock(); }

  bool OwnsLock() const { return mutex_ != nullptr; }
  // Unlocks now (no-op if it owns nothing).
  void Unlock() {
    if (mutex_ != nullptr) std::exchange(mutex_, nullptr)->Unlock();
  }
  // Gives up ownership without unlocking; returns the mutex.
  Mutex* Release() { return std::exchange(mutex_, nullptr); }

 private:
  Mutex* mutex_ = nullptr;
};

inline auto Mutex::LockGuard() {
  struct Awaiter {
    internal::ListWaitAwaiter<Mutex> wait;
    Mutex* mutex;
    bool await_ready() { return wait.await_ready(); }
    void await_suspend(std::coroutine_handle<> handle) { wait.await_suspend(handle); }
    MutexGuard await_resume() {
      [[maybe_unused]] const WaitStatus status = wait.await_resume();
      FAIRSCHED_DCHECK(status == WaitStatus::kOk, "an uncancellable Lock ended without it");
      return MutexGuard(*mutex, std::adopt_lock);
    }
  };
  return Awaiter{{this, CheckedSelf(), WaitMode::kUncancellable, kTaskDeadlineInfinite}, this};
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_MUTEX_H_
