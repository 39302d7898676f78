// Scheduler benchmarks: fairsched against its trivial-policy build, the textbook pool
// (TrivialSched), oneTBB's task_arena and asio's thread_pool, in one run. One generic driver
// per measurement, templated on a small adapter per contestant (peer_adapters.h,
// fairsched_adapter.h). Every task body is empty: these measure the scheduler.
//
//   w1/workers:W/<c>        one outside thread posts 5,000,000 one-shot callables and waits
//                           until all ran (fairsched: PostOneShot). tasks/s.
//   w2/workers:W/<c>        1,000,000 jobs posted from outside, each re-posting itself from
//                           inside until it has run 10 times (10,000,000 runs). The peers and
//                           fairsched_oneshot post a fresh small closure per run; fairsched
//                           re-posts the job's own Task. fairsched_strict and
//                           fairsched_home (w1 too): PostOrder::kStrict, and kHome with the
//                           skew following the queues up to 4,096.
//   loop/w1, loop/w2        one thread calling the same prepared callbacks (5,000,000 once;
//                           1,000,000 ten times) in a loop: the cost with no scheduler.
//   Counters: worker_cpu_ns_per_task (CPU time of every thread but the benchmark thread,
//   per task), one_shot_allocs_per_task (fairsched: PostOneShot tasks the pool allocated).
//
//   wake/post/gap_us:G/workers:W/<c>   an outside thread posts one task after the scheduler
//                           was idle for G us and waits for it to run; p50/p90/p99 of post ->
//                           start (us), and worker CPU per wake-up (us). G is 10 us (inside
//                           the default 20 us spin), 1 ms and 10 ms (longer than any spin:
//                           the headline). trivial_sched_spin is the textbook pool with the
//                           same spin as fairsched's default spin_before_park. spin_floor (1
//                           worker only) is no scheduler: a thread that never sleeps polls
//                           a mailbox, the machine's floor for p50 and p99. 1,000 samples per
//                           repetition, 100 at 10 ms (1 s of idle gaps; there read p90: the
//                           p99 of 100 samples is the largest one). Fewer contestants at the
//                           long gaps (see RegisterAll).
//   wake/wakeup/gap_us:G/workers:W/<c> the same, but the task waits (PostWait) and another
//                           thread calls Wakeup: Wakeup -> start (fairsched only).
//   idle_cpu/<c>            2 workers, a burst of tasks, then 1 s idle: CPU used (% of a core).
//   timer_lateness/workers:W/<c>       how late deadline tasks start (p50/p99 ns) while
//                           2*W re-posting 1 us jobs keep every worker busy.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/sched/busy_work.h"
#include "bench/sched/completion.h"
#include "bench/sched/fairsched_adapter.h"
#include "bench/sched/peer_adapters.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

constexpr std::uint32_t kW1Tasks = 5'000'000;
constexpr std::uint32_t kW2Jobs = 1'000'000;
constexpr int kW2Runs = 10;

template <typename A>
concept HasScheduler = requires(A& a) {
  a.scheduler();
};

double CpuSeconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// CPU time of every thread of the process except the calling one.
class OtherThreadsCpu {
 public:
  OtherThreadsCpu() : process_(CpuSeconds(RUSAGE_SELF)), self_(CpuSeconds(RUSAGE_THREAD)) {}
  double Seconds() const {
    return (CpuSeconds(RUSAGE_SELF) - process_) - (CpuSeconds(RUSAGE_THREAD) - self_);
  }

 private:
  double process_, self_;
};

template <typename A>
std::uint64_t OneShotAllocations(A& adapter) {
  if constexpr (HasScheduler<A>) {
    return adapter.scheduler().OneShotAllocations();
  } else {
    return 0;
  }
}

// A job that runs `remaining` times, re-posting itself in between, then arrives.
template <typename A>
struct Job {
  typename A::Hook hook;
  A* adapter = nullptr;
  Completion* done = nullptr;
  std::uint32_t index = 0;
  int remaining = 0;  // only touched by the execution in progress; posts order executions
  Atomic<bool>* stop = nullptr;     // timer benchmark's load jobs only
  std::uint64_t body_iterations = 0;  // BusyWork per run (timer benchmark's load jobs only)

  void Execute() {
    BusyWork(body_iterations);
    // Relaxed stop: a load job only has to notice eventually.
    if (--remaining > 0 && (stop == nullptr || !stop->load(std::memory_order_relaxed))) {
      adapter->PostJob(this);
      return;
    }
    done->Arrive(index);
  }
};

template <typename A>
std::vector<Job<A>> MakeJobs(A& adapter, Completion& done, std::uint32_t n) {
  std::vector<Job<A>> jobs(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    jobs[i].adapter = &adapter;
    jobs[i].done = &done;
    jobs[i].index = i;
    adapter.InitJob(&jobs[i]);
  }
  return jobs;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

// ---- W1, W2 -----------------------------------------------------------------------------

template <typename A>
void W1(benchmark::State& state, int workers) {
  A adapter(workers);
  Completion done;
  Completion* d = &done;
  const std::uint64_t allocs_before = OneShotAllocations(adapter);
  const OtherThreadsCpu cpu;
  for (auto _ : state) {
    done.Reset(kW1Tasks);
    for (std::uint32_t i = 0; i < kW1Tasks; ++i) adapter.PostOneShot([d, i] { d->Arrive(i); });
    done.Wait();
  }
  const double tasks = static_cast<double>(state.iterations()) * kW1Tasks;
  state.SetItemsProcessed(static_cast<std::int64_t>(tasks));
  state.counters["worker_cpu_ns_per_task"] = cpu.Seconds() * 1e9 / tasks;
  if constexpr (HasScheduler<A>) {
    state.counters["one_shot_allocs_per_task"] =
        static_cast<double>(OneShotAllocations(adapter) - allocs_before) / tasks;
  }
}

template <typename A>
void W2(benchmark::State& state, int workers) {
  A adapter(workers);
  Completion done;
  std::vector<Job<A>> jobs = MakeJobs(adapter, done, kW2Jobs);
  const std::uint64_t allocs_before = OneShotAllocations(adapter);
  const OtherThreadsCpu cpu;
  for (auto _ : state) {
    done.Reset(kW2Jobs);
    for (Job<A>& job : jobs) {
      job.remaining = kW2Runs;
      adapter.PostJob(&job);
    }
    done.Wait();
  }
  const double tasks = static_cast<double>(state.iterations()) * kW2Jobs * kW2Runs;
  state.SetItemsProcessed(static_cast<std::int64_t>(tasks));
  state.counters["worker_cpu_ns_per_task"] = cpu.Seconds() * 1e9 / tasks;
  if constexpr (HasScheduler<A>) {
    state.counters["one_shot_allocs_per_task"] =
        static_cast<double>(OneShotAllocations(adapter) - allocs_before) / tasks;
  }
}

// ---- the loop without a scheduler -----------------------------------------------------

struct PreparedCallback {
  void (*fn)(PreparedCallback*);
  Completion* done;
  std::uint32_t index;
  int remaining;
};

void RunPrepared(PreparedCallback* self) {
  if (--self->remaining == 0) self->done->Arrive(self->index);
}

void Loop(benchmark::State& state, std::uint32_t callbacks, int runs) {
  Completion done;
  std::vector<PreparedCallback> prepared(callbacks);
  for (std::uint32_t i = 0; i < callbacks; ++i) prepared[i] = {&RunPrepared, &done, i, 0};
  // The call goes through a pointer the compiler cannot see through, like a scheduler's.
  benchmark::DoNotOptimize(prepared.data());
  for (auto _ : state) {
    done.Reset(callbacks);
    for (PreparedCallback& c : prepared) c.remaining = runs;
    for (int run = 0; run < runs; ++run) {
      for (PreparedCallback& c : prepared) c.fn(&c);
    }
    done.Wait();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * callbacks * runs);
}

// ---- wake-up latency ------------------------------------------------------------------

template <typename A>
struct WakeJob {
  typename A::Hook hook;
  BenchClock::time_point posted;  // written before the post/wakeup, read by the run
  double latency_us = 0;
  Atomic<bool> ran{false};

  void Execute() {
    latency_us = std::chrono::duration<double, std::micro>(BenchClock::now() - posted).count();
    // Release: the poster reads latency_us after seeing ran.
    ran.store(true, std::memory_order_release);
  }
};

void SpinFor(std::chrono::microseconds gap) {
  const auto until = BenchClock::now() + gap;
  while (BenchClock::now() < until) CpuRelax();
}

template <typename A>
concept HasWakeup = requires(A& a, WakeJob<A>* j) {
  a.PostJobWaiting(j);
  a.WakeJob(j);
};

// The textbook pool with the spin fairsched idles with by default: wake-up like for like.
struct TrivialSchedSpinAdapter : TrivialSchedAdapter {
  static constexpr const char* kName = "trivial_sched_spin";
  explicit TrivialSchedSpinAdapter(int workers)
      : TrivialSchedAdapter(workers, TaskSchedulerOptions{}.spin_before_park) {}
};

// Samples per repetition: 1,000 (enough for a p99), but 100 for gaps of 10 ms and more,
// which would otherwise idle for 10 s per repetition and contestant; there p90 is the
// highest percentile with ten samples above it, and p99 is only the largest sample.
int WakeSamples(int gap_us) { return gap_us >= 10000 ? 100 : 1000; }

// `wakeup`: the job waits (PostWait) and is woken by Wakeup; else it is posted.
template <typename A>
void WakeLatency(benchmark::State& state, int workers, int gap_us, bool wakeup) {
  const int kSamples = WakeSamples(gap_us);
  A adapter(workers);
  WakeJob<A> job;
  adapter.InitJob(&job);
  std::vector<double> samples;
  double worker_cpu = 0;
  WorkerTotals before;
  if constexpr (HasScheduler<A>) before = adapter.Totals();
  for (auto _ : state) {
    const OtherThreadsCpu cpu;
    for (int i = 0; i < kSamples; ++i) {
      job.ran.store(false, std::memory_order_relaxed);
      if constexpr (HasWakeup<A>) {
        if (wakeup) adapter.PostJobWaiting(&job);
      }
      SpinFor(std::chrono::microseconds(gap_us));  // the scheduler goes idle
      job.posted = BenchClock::now();
      if constexpr (HasWakeup<A>) {
        if (wakeup) {
          adapter.WakeJob(&job);
        } else {
          adapter.PostJob(&job);
        }
      } else {
        adapter.PostJob(&job);
      }
      while (!job.ran.load(std::memory_order_acquire)) CpuRelax();
      samples.push_back(job.latency_us);
    }
    worker_cpu += cpu.Seconds();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kSamples);
  state.counters["p50_us"] = Percentile(samples, 0.50);
  state.counters["p90_us"] = Percentile(samples, 0.90);
  state.counters["p99_us"] = Percentile(samples, 0.99);
  const double wakes = static_cast<double>(state.iterations()) * kSamples;
  state.counters["worker_cpu_us_per_wake"] = worker_cpu * 1e6 / wakes;
  if constexpr (HasScheduler<A>) {
    // How the workers slept between the samples: parked on the ready event, or in the
    // sched-role (the IO backend's wait), and how many wake-ups they sent each other.
    const WorkerTotals after = adapter.Totals();
    state.counters["parks_per_wake"] = static_cast<double>(after.parks - before.parks) / wakes;
    state.counters["role_sleeps_per_wake"] =
        static_cast<double>(after.role_sleeps - before.role_sleeps) / wakes;
    state.counters["wakes_sent_per_wake"] =
        static_cast<double>(after.wakes_sent - before.wakes_sent) / wakes;
  }
}

// ---- idle CPU -------------------------------------------------------------------------

template <typename A>
void IdleCpu(benchmark::State& state) {
  for (auto _ : state) {
    A adapter(2);
    Completion done;
    Completion* d = &done;
    done.Reset(1000);
    for (std::uint32_t i = 0; i < 1000; ++i) adapter.PostOneShot([d, i] { d->Arrive(i); });
    done.Wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double before = CpuSeconds(RUSAGE_SELF);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    state.counters["cpu_percent_of_one_core"] = (CpuSeconds(RUSAGE_SELF) - before) * 100.0;
  }
}

// ---- timer lateness under load --------------------------------------------------------

template <typename A>
concept HasTimers = requires(A& a, WakeJob<A>* j, BenchClock::time_point t) {
  a.PostJobAt(j, t);
};

template <typename A>
struct TimerJob {
  typename A::Hook hook;
  Completion* done = nullptr;
  std::uint32_t index = 0;
  BenchClock::time_point deadline;
  double lateness_ns = 0;
  void Execute() {
    lateness_ns = static_cast<double>((BenchClock::now() - deadline).count());
    done->Arrive(index);
  }
};

template <typename A>
void TimerLateness(benchmark::State& state, int workers) {
  constexpr std::uint32_t kTimers = 200;
  constexpr auto kSpacing = std::chrono::microseconds(100);  // deadlines over ~20 ms
  A adapter(workers);
  Completion load_done;
  Atomic<bool> stop{false};
  const auto load_jobs = static_cast<std::uint32_t>(2 * workers);
  std::vector<Job<A>> jobs = MakeJobs(adapter, load_done, load_jobs);
  for (Job<A>& job : jobs) {  // load jobs: 1 us bodies, re-posting until stopped
    job.stop = &stop;
    job.body_iterations = IterationsFor(1000);
  }
  Completion timers_done;
  std::vector<TimerJob<A>> timers(kTimers);
  for (std::uint32_t i = 0; i < kTimers; ++i) {
    timers[i].done = &timers_done;
    timers[i].index = i;
    adapter.InitJob(&timers[i]);
  }
  std::vector<double> samples;
  for (auto _ : state) {
    stop.store(false, std::memory_order_relaxed);
    load_done.Reset(load_jobs);
    for (Job<A>& job : jobs) {
      job.remaining = INT_MAX;
      adapter.PostJob(&job);
    }
    timers_done.Reset(kTimers);
    const auto base = BenchClock::now() + std::chrono::milliseconds(1);
    for (std::uint32_t i = 0; i < kTimers; ++i) {
      timers[i].deadline = base + kSpacing * i;
      adapter.PostJobAt(&timers[i], timers[i].deadline);
    }
    timers_done.Wait();
    stop.store(true, std::memory_order_relaxed);
    load_done.Wait();
    for (const auto& t : timers) samples.push_back(t.lateness_ns);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kTimers);
  state.counters["min_ns"] = *std::min_element(samples.begin(), samples.end());
  state.counters["p50_ns"] = Percentile(samples, 0.50);
  state.counters["p99_ns"] = Percentile(samples, 0.99);
}

// ---- registration --------------------------------------------------------------------

template <typename F>
void Register(const std::string& name, F f, int repetitions) {
  benchmark::RegisterBenchmark(name.c_str(), f)
      ->UseRealTime()
      ->Iterations(1)
      ->Repetitions(repetitions)
      ->Unit(benchmark::kMillisecond);
}

template <typename... As>
struct Contestants {
  template <typename F>
  static void ForEach(F f) {
    (f(static_cast<As*>(nullptr)), ...);
  }
};

using Peers = Contestants<TrivialSchedAdapter, TbbAdapter, AsioAdapter>;
using Ours = Contestants<FairschedDefault, FairschedTrivialPolicy>;

void RegisterAll(int reps) {
  // Idle CPU first: RUSAGE_SELF counts every thread, so nothing may linger from earlier
  // benchmarks; TBB (whose workers outlive its arena for a while) goes last.
  auto idle = [&]<typename A>(A*) {
    Register("idle_cpu/" + std::string(A::kName), [](benchmark::State& s) { IdleCpu<A>(s); },
             std::min(reps, 3));
  };
  Contestants<FairschedDefault, FairschedTrivialPolicy, FairschedSpin<100>, TrivialSchedAdapter,
              AsioAdapter, TbbAdapter>::ForEach(idle);

  for (int workers : {1, 2}) {
    const std::string w = "/workers:" + std::to_string(workers) + "/";
    auto w1 = [&]<typename A>(A*) {
      Register("w1" + w + A::kName, [=](benchmark::State& s) { W1<A>(s, workers); }, reps);
    };
    auto w2 = [&]<typename A>(A*) {
      Register("w2" + w + A::kName, [=](benchmark::State& s) { W2<A>(s, workers); }, reps);
    };
    Ours::ForEach(w1);
    Contestants<FairschedHome>::ForEach(w1);
    Peers::ForEach(w1);
    Ours::ForEach(w2);
    Contestants<FairschedOneShot, FairschedStrict, FairschedHome>::ForEach(w2);
    Peers::ForEach(w2);
  }
  // The latency histogram's cost: off, default (1 in 64 posts), every post.
  auto hist = [&]<typename A>(A*) {
    Register("w1/workers:1/" + std::string(A::kName),
             [](benchmark::State& s) { W1<A>(s, 1); }, reps);
    Register("w2/workers:1/" + std::string(A::kName),
             [](benchmark::State& s) { W2<A>(s, 1); }, reps);
  };
  Contestants<FairschedHistogramOff, FairschedHistogramEvery>::ForEach(hist);
  Register("loop/w1", [](benchmark::State& s) { Loop(s, kW1Tasks, 1); }, reps);
  Register("loop/w2", [](benchmark::State& s) { Loop(s, kW2Jobs, kW2Runs); }, reps);

  // Wake-up. At 10 us (inside the default spin) every contestant, posted and woken. The
  // headline gaps are longer than any spin: at 1 ms the default, no spin, both textbook
  // pools and the peers; at 10 ms (100 samples of 10 ms each) the default and both textbook
  // pools. Fewer rows at the long gaps keep the idle time per repetition bounded.
  for (int gap : {10, 1000, 10000}) {
    for (int workers : {1, 2}) {
      const std::string suffix =
          "/gap_us:" + std::to_string(gap) + "/workers:" + std::to_string(workers) + "/";
      auto post = [&]<typename A>(A*) {
        Register("wake/post" + suffix + A::kName,
                 [=](benchmark::State& s) { WakeLatency<A>(s, workers, gap, false); }, reps);
      };
      auto wake = [&]<typename A>(A*) {
        Register("wake/wakeup" + suffix + A::kName,
                 [=](benchmark::State& s) { WakeLatency<A>(s, workers, gap, true); }, reps);
      };
      using Spins = Contestants<FairschedSpin<0>, FairschedSpin<100>>;
      using TextbookPools = Contestants<TrivialSchedAdapter, TrivialSchedSpinAdapter>;
      if (gap == 10) {
        Ours::ForEach(post);
        Spins::ForEach(post);
      } else if (gap == 1000) {
        Contestants<FairschedDefault, FairschedSpin<0>>::ForEach(post);
      } else {
        Contestants<FairschedDefault>::ForEach(post);
      }
      TextbookPools::ForEach(post);
      if (gap <= 1000) Contestants<TbbAdapter, AsioAdapter>::ForEach(post);
      if (workers == 1) Contestants<SpinFloorAdapter>::ForEach(post);
      if (gap == 10) {
        Ours::ForEach(wake);
        Spins::ForEach(wake);
      } else if (gap == 1000) {
        Contestants<FairschedDefault>::ForEach(wake);
      }
    }
  }

  for (int workers : {1, 2}) {
    auto one = [&]<typename A>(A*) {
      if constexpr (HasTimers<A>) {
        benchmark::RegisterBenchmark(
            ("timer_lateness/workers:" + std::to_string(workers) + "/" + A::kName).c_str(),
            [=](benchmark::State& s) { TimerLateness<A>(s, workers); })
            ->UseRealTime()
            ->Repetitions(reps)
            ->Unit(benchmark::kMillisecond);
      }
    };
    Contestants<FairschedDefault, FairschedTrivialPolicy, FairschedTimerWheel, AsioAdapter>::ForEach(
        one);
  }
}

}  // namespace
}  // namespace fairsched::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // FAIRSCHED_BENCH_REPETITIONS overrides the default 5 repetitions (e.g. 1 for a quick look).
  const char* reps_env = std::getenv("FAIRSCHED_BENCH_REPETITIONS");
  fairsched::bench::RegisterAll(reps_env != nullptr ? std::max(1, std::atoi(reps_env)) : 5);
  benchmark::AddCustomContext("busy_work_ns_per_iteration",
                              std::to_string(fairsched::bench::BusyWorkNsPerIteration()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
