// Running coroutines as scheduler tasks: Spawn (and SpawnHere), the owner's JoinHandle,
// CoroutineRef and ThisCoroutine.
//
// Contract:
//   - Spawn(scheduler, task) turns a coro::Lazy<T> into a spawned coroutine: a small state
//     object (allocated with the root frame by FrameAllocator) whose fairsched::Task
//     resumes it. The scheduler sees an ordinary Task, so fairness, the exactly-once
//     Wakeup/Signal semantics and deadlines are the scheduler's own; callback tasks and
//     coroutines mix freely in one scheduler. Spawn is thread-safe and callable inside
//     coroutines (SpawnOptions::child_of_current, coro/cancel.h); the scheduler must
//     outlive the coroutine.
//   - Results: `co_await std::move(handle)` inside a coroutine, or handle.Get() / WaitFor()
//     on a plain thread, returns the value or rethrows the coroutine's exception. With a
//     deadline: `co_await handle.Finished(deadline)` in a coroutine, WaitUntil on a plain
//     thread; neither takes the result nor cancels the coroutine when the deadline comes
//     first. A coroutine whose handle is let go (Detach(), or the handle destroyed) without
//     taking its result, and that ends with an exception, aborts the process with a
//     message: nobody could ever see it. The same whether it finished before or after the
//     handle went.
//   - Lifetime: the state is reference-counted (the coroutine, the JoinHandle, every Waker
//     and CoroutineRef copy). A late waker or CoroutineRef never touches freed memory;
//     once the coroutine has finished they do nothing. They must not be fired after the
//     scheduler is destroyed while they can still fire. A join (co_await of the
//     JoinHandle, Get) returns only after the root frame, the coroutine's parameters
//     included, is destroyed on the joiner's thread, unless a CoroutineRef or Waker copy
//     still holds the state (the frame then goes with the last of them). A detached
//     coroutine's frame goes when it finishes.
//   - Signals from outside: CoroutineRef/JoinHandle Wakeup and Signal end the coroutine's
//     current WaitSignal/Sleep* (coro/wait.h), or, if it is not in one, make its next one
//     return at once. Waits made with PrepareWait ignore them (they have their own Waker).
#ifndef FAIRSCHED_CORO_SPAWN_H_
#define FAIRSCHED_CORO_SPAWN_H_

#include <chrono>
#include <coroutine>
#include <utility>

#include "coro/internal/coroutine_state.h"
#include "coro/internal/state_ops.h"
#include "coro/runtime_types.h"
#include "coro/lazy.h"
#include "coro/wait.h"
#include "sched/task.h"

namespace fairsched::coro {

template <typename T>
class JoinHandle;
template <typename Scheduler, typename T>
JoinHandle<T> Spawn(Scheduler& scheduler, Lazy<T> task, SpawnOptions options = {});
template <typename T>
JoinHandle<T> SpawnHere(Lazy<T> task, SpawnOptions options = {});

// A copyable, thread-safe reference to a spawned coroutine (no result access). Keeps its
// state alive. Empty when default-constructed.
class CoroutineRef {
 public:
  CoroutineRef() = default;
  CoroutineRef(const CoroutineRef& other) : state_(other.state_) {
    if (state_ != nullptr) state_->Ref();
  }
  CoroutineRef(CoroutineRef&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  CoroutineRef& operator=(CoroutineRef other) noexcept {
    std::swap(state_, other.state_);
    return *this;
  }
  ~CoroutineRef() {
    if (state_ != nullptr) state_->Unref();
  }

  // Ends the coroutine's current WaitSignal/Sleep* with kWakeup / kSignal, or, if it is
  // not in one, makes its next one return at once (the scheduler's Wakeup/Signal rule).
  // Waits prepared with PrepareWait are not affected (they have their own Waker).
  void Wakeup() const { Checked()->NotifyExternal(WakeReason::kWakeup); }
  void Signal() const { Checked()->NotifyExternal(WakeReason::kSignal); }
  // Cancels with reason kRequested (see coro/cancel.h). True if this call cancelled it.
  bool Cancel() const { return Checked()->RequestCancel(CancelReason::kRequested); }
  bool IsDone() const { return Checked()->IsDone(); }
  explicit operator bool() const { return state_ != nullptr; }

 private:
  internal::CoroutineState* Checked() const {
    FAIRSCHED_DCHECK(state_ != nullptr, "use of an empty CoroutineRef");
    return state_;
  }
  friend CoroutineRef ThisCoroutine();
  template <typename T>
  friend class JoinHandle;
  explicit CoroutineRef(internal::CoroutineState* state) : state_(state) { state_->Ref(); }
  internal::CoroutineState* state_ = nullptr;
};

// Inside a spawned coroutine: a reference to itself (to hand to whoever will signal it).
inline CoroutineRef ThisCoroutine() {
  return CoroutineRef(internal::RequireCurrentState("ThisCoroutine outside a spawned coroutine"));
}

// The owner's handle of a spawned coroutine: join (co_await, Get, WaitFor), cancel, signal,
// detach. Move-only. Destroying it detaches the coroutine (it keeps running). When a join
// returns, the root frame has been destroyed on the joiner's thread (see "Lifetime" above),
// so a parameter of the coroutine may point into the joiner's frame.
template <typename T>
class [[nodiscard]] JoinHandle {
 public:
  JoinHandle() = default;
  JoinHandle(JoinHandle&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  JoinHandle& operator=(JoinHandle&& other) noexcept {
    if (this != &other) {
      Detach();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  ~JoinHandle() { Detach(); }

  bool IsValid() const { return state_ != nullptr; }
  bool IsDone() const { return Checked()->IsDone(); }

  // Plain thread (not a task of the coroutine's scheduler with one worker: it would wait
  // for itself): waits until the coroutine finished or the timeout passed.
  bool WaitFor(std::chrono::nanoseconds timeout) {
    return Checked()->WaitDone(DeadlineAfter(timeout));
  }
  bool WaitUntil(TaskDeadline deadline) { return Checked()->WaitDone(deadline); }
  // Plain thread: waits for the result; returns it or rethrows. Consumes the handle.
  T Get() {
    Checked()->WaitDone(kTaskDeadlineInfinite);
    return TakeAndRelease();
  }

  // Inside a spawned coroutine: `co_await std::move(handle)` waits (uncancellably: the
  // joined coroutine is cancelled with us if it is our child) and returns the result or
  // rethrows. Consumes the handle.
  auto operator co_await() && {
    Checked();
    return JoinAwaiter(std::exchange(state_, nullptr));
  }

  // Inside a spawned coroutine: `co_await handle.Finished(deadline)` waits until the
  // coroutine finished (true; `co_await std::move(handle)` then returns at once) or until
  // `deadline` (false). Does not consume the handle, and a timeout does not cancel the
  // coroutine: it keeps running, and the caller may Cancel it, wait again or detach it.
  // Uncancellable, like the join (it ends at its deadline).
  auto Finished(TaskDeadline deadline) {
    Checked();
    return FinishedAwaiter(state_, deadline);
  }

  // Lets it run on its own. (An exception it then ends with aborts the process.)
  void Detach() {
    if (state_ == nullptr) return;
    std::exchange(state_, nullptr)->ReleaseHandle();
  }
  bool Cancel() const { return Checked()->RequestCancel(CancelReason::kRequested); }
  void Wakeup() const { Checked()->NotifyExternal(WakeReason::kWakeup); }
  void Signal() const { Checked()->NotifyExternal(WakeReason::kSignal); }
  CoroutineRef Ref() const { return CoroutineRef(Checked()); }

 private:
  using State = internal::CoroutineState;
  State* Checked() const {
    FAIRSCHED_DCHECK(state_ != nullptr,
                     "use of an empty JoinHandle (moved from, joined, or detached)");
    return state_;
  }
  template <typename Scheduler, typename U>
  friend JoinHandle<U> Spawn(Scheduler& scheduler, Lazy<U> task, SpawnOptions options);
  explicit JoinHandle(State* state) : state_(state) {}

  // After the result is moved out, the frame goes (ReleaseJoined), also when it rethrows.
  struct ReleaseAfterJoin {
    State* state;
    ~ReleaseAfterJoin() { state->ReleaseJoined(); }
  };
  T TakeAndRelease() {
    State* state = std::exchange(state_, nullptr);
    ReleaseAfterJoin release{state};
    return state->template TakeResult<T>();
  }

  // await_ready of both join awaiters: true if `state` is done; else opens an uncancellable
  // wait of the calling coroutine (*joiner) that its completion ends, and is true only if
  // that wait is already closed.
  static bool JoinReady(State* state, internal::CoroutineState** joiner) {
    if (state->IsDone()) return true;
    *joiner = internal::RequireCurrentState("co_await of a JoinHandle outside a coroutine");
    if (!state->SetJoinWaker(*joiner)) return true;  // finished meanwhile
    WakeReason ignored;
    return (*joiner)->TakeClosedWait(&ignored);
  }

  class JoinAwaiter {
   public:
    explicit JoinAwaiter(State* state) : state_(state) {}
    JoinAwaiter(JoinAwaiter&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
    // Destroyed without having joined (its coroutine's frame went while suspended here):
    // lets go as Detach does.
    ~JoinAwaiter() {
      if (state_ != nullptr) state_->ReleaseHandle();
    }
    bool await_ready() { return JoinReady(state_, &joiner_); }
    void await_suspend(std::coroutine_handle<> handle) {
      joiner_->SuspendForWait(handle, kTaskDeadlineInfinite);
    }
    T await_resume() {
      FAIRSCHED_DCHECK(state_->IsDone(), "a join wait ended before the coroutine finished");
      ReleaseAfterJoin release{std::exchange(state_, nullptr)};
      return release.state->template TakeResult<T>();
    }

   private:
    State* state_;
    internal::CoroutineState* joiner_ = nullptr;
  };

  class FinishedAwaiter {
   public:
    FinishedAwaiter(State* state, TaskDeadline deadline) : state_(state), deadline_(deadline) {}
    bool await_ready() { return JoinReady(state_, &joiner_); }
    void await_suspend(std::coroutine_handle<> handle) {
      suspended_ = true;
      joiner_->SuspendForWait(handle, deadline_);
    }
    bool await_resume() {
      // Only Finish (kWakeup) or the deadline end this uncancellable wait. After the
      // deadline the join waker is withdrawn; the coroutine may have finished right then.
      if (suspended_ && joiner_->LastWakeReason() == WakeReason::kDeadline) {
        state_->ClearJoinWaker(joiner_);
      }
      return state_->IsDone();
    }

   private:
    State* state_;  // the handle's reference keeps it
    TaskDeadline deadline_;
    internal::CoroutineState* joiner_ = nullptr;
    bool suspended_ = false;
  };

  template <typename U>
  friend JoinHandle<U> SpawnHere(Lazy<U> task, SpawnOptions options);

  State* state_ = nullptr;
};

// Runs `task` as a coroutine on `scheduler` (any BasicTaskScheduler<...>): it is posted like
// a task and starts when a worker takes it. Thread-safe; callable inside coroutines (see
// SpawnOptions::child_of_current). The scheduler must outlive the coroutine.
template <typename Scheduler, typename T>
JoinHandle<T> Spawn(Scheduler& scheduler, Lazy<T> task, SpawnOptions options) {
  FAIRSCHED_DCHECK(task.IsValid() && !task.IsDone(), "Spawn of an empty or started task");
  internal::CoroutineState* state = internal::CoroutineState::Create(
      &scheduler, &internal::kSchedulerOps<Scheduler>, std::move(task), options);
  state->Start();
  return JoinHandle<T>(state);
}

// Inside a spawned coroutine: Spawn on the scheduler that runs it (for combinators that
// start children without naming the scheduler, coro/combinators.h).
template <typename T>
JoinHandle<T> SpawnHere(Lazy<T> task, SpawnOptions options) {
  FAIRSCHED_DCHECK(task.IsValid() && !task.IsDone(), "SpawnHere of an empty or started task");
  const internal::CoroutineState* current =
      internal::RequireCurrentState("SpawnHere outside a spawned coroutine");
  internal::CoroutineState* state = internal::CoroutineState::Create(
      current->scheduler(), current->scheduler_ops(), std::move(task), options);
  state->Start();
  return JoinHandle<T>(state);
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_SPAWN_H_
