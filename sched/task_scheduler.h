// BasicTaskScheduler: fairsched's fair multi-threaded task scheduler (docs/design.md), and
// its two standard configurations TaskScheduler and TrivialPolicyTaskScheduler.
//
// Pipeline:
//   any thread --Post/Wakeup/Signal--> [front: MpscQueue] --+
//                                                           | sched-role (one worker at a time)
//           [wait: WaitQueueT, by deadline] <---------------+--> [ready: ReadyQueueT] --> workers
//
// There is no scheduler thread. Each worker loops:
//   1. TryLock the sched-role. The holder polls the IO backend without blocking (tasks
//      whose IO completed become ready), moves up to `batch_size` tasks from the front
//      queue to the wait or ready queue and expired ones from the wait queue to the ready
//      queue, publishes them with one FlushPending and releases the role. If it found
//      nothing to do and nothing is ready, it keeps the role and sleeps in
//      IoBackend::WaitUntil(nearest deadline) until a post notifies it or IO arrives:
//      nobody polls.
//      A worker tries the role only after an execution batch that ended early (it found no
//      ready task, or a timer was due): front posts cannot start before the ready ones
//      anyway (FIFO), and scheduling them early would only let the ready queue grow, and
//      its tasks go cold, under a fast poster.
//   2. Pops and executes ready tasks: at most `execute_batch_size`. When the role is free it
//      stops early after any task if the nearest deadline has passed, so long tasks on
//      every worker do not delay timers by a whole batch. A scheduler with one worker takes
//      up to 8 ready tasks from the ready queue at once ("claimed", one CAS for them all)
//      and, with nothing else ready, runs its own local batch in place; see "Local batches
//      and the order bound" below.
//   3. Having executed nothing, it spins briefly (`spin_before_park`), then parks on the
//      ready signal. The role holder that found nothing to do spins the same time before
//      it sleeps in the IO backend.
// Who wakes whom (every wake-up has work behind it; WorkerStats counts them):
//   - A post (or a Wakeup/Signal/Cancel of a waiting task, which goes through the front
//     queue) into an empty front queue notifies the role holder (IoBackend::Notify); if the
//     role is free (nobody to notify) and workers are parked, it wakes one, which takes
//     the role. In an idle scheduler one worker sleeps in the IO backend holding the role
//     and the others are parked, so a post wakes exactly one thread, the role holder, which
//     schedules the task and runs it (below); a second wake-up happens only when timers
//     wait, off the task's path.
//   - The role holder that published K ready tasks executes them itself (no hand-over to
//     another worker: one wake-up from post to start); it wakes one parked worker when
//     K > 1 (more work than it can start).
//   - Timers while the role holder executes: a parked worker parks with a timeout at the
//     nearest finite deadline, and every worker checks for a due timer after each task,
//     so nobody is woken just because tasks wait. The role holder wakes one parked worker
//     only when it published a nearest deadline that a parker may have missed (earlier
//     than the one before, or the one before has passed), so that it times its park anew.
//   - A worker that pops a task while more seem ready (a lock-free peek at the ready
//     queue) and workers are parked wakes one more before executing: wake-ups chain through
//     as many workers as there is work for, and stop when the ready queue is empty.
//   - Releasing the role with scheduling work left (posts beyond the batch bound, or posts
//     that arrived while it was held, whose posters saw the role taken and woke nobody)
//     wakes one parked worker.
// Local batches and the order bound (the per-resume hot path: a coroutine's Yield or wait,
// a task re-posting itself, a one-shot posted from a task; PostOrder::kBatched, the
// default):
//   - A post made by a task of this scheduler that runs at once (no deadline, not through
//     Stop) while every worker is executing does not go through the front queue: it goes
//     into its worker's local batch (sched/internal/local_batch.h: plain stores, no locked
//     instruction). When a worker may be idle at the moment of the post, the post goes to
//     the front queue at once, behind the poster's earlier posts still held.
//   - A held post joins the shared FIFO (the front queue, or the ready queue when the front
//     queue is empty and its worker holds the role) at the first of:
//       (a) the end of its worker's execution batch (at most execute_batch_size starts);
//       (b) the end of an execution batch of any other worker that has started at least
//           execute_batch_size tasks since it first saw the batch held (every worker looks
//           at the others' batches at each of its own batch ends; TakeOverStaleBatches);
//       (c) a worker running out of work: it takes every held batch over before it parks
//           or sleeps in the role, and looks again every kLocalBatchRecheck (1 ms) while a
//           worker executes;
//       (d) its poster making a post that must go to the front queue (a deadline, a wait,
//           a worker idle): the held posts go first (per-poster order);
//       (e) Stop: a worker leaves only with nothing held.
//     So a held post joins the FIFO before its worker has started execute_batch_size more
//     tasks and before any other worker has started 3 * execute_batch_size more (up to
//     execute_batch_size to its next batch end and first look, execute_batch_size more,
//     plus the rest of the batch in which it gets there), whatever the other workers run:
//     long tasks start nothing, busy re-posters and floods end batches. In time: the
//     shortest of those, or 1 ms once a worker is idle.
//   - The bound holds also for a thread that the OS deschedules at any point. Every
//     publication of a batch (the owner's, or a take-over in b and c) holds the batch's
//     claim from before it reads the posts until after it has pushed them, and only then
//     moves the batch's head past them: a post never leaves the batch before it is in
//     the shared FIFO. A busy worker counts a batch as held while its head stays put, so a
//     publisher descheduled in the middle still holds a "held" batch, and the busy worker,
//     once the batch is stale, waits for the claim (b) instead of starting more tasks.
//     (Until then the publisher's posts wait in time, not in starts.)
//   - Claimed tasks: a scheduler with one worker takes up to 8 ready tasks with one CAS and
//     runs them in order (nobody else could run them sooner); when its claimed tasks and
//     the ready queue are empty, the front queue is empty and no timer is due, it claims
//     its own local batch and runs it in place: that batch is what the role would make
//     ready next (ClaimLocalInPlace). With several workers each takes one ready task at a
//     time: tasks held by a worker that runs a long task could be overtaken by later ones
//     another worker starts.
//   - The next tasks to run are prefetched (the task's line and the two after it: a spawned
//     coroutine's state and frame follow its task), two tasks ahead.
//
// The lost-wakeup trap of the original design (every worker asleep while tasks remain) is
// closed by Dekker-style checks, each spelled out at the code: a parking worker registers in
// `parked_` and then re-checks the queues and the nearest deadline, while every publisher
// first publishes and then reads `parked_`; the role holder announces its sleep and
// re-checks the front queue, while posters push and then notify.
//
// Promises (each tested in tests/sched/):
//   - Exactly once: every Post* runs the task exactly once; Wakeup/Signal racing with
//     deadline expiry or with execution never lose or duplicate a run.
//   - Order: tasks with equal deadlines start in the order they joined the shared FIFO (the
//     ready queue is FIFO and fed by one sched-role in front-queue order). A post joins it
//     when it is made, except a run-now post made by a task under PostOrder::kBatched,
//     which joins within the bound above: it can be overtaken only by posts made before
//     it joined, i.e. while fewer than execute_batch_size task starts happened on its own
//     worker and fewer than 3 * execute_batch_size on each other worker
//     (tests/sched/held_post_test.cc). Two posts of one task join in the order they were
//     made. PostOrder::kStrict: every post joins when it is made (the bound is 0). With
//     one worker tasks also finish in start order; with several, each worker starts its
//     tasks in FIFO order. Tasks that wait in
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
//     Wakeup (IsExpired() false, ReceiveSignal() false; IsStopping() true), once: except
//     the posts made with PostDeadlineThroughStop, which keep waiting for their wakeup or
//     deadline (a wait that must see its event; Stop waits for them like for any post). Posting during
//     stopping is allowed (so multi-step tasks can finish). Stop returns once the scheduler
//     is empty (every post has run) and the workers have exited; a post that races with the
//     workers' exit is drained too before Stop returns, also one that a task made into
//     its worker's local batch or that a worker had claimed (a worker leaves with nothing
//     held; IsEmpty() is true when Stop returns). A task that keeps re-posting itself
//     forever keeps Stop from returning: such tasks must check IsStopping(). Stop is
//     idempotent; calling it from inside a task of this scheduler aborts with a message.
//     While stopping, the role holder also asks the IO backend to cancel every IO
//     registration (IoBackend::CancelAll), so tasks waiting for IO get their final
//     completion and the drain can end.
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
// PostOneShot task, destroying a queued task, Stop from inside a task of this scheduler. Caught in builds without NDEBUG: posting a task
// without a callback, Wakeup/Signal/Cancel of a task last posted to another scheduler,
// Start twice.
//
// Costs (measured in bench/results/sched.md):
//   - Post: no locked instruction when a task re-posts itself (or posts a one-shot) while
//     every worker executes (the local batch; its publication costs one exchange or a role
//     take per batch, plus the batch's claim, one exchange); otherwise one (the front push,
//     an exchange). Posting any other task
//     adds the double-post check's exchange; posting from outside the scheduler adds the
//     shared post count (sched/post_counters.h). Plus a Notify when the front queue was
//     empty; one post in latency_sample_period also reads the clock.
//     Under PostOrder::kStrict every post is the front push. The bound's enforcement costs
//     each worker, at the end of each of its execution batches, one read of every other
//     worker's local-batch line (TakeOverStaleBatches).
//   - Taking a ready task: one CAS on the ready queue; with one worker one per 8 tasks, and
//     none for its own local batch when nothing else is ready (run in place).
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
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
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
#include "sched/internal/local_batch.h"
#include "sched/io_backend.h"
#include "sched/latency_histogram.h"
#include "sched/post_counters.h"
#include "sched/task.h"
#include "sched/task_pool.h"
#include "sync/primitives.h"
#include "sync/role_lock.h"
#include "sync/signal.h"

namespace fairsched {

namespace internal {

// Reports an exception that escapes a task callback. Nothing between the worker's entry and
// the callback catches (BasicTaskScheduler::Execute), so the C++ runtime calls
// std::terminate before unwinding anything; this terminate handler prints which task-level
// failure it was and then hands over to the handler it replaced (by default the runtime's, which names the exception type
// and aborts). Installed once per process, the first time a scheduler starts workers.
inline thread_local bool t_running_task = false;

inline std::terminate_handler g_previous_terminate_handler = nullptr;

[[noreturn]] inline void TaskTerminateHandler() {
  if (t_running_task) {
    if (const std::exception_ptr thrown = std::current_exception()) {
      try {
        std::rethrow_exception(thrown);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "fairsched: a task callback threw: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "fairsched: a task callback threw a non-std exception\n");
      }
      std::fflush(stderr);
    }
  }
  if (g_previous_terminate_handler != nullptr) g_previous_terminate_handler();
  std::abort();
}

inline void InstallTaskExceptionReporter() {
  static std::once_flag once;
  std::call_once(once,
                 [] { g_previous_terminate_handler = std::set_terminate(&TaskTerminateHandler); });
}

}  // namespace internal

// The order policy (TaskSchedulerOptions::post_order).
enum class PostOrder : std::uint8_t {
  // Run-now posts made by a task while every worker executes wait in their worker's local
  // batch and join the shared queue together, a bounded number of task starts later (see
  // "Order"): a re-post, a Yield or a one-shot costs no locked instruction.
  kBatched,
  // Every post joins the shared queue when it is made: tasks with equal deadlines start in
  // post order across all posters, with no bound to read. Each post made by a task costs
  // the front queue's exchange.
  kStrict,
};

struct TaskSchedulerOptions {
  std::string name = "fairsched";
  // Ready queue block (lock-free sub-queue) size: its mutex is taken about once per this
  // many pops. Clamped to [1, 1 << 20].
  std::size_t ready_block_size = 1024;
  // Sched-role batch: at most this many tasks taken from the front queue, and at most this
  // many from the wait queue, per role take. Bounds how long one worker schedules while
  // others could be executing. Clamped to >= 1.
  std::size_t batch_size = 1024;
  // Execution batch: at most this many tasks executed between two attempts to take the
  // sched-role. Clamped to >= 1. (A batch also ends early when role work is due.)
  std::size_t execute_batch_size = 64;
  // How long an idle worker keeps looking for work before it parks (sleeps in the kernel).
  // Spinning only happens right after a worker ran out of work, so an idle scheduler costs
  // nothing; a short spin saves the wake-up syscall round trip when work arrives again
  // soon. Zero disables spinning. Clamped to [0, 1 ms]. The idle role holder's spin also
  // watches its IO backend (IoBackend::EventsReady), so IO that completes during the spin
  // ends it at once instead of waiting for it.
  std::chrono::nanoseconds spin_before_park = std::chrono::microseconds(20);
  // Post-to-start latency sampling (LatencyHistogram()): every posting thread stamps one in
  // this many of its posts that run at once (no deadline), rounded up to a power of two;
  // 1 stamps every such post, 0 turns the histogram off. A stamp costs the poster one
  // steady-clock read and the executor another; unstamped posts pay a thread-local
  // counter increment (see bench/results/sched.md for the measured cost).
  std::uint32_t latency_sample_period = 64;
  // How strictly tasks start in post order (see "Order" in the header comment):
  // kBatched (the default) keeps run-now posts made by tasks in local batches, with the
  // stated bound; kStrict sends every post through the shared front queue.
  PostOrder post_order = PostOrder::kBatched;
};

// Per-worker counters. Each is written only by its worker (a relaxed load + store, no
// locked instruction) and read with relaxed loads by Stats(): a snapshot that may lag by a
// few increments while workers run, exact after Stop. Stats() has one entry per worker
// index (the i-th worker of every Start, and the temporary drain workers of Stop as index
// 0), summed over every Start since construction.
struct WorkerStats {
  std::uint64_t tasks_executed = 0;
  std::uint64_t sched_role_taken = 0;      // times this worker held the sched-role
  std::uint64_t ready_lock_taken = 0;      // ready-queue mutex taken by this worker's pops
  std::uint64_t ready_lock_contended = 0;  // ... of which it had to wait
  std::uint64_t parks = 0;                 // times it slept on the ready signal
  std::uint64_t role_sleeps = 0;           // times it slept in the IO backend holding the role
  std::uint64_t role_spins = 0;            // ... of which it spun first (spin_before_park)
  std::uint64_t wakes_sent = 0;            // ready signals it sent to wake a parked worker
  std::uint64_t idle_wakeups = 0;          // woke from a park and found nothing to do (spurious)
  // Other workers' local batches this worker published ("Local batches and the order
  // bound"): before parking or sleeping in the role (idle), and at its own batch ends
  // because the batch had stayed held while it started execute_batch_size tasks (stale).
  std::uint64_t idle_take_overs = 0;
  std::uint64_t stale_take_overs = 0;
};

template <typename ReadyQueueT = McspQueue<Task>, typename WaitQueueT = BinaryHeap<Task>,
          typename IoBackendT = NoIoBackend>
class BasicTaskScheduler {
  static_assert(ReadyQueue<ReadyQueueT, Task>);
  static_assert(WaitQueue<WaitQueueT, Task>);
  static_assert(IoBackend<IoBackendT>);
  struct Worker;  // below

 public:
  explicit BasicTaskScheduler(TaskSchedulerOptions options = {})
      : options_(Sanitized(std::move(options))),
        latency_sample_mask_(options_.latency_sample_period - 1),
        local_batches_(options_.post_order == PostOrder::kBatched),
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
    // Relaxed: published by the release store of stopping_ below (see WakeWaitingForStop).
    stop_generation_.store(stop_generation_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
    // Release: a role holder that reads stopping_ with acquire also sees everything posted
    // before it. Then wake the holder so it force-wakes the wait queue now, and a parked
    // worker in case the role is free.
    stopping_.store(true, std::memory_order_release);
    io_.Notify();
    ready_signal_.Send();
    while (true) {
      WaitEmpty(std::chrono::nanoseconds::max());
      // Everything ran. Tell the workers to exit: the role holder sleeps in the io backend,
      // the others on the ready signal; each exiting worker re-sends the ready signal so
      // the next sleeper wakes too (one Send wakes one receiver). Release: pairs with the
      // workers' acquire loads.
      exit_.store(true, std::memory_order_release);
      io_.Notify();
      ready_signal_.Send();
      for (Thread& thread : threads_) thread.join();
      threads_.clear();
      RetireWorkers();
      exit_.store(false, std::memory_order_relaxed);
      // A post (allowed while stopping) may have landed after WaitEmpty returned and before
      // the workers saw exit_: it sits in the front queue with nobody left to run it.
      // Drain it on a fresh worker instead of returning with it stranded.
      if (IsEmpty()) break;
      StartWorkers(1);
    }
    stopping_.store(false, std::memory_order_relaxed);  // not started again: restartable
    // The workers' task caches went back to the heap with the workers (RetireWorkers); so
    // does the shared tier (threads that posted keep their small thread-local caches).
    pool_.ReleaseShared();
  }

  // Posts `task` with the deadline it carries (by default: run as soon as possible).
  void Post(Task* task) {
    // A one-shot's Task* may have escaped its callback (to another thread, or past its
    // return, when the pool may already have handed it to another PostOneShot). pooled_
    // never changes, so this read races with nothing, whenever it happens.
    FAIRSCHED_CHECK(!task->pooled_,
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
  // Post after the double-post check marked the task queued. `worker`: CurrentWorker().
  void PostMarked(Task* task, Worker* worker) {
    // Relaxed: only checked by Wakeup/Signal for misuse; correctness never depends on it.
    task->owner_.store(this, std::memory_order_relaxed);
    // Sampled post-time stamp for the latency histogram (see Task::StampPostTime); only for
    // posts that run at once. The counter is per thread, so posters share nothing here.
    if (task->deadline_ == kTaskDeadlineNow && sample_latency_ &&
        (++t_posts_ & latency_sample_mask_) == 0) {
      task->StampPostTime(TaskClock::now());
    }
    // Before the task is published (see PostCounters): this worker's own slot, if any.
    counters_.CountPost(worker != nullptr ? worker->counter : nullptr);
    if (worker != nullptr && worker->running != nullptr) {
      // A task of this scheduler posting work to run at once (a re-post, a coroutine's
      // Yield, a one-shot): into its worker's local batch (see "Local batches and the order
      // bound" in the header comment).
      if (local_batches_ && task->deadline_ < TaskDeadline{} && !task->WaitsThroughStop()) {
        AppendLocal(worker, task);
        return;
      }
      // Any other post of a task goes behind that task's earlier posts still held locally.
      if (local_batches_) PublishOwnLocalToFront(worker);
    }
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
    task->flags_ |= Task::kFlagThroughStop;  // the poster's setter, like the deadline
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
    task->flags_ = Task::kFlagOneShot;
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

  // One entry per worker index, summed over every Start (see WorkerStats).
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
    for (const auto& worker : workers_) {
      for (std::size_t i = 0; i < fairsched::LatencyHistogram::kBuckets; ++i) {
        merged.counts[i] += worker->latency[i].load(std::memory_order_relaxed);
      }
    }
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
  static constexpr std::uint32_t kPrefetchDistance = 2;
  // How often a parked worker looks again for local batches to take over while another
  // worker executes (see Park).
  static constexpr std::chrono::milliseconds kLocalBatchRecheck{1};

  struct alignas(kCacheLineSize) Worker {
    explicit Worker(ReadyQueueT& queue) : consumer(queue) {}
    typename ReadyQueueT::Consumer consumer;
    Task* running = nullptr;  // the task whose callback runs now (this thread only)
    // Tasks this worker has started (this thread only): the clock of stale take-overs.
    std::uint64_t started = 0;
    // The local batch: run-now posts made by tasks on this worker and not yet published
    // (see "Local batches and the order bound").
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
    // With one worker only: ready tasks it took from the ready queue in one step, or its
    // own local batch taken to run in place, not started yet,
    // claimed[claimed_head .. claimed_end) (modulo kClaimCapacity). This thread only.
    std::uint32_t claimed_head = 0;
    std::uint32_t claimed_end = 0;
    Task* claimed[kClaimCapacity] = {};
    bool HasClaimed() const { return claimed_head != claimed_end; }
    PostCounters::Slot* counter = nullptr;  // this worker's own counters, if it has a slot
    // Single writer (the worker), see WorkerStats.
    Atomic<std::uint64_t> tasks_executed{0};
    Atomic<std::uint64_t> sched_role_taken{0};
    Atomic<std::uint64_t> parks{0};
    Atomic<std::uint64_t> role_sleeps{0};
    Atomic<std::uint64_t> role_spins{0};
    Atomic<std::uint64_t> wakes_sent{0};
    Atomic<std::uint64_t> idle_wakeups{0};
    Atomic<std::uint64_t> idle_take_overs{0};
    Atomic<std::uint64_t> stale_take_overs{0};
    // Post-to-start latency counts, log2 buckets (single writer, like the counters above).
    Atomic<std::uint64_t> latency[fairsched::LatencyHistogram::kBuckets] = {};
    // Free one-shot tasks: this worker's executions give back here, its tasks' one-shot
    // posts take from here. Only this worker touches it while it runs (Stop afterwards).
    TaskPool::Cache task_cache;
  };

  static TaskSchedulerOptions Sanitized(TaskSchedulerOptions options) {
    constexpr std::size_t kMaxBlock = std::size_t{1} << 20;
    options.ready_block_size = std::clamp<std::size_t>(options.ready_block_size, 1, kMaxBlock);
    options.batch_size = std::max<std::size_t>(options.batch_size, 1);
    options.execute_batch_size = std::max<std::size_t>(options.execute_batch_size, 1);
    options.spin_before_park = std::clamp<std::chrono::nanoseconds>(
        options.spin_before_park, std::chrono::nanoseconds::zero(), std::chrono::milliseconds(1));
    if (options.latency_sample_period != 0) {
      options.latency_sample_period =
          std::bit_ceil(std::min<std::uint32_t>(options.latency_sample_period, 1u << 30));
    }
    return options;
  }

  static void Bump(Atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }

  // Adds `worker`'s counters to `s` (relaxed loads: see WorkerStats).
  static void AddCounts(const Worker& worker, WorkerStats& s) {
    auto read = [](const Atomic<std::uint64_t>& c) { return c.load(std::memory_order_relaxed); };
    s.tasks_executed += read(worker.tasks_executed);
    s.sched_role_taken += read(worker.sched_role_taken);
    s.parks += read(worker.parks);
    s.role_sleeps += read(worker.role_sleeps);
    s.role_spins += read(worker.role_spins);
    s.wakes_sent += read(worker.wakes_sent);
    s.idle_wakeups += read(worker.idle_wakeups);
    s.idle_take_overs += read(worker.idle_take_overs);
    s.stale_take_overs += read(worker.stale_take_overs);
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
    }
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
      AddCounts(worker, retired_stats_[i]);
      for (std::size_t b = 0; b < fairsched::LatencyHistogram::kBuckets; ++b) {
        retired_latency_.counts[b] += worker.latency[b].load(std::memory_order_relaxed);
      }
      TaskPool::Release(worker.task_cache);
    }
    workers_.clear();
  }

  // A post, before its push: the posting worker's own counter slot if a task of this
  // scheduler posts (no locked instruction), else the shared one.
  // This thread's worker if it is a worker of this scheduler, else nullptr.
  Worker* CurrentWorker() const { return current_ == this ? current_worker_ : nullptr; }

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

  // After a push (or a chain push) into the front queue that returned `was_empty`.
  void AfterFrontPush(bool was_empty) {
    // The push is seq_cst (see MpscQueue): with the loads below it forms the poster's half
    // of two Dekker pairs.
    if (!was_empty) {
      // Not the first task in the front queue: whoever made it non-empty already arranged
      // for it to be scheduled, and that covers ours. The task before ours stays in the
      // queue until our push is complete (see MpscQueue), so the queue stays non-empty until
      // ours is popped; the role holder never sleeps while the queue is not empty, including
      // while our push is still in flight (IsEmpty is false then; see Schedule), and looks
      // at the queue again after releasing the role (WorkerMain).
      return;
    }
    // The role holder may be asleep (or about to sleep) without knowing about this task.
    // Notify is a flag that the next WaitUntil consumes, so it is never lost.
    io_.Notify();
    // If nobody holds the role, nobody will take this task unless a worker comes by: a
    // busy worker takes the role once it runs out of ready tasks, but if every worker is parked
    // we must wake one. seq_cst loads, after our seq_cst push: either we see the role free
    // and a parked worker (and wake it), or the parker's re-check after registering sees
    // our task, or the releasing role holder's check after its seq_cst Unlock sees it.
    if (!role_.IsLocked(std::memory_order_seq_cst) && parked_.load(std::memory_order_seq_cst) > 0) {
      ready_signal_.Send();
    }
  }

  // --- Local batches (see the header comment). ---

  // A run-now post by a task running on `worker` (this thread): kept in the local batch.
  // The task is hot (its callback is running or just posted it); its flags are set here,
  // as the sched-role's MakeReady would set them (a run-now post counts as expired), so
  // that publishing it later does not touch it again.
  void AppendLocal(Worker* worker, Task* task) {
    // Another worker is idle and could run it now (parked, or in the role, where it may be
    // sleeping): no batching, the usual push, behind this worker's earlier posts. Relaxed
    // load: a stale answer only delays the post to the next task boundary (the same test
    // again), or until another worker takes the batch over (TakeOverStaleBatches, Park).
    if (SomeWorkerMayBeIdle()) {
      PublishOwnLocalToFront(worker);
      PushFront(task);
      return;
    }
    task->flags_ = static_cast<std::uint8_t>((task->flags_ & Task::kFlagsKeptUntilRun) |
                                             Task::kFlagExpired);
    if (worker->local.IsFull()) PublishOwnLocalToFront(worker);
    worker->local.Append(task);
  }

  // Whether another worker may be idle: not every worker is inside an execution batch (the
  // others are spinning, parked, or in the role, where the holder may be asleep). Relaxed
  // load; a hint (see AppendLocal).
  bool SomeWorkerMayBeIdle() const {
    return executing_.load(std::memory_order_relaxed) < worker_count_;
  }

  // Pushes `count` tasks (oldest first) into the front queue as one chain (one exchange).
  // Returns the push's `was_empty`, for AfterFrontPush (which a local-batch publication
  // calls after it has released the batch: the wake need not hold up the batch's owner).
  bool PushChain(Task** tasks, std::uint32_t count) {
    for (std::uint32_t i = 0; i + 1 < count; ++i) tasks[i]->next = tasks[i + 1];
    return front_.PushChain(tasks[0], tasks[count - 1]);
  }

  // The owner: publishes its local batch through the front queue, for when it cannot put
  // it into the ready queue itself (the role is held elsewhere, the batch is full inside a
  // callback, it posts past the batch) or must not (older posts wait in the front queue).
  // The sched-role receives the tasks like any post. When it returns, every earlier post
  // of this worker's tasks is in the front queue (see LocalBatch's per-owner order), so a
  // push the caller makes next lands behind them.
  void PublishOwnLocalToFront(Worker* worker) {
    bool was_empty = false;
    worker->local.PublishAsOwner(
        [&](Task** tasks, std::uint32_t count) { was_empty = PushChain(tasks, count); });
    AfterFrontPush(was_empty);
  }

  // Another worker: takes `owner`'s local batch over and publishes it through the front
  // queue. An idle worker (`wait` false) gives up when a publication of the batch is under
  // way (its publisher pushes and wakes); a busy one enforcing the bound waits for it,
  // so that it starts nothing while a publisher that the OS descheduled holds those posts
  // (TakeOverStaleBatches). Returns whether it published anything.
  bool TakeOverLocalBatch(Worker* owner, bool wait) {
    bool was_empty = false;
    // Maybe called several times (LocalBatch::PublishUntilEmpty): the first push's answer
    // is the one that can be true.
    const auto publish = [&](Task** tasks, std::uint32_t count) {
      was_empty = PushChain(tasks, count) || was_empty;
    };
    const bool published = wait ? owner->local.TakeOver(publish) : owner->local.TryTakeOver(publish);
    AfterFrontPush(was_empty);
    return published;
  }

  // Sched-role, on `worker` (the holder), once the front queue is empty: the local batch
  // goes straight into the ready queue, behind everything the front queue held. Returns
  // how many tasks it made ready (published by the caller's FlushPending).
  std::size_t MoveLocalToReady(Worker* worker) {
    std::size_t made_ready = 0;
    bool was_empty = false;
    worker->local.PublishAsOwner([&](Task** tasks, std::uint32_t count) {
      // A take-over that published earlier posts of ours pushed them into the front queue
      // before we got the claim (PublishAsOwner waited for it): ours go behind them,
      // through it too. Exact: we are the front queue's consumer, and the taker's push is
      // complete.
      if (!front_.IsEmpty()) {
        was_empty = PushChain(tasks, count);
        return;
      }
      // Pending in the ready queue until the caller's FlushPending: only this thread (the
      // role holder) adds to it, so nothing posted later can get ahead of them meanwhile.
      for (std::uint32_t i = 0; i < count; ++i) ready_.PushPending(tasks[i]);
      made_ready = count;
    });
    AfterFrontPush(was_empty);
    return made_ready;
  }

  // An idle worker, before it sleeps: takes over the local batches of the other workers
  // (tasks posted while every worker was busy, whose owner now runs a task that may be
  // long) and publishes them. Returns whether it found any.
  bool TakeOverLocalBatches(Worker* self) {
    bool found = false;
    for (const auto& other : workers_) {
      if (other.get() != self && TakeOverLocalBatch(other.get(), /*wait=*/false)) {
        Bump(self->idle_take_overs);
        found = true;
      }
    }
    return found;
  }

  // A busy worker, at the end of each of its execution batches: takes over every other
  // worker's local batch that stayed unpublished while this worker started
  // execute_batch_size tasks (its owner is still inside the execution batch it was made
  // in: a long task, a blocking wait). This is what bounds the hold when no worker is idle
  // ("Local batches and the order bound"). Reads one line of each other worker; takes
  // nothing from an owner that publishes on time. A batch counts as held while its head
  // stays where it was: the head moves only when a publication has ended, so a batch
  // whose publisher was descheduled in the middle of it still counts as held, and the
  // take-over then waits for that publisher instead of starting more tasks past its posts.
  void TakeOverStaleBatches(Worker* self) {
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      Worker* const other = workers_[i].get();
      if (other == self) continue;
      typename Worker::SeenBatch& seen = self->seen[i];
      if (other->local.LooksEmpty()) {
        seen.held = false;
        continue;
      }
      const std::uint32_t head = other->local.Head();
      if (!seen.held || seen.head != head) {
        seen = {true, head, self->started};  // a batch we had not seen: its clock starts
        continue;
      }
      if (self->started - seen.started < options_.execute_batch_size) continue;
      if (TakeOverLocalBatch(other, /*wait=*/true)) Bump(self->stale_take_overs);
      seen.held = false;
    }
  }

  void Wake(Task* task, std::uint8_t bits) {
    FAIRSCHED_DCHECK(task->owner_.load(std::memory_order_relaxed) == nullptr ||
                         task->owner_.load(std::memory_order_relaxed) == this,
                     "Wakeup/Signal/Cancel of a task posted to another scheduler");
    FAIRSCHED_DCHECK(!task->pooled_ || (current_ == this && current_worker_->running == task),
                     "Wakeup/Signal/Cancel of a PostOneShot task outside its callback");
    // Called by the sched-role holder itself, from inside its IO backend (an IoOpHandler,
    // io/io_op.h, waking the coroutine an IO event was for): the task sits in the wait queue
    // this thread holds, so it goes straight to the ready queue, as the backend's own wakes
    // do. (current_ == this: the sink belongs to this scheduler's role.)
    if (role_sink_ != nullptr && current_ == this) {
      role_sink_->WakeBits(task, bits);
      return;
    }
    // Won a WAITING task: it sits in the wait queue, which only the sched-role may touch, so
    // hand it to the sched-role through the front queue. The sched-role sees it woken,
    // removes it from the wait queue and readies it. Not counted as a post (PostCounters):
    // it is the same post. Nothing touches the task after the push.
    if (task->TryWake(bits)) PushFront(task);
  }

  void WorkerMain(Worker* worker, std::size_t index) {
    current_ = this;
    current_worker_ = worker;
#if defined(__linux__)
    // "<name>-<index>", cut to the 15 characters Linux keeps; only for debuggers and top.
    const std::string thread_name = (options_.name + "-" + std::to_string(index)).substr(0, 15);
    pthread_setname_np(pthread_self(), thread_name.c_str());
#else
    (void)index;
#endif
    bool woke_from_park = false;
    // Whether the last execution batch ended because the ready queue had nothing for this
    // worker (Pop returned nothing) or a timer was due, rather than at execute_batch_size.
    bool batch_ended_early = true;
    while (true) {
      // Acquire: pairs with Stop's release store; Stop sets it only when empty. But a post
      // allowed while stopping may have raced with Stop's last look and be held here, in
      // the local batch or claimed: leave with nothing held. The local batch goes to the
      // front queue (Stop drains it on a fresh worker), the claimed tasks run first.
      if (exit_.load(std::memory_order_acquire)) {
        PublishOwnLocalToFront(worker);
        if (!worker->HasClaimed()) break;
        ExecuteBatch(worker);
        continue;
      }
      // The sched-role only after a batch that ended early, i.e. when this worker ran out of
      // ready tasks (or a timer is due). Posts in the front queue cannot start before the
      // tasks already ready (FIFO), so moving them earlier gains nothing, while moving a
      // batch per few executed tasks lets the ready queue grow without bound under a fast
      // poster, and every task then goes cold between being received and being run.
      // Expired timers go to the ready queue's tail too, so they lose nothing either.
      // (Decided on Pop's answer, not on a peek: a stale peek could keep a worker away
      // from the role forever.)
      // A local batch is published at every batch end: through the role when it is free,
      // else through the front queue.
      const bool has_local = worker->HasLocal();
      if ((batch_ended_early || has_local) && role_.TryLock()) {
        Bump(worker->sched_role_taken);
        const ScheduleResult result = Schedule(worker);
        // seq_cst unlock, then seq_cst look at the front queue: the holder's half of the
        // Dekker pair with PushFront (a poster that saw the role held woke nobody).
        role_.Unlock();
        if (result.exit) continue;  // leave at the loop top, with nothing held
        const bool more_to_schedule = result.backlog || !front_.IsEmpty(std::memory_order_seq_cst);
        // Wake a helper when there is more work than this worker can start, or when a
        // parked worker must time its park to a new nearest deadline (see
        // PublishNearestDeadline). Timers alone wake nobody: parked workers time their park.
        if (result.ready > 1 || more_to_schedule || result.retime_parkers) WakeOne(worker);
      } else if (has_local) {
        PublishOwnLocalToFront(worker);
      }
      const std::size_t executed = ExecuteBatch(worker);
      batch_ended_early = executed < options_.execute_batch_size;
      if (executed > 0) {
        woke_from_park = false;
        if (local_batches_ && worker_count_ > 1) TakeOverStaleBatches(worker);
        continue;
      }
      if (!role_.IsLocked()) continue;  // the role is free: go and take it
      if (woke_from_park) Bump(worker->idle_wakeups);
      woke_from_park = Park(worker);
    }
    // Pass the exit on: one Send wakes one sleeper, which exits and wakes the next.
    ready_signal_.Send();
    io_.Notify();
    current_ = nullptr;
    current_worker_ = nullptr;
  }

  void WakeOne(Worker* worker) {
    // The publisher's half of the Dekker pair with Park (see there): the work this worker
    // published (a ready-queue publish is a release store, not seq_cst) is ordered before
    // the read of parked_ by a full fence. Called once per role take that published more
    // than it can run, and by a chain wake only when parked_ is not 0, so the fence is off
    // the per-task path. Parked workers are rare on a busy scheduler, so the load is usually
    // one read of a shared line.
    FenceSeqCst();
    if (parked_.load(std::memory_order_seq_cst) == 0) return;
    Bump(worker->wakes_sent);
    ready_signal_.Send();
  }

  // True if this worker could do something right now: a ready task seems available, or the
  // role is free and the front queue holds posts.
  bool WorkVisible(Worker* worker) const {
    return ReadySeemsNonEmpty(worker) || (!role_.IsLocked() && !front_.IsEmpty());
  }

  bool ReadySeemsNonEmpty(Worker* worker) const {
    if constexpr (requires { worker->consumer.HasMore(); }) {
      return worker->consumer.HasMore();
    } else {
      return ready_.Count() > 0;
    }
  }

  // Idle: spin briefly, then sleep on the ready signal. Returns true if it slept.
  bool Park(Worker* worker) {
    if (SpinFor(options_.spin_before_park, [&] { return WorkVisible(worker); })) return false;
    // Register first, then re-check everything that could need us. A publisher (role
    // holder, poster, chain waker) first makes its work visible and then reads parked_:
    // either our re-check sees its work (we do not sleep) or its read sees our registration
    // (it sends the signal, which Receive cannot miss because the Signal is a flag). Which
    // ordering makes that so depends on the work: the front queue, the role lock and the
    // nearest deadline are written and re-checked with seq_cst accesses (one total order);
    // the ready queue is published with a release store and re-checked with relaxed loads,
    // so both sides put a seq_cst fence between their write and their read (here and in
    // WakeOne). front_.IsEmpty from here (not the queue's
    // consumer) reads the consumer's head as of the role release our seq_cst IsLocked load
    // synchronised with; a holder that took the role after that load pops what we miss, and
    // its release-time check reads parked_ after our registration.
    parked_.fetch_add(1, std::memory_order_seq_cst);
    FenceSeqCst();  // pairs with WakeOne's, for the ready queue's relaxed re-check
    const std::int64_t next_deadline = nearest_deadline_.load(std::memory_order_seq_cst);
    const bool role_locked = role_.IsLocked(std::memory_order_seq_cst);
    const bool timer_due = next_deadline != kNoDeadlineTicks &&
                           TaskClock::now().time_since_epoch().count() >= next_deadline;
    const bool sleep = !exit_.load(std::memory_order_seq_cst) && !ReadySeemsNonEmpty(worker) &&
                       (role_locked || front_.IsEmpty(std::memory_order_seq_cst)) &&
                       !(timer_due && !role_locked) && !TakeOverLocalBatches(worker);
    if (sleep) {
      Bump(worker->parks);
      // Timed to the nearest deadline, so a timer is served even while every other worker
      // runs long tasks and nobody sleeps in the role. A due one with the role held is the
      // holder's to serve; it wakes us if it publishes a deadline we did not time.
      TaskDeadline until =
          next_deadline == kNoDeadlineTicks || timer_due
              ? kNoDeadline
              : TaskDeadline(TaskClock::duration(next_deadline));
      // While a worker executes, it may have put a post into its local batch just after
      // our look (it decided that nobody was idle just before we became so): look again
      // within kLocalBatchRecheck, so such a task waits at most that long for us.
      if (executing_.load(std::memory_order_relaxed) > 0) {
        until = std::min(until, TaskClock::now() + kLocalBatchRecheck);
      }
      ready_signal_.ReceiveUntil(until);
    }
    // Relaxed: a publisher that still counts us merely sends one spurious signal.
    parked_.fetch_sub(1, std::memory_order_relaxed);
    return sleep;
  }

  // Spins until `found()` or `duration` passed; returns whether found.
  template <typename Found>
  static bool SpinFor(std::chrono::nanoseconds duration, Found found) {
    if (duration <= std::chrono::nanoseconds::zero()) return false;
    const TaskClock::time_point until = TaskClock::now() + duration;
    do {
      for (int i = 0; i < 16; ++i) {
        if (found()) return true;
        CpuRelax();
      }
    } while (TaskClock::now() < until);
    return found();
  }

  // The sched-role's "now", read from the steady clock at most once per pass and only when a
  // decision needs it. A clock read costs about 50 ns on a KVM guest (kvm-clock), more than
  // the rest of a pass that receives one task, and most passes only receive tasks posted to
  // run at once, whose deadline (kTaskDeadlineNow, or a post-time stamp, see
  // Task::StampPostTime) lies before the clock's epoch: due without looking. Relies on the
  // steady clock never reading before its epoch (CLOCK_MONOTONIC counts from boot; checked
  // in the constructor).
  class LazyNow {
   public:
    TaskDeadline Get() {
      if (!read_) {
        now_ = TaskClock::now();
        read_ = true;
      }
      return now_;
    }
    bool IsDue(TaskDeadline deadline) { return deadline < TaskDeadline{} || deadline <= Get(); }

   private:
    TaskDeadline now_{};
    bool read_ = false;
  };

  struct ScheduleResult {
    std::size_t ready = 0;        // tasks made ready by this role take
    bool backlog = false;         // the front queue is not empty (batch bound, or a push in flight)
    bool retime_parkers = false;  // a parked worker may sleep past the new nearest deadline
    bool exit = false;            // Stop asked the workers to exit
  };

  // The IO backend's role-only door into the ready queue (see sched/io_backend.h): lives on
  // the role holder's stack for one Schedule call and counts the tasks it made ready. While
  // it lives, role_sink_ names it, so that Wake on this thread uses it too (see Wake).
  class RoleReadySink final : public IoReadySink {
   public:
    explicit RoleReadySink(BasicTaskScheduler* scheduler) : scheduler_(scheduler) {
      role_sink_ = this;
    }
    ~RoleReadySink() { role_sink_ = nullptr; }
    RoleReadySink(const RoleReadySink&) = delete;
    RoleReadySink& operator=(const RoleReadySink&) = delete;
    void Wake(Task* task, IoWake how) override {
      WakeBits(task, how == IoWake::kSignal ? Task::kWoken | Task::kSignaled : Task::kWoken);
    }
    void WakeBits(Task* task, std::uint8_t bits) {
      made_ready_ += scheduler_->WakeFromRole(task, bits);
    }
    std::size_t TakeMadeReady() { return std::exchange(made_ready_, 0); }

   private:
    BasicTaskScheduler* scheduler_;
    std::size_t made_ready_ = 0;
  };

  // Sched-role: Wake for a waker that holds the role (the IO backend). The same state
  // transition as Wake, but a won waiting task sits in the wait queue that we hold, so it
  // goes straight to the ready queue instead of through the front queue. Returns 1 if it
  // made the task ready (published by the caller's FlushPending).
  std::size_t WakeFromRole(Task* task, std::uint8_t bits) {
    FAIRSCHED_DCHECK(task->owner_.load(std::memory_order_relaxed) == nullptr ||
                         task->owner_.load(std::memory_order_relaxed) == this,
                     "an IO backend woke a task posted to another scheduler");
    // Lost (not waiting, or already woken): the bits are remembered and whoever owns the
    // task's hand-off runs it; we must not touch the task again (a Signal may let it delete
    // itself).
    if (!task->TryWake(bits)) return 0;
    // Won: kWaiting is set only by this role, right before the wait-queue push.
    FAIRSCHED_DCHECK(wait_.Contains(task), "a waiting task is missing from the wait queue");
    wait_.Remove(task);
    MakeReady(task, /*expired=*/false);
    return 1;
  }

  // Runs with the sched-role held.
  ScheduleResult Schedule(Worker* worker) {
    ScheduleResult result;
    RoleReadySink io_sink(this);
    // Poll IO without blocking at every role take, so a loaded scheduler (whose holder
    // never sleeps in WaitUntil) does not starve sockets. Not again after WaitUntil, which
    // delivered what it saw.
    bool poll_io = true;
    while (true) {
      if (exit_.load(std::memory_order_acquire)) {
        result.exit = true;
        return result;
      }
      const bool stopping = stopping_.load(std::memory_order_acquire);
      if (poll_io) io_.Poll(io_sink);
      poll_io = true;
      if (stopping) io_.CancelAll(io_sink);  // Stop: end every IO registration
      LazyNow now;
      std::size_t moved = io_sink.TakeMadeReady();
      if (stopping) moved += WakeWaitingForStop(now);
      // Front queue -> wait/ready, one task per Pop (O(1) each, FIFO): at most batch_size
      // per role take. Pop is done with a task before returning it, so a waker may push it
      // into the front queue again as soon as ReceiveFromFront makes it WAITING.
      std::size_t popped = 0;
      for (; popped < options_.batch_size; ++popped) {
        Task* task = front_.Pop();
        if (task == nullptr) break;
        moved += ReceiveFromFront(task, now, stopping);
      }
      // This worker's local batch: straight into the ready queue when the front queue is
      // empty (exact here: we are its consumer), else behind the posts still waiting there
      // (they may be older than the batch).
      if (worker->HasLocal()) {
        if (front_.IsEmpty()) {
          moved += MoveLocalToReady(worker);
        } else {
          PublishOwnLocalToFront(worker);
        }
      }
      // Expired wait queue -> ready.
      for (std::size_t n = 0; n < options_.batch_size; ++n) {
        // Only a finite deadline can have passed: no clock read for an empty wait queue or
        // one holding only PostWait tasks.
        Task* task =
            wait_.NextDeadline() == kNoDeadline ? nullptr : wait_.PopExpired(now.Get());
        if (task == nullptr) break;
        // Lost the race to a waker: the waker pushes the task into the front queue and the
        // front path readies it. Making it ready here too would run it twice.
        if (!task->TryWaitingToReady()) continue;
        MakeReady(task, /*expired=*/true);
        ++moved;
      }
      if (PublishNearestDeadline(now)) result.retime_parkers = true;
      // IsEmpty is exact here (we are the front queue's consumer): false while tasks wait
      // or a push is in flight (exchanged, not yet linked: Pop cannot take it yet, and its
      // poster, whose Push returned false, sends no notify).
      result.backlog = !front_.IsEmpty();
      if (moved > 0) {
        ready_.FlushPending();
        result.ready = moved;
        return result;
      }
      // Nothing moved. If tasks are still ready, go and execute them instead. Only this
      // thread produces into the ready queue, so an empty answer cannot turn wrong behind
      // our back (Count is exact; it takes the queue's mutex, but only on this idle path).
      if (ready_.Count() > 0) return result;
      if (result.backlog) {
        // Tasks were taken (all went to the wait queue) and more are queued: let the worker
        // loop come back for them. Otherwise Pop found nothing while the queue is not
        // empty: a push is in flight. Never sleep then (nobody would notify us); its
        // poster links the task within a few instructions unless it was preempted, so
        // yield the core to it and look again.
        if (popped > 0) return result;
        YieldThread();
        continue;
      }
      // Nothing to do and nothing ready: sleep, holding the role, until the nearest
      // deadline or a Notify (a post into an empty front queue, Stop). Spin first: work
      // that arrives within the spin window saves the kernel round trip. The spin watches
      // the backend too: IO that completes during it must not wait for it to end (a spin
      // on the front queue alone made a 1-connection echo 73-95 us instead of 22 us).
      if (options_.spin_before_park > std::chrono::nanoseconds::zero()) {
        Bump(worker->role_spins);
        if (SpinFor(options_.spin_before_park,
                    [this] { return !front_.IsEmpty() || io_.EventsReady(); })) {
          continue;
        }
      }
      // Like a parking worker (Park): take over the local batches of workers that run on,
      // and while any does, look again within kLocalBatchRecheck.
      if (TakeOverLocalBatches(worker)) continue;
      TaskDeadline until = wait_.NextDeadline();
      if (executing_.load(std::memory_order_relaxed) > 0) {
        until = std::min(until, TaskClock::now() + kLocalBatchRecheck);
      }
      Bump(worker->role_sleeps);
      io_.WaitUntil(until, io_sink);
      poll_io = false;
    }
  }

  // Sched-role: a task taken from the front queue. Returns 1 if it went to the ready queue.
  std::size_t ReceiveFromFront(Task* task, LazyNow& now, bool stopping) {
    if (task->IsWoken()) {
      // Woken: either pushed here by a waker that won it while it waited (it is still in
      // the wait queue), or posted after a wakeup that landed while it ran (remembered).
      if (wait_.Contains(task)) wait_.Remove(task);
      MakeReady(task, now.IsDue(task->deadline_));
      return 1;
    }
    FAIRSCHED_DCHECK(!task->IsWaiting(),
                     "a waiting task was posted again (posting a task that is already queued)");
    const TaskDeadline deadline = task->deadline_;
    if (now.IsDue(deadline)) {
      // Due now. The state stays 0: a wakeup racing with this only sets kWoken and pushes
      // nothing, so the task is still in exactly one queue.
      MakeReady(task, true);
      return 1;
    }
    if (stopping && !task->WaitsThroughStop()) {
      MakeReady(task, false);  // Stop wakes every waiting task at once
      return 1;
    }
    if (!task->TryPendingToWaiting()) {
      // A waker won between our load and the CAS; it saw no kWaiting, so it pushed nothing.
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
    // The one-shot mark and the post-time stamp mark travel on from the post.
    task->flags_ = static_cast<std::uint8_t>((task->flags_ & Task::kFlagsKeptUntilRun) |
                                             (expired ? Task::kFlagExpired : 0));
    ready_.PushPending(task);
  }

  // Sched-role, while stopping: the first role take of each Stop wakes every task in the
  // wait queue at once, except the posts made with PostDeadlineThroughStop, which go back
  // (in the order they came out: the heap's, so equal deadlines keep post order). Tasks
  // posted to wait while the Stop lasts are woken on arrival (ReceiveFromFront), so one
  // sweep per Stop is enough, and a task that waits through the Stop is never woken by it.
  // Takes the queue apart with PopAny: PopExpired(kNoDeadline) would move a timer wheel's
  // clock to the end of time. Returns how many tasks it made ready.
  std::size_t WakeWaitingForStop(LazyNow& now) {
    // Relaxed: Stop wrote it before its release store of stopping_, which our acquire load
    // read.
    const std::uint64_t generation = stop_generation_.load(std::memory_order_relaxed);
    if (generation == swept_generation_) return 0;
    swept_generation_ = generation;
    std::vector<Task*> kept;  // allocates only when such waits exist, once per Stop
    std::size_t moved = 0;
    while (Task* task = wait_.PopAny()) {
      if (task->WaitsThroughStop()) {
        kept.push_back(task);
        continue;
      }
      // Lost to a waker: it pushes the task into the front queue (see the expiry loop).
      if (!task->TryWaitingToReady()) continue;
      MakeReady(task, now.IsDue(task->deadline_));
      ++moved;
    }
    for (Task* task : kept) wait_.Push(task, task->deadline_);
    return moved;
  }

  // Sched-role: lets executing workers see when the next timer is due, so they come back
  // to the role in time (ExecuteBatch), and parking workers time their park to it (Park).
  // Returns true when a worker may be parked with a later timeout than the new deadline
  // (it read an earlier value, or the earlier deadline has passed and it parked without a
  // timeout): the caller then wakes one parked worker to re-time its park. seq_cst store:
  // with the caller's seq_cst read of parked_ (WakeOne) after it, the publisher's half of a
  // Dekker pair with Park (a parker registers, then reads this); written only when it
  // changes, at most once per role take.
  bool PublishNearestDeadline(LazyNow& now) {
    const std::int64_t next = wait_.NextDeadline().time_since_epoch().count();
    const std::int64_t old = nearest_deadline_.load(std::memory_order_relaxed);  // ours
    if (old == next) return false;
    nearest_deadline_.store(next, std::memory_order_seq_cst);
    if (next == kNoDeadlineTicks) return false;
    return next < old || old <= now.Get().time_since_epoch().count();
  }

  // True if the nearest timer is due: a worker that has just finished a task goes to the
  // sched-role now (if it is free), so long tasks on every worker do not delay timers by a
  // whole batch. Relaxed load: a heuristic that bounds lateness; correctness never depends
  // on it. No clock read while no finite deadline waits.
  bool TimerDue() const {
    const std::int64_t next = nearest_deadline_.load(std::memory_order_relaxed);
    if (next == kNoDeadlineTicks) return false;
    return TaskClock::now().time_since_epoch().count() >= next;
  }
  static constexpr std::int64_t kNoDeadlineTicks = kNoDeadline.time_since_epoch().count();

  std::size_t ExecuteBatch(Worker* worker) {
    std::size_t executed = 0;
    while (executed < options_.execute_batch_size) {
      Task* task = NextReadyTask(worker);
      if (task == nullptr) break;
      // Relaxed RMW, twice per batch: counts workers inside a batch for SomeWorkerMayBeIdle,
      // a hint that orders nothing.
      if (executed == 0) executing_.fetch_add(1, std::memory_order_relaxed);
      // Chain wake (see the header comment): if more tasks seem ready than the one we just
      // took, wake one more worker before running ours, so a long task of ours does not
      // leave them waiting. A wrong guess costs one spurious or one missed wakeup, never a
      // lost task: this worker keeps draining until it finds the queue empty.
      if (parked_.load(std::memory_order_relaxed) > 0 && ReadySeemsNonEmpty(worker)) {
        WakeOne(worker);
      }
      if (task->IsStamped()) RecordPostToStart(worker, task);
      Execute(worker, task);
      ++executed;
      // End the batch early to publish the local batch when another worker may be idle (it
      // could run those tasks now) or the ready queue looks empty (the others are about to
      // run out of work), or to serve a due timer when the role is free. Alone, with nothing
      // else to run, the worker runs its local batch in place instead (ClaimLocalInPlace).
      if (worker->HasLocal()) {
        const bool out_of_ready = !worker->HasClaimed() && !ReadySeemsNonEmpty(worker);
        if (SomeWorkerMayBeIdle() ||
            (out_of_ready && !(worker_count_ == 1 && ClaimLocalInPlace(worker)))) {
          break;
        }
      }
      if (TimerDue() && !role_.IsLocked()) break;
    }
    if (executed > 0) {
      executing_.fetch_sub(1, std::memory_order_relaxed);
      worker->started += executed;
      Bump(worker->tasks_executed, executed);
      CountFinished(worker, executed);
    }
    return executed;
  }

  // One worker, its claimed tasks and the ready queue empty: its local batch is what the
  // sched-role would make ready next when nothing older waits (the front queue is empty,
  // no timer is due), so it claims the batch and runs it in place, without the trip through
  // the role (a lone coroutine's Yield: post, run). Returns whether it claimed anything.
  // The execution batch still ends at execute_batch_size, where the role polls IO and
  // timers as after any batch. The front queue is read from outside its consumer: a post
  // racing with the read is concurrent with the batch's posts either way.
  // At most kClaimCapacity tasks (a larger batch goes through the role, as before).
  bool ClaimLocalInPlace(Worker* worker) {
    // No taker can shrink the batch meanwhile: one worker.
    if (worker->local.SizeForOwner() > kClaimCapacity || !front_.IsEmpty() || TimerDue()) {
      return false;
    }
    Task* batch[kLocalBatchCapacity];
    const std::uint32_t count = worker->local.TakeAlone(batch);
    // Empty claimed ring (the caller checked): its indexes start again at 0.
    for (std::uint32_t i = 0; i < count; ++i) worker->claimed[i] = batch[i];
    worker->claimed_head = 0;
    worker->claimed_end = count;
    return count > 0;
  }

  // The next ready task for `worker`. Alone (one worker), it takes up to kClaimCapacity
  // ready tasks at once ("claimed", one CAS on the ready queue for them all) and runs them
  // in order: nobody else could run them sooner. With several workers it takes one at a
  // time: a task this worker held while running a long one could be overtaken by later
  // posts that another worker starts (tests/sched/fairness_test.cc).
  //
  // The tasks behind the one taken are known before they run (claimed, or seen in the
  // ready queue), so their memory is prefetched kPrefetchDistance tasks ahead (two: far
  // enough to hide a miss to main memory behind two task runs, near enough not to evict
  // what runs now): the task's line and the two after it. Tasks are often the head of a
  // larger object whose next lines the callback uses at once (a spawned coroutine's state
  // and frame follow its task, coro/runtime.h); with many tasks in flight those lines are
  // not in the cache, and the miss would otherwise stall the start of every task.
  Task* NextReadyTask(Worker* worker) {
    if (worker->HasClaimed()) {
      const std::uint32_t head = worker->claimed_head++;
      if (head + 1 + kPrefetchDistance <= worker->claimed_end) {
        Prefetch(worker->claimed[(head + kPrefetchDistance) % kClaimCapacity]);
      }
      return worker->claimed[head % kClaimCapacity];
    }
    if constexpr (requires { worker->consumer.PopUpTo(static_cast<Task**>(nullptr), 1u); }) {
      if (worker_count_ == 1) {
        Task* batch[kClaimCapacity];
        const std::uint32_t count = worker->consumer.PopUpTo(batch, kClaimCapacity);
        if (count == 0) return nullptr;
        for (std::uint32_t i = 1; i <= kPrefetchDistance && i < count; ++i) Prefetch(batch[i]);
        const std::uint32_t end = worker->claimed_end;
        for (std::uint32_t i = 1; i < count; ++i) {
          worker->claimed[(end + i - 1) % kClaimCapacity] = batch[i];
        }
        worker->claimed_end = end + count - 1;
        return batch[0];
      }
    }
    Task* const task = worker->consumer.Pop();
    if constexpr (requires { worker->consumer.Peek(kPrefetchDistance - 1); }) {
      if (task != nullptr) {
        if (const Task* ahead = worker->consumer.Peek(kPrefetchDistance - 1)) Prefetch(ahead);
      }
    }
    return task;
  }

  static void Prefetch(const Task* task) {
    const char* const line = reinterpret_cast<const char*>(task);
    __builtin_prefetch(line, 1);
    __builtin_prefetch(line + kCacheLineSize, 1);
    __builtin_prefetch(line + 2 * kCacheLineSize, 1);
  }

  // No try/catch and no noexcept on the way from the worker's entry to the callback, on
  // purpose: an exception that escapes a callback then finds no handler during the
  // unwinder's search phase, and the C++ runtime calls std::terminate from the throw
  // itself, before any frame is unwound: the throw site stays on the stack for the core
  // dump or debugger. (A catch-and-abort, or a noexcept frame, makes gcc's runtime unwind
  // to that frame first.) internal::TaskTerminateHandler prints the message.
  void Execute(Worker* worker, Task* task) {
    internal::t_running_task = true;
    task->BeginExecution();
    // Read before the call: any other task may be deleted or re-posted by its callback.
    const bool one_shot = (task->flags_ & Task::kFlagOneShot) != 0;
    worker->running = task;  // for Post: "re-posted from its own callback"
    task->Run();  // may delete or re-post the task: do not touch it afterwards...
    worker->running = nullptr;
    internal::t_running_task = false;
    if (one_shot) RecycleOneShot(worker, task);  // ...unless the scheduler owns it
  }

  // A one-shot task whose callback returned: blank it and give it back to the pool. Only
  // this thread can reach it now (the callback, the only other holder of the pointer, has
  // returned), so plain and relaxed accesses suffice.
  void RecycleOneShot(Worker* worker, Task* task) {
    // Nobody can have posted it again: Post refuses pooled tasks.
    task->Reset();  // destroys the callable and its captures
    task->flags_ = 0;
    task->deadline_ = kTaskDeadlineNow;
    // A Wakeup of the one-shot from its own callback left a bit no run will consume.
    task->state_.store(0, std::memory_order_relaxed);
    pool_.Give(worker->task_cache, task);
  }

  // Executor, just before a stamped task starts: counts its post-to-start latency. Relaxed
  // single-writer counter (see WorkerStats); the stamp was published with the task.
  static void RecordPostToStart(Worker* worker, const Task* task) {
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(
        TaskClock::now() - task->PostTime());
    const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(waited.count(), 0));
    Bump(worker->latency[fairsched::LatencyHistogram::BucketOf(ns)]);
  }

  TaskSchedulerOptions options_;
  const bool sample_latency_ = options_.latency_sample_period != 0;
  const std::uint32_t latency_sample_mask_;  // period - 1 (period is a power of two)
  const bool local_batches_;                 // post_order == kBatched
  TaskPool pool_;  // one-shot tasks
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
  WaitQueueT wait_;
  std::uint64_t swept_generation_ = 0;  // the last Stop whose waiting tasks were woken
  // Ready queue: producer = role holder, consumers = workers.
  ReadyQueueT ready_;
  fairsched::Signal ready_signal_;
  // Workers parked (or about to park) on ready_signal_.
  alignas(kCacheLineSize) Atomic<int> parked_{0};
  // Workers inside an execution batch, and how many workers run (set before they start).
  alignas(kCacheLineSize) Atomic<int> executing_{0};
  int worker_count_ = 0;
  // The wait queue's nearest deadline (steady-clock ticks), for TimerDue.
  Atomic<std::int64_t> nearest_deadline_{kNoDeadline.time_since_epoch().count()};
  Mutex empty_mu_;
  ConditionVariable empty_cv_;
  // Owner-thread state (Start/Stop).
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Thread> threads_;  // std::thread (sync/primitives.h)
  std::vector<WorkerStats> retired_stats_;         // counts of joined workers, by index
  fairsched::LatencyHistogram retired_latency_;  // ... and their latency counts

  static inline thread_local BasicTaskScheduler* current_ = nullptr;
  static inline thread_local Worker* current_worker_ = nullptr;  // on current_'s workers
  // The sink of the Schedule call this thread is in (it holds current_'s sched-role), else
  // null: see Wake.
  static inline thread_local RoleReadySink* role_sink_ = nullptr;
  static inline thread_local std::uint32_t t_posts_ = 0;  // this thread's posts (sampling)
};

using TaskScheduler = BasicTaskScheduler<>;
using TrivialPolicyTaskScheduler = BasicTaskScheduler<LockedReadyQueue<Task>>;

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_TASK_SCHEDULER_H_
