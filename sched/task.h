// Task: the unit of work of fairsched's scheduler. An intrusive object the user owns: the
// scheduler never allocates, copies or frees a Task (except the ones PostOneShot creates).
//
// A task is a callback plus the scheduling state the scheduler needs:
//   - the callback, called as `f(Task*)` (or `f()`): a function pointer, a member function
//     (`Task(object, &C::Method)`) or any callable. Callables up to kInlineCallbackSize
//     bytes (24: e.g. three captured pointers, or an object pointer plus a member-function
//     pointer) are stored inside the task without heap allocation; larger ones are
//     heap-allocated once per SetCallback.
//   - a deadline on the steady clock (nanosecond resolution). A new task's deadline is
//     "as soon as posted" (TaskDeadline::min()). When an execution begins, the scheduler
//     resets it to that again, so a plain Post() from inside the callback runs the task again
//     right away, and SetDelay/SetDeadline/SetWait choose the next wakeup.
//   - an atomic state (see "State machine" below), the intrusive link `next` used by the
//     front queue and `wait_index` used by the wait queue.
//
// Rules:
//   - A task is in at most one scheduler at a time, and posted at most once at a time: post
//     it again only from its own callback or after its callback has started (from another
//     thread, the new run may then overlap the end of the current one). Debug builds abort
//     with a message on a double post.
//   - Once posted, the task belongs to the scheduler: the poster must not touch it (it may
//     already be running, or have deleted itself) except through Wakeup/Signal.
//   - Setters (SetCallback, SetDelay, ...) may be called before posting or from inside the
//     task's own callback, never while the task is queued.
//   - SetCallback from inside the running callback replaces the running callable: after
//     that call the old callable's captures are destroyed and must not be touched (the same
//     rule as assigning to a std::function from inside itself). Member-function callbacks,
//     the common multi-step style, have no captures to worry about.
//   - The task may delete itself inside its callback (the scheduler does not touch it after
//     the callback returns); it must not be destroyed while queued (debug builds abort).
//
// State machine (DESIGN.md section 3). One atomic byte:
//   PENDING   posted and not yet seen by the sched-role, or executing, or idle.
//   WAITING   in the wait queue (future deadline or infinite wait); set only by the
//             sched-role, with CAS PENDING -> WAITING.
//   READY     woken (by Wakeup, by its deadline, or by Stop): will run / already queued.
//   SIGNALED  READY plus a signal for ReceiveSignal().
// Transitions: sched-role PENDING->WAITING (fails if woken meanwhile: the task is made ready
// at once); sched-role on expiry WAITING->READY (fails if a waker won: the waker pushes the
// task into the front queue, the sched-role must not also ready it); Wakeup
// {PENDING,WAITING}->READY and Signal {PENDING,WAITING,READY}->SIGNALED, pushing the task
// into the front queue only if the old state was WAITING; execution start: any->PENDING
// (exchange), which reports whether a signal arrived. A Wakeup/Signal that lands while the
// task is executing (or not posted) is remembered: the next post runs it at once.
#ifndef FAIRSCHED_SCHED_TASK_H_
#define FAIRSCHED_SCHED_TASK_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

#include "queues/concepts.h"
#include "sync/primitives.h"

// API-misuse checks: on in every build without NDEBUG. They print `message` and abort.
#ifndef NDEBUG
#define FAIRSCHED_DCHECK(condition, message)                                              \
  do {                                                                                    \
    if (!(condition)) ::fairsched::internal::DieWithMessage(message, __FILE__, __LINE__); \
  } while (false)
#else
#define FAIRSCHED_DCHECK(condition, message) \
  do {                                       \
  } while (false)
#endif

namespace fairsched {

using TaskClock = std::chrono::steady_clock;
using TaskDeadline = TaskClock::time_point;
static_assert(std::is_same_v<TaskDeadline, WaitDeadline>);

// "Run as soon as posted" and "only a Wakeup/Signal (or Stop) runs it".
inline constexpr TaskDeadline kTaskDeadlineNow = TaskDeadline::min();
inline constexpr TaskDeadline kTaskDeadlineInfinite = kNoDeadline;

namespace internal {
[[noreturn]] inline void DieWithMessage(const char* message, const char* file, int line) {
  std::fprintf(stderr, "fairsched: %s (%s:%d)\n", message, file, line);
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
class BasicTaskScheduler;

class Task {
 public:
  static constexpr std::size_t kInlineCallbackSize = 24;

  // No callback yet: SetCallback before posting.
  Task() = default;
  // `f(Task*)` or `f()`.
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Task>>>
  explicit Task(F&& f) {
    SetCallback(std::forward<F>(f));
  }
  template <typename C>
  Task(C* object, void (C::*method)(Task*)) {
    SetCallback(object, method);
  }
  ~Task() {
#ifndef NDEBUG
    FAIRSCHED_DCHECK(queued_.load(std::memory_order_relaxed) == 0,
                     "a Task was destroyed while queued in a scheduler");
#endif
    Reset();
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  // Whether a callable of type F is stored inside the task (no heap allocation).
  template <typename F>
  static constexpr bool kStoresInline = sizeof(std::decay_t<F>) <= kInlineCallbackSize &&
                                        alignof(std::decay_t<F>) <= 8;

  template <typename F>
  void SetCallback(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&, Task*> || std::is_invocable_v<Fn&>,
                  "a task callback is called as f(Task*) or f()");
    Reset();
    if constexpr (kStoresInline<Fn>) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      handler_ = &InlineHandler<Fn>;
    } else {
      // Too big for the task: one heap allocation, freed by the next SetCallback or ~Task.
      *reinterpret_cast<Fn**>(storage_) = new Fn(std::forward<F>(f));
      handler_ = &HeapHandler<Fn>;
    }
  }
  template <typename C>
  void SetCallback(C* object, void (C::*method)(Task*)) {
    SetCallback([object, method](Task* task) { (object->*method)(task); });
  }
  bool HasCallback() const { return handler_ != nullptr; }

  // Next deadline = now + delay (saturating: a huge delay means "wait forever").
  void SetDelay(std::chrono::nanoseconds delay) {
    const TaskDeadline now = TaskClock::now();
    const auto step = std::chrono::duration_cast<TaskClock::duration>(delay);
    deadline_ = step >= kTaskDeadlineInfinite - now ? kTaskDeadlineInfinite : now + step;
  }
  void SetDeadline(TaskDeadline deadline) { deadline_ = deadline; }
  // Infinite deadline: the task runs only when woken by Wakeup/Signal (or by Stop).
  void SetWait() { deadline_ = kTaskDeadlineInfinite; }
  TaskDeadline Deadline() const { return deadline_; }

  // Inside the callback: true if this execution began because the deadline passed (a task
  // posted without a deadline counts as expired); false if a Wakeup/Signal (or Stop) woke
  // it before its deadline.
  bool IsExpired() const { return (flags_ & kFlagExpired) != 0; }
  // Inside the callback: true (once) if a Signal woke this execution. Everything the
  // signaler wrote before Signal() is visible.
  bool ReceiveSignal() {
    const bool signaled = (flags_ & kFlagSignaled) != 0;
    flags_ &= static_cast<std::uint8_t>(~kFlagSignaled);
    return signaled;
  }

  // Intrusive hooks for the queues (not for users): `next` (front queue link) and
  // `wait_index` (wait queue position) are declared with the private fields below, in the
  // order that packs the task into 64 bytes.

 private:
  template <typename, typename, typename>
  friend class BasicTaskScheduler;

  enum State : std::uint8_t { kPending = 0, kWaiting = 1, kReady = 2, kSignaled = 3 };
  enum Op { kRun, kDestroy };
  static constexpr std::uint8_t kFlagExpired = 1;
  static constexpr std::uint8_t kFlagSignaled = 2;
  using Handler = void (*)(Task*, Op);

  template <typename Fn>
  static void Call(Fn& fn, Task* task) {
    if constexpr (std::is_invocable_v<Fn&, Task*>) {
      fn(task);
    } else {
      fn();
    }
  }
  template <typename Fn>
  static void InlineHandler(Task* task, Op op) {
    Fn* fn = std::launder(reinterpret_cast<Fn*>(task->storage_));
    if (op == kRun) {
      Call(*fn, task);  // may delete `task`: touch nothing afterwards
    } else {
      fn->~Fn();
    }
  }
  template <typename Fn>
  static void HeapHandler(Task* task, Op op) {
    Fn* fn = *reinterpret_cast<Fn**>(task->storage_);
    if (op == kRun) {
      Call(*fn, task);  // may delete `task`: touch nothing afterwards
    } else {
      delete fn;
    }
  }
  void Reset() {
    if (handler_ != nullptr) handler_(this, kDestroy);
    handler_ = nullptr;
  }
  void Run() { handler_(this, kRun); }

  // --- State transitions; each comments the race its memory order prevents. ---

  // Sched-role, receiving a task with a future deadline. Release on success: the
  // sched-role read (and, when reversing the front list, wrote) `next` before this point;
  // once WAITING is visible a waker may win the task and write `next` (front push). The
  // waker's acquire CAS pairs with this release, so our accesses happen-before its write.
  // Failure (already READY/SIGNALED): relaxed, the sched-role just makes it ready; the
  // executor acquires the waker's writes itself when it resets the state.
  bool TryPendingToWaiting() {
    std::uint8_t expected = kPending;
    return state_.compare_exchange_strong(expected, kWaiting, std::memory_order_release,
                                          std::memory_order_relaxed);
  }
  // Sched-role, deadline passed (or Stop). Acquire on success: we take the task back from
  // the WAITING state it was published in and will write its flags and hand it to the
  // ready queue. On failure a waker owns it (and pushes it into the front queue): we must
  // not touch it, so relaxed is enough.
  bool TryWaitingToReady() {
    std::uint8_t expected = kWaiting;
    return state_.compare_exchange_strong(expected, kReady, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  // Wakeup (to kReady) or Signal (to kSignaled), any thread. Returns true if the caller
  // must push the task into the front queue (the old state was WAITING).
  // acq_rel: acquire pairs with TryPendingToWaiting's release (we are about to write `next`
  // in the front push; the sched-role's earlier accesses to it must happen-before); release
  // publishes what the waker wrote before Wakeup/Signal (e.g. a result) to the executor,
  // whose acquire exchange in BeginExecution reads this value or a later one in the same
  // read-modify-write chain.
  bool TryWake(std::uint8_t target) {
    std::uint8_t old = state_.load(std::memory_order_relaxed);
    while (true) {
      // Already woken: READY absorbs a Wakeup; SIGNALED absorbs both.
      if (old == kSignaled || (old == kReady && target == kReady)) return false;
      if (state_.compare_exchange_weak(old, target, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
        return old == kWaiting;
      }
    }
  }
  // Executor, just before the callback. acq_rel exchange: acquire pairs with a waker's
  // release (its writes before Signal/Wakeup are visible in the callback); release orders
  // this execution's start before any later waker that reads PENDING. Returns the flags for
  // the callback; the sched-role wrote kFlagExpired before publishing the task.
  void BeginExecution() {
    const std::uint8_t old = state_.exchange(kPending, std::memory_order_acq_rel);
    if (old == kSignaled) flags_ |= kFlagSignaled;
    deadline_ = kTaskDeadlineNow;
#ifndef NDEBUG
    // Relaxed: the flag only guards against misuse by the task's owner; the callback that
    // may re-post runs after this store on the same thread.
    queued_.store(0, std::memory_order_relaxed);
#endif
  }

  // Layout: 64 bytes, one cache line (checked in tests/sched/task_test.cc).
 public:
  Task* next = nullptr;  // 8: front queue link
 private:
  Handler handler_ = nullptr;                              // 8
  alignas(8) unsigned char storage_[kInlineCallbackSize];  // 24
  TaskDeadline deadline_ = kTaskDeadlineNow;               // 8
  Atomic<const void*> owner_{nullptr};  // 8: scheduler it was last posted to (misuse checks)
 public:
  std::uint32_t wait_index = kNotInWaitQueue;  // 4: wait queue position
 private:
  Atomic<std::uint8_t> state_{kPending};
  Atomic<std::uint8_t> queued_{0};  // debug builds: 1 while posted and not yet started
  std::uint8_t flags_ = 0;          // kFlag*: written by sched-role/executor, read in callback
};

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_TASK_H_
