// BasicTaskScheduler: fairsched's fair multi-threaded task scheduler, and its two standard
// configurations TaskScheduler and TrivialPolicyTaskScheduler.
//
// Any thread posts tasks (sched/task.h); the workers started by Start run them. There is no
// scheduler thread: one worker at a time holds the sched-role and moves posts from the
// front queue to the wait queue (future deadline) or the ready queue, and every worker runs
// ready tasks. How and why (the pipeline, who wakes whom, local batches and the order
// bound, the lost-wakeup checks) is in docs/design.md; which file implements which part is
// in sched/README.md.
//
// Promises (each tested in tests/sched/):
//   - Exactly once: every Post* runs the task exactly once; Wakeup/Signal racing with
//     deadline expiry or with execution never lose or duplicate a run.
//   - Order: tasks with equal deadlines start in the order they joined the shared FIFO (the
//     ready queue is FIFO and fed by one sched-role in front-queue order). A post joins it
//     when it is made, except a run-now post made by a task under PostOrder::kBatched
//     while every worker executes, which its worker holds for a bounded time (its local
//     batch): it can be overtaken only by posts made before it joined, i.e. while fewer
//     than execute_batch_size task starts happened on its own worker and fewer than
//     3 * execute_batch_size on each other worker, whatever the other workers run, and
//     also when the OS deschedules any thread at any point (tests/sched/held_post_test.cc).
//     In time: at the latest 1 ms after a worker became idle, and at Stop. Two posts of
//     one task join in the order they were made. PostOrder::kStrict: every post joins when
//     it is made (the bound is 0). PostOrder::kHome (experimental): there is no shared FIFO;
//     each worker runs its own home queue (sched/internal/home_queues.h), and a run-now post
//     made by a task is started after at most execute_batch_size + home_skew +
//     (kHomeStampBlock - 1) x (workers - 1) posts made after it on any one worker, whatever
//     the other workers run, also when its own worker blocks (with home_skew_ceiling set:
//     that ceiling in place of home_skew at worst, home_skew while that worker's own queue
//     holds at most home_skew x kHomeBacklogDivisor / workers tasks). In time: a lone task
//     that the sched-role made ready (received from outside, woken, a due timer) is taken
//     by an idle worker at once; a lone run-now post whose worker blocks waits for an idle
//     worker's second timed look (about 2 ms); at Stop. Two
//     run-now posts of one task are taken in the order they were made. A post that goes
//     through the sched-role (from outside the scheduler, with a deadline, a wakeup) takes
//     its place when the role receives it, which busy workers do after each execution
//     batch (front-queue posts in FIFO order, as many as keep the holder's queue at
//     batch_size and at least execute_batch_size per pass); an execution batch ends after
//     execute_batch_size starts or, with the role free, after about a millisecond
//     (kHomeBatchBudget: a batch of long tasks keeps outside posts, timers and IO waiting
//     for one such budget or one task, not for execute_batch_size tasks). Its order
//     relative to a task's run-now posts is not kept.
//     With one worker tasks also finish in start order; with
//     several, each worker starts its tasks in FIFO order. (Under kHome: its own queue's.) Tasks that wait in the wait
//     queue become ready in deadline order; a task whose deadline has already
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
//     Wakeup (IsExpired() false, ReceiveSignal() false; IsStopping() true), once: except
//     the posts made with PostDeadlineThroughStop, which keep waiting for their wakeup or
//     deadline (a wait that must see its event; Stop waits for them like for any post).
//     Posting during stopping is allowed (so multi-step tasks can finish). Stop returns once the
//     scheduler is empty (every post has run) and the workers have exited; a post that races with
//     the workers' exit is drained too before Stop returns, also one that a task made into its
//     worker's local batch or that a worker had claimed (a worker leaves with nothing held;
//     IsEmpty() is true when Stop returns). A task that keeps re-posting itself forever keeps Stop
//     from returning: such tasks must check IsStopping(). Stop is idempotent; calling it from
//     inside a task of this scheduler aborts with a message. While stopping, the role holder also
//     asks the IO backend to cancel every IO registration (IoBackend::CancelAll), so tasks waiting
//     for IO get their final completion and the drain can end.
//   - After Stop the scheduler is back in its not-started state: posts queue up again and
//     run after the next Start (or in the destructor), and Start may be called again. The
//     workers are destroyed with their threads (Stats() keeps their counts), so repeated
//     Start/Stop cycles do not grow the scheduler.
//   - ~BasicTaskScheduler(): Stop() (drains, as above), also when never started (it then
//     runs the queued tasks on a temporary worker). Nothing queued is silently dropped.
//   - A callback that throws: the process aborts with "fairsched: a task callback threw:
//     <what()>" on stderr. Nothing catches on the way to the callback, so the stack is NOT
//     unwound first: a core dump or debugger shows the throw site. (A half-run task's
//     state is unknowable; swallowing the exception would break "exactly once".)
//   - Cancel(task) wakes a waiting task like Wakeup, with IsCancelled() true in its
//     callback: the way to get rid of a task that waits (destroying a queued task aborts).
//
// API misuse caught in every build (it would corrupt the scheduler and costs next to
// nothing to check): posting a task that is already queued, posting the Task* of a
// PostOneShot task, destroying a queued task, Stop from inside a task of this scheduler.
// Caught in builds without NDEBUG: posting a task without a callback, Wakeup/Signal/Cancel of a
// task last posted to another scheduler, Start twice.
//
// Costs (measured in bench/results/sched.md):
//   - Post: no locked instruction when a task re-posts itself (or posts a one-shot) while
//     every worker executes (the local batch; its publication costs one exchange or a role
//     take per batch, plus the batch's claim, one exchange); otherwise one (the front push,
//     an exchange). Posting any other task adds the double-post check's exchange; posting from
//     outside the scheduler adds the shared post count (sched/post_counters.h). Plus a Notify when
//     the front queue was empty; one post in latency_sample_period also reads the clock. Under
//     PostOrder::kStrict every post is the front push. The bound's enforcement costs each worker,
//     at the end of each of its execution batches, one read of every other worker's local-batch
//     line.
//   - Taking a ready task: one CAS on the ready queue; with one worker one per 8 tasks, and
//     none for its own local batch when nothing else is ready (run in place). Under
//     PostOrder::kHome: a run-now post is a push into the worker's own queue (no locked
//     instruction; one shared fetch_add per kHomeStampBlock posts), taking a task one CAS
//     on the own queue's head, and each execution batch starts with a look that reads one
//     line per other worker.
//   - PostOneShot: Post plus a pop from a thread-local free list (TaskPool): no heap
//     allocation once the pool is warm, for callables of up to 24 bytes; see PostOneShot.
//   - Observability: Stats() (per-worker counters) and LatencyHistogram() (sampled
//     post-to-start latency, log2 buckets), both written by their worker with relaxed
//     stores and merged on read.
//
// Thread safety: every method may be called from any thread (including from inside tasks),
// except Start and Stop, which must be called by the owner (one thread, not a task), and
// Stats and LatencyHistogram, which must not run concurrently with Start or Stop (they read
// the worker list those change).
#ifndef FAIRSCHED_SCHED_TASK_SCHEDULER_H_
#define FAIRSCHED_SCHED_TASK_SCHEDULER_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "queues/binary_heap.h"
#include "queues/concepts.h"
#include "queues/home_ring.h"
#include "queues/lock_stats.h"
#include "queues/locked_queue.h"
#include "queues/mcsp_queue.h"
#include "queues/mpsc_queue.h"
#include "sched/internal/local_batch.h"
#include "sched/internal/task_exception_reporter.h"
#include "sched/internal/trace_hook.h"
#include "sched/io_backend.h"
#include "sched/latency_histogram.h"
#include "sched/post_counters.h"
#include "sched/task.h"
#include "sched/task_pool.h"
#include "sched/task_scheduler_options.h"
#include "sched/worker_stats.h"
#include "sync/primitives.h"
#include "sync/role_lock.h"
#include "sync/auto_reset_event.h"

namespace fairsched {

template <typename ReadyQueueT = McspQueue<Task>, typename WaitQueueT = BinaryHeap<Task>,
          typename IoBackendT = NoIoBackend>
class BasicTaskScheduler {
  static_assert(ReadyQueue<ReadyQueueT, Task>);
  static_assert(WaitQueue<WaitQueueT, Task>);
  static_assert(IoBackend<IoBackendT>);
  struct Worker;  // below

 public:
  explicit BasicTaskScheduler(TaskSchedulerOptions options = {})
      : options_(internal::SanitizedOptions(std::move(options))),
        latency_sample_mask_(options_.latency_sample_period - 1),
        local_batches_(options_.post_order == PostOrder::kBatched),
        home_queues_(options_.post_order == PostOrder::kHome),
        ready_(options_.ready_block_size) {
    FAIRSCHED_CHECK(TaskClock::now() >= TaskDeadline{},
                    "the steady clock reads before its epoch (LazyNow relies on it)");
  }
  ~BasicTaskScheduler() { Stop(); }
  BasicTaskScheduler(const BasicTaskScheduler&) = delete;
  BasicTaskScheduler& operator=(const BasicTaskScheduler&) = delete;

  // Starts `thread_count` (>= 1) workers. Not while started; again after Stop.
  void Start(int thread_count) {
    FAIRSCHED_DCHECK(threads_.empty(), "Start called while the scheduler is running");
    FAIRSCHED_DCHECK(thread_count >= 1, "Start needs at least one thread");
    if (!threads_.empty()) return;
    if (thread_count < 1) thread_count = 1;
    StartWorkers(thread_count);
  }

  // Drains and stops; see "Lifecycle" above.
  void Stop() {
    FAIRSCHED_CHECK(Current() != this, "Stop called from inside a task of this scheduler");
    if (threads_.empty() && IsEmpty()) return;  // nothing to drain, no workers to join
    // Never started, or posted to after Stop: run what is queued on a temporary worker.
    if (threads_.empty()) StartWorkers(1);
    internal::TraceStep(internal::SchedStep::kStopBegin);
    // Relaxed: published by the release store of stopping_ below (see WakeWaitingForStop).
    stop_generation_.store(stop_generation_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
    // Release: a role holder that reads stopping_ with acquire also sees everything posted
    // before it. Then wake the holder so it force-wakes the wait queue now, and a parked
    // worker in case the role is free.
    stopping_.store(true, std::memory_order_release);
    io_.Notify();
    ready_event_.Send();
    while (true) {
      WaitEmpty(std::chrono::nanoseconds::max());
      // Everything ran. Tell the workers to exit: the role holder sleeps in the io backend,
      // the others on the ready event; each exiting worker re-sends the ready event so
      // the next sleeper wakes too (one Send wakes one receiver). Release: pairs with the
      // workers' acquire loads.
      exit_.store(true, std::memory_order_release);
      io_.Notify();
      ready_event_.Send();
      for (Thread& thread : threads_) thread.join();
      threads_.clear();
      if (home_queues_) TakeHomeLeftovers();
      RetireWorkers();
      exit_.store(false, std::memory_order_relaxed);
      // A post (allowed while stopping) may have landed after WaitEmpty returned and before
      // the workers saw exit_: it sits in the front queue with nobody left to run it.
      // Drain it on a fresh worker instead of returning with it stranded (under
      // PostOrder::kHome that worker's queue starts with what the home queues held).
      if (IsEmpty()) break;
      StartWorkers(1);
    }
    stopping_.store(false, std::memory_order_relaxed);  // not started again: restartable
    // The workers' task caches went back to the heap with the workers (RetireWorkers); so
    // does the shared tier (threads that posted keep their small thread-local caches).
    pool_.ReleaseShared();
    internal::TraceStep(internal::SchedStep::kStopReturn);
  }

  // Posts `task` with the deadline it carries (by default: run as soon as possible).
  void Post(Task* task) {
    // A one-shot's Task* may have escaped its callback (to another thread, or past its
    // return, when the pool may already have handed it to another PostOneShot). pooled_
    // never changes, so this read races with nothing, whenever it happens.
    FAIRSCHED_CHECK(!task->IsPooled(),
                    "Post of a PostOneShot task (its Task* is valid only during its callback and "
                    "is never posted again)");
    FAIRSCHED_DCHECK(task->HasCallback(), "Post of a task without a callback");
    // A task re-posting itself from its own callback (the common multi-step pattern) is the
    // only poster allowed at that moment, so its double-post check needs no locked
    // instruction (Task::MarkQueuedExclusive); any other post may race with a second one.
    Worker* const worker = CurrentWorker();
    const bool from_own_callback = worker != nullptr && worker->running == task;
    FAIRSCHED_CHECK(from_own_callback ? task->MarkQueuedExclusive() : task->MarkQueued(),
                    "Post of a task that is already queued (posted and not yet started)");
    PostMarked(task, worker);
  }
  void PostDelay(Task* task, std::chrono::nanoseconds delay) {
    task->SetDelay(delay);
    Post(task);
  }
  void PostDeadline(Task* task, TaskDeadline deadline) {
    task->SetDeadline(deadline);
    Post(task);
  }
  // Waits for Wakeup/Signal/Cancel (or Stop), with no deadline.
  void PostWait(Task* task) {
    task->SetWait();
    Post(task);
  }
  // PostDeadline (kTaskDeadlineInfinite: PostWait) whose wait Stop does not end: the task
  // runs when woken or at its deadline, as it would without a Stop, and Stop waits for it
  // like for any post that has not run. For waits that must see their event even during
  // shutdown: a coroutine's uncancellable wait (a mutex hand-over, a join), a task waiting
  // for an IO operation's final completion. Woken by Stop instead, such a task could only
  // post itself again, and Stop would wake it again at once, in a loop. The mark holds for
  // this post only. A task whose event never comes keeps Stop from returning.
  void PostDeadlineThroughStop(Task* task, TaskDeadline deadline) {
    task->SetDeadline(deadline);
    task->MarkThroughStop();
    Post(task);
  }
  // Runs `f()` (or `f(Task*)`) once, in a Task the scheduler owns. The Task* passed to
  // `f` is valid only during the call: do not post it again (aborts) or keep it.
  // Cost: the task comes from a TaskPool (sched/task_pool.h) and goes back to it after
  // the call, so once the pool is warm a one-shot post allocates nothing when `f` fits in
  // the task (Task::kStoresInline: up to 24 bytes, e.g. three pointers); a bigger `f` costs
  // one allocation for the callable, as with SetCallback. On top of Post it costs a pop
  // from a thread-local list, and one mutex hand-over per TaskPool::kBatch posts when the
  // poster is not a worker of this scheduler (the tasks come back from the workers in
  // batches).
  template <typename F>
  void PostOneShot(F&& f) {
    // A task of this scheduler posting: its worker's own cache (no sharing at all).
    Worker* const worker = CurrentWorker();
    Task* task = pool_.Take(worker != nullptr ? worker->task_cache : TaskPool::ThreadCache());
    task->SetCallback(std::forward<F>(f));
    task->MarkOneShot();
    // Fresh from the pool: no other thread can post it, so no exchange is needed.
    FAIRSCHED_CHECK(task->MarkQueuedExclusive(), "a pooled one-shot task was still queued");
    PostMarked(task, worker);
  }
  // Tasks PostOneShot had to allocate because the pool had none to reuse (since
  // construction). Stays far below the number of one-shot posts once the pool is warm.
  std::uint64_t OneShotAllocations() const { return pool_.Allocations(); }

  // Wakes `task` early: if it waits (deadline or PostWait), it runs as soon as possible with
  // IsExpired() false. If it is queued but not waiting yet, it will not wait. If it is
  // executing or not posted, the wakeup is remembered and its next post runs at once.
  // Everything the caller wrote before Wakeup is visible to the run that the wakeup causes
  // or is absorbed into. Thread-safe. The caller must know the task is alive (see Signal).
  void Wakeup(Task* task) { Wake(task, Task::kWoken); }
  // Wakeup plus a flag the task reads with ReceiveSignal(), set in the same atomic step:
  // with a single waker, the task can treat a received signal as "the waker is done with
  // me" and delete itself. Signal touches the task only until that step (or, when the task
  // waited, until it is pushed into the front queue, which is before it can run). With
  // several possible wakers see "Wakers and lifetime" in sched/task.h.
  void Signal(Task* task) { Wake(task, Task::kWoken | Task::kSignaled); }
  // Wakeup with IsCancelled() true in the callback (same lifetime rules as Signal): the way
  // to get rid of a waiting task. Its callback runs once more and may delete it.
  void Cancel(Task* task) { Wake(task, Task::kWoken | Task::kCancelled); }

  // True if every post has finished running (nothing queued, waiting or executing).
  // Counts every post that happens-before the call, and every post those tasks make in turn.
  // A slow read (every worker's counters, see PostCounters); meant for waiting, not polling.
  bool IsEmpty() const { return counters_.AllFinished(); }
  // Waits until IsEmpty() or `timeout`; returns IsEmpty(). Effects of the finished tasks
  // are visible to the caller when it returns true. Called from inside a task of this
  // scheduler it can only time out (the caller itself is not finished).
  bool WaitEmpty(std::chrono::nanoseconds timeout) {
    // seq_cst RMW, then the seq_cst loads of IsEmpty: the waiter's half of the Dekker pair
    // with CountFinished (a finisher that read no waiter published its count before our
    // registration in the total order, so our check sees it).
    empty_waiters_.fetch_add(1, std::memory_order_seq_cst);
    bool empty;
    {
      MutexLock lock(empty_mu_);
      auto is_empty = [this] { return IsEmpty(); };
      const TaskClock::time_point now = TaskClock::now();
      if (timeout >= TaskClock::time_point::max() - now) {
        empty_cv_.wait(lock, is_empty);
        empty = true;
      } else {
        empty = empty_cv_.wait_until(
            lock, now + std::chrono::duration_cast<TaskClock::duration>(timeout), is_empty);
      }
    }
    // Relaxed: a finisher that still counts us only takes the mutex and notifies for nothing.
    empty_waiters_.fetch_sub(1, std::memory_order_relaxed);
    return empty;
  }
  // True while Stop is draining (tasks woken by Stop see it).
  bool IsStopping() const { return stopping_.load(std::memory_order_acquire); }

  // The scheduler whose worker runs the calling thread (so: inside a task), else nullptr.
  static BasicTaskScheduler* Current() { return current_; }

  // One entry per worker index, summed over every Start (see sched/worker_stats.h).
  std::vector<WorkerStats> Stats() const {
    std::vector<WorkerStats> out = retired_stats_;
    if (out.size() < workers_.size()) out.resize(workers_.size());
    for (std::size_t i = 0; i < workers_.size(); ++i) AddCounts(*workers_[i], out[i]);
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
  // Post-to-start latency of the sampled posts (see latency_sample_period): from the Post
  // call to the start of the callback, for posts without a deadline; merged over the
  // workers (each counts its own, with relaxed stores). Same snapshot rules and the same
  // restriction as Stats().
  fairsched::LatencyHistogram LatencyHistogram() const {
    fairsched::LatencyHistogram merged = retired_latency_;
    for (const auto& worker : workers_) worker->stats.AddLatencyTo(merged);
    return merged;
  }
  const TaskSchedulerOptions& options() const { return options_; }
  // The IO backend, for its registration methods (thread-safe; see the backend's header).
  IoBackendT& io() { return io_; }

 private:
  // A local batch holds at most this many posts; a task that posts more publishes the full
  // batch through the front queue (PublishOwnLocalToFront) and starts a new one.
  static constexpr std::uint32_t kLocalBatchCapacity = 128;
  // At most this many ready tasks are taken from the ready queue in one step (see
  // NextReadyTask).
  static constexpr std::uint32_t kClaimCapacity = 8;
  // How far ahead, and how many lines of each task, the next tasks' memory is prefetched
  // (NextReadyTask explains why; bench/results/json/task_line_prefetch/ measured both).
  // PostOrder::kHome keeps 2 and 3: its owner's prefetch reaches tasks another worker's
  // look may take, and distance 3 with 4 lines ran its two-worker 10,000 x 1,000 yield
  // row at 0.71x.
  static constexpr std::uint32_t kPrefetchDistance = 3;
  static constexpr int kPrefetchLines = 4;
  static constexpr std::uint32_t kHomePrefetchDistance = 2;
  static constexpr int kHomePrefetchLines = 3;
  // How often a parked worker looks again for local batches to take over while another
  // worker executes (see Park).
  static constexpr std::chrono::milliseconds kLocalBatchRecheck{1};
  // PostOrder::kHome: an execution batch also ends, with the role free, once it has run
  // for this many CycleCount units (sync/primitives.h: 0.4-2 ms of a 1-5 GHz time-stamp
  // counter, 2 ms of the steady clock elsewhere), looked at after its 1st, 4th, 16th...
  // start: a worker takes the role after each execution batch, and a batch of long tasks
  // must not keep outside posts, timers and IO from it for execute_batch_size task-lengths.
  static constexpr std::uint64_t kHomeBatchBudget = 2'000'000;
  // PostOrder::kHome: stamps a worker reserves from the global clock at a time, and how
  // many tasks one TakeFront moves when the queues are drained at Stop.
  static constexpr std::uint64_t kStampBlock = kHomeStampBlock;
  static constexpr int kTakeCapacity = 128;
  static constexpr std::uint64_t kNoHead = ~std::uint64_t{0};  // PublishHead: an empty queue

  struct alignas(kCacheLineSize) Worker {
    explicit Worker(ReadyQueueT& queue) : consumer(queue) {}
    typename ReadyQueueT::Consumer consumer;
    Task* running = nullptr;  // the task whose callback runs now (this thread only)
    // Tasks this worker has started (this thread only): the clock of stale take-overs.
    std::uint64_t started = 0;
    // The local batch: run-now posts made by tasks on this worker and not yet published
    // (sched/internal/held_posts.h).
    internal::LocalBatch<Task, kLocalBatchCapacity> local;
    bool HasLocal() const { return !local.IsEmptyForOwner(); }
    // What this worker saw of each other worker's local batch at its last look
    // (TakeOverStaleBatches), by worker index. This thread only.
    struct SeenBatch {
      bool held = false;          // the batch was not empty
      std::uint32_t head = 0;     // its Head() then: unchanged while nothing is published
      std::uint64_t started = 0;  // our `started` then
    };
    std::vector<SeenBatch> seen;
    // PostOrder::kHome (sched/internal/home_queues.h): this worker's queue (null under the
    // other orders), its reserved stamps [stamp_next, stamp_end), whether it looks at the
    // other queues before its next own task, the newest stamp among the tasks it took from
    // other queues with its own empty since its last look (0: none), and each other
    // queue's ClaimedCount at its previous idle look (by worker index). This thread only,
    // except `home`.
    std::unique_ptr<HomeRing<Task>> home;
    std::uint64_t stamp_next = 0;
    std::uint64_t stamp_end = 0;
    bool look_now = false;
    std::uint64_t taken_stamp_max = 0;
    std::vector<std::uint64_t> seen_claimed;
    // Its queue's head stamp as of its last look, for the others' looks (PublishHead); on
    // its own line, which its owner writes once per execution batch.
    alignas(kCacheLineSize) Atomic<std::uint64_t> published_head{kNoHead};
    // One past the stamp, and the queue's tail count, of the last task the sched-role made
    // ready into this queue while this worker held it (MakeReady): a lone task at or below
    // them was made ready by the role, not posted by this worker's own task, and an idle
    // worker takes it at once (TakeOneFromOthers). Written by the owner, on the same line.
    Atomic<std::uint64_t> received_stamp_end{0};
    Atomic<std::uint64_t> received_count_end{0};
    // With one worker only: ready tasks it took from the ready queue in one step, or its
    // own local batch taken to run in place, not started yet,
    // claimed[claimed_head .. claimed_end) (modulo kClaimCapacity). This thread only.
    std::uint32_t claimed_head = 0;
    std::uint32_t claimed_end = 0;
    Task* claimed[kClaimCapacity] = {};
    bool HasClaimed() const { return claimed_head != claimed_end; }
    PostCounters::Slot* counter = nullptr;  // this worker's own counters, if it has a slot
    // Its statistics and latency counts (single writer: this worker).
    internal::WorkerCounters stats;
    // Free one-shot tasks: this worker's executions give back here, its tasks' one-shot
    // posts take from here. Only this worker touches it while it runs (Stop afterwards).
    TaskPool::Cache task_cache;
  };

  // Adds `worker`'s counters to `s` (relaxed loads: see sched/worker_stats.h).
  static void AddCounts(const Worker& worker, WorkerStats& s) {
    worker.stats.AddTo(s);
    if constexpr (requires { worker.consumer.LockStats(); }) {
      const QueueLockStats lock = worker.consumer.LockStats();
      s.ready_lock_taken += lock.lock_taken;
      s.ready_lock_contended += lock.lock_contended;
    }
  }

  void StartWorkers(int thread_count) {
    internal::InstallTaskExceptionReporter();
    FAIRSCHED_DCHECK(workers_.empty(), "workers started while earlier ones are not retired");
    worker_count_ = thread_count;  // published to the workers by the thread starts
    for (int i = 0; i < thread_count; ++i) {
      workers_.push_back(std::make_unique<Worker>(ready_));
      // Every earlier worker has been joined (Start and Stop start workers only then), so the
      // slots are free; the thread start below publishes their counts to the new owner.
      workers_.back()->counter = counters_.SlotFor(static_cast<std::size_t>(i));
      workers_.back()->seen.resize(static_cast<std::size_t>(thread_count));
      if (home_queues_) {
        workers_.back()->home = std::make_unique<HomeRing<Task>>();
        workers_.back()->seen_claimed.resize(static_cast<std::size_t>(thread_count));
      }
    }
    if (!home_leftovers_.empty()) RequeueHomeLeftovers(workers_.front().get());
    // Thread creation synchronises: each worker sees its fully constructed Worker.
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      threads_.emplace_back([this, i, worker = workers_[i].get()] { WorkerMain(worker, i); });
    }
  }

  // Owner, after joining every worker thread: folds the workers' counters and latency
  // counts into the retired totals, returns their one-shot task caches to the heap and
  // destroys them, so that Start/Stop cycles do not accumulate workers.
  void RetireWorkers() {
    if (retired_stats_.size() < workers_.size()) retired_stats_.resize(workers_.size());
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      Worker& worker = *workers_[i];
      FAIRSCHED_DCHECK(worker.home == nullptr || worker.home->SizeHint() == 0,
                       "a worker retired with tasks in its home queue");
      AddCounts(worker, retired_stats_[i]);
      worker.stats.AddLatencyTo(retired_latency_);
      TaskPool::Release(worker.task_cache);
    }
    workers_.clear();
  }

  // This thread's worker if it is a worker of this scheduler, else nullptr.
  Worker* CurrentWorker() const { return current_ == this ? current_worker_ : nullptr; }

  // Post and PostOneShot, after the double-post check marked the task queued. `worker`:
  // CurrentWorker().
  void PostMarked(Task* task, Worker* worker) {
    internal::TraceStep(internal::SchedStep::kPost, task);
    task->SetOwner(this);  // relaxed: only for the misuse checks of Wakeup/Signal/Cancel
    // Sampled post-time stamp for the latency histogram (see Task::StampPostTime); only for
    // posts that run at once. The counter is per thread, so posters share nothing here.
    if (task->Deadline() == kTaskDeadlineNow && sample_latency_ &&
        (++t_posts_ & latency_sample_mask_) == 0) {
      task->StampPostTime(TaskClock::now());
    }
    // Before the task is published (see PostCounters): this worker's own slot, if any.
    counters_.CountPost(worker != nullptr ? worker->counter : nullptr);
    if (worker != nullptr && worker->running != nullptr) {
      // A task of this scheduler posting work to run at once (a re-post, a coroutine's
      // Yield, a one-shot): into its worker's local batch (sched/internal/held_posts.h).
      if (local_batches_ && task->Deadline() < TaskDeadline{} && !task->WaitsThroughStop()) {
        AppendLocal(worker, task);
        return;
      }
      // Under PostOrder::kHome: into its worker's own queue (sched/internal/home_queues.h).
      // Then a worker that sleeps with no timeout must hear of it: the poster may go on to
      // block (see ExecuteBatch; one load of a line that rarely changes).
      if (home_queues_ && task->Deadline() < TaskDeadline{} && !task->WaitsThroughStop()) {
        task->MarkReady(/*expired=*/true);  // as MakeReady would: a run-now post is expired
        HomePush(worker, task);
        WakeUntimedSleepers();
        return;
      }
      // Any other post of a task goes behind that task's earlier posts still held locally.
      if (local_batches_) PublishOwnLocalToFront(worker);
    }
    PushFront(task);
  }

  // `n` callbacks of this worker returned. Wakes WaitEmpty callers if that made the
  // scheduler empty.
  void CountFinished(Worker* worker, std::size_t n) {
    counters_.CountFinished(worker->counter, n);
    // seq_cst load after the seq_cst count (PostCounters::CountFinished): the finisher's half
    // of the Dekker pair with WaitEmpty. Usually nobody waits: one load of a line that is
    // only written when a waiter comes or goes.
    if (empty_waiters_.load(std::memory_order_seq_cst) > 0 && IsEmpty()) {
      // Taking the mutex orders us after a waiter's predicate check (it checks under the
      // mutex), so the notification is not lost.
      { MutexLock lock(empty_mu_); }
      empty_cv_.notify_all();
    }
  }

  void PushFront(Task* task) { AfterFrontPush(front_.Push(task)); }

  // Wakeup, Signal and Cancel: `bits` are the task's wake bits (Task::TryWake).
  void Wake(Task* task, std::uint8_t bits) {
    FAIRSCHED_DCHECK(task->IsOwnedByOrUnposted(this),
                     "Wakeup/Signal/Cancel of a task posted to another scheduler");
    FAIRSCHED_DCHECK(!task->IsPooled() || (current_ == this && current_worker_->running == task),
                     "Wakeup/Signal/Cancel of a PostOneShot task outside its callback");
    // Won a WAITING task: it sits in the wait queue, which only the sched-role may touch, so
    // hand it to the sched-role through the front queue. The sched-role sees it woken,
    // removes it from the wait queue and readies it. Not counted as a post (PostCounters):
    // it is the same post. Nothing touches the task after the push.
    internal::TraceStep(internal::SchedStep::kWakeCall, task);
    if (!task->TryWake(bits)) return;
    internal::TraceStep(internal::SchedStep::kWakePush, task);
    PushFront(task);
  }

  // --- Held posts: sched/internal/held_posts.h. ---
  void AppendLocal(Worker* worker, Task* task);
  bool PushChain(Task** tasks, std::uint32_t count);
  void PublishOwnLocalToFront(Worker* worker);
  bool TakeOverLocalBatch(Worker* owner, bool wait);
  std::size_t MoveLocalToReady(Worker* worker);
  bool TakeOverLocalBatches(Worker* self);
  void TakeOverStaleBatches(Worker* self);
  bool ClaimLocalInPlace(Worker* worker);

  // --- Home queues (PostOrder::kHome): sched/internal/home_queues.h. ---
  std::uint64_t NextStamp(Worker* worker);
  std::uint64_t HomePush(Worker* worker, Task* task);
  void PublishHead(Worker* worker);
  std::uint64_t SkewOf(const Worker* worker) const;
  Task* TakeOldTask(Worker* self);
  Task* TakeOneFromOthers(Worker* self, bool lone_if_stuck);
  bool ClaimOneFromOthers(Worker* self);
  Task* NextHomeTask(Worker* worker);
  void TakeHomeLeftovers();
  void RequeueHomeLeftovers(Worker* worker);
  bool OtherHomesHaveWork(const Worker* self) const;

  // --- Idle workers: sched/internal/idle.h. ---
  void AfterFrontPush(bool was_empty);
  bool SomeWorkerMayBeIdle() const;
  void WakeOne(Worker* worker);
  bool WorkVisible(Worker* worker) const;
  bool ReadySeemsNonEmpty(Worker* worker) const;
  bool Park(Worker* worker);
  bool RecheckWhileOthersExecute(TaskDeadline& until);
  void WakeUntimedSleepers();
  template <typename Found>
  static bool SpinFor(std::chrono::nanoseconds duration, Found found);

  // --- The sched-role: sched/internal/sched_role.h. ---
  class LazyNow;
  struct ScheduleResult;
  class RoleReadySink;
  std::size_t WakeFromRole(Task* task, std::uint8_t bits);
  std::size_t FrontPopLimit(const Worker* worker) const;
  ScheduleResult Schedule(Worker* worker);
  std::size_t ReceiveFromFront(Task* task, LazyNow& now, bool stopping);
  void MakeReady(Task* task, bool expired);
  std::size_t WakeWaitingForStop(LazyNow& now);
  bool PublishNearestDeadline(LazyNow& now);
  bool TimerDue() const;
  static constexpr std::int64_t kNoDeadlineTicks = kNoDeadline.time_since_epoch().count();

  // --- The worker loop and the execute path: sched/internal/worker_loop.h. ---
  void WorkerMain(Worker* worker, std::size_t index);
  std::size_t ExecuteBatch(Worker* worker);
  Task* NextReadyTask(Worker* worker);
  static void Prefetch(const Task* task, int lines = kPrefetchLines);
  void Execute(Worker* worker, Task* task);
  void RecycleOneShot(Worker* worker, Task* task);
  static void RecordPostToStart(Worker* worker, const Task* task);

  TaskSchedulerOptions options_;
  const bool sample_latency_ = options_.latency_sample_period != 0;
  const std::uint32_t latency_sample_mask_;  // period - 1 (period is a power of two)
  const bool local_batches_;                 // post_order == kBatched
  const bool home_queues_;                   // post_order == kHome
  // One-shot tasks. On lines of its own: its mutex is written at every batch a thread's
  // cache takes or gives back, and the fields above are read at every post and start.
  alignas(kCacheLineSize) TaskPool pool_;
  // Shared with producers (any thread).
  MpscQueue<Task> front_;
  IoBackendT io_;
  PostCounters counters_;  // posts and finished executions, for IsEmpty
  alignas(kCacheLineSize) Atomic<int> empty_waiters_{0};  // threads in WaitEmpty
  Atomic<bool> stopping_{false};
  Atomic<std::uint64_t> stop_generation_{0};  // Stop calls so far (WakeWaitingForStop)
  Atomic<bool> exit_{false};
  // Sched-role state: touched only by the role holder (RoleLock publishes it).
  RoleLock role_;
  Worker* role_worker_ = nullptr;  // the holder's worker, while it schedules (kHome: MakeReady)
  WaitQueueT wait_;
  std::uint64_t swept_generation_ = 0;  // the last Stop whose waiting tasks were woken
  // Ready queue: producer = role holder, consumers = workers.
  ReadyQueueT ready_;
  fairsched::AutoResetEvent ready_event_;
  // Workers parked (or about to park) on ready_event_.
  alignas(kCacheLineSize) Atomic<int> parked_{0};
  // PostOrder::kHome: idle workers sleeping with no timeout while no worker executed
  // (RecheckWhileOthersExecute; a worker that starts executing wakes them).
  alignas(kCacheLineSize) Atomic<int> untimed_sleepers_{0};
  // PostOrder::kHome: the global stamp clock (NextStamp reserves blocks of it).
  alignas(kCacheLineSize) Atomic<std::uint64_t> order_clock_{0};
  // Workers inside an execution batch: every worker's batch start and end write it.
  alignas(kCacheLineSize) Atomic<int> executing_{0};
  // Read after every task (TimerDue) and written only when the nearest deadline changes,
  // so not on executing_'s line: there each batch start or end of one worker made the
  // next read of every other worker miss. The wait queue's nearest deadline
  // (steady-clock ticks), and how many workers run (set before they start).
  alignas(kCacheLineSize) Atomic<std::int64_t> nearest_deadline_{
      kNoDeadline.time_since_epoch().count()};
  int worker_count_ = 0;
  Mutex empty_mu_;
  ConditionVariable empty_cv_;
  // Owner-thread state (Start/Stop).
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Thread> threads_;                  // std::thread (sync/primitives.h)
  // PostOrder::kHome, inside Stop: the tasks the home queues held when their workers left,
  // with their stamps, oldest first (TakeHomeLeftovers), until the fresh worker gets them.
  std::vector<std::pair<std::uint64_t, Task*>> home_leftovers_;
  std::vector<WorkerStats> retired_stats_;       // counts of joined workers, by index
  fairsched::LatencyHistogram retired_latency_;  // ... and their latency counts

  static inline thread_local BasicTaskScheduler* current_ = nullptr;
  static inline thread_local Worker* current_worker_ = nullptr;  // on current_'s workers
  static inline thread_local std::uint32_t t_posts_ = 0;  // this thread's posts (sampling)
};

using TaskScheduler = BasicTaskScheduler<>;
using TrivialPolicyTaskScheduler = BasicTaskScheduler<LockedReadyQueue<Task>>;

}  // namespace fairsched

// The member functions of each concern (see the map in sched/README.md). Each of these
// headers includes this one first.
#include "sched/internal/held_posts.h"
#include "sched/internal/home_queues.h"
#include "sched/internal/idle.h"
#include "sched/internal/sched_role.h"
#include "sched/internal/worker_loop.h"

#endif  // FAIRSCHED_SCHED_TASK_SCHEDULER_H_
