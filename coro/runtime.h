// coro runtime: coroutines running as fairsched tasks.
//
// Spawn(scheduler, task) turns a coro::Task<T> into a *spawned coroutine*: a small state
// object (allocated by FrameAllocator) that holds the root task, a fairsched::Task whose
// callback resumes the coroutine, and the coroutine's wait word. The scheduler sees an
// ordinary Task, so fairness, the exactly-once Wakeup/Signal semantics and deadlines are the
// scheduler's own; callback tasks and coroutines mix freely in one scheduler.
//
// Who resumes a coroutine, where:
//   - Only its own fairsched::Task callback resumes it, on whichever worker runs that task,
//     through the per-thread resume loop (coro/task.h), so nested Task awaits run there too.
//   - When the coroutine suspends on a runtime awaitable (Yield, a wait), the awaitable only
//     records what it wants; after the resume loop returns, the callback posts the task
//     (Yield: to the back of the ready queue; a wait: with the wait's deadline, or with no
//     deadline). Nobody else ever calls resume(), so two threads never run one coroutine.
//   - Wakers (any thread) never resume anything: they close the wait in the wait word and
//     call the scheduler's Wakeup on the coroutine's task.
//
// The wait primitive (for building mutexes, events, semaphores, task lists):
//   1. `Waker waker = PrepareWait(mode);` inside the coroutine opens a new wait: it bumps the
//      coroutine's epoch and returns a waker bound to (coroutine, epoch).
//   2. Publish the waker wherever the event source finds it (a mutex's waiter list, ...).
//   3. `WakeReason why = co_await WaitWoken(deadline);` suspends until the wait is closed.
//   Exactly one party closes each wait: the first waker (Wakeup -> kWakeup, Signal ->
//   kSignal), Cancel (kCancelled; cancellable waits only), the deadline (kDeadline; or
//   kCancelled when the coroutine's own cancellation deadline came first), or Stop
//   (kShutdown; cancellable waits only). A waker that fires between steps 1 and 3 is not
//   lost: WaitWoken then returns at once.
//
// Wait identity (epochs): a Waker names the epoch it was prepared for. Waking checks, in
// the same compare-and-swap that closes the wait, that the epoch is still current and the
// wait still open; a waker from an earlier wait (stale: that wait timed out or was
// cancelled, and the coroutine now waits for something else) does nothing and returns
// false. The scheduler's Task remembers a wakeup that lands while it runs; such a leftover
// wakeup from a wait that closed another way can make the task run once more than needed.
// The callback detects that (the current wait is still open and neither its deadline nor
// Stop ended it) and posts the task again with the same deadline, without resuming the
// coroutine: each wait resumes the coroutine exactly once.
//
// Wakers and lifetime: the state is reference-counted. The coroutine holds one reference
// until it finishes, the JoinHandle one, and every Waker / CoroutineRef copy one, as does a
// child coroutine on its parent. The state (and the root frame, which keeps the result) is
// freed by whoever drops the last reference, so a late waker never touches freed memory:
// it holds its own reference while it wakes. Wakers and CoroutineRefs must not outlive the
// scheduler while they can still fire; once the coroutine has finished they do nothing.
// A join (co_await of the JoinHandle, Get) returns only after the root frame, the
// coroutine's parameters included, is destroyed, unless a CoroutineRef or Waker copy still
// holds the state: the finishing coroutine hands its own reference to the attached handle,
// and the join drops both once the coroutine's thread is done with the state.
//
// Cancellation (cooperative): Cancel() records a reason (first one wins) and wakes the
// coroutine from a cancellable wait with kCancelled; every later cancellable wait returns
// kCancelled at once, and IsCancelled() is true inside. A coroutine spawned from inside
// another one (SpawnOptions::child_of_current, the default) is its child: cancelling the
// parent cancels the child with the same reason, and the child's cancellation deadline is
// at most the parent's. SpawnOptions::deadline cancels the coroutine (reason kDeadline) at
// that time: a cancellable wait ends then with kCancelled and IsCancelled() turns true. It
// bounds uncancellable waits too (a join, Mutex::Lock, an io_uring socket operation): at
// the deadline the cancellation is requested (its callbacks run: the IO operation is
// cancelled, children are cancelled) and the wait goes on until its event comes.
// CancelCallback registers a function that runs on the cancelling thread (or at once, if
// the coroutine is already cancelled). Cancel runs every callback, children's cancellation
// included, before it ends the coroutine's wait, so the woken coroutine finds them done.
// Callbacks never run under a lock; a callback may cancel anything (also its own coroutine
// again: Cancel is idempotent) and may deregister itself; deregistering waits only for a
// callback that is running on another thread. A callback must not wait for its own
// coroutine to make progress (that coroutine is not woken until the callback returns), nor
// for a coroutine that joins it: a finishing child deregisters from its parent's
// cancellation, which waits for a parent cancellation that is running the child's
// callbacks, and the join waits for those last steps of the child.
//
// Stop: when the scheduler stops, every coroutine in a cancellable wait (or starting one)
// is cancelled with reason kShutdown and its wait returns kShutdown; IsCancelled() turns
// true. Uncancellable waits are not woken by Stop (their task is posted with
// PostDeadlineThroughStop): they end with their event, which Stop's own effects bring
// (the cancelled coroutines release their locks and finish, IO operations are cancelled),
// and Stop waits for them without spinning. Yield still works, so coroutines can finish
// their cleanup. Stop returns once every coroutine has finished: a coroutine that ignores
// shutdown (yields forever, or waits without cancellation on something that never happens)
// keeps Stop from returning, like a task that re-posts itself forever.
//
// Results: `co_await std::move(handle)` inside a coroutine, or handle.Get() / WaitFor() on a
// plain thread, returns the value or rethrows the coroutine's exception. With a deadline:
// `co_await handle.Finished(deadline)` in a coroutine, WaitUntil on a plain thread; neither
// takes the result nor cancels the coroutine when the deadline comes first. A coroutine whose
// handle is let go (Detach(), or the handle destroyed) without taking its result, and that
// ends with an exception, aborts the process with a message: nobody could ever see it. The
// same whether it finished before or after the handle went.
//
// Misuse caught in debug builds with a message: runtime awaitables or PrepareWait outside a
// spawned coroutine, WaitWoken without PrepareWait, PrepareWait twice, joining twice. In
// every build: a spawned coroutine that suspends on an awaitable the runtime does not know
// (it would never be resumed).
#ifndef FAIRSCHED_CORO_RUNTIME_H_
#define FAIRSCHED_CORO_RUNTIME_H_

#include <algorithm>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

#include "coro/frame_allocator.h"
#include "coro/task.h"
#include "sched/task.h"
#include "sync/primitives.h"

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

class Waker;
class CoroutineRef;
template <typename T>
class JoinHandle;
class CancelCallback;
template <typename Scheduler, typename T>
JoinHandle<T> Spawn(Scheduler& scheduler, Task<T> task, SpawnOptions options = {});
template <typename T>
JoinHandle<T> SpawnHere(Task<T> task, SpawnOptions options = {});

namespace internal {

// The scheduler behind a coroutine, type-erased so that wakers and primitives need not be
// templates: any BasicTaskScheduler<...> (or anything with PostDeadline, Wakeup and
// IsStopping of the same meaning) works, including the IO-backend configurations.
// `post` with `through_stop` is PostDeadlineThroughStop (an uncancellable wait: Stop must
// not wake it, see "Stop" above).
struct SchedulerOps {
  void (*post)(void* scheduler, fairsched::Task* task, TaskDeadline deadline, bool through_stop);
  void (*wakeup)(void* scheduler, fairsched::Task* task);
  bool (*is_stopping)(void* scheduler);
};
template <typename Scheduler>
inline constexpr SchedulerOps kSchedulerOps = {
    [](void* s, fairsched::Task* task, TaskDeadline deadline, bool through_stop) {
      if (through_stop) {
        static_cast<Scheduler*>(s)->PostDeadlineThroughStop(task, deadline);
      } else {
        static_cast<Scheduler*>(s)->PostDeadline(task, deadline);
      }
    },
    [](void* s, fairsched::Task* task) { static_cast<Scheduler*>(s)->Wakeup(task); },
    [](void* s) { return static_cast<Scheduler*>(s)->IsStopping(); },
};

// A node in a coroutine's list of things to do when it is cancelled.
struct CancelRegistration {
  void (*invoke)(void* context, CancelReason reason) = nullptr;
  void* context = nullptr;
  CancelRegistration* prev = nullptr;
  CancelRegistration* next = nullptr;
  bool linked = false;
};

class CoroutineState;
CoroutineState* CurrentState();

// A plain thread that runs some coroutines' ready continuations itself while it waits for
// them, as well as the scheduler's workers (TaskList::Wait on a saturated scheduler). A
// coroutine with a helper reports to it, under the helper's own lock:
//   - Suspended(state, yielded) after a step (on whichever thread ran it): a Yield is a
//     ready continuation, which the helper may offer to its thread. Returns whether the
//     state must post its task: not when a post of it is still pending (its run serves).
//   - Woken(state) when a waker closed its wait (before the scheduler wakeup): ready too.
//   - BeforeTaskRun(state) at the start of the task's callback: kRun, or kSkip when the
//     helper thread is running the coroutine right now (its Suspended posts again), or
//     kRelease when the coroutine finished on the helper thread while this run was pending
//     (the run drops the coroutine's own reference, which Finish left to it).
//   - Finished(state): the coroutine is done; the helper forgets it. Returns true if a task
//     run is still pending (it will release the coroutine's own reference).
// The per-coroutine bookkeeping (HelpState) lives with the coroutine state, guarded by the
// helper's lock. The helper thread runs a continuation it claimed with RunClaimedStep.
class ContinuationHelper {
 public:
  enum class TaskRun : std::uint8_t { kRun, kSkip, kRelease };
  virtual bool Suspended(CoroutineState* state, bool yielded) = 0;
  virtual void Woken(CoroutineState* state) = 0;
  virtual TaskRun BeforeTaskRun(CoroutineState* state) = 0;
  virtual bool Finished(CoroutineState* state) = 0;

 protected:
  ~ContinuationHelper() = default;
};
struct HelpState {
  bool offered = false;       // a ready continuation is offered to the helper thread
  bool running = false;       // a step runs (on a worker or on the helper thread)
  bool task_pending = false;  // the task is posted and its callback has not started
  bool finished = false;      // finished on the helper thread with a task run pending
};

// What the untyped state needs from its root frame, whose promise type depends on the
// result type: one static table per T.
struct RootOps {
  bool (*failed)(void* frame);                 // the body ended with an exception
  void (*report)(void* frame);                 // prints that exception and aborts
};
template <typename T>
struct RootOpsFor {
  static Promise<T>& PromiseOf(void* frame) {
    return std::coroutine_handle<Promise<T>>::from_address(frame).promise();
  }
  static bool Failed(void* frame) { return PromiseOf(frame).HasException(); }
  [[noreturn]] static void Report(void* frame) {
    try {
      (void)PromiseOf(frame).TakeResult();  // only to rethrow: T may be [[nodiscard]]
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fairsched: a detached coroutine threw: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "fairsched: a detached coroutine threw a non-std exception\n");
    }
    std::fflush(stderr);
    std::abort();
  }
  static constexpr RootOps kOps = {&Failed, &Report};
};

// The parts of a coroutine's state that most coroutines never use, allocated on first use
// (and at spawn when the coroutine has a parent, a cancellation deadline or a helper), so
// that the state itself fits in two cache lines in front of the root frame. Once installed
// it stays until the state is destroyed.
struct StateExtension {
  static void* operator new(std::size_t size) { return FrameAllocator::Allocate(size); }
  static void operator delete(void* pointer, std::size_t size) {
    FrameAllocator::Deallocate(pointer, size);
  }

  // Fixed at spawn (coroutine-thread reads).
  TaskDeadline cancel_deadline = kTaskDeadlineInfinite;  // SpawnOptions::deadline, parent's
  CoroutineState* parent = nullptr;                      // holds a reference
  CancelRegistration parent_link;                        // in the parent's callbacks
  ContinuationHelper* helper = nullptr;
  // Coroutine thread: the open wait's own deadline (needed only beside a cancel deadline).
  TaskDeadline wait_deadline = kTaskDeadlineInfinite;
  HelpState help;  // guarded by the helper's lock
  // Guarded by mu: cancel callbacks, the joiner, plain-thread waiters.
  fairsched::Mutex mu;
  ConditionVariable cv;
  CancelRegistration* callbacks = nullptr;
  bool cancel_callbacks_started = false;
  CancelRegistration* running_callback = nullptr;
  std::thread::id running_callback_thread;
  CoroutineState* joiner = nullptr;  // holds a reference
  std::uint64_t join_epoch = 0;
};

// A spawned coroutine's state. Lives in the root frame's header (kFrameHeader bytes in
// front of the frame, coro/task.h): one allocation holds both, the scheduler task on the
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
  static CoroutineState* Create(void* scheduler, const SchedulerOps* ops, Task<T> task,
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

  // --- References (see "Wakers and lifetime"). ---
  // Relaxed increment: the caller already holds a reference, so the count cannot be zero
  // and nothing needs ordering. Acq_rel decrement: release makes our uses of the state
  // happen-before the destruction; acquire (for the thread that reaches zero) sees
  // everyone's.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref(std::uint32_t count = 1) {
    if (refs_.fetch_sub(count, std::memory_order_acq_rel) == count) Destroy();
  }

  // --- The wait word. ---
  // One atomic 64-bit word holds the current wait and the sticky flags, so that opening a
  // wait, closing it, cancelling and finishing are each one compare-and-swap:
  //   bit 0       kOpen: a wait is open (prepared, and not yet closed)
  //   bits 1-3    the WakeReason of the last closed wait
  //   bit 4       kCancellableWait: the open wait ends on Cancel/Stop
  //   bit 5       kExternalWait: the open wait ends on CoroutineRef::Wakeup/Signal
  //   bit 6       kCancelRequested (sticky)
  //   bits 7, 8   kPendingWakeup, kPendingSignal: a CoroutineRef::Wakeup/Signal that came
  //               while no external wait was open, kept for the next one
  //   bit 9       kFinished: the coroutine is done (its result is written); nothing opens
  //               again
  //   bit 10      kDetached: the JoinHandle let go without taking the result
  //   bit 11      kFinishDone: Finish touches the state no more (a join waits for it)
  //   bit 12      kOwnRefHandedOver: with kFinishDone, Finish left the coroutine's own
  //               reference to the JoinHandle, which drops both (see ReleaseOwnReference)
  //   bits 16-63  the epoch of the current (or last) wait; only the coroutine changes it
  static constexpr std::uint64_t kOpen = 1;
  static constexpr int kReasonShift = 1;
  static constexpr std::uint64_t kReasonMask = std::uint64_t{7} << kReasonShift;
  static constexpr std::uint64_t kCancellableWait = 1 << 4;
  static constexpr std::uint64_t kExternalWait = 1 << 5;
  static constexpr std::uint64_t kCancelRequested = 1 << 6;
  static constexpr std::uint64_t kPendingWakeup = 1 << 7;
  static constexpr std::uint64_t kPendingSignal = 1 << 8;
  static constexpr std::uint64_t kFinished = 1 << 9;
  static constexpr std::uint64_t kDetached = 1 << 10;
  static constexpr std::uint64_t kFinishDone = 1 << 11;
  static constexpr std::uint64_t kOwnRefHandedOver = 1 << 12;
  static constexpr int kEpochShift = 16;

  static WakeReason ReasonOf(std::uint64_t word) {
    return static_cast<WakeReason>((word & kReasonMask) >> kReasonShift);
  }
  static std::uint64_t EpochOf(std::uint64_t word) { return word >> kEpochShift; }
  // `word` with its open wait closed for `reason`.
  static std::uint64_t Closed(std::uint64_t word, WakeReason reason) {
    return (word & ~(kOpen | kReasonMask | kCancellableWait | kExternalWait)) |
           (static_cast<std::uint64_t>(reason) << kReasonShift);
  }
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
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    // Only this thread changes the epoch bits (the others' CASes keep them).
    const std::uint64_t epoch = EpochOf(old) + 1;
    std::uint64_t desired;
    do {
      desired = (epoch << kEpochShift) |
                (old & (kCancelRequested | kPendingWakeup | kPendingSignal | kReasonMask |
                        kDetached));
      if (cancellable && (cancel_published || (old & kCancelRequested) != 0)) {
        desired = Closed(desired, ShutdownOrCancelled());
      } else if (external && (old & (kPendingWakeup | kPendingSignal)) != 0) {
        const WakeReason reason =
            (old & kPendingSignal) != 0 ? WakeReason::kSignal : WakeReason::kWakeup;
        desired = Closed(desired & ~(kPendingWakeup | kPendingSignal), reason);
      } else {
        desired |= kOpen | (cancellable ? kCancellableWait : 0) | (external ? kExternalWait : 0);
      }
      // Acquire: a canceller's or signaller's writes made before its release CAS (which we
      // read here) are visible once we report its reason. Other threads only CAS this word
      // when they see an open wait, and learn nothing else from us: no release needed.
    } while (!word_.compare_exchange_weak(old, desired, std::memory_order_acquire,
                                          std::memory_order_relaxed));
    return epoch;
  }

  // Coroutine thread, after OpenWait: if the wait is already closed, consumes it and sets
  // `*reason`. Acquire: pairs with the closer's release CAS (its writes are visible).
  bool TakeClosedWait(WakeReason* reason) {
    FAIRSCHED_DCHECK(wait_prepared_, "WaitWoken without PrepareWait");
    const std::uint64_t word = word_.load(std::memory_order_acquire);
    if ((word & kOpen) != 0) return false;
    wait_prepared_ = false;
    *reason = ReasonOf(word);
    return true;
  }

  // Any thread: closes wait `epoch` for `reason` if it is still the open wait, and wakes
  // the coroutine's task. Returns false for a stale or already closed wait.
  bool WakeEpoch(std::uint64_t epoch, WakeReason reason) {
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    do {
      if ((old & kOpen) == 0 || EpochOf(old) != epoch) return false;
      // Release: what the waker wrote before waking is visible to the coroutine, which
      // reads this word with acquire before it reports the reason.
    } while (!word_.compare_exchange_weak(old, Closed(old, reason), std::memory_order_release,
                                          std::memory_order_relaxed));
    WakeTask();
    return true;
  }

  // Any thread: CoroutineRef::Wakeup/Signal. Ends an open external wait, else is
  // remembered for the next one. Release: as in WakeEpoch.
  void NotifyExternal(WakeReason reason) {
    const std::uint64_t pending = reason == WakeReason::kSignal ? kPendingSignal : kPendingWakeup;
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    std::uint64_t desired;
    bool closes;
    do {
      if ((old & kFinished) != 0) return;
      closes = (old & kOpen) != 0 && (old & kExternalWait) != 0;
      desired = closes ? Closed(old, reason) : old | pending;
    } while (!word_.compare_exchange_weak(old, desired, std::memory_order_release,
                                          std::memory_order_relaxed));
    if (closes) WakeTask();
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
    if (StateExtension* ext = ext_.load(std::memory_order_seq_cst)) RunCancelCallbacks(ext, reason);
    const WakeReason wake_reason =
        reason == CancelReason::kShutdown ? WakeReason::kShutdown : WakeReason::kCancelled;
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    std::uint64_t desired;
    bool closes;
    do {
      closes = (old & kOpen) != 0 && (old & kCancellableWait) != 0;
      desired = (closes ? Closed(old, wake_reason) : old) | kCancelRequested;
      // Release, as in WakeEpoch: the callbacks' effects are visible to the coroutine.
    } while (!word_.compare_exchange_weak(old, desired, std::memory_order_release,
                                          std::memory_order_relaxed));
    if (closes) WakeTask();
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
        registration->next = ext->callbacks;
        registration->prev = nullptr;
        if (ext->callbacks != nullptr) ext->callbacks->prev = registration;
        ext->callbacks = registration;
        registration->linked = true;
      }
    }
    if (run_now != CancelReason::kNone) {
      registration->invoke(registration->context, run_now);
      return;
    }
    // The other half of RequestCancel's Dekker pair (the extension is installed, seq_cst,
    // in Ext()): a cancellation that looked for the extension before it existed ran no
    // callbacks, so we run them (RunCancelCallbacks runs them once, whoever calls it).
    const CancelReason reason = cancel_reason_.load(std::memory_order_seq_cst);
    if (reason != CancelReason::kNone) RunCancelCallbacks(ext, reason);
  }
  // Returns once `registration` will not be invoked any more and is not running on another
  // thread (a callback deregistering itself does not wait for itself).
  void RemoveCancelCallback(CancelRegistration* registration) {
    StateExtension* ext = ext_.load(std::memory_order_acquire);  // installed by the Add
    MutexLock lock(ext->mu);
    if (registration->linked) {
      Unlink(ext, registration);
      return;
    }
    while (ext->running_callback == registration &&
           ext->running_callback_thread != std::this_thread::get_id()) {
      ext->cv.wait(lock);
    }
  }

  // --- Completion. ---
  // Acquire: pairs with Finish's release; the result is written.
  bool IsDone() const { return (word_.load(std::memory_order_acquire) & kFinished) != 0; }
  // Plain thread: waits until the coroutine finished or `deadline`.
  bool WaitDone(TaskDeadline deadline) {
    if (IsDone()) return true;
    StateExtension* ext = Ext();
    MutexLock lock(ext->mu);
    // seq_cst loads after the seq_cst install of the extension (Ext): the waiter's half of
    // the Dekker pair with Finish (it sets kFinished, then looks for the extension).
    auto done = [this] { return (word_.load(std::memory_order_seq_cst) & kFinished) != 0; };
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
  // later will (see "Results"). Acq_rel: the RMW decides which of this and Finish's
  // ReleaseOwnReference sees the other (exactly one of them drops the coroutine's own
  // reference); acquire also orders Finish's last touches before a Destroy here.
  void ReleaseHandle() {
    const std::uint64_t old = word_.fetch_or(kDetached, std::memory_order_acq_rel);
    if ((old & kFinished) != 0 && root_ops_->failed(Frame())) root_ops_->report(Frame());
    Unref((old & kOwnRefHandedOver) != 0 ? 2 : 1);
  }
  // The JoinHandle's reference after its join took the result: waits until Finish is done
  // with the state (a few steps on the coroutine's thread, which never wait for the
  // joiner), then drops the handle's reference and the coroutine's own if Finish handed it
  // over. So the root frame, parameters included, is destroyed here, before the join
  // returns, unless someone else (a CoroutineRef, or a helper's pending task run) still
  // holds a reference.
  void ReleaseJoined() {
    // Acquire: pairs with ReleaseOwnReference's release, so Finish's touches of the state
    // happen-before its destruction here.
    std::uint64_t word = word_.load(std::memory_order_acquire);
    for (int spins = 0; (word & kFinishDone) == 0; ++spins) {
      if (spins < 64) {
        CpuRelax();
      } else {
        YieldThread();  // the finishing thread was preempted in its last few steps
      }
      word = word_.load(std::memory_order_acquire);
    }
    Unref((word & kOwnRefHandedOver) != 0 ? 2 : 1);
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
    const bool cancellable = (word_.load(std::memory_order_relaxed) & kCancellableWait) != 0;
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

  // The task callback. See "Who resumes a coroutine, where".
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
    internal::RunResumeLoop(resume_);
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
    if (ContinuationHelper* helper = Helper(); helper != nullptr && !helper->Suspended(this, yielded)) {
      return;
    }
    ops_->post(scheduler_, &task_, deadline, through_stop);
  }

  // A wait was closed by someone else: the task must run. The caller holds a reference.
  void WakeTask() {
    if (ContinuationHelper* helper = Helper()) helper->Woken(this);
    ops_->wakeup(scheduler_, &task_);
  }

  // The task ran while a wait is pending: decide whether the wait is over. Returns false if
  // this run is a leftover wakeup (or the cancellation deadline of an uncancellable wait)
  // and the wait goes on.
  bool FinishWait() {
    std::uint64_t word = word_.load(std::memory_order_acquire);
    if ((word & kOpen) == 0) {  // a waker, Cancel or a remembered wakeup closed it
      last_reason_ = ReasonOf(word);
      return true;
    }
    const bool cancellable = (word & kCancellableWait) != 0;
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
    // Close it ourselves. Acquire on failure: a waker closed it first; we report its reason
    // and need its writes. Its scheduler wakeup is still coming and is absorbed later.
    // The CAS also fails when only a flag changed while the wait stayed open (a
    // CoroutineRef::Wakeup/Signal remembered as pending, a cancel request during an
    // uncancellable wait): then the wait is still ours to close, so retry. (Reporting the
    // word's reason bits there would return the previous wait's reason, e.g. a bogus
    // kWakeup that a mutex waiter would take for the lock.)
    while (!word_.compare_exchange_weak(word, Closed(word, reason), std::memory_order_acquire,
                                        std::memory_order_acquire)) {
      if ((word & kOpen) == 0) {
        last_reason_ = ReasonOf(word);
        return true;
      }
    }
    // The wait is closed first, so cancelling does not wake this (running) task again.
    if (cancel != CancelReason::kNone) RequestCancel(cancel);
    last_reason_ = cancel == CancelReason::kNone ? reason : ShutdownOrCancelled();
    return true;
  }

  void Finish() {
    // Close any wait left prepared and mark the coroutine finished, so that a later waker,
    // Cancel or Wakeup/Signal never calls into the scheduler, and a JoinHandle sees the
    // result. seq_cst (release at least): the root frame's result is written before it;
    // seq_cst for the Dekker pair with the waiters (WaitDone, SetJoinWaker: they install
    // the extension, then look at kFinished; we set it, then look for the extension).
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    while (!word_.compare_exchange_weak(
        old, (old & ~(kOpen | kCancellableWait | kExternalWait)) | kFinished,
        std::memory_order_seq_cst, std::memory_order_relaxed)) {
    }
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
    if ((old & kDetached) != 0 && root_ops_->failed(Frame())) root_ops_->report(Frame());
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
      // to a pending task run, which only the helper knows of: keep the plain rule. Release:
      // a join waiting for kFinishDone may drop its reference after it; ours keeps the
      // state alive for the helper call.
      word_.fetch_or(kFinishDone, std::memory_order_release);
      // Finished on a helper thread while a run of our task is still pending: that run
      // drops our own reference (the task must stay alive until it ran). Last, because
      // from the moment the helper knows, that run may drop it, and nothing may follow.
      if (helper->Finished(this)) return;
      Unref();
      return;
    }
    std::uint64_t old = word_.load(std::memory_order_relaxed);
    for (;;) {
      if ((old & kDetached) != 0) {
        Unref();  // nobody will join: the coroutine's own reference, may destroy this
        return;
      }
      // Release: every touch of the state above happens-before the joiner's (or
      // ReleaseHandle's) acquire of this bit and the Destroy that may follow. A CAS rather
      // than an OR: a concurrent ReleaseHandle (kDetached) must make us drop the reference
      // ourselves, since the handle is gone. Nothing of the state may be touched after it.
      if (word_.compare_exchange_weak(old, old | kFinishDone | kOwnRefHandedOver,
                                      std::memory_order_release, std::memory_order_relaxed)) {
        return;
      }
    }
  }

  // Runs the callbacks once, whoever calls first (RequestCancel, or AddCancelCallback when
  // it raced with the cancellation).
  void RunCancelCallbacks(StateExtension* ext, CancelReason reason) {
    MutexLock lock(ext->mu);
    if (ext->cancel_callbacks_started) return;
    ext->cancel_callbacks_started = true;
    while (ext->callbacks != nullptr) {
      CancelRegistration* registration = ext->callbacks;
      Unlink(ext, registration);
      ext->running_callback = registration;
      ext->running_callback_thread = std::this_thread::get_id();
      lock.unlock();
      // May destroy the registration: only our own fields are touched afterwards.
      registration->invoke(registration->context, reason);
      lock.lock();
      ext->running_callback = nullptr;
      ext->cv.notify_all();
    }
  }

  static void Unlink(StateExtension* ext, CancelRegistration* registration) {
    if (registration->prev != nullptr) registration->prev->next = registration->next;
    if (registration->next != nullptr) registration->next->prev = registration->prev;
    if (ext->callbacks == registration) ext->callbacks = registration->next;
    registration->prev = registration->next = nullptr;
    registration->linked = false;
  }

  // First cache line: the scheduler task whose callback resumes the coroutine.
  fairsched::Task task_;
  // Second cache line: what every step touches.
  const SchedulerOps* const ops_;
  void* const scheduler_;
  std::coroutine_handle<> resume_;  // innermost suspended coroutine (coroutine thread)
  Atomic<std::uint64_t> word_{0};
  TaskDeadline post_deadline_ = kTaskDeadlineInfinite;  // the open wait's post (coroutine)
  Atomic<StateExtension*> ext_{nullptr};
  const RootOps* const root_ops_;
  Atomic<std::uint32_t> refs_{2};  // the coroutine's own and the JoinHandle's
  Atomic<CancelReason> cancel_reason_{CancelReason::kNone};
  // Coroutine-thread state (handed between workers by the scheduler's queues).
  Pending pending_ = Pending::kNone;
  bool wait_prepared_ = false;
  WakeReason last_reason_ = WakeReason::kWakeup;

  friend class fairsched::coro::CancelCallback;
};

static_assert(sizeof(CoroutineState) == kFrameHeader,
              "the state must fill the frame header exactly (coro/task.h)");

inline bool CoroutineState::SetJoinWaker(CoroutineState* joiner) {
  StateExtension* ext = Ext();
  MutexLock lock(ext->mu);
  // seq_cst, after the seq_cst install of the extension: see Finish.
  if ((word_.load(std::memory_order_seq_cst) & kFinished) != 0) return false;
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

// A reference to a wait of a coroutine (see "The wait primitive"). Copyable; thread-safe;
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

// Inside a spawned coroutine: whether it is cancelled (Cancel, a parent's cancellation, its
// cancellation deadline has passed, or the scheduler is stopping), and why.
inline CancelReason CurrentCancelReason() {
  return internal::RequireCurrentState("CurrentCancelReason outside a spawned coroutine")
      ->CancellationReason();
}
inline bool IsCancelled() { return CurrentCancelReason() != CancelReason::kNone; }

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
  // Cancels with reason kRequested (see "Cancellation"). True if this call cancelled it.
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
// detach. Move-only. Destroying it detaches the coroutine (it keeps running).
// Lifetime of the joined coroutine's frame: when a join returns (co_await, Get), the root
// frame (the result and the coroutine's parameters) has been destroyed on the joiner's
// thread, so a parameter may point into the joiner's frame. Exception: a CoroutineRef or
// Waker copy still held elsewhere keeps the state, and the frame goes with the last of them
// (see "Wakers and lifetime"). A detached coroutine's frame goes when it finishes.
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
  friend JoinHandle<U> Spawn(Scheduler& scheduler, Task<U> task, SpawnOptions options);
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
  friend JoinHandle<U> SpawnHere(Task<U> task, SpawnOptions options);

  State* state_ = nullptr;
};

// Runs `task` as a coroutine on `scheduler` (any BasicTaskScheduler<...>): it is posted like
// a task and starts when a worker takes it. Thread-safe; callable inside coroutines (see
// SpawnOptions::child_of_current). The scheduler must outlive the coroutine.
template <typename Scheduler, typename T>
JoinHandle<T> Spawn(Scheduler& scheduler, Task<T> task, SpawnOptions options) {
  FAIRSCHED_DCHECK(task.IsValid() && !task.IsDone(), "Spawn of an empty or started task");
  internal::CoroutineState* state = internal::CoroutineState::Create(
      &scheduler, &internal::kSchedulerOps<Scheduler>, std::move(task), options);
  state->Start();
  return JoinHandle<T>(state);
}

// Inside a spawned coroutine: Spawn on the scheduler that runs it (for combinators that
// start children without naming the scheduler, coro/combinators.h).
template <typename T>
JoinHandle<T> SpawnHere(Task<T> task, SpawnOptions options) {
  FAIRSCHED_DCHECK(task.IsValid() && !task.IsDone(), "SpawnHere of an empty or started task");
  const internal::CoroutineState* current =
      internal::RequireCurrentState("SpawnHere outside a spawned coroutine");
  internal::CoroutineState* state = internal::CoroutineState::Create(
      current->scheduler(), current->scheduler_ops(), std::move(task), options);
  state->Start();
  return JoinHandle<T>(state);
}

// Registers `callback(CancelReason)` to run when the current coroutine is cancelled, on
// the cancelling thread (at once, here, if it already is). The destructor deregisters; if
// the callback is running on another thread it waits for it to return. Create and destroy
// it inside the same spawned coroutine. Neither copyable nor movable.
class CancelCallback {
 public:
  template <typename F>
  explicit CancelCallback(F&& callback)
      : callback_(std::forward<F>(callback)),
        state_(internal::RequireCurrentState("CancelCallback outside a spawned coroutine")) {
    registration_.invoke = [](void* self, CancelReason reason) {
      static_cast<CancelCallback*>(self)->callback_(reason);
    };
    registration_.context = this;
    state_->AddCancelCallback(&registration_);
  }
  ~CancelCallback() { state_->RemoveCancelCallback(&registration_); }
  CancelCallback(const CancelCallback&) = delete;
  CancelCallback& operator=(const CancelCallback&) = delete;

 private:
  internal::CancelRegistration registration_;
  std::function<void(CancelReason)> callback_;
  internal::CoroutineState* state_;
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_RUNTIME_H_
