// The state of a spawned coroutine: the scheduler task whose callback resumes it, its wait
// word (coro/internal/wait_word.h), its reference count and cancel reason, and on first use
// an extension (coro/internal/state_extension.h). The public headers (coro/wait.h,
// coro/spawn.h, coro/cancel.h) are thin handles on it; their contracts are the promises this
// state keeps. Internal: primitives in coro/ use it, users do not.
//
// Contract:
//   - Who resumes a coroutine, where. Only its own fairsched::Task callback (Run) resumes
//     it, on whichever worker runs that task, through the per-thread resume loop
//     (coro/lazy.h), so nested Lazy awaits run there too. When the coroutine suspends on a
//     runtime awaitable (Yield, a wait), the awaitable only records what it wants
//     (SuspendForYield, SuspendForWait); after the resume loop returns, the callback posts
//     the task (Yield: to the back of the ready queue; a wait: with the wait's deadline, or
//     with no deadline). Nobody else ever calls resume(), so two threads never run one
//     coroutine. Wakers (any thread) never resume anything: they close the wait in the wait
//     word and call the scheduler's Wakeup on the coroutine's task (WakeTask).
//   - Each wait resumes the coroutine exactly once. The scheduler's Task remembers a wakeup
//     that lands while it runs; such a leftover wakeup from a wait that closed another way
//     can make the task run once more than needed. The callback detects that (FinishWait:
//     the current wait is still open and neither its deadline nor Stop ended it) and posts
//     the task again with the same deadline, without resuming the coroutine.
//   - Wakers and lifetime. The state is reference-counted: the coroutine holds one
//     reference until it finishes, the JoinHandle one, and every Waker / CoroutineRef copy
//     one, as does a child coroutine on its parent and a registered joiner. The state (and
//     the root frame, which keeps the result) is freed by whoever drops the last reference
//     (Destroy), so a late waker never touches freed memory: it holds its own reference
//     while it wakes. While the JoinHandle is attached, Finish hands the coroutine's own
//     reference to it (ReleaseOwnReference), and the join drops both once Finish is done
//     with the state (ReleaseJoined): the root frame, parameters included, is destroyed
//     before the join returns.
//   - Stop. A cancellable wait (or one starting) while the scheduler stops is cancelled
//     with kShutdown (FinishWait, CancellationReason). Uncancellable waits post their task
//     with PostDeadlineThroughStop, so Stop does not wake them: they end with their event.
//   - Misuse caught in debug builds with a message: runtime awaitables or PrepareWait
//     outside a spawned coroutine, WaitWoken without PrepareWait, PrepareWait twice,
//     joining twice. In every build: a spawned coroutine that suspends on an awaitable the
//     runtime does not know (it would never be resumed).
#ifndef FAIRSCHED_CORO_INTERNAL_COROUTINE_STATE_H_
#define FAIRSCHED_CORO_INTERNAL_COROUTINE_STATE_H_

#include <algorithm>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <utility>

#include "coro/frame_allocator.h"
#include "coro/internal/state_extension.h"
#include "coro/internal/ready_budget.h"
#include "coro/internal/state_ops.h"
#include "coro/internal/wait_word.h"
#include "coro/runtime_types.h"
#include "coro/lazy.h"
#include "sched/io_backend.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {
namespace internal {

CoroutineState* CurrentState();

// A spawned coroutine's state. Lives in the root frame's header (kFrameHeader bytes in
// front of the frame, coro/lazy.h): one allocation holds both, the scheduler task on the
// block's first cache line and the fields every step uses on the second, the frame right
// after. Untyped: the result type is known to the JoinHandle and to root_ops_.
class alignas(64) CoroutineState {
 public:
  CoroutineState(void* scheduler, const SchedulerOps* ops, const RootOps* root_ops,
                 const SpawnOptions& options, ContinuationHelper* helper)
      : ops_(ops), scheduler_(scheduler), resume_(Root()), root_ops_(root_ops) {
    CoroutineState* parent = options.child_of_current ? CurrentState() : nullptr;
    if (parent != nullptr || options.deadline != kTaskDeadlineInfinite || helper != nullptr) {
      // Not shared yet: a plain store publishes the extension with the state.
      auto* ext = new StateExtension;
      ext->cancel_deadline = options.deadline;
      ext->helper = helper;
      ext_.store(ext, std::memory_order_relaxed);
      if (parent != nullptr) {
        ext->cancel_deadline = std::min(ext->cancel_deadline, parent->CancelDeadline());
        parent->Ref();
        ext->parent = parent;
        ext->parent_link.invoke = [](void* child, CancelReason reason) {
          static_cast<CoroutineState*>(child)->RequestCancel(reason);
        };
        ext->parent_link.context = this;
        parent->AddCancelCallback(&ext->parent_link);
      }
    }
    task_.SetCallback([this] { Run(); });
  }
  CoroutineState(const CoroutineState&) = delete;
  CoroutineState& operator=(const CoroutineState&) = delete;

  // Builds the state of `task`'s coroutine in its frame's header; the state owns the frame
  // from now on (it destroys it with itself). Two references: the coroutine's own and the
  // JoinHandle's.
  template <typename T>
  static CoroutineState* Create(void* scheduler, const SchedulerOps* ops, Lazy<T> task,
                                const SpawnOptions& options, ContinuationHelper* helper = nullptr) {
    void* const frame = task.Release().address();
    void* const header = static_cast<char*>(frame) - kFrameHeader;
    return ::new (header)
        CoroutineState(scheduler, ops, &RootOpsFor<T>::kOps, options, helper);
  }

  // The root frame, right behind the state.
  void* Frame() const {
    return const_cast<char*>(reinterpret_cast<const char*>(this)) + kFrameHeader;
  }
  std::coroutine_handle<> Root() const { return std::coroutine_handle<>::from_address(Frame()); }
  // The finished root's value (or exception, rethrown). The caller knows T.
  template <typename T>
  T TakeResult() {
    return RootOpsFor<T>::PromiseOf(Frame()).TakeResult();
  }

  void Start() { ops_->post(scheduler_, &task_, kTaskDeadlineNow, /*through_stop=*/false); }
  // The scheduler that runs this coroutine (SpawnHere starts another one on it). Fixed.
  void* scheduler() const { return scheduler_; }
  const SchedulerOps* scheduler_ops() const { return ops_; }
  // Instead of Start: runs the coroutine's first step on the calling thread (a plain thread
  // that helps, see coro/task_list.h), as the task callback would on a worker. The task has
  // never been posted, so a wakeup that lands during this step is remembered by the
  // scheduler task and the post that follows a suspension runs at once; after the first
  // suspension the coroutine continues on the scheduler's workers like any other.
  void StartOnThisThread() { Run(); }

  // --- References (see "Wakers and lifetime" above). ---
  // Relaxed increment: the caller already holds a reference, so the count cannot be zero
  // and nothing needs ordering. Acq_rel decrement: release makes our uses of the state
  // happen-before the destruction; acquire (for the thread that reaches zero) sees
  // everyone's.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref(std::uint32_t count = 1) {
    if (refs_.fetch_sub(count, std::memory_order_acq_rel) == count) Destroy();
  }

  // --- Waits (the transitions are WaitWord's, coro/internal/wait_word.h). ---
  WakeReason ShutdownOrCancelled() const {
    return cancel_reason_.load(std::memory_order_acquire) == CancelReason::kShutdown
               ? WakeReason::kShutdown
               : WakeReason::kCancelled;
  }

  // Coroutine thread: opens a new wait (see PrepareWait). If a cancellation (for a
  // cancellable wait) or a remembered wakeup/signal (for an external wait) is already
  // there, the wait is born closed with that reason. Returns the new epoch.
  std::uint64_t OpenWait(WaitMode mode, bool external) {
    FAIRSCHED_DCHECK(!wait_prepared_, "PrepareWait called twice without WaitWoken in between");
    wait_prepared_ = true;
    const bool cancellable = mode == WaitMode::kCancellable;
    // RequestCancel publishes the reason before it runs the callbacks and sets
    // kCancelRequested in the word, so IsCancelled() can already be true while the bit is
    // not set yet. A cancellable wait opened then must still be born cancelled (the stress
    // test saw kSignal/kDeadline after IsCancelled() under TSan). Acquire, as for the bit.
    const bool cancel_published =
        cancellable && cancel_reason_.load(std::memory_order_acquire) != CancelReason::kNone;
    return word_.Open(cancellable, external, cancel_published,
                      [this] { return ShutdownOrCancelled(); });
  }

  // Coroutine thread, after OpenWait: if the wait is already closed, consumes it and sets
  // `*reason`.
  bool TakeClosedWait(WakeReason* reason) {
    FAIRSCHED_DCHECK(wait_prepared_, "WaitWoken without PrepareWait");
    if (!word_.TakeClosed(reason)) return false;
    wait_prepared_ = false;
    return true;
  }

  // Any thread: closes wait `epoch` for `reason` if it is still the open wait, and wakes
  // the coroutine's task. Returns false for a stale or already closed wait.
  bool WakeEpoch(std::uint64_t epoch, WakeReason reason) {
    if (!word_.CloseEpoch(epoch, reason)) return false;
    WakeTask();
    return true;
  }
  // The same, from inside an IO backend's delivery on the sched-role holder: the task goes
  // to the ready queue through the backend's sink when the sink serves this coroutine's
  // scheduler (else through the scheduler's Wakeup, as above).
  bool WakeEpochFromRole(std::uint64_t epoch, WakeReason reason, IoReadySink& sink) {
    if (!word_.CloseEpoch(epoch, reason)) return false;
    WakeTask(sink.Serves(scheduler_) ? &sink : nullptr);
    return true;
  }

  // Any thread: CoroutineRef::Wakeup/Signal. Ends an open external wait, else is
  // remembered for the next one.
  void NotifyExternal(WakeReason reason) {
    if (word_.Notify(reason)) WakeTask();
  }

  // Any thread: cancels the coroutine (first reason wins): runs its cancel callbacks
  // (children included) on this thread, then ends its cancellable wait. Callbacks run
  // first so that a coroutine woken by the cancellation finds them all done. Returns false
  // if it already was cancelled. Never holds a lock while it calls out.
  bool RequestCancel(CancelReason reason) {
    CancelReason expected = CancelReason::kNone;
    // seq_cst (acq_rel at least): release publishes the reason before the
    // kCancelRequested bit (set below) that readers of the word act on; acquire on failure:
    // the caller may rely on the earlier cancellation's effects. seq_cst for the Dekker
    // pair with AddCancelCallback: we set the reason, then look for the extension; a
    // registrar installs it, then looks at the reason. One of the two sees the other.
    if (!cancel_reason_.compare_exchange_strong(expected, reason, std::memory_order_seq_cst,
                                                std::memory_order_acquire)) {
      return false;
    }
    if (StateExtension* ext = ext_.load(std::memory_order_seq_cst)) ext->RunCallbacksOnce(reason);
    const WakeReason wake_reason =
        reason == CancelReason::kShutdown ? WakeReason::kShutdown : WakeReason::kCancelled;
    if (word_.SetCancelRequested(wake_reason)) WakeTask();
    return true;
  }

  // The cancellation deadline (SpawnOptions::deadline, bounded by the parent's).
  TaskDeadline CancelDeadline() const {
    // Acquire: an extension installed by another thread (a waiter) is seen whole; the
    // deadline itself was fixed at spawn, before the state was shared.
    const StateExtension* ext = ext_.load(std::memory_order_acquire);
    return ext != nullptr ? ext->cancel_deadline : kTaskDeadlineInfinite;
  }

  // Cancelled, by reason; the cancellation deadline and Stop count once they are reached
  // (checked here, so that CPU-bound code polling IsCancelled() also sees them).
  CancelReason CancellationReason() {
    CancelReason reason = cancel_reason_.load(std::memory_order_acquire);
    if (reason != CancelReason::kNone) return reason;
    const TaskDeadline cancel_deadline = CancelDeadline();
    if (cancel_deadline != kTaskDeadlineInfinite && TaskClock::now() >= cancel_deadline) {
      RequestCancel(CancelReason::kDeadline);
    } else if (ops_->is_stopping(scheduler_)) {
      RequestCancel(CancelReason::kShutdown);
    }
    return cancel_reason_.load(std::memory_order_acquire);
  }

  // --- Cancel callbacks. ---
  void AddCancelCallback(CancelRegistration* registration) {
    StateExtension* ext = Ext();
    CancelReason run_now = CancelReason::kNone;
    {
      MutexLock lock(ext->mu);
      if (ext->cancel_callbacks_started) {
        run_now = cancel_reason_.load(std::memory_order_acquire);
      } else {
        ext->Link(registration);
      }
    }
    if (run_now != CancelReason::kNone) {
      registration->invoke(registration->context, run_now);
      return;
    }
    // The other half of RequestCancel's Dekker pair (the extension is installed, seq_cst,
    // in Ext()): a cancellation that looked for the extension before it existed ran no
    // callbacks, so we run them (RunCallbacksOnce runs them once, whoever calls it).
    const CancelReason reason = cancel_reason_.load(std::memory_order_seq_cst);
    if (reason != CancelReason::kNone) ext->RunCallbacksOnce(reason);
  }
  // Returns once `registration` will not be invoked any more and is not running on another
  // thread (a callback deregistering itself does not wait for itself).
  void RemoveCancelCallback(CancelRegistration* registration) {
    ext_.load(std::memory_order_acquire)->Remove(registration);  // installed by the Add
  }

  // --- Completion. ---
  // Acquire: pairs with Finish's release; the result is written.
  bool IsDone() const { return word_.IsFinished(); }
  // Plain thread: waits until the coroutine finished or `deadline`.
  bool WaitDone(TaskDeadline deadline) {
    if (IsDone()) return true;
    StateExtension* ext = Ext();
    MutexLock lock(ext->mu);
    // seq_cst loads after the seq_cst install of the extension (Ext): the waiter's half of
    // the Dekker pair with Finish (it sets kFinished, then looks for the extension).
    auto done = [this] { return word_.IsFinishedSeqCst(); };
    if (deadline == kTaskDeadlineInfinite) {
      ext->cv.wait(lock, done);
      return true;
    }
    return ext->cv.wait_until(lock, deadline, done);
  }
  // Coroutine thread of `joiner`: unless this coroutine is already done, opens an
  // uncancellable wait of `joiner` that this one's completion ends. Under the extension's
  // mutex, so completion cannot slip in between the check and the registration.
  bool SetJoinWaker(CoroutineState* joiner);
  // Coroutine thread of `joiner`, after its join wait ended at its deadline (a timed join,
  // JoinHandle::Finished): withdraws the join waker, so that the coroutine may be joined
  // again. A no-op if Finish already took it (its wakeup of the stale epoch does nothing).
  void ClearJoinWaker(CoroutineState* joiner);
  // The JoinHandle lets go without taking the result (Detach, or its destructor), dropping
  // its reference (and the coroutine's own, if Finish handed it over). A coroutine that
  // already finished with an exception nobody took reports it now, as one that finishes
  // later will (see "Results" in coro/spawn.h). Exactly one of this and Finish's
  // ReleaseOwnReference drops the coroutine's own reference (acq_rel: see WaitWord::Detach).
  void ReleaseHandle() {
    const std::uint64_t old = word_.Detach();
    if ((old & WaitWord::kFinished) != 0 && root_ops_->failed(Frame())) root_ops_->report(Frame());
    Unref((old & WaitWord::kOwnRefHandedOver) != 0 ? 2 : 1);
  }
  // The JoinHandle's reference after its join took the result: waits until Finish is done
  // with the state (a few steps on the coroutine's thread, which never wait for the
  // joiner), then drops the handle's reference and the coroutine's own if Finish handed it
  // over. So the root frame, parameters included, is destroyed here, before the join
  // returns, unless someone else (a CoroutineRef, or a helper's pending task run) still
  // holds a reference.
  void ReleaseJoined() {
    // Acquire (in WaitFinishDone): pairs with ReleaseOwnReference's release, so Finish's
    // touches of the state happen-before its destruction here.
    const std::uint64_t word = word_.WaitFinishDone();
    Unref((word & WaitWord::kOwnRefHandedOver) != 0 ? 2 : 1);
  }

  // --- Awaitable support (coroutine thread). ---
  void SuspendForYield(std::coroutine_handle<> handle) {
    resume_ = handle;
    pending_ = Pending::kYield;
  }
  void SuspendForWait(std::coroutine_handle<> handle, TaskDeadline deadline) {
    FAIRSCHED_DCHECK(wait_prepared_, "WaitWoken without PrepareWait");
    wait_prepared_ = false;
    resume_ = handle;
    // The word says whether the open wait is cancellable; only this thread changes that.
    const bool cancellable = word_.OpenWaitIsCancellable();
    // An uncancellable wait must see its event, also while the scheduler stops: Stop must
    // not wake it (it could only post itself again, and Stop would wake it again at once).
    pending_ = cancellable ? Pending::kWait : Pending::kWaitThroughStop;
    post_deadline_ = deadline;
    // Every wait is bounded by the cancellation deadline: a cancellable one ends there, an
    // uncancellable one requests the cancellation there and goes on (FinishWait). Once the
    // coroutine is cancelled, an uncancellable wait has only its own deadline left.
    StateExtension* ext = ext_.load(std::memory_order_acquire);
    if (ext != nullptr && ext->cancel_deadline != kTaskDeadlineInfinite) {
      ext->wait_deadline = deadline;
      const bool cancel_pending =
          cancellable || cancel_reason_.load(std::memory_order_acquire) == CancelReason::kNone;
      if (cancel_pending) post_deadline_ = std::min(deadline, ext->cancel_deadline);
    }
  }
  WakeReason LastWakeReason() const { return last_reason_; }

  // --- Helping (see ContinuationHelper). ---
  // Guarded by the helper's lock. Only states created with a helper have one.
  HelpState& help() { return ext_.load(std::memory_order_acquire)->help; }
  // Before the first step: the start is a post (Start), so a task run is pending.
  void MarkStartPosted() { help().task_pending = true; }
  // The helper thread, after claiming a ready continuation under its lock.
  void RunClaimedStep() { Step(); }

 private:
  // kWaitThroughStop: an uncancellable wait (posted with PostDeadlineThroughStop).
  enum class Pending : std::uint8_t { kNone, kYield, kWait, kWaitThroughStop };

  // The extension, installed on first use (any thread). seq_cst install and load: one half
  // of the Dekker pairs with Finish (waiters) and RequestCancel (callbacks), see there.
  StateExtension* Ext() {
    StateExtension* ext = ext_.load(std::memory_order_seq_cst);
    if (ext != nullptr) return ext;
    auto* fresh = new StateExtension;
    if (ext_.compare_exchange_strong(ext, fresh, std::memory_order_seq_cst,
                                     std::memory_order_seq_cst)) {
      return fresh;
    }
    delete fresh;  // another thread installed one first
    return ext;
  }
  ContinuationHelper* Helper() const {
    // Acquire: the extension may have been installed by another thread (a waiter, Ext())
    // after the coroutine was shared; its fields (helper: null then) must be seen whole.
    // A helper itself is installed before the coroutine is shared.
    const StateExtension* ext = ext_.load(std::memory_order_acquire);
    return ext != nullptr ? ext->helper : nullptr;
  }

  // The last reference went: the state, its extension and the root frame (whose header
  // the state lives in) go. Nothing of the state may be touched after its destructor.
  void Destroy() {
    StateExtension* ext = ext_.load(std::memory_order_relaxed);
    const std::coroutine_handle<> root = Root();
    this->~CoroutineState();
    delete ext;
    root.destroy();  // frees the block the state was in
  }

  // The task callback. See "Who resumes a coroutine, where" above.
  void Run() {
    if (ContinuationHelper* helper = Helper()) {
      switch (helper->BeforeTaskRun(this)) {
        case ContinuationHelper::TaskRun::kRun:
          break;
        case ContinuationHelper::TaskRun::kSkip:
          return;
        case ContinuationHelper::TaskRun::kRelease:
          Unref();  // the coroutine's own reference (see Finish): may destroy this
          return;
      }
    }
    Step();
  }

  // One step: decide whether the wait is over, resume the coroutine until it suspends or
  // ends, then post its task for what it waits for. On a worker (Run) or on a helper thread.
  void Step() {
    if (pending_ >= Pending::kWait && !FinishWait()) {
      // A leftover wakeup ran us while the wait is still open, or the cancellation deadline
      // of an uncancellable wait passed: wait again (post_deadline_ says until when).
      PostTask(post_deadline_, pending_ == Pending::kWaitThroughStop, /*yielded=*/false);
      return;
    }
    pending_ = Pending::kNone;
    void* const outer = std::exchange(internal::t_current_coroutine, this);
    // A fresh cooperative budget for this step (coro/internal/ready_budget.h).
    const int outer_budget = std::exchange(t_ready_budget_left, FullReadyBudget());
    internal::RunResumeLoop(resume_);
    t_ready_budget_left = outer_budget;
    internal::t_current_coroutine = outer;
    switch (pending_) {
      case Pending::kYield:
        PostTask(kTaskDeadlineNow, /*through_stop=*/false, /*yielded=*/true);
        return;  // the task may already run elsewhere: touch nothing
      case Pending::kWait:
      case Pending::kWaitThroughStop:
        PostTask(post_deadline_, pending_ == Pending::kWaitThroughStop, /*yielded=*/false);
        return;
      case Pending::kNone:
        FAIRSCHED_CHECK(Root().done(),
                        "a spawned coroutine suspended on an awaitable that is not part of "
                        "coro/ (it would never be resumed)");
        Finish();
        return;
    }
  }

  // Posts the task after a step. With a helper, a post that is still pending serves instead
  // (see ContinuationHelper::Suspended).
  void PostTask(TaskDeadline deadline, bool through_stop, bool yielded) {
    if (ContinuationHelper* helper = Helper();
        helper != nullptr && !helper->Suspended(this, yielded)) {
      return;
    }
    ops_->post(scheduler_, &task_, deadline, through_stop);
  }

  // A wait was closed by someone else: the task must run. The caller holds a reference.
  // With `role_sink` (a sink that serves this coroutine's scheduler, on the role holder) the
  // task goes through it, else through the scheduler's Wakeup.
  void WakeTask(IoReadySink* role_sink = nullptr) {
    if (ContinuationHelper* helper = Helper()) helper->Woken(this);
    if (role_sink != nullptr) {
      role_sink->Wake(&task_, IoWake::kWakeup);
    } else {
      ops_->wakeup(scheduler_, &task_);
    }
  }

  // The task ran while a wait is pending: decide whether the wait is over. Returns false if
  // this run is a leftover wakeup (or the cancellation deadline of an uncancellable wait)
  // and the wait goes on.
  bool FinishWait() {
    const std::uint64_t word = word_.LoadAcquire();
    if ((word & WaitWord::kOpen) == 0) {  // a waker, Cancel or a remembered wakeup closed it
      last_reason_ = WaitWord::ReasonOf(word);
      return true;
    }
    const bool cancellable = (word & WaitWord::kCancellableWait) != 0;
    WakeReason reason;
    CancelReason cancel = CancelReason::kNone;
    if (task_.IsExpired()) {
      // The wait's own deadline, or (with an extension) the cancellation deadline first.
      const StateExtension* ext = ext_.load(std::memory_order_acquire);
      const TaskDeadline cancel_deadline =
          ext != nullptr ? ext->cancel_deadline : kTaskDeadlineInfinite;
      const TaskDeadline wait_deadline =
          cancel_deadline != kTaskDeadlineInfinite ? ext->wait_deadline : post_deadline_;
      if (cancellable && cancel_deadline <= wait_deadline) {
        reason = WakeReason::kCancelled;
        cancel = CancelReason::kDeadline;
      } else if (!cancellable && cancel_deadline < wait_deadline &&
                 TaskClock::now() < wait_deadline) {
        // The cancellation deadline bounds this uncancellable wait only so that the
        // cancellation is requested on time: its callbacks run (an IO op is cancelled,
        // children are cancelled), and the wait goes on for its event, now bounded by its
        // own deadline only. (Already cancelled: RequestCancel does nothing.)
        RequestCancel(CancelReason::kDeadline);
        post_deadline_ = wait_deadline;
        return false;
      } else {
        reason = WakeReason::kDeadline;
      }
    } else if (cancellable && ops_->is_stopping(scheduler_)) {
      reason = WakeReason::kShutdown;
      cancel = CancelReason::kShutdown;
    } else {
      return false;
    }
    // Close it ourselves, unless a waker closed it first: then we report its reason (its
    // scheduler wakeup is still coming and is absorbed later).
    if (WakeReason closer; !word_.CloseOwn(word, reason, &closer)) {
      last_reason_ = closer;
      return true;
    }
    // The wait is closed first, so cancelling does not wake this (running) task again.
    if (cancel != CancelReason::kNone) RequestCancel(cancel);
    last_reason_ = cancel == CancelReason::kNone ? reason : ShutdownOrCancelled();
    return true;
  }

  void Finish() {
    // Close any wait left prepared and mark the coroutine finished (seq_cst: the Dekker
    // pair with the waiters, see WaitWord::MarkFinished), then look for the extension.
    const std::uint64_t old = word_.MarkFinished();
    StateExtension* const ext = ext_.load(std::memory_order_seq_cst);
    CoroutineState* joiner = nullptr;
    std::uint64_t join_epoch = 0;
    if (ext != nullptr) {
      if (ext->parent != nullptr) {
        ext->parent->RemoveCancelCallback(&ext->parent_link);
        ext->parent->Unref();
        ext->parent = nullptr;
      }
      {
        // Taking the mutex orders us after a waiter's check of kFinished under it.
        MutexLock lock(ext->mu);
        joiner = std::exchange(ext->joiner, nullptr);
        join_epoch = ext->join_epoch;
      }
      ext->cv.notify_all();
    }
    if ((old & WaitWord::kDetached) != 0 && root_ops_->failed(Frame())) root_ops_->report(Frame());
    if (joiner != nullptr) {
      joiner->WakeEpoch(join_epoch, WakeReason::kWakeup);
      joiner->Unref();
    }
    ReleaseOwnReference();
  }

  // The last step of Finish: the coroutine's own reference goes. While the JoinHandle is
  // attached it is handed to the handle, so that a join, which drops both, destroys the
  // root frame (the coroutine's parameters) before it returns: a parameter may then point
  // into the joiner's frame. Without this the coroutine's thread would drop it here, a
  // moment after the joiner resumed (the combinators stress test saw a parameter's
  // destructor write into a freed joiner frame under ASan).
  void ReleaseOwnReference() {
    if (ContinuationHelper* helper = Helper()) {
      // With a helper (coro/task_list.h, whose slots are detached) the reference may belong
      // to a pending task run, which only the helper knows of: keep the plain rule (release:
      // see WaitWord::MarkFinishDone; our reference keeps the state alive for the helper
      // call).
      word_.MarkFinishDone();
      // Finished on a helper thread while a run of our task is still pending: that run
      // drops our own reference (the task must stay alive until it ran). Last, because
      // from the moment the helper knows, that run may drop it, and nothing may follow.
      if (helper->Finished(this)) return;
      Unref();
      return;
    }
    // Handed over: nothing of the state may be touched after it. Not handed over: nobody
    // will join (the handle let go), so the coroutine's own reference goes here, which may
    // destroy this.
    if (!word_.HandOverOwnReference()) Unref();
  }

  // First cache line: the scheduler task whose callback resumes the coroutine.
  fairsched::Task task_;
  // Second cache line: what every step touches.
  const SchedulerOps* const ops_;
  void* const scheduler_;
  std::coroutine_handle<> resume_;  // innermost suspended coroutine (coroutine thread)
  WaitWord word_;
  TaskDeadline post_deadline_ = kTaskDeadlineInfinite;  // the open wait's post (coroutine)
  Atomic<StateExtension*> ext_{nullptr};
  const RootOps* const root_ops_;
  Atomic<std::uint32_t> refs_{2};  // the coroutine's own and the JoinHandle's
  Atomic<CancelReason> cancel_reason_{CancelReason::kNone};
  // Coroutine-thread state (handed between workers by the scheduler's queues).
  Pending pending_ = Pending::kNone;
  bool wait_prepared_ = false;
  WakeReason last_reason_ = WakeReason::kWakeup;
};

static_assert(sizeof(CoroutineState) == kFrameHeader,
              "the state must fill the frame header exactly (coro/lazy.h)");

inline bool CoroutineState::SetJoinWaker(CoroutineState* joiner) {
  StateExtension* ext = Ext();
  MutexLock lock(ext->mu);
  // seq_cst, after the seq_cst install of the extension: see Finish.
  if (word_.IsFinishedSeqCst()) return false;
  FAIRSCHED_DCHECK(ext->joiner == nullptr, "a coroutine is joined twice");
  joiner->Ref();
  ext->joiner = joiner;
  ext->join_epoch = joiner->OpenWait(WaitMode::kUncancellable, /*external=*/false);
  return true;
}

inline void CoroutineState::ClearJoinWaker(CoroutineState* joiner) {
  StateExtension* ext = Ext();  // installed by SetJoinWaker
  CoroutineState* dropped = nullptr;
  {
    MutexLock lock(ext->mu);
    if (ext->joiner == joiner) dropped = std::exchange(ext->joiner, nullptr);
  }
  if (dropped != nullptr) dropped->Unref();  // not the last reference: the joiner runs
}

// The running spawned coroutine on this thread, or null. Not inlined: a coroutine may move
// to another thread across a suspension, and the compiler must not reuse a thread-local
// address computed before it.
[[gnu::noinline]] inline CoroutineState* CurrentState() {
  return static_cast<CoroutineState*>(internal::t_current_coroutine);
}

inline CoroutineState* RequireCurrentState([[maybe_unused]] const char* what) {
  CoroutineState* state = CurrentState();
  FAIRSCHED_DCHECK(state != nullptr, what);
  return state;
}

}  // namespace internal

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_INTERNAL_COROUTINE_STATE_H_
