// coro::TaskList<T>: fork-join over lazy coroutines. Add not-yet-started coroutines (coro::Lazy<T>) to a
// list, then wait for all of them: a plain thread with list.Wait() / WaitFor(timeout) (it
// runs tasks of the list itself while it waits), a coroutine with `co_await list.Join()`
// (it suspends; its worker stays free).
//
// Contract:
//   - Add(task) before the wait starts (debug builds check it); the list owns the tasks.
//     A list is waited for once (WaitFor may be called again after a timeout). Tasks run in
//     Add order of *starting*; they may run in parallel and finish in any order.
//   - Slots: the tasks run inside a few spawned coroutines ("slots"). The wait spawns
//     min(tasks, max_parallel) slots on the scheduler; each slot runs a task and, when it
//     finishes, eagerly pulls the next not-yet-started task of the same list and runs it
//     in the same coroutine (no new spawn, no trip through the scheduler's queues). A task
//     that suspends (Yield, a sleep, a nested list) suspends its slot, which goes back to the
//     scheduler like any coroutine; the other slots and the waiting thread keep pulling.
//   - Plain-thread wait: the calling thread runs slots itself, one after another, each on
//     the calling thread until its task suspends or until no task is left to start. It
//     always starts the first task itself. Then, until every task has finished (or the
//     timeout passed), it runs the list's ready continuations: a slot whose task yielded,
//     or whose wait was ended by a waker, is offered to the waiting thread as well as
//     posted to the scheduler, and whichever gets to it first runs it (the other's turn is
//     skipped). It blocks only when no continuation of the list is ready. So a list whose
//     tasks yield completes on the waiting thread alone when every worker is busy. (A wait
//     ended by its deadline is the scheduler's to run.) Calling Wait/WaitFor inside a
//     spawned coroutine aborts in debug builds: use co_await Join().
//   - Coroutine wait: `co_await list.Join()` spawns the slots as children of the awaiting
//     coroutine and suspends (uncancellably: it always waits until no slot runs any more)
//     until every task has finished or been dropped.
//   - Results: TakeResults() (T != void), after a wait that returned normally: the values in
//     Add order.
//   - Exceptions: an exception escaping a task is caught by its slot; the other tasks keep
//     running. When all have finished, the wait rethrows the FIRST exception recorded (in
//     time); failed_count() counts all of them (the others are dropped).
//   - Cancellation: slots spawned by Join() are children of the awaiting coroutine, so
//     cancelling it cancels the running tasks (their cancellable waits end with kCancelled,
//     IsCancelled() turns true). A slot that is cancelled (this way, by its cancellation
//     deadline, or by the scheduler's Stop) starts no further task: every task not yet
//     started is dropped (destroyed without running, counted by dropped_count()). When the
//     tasks that were running have finished, the wait throws TaskListCancelled if a task was
//     dropped (unless a task's exception is rethrown first). Plain-thread waits have no
//     canceller; only Stop drops their tasks.
//   - Lifetime: the scheduler must outlive the list's tasks. Destroying a list whose wait
//     did not complete (never waited, or WaitFor timed out) destroys the tasks not yet
//     started; tasks already running finish on their own and their results are dropped.
//   - Thread safety: one thread (or coroutine) adds and waits; the tasks run anywhere.
#ifndef FAIRSCHED_CORO_TASK_LIST_H_
#define FAIRSCHED_CORO_TASK_LIST_H_

#include <algorithm>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "coro/cancel.h"
#include "coro/internal/coroutine_state.h"
#include "coro/internal/state_extension.h"
#include "coro/internal/state_ops.h"
#include "coro/runtime_types.h"
#include "coro/lazy.h"
#include "coro/wait.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched::coro {

// Thrown by a list's wait when tasks were dropped (never started) because the list's
// coroutines were cancelled.
class TaskListCancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TaskListOptions {
  // How many slots (coroutines that pull tasks) run on the scheduler's workers at once.
  // Suspended tasks keep their slot: for tasks that mostly wait (IO), raise it up to the
  // list's size. A plain-thread waiter adds its own slots on top.
  std::size_t max_parallel = std::max(1u, std::thread::hardware_concurrency());
};

template <typename T = void>
class TaskList {
 public:
  using Value = std::conditional_t<std::is_void_v<T>, char, T>;  // char: unused for void

  // The tasks run on `scheduler` (any BasicTaskScheduler<...>), which must outlive them.
  template <typename Scheduler>
  explicit TaskList(Scheduler& scheduler, TaskListOptions options = {})
      : shared_(std::make_shared<Shared>()) {
    FAIRSCHED_CHECK(options.max_parallel >= 1, "TaskListOptions::max_parallel must be >= 1");
    shared_->max_parallel = options.max_parallel;
    shared_->scheduler = &scheduler;
    shared_->start_slot = &StartSlot<Scheduler>;
  }
  ~TaskList() {
    std::deque<Entry> not_started;
    {
      MutexLock lock(shared_->mu);
      not_started.swap(shared_->pending);  // destroyed below, outside the lock
      if (shared_->caller_first.has_value()) {
        not_started.push_back(std::move(*shared_->caller_first));
        shared_->caller_first.reset();
      }
      shared_->remaining -= not_started.size();
    }
  }
  TaskList(const TaskList&) = delete;
  TaskList& operator=(const TaskList&) = delete;

  // Adds a not-yet-started task. Only before the wait starts.
  void Add(Lazy<T> task) {
    FAIRSCHED_DCHECK(task.IsValid() && !task.IsDone(), "TaskList::Add of an empty or started task");
    MutexLock lock(shared_->mu);
    FAIRSCHED_DCHECK(!shared_->started, "TaskList::Add after the wait started");
    shared_->pending.push_back(Entry{shared_->added++, std::move(task)});
    ++shared_->remaining;
  }
  std::size_t size() const {
    MutexLock lock(shared_->mu);
    return shared_->added;
  }

  // Plain thread: runs tasks of the list on this thread while it waits, then blocks until
  // all have finished. Rethrows the first task exception; throws TaskListCancelled if tasks
  // were dropped.
  void Wait() { WaitUntil(kTaskDeadlineInfinite); }
  // As Wait, but returns false if `timeout` passes first (the tasks keep running; wait
  // again, or destroy the list). The timeout bounds the blocking, not a task this thread
  // is running: the thread returns to check it whenever a task it runs suspends or ends.
  bool WaitFor(std::chrono::nanoseconds timeout) { return WaitUntil(DeadlineAfter(timeout)); }
  bool WaitUntil(TaskDeadline deadline) {
    FAIRSCHED_DCHECK(internal::CurrentState() == nullptr,
                     "TaskList::Wait inside a coroutine would block its worker: use "
                     "co_await list.Join()");
    Shared& s = *shared_;
    Begin(/*first_for_caller=*/true);
    MutexLock lock(s.mu);
    s.helping = true;
    bool done = true;
    while (s.remaining != 0) {
      // Help, first by starting the tasks not started yet (each until it suspends), then by
      // running the list's ready continuations. Both run with the lock released.
      if (TaskClock::now() >= deadline) {
        done = false;
        break;
      }
      if (s.caller_first.has_value() || !s.pending.empty()) {
        Entry entry;
        if (s.caller_first.has_value()) {
          entry = std::move(*s.caller_first);
          s.caller_first.reset();
        } else {
          entry = std::move(s.pending.front());
          s.pending.pop_front();
        }
        lock.unlock();
        s.start_slot(shared_, std::move(entry), /*on_this_thread=*/true);
        lock.lock();
        continue;
      }
      if (internal::CoroutineState* state = s.ClaimReadyLocked()) {
        lock.unlock();
        state->RunClaimedStep();
        lock.lock();
        continue;
      }
      auto woken = [&s] { return s.remaining == 0 || !s.ready.empty(); };
      if (deadline == kTaskDeadlineInfinite) {
        s.done_cv.wait(lock, woken);
      } else {
        s.done_cv.wait_until(lock, deadline, woken);
      }
    }
    s.StopHelpingLocked();
    lock.unlock();
    if (!done) return false;
    Complete();
    return true;
  }

  // Inside a spawned coroutine: `co_await list.Join();` runs the tasks as children of this
  // coroutine and returns when all have finished (or were dropped). Rethrows the first task
  // exception; throws TaskListCancelled if tasks were dropped.
  Lazy<void> Join() {
    internal::RequireCurrentState("TaskList::Join outside a spawned coroutine");
    Begin(/*first_for_caller=*/false);
    Shared& s = *shared_;
    while (true) {
      Waker waker;
      {
        MutexLock lock(s.mu);
        if (s.remaining == 0) break;
        // Under the lock, as the wait primitive asks: the last finishing task takes this
        // waker under the same lock, so it cannot finish unseen in between.
        waker = PrepareWait(WaitMode::kUncancellable);
        s.waiter = waker;
      }
      co_await WaitWoken();
    }
    Complete();
  }

  // After a wait that returned normally (T != void): the tasks' values, in Add order.
  std::vector<Value> TakeResults() requires(!std::is_void_v<T>) {
    MutexLock lock(shared_->mu);
    FAIRSCHED_DCHECK(shared_->completed && shared_->failed == 0 && shared_->dropped == 0,
                     "TaskList::TakeResults before a successful wait");
    std::vector<Value> values;
    values.reserve(shared_->results.size());
    for (std::optional<T>& result : shared_->results) values.push_back(std::move(*result));
    shared_->results.clear();
    return values;
  }

  // How many tasks ended with an exception / were dropped (see the contract).
  std::size_t failed_count() const {
    MutexLock lock(shared_->mu);
    return shared_->failed;
  }
  std::size_t dropped_count() const {
    MutexLock lock(shared_->mu);
    return shared_->dropped;
  }

 private:
  struct Entry {
    std::size_t index = 0;
    Lazy<T> task;
  };
  // Shared by the list and its running slots (a slot may outlive a list whose WaitFor timed
  // out). Everything is guarded by `mu`; the slots' writes to `results` happen before the
  // decrement of `remaining` under `mu` that the waiter reads under `mu`.
  //
  // It is also the ContinuationHelper (coro/internal/state_extension.h) of the slots spawned for a
  // plain-thread wait: while `helping`, a slot that yields or whose wait a waker ends is
  // put on `ready`, and the waiting thread claims it from there unless a worker's run of
  // the slot's task claimed it first (see internal::HelpState: one step runs at a time, and
  // every offered continuation is also backed by a post or wakeup of the task, so nothing
  // depends on the waiting thread staying).
  struct Shared final : internal::ContinuationHelper {
    using TaskRun = internal::ContinuationHelper::TaskRun;

    bool Suspended(internal::CoroutineState* state, bool yielded) override {
      MutexLock lock(mu);
      internal::HelpState& help = state->help();
      help.running = false;
      if (yielded) OfferLocked(state);
      if (help.task_pending) return false;  // the pending run will serve
      help.task_pending = true;
      return true;
    }
    void Woken(internal::CoroutineState* state) override {
      MutexLock lock(mu);
      // Running: the wait was closed before the step ended; the step's own post sees it.
      if (!state->help().running) OfferLocked(state);
    }
    TaskRun BeforeTaskRun(internal::CoroutineState* state) override {
      MutexLock lock(mu);
      internal::HelpState& help = state->help();
      help.task_pending = false;
      if (help.finished) return TaskRun::kRelease;
      if (help.running) return TaskRun::kSkip;  // on the waiting thread right now
      help.offered = false;                     // this run takes the continuation
      help.running = true;
      return TaskRun::kRun;
    }
    bool Finished(internal::CoroutineState* state) override {
      MutexLock lock(mu);
      internal::HelpState& help = state->help();
      help.running = false;
      help.offered = false;
      std::erase(ready, state);  // nothing may refer to the state once it is freed
      help.finished = help.task_pending;
      return help.task_pending;
    }

    // mu held.
    void OfferLocked(internal::CoroutineState* state) {
      internal::HelpState& help = state->help();
      if (!helping || help.offered || help.finished) return;
      help.offered = true;
      ready.push_back(state);
      done_cv.notify_all();
    }
    // mu held: the oldest offered continuation nobody runs, marked as running; or null.
    internal::CoroutineState* ClaimReadyLocked() {
      while (!ready.empty()) {
        internal::CoroutineState* state = ready.front();
        ready.pop_front();
        internal::HelpState& help = state->help();
        if (!help.offered || help.running) continue;  // taken by a worker's run meanwhile
        help.offered = false;
        help.running = true;
        return state;
      }
      return nullptr;
    }
    // mu held: the waiting thread leaves; the workers run what was offered.
    void StopHelpingLocked() {
      helping = false;
      for (internal::CoroutineState* state : ready) state->help().offered = false;
      ready.clear();
    }

    mutable fairsched::Mutex mu;
    ConditionVariable done_cv;          // plain-thread waiter: remaining reached 0, or ready
    Waker waiter;                       // coroutine waiter: remaining reached 0
    std::deque<internal::CoroutineState*> ready;  // offered continuations (while helping)
    bool helping = false;                         // a plain thread waits and takes `ready`
    std::deque<Entry> pending;          // added, not yet started
    std::optional<Entry> caller_first;  // the plain-thread waiter's own first task
    std::size_t added = 0;
    std::size_t remaining = 0;  // added and not yet finished or dropped
    std::size_t failed = 0;
    std::size_t dropped = 0;
    std::exception_ptr first_error;
    std::vector<std::optional<Value>> results;
    bool started = false;
    bool completed = false;
    std::size_t max_parallel = 1;
    void* scheduler = nullptr;
    bool plain_thread_wait = false;  // the wait is Wait/WaitFor: its slots have a helper
    void (*start_slot)(const std::shared_ptr<Shared>& shared, Entry entry,
                       bool on_this_thread) = nullptr;
  };

  // Starts the wait: sizes the results and spawns the worker slots (children of the
  // current coroutine, if any); each pulls its first task when it starts, so a waiting
  // thread can take over tasks of slots that did not get a worker yet. With
  // `first_for_caller` the first task is kept for the calling thread. Returns false if
  // there is nothing left to start.
  bool Begin(bool first_for_caller) {
    Shared& s = *shared_;
    std::size_t slots = 0;
    {
      MutexLock lock(s.mu);
      if (s.started) return !s.pending.empty() || s.caller_first.has_value();  // WaitFor again
      s.started = true;
      s.plain_thread_wait = first_for_caller;
      if constexpr (!std::is_void_v<T>) s.results.resize(s.added);
      if (first_for_caller && !s.pending.empty()) {
        s.caller_first = std::move(s.pending.front());
        s.pending.pop_front();
      }
      slots = std::min(s.pending.size(), s.max_parallel);
    }
    for (std::size_t i = 0; i < slots; ++i) {
      s.start_slot(shared_, Entry{}, /*on_this_thread=*/false);
    }
    return true;
  }

  // After remaining reached 0: report the outcome.
  void Complete() {
    std::exception_ptr error;
    std::size_t dropped;
    {
      MutexLock lock(shared_->mu);
      shared_->completed = true;
      error = shared_->first_error;
      dropped = shared_->dropped;
    }
    if (error) std::rethrow_exception(error);
    if (dropped != 0) {
      throw TaskListCancelled("coro::TaskList: " + std::to_string(dropped) + " of " +
                              std::to_string(size()) +
                              " tasks were dropped before they started (cancelled)");
    }
  }

  template <typename Scheduler>
  static void StartSlot(const std::shared_ptr<Shared>& shared, Entry entry, bool on_this_thread) {
    // Read under no lock: written by Begin, on this (the waiting) thread, before any slot.
    internal::ContinuationHelper* helper = shared->plain_thread_wait ? shared.get() : nullptr;
    internal::CoroutineState* state = internal::CoroutineState::Create(
        shared->scheduler, &internal::kSchedulerOps<Scheduler>, Slot(shared, std::move(entry)),
        SpawnOptions{}, helper);
    if (helper != nullptr && !on_this_thread) state->MarkStartPosted();
    if (on_this_thread) {
      state->StartOnThisThread();
    } else {
      state->Start();
    }
    state->ReleaseHandle();  // a slot never throws (it catches its tasks' exceptions)
  }

  // A slot: runs `entry`'s task (an empty entry: the first not-yet-started one), then the
  // next not-yet-started ones, until none is left or the slot is cancelled (then it drops
  // every task not yet started).
  static Lazy<void> Slot(std::shared_ptr<Shared> shared, Entry entry) {
    Shared& s = *shared;
    if (!entry.task.IsValid()) {
      MutexLock lock(s.mu);
      if (s.pending.empty()) co_return;  // the others took them all
      entry = std::move(s.pending.front());
      s.pending.pop_front();
    }
    while (true) {
      if (IsCancelled()) {
        std::deque<Entry> dropped;
        {
          MutexLock lock(s.mu);
          dropped.swap(s.pending);
          dropped.push_back(std::move(entry));
          s.dropped += dropped.size();
        }
        Finished(s, dropped.size());  // the frames are destroyed after the lock
        co_return;
      }
      try {
        if constexpr (std::is_void_v<T>) {
          co_await std::move(entry.task);
        } else {
          // Written before the decrement below, read by the waiter after it: see Shared.
          s.results[entry.index].emplace(co_await std::move(entry.task));
        }
      } catch (...) {
        MutexLock lock(s.mu);
        if (s.failed++ == 0) s.first_error = std::current_exception();
      }
      entry.task = Lazy<T>();  // free the finished frame now
      {
        MutexLock lock(s.mu);
        if (!s.pending.empty()) {  // eager: the next task of this list, in this coroutine
          entry = std::move(s.pending.front());
          s.pending.pop_front();
          --s.remaining;  // the finished one; cannot reach 0 (the popped one is counted)
          continue;
        }
      }
      Finished(s, 1);
      co_return;
    }
  }

  // `count` tasks finished or were dropped: wake the waiter when none is left.
  static void Finished(Shared& s, std::size_t count) {
    Waker waiter;
    {
      MutexLock lock(s.mu);
      s.remaining -= count;
      if (s.remaining != 0) return;
      waiter = std::move(s.waiter);
      // Under the lock: a waiter that checks `remaining` and then waits cannot miss it.
      s.done_cv.notify_all();
    }
    if (waiter) waiter.Wakeup();
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_TASK_LIST_H_
