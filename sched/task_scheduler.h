// BasicTaskScheduler: fairsched's fair multi-threaded task scheduler (DESIGN.md sections
// 2-4), and its two standard configurations TaskScheduler and TrivialPolicyTaskScheduler.
//
// Pipeline:
//   any thread --Post/Wakeup/Signal--> [front: MpscQueue] --+
//                                                           | sched-role (one worker at a time)
//           [wait: WaitQueueT, by deadline] <---------------+--> [ready: ReadyQueueT] --> workers
//
// There is no scheduler thread. Each worker loops:
//   1. TryLock the sched-role. The holder moves up to `batch_size` tasks from the front
//      queue to the wait or ready queue and expired ones from the wait queue to the ready
//      queue, publishes them with one FlushPending, releases the role and sends the ready
//      signal. If it found nothing to do and the ready queue is empty, it keeps the role and
//      sleeps in IoBackend::WaitUntil(nearest deadline) until a post notifies it: nobody
//      polls.
//   2. Pops and executes up to `execute_batch_size` ready tasks, then goes back to 1.
//   3. Having executed nothing, sleeps on the ready signal.
// Waking: releasing the role always sends the ready signal (otherwise every worker could be
// asleep while the front queue still holds tasks: the lost-wakeup trap of the original
// design). A Signal wakes one sleeper per send, so a woken worker that pops a task while
// more seem ready (a relaxed hint: published minus popped, updated once per batch) sends the
// ready signal again before executing: wakeups chain through as many workers as there is
// work for, and stop when the ready queue is empty. The hint only steers wakeups; no task
// depends on it, because a worker keeps executing until it finds the ready queue empty.
//
// Promises (each tested in tests/sched/):
//   - Exactly once: every Post* runs the task exactly once; Wakeup/Signal racing with
//     deadline expiry or with execution never lose or duplicate a run.
//   - Order: tasks with equal deadlines start in post order (the ready queue is FIFO and
//     fed by one sched-role in front-queue order). With one worker they also finish in that
//     order; with several, each worker starts its tasks in post order. Tasks that wait in
//     the wait queue become ready in deadline order; a task whose deadline has already
//     passed when the sched-role receives it is ready at once, in post order (it does not
//     get sorted behind or ahead of other due tasks by its past deadline).
//   - Timers: a task never runs before its deadline unless woken (Wakeup/Signal/Stop).
//   - Fairness: tasks are not pinned; a few heavy tasks do not block light ones while other
//     workers are free, and work spreads over all workers.
//
// Lifecycle:
//   - Tasks may be posted before Start; they run once workers start.
//   - Stop(): drains. The scheduler enters "stopping": every task already waiting, and
//     every task posted with a deadline or PostWait from now on, is woken at once, as if by
//     Wakeup (IsExpired() false, ReceiveSignal() false; IsStopping() true). Posting during
//     stopping is allowed (so multi-step tasks can finish). Stop returns once the scheduler
//     is empty (every post has run), then joins the workers. A task that keeps re-posting
//     itself forever keeps Stop from returning: such tasks must check IsStopping(). Stop is
//     idempotent; it must not be called from inside a task (debug builds abort).
//   - After Stop: Start and Post* are API misuse (debug builds abort with a message). In
//     builds with NDEBUG a task posted after Stop is not lost: the destructor runs it.
//   - ~BasicTaskScheduler(): Stop() (drains, as above), also when never started (it then
//     runs the queued tasks on a temporary worker). Nothing queued is silently dropped.
//   - A callback that throws: the exception is reported on stderr and the process aborts
//     (std::terminate semantics): a half-run task's state is unknowable, and silently
//     swallowing it would break "exactly once".
//
// API misuse caught in debug builds (no NDEBUG): posting a task that is already queued,
// posting a task without a callback, Wakeup/Signal of a task last posted to another
// scheduler, Post/Start after Stop, Stop from inside a task, destroying a queued task.
//
// Thread safety: every method may be called from any thread (including from inside tasks),
// except Start and Stop, which must be called by the owner (one thread, not a task), and
// Stats, which must not run concurrently with Start or Stop (it reads the worker list they
// change).
#ifndef FAIRSCHED_SCHED_TASK_SCHEDULER_H_
#define FAIRSCHED_SCHED_TASK_SCHEDULER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#endif

#include "queues/binary_heap.h"
#include "queues/concepts.h"
#include "queues/lock_stats.h"
#include "queues/locked_queue.h"
#include "queues/mcsp_queue.h"
#include "queues/mpsc_queue.h"
#include "sched/io_backend.h"
#include "sched/task.h"
#include "sync/primitives.h"
#include "sync/role_lock.h"
#include "sync/signal.h"

namespace fairsched {

struct TaskSchedulerOptions {
  std::string name = "fairsched";
  // Ready queue block (lock-free sub-queue) size: its mutex is taken about once per this
  // many pops.
  std::size_t ready_block_size = 1024;
  // Sched-role batch: at most this many tasks taken from the front queue, and at most this
  // many from the wait queue, per role take. Bounds how long one worker schedules while
  // others could be executing.
  std::size_t batch_size = 1024;
  // Execution batch: at most this many tasks executed between two attempts to take the
  // sched-role, so new posts are scheduled even while the ready queue stays busy.
  std::size_t execute_batch_size = 64;
};

// Per-worker counters. Each is written only by its worker (a relaxed load + store, no
// locked instruction) and read with relaxed loads by Stats(): a snapshot that may lag by a
// few increments while workers run, exact after Stop.
struct WorkerStats {
  std::uint64_t tasks_executed = 0;
  std::uint64_t sched_role_taken = 0;      // times this worker held the sched-role
  std::uint64_t ready_lock_taken = 0;      // ready-queue mutex taken by this worker's pops
  std::uint64_t ready_lock_contended = 0;  // ... of which it had to wait
};

template <typename ReadyQueueT = McspQueue<Task>, typename WaitQueueT = BinaryHeap<Task>,
          typename IoBackendT = NoIoBackend>
class BasicTaskScheduler {
  static_assert(ReadyQueue<ReadyQueueT, Task>);
  static_assert(WaitQueue<WaitQueueT, Task>);
  static_assert(IoBackend<IoBackendT>);

 public:
  explicit BasicTaskScheduler(TaskSchedulerOptions options = {})
      : options_(std::move(options)), ready_(options_.ready_block_size) {
    if (options_.batch_size == 0) options_.batch_size = 1;
    if (options_.execute_batch_size == 0) options_.execute_batch_size = 1;
  }
  ~BasicTaskScheduler() { Stop(); }
  BasicTaskScheduler(const BasicTaskScheduler&) = delete;
  BasicTaskScheduler& operator=(const BasicTaskScheduler&) = delete;

  // Starts `thread_count` (>= 1) workers. Once.
  void Start(int thread_count) {
    FAIRSCHED_DCHECK(run_state_.load(std::memory_order_relaxed) == kIdle,
                     "Start called twice, or after Stop");
    FAIRSCHED_DCHECK(thread_count >= 1, "Start needs at least one thread");
    if (thread_count < 1) thread_count = 1;
    StartWorkers(thread_count);
    run_state_.store(kRunning, std::memory_order_relaxed);
  }

  // Drains and stops; see "Lifecycle" above.
  void Stop() {
    FAIRSCHED_DCHECK(Current() != this, "Stop called from inside a task of this scheduler");
    if (threads_.empty() && IsEmpty()) {
      // Nothing to drain and no workers to join (never started, or already stopped).
      run_state_.store(kStopped, std::memory_order_relaxed);
      return;
    }
    // Never started, or posted to after Stop (release builds): run what is queued on a
    // temporary worker so nothing is lost.
    if (threads_.empty()) StartWorkers(1);
    // Release: a role holder that reads stopping_ with acquire also sees everything posted
    // before it. Then wake the holder so it force-wakes the wait queue now.
    stopping_.store(true, std::memory_order_release);
    io_.Notify();
    WaitEmpty(std::chrono::nanoseconds::max());
    // Everything ran. Tell the workers to exit: the role holder sleeps in the io backend,
    // the others on the ready signal; each exiting worker re-sends the ready signal so the
    // next sleeper wakes too (one Send wakes one receiver).
    exit_.store(true, std::memory_order_release);
    io_.Notify();
    ready_signal_.Send();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
    exit_.store(false, std::memory_order_relaxed);
    run_state_.store(kStopped, std::memory_order_relaxed);
  }

  // Posts `task` with the deadline it carries (by default: run as soon as possible).
  void Post(Task* task) {
    FAIRSCHED_DCHECK(task->HasCallback(), "Post of a task without a callback");
    FAIRSCHED_DCHECK(run_state_.load(std::memory_order_relaxed) != kStopped, "Post after Stop");
#ifndef NDEBUG
    // Relaxed: detects the owner posting twice, which is a bug within the owner's own
    // ordering (a real race would also be reported by TSan on the task's fields).
    FAIRSCHED_DCHECK(task->queued_.exchange(1, std::memory_order_relaxed) == 0,
                     "Post of a task that is already queued (posted and not yet started)");
#endif
    // Relaxed: only checked by Wakeup/Signal for misuse; correctness never depends on it.
    task->owner_.store(this, std::memory_order_relaxed);
    // Relaxed: counts posts not yet finished. The decrement that follows the execution is
    // ordered after this increment through the queues' release/acquire chain, and an RMW
    // always reads the latest value, so the counter never dips below the true number.
    active_.fetch_add(1, std::memory_order_relaxed);
    PushFront(task);
  }
  void PostDelay(Task* task, std::chrono::nanoseconds delay) {
    task->SetDelay(delay);
    Post(task);
  }
  void PostDeadline(Task* task, TaskDeadline deadline) {
    task->SetDeadline(deadline);
    Post(task);
  }
  // Waits for Wakeup/Signal (or Stop), with no deadline.
  void PostWait(Task* task) {
    task->SetWait();
    Post(task);
  }
  // Runs `f()` (or `f(Task*)`) once; the task is allocated here and freed after the call.
  template <typename F>
  void PostOneShot(F&& f) {
    Post(new Task([fn = std::forward<F>(f)](Task* self) mutable {
      Task::Call(fn, self);
      delete self;  // destroys this lambda too: nothing is touched after it
    }));
  }

  // Wakes `task` early: if it waits (deadline or PostWait), it runs as soon as possible with
  // IsExpired() false. If it is queued but not waiting yet, it will not wait. If it is
  // executing or not posted, the wakeup is remembered and its next post runs at once.
  // Thread-safe. The caller must know the task is alive (see Signal).
  void Wakeup(Task* task) { Wake(task, Task::kReady); }
  // Wakeup plus a flag the task reads with ReceiveSignal(), set in the same atomic step:
  // the task can treat a received signal as "the waker is done with me" and delete itself.
  // Signal touches the task only until that step (or, when the task waited, until it is
  // pushed into the front queue, which is before it can run).
  void Signal(Task* task) { Wake(task, Task::kSignaled); }

  // True if every post has finished running (nothing queued, waiting or executing).
  bool IsEmpty() const { return active_.load(std::memory_order_acquire) == 0; }
  // Waits until IsEmpty() or `timeout`; returns IsEmpty(). Effects of the finished tasks
  // are visible to the caller when it returns true. Called from inside a task of this
  // scheduler it can only time out (the caller itself is not finished).
  bool WaitEmpty(std::chrono::nanoseconds timeout) {
    MutexLock lock(empty_mu_);
    auto empty = [this] { return IsEmpty(); };
    const TaskClock::time_point now = TaskClock::now();
    if (timeout >= TaskClock::time_point::max() - now) {
      empty_cv_.wait(lock, empty);
      return true;
    }
    return empty_cv_.wait_until(
        lock, now + std::chrono::duration_cast<TaskClock::duration>(timeout), empty);
  }
  // True once Stop has begun (tasks woken by Stop see it).
  bool IsStopping() const { return stopping_.load(std::memory_order_acquire); }

  // The scheduler whose worker runs the calling thread (so: inside a task), else nullptr.
  static BasicTaskScheduler* Current() { return current_; }

  // One entry per worker started (including a temporary drain worker).
  std::vector<WorkerStats> Stats() const {
    std::vector<WorkerStats> out;
    for (const auto& worker : workers_) {
      WorkerStats s;
      s.tasks_executed = worker->tasks_executed.load(std::memory_order_relaxed);
      s.sched_role_taken = worker->sched_role_taken.load(std::memory_order_relaxed);
      if constexpr (requires { worker->consumer.LockStats(); }) {
        const QueueLockStats lock = worker->consumer.LockStats();
        s.ready_lock_taken = lock.lock_taken;
        s.ready_lock_contended = lock.lock_contended;
      }
      out.push_back(s);
    }
    return out;
  }
  // All ready-queue mutex acquisitions (producer and consumers), if the queue counts them.
  QueueLockStats ReadyLockStats() const {
    if constexpr (requires { ready_.LockStats(); }) {
      return ready_.LockStats();
    } else {
      return {};
    }
  }
  const TaskSchedulerOptions& options() const { return options_; }

 private:
  enum RunState : int { kIdle, kRunning, kStopped };

  struct alignas(kCacheLineSize) Worker {
    explicit Worker(ReadyQueueT& queue) : consumer(queue) {}
    typename ReadyQueueT::Consumer consumer;
    // Single writer (the worker), see WorkerStats.
    Atomic<std::uint64_t> tasks_executed{0};
    Atomic<std::uint64_t> sched_role_taken{0};
  };

  static void Bump(Atomic<std::uint64_t>& counter, std::uint64_t by) {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  void StartWorkers(int thread_count) {
    const std::size_t first = workers_.size();
    for (int i = 0; i < thread_count; ++i) workers_.push_back(std::make_unique<Worker>(ready_));
    // Thread creation synchronises: each worker sees its fully constructed Worker.
    for (std::size_t i = first; i < workers_.size(); ++i) {
      threads_.emplace_back([this, i, worker = workers_[i].get()] { WorkerMain(worker, i); });
    }
  }

  void PushFront(Task* task) {
    // The front queue reports whether it was empty: only then can the role holder be asleep
    // (or about to sleep) without knowing about this task. If it was not empty, the push that
    // made it non-empty already notified, and the holder has not taken that task yet.
    if (front_.Push(task)) io_.Notify();
  }

  void Wake(Task* task, std::uint8_t target) {
    FAIRSCHED_DCHECK(task->owner_.load(std::memory_order_relaxed) == nullptr ||
                         task->owner_.load(std::memory_order_relaxed) == this,
                     "Wakeup/Signal of a task posted to another scheduler");
    // Won a WAITING task: it sits in the wait queue, which only the sched-role may touch, so
    // hand it to the sched-role through the front queue. The sched-role sees READY/SIGNALED,
    // removes it from the wait queue and readies it. Not counted in active_: it is the same
    // post. Nothing touches the task after the push.
    if (task->TryWake(target)) PushFront(task);
  }

  void WorkerMain(Worker* worker, std::size_t index) {
    current_ = this;
#if defined(__linux__)
    // "<name>-<index>", cut to the 15 characters Linux keeps; only for debuggers and top.
    const std::string thread_name = (options_.name + "-" + std::to_string(index)).substr(0, 15);
    pthread_setname_np(pthread_self(), thread_name.c_str());
#else
    (void)index;
#endif
    while (true) {
      if (role_.TryLock()) {
        Bump(worker->sched_role_taken, 1);
        const bool exit = Schedule();
        role_.Unlock();
        // Trap 1: always tell the others the role is free (and maybe tasks are ready).
        ready_signal_.Send();
        if (exit) break;
      }
      if (ExecuteBatch(worker) == 0) {
        // Acquire: pairs with Stop's release store; Stop sets it only when empty.
        if (exit_.load(std::memory_order_acquire)) break;
        ready_signal_.Receive();
      }
    }
    // Pass the exit on: one Send wakes one sleeper, which exits and wakes the next.
    ready_signal_.Send();
    current_ = nullptr;
  }

  // Runs with the sched-role held. Returns true when the worker must exit.
  bool Schedule() {
    while (true) {
      if (exit_.load(std::memory_order_acquire)) return true;
      const bool stopping = stopping_.load(std::memory_order_acquire);
      const TaskDeadline now = TaskClock::now();
      std::size_t moved = 0;
      // Front queue -> wait/ready. PopAll only once the previous batch is fully handled,
      // so tasks keep their front-queue order across role holders.
      if (backlog_ == nullptr) backlog_ = front_.PopAll();
      for (std::size_t n = 0; backlog_ != nullptr && n < options_.batch_size; ++n) {
        Task* task = backlog_;
        // Read the link before the state CAS: once the task is WAITING a waker may push it
        // into the front queue again, rewriting `next`.
        backlog_ = task->next;
        moved += ReceiveFromFront(task, now, stopping);
      }
      // Expired (or, when stopping, all) wait queue -> ready.
      for (std::size_t n = 0; n < options_.batch_size; ++n) {
        Task* task = stopping ? wait_.PopExpired(kNoDeadline) : wait_.PopExpired(now);
        if (task == nullptr) break;
        // Lost the race to a waker: the waker pushes the task into the front queue and the
        // front path readies it. Making it ready here too would run it twice.
        if (!task->TryWaitingToReady()) continue;
        MakeReady(task, /*expired=*/!stopping || task->deadline_ <= now);
        ++moved;
      }
      if (moved > 0) {
        // Hint first (relaxed, no data): consumers may then over-estimate for a moment,
        // which costs at most a spurious wakeup; the other order could skip a chain wake.
        ready_hint_.fetch_add(static_cast<std::int64_t>(moved), std::memory_order_relaxed);
        ready_.FlushPending();
        return false;
      }
      if (backlog_ != nullptr) return false;
      // Nothing moved. Exact check (Count may take the queue's mutex, but we only get here
      // when about to sleep): if tasks are still ready, go and execute them instead. Only
      // this thread produces into the ready queue, so a zero Count cannot grow behind our
      // back.
      if (ready_.Count() > 0) return false;
      // Nothing to do and nothing ready: sleep, holding the role, until the nearest
      // deadline or a Notify (a post into an empty front queue, Stop).
      if (!stopping || wait_.IsEmpty()) io_.WaitUntil(wait_.NextDeadline());
    }
  }

  // Sched-role: a task taken from the front queue. Returns 1 if it went to the ready queue.
  std::size_t ReceiveFromFront(Task* task, TaskDeadline now, bool stopping) {
    // Relaxed: the front queue's acquire PopAll already made the task's fields visible; the
    // state is only a hint here, the CAS below decides.
    const std::uint8_t state = task->state_.load(std::memory_order_relaxed);
    FAIRSCHED_DCHECK(state != Task::kWaiting,
                     "a waiting task was posted again (posting a task that is already queued)");
    if (state != Task::kPending) {
      // Woken: either pushed here by Wakeup/Signal (it may still be in the wait queue), or
      // posted after a wakeup that landed while it ran (remembered).
      if (wait_.Contains(task)) wait_.Remove(task);
      MakeReady(task, task->deadline_ <= now);
      return 1;
    }
    const TaskDeadline deadline = task->deadline_;
    if (deadline <= now) {
      // Due now. The state stays PENDING: a Wakeup racing with this only flips it to READY
      // and pushes nothing, so the task is still in exactly one queue.
      MakeReady(task, true);
      return 1;
    }
    if (stopping) {
      MakeReady(task, false);  // Stop wakes every waiting task at once
      return 1;
    }
    if (!task->TryPendingToWaiting()) {
      // A waker won between our load and the CAS; it saw PENDING, so it pushed nothing.
      MakeReady(task, false);
      return 1;
    }
    // Infinite waits go into the heap too (with key kNoDeadline, which never expires by
    // time), so Stop can find and wake them. The wait queue is sched-role-only state, and
    // wait_index is touched only by it: no race with a waker pushing the task (which writes
    // only `next`).
    wait_.Push(task, deadline);
    return 0;
  }

  void MakeReady(Task* task, bool expired) {
    // Plain write: the executor reads it after the ready queue's release/acquire handoff.
    task->flags_ = expired ? Task::kFlagExpired : 0;
    ready_.PushPending(task);
  }

  std::size_t ExecuteBatch(Worker* worker) {
    std::size_t executed = 0;
    while (executed < options_.execute_batch_size) {
      Task* task = worker->consumer.Pop();
      if (task == nullptr) break;
      // Chain wake (see the header comment): if more tasks seem ready than the one we just
      // took, wake one more worker before running ours, so a long task of ours does not
      // leave them waiting. Relaxed: a hint; a wrong guess costs one spurious or one missed
      // wakeup, never a lost task (this worker keeps draining until it finds the queue
      // empty).
      if (executed == 0 && ready_hint_.load(std::memory_order_relaxed) > 1) {
        ready_signal_.Send();
      }
      Execute(task);
      ++executed;
    }
    if (executed > 0) {
      const auto done = static_cast<std::int64_t>(executed);
      // Relaxed: the hint carries no data (see above). Once per batch, not per pop.
      ready_hint_.fetch_sub(done, std::memory_order_relaxed);
      Bump(worker->tasks_executed, executed);
      // acq_rel: release publishes the executed tasks' effects to IsEmpty/WaitEmpty's
      // acquire load; acquire keeps the chain of earlier decrements (release sequence) so a
      // waiter that sees 0 sees all of them.
      if (active_.fetch_sub(done, std::memory_order_acq_rel) == done) {
        // Reached zero. Taking the mutex orders us after a WaitEmpty caller's predicate
        // check (it checks under the mutex), so the notification is not lost.
        { MutexLock lock(empty_mu_); }
        empty_cv_.notify_all();
      }
    }
    return executed;
  }

  static void Execute(Task* task) {
    task->BeginExecution();
    try {
      task->Run();  // may delete or re-post the task: do not touch it afterwards
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fairsched: a task callback threw: %s\n", e.what());
      std::fflush(stderr);
      std::abort();
    } catch (...) {
      std::fprintf(stderr, "fairsched: a task callback threw a non-std exception\n");
      std::fflush(stderr);
      std::abort();
    }
  }

  TaskSchedulerOptions options_;
  // Shared with producers (any thread).
  MpscQueue<Task> front_;
  IoBackendT io_;
  alignas(kCacheLineSize) Atomic<std::int64_t> active_{0};  // posts not finished
  Atomic<bool> stopping_{false};
  Atomic<bool> exit_{false};
  Atomic<int> run_state_{kIdle};
  // Sched-role state: touched only by the role holder (RoleLock publishes it).
  RoleLock role_;
  WaitQueueT wait_;
  Task* backlog_ = nullptr;  // popped from the front queue, not yet received (FIFO list)
  // Ready queue: producer = role holder, consumers = workers.
  ReadyQueueT ready_;
  fairsched::Signal ready_signal_;
  // Approximate number of ready tasks (published minus popped), for chain wakes only.
  alignas(kCacheLineSize) Atomic<std::int64_t> ready_hint_{0};
  Mutex empty_mu_;
  ConditionVariable empty_cv_;
  // Owner-thread state (Start/Stop).
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;

  static inline thread_local BasicTaskScheduler* current_ = nullptr;
};

using TaskScheduler = BasicTaskScheduler<>;
using TrivialPolicyTaskScheduler = BasicTaskScheduler<LockedReadyQueue<Task>>;

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_TASK_SCHEDULER_H_
