// TaskSchedulerOptions: the settings of a BasicTaskScheduler (sched/task_scheduler.h), and
// PostOrder, its order policy. Out-of-range values are clamped when the scheduler is
// constructed (internal::SanitizedOptions), as each field says.
#ifndef FAIRSCHED_SCHED_TASK_SCHEDULER_OPTIONS_H_
#define FAIRSCHED_SCHED_TASK_SCHEDULER_OPTIONS_H_

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fairsched {

// PostOrder::kHome: how many stamps a worker reserves from the global clock at a time (one
// shared read-modify-write per this many posts). Part of the order bound (see kHome).
inline constexpr std::uint64_t kHomeStampBlock = 64;

// PostOrder::kHome with TaskSchedulerOptions::home_skew_ceiling: a worker whose own queue
// holds n tasks looks with the skew n x workers / kHomeBacklogDivisor (in stamps: n of its
// tasks span about n x workers stamps while every worker posts), kept within
// [home_skew, home_skew_ceiling]. So a task waiting in another queue is overtaken by at
// most n x workers / 4 of the looking worker's later posts (half of its backlog with two
// workers), while every task posted into that backlog waits through all of it. The two
// workers' queue heads drift apart by the fraction their paces differ by, so the looks move
// no task until the paces differ by a quarter: with an eighth, a 10,000-coroutine yield
// loop on two workers moved about 3 times as many tasks and ran 0.75x as fast
// (bench/results/json/home_backlog_divisor/notes.md).
inline constexpr std::uint64_t kHomeBacklogDivisor = 4;

// The order policy (TaskSchedulerOptions::post_order).
enum class PostOrder : std::uint8_t {
  // Run-now posts made by a task while every worker executes wait in their worker's local
  // batch and join the shared queue together, a bounded number of task starts later (see
  // "Order" in sched/task_scheduler.h): a re-post, a Yield or a one-shot costs no locked
  // instruction.
  kBatched,
  // Every post joins the shared queue when it is made: tasks with equal deadlines start in
  // post order across all posters, with no bound to read. Each post made by a task costs
  // the front queue's exchange.
  kStrict,
  // Home queues (experimental, not the default yet): every worker owns a FIFO of ready
  // tasks (queues/home_ring.h). A run-now post made by a task goes to its own worker's
  // queue, and the tasks the sched-role makes ready go to the role holder's, each with a
  // stamp from one global clock; a worker runs its own queue's head, so a yielding
  // coroutine stays on the core whose caches hold it. Bound: a task is overtaken by at
  // most execute_batch_size + S + (kHomeStampBlock - 1) x (workers - 1) later-posted
  // starts on each other worker, whatever that worker runs, where S is home_skew, or with
  // home_skew_ceiling set at most that ceiling (home_skew while the looking worker's own
  // queue is short). The rule: at the start of each execution batch, and again after each
  // task it took this way, a worker takes from another worker's queue any head task more
  // than its skew in stamps older than its own head; an idle worker takes one task of a
  // queue that holds two or more, a lone task the sched-role made ready, or a lone task
  // whose owner has not moved on since its previous look. See "Order" in
  // sched/task_scheduler.h.
  kHome,
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
  // After that spin, how many times an idle worker gives its core away (sched_yield) and
  // looks for work again before it parks. Where other threads wait for a core (a load
  // generator or other processes on a small machine), the work that would wake it often
  // arrives while they run, and it then finds that work without a futex wait and wake; on
  // a machine with idle cores each yield returns at once and costs one short syscall. Only
  // workers outside the sched-role yield (the idle role holder sleeps in its IO backend).
  // 0 parks right after the spin. Clamped to [0, 64]. Measured on the echo server:
  // bench/results/json/echo_per_request_cost/notes.md.
  int yields_before_park = 3;
  // Post-to-start latency sampling (LatencyHistogram()): every posting thread stamps one in
  // this many of its posts that run at once (no deadline), rounded up to a power of two;
  // 1 stamps every such post, 0 turns the histogram off. A stamp costs the poster one
  // steady-clock read and the executor another; unstamped posts pay a thread-local
  // counter increment (see bench/results/sched.md for the measured cost).
  std::uint32_t latency_sample_period = 64;
  // How strictly tasks start in post order (see "Order" in sched/task_scheduler.h):
  // kBatched (the default) keeps run-now posts made by tasks in local batches, with the
  // stated bound; kStrict sends every post through the shared front queue; kHome
  // (experimental) gives every worker its own queue, with a bound in stamps.
  PostOrder post_order = PostOrder::kBatched;
  // PostOrder::kHome only: how many stamps older than its own head another worker's head
  // task must be before a busy worker takes it (see PostOrder::kHome). Smaller: a tighter
  // bound, and more tasks moved between cores when the workers' paces jitter. Clamped to
  // [1, 1 << 30].
  std::uint64_t home_skew = 256;
  // PostOrder::kHome only: the largest skew a worker with a long queue of its own looks
  // with. 0 (the default, or any value up to home_skew): the skew is home_skew, whatever
  // the queues hold. Above it: a worker whose queue holds n tasks uses n x workers /
  // kHomeBacklogDivisor, at least home_skew and at most this, so the bound is home_skew's
  // while the queues are short and this one's at worst. With thousands of tasks per queue
  // a constant skew makes the workers move tasks between their cores whenever their paces
  // differ by a few percent (bench/results/json/home_queue_skew_sweep/notes.md). Clamped
  // to [home_skew, 1 << 30].
  std::uint64_t home_skew_ceiling = 0;
};

namespace internal {

// The options with every field clamped to its range (and the sample period rounded up to a
// power of two).
inline TaskSchedulerOptions SanitizedOptions(TaskSchedulerOptions options) {
  constexpr std::size_t kMaxBlock = std::size_t{1} << 20;
  options.ready_block_size = std::clamp<std::size_t>(options.ready_block_size, 1, kMaxBlock);
  options.batch_size = std::max<std::size_t>(options.batch_size, 1);
  options.execute_batch_size = std::max<std::size_t>(options.execute_batch_size, 1);
  options.spin_before_park = std::clamp<std::chrono::nanoseconds>(
      options.spin_before_park, std::chrono::nanoseconds::zero(), std::chrono::milliseconds(1));
  options.yields_before_park = std::clamp(options.yields_before_park, 0, 64);
  options.home_skew = std::clamp<std::uint64_t>(options.home_skew, 1, std::uint64_t{1} << 30);
  options.home_skew_ceiling = std::clamp<std::uint64_t>(options.home_skew_ceiling,
                                                        options.home_skew, std::uint64_t{1} << 30);
  if (options.latency_sample_period != 0) {
    options.latency_sample_period =
        std::bit_ceil(std::min<std::uint32_t>(options.latency_sample_period, 1u << 30));
  }
  return options;
}

}  // namespace internal
}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_TASK_SCHEDULER_OPTIONS_H_
