// Scheduler lifecycle and idle-path benchmarks: the costs an outside review measured as
// pathologies, recorded before and after their fixes in bench/results/sched.md.
//
//   stop/waiting:N/<wait queue>   2 workers, N tasks waiting (half PostWait, half a timer an
//                                 hour away), then Stop: the time Stop takes to wake and
//                                 drain them (manual time). heap = BinaryHeap, wheel =
//                                 TimerWheel.
//   start_stop/cycles:2000        2,000 cycles of Start(2), one post, Stop: time per cycle;
//                                 counters rss_growth_kib (resident set before -> after) and
//                                 stats_entries (Stats().size()).
//   idle_posts/waiting:K          200 one-shot posts from outside into an idle 2-worker
//                                 scheduler (each after the previous ran and 200 us idle),
//                                 with K tasks waiting (PostWait and a timer an hour away):
//                                 wakes_sent_per_post and idle_wakeups_per_post.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "queues/timer_wheel.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"

namespace fairsched::bench {
namespace {

using Heap = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>>;
using Wheel = BasicTaskScheduler<McspQueue<Task>, TimerWheel<Task>>;

// Resident set size in KiB (/proc/self/statm, second field, in pages).
long ResidentKib() {
  long size = 0, resident = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld %ld", &size, &resident) != 2) resident = 0;
    std::fclose(statm);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

template <typename Scheduler>
void BM_StopWithWaitingTasks(benchmark::State& state) {
  const int waiting = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Scheduler sched;
    sched.Start(2);
    std::vector<std::unique_ptr<Task>> tasks;
    for (int i = 0; i < waiting; ++i) {
      tasks.push_back(std::make_unique<Task>([](Task*) {}));
      if (i % 2 == 0) {
        sched.PostWait(tasks.back().get());
      } else {
        sched.PostDelay(tasks.back().get(), std::chrono::hours(1) + std::chrono::seconds(i));
      }
    }
    if (!sched.WaitEmpty(std::chrono::milliseconds(20))) {  // let the role file them
      const auto start = std::chrono::steady_clock::now();
      sched.Stop();
      state.SetIterationTime(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
}

void BM_StartStopCycles(benchmark::State& state) {
  const int cycles = static_cast<int>(state.range(0));
  long growth = 0;
  std::size_t entries = 0;
  for (auto _ : state) {
    TaskScheduler sched;
    sched.Start(2);  // the first cycle's allocations are not growth
    sched.PostOneShot([] {});
    sched.Stop();
    const long before = ResidentKib();
    for (int i = 1; i < cycles; ++i) {
      sched.Start(2);
      sched.PostOneShot([] {});
      sched.Stop();
    }
    growth = ResidentKib() - before;
    entries = sched.Stats().size();
  }
  state.SetItemsProcessed(state.iterations() * cycles);
  state.counters["rss_growth_kib"] = static_cast<double>(growth);
  state.counters["stats_entries"] = static_cast<double>(entries);
}

void BM_IdlePosts(benchmark::State& state) {
  constexpr int kPosts = 200;
  const bool with_waiting = state.range(0) != 0;
  std::uint64_t wakes = 0, idle = 0, posts = 0;
  for (auto _ : state) {
    TaskScheduler sched;
    sched.Start(2);
    Task forever([](Task*) {}), far([](Task*) {});
    if (with_waiting) {
      sched.PostWait(&forever);
      sched.PostDelay(&far, std::chrono::hours(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    Atomic<int> ran{0};
    for (int i = 0; i < kPosts; ++i) {
      sched.PostOneShot([&ran] { ran.fetch_add(1, std::memory_order_release); });
      while (ran.load(std::memory_order_acquire) != i + 1) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (const WorkerStats& s : sched.Stats()) {
      wakes += s.wakes_sent;
      idle += s.idle_wakeups;
    }
    posts += kPosts;
    if (with_waiting) {
      sched.Cancel(&forever);
      sched.Cancel(&far);
    }
    sched.Stop();
  }
  state.counters["wakes_sent_per_post"] = static_cast<double>(wakes) / static_cast<double>(posts);
  state.counters["idle_wakeups_per_post"] = static_cast<double>(idle) / static_cast<double>(posts);
}

BENCHMARK_TEMPLATE(BM_StopWithWaitingTasks, Heap)
    ->Name("stop/heap")
    ->Arg(1000)
    ->Arg(4000)
    ->ArgName("waiting")
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_StopWithWaitingTasks, Wheel)
    ->Name("stop/wheel")
    ->Arg(1000)
    ->Arg(4000)
    ->ArgName("waiting")
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StartStopCycles)
    ->Name("start_stop")
    ->Arg(2000)
    ->ArgName("cycles")
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_IdlePosts)->Name("idle_posts")->Arg(0)->Arg(1)->ArgName("waiting")->Iterations(1);

}  // namespace
}  // namespace fairsched::bench

BENCHMARK_MAIN();
