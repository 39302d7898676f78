// Scheduler benchmarks: fairsched against its trivial-policy build, the talk's TrivialSched,
// oneTBB's task_arena and asio's thread_pool, in one run. One generic driver per measurement,
// templated on a small adapter per contestant (peer_adapters.h, fairsched_adapter.h).
//
//   throughput/<mode>/body_ns:B/workers:W/<contestant>   tasks/s (items_per_second)
//     mode oneshot: the benchmark thread posts kExecutionsPerRound one-shot callables.
//     mode repost:  kExecutionsPerRound / 10 jobs are posted from outside; each runs 10
//                   times, re-posting itself from inside its own execution.
//     B: calibrated busy-loop body, 0 (empty), 100 or 1000 ns. W: 1, 2, 4 workers.
//     fairsched rows also carry lock_contended_per_task and sched_role_per_task (Stats()).
//   latency/gap_ns:G/workers:W/<contestant>      post-to-start latency p50/p99 (ns) of empty
//     tasks posted from outside one every G ns (busy-paced).
//   timer_lateness/workers:W/<contestant>        how late deadline tasks start (p50/p99 ns)
//     while 2*W re-posting 1 us jobs keep every worker busy. Also run for fairsched with
//     the timing wheel (queues/timer_wheel.h) as its wait queue.
//   physical_limit/body_ns:B                     one thread calling the same prepared job
//     callbacks in a loop: the cost floor with no scheduling at all.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/sched/busy_work.h"
#include "bench/sched/completion.h"
#include "bench/sched/fairsched_adapter.h"
#include "bench/sched/peer_adapters.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

constexpr std::uint32_t kExecutionsPerRound = 20'000;
constexpr int kRepostExecutions = 10;

template <typename A>
concept HasTotals = requires(A& a) {
  a.Totals();
};

template <typename A>
struct Round {
  A* adapter = nullptr;
  std::uint64_t body_iterations = 0;
  Completion done;
  Atomic<bool> stop{false};
};

// A job that runs its body `remaining` times, re-posting itself in between, then arrives.
template <typename A>
struct Job {
  typename A::Hook hook;
  Round<A>* round = nullptr;
  std::uint32_t index = 0;
  int remaining = 0;  // only touched by the execution in progress; posts order executions

  void Execute() {
    BusyWork(round->body_iterations);
    // Relaxed stop: a load job only has to notice eventually; the Completion carries the
    // synchronisation with the waiter.
    if (--remaining > 0 && !round->stop.load(std::memory_order_relaxed)) {
      round->adapter->PostJob(this);
      return;
    }
    round->done.Arrive(index);
  }
};

template <typename A>
std::vector<std::unique_ptr<Job<A>>> MakeJobs(A& adapter, Round<A>& round, std::uint32_t n) {
  std::vector<std::unique_ptr<Job<A>>> jobs;
  jobs.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    jobs.push_back(std::make_unique<Job<A>>());
    jobs.back()->round = &round;
    jobs.back()->index = i;
    adapter.InitJob(jobs.back().get());
  }
  return jobs;
}

double Percentile(std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return static_cast<double>(v[k]);
}

// ---- throughput -----------------------------------------------------------------------

template <typename A>
void Throughput(benchmark::State& state, bool repost, int workers, int body_ns) {
  A adapter(workers);
  Round<A> round;
  round.adapter = &adapter;
  round.body_iterations = IterationsFor(body_ns);
  const std::uint32_t jobs_per_round =
      repost ? kExecutionsPerRound / kRepostExecutions : kExecutionsPerRound;
  auto jobs = MakeJobs(adapter, round, repost ? jobs_per_round : 0);
  Round<A>* r = &round;

  WorkerTotals before{};
  if constexpr (HasTotals<A>) before = adapter.Totals();
  for (auto _ : state) {
    round.done.Reset(jobs_per_round);
    if (repost) {
      for (auto& job : jobs) {
        job->remaining = kRepostExecutions;
        adapter.PostJob(job.get());
      }
    } else {
      for (std::uint32_t i = 0; i < jobs_per_round; ++i) {
        adapter.PostOneShot([r, i] {
          BusyWork(r->body_iterations);
          r->done.Arrive(i);
        });
      }
    }
    round.done.Wait();
  }
  const auto executed = static_cast<double>(state.iterations()) * kExecutionsPerRound;
  state.SetItemsProcessed(static_cast<std::int64_t>(executed));
  if constexpr (HasTotals<A>) {
    const WorkerTotals after = adapter.Totals();
    const double tasks = static_cast<double>(after.tasks_executed - before.tasks_executed);
    if (tasks > 0) {
      state.counters["lock_contended_per_task"] =
          static_cast<double>(after.ready_lock_contended - before.ready_lock_contended) / tasks;
      state.counters["sched_role_per_task"] =
          static_cast<double>(after.sched_role_taken - before.sched_role_taken) / tasks;
    }
  }
}

// ---- post-to-start latency -----------------------------------------------------------

template <typename A>
struct StampedJob {
  typename A::Hook hook;
  Completion* done = nullptr;
  std::int64_t* sample = nullptr;
  std::uint32_t index = 0;
  BenchClock::time_point posted;  // written before the post, read by the execution

  void Execute() {
    *sample = (BenchClock::now() - posted).count();
    done->Arrive(index);
  }
};

template <typename A>
void Latency(benchmark::State& state, int workers, std::int64_t gap_ns) {
  A adapter(workers);
  const auto n = static_cast<std::uint32_t>(std::clamp<std::int64_t>(
      10'000'000 / gap_ns, 100, 2'000));  // about 10 ms of posting per round
  Completion done;
  std::vector<std::int64_t> round_samples(n);
  std::vector<StampedJob<A>> jobs(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    jobs[i].done = &done;
    jobs[i].sample = &round_samples[i];
    jobs[i].index = i;
    adapter.InitJob(&jobs[i]);
  }
  std::vector<std::int64_t> samples;
  for (auto _ : state) {
    done.Reset(n);
    const auto start = BenchClock::now();
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto target = start + std::chrono::nanoseconds(gap_ns * i);
      auto now = BenchClock::now();
      while (now < target) {
        CpuRelax();
        now = BenchClock::now();
      }
      jobs[i].posted = now;
      adapter.PostJob(&jobs[i]);
    }
    done.Wait();
    samples.insert(samples.end(), round_samples.begin(), round_samples.end());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * n);
  state.counters["p50_ns"] = Percentile(samples, 0.50);
  state.counters["p99_ns"] = Percentile(samples, 0.99);
}

// ---- timer lateness under load -------------------------------------------------------

template <typename A>
concept HasTimers = requires(A& a, StampedJob<A>* j, BenchClock::time_point t) {
  a.PostJobAt(j, t);
};

template <typename A>
void TimerLateness(benchmark::State& state, int workers) {
  constexpr std::uint32_t kTimers = 200;
  constexpr auto kSpacing = std::chrono::microseconds(100);  // deadlines over ~20 ms
  A adapter(workers);
  Round<A> load;
  load.adapter = &adapter;
  load.body_iterations = IterationsFor(1000);
  const auto load_jobs = static_cast<std::uint32_t>(2 * workers);
  auto jobs = MakeJobs(adapter, load, load_jobs);

  Completion timers_done;
  std::vector<std::int64_t> round_samples(kTimers);
  std::vector<StampedJob<A>> timers(kTimers);
  for (std::uint32_t i = 0; i < kTimers; ++i) {
    timers[i].done = &timers_done;
    timers[i].sample = &round_samples[i];
    timers[i].index = i;
    adapter.InitJob(&timers[i]);
  }
  std::vector<std::int64_t> samples;
  for (auto _ : state) {
    load.stop.store(false, std::memory_order_relaxed);
    load.done.Reset(load_jobs);
    for (auto& job : jobs) {
      job->remaining = INT_MAX;
      adapter.PostJob(job.get());
    }
    timers_done.Reset(kTimers);
    const auto base = BenchClock::now() + std::chrono::milliseconds(1);
    for (std::uint32_t i = 0; i < kTimers; ++i) {
      // `posted` holds the deadline: the sample is then start time minus deadline.
      timers[i].posted = base + kSpacing * i;
      adapter.PostJobAt(&timers[i], timers[i].posted);
    }
    timers_done.Wait();
    load.stop.store(true, std::memory_order_relaxed);
    load.done.Wait();
    samples.insert(samples.end(), round_samples.begin(), round_samples.end());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kTimers);
  state.counters["min_ns"] =
      samples.empty() ? 0 : static_cast<double>(*std::min_element(samples.begin(), samples.end()));
  state.counters["p50_ns"] = Percentile(samples, 0.50);
  state.counters["p99_ns"] = Percentile(samples, 0.99);
}

// ---- physical limit ------------------------------------------------------------------

struct PreparedCallback {
  void (*fn)(PreparedCallback*);
  Completion* done;
  std::uint64_t body_iterations;
  std::uint32_t index;
};

void RunPrepared(PreparedCallback* self) {
  BusyWork(self->body_iterations);
  self->done->Arrive(self->index);
}

void PhysicalLimit(benchmark::State& state, int body_ns) {
  Completion done;
  std::vector<PreparedCallback> callbacks(kExecutionsPerRound);
  for (std::uint32_t i = 0; i < kExecutionsPerRound; ++i) {
    callbacks[i] = {&RunPrepared, &done, IterationsFor(body_ns), i};
  }
  // The call goes through a pointer the compiler cannot see through, like a scheduler's.
  benchmark::DoNotOptimize(callbacks.data());
  for (auto _ : state) {
    done.Reset(kExecutionsPerRound);
    for (PreparedCallback& c : callbacks) c.fn(&c);
    done.Wait();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kExecutionsPerRound);
}

// ---- registration --------------------------------------------------------------------

constexpr int kWorkers[] = {1, 2, 4};
constexpr int kBodies[] = {0, 100, 1000};

template <typename A>
void RegisterThroughput(bool repost, int body, int workers) {
  const std::string name = std::string("throughput/") + (repost ? "repost" : "oneshot") +
                           "/body_ns:" + std::to_string(body) +
                           "/workers:" + std::to_string(workers) + "/" + A::kName;
  benchmark::RegisterBenchmark(
      name.c_str(), [=](benchmark::State& s) { Throughput<A>(s, repost, workers, body); })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

template <typename... As>
void RegisterAll() {
  for (bool repost : {false, true}) {
    for (int body : kBodies) {
      for (int workers : kWorkers) (RegisterThroughput<As>(repost, body, workers), ...);
    }
  }
  for (std::int64_t gap : {1'000, 50'000}) {
    for (int workers : {1, 2}) {
      auto one = [&]<typename A>(A*) {
        const std::string name = "latency/gap_ns:" + std::to_string(gap) +
                                 "/workers:" + std::to_string(workers) + "/" + A::kName;
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& s) { Latency<A>(s, workers, gap); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      };
      (one(static_cast<As*>(nullptr)), ...);
    }
  }
  for (int workers : {1, 2}) {
    auto one = [&]<typename A>(A*) {
      if constexpr (HasTimers<A>) {
        const std::string name =
            "timer_lateness/workers:" + std::to_string(workers) + "/" + A::kName;
        benchmark::RegisterBenchmark(name.c_str(),
                                     [=](benchmark::State& s) { TimerLateness<A>(s, workers); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    };
    (one(static_cast<As*>(nullptr)), ...);
  }
  for (int workers : {1, 2}) {
    const std::string name =
        "timer_lateness/workers:" + std::to_string(workers) + "/" + FairschedTimerWheel::kName;
    benchmark::RegisterBenchmark(
        name.c_str(), [=](benchmark::State& s) { TimerLateness<FairschedTimerWheel>(s, workers); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (int body : kBodies) {
    const std::string name = "physical_limit/body_ns:" + std::to_string(body);
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) { PhysicalLimit(s, body); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace fairsched::bench

int main(int argc, char** argv) {
  using namespace fairsched::bench;
  RegisterAll<FairschedDefault, FairschedTrivialPolicy, TrivialSchedAdapter, TbbAdapter,
              AsioAdapter>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("busy_work_ns_per_iteration",
                              std::to_string(BusyWorkNsPerIteration()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
