// Task: the unit of work of fairsched's scheduler. An intrusive object the user owns: the
// scheduler never allocates, copies or frees a Task (except the ones PostOneShot creates,
// which it owns and recycles: sched/task_pool.h).
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
//   - A task is in at most one scheduler at a time, and posted at most once at a time. Post
//     it again only (a) from inside its own callback, or (b) after its callback has returned,
//     from a thread that knows it returned (the callback told it through some synchronisation).
//     Re-posting from another thread while the callback still runs is forbidden: the two runs
//     would race on the task's flags and on a stateful callable. A double post (posting a task
//     that is queued and has not started) aborts with a message in EVERY build (one relaxed
//     exchange per post; a relaxed load and store when the task re-posts itself from its own
//     callback, where no other thread may post it); the other forbidden case cannot be detected
//     cheaply (the scheduler never touches a task after its callback returns), and ThreadSanitizer
//     reports it.
//   - Once posted, the task belongs to the scheduler: the poster must not touch it (it may
//     already be running, or have deleted itself) except through Wakeup/Signal/Cancel.
//   - Setters (SetCallback, SetDelay, ...) may be called before posting or from inside the
//     task's own callback, never while the task is queued.
//   - SetCallback from inside the running callback replaces the running callable: after
//     that call the old callable's captures are destroyed and must not be touched (the same
//     rule as assigning to a std::function from inside itself). Member-function callbacks,
//     the common multi-step style, have no captures to worry about.
//   - The task may delete itself inside its callback (the scheduler does not touch it after
//     the callback returns). Destroying a task that is queued (posted, waiting, not yet
//     started) aborts with a message in every build: it would leave a dangling pointer in the
//     scheduler. To get rid of a waiting task, Cancel it and let its callback delete it.
//   - Wakers and lifetime. Wakeup/Signal/Cancel touch the task until their atomic step (or,
//     when they won a waiting task, until they pushed it into the front queue, which is
//     before it can run). With ONE waker, the task may therefore delete itself as soon as it
//     has seen that waker's effect (ReceiveSignal() true, IsCancelled() true). With SEVERAL
//     possible wakers (say a completion, a cancel and a shutdown), a task that deletes itself
//     after the first may free memory a slower waker is about to touch: the owner must then
//     keep the task alive until every waker is done (reference counting, or a rule such as
//     "wakers only run on the scheduler's workers and the task is deleted by a later post").
//
// State machine (docs/semantics.md explains it). One atomic byte of bits:
//   0 (PENDING) posted and not yet seen by the sched-role, or executing, or idle.
//   kWaiting    in the wait queue (future deadline or infinite wait); set only by the
//               sched-role, with CAS 0 -> kWaiting.
//   kWoken      woken by Wakeup/Signal/Cancel, by its deadline or by Stop: it will run (or
//               is already queued to run); later wakers are absorbed.
//   kSignaled   a Signal woke it (ReceiveSignal()).
//   kCancelled  a Cancel woke it (IsCancelled()).
// Transitions:
//   sched-role, new post with a future deadline: CAS 0 -> kWaiting; fails if a waker got
//     there first (the task is then made ready at once).
//   sched-role, deadline passed (or Stop): CAS kWaiting -> kWaiting|kWoken; fails if a waker
//     won, and then the waker pushes the task into the front queue and the sched-role must
//     not also make it ready (a task is never in two queues).
//   Wakeup/Signal/Cancel, any thread: fetch_or(kWoken | its bit). The waker that turns
//     kWaiting into kWaiting|kWoken pushes the task into the front queue; every other waker
//     only leaves its bit. A wakeup that lands while the task executes (or is not posted) is
//     remembered: the next post runs at once.
//   executor, just before the callback: exchange(0), which reports the signal/cancel bits.
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

// API-misuse checks. FAIRSCHED_DCHECK is on in every build without NDEBUG; FAIRSCHED_CHECK
// is on in every build (for misuse that would otherwise corrupt the scheduler and that costs
// next to nothing to detect). Both print `message` with the location and abort.
#define FAIRSCHED_CHECK(condition, message)                                               \
  do {                                                                                    \
    if (!(condition)) ::fairsched::internal::DieWithMessage(message, __FILE__, __LINE__); \
  } while (false)
#ifndef NDEBUG
#define FAIRSCHED_DCHECK(condition, message) FAIRSCHED_CHECK(condition, message)
#else
#define FAIRSCHED_DCHECK(condition, message) \
  do {                                       \
  } while (false)
#endif

namespace fairsched {

using TaskClock = SteadyClock;  // std::chrono::steady_clock (sync/primitives.h)
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
namespace internal {
struct TaskStateAccess;  // test-only access to the state transitions (tests/explore)
}  // namespace internal

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
    // Relaxed: the owner destroying its own task is ordered after its own post by program
    // order; a racing destruction is a bug TSan reports. Checked in every build: a queued
    // task left behind is a dangling pointer in the scheduler.
    FAIRSCHED_CHECK(queued_.load(std::memory_order_relaxed) == 0,
                    "a Task was destroyed while queued in a scheduler (Cancel it instead)");
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
  // Inside the callback: true if a Cancel woke this execution (it may also have been
  // signalled or have expired at the same time: a cancelled task should just clean up).
  bool IsCancelled() const { return (flags_ & kFlagCancelled) != 0; }

  // Intrusive hooks for the queues (not for users): `next` (front queue link) and
  // `wait_index` (wait queue position) are declared with the private fields below, in the
  // order that packs the task into 64 bytes.

 private:
  // The scheduler calls the transitions and marks below; it never writes a field itself.
  template <typename, typename, typename>
  friend class BasicTaskScheduler;
  friend struct internal::TaskStateAccess;

  // State bits (see "State machine" above); 0 is PENDING.
  static constexpr std::uint8_t kWaiting = 1;
  static constexpr std::uint8_t kWoken = 2;
  static constexpr std::uint8_t kSignaled = 4;
  static constexpr std::uint8_t kCancelled = 8;
  enum Op { kRun, kDestroy };
  static constexpr std::uint8_t kFlagExpired = 1;
  static constexpr std::uint8_t kFlagSignaled = 2;
  static constexpr std::uint8_t kFlagCancelled = 4;
  // Owned by the scheduler (PostOneShot): recycled after its callback returns.
  static constexpr std::uint8_t kFlagOneShot = 8;
  // Post time stamped for the latency histogram (see StampPostTime).
  static constexpr std::uint8_t kFlagStamped = 16;
  // This post's wait is not ended by Stop (BasicTaskScheduler::PostDeadlineThroughStop).
  static constexpr std::uint8_t kFlagThroughStop = 32;
  // The bits that travel with a task from its post to its execution; the per-run bits
  // (expired/signaled/cancelled) are rewritten by the sched-role and the executor.
  static constexpr std::uint8_t kFlagsKeptUntilRun = kFlagOneShot | kFlagStamped | kFlagThroughStop;
  // The bits that belong to one post and end with its execution.
  static constexpr std::uint8_t kFlagsOfOnePost = kFlagStamped | kFlagThroughStop;
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

  // Post, any thread: marks the task queued; returns false if it already was (double post).
  // Relaxed: the byte only detects misuse. An RMW (not load + store) so that two threads
  // racing to post the same task cannot both see 0.
  bool MarkQueued() { return queued_.exchange(1, std::memory_order_relaxed) == 0; }
  // The same check for a post that no other thread may make at the same time without
  // already breaking the rules: the task re-posting itself from its own callback (another
  // thread posting it while the callback runs is the forbidden case that is never detected),
  // or a one-shot task fresh from the pool. A relaxed load and store instead of the
  // exchange: it still catches every double post ordered after the first (posting twice in
  // a row), and saves a locked instruction on the hottest path (measured: a third of Post).
  bool MarkQueuedExclusive() {
    if (queued_.load(std::memory_order_relaxed) != 0) return false;
    queued_.store(1, std::memory_order_relaxed);
    return true;
  }

  // Sched-role, receiving a task with a future deadline: 0 -> kWaiting. Release on success:
  // the sched-role read the task's front-queue link before this point, and once kWaiting is
  // visible a waker may win the task and rewrite that link (its front push). The waker's
  // acq_rel fetch_or reads this store, so our read happens-before its write. Relaxed on
  // failure: a waker got there first; we only make the task ready, and the executor acquires
  // the waker's writes itself (BeginExecution).
  bool TryPendingToWaiting() {
    std::uint8_t expected = 0;
    return state_.compare_exchange_strong(expected, kWaiting, std::memory_order_release,
                                          std::memory_order_relaxed);
  }
  // Sched-role, deadline passed (or Stop): kWaiting -> kWaiting|kWoken. Relaxed: if the CAS
  // succeeds no waker has touched the task since the sched-role itself stored kWaiting (a
  // waker's fetch_or would have changed the value and failed us), so there is nothing to
  // acquire; the ready queue's release/acquire hand-off publishes our flag writes to the
  // executor. On failure a waker owns the hand-off (it pushes the task into the front
  // queue): we must not touch the task.
  bool TryWaitingToReady() {
    std::uint8_t expected = kWaiting;
    return state_.compare_exchange_strong(expected, kWaiting | kWoken, std::memory_order_relaxed,
                                          std::memory_order_relaxed);
  }
  // Wakeup (kWoken), Signal (kWoken|kSignaled) or Cancel (kWoken|kCancelled), any thread.
  // Returns true if the caller won a waiting task and must push it into the front queue.
  // Always a read-modify-write, also when the task is already woken: acq_rel.
  //  - release: what the waker wrote before the call happens-before the execution that
  //    absorbs this wakeup: the first BeginExecution whose load sees a bit set (ours or a
  //    later one); its exchange reads our value or a later one in this byte's RMW chain,
  //    so it synchronises with us. (A plain load that
  //    found the task already woken would publish nothing: the run could start, read old
  //    data and never run again. That was a real bug.)
  //  - acquire: pairs with TryPendingToWaiting's release; the winner writes the task's link
  //    next (the front push), after the sched-role's last read of it.
  bool TryWake(std::uint8_t bits) {
    const std::uint8_t old = state_.fetch_or(bits, std::memory_order_acq_rel);
    return (old & (kWaiting | kWoken)) == kWaiting;
  }
  // Sched-role: whether a waker (or a remembered wakeup) has woken the task. Relaxed: the
  // front queue's acquire pop already made the task visible; this only selects the path,
  // and the bits are read again with acquire by BeginExecution.
  bool IsWoken() const { return (state_.load(std::memory_order_relaxed) & kWoken) != 0; }
  bool IsWaiting() const { return (state_.load(std::memory_order_relaxed) & kWaiting) != 0; }

  // Executor, just before the callback: takes the state bits. Most runs come from a plain
  // post that nobody woke: their state is 0 and there is nothing to take, which a relaxed
  // load finds without a locked instruction (measured: one of the three locked
  // instructions per task of a self-re-posting task). A waker whose fetch_or comes after
  // that load leaves its bits in the byte, so the task's next post runs at once: exactly
  // what a wakeup during the run does, and no waker can tell the two moments apart. When
  // bits are set we take them with an acquire exchange: it pairs with every waker's
  // release (their writes before Wakeup/Signal/Cancel are visible in the callback). No
  // release is needed: nothing a later waker does depends on what happened before this
  // point (a waker that reads 0 only leaves a bit). The sched-role wrote kFlagExpired
  // before publishing the task; the signal/cancel bits are added here.
  void BeginExecution() {
    std::uint8_t old = state_.load(std::memory_order_relaxed);
    if (old != 0) old = state_.exchange(0, std::memory_order_acquire);
    flags_ &= static_cast<std::uint8_t>(~kFlagsOfOnePost);  // this post's stamp and marks
    if ((old & kSignaled) != 0) flags_ |= kFlagSignaled;
    if ((old & kCancelled) != 0) flags_ |= kFlagCancelled;
    deadline_ = kTaskDeadlineNow;
    // Relaxed: the byte only guards against misuse; a re-post from inside the callback
    // comes after this store on the same thread.
    queued_.store(0, std::memory_order_relaxed);
  }

  // --- The scheduler's reads and writes of the task's flags, deadline and owner. Each
  // write is made by the one thread that may touch the task at that point (its poster, the
  // sched-role, or its executor), and the queue hand-off that follows publishes it; the
  // owner, read by wakers on any thread, is atomic. ---

  // Post, any thread: the scheduler the task is posted to, for the misuse checks of
  // Wakeup/Signal/Cancel. Relaxed: only checked for misuse; correctness never depends on it.
  void SetOwner(const void* scheduler) { owner_.store(scheduler, std::memory_order_relaxed); }
  // Whether `scheduler` may wake the task: it was last posted there, or never posted.
  // Relaxed, like SetOwner (a misuse check).
  bool IsOwnedByOrUnposted(const void* scheduler) const {
    const void* const owner = owner_.load(std::memory_order_relaxed);
    return owner == nullptr || owner == scheduler;
  }
  // Whether a TaskPool made the task (a PostOneShot task). pooled_ is set before the task is
  // ever shared and never changes, so this read races with nothing, whenever it happens.
  bool IsPooled() const { return pooled_; }
  // TaskPool, on a task it has just created, before any other thread can see it.
  void MarkPooled() { pooled_ = true; }
  // PostOneShot, on a task fresh from the pool (no other thread can post it): the scheduler
  // owns it and recycles it after its callback returns.
  void MarkOneShot() { flags_ = kFlagOneShot; }
  bool IsOneShot() const { return (flags_ & kFlagOneShot) != 0; }
  // PostDeadlineThroughStop: this post's wait is not ended by Stop. The poster's setter,
  // like the deadline; BeginExecution clears it with the post's other marks.
  void MarkThroughStop() { flags_ |= kFlagThroughStop; }
  // The sched-role making the task ready (or its worker keeping a run-now post in its local
  // batch, set as the sched-role would set it, so that publishing it later does not touch
  // it again): IsExpired() in the callback will be `expired`. The one-shot mark and the
  // post-time stamp travel on from the post. Plain write: the executor reads it after the
  // ready queue's release/acquire hand-off.
  void MarkReady(bool expired) {
    flags_ =
        static_cast<std::uint8_t>((flags_ & kFlagsKeptUntilRun) | (expired ? kFlagExpired : 0));
  }
  // The executor, after a one-shot's callback returned: blanks the task for its pool
  // (destroys the callable and its captures). Only this thread can reach it now (the
  // callback, the only other holder of the pointer, has returned), so plain and relaxed
  // accesses suffice. Nobody can have posted it again: Post refuses pooled tasks.
  void ResetForPool() {
    Reset();
    flags_ = 0;
    deadline_ = kTaskDeadlineNow;
    // A Wakeup of the one-shot from its own callback left a bit no run will consume.
    state_.store(0, std::memory_order_relaxed);
  }

  // Post-time stamp for the scheduler's latency histogram, stored where it costs no room:
  // in the deadline of a task posted to run at once (deadline kTaskDeadlineNow, which is
  // TaskDeadline::min()). The stamp is min() + (post time since the steady clock's epoch),
  // so it stays below any real "now": the sched-role still sees the task as due at once,
  // in post order, exactly as with min() (even when it read its `now` just before this
  // post). kFlagStamped tells the executor the deadline holds a stamp; BeginExecution
  // resets both. Written by the poster before the post, like every other setter.
  void StampPostTime(TaskDeadline now) {
    deadline_ = kTaskDeadlineNow + now.time_since_epoch();
    flags_ |= kFlagStamped;
  }
  bool IsStamped() const { return (flags_ & kFlagStamped) != 0; }
  bool WaitsThroughStop() const { return (flags_ & kFlagThroughStop) != 0; }
  TaskDeadline PostTime() const { return TaskDeadline(deadline_ - kTaskDeadlineNow); }

  // Layout: 64 bytes, one cache line (also checked in tests/sched/task_test.cc).
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
  Atomic<std::uint8_t> state_{0};   // state bits (see "State machine")
  Atomic<std::uint8_t> queued_{0};  // 1 while posted and not yet started (misuse checks)
  std::uint8_t flags_ = 0;          // kFlag*: written by sched-role/executor, read in callback
  // Set once, before the task is ever shared, for the tasks a TaskPool creates (PostOneShot)
  // and never changed: lets Post and Wakeup refuse such a task's pointer from any thread
  // without a race (a one-shot's Task* is valid only during its callback).
  bool pooled_ = false;
  friend class TaskPool;
};

static_assert(sizeof(Task) == 64, "a Task is exactly one cache line");

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_TASK_H_
