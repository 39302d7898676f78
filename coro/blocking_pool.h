// coro::BlockingPool and RunBlocking: run a blocking function (file IO, a DNS lookup, a
// legacy client) on a separate, bounded pool of threads, so that it never blocks a
// scheduler worker; the awaiting coroutine resumes on the scheduler with the result.
//
//   coro::BlockingPool pool({.threads = 4, .queue_bound = 256});
//   auto read = [&] { return ReadWholeFile(path); };   // name lambdas with captures first
//   std::string text = co_await coro::RunBlocking(pool, read);
//
// Contract:
//   - `co_await RunBlocking(pool, fn)` (inside a spawned coroutine) queues the call `fn()`,
//     suspends without blocking its worker, and resumes on the coroutine's scheduler with
//     fn's value, or rethrows fn's exception. `fn` is moved into the coroutine frame and
//     called once on a pool thread; calls start in submission order.
//   - Bound: at most `queue_bound` calls wait in the queue (not counting those running).
//     When it is full, the coroutine waits (suspended, not blocking its worker) until a pool
//     thread takes a call off the queue, then queues its own.
//   - Cancellation of the awaiting coroutine (Cancel, a parent's, its cancellation
//     deadline, the scheduler's Stop):
//       * while it waits for room, or while its call is queued and not started: the call is
//         never run; RunBlocking throws BlockingCallCancelled.
//       * once the call has started: it runs to completion (a blocking function cannot be
//         interrupted), the coroutine keeps waiting for it and RunBlocking returns its
//         result (or rethrows its exception) as usual; the coroutine sees the cancellation
//         afterwards (IsCancelled(), its next cancellable wait).
//   - Stop() (also run by the destructor) refuses new calls, runs every call already queued
//     and joins the threads: no submitted call is ever dropped. A RunBlocking issued after
//     Stop started, or waiting for room when it does, throws BlockingPoolStopped.
//   - Lifetimes: the pool must outlive every coroutine that uses it. A pool thread wakes
//     the coroutine under the pool's mutex, and RunBlocking takes that mutex before it
//     returns, so the wake of a finished call has returned before the coroutine goes on:
//     the pool holds no reference to a coroutine whose RunBlocking returned, nor is it
//     inside that coroutine's scheduler, so the scheduler may be destroyed once its
//     coroutines finished, before or after the pool's Stop. No wake is lost: a call is
//     woken when it is done, withdrawn (never run) when the coroutine was cancelled before
//     it started, or waited for again (uncancellably) when it was cancelled while running.
//     One exception: a coroutine cancelled while it waited for queue room leaves a
//     reference behind in the pool's room list, which the pool drops when room appears or
//     at Stop; if that is the coroutine's last reference, its frame (the spawned
//     coroutine's parameters) is destroyed then, on that thread. Calling RunBlocking
//     outside a spawned coroutine aborts in debug builds.
#ifndef FAIRSCHED_CORO_BLOCKING_POOL_H_
#define FAIRSCHED_CORO_BLOCKING_POOL_H_

#include <cstddef>
#include <deque>
#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "coro/cancel.h"
#include "coro/internal/coroutine_state.h"
#include "coro/runtime_types.h"
#include "coro/lazy.h"
#include "coro/wait.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

// RunBlocking's call was not run because the awaiting coroutine was cancelled first.
class BlockingCallCancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// RunBlocking's call was not accepted because the pool is stopping.
class BlockingPoolStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BlockingPoolOptions {
  int threads = 4;                 // >= 1
  std::size_t queue_bound = 1024;  // >= 1: calls queued and not yet started
};

namespace internal {
// One submitted call; lives in the RunBlocking coroutine's frame, which does not resume
// (and so does not free it) before the pool is done with it. Guarded by the pool's mutex,
// except the result fields, which the pool thread writes before it marks the call done
// under the mutex, and the coroutine reads after it saw "done" under the mutex.
struct BlockingCall {
  enum class Stage : std::uint8_t { kQueued, kRunning, kDone };
  void (*run)(BlockingCall* call) = nullptr;
  Stage stage = Stage::kQueued;
  Waker waker;                   // the coroutine's current wait for this call
  BlockingCall* prev = nullptr;  // the pool's intrusive FIFO queue
  BlockingCall* next = nullptr;
};
}  // namespace internal

class BlockingPool {
 public:
  explicit BlockingPool(BlockingPoolOptions options = {}) : bound_(options.queue_bound) {
    FAIRSCHED_CHECK(options.threads >= 1, "BlockingPoolOptions::threads must be >= 1");
    FAIRSCHED_CHECK(options.queue_bound >= 1, "BlockingPoolOptions::queue_bound must be >= 1");
    threads_.reserve(options.threads);
    for (int i = 0; i < options.threads; ++i) threads_.emplace_back([this] { ThreadMain(); });
  }
  ~BlockingPool() { Stop(); }
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  // Refuses new calls, runs the queued ones, joins the threads. Idempotent; not from a
  // pool thread.
  void Stop() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
      for (const Waker& waiter : room_waiters_) waiter.Wakeup();  // they see stopping_
      room_waiters_.clear();
    }
    work_cv_.notify_all();
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  // Calls queued and not yet started (for tests and monitoring).
  std::size_t queued() const {
    MutexLock lock(mu_);
    return queued_;
  }

 private:
  template <typename F>
  friend Lazy<std::invoke_result_t<F&>> RunBlocking(BlockingPool& pool, F fn);

  // Coroutine side, step 1: queue `call` if there is room (true), else register `waiter`
  // to be woken when room appears (false). Throws BlockingPoolStopped when stopping.
  enum class Submit : std::uint8_t { kQueued, kFull };
  Submit TrySubmit(internal::BlockingCall* call, WaitMode room_wait_mode, Waker* room_waker) {
    bool wake_thread = false;
    {
      MutexLock lock(mu_);
      if (stopping_) throw BlockingPoolStopped("coro::BlockingPool is stopping");
      if (queued_ >= bound_) {
        // Under the lock (the wait primitive's rule): a thread that frees room takes
        // waiters under the same lock.
        *room_waker = PrepareWait(room_wait_mode);
        room_waiters_.push_back(*room_waker);
        return Submit::kFull;
      }
      call->waker = PrepareWait(WaitMode::kCancellable);
      call->prev = tail_;
      call->next = nullptr;
      (tail_ != nullptr ? tail_->next : head_) = call;
      tail_ = call;
      ++queued_;
      wake_thread = true;
    }
    if (wake_thread) work_cv_.notify_one();
    return Submit::kQueued;
  }

  // Coroutine side, after a cancelled wait for `call`: removes it if it has not started
  // (true: it will never run). Otherwise opens an uncancellable wait for its end, unless it
  // already ended; `*must_wait` says whether to co_await WaitWoken.
  bool WithdrawOrKeepWaiting(internal::BlockingCall* call, bool* must_wait) {
    MutexLock lock(mu_);
    *must_wait = false;
    if (call->stage == internal::BlockingCall::Stage::kRunning) {
      call->waker = PrepareWait(WaitMode::kUncancellable);
      *must_wait = true;
    }
    if (call->stage != internal::BlockingCall::Stage::kQueued) return false;
    Unlink(call);
    GiveRoomLocked();  // the withdrawn call's place, as a pool thread's take would
    return true;
  }

  // Under mu_, after a call left the queue (taken or withdrawn): wakes the oldest room
  // waiter that is still waiting (a waker that returns false belongs to a coroutine that
  // left: cancelled). Under the lock on purpose: if the waiters were taken out and woken
  // outside it, a room freed meanwhile by another thread would find the list empty and be
  // lost for the waiters not yet put back (seen as a hang in the stress test). Waking only
  // closes a wait and posts a task; it never calls back into the pool.
  void GiveRoomLocked() {
    while (!room_waiters_.empty()) {
      const Waker waiter = std::move(room_waiters_.front());
      room_waiters_.pop_front();
      if (waiter.Wakeup()) return;
    }
  }

  bool IsDone(internal::BlockingCall* call) {
    MutexLock lock(mu_);
    return call->stage == internal::BlockingCall::Stage::kDone;
  }

  void Unlink(internal::BlockingCall* call) {
    (call->prev != nullptr ? call->prev->next : head_) = call->next;
    (call->next != nullptr ? call->next->prev : tail_) = call->prev;
    call->prev = call->next = nullptr;
    --queued_;
  }

  void ThreadMain() {
    while (true) {
      internal::BlockingCall* call;
      {
        MutexLock lock(mu_);
        work_cv_.wait(lock, [this] { return head_ != nullptr || stopping_; });
        if (head_ == nullptr) return;  // stopping and drained
        call = head_;
        Unlink(call);
        call->stage = internal::BlockingCall::Stage::kRunning;
        GiveRoomLocked();
      }
      call->run(call);
      MutexLock lock(mu_);
      call->stage = internal::BlockingCall::Stage::kDone;
      // The wake under mu_, through the waker that stays in the call: RunBlocking takes mu_
      // once more before it returns (IsDone), so this wake has returned before the coroutine
      // can go on, and the pool keeps no reference to the coroutine (a moved-out waker
      // would: its release after the coroutine finished would destroy the spawned
      // coroutine's frame on this thread, after the JoinHandle's join had returned, and the
      // wake could still be inside the scheduler when it is destroyed). Waking only closes a
      // wait and posts a task; it never calls back into the pool.
      call->waker.Wakeup();
    }
  }

  const std::size_t bound_;
  mutable fairsched::Mutex mu_;
  ConditionVariable work_cv_;
  internal::BlockingCall* head_ = nullptr;  // the queue, oldest first
  internal::BlockingCall* tail_ = nullptr;
  std::size_t queued_ = 0;
  std::deque<Waker> room_waiters_;  // coroutines waiting for room in the queue
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

namespace internal {
template <typename F, typename R>
struct TypedBlockingCall : BlockingCall {
  explicit TypedBlockingCall(F* f) : fn(f) {
    run = [](BlockingCall* base) {
      auto* self = static_cast<TypedBlockingCall*>(base);
      try {
        if constexpr (std::is_void_v<R>) {
          (*self->fn)();
        } else {
          self->value.emplace((*self->fn)());
        }
      } catch (...) {
        self->error = std::current_exception();
      }
    };
  }
  R Take() {
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<R>) return std::move(*value);
  }
  F* fn;
  std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
  std::exception_ptr error;
};
}  // namespace internal

// See the contract at the top of the file.
template <typename F>
Lazy<std::invoke_result_t<F&>> RunBlocking(BlockingPool& pool, F fn) {
  using R = std::invoke_result_t<F&>;
  internal::RequireCurrentState("RunBlocking outside a spawned coroutine");
  internal::TypedBlockingCall<F, R> call(&fn);
  // 1. Queue the call, waiting (cancellably) for room while the queue is full.
  while (true) {
    Waker room;
    if (pool.TrySubmit(&call, WaitMode::kCancellable, &room) == BlockingPool::Submit::kQueued) {
      break;
    }
    const WakeReason why = co_await WaitWoken();
    if (why == WakeReason::kCancelled || why == WakeReason::kShutdown) {
      throw BlockingCallCancelled("coro::RunBlocking: cancelled while waiting for queue room");
    }
  }
  // 2. Wait for the call. Cancellation ends this wait; then the call is withdrawn if it
  // has not started, else waited for uncancellably (it refers to this frame).
  const WakeReason why = co_await WaitWoken();
  if (why == WakeReason::kCancelled || why == WakeReason::kShutdown) {
    bool must_wait = false;
    if (pool.WithdrawOrKeepWaiting(&call, &must_wait)) {
      throw BlockingCallCancelled("coro::RunBlocking: cancelled before the call started");
    }
    if (must_wait) co_await WaitWoken();
  }
  // Always, not only as a check: taking the pool's mutex orders this after the pool
  // thread's wake (see ThreadMain).
  [[maybe_unused]] const bool done = pool.IsDone(&call);
  FAIRSCHED_DCHECK(done, "RunBlocking resumed before its call finished");
  co_return call.Take();
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_BLOCKING_POOL_H_
