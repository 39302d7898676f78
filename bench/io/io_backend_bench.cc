// IO backend benchmarks (preliminary): what the epoll and io_uring backends cost the
// scheduler's hot path compared with NoIoBackend, and how fast an IO event reaches a task.
// Same scheduler, same queues; only the backend differs, in one run.
//
//   post_latency/gap_us:G/<backend>          post-to-start latency p50/p99 (ns) of an empty
//     task posted from outside every G us (busy-paced). G = 0: back to back (the holder is
//     usually awake); G = 200: the holder has gone to sleep in the backend, so each post
//     pays the backend's Notify (futex for NoIo, eventfd write + epoll/io_uring wake-up).
//   throughput/registrations:R/<backend>     tasks/s of 20,000 executions (2,000 jobs
//     re-posting themselves 10 times) on 2 workers. R = 0: no IO registered (the per-role-
//     take Poll is near free); R = 1: one idle Watch registered, so every role take polls
//     the kernel for real (epoll: an epoll_wait(0) syscall; io_uring: a completion-queue
//     read from shared memory). EpollEveryRoleTake: epoll without its busy-poll rate limit.
//   io_wake_latency/gap_us:G/<backend>       eventfd write -> watching task starts (p50/p99
//     ns), G us after the previous wake. G = 200: the holder is asleep in the backend.
//     G = 5: the holder has just gone idle (inside the default 20 us spin_before_park,
//     which it skips while IO is in flight: a spin would not see the eventfd).
#include <benchmark/benchmark.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench/sched/completion.h"
#include "io/epoll_backend.h"
#include "io/io_op.h"
#include "io/io_uring_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/io_backend.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

template <typename Backend>
using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;

// The epoll backend without its busy-poll rate limit: an epoll_wait(0) at every role take
// (what the rate limit saves is measured against this).
class EpollEveryRoleTake : public EpollBackend {
 public:
  EpollEveryRoleTake() : EpollBackend(std::chrono::nanoseconds::zero()) {}
};

constexpr int kWorkers = 2;
constexpr std::uint32_t kJobs = 2'000;
constexpr int kRepostsPerJob = 10;

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(TaskClock::now().time_since_epoch())
      .count();
}

void SpinUntilNs(std::int64_t until) {
  while (NowNs() < until) CpuRelax();
}

void ReportPercentiles(benchmark::State& state, std::vector<std::int64_t>& samples) {
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  state.counters["p50_ns"] = static_cast<double>(samples[samples.size() / 2]);
  state.counters["p99_ns"] = static_cast<double>(samples[samples.size() * 99 / 100]);
}

// A task that stays registered on an fd nobody writes, so the backend always has an armed
// registration (and Poll must really look). Cancelled and released at the end.
template <typename Backend>
class IdleWatch {
 public:
  IdleWatch(Scheduler<Backend>& sched, int fd) : sched_(sched), task_(this, &IdleWatch::Run) {
    op_.PrepareWatch(fd, kIoReadable, &task_);
    sched_.PostWait(&task_);
    sched_.io().Submit(&op_);
  }
  ~IdleWatch() {
    sched_.Cancel(&task_);
    // Relaxed spin on our own flag; the final Signal's hand-off published it.
    while (!released_.load(std::memory_order_acquire)) std::this_thread::yield();
  }

 private:
  void Run(Task* self) {
    if (self->ReceiveSignal()) {
      released_.store(true, std::memory_order_release);
      return;
    }
    if (self->IsCancelled()) sched_.io().Cancel(&op_);
    sched_.PostWait(self);
  }
  Scheduler<Backend>& sched_;
  Task task_;
  IoOp op_;
  Atomic<bool> released_{false};
};

template <typename Backend>
void BM_PostLatency(benchmark::State& state) {
  const std::int64_t gap_ns = state.range(0) * 1000;
  Scheduler<Backend> sched;
  sched.Start(kWorkers);
  Atomic<std::int64_t> started{0};
  Task probe([&] { started.store(NowNs(), std::memory_order_release); });
  std::vector<std::int64_t> samples;
  for (auto _ : state) {
    started.store(0, std::memory_order_relaxed);
    const std::int64_t posted = NowNs();
    sched.Post(&probe);
    while (started.load(std::memory_order_acquire) == 0) CpuRelax();
    samples.push_back(started.load(std::memory_order_relaxed) - posted);
    state.PauseTiming();
    SpinUntilNs(NowNs() + gap_ns);
    state.ResumeTiming();
  }
  sched.Stop();
  ReportPercentiles(state, samples);
}

template <typename Backend>
struct RepostJob {
  Scheduler<Backend>* sched = nullptr;
  Completion* done = nullptr;
  std::uint32_t index = 0;
  int left = 0;
  Task task{this, &RepostJob::Run};
  void Run(Task* self) {
    if (--left > 0) {
      sched->Post(self);
      return;
    }
    done->Arrive(index);
  }
};

template <typename Backend>
void BM_Throughput(benchmark::State& state) {
  const bool with_registration = state.range(0) != 0;
  Scheduler<Backend> sched;
  sched.Start(kWorkers);
  const int idle_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  std::unique_ptr<IdleWatch<Backend>> watch;
  if constexpr (!std::is_same_v<Backend, NoIoBackend>) {
    if (with_registration) watch = std::make_unique<IdleWatch<Backend>>(sched, idle_fd);
  }
  Completion done;
  std::vector<std::unique_ptr<RepostJob<Backend>>> jobs;
  for (std::uint32_t i = 0; i < kJobs; ++i) {
    jobs.push_back(std::make_unique<RepostJob<Backend>>());
    jobs.back()->sched = &sched;
    jobs.back()->done = &done;
    jobs.back()->index = i;
  }
  std::uint64_t role_takes = 0;
  for (auto _ : state) {
    done.Reset(kJobs);
    for (auto& job : jobs) {
      job->left = kRepostsPerJob;
      sched.Post(&job->task);
    }
    done.Wait();
  }
  watch.reset();
  sched.Stop();
  for (const WorkerStats& s : sched.Stats()) role_takes += s.sched_role_taken;
  close(idle_fd);
  const double executions = static_cast<double>(state.iterations()) * kJobs * kRepostsPerJob;
  state.SetItemsProcessed(static_cast<std::int64_t>(executions));
  state.counters["role_takes_per_task"] = static_cast<double>(role_takes) / executions;
}

// eventfd write -> the watching task starts.
template <typename Backend>
class LatencyWatch {
 public:
  LatencyWatch(Scheduler<Backend>& sched, int fd) : sched_(sched), task_(this, &LatencyWatch::Run) {
    op_.PrepareWatch(fd, kIoReadable, &task_);
    sched_.PostWait(&task_);
    sched_.io().Submit(&op_);
  }
  ~LatencyWatch() {
    sched_.Cancel(&task_);
    while (!released_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  Atomic<std::int64_t> started{0};

 private:
  void Run(Task* self) {
    if (self->ReceiveSignal()) {
      released_.store(true, std::memory_order_release);
      return;
    }
    if (self->IsCancelled()) {
      sched_.io().Cancel(&op_);
    } else if (op_.TakeReadiness() != 0) {
      std::uint64_t value;
      while (read(op_.fd(), &value, sizeof(value)) > 0) {
      }
      started.store(NowNs(), std::memory_order_release);
    }
    sched_.PostWait(self);
  }
  Scheduler<Backend>& sched_;
  Task task_;
  IoOp op_;
  Atomic<bool> released_{false};
};

template <typename Backend>
void BM_IoWakeLatency(benchmark::State& state) {
  const std::int64_t gap_ns = state.range(0) * 1000;
  Scheduler<Backend> sched;
  sched.Start(kWorkers);
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  std::vector<std::int64_t> samples;
  {
    LatencyWatch<Backend> watch(sched, fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // armed
    for (auto _ : state) {
      watch.started.store(0, std::memory_order_relaxed);
      const std::uint64_t one = 1;
      const std::int64_t written = NowNs();
      if (write(fd, &one, sizeof(one)) != sizeof(one)) state.SkipWithError("eventfd write");
      while (watch.started.load(std::memory_order_acquire) == 0) CpuRelax();
      samples.push_back(watch.started.load(std::memory_order_relaxed) - written);
      state.PauseTiming();
      SpinUntilNs(NowNs() + gap_ns);
      state.ResumeTiming();
    }
  }
  sched.Stop();
  close(fd);
  ReportPercentiles(state, samples);
}

BENCHMARK_TEMPLATE(BM_PostLatency, NoIoBackend)
    ->Name("post_latency/NoIo")
    ->Arg(0)
    ->Arg(200)
    ->ArgName("gap_us")
    ->Iterations(5000)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_PostLatency, EpollBackend)
    ->Name("post_latency/Epoll")
    ->Arg(0)
    ->Arg(200)
    ->ArgName("gap_us")
    ->Iterations(5000)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_PostLatency, IoUringBackend)
    ->Name("post_latency/IoUring")
    ->Arg(0)
    ->Arg(200)
    ->ArgName("gap_us")
    ->Iterations(5000)
    ->UseRealTime();

BENCHMARK_TEMPLATE(BM_Throughput, NoIoBackend)
    ->Name("throughput/NoIo")
    ->Arg(0)
    ->ArgName("registrations")
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_Throughput, EpollBackend)
    ->Name("throughput/Epoll")
    ->Arg(0)
    ->Arg(1)
    ->ArgName("registrations")
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_Throughput, EpollEveryRoleTake)
    ->Name("throughput/EpollEveryRoleTake")
    ->Arg(1)
    ->ArgName("registrations")
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_Throughput, IoUringBackend)
    ->Name("throughput/IoUring")
    ->Arg(0)
    ->Arg(1)
    ->ArgName("registrations")
    ->UseRealTime();

BENCHMARK_TEMPLATE(BM_IoWakeLatency, EpollBackend)
    ->Name("io_wake_latency/Epoll")
    ->Arg(5)
    ->Arg(200)
    ->ArgName("gap_us")
    ->Iterations(3000)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_IoWakeLatency, IoUringBackend)
    ->Name("io_wake_latency/IoUring")
    ->Arg(5)
    ->Arg(200)
    ->ArgName("gap_us")
    ->Iterations(3000)
    ->UseRealTime();

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
