// A coroutine spawned from a task that then blocks must run while the other workers stay
// busy (sched/task_scheduler.h, "Local batches and the order bound"). The spawn is a
// run-now post made by a task while every worker executes, so it waits in the spawning
// worker's local batch; the blocking wait (JoinHandle::WaitFor, allowed in a task on a
// scheduler with several workers) keeps that worker inside its execution batch, and a
// coroutines in Yield loops keep the other workers busy. Another worker must take the
// batch over within the bound; before the busy take-over only an idle worker did, and the
// spawned coroutine waited for the whole WaitFor. The same under PostOrder::kHome, whose
// looks take the spawn from the blocked worker's home queue.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"

namespace fairsched::coro {
namespace {

using std::chrono::seconds;

Lazy<int> Child(std::atomic<std::int64_t>* yields, std::atomic<std::int64_t>* yields_at_start) {
  *yields_at_start = yields->load();
  co_return 7;
}

Lazy<void> YieldLoop(std::atomic<bool>* stop, std::atomic<std::int64_t>* yields) {
  while (!stop->load(std::memory_order_relaxed)) {
    yields->fetch_add(1, std::memory_order_relaxed);
    co_await Yield();
  }
}

// Under PostOrder::kHome the spawn goes to the spawning worker's home queue instead, and
// the other workers' looks must take it (home_skew 32 here).
void SpawnedCoroutineRunsWhileItsSpawnerBlocks(int workers, int yield_loops,
                                               PostOrder order = PostOrder::kBatched) {
  constexpr std::size_t kExecuteBatch = 16;
  constexpr std::uint64_t kHomeSkew = 32;
  TaskScheduler sched(TaskSchedulerOptions{
      .execute_batch_size = kExecuteBatch, .post_order = order, .home_skew = kHomeSkew});
  sched.Start(workers);
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> yields{0};
  std::vector<JoinHandle<void>> loops;
  for (int i = 0; i < yield_loops; ++i) loops.push_back(Spawn(sched, YieldLoop(&stop, &yields)));
  while (yields.load() < 1000) std::this_thread::yield();
  constexpr int kRounds = 5;
  std::atomic<int> finished_in_time{0};
  std::int64_t worst = 0;
  std::atomic<bool> spawner_done{false};
  // Outlive the scheduler: a child that missed its round still runs during Stop.
  std::vector<std::atomic<std::int64_t>> at_start(kRounds);
  fairsched::Task spawner([&](fairsched::Task*) {
    struct Done {
      std::atomic<bool>& flag;
      ~Done() { flag = true; }
    } done{spawner_done};
    for (int round = 0; round < kRounds; ++round) {
      JoinHandle<int> child = Spawn(sched, Child(&yields, &at_start[round]));
      const std::int64_t at_spawn = yields.load();  // after the post: see held_post_test
      if (!child.WaitFor(seconds(2))) {
        child.Detach();  // held behind this task: it runs once the task returns
        return;
      }
      EXPECT_EQ(child.Get(), 7);
      finished_in_time.fetch_add(1);
      worst = std::max(worst, at_start[round].load() - at_spawn);
    }
  });
  sched.Post(&spawner);
  while (!spawner_done.load()) std::this_thread::yield();
  stop = true;
  for (JoinHandle<void>& loop : loops) loop.Get();
  sched.Stop();
  std::printf("%d workers, %d yield loop(s): worst %lld yields between a spawn and its start\n",
              workers, yield_loops, static_cast<long long>(worst));
  EXPECT_EQ(finished_in_time.load(), kRounds)
      << "a coroutine spawned by a blocked task waited 2 s while the Yield loop ran";
  // Per other worker: the bound in the header (plus its Yield loops' posts made before the
  // spawn, under kHome).
  const std::int64_t per_worker =
      order == PostOrder::kHome
          ? static_cast<std::int64_t>(kExecuteBatch + kHomeSkew +
                                      (kHomeStampBlock - 1) * (workers - 1)) +
                yield_loops
          : 3 * static_cast<std::int64_t>(kExecuteBatch);
  EXPECT_LE(worst, per_worker * (workers - 1));
}

// Two Yield loops per busy worker's share, so that a worker running them always finds the
// other one ready and stays inside its execution batch.
TEST(HeldSpawnTest, TwoWorkersWaitForAndYieldLoops) { SpawnedCoroutineRunsWhileItsSpawnerBlocks(2, 2); }
TEST(HeldSpawnTest, ThreeWorkersWaitForAndYieldLoops) {
  SpawnedCoroutineRunsWhileItsSpawnerBlocks(3, 4);
}
TEST(HeldSpawnTest, TwoWorkersWaitForAndYieldLoopsUnderHomeQueues) {
  SpawnedCoroutineRunsWhileItsSpawnerBlocks(2, 2, PostOrder::kHome);
}
TEST(HeldSpawnTest, ThreeWorkersWaitForAndYieldLoopsUnderHomeQueues) {
  SpawnedCoroutineRunsWhileItsSpawnerBlocks(3, 4, PostOrder::kHome);
}

}  // namespace
}  // namespace fairsched::coro
