// Stress tests for the coro runtime (coro/runtime.h): a million short coroutines spawned and
// joined, frame recycling measured per spawn, a 10^6-deep chain of awaits running on
// workers (and moving between them) with bounded stack, and wakers racing with deadlines,
// cancellation and the coroutine's own run: every wait ends exactly once, and every waker
// that reports success is the one the coroutine sees. Sizes scale with tests/stress.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::coro {
namespace {

using fairsched::testing::StressIterations;
using std::chrono::microseconds;

Lazy<std::int64_t> Short(std::int64_t i) { co_return i; }

// Spawns `count` children in windows and joins each.
Lazy<std::int64_t> Spawner(TaskScheduler* sched, std::int64_t first, std::int64_t count) {
  constexpr std::int64_t kWindow = 256;
  std::int64_t sum = 0;
  std::vector<JoinHandle<std::int64_t>> window;
  window.reserve(kWindow);
  for (std::int64_t done = 0; done < count;) {
    const std::int64_t n = std::min(kWindow, count - done);
    for (std::int64_t i = 0; i < n; ++i) window.push_back(Spawn(*sched, Short(first + done + i)));
    for (JoinHandle<std::int64_t>& handle : window) sum += co_await std::move(handle);
    window.clear();
    done += n;
  }
  co_return sum;
}

TEST(RuntimeStressTest, MillionShortCoroutinesSpawnedAndJoined) {
  // 10^6 in default and opt; a twentieth (times the CI scale) under the sanitizers.
  const std::int64_t total = StressIterations(1'000'000, 200);
  constexpr int kSpawners = 4;
  TaskScheduler sched;
  sched.Start(2);
  std::vector<JoinHandle<std::int64_t>> spawners;
  const std::int64_t per = total / kSpawners;
  for (int s = 0; s < kSpawners; ++s)
    spawners.push_back(Spawn(sched, Spawner(&sched, s * per, per)));
  std::int64_t sum = 0;
  for (JoinHandle<std::int64_t>& handle : spawners) sum += handle.Get();
  const std::int64_t n = per * kSpawners;
  EXPECT_EQ(sum, n * (n - 1) / 2);
}

// One allocation per spawn (the state lives in the root frame's header), recycled: after a
// warm-up round, spawning from this thread takes (almost) nothing from the system, although
// the coroutines finish on the workers: the blocks circulate through the global pool,
// whose cap (FrameAllocator::kMaxPooledBytes) holds a whole window. Spawns go in windows of
// up to 10,000 live coroutines; each window is joined once all of it finished, so no Get()
// blocks (a blocking Get adds the state's extension, one more allocation: how many Gets
// block depends on how far the workers lag behind this thread, which made the count vary
// with the machine's load).
TEST(RuntimeStressTest, SpawnRecyclesFramesAcrossThreads) {
  constexpr int kRound = 20'000;
  constexpr int kWindow = 10'000;
  TaskScheduler sched;
  sched.Start(2);
  auto round = [&] {
    std::vector<JoinHandle<std::int64_t>> handles;
    handles.reserve(kWindow);
    std::int64_t sum = 0;
    for (int i = 0; i < kRound; i += kWindow) {
      for (int j = 0; j < kWindow; ++j) handles.push_back(Spawn(sched, Short(i + j)));
      for (JoinHandle<std::int64_t>& handle : handles) {
        while (!handle.IsDone()) std::this_thread::yield();
      }
      for (JoinHandle<std::int64_t>& handle : handles) sum += handle.Get();
      handles.clear();
    }
    EXPECT_EQ(sum, std::int64_t{kRound} * (kRound - 1) / 2);
  };
  round();  // warm-up: fills the caches
  const FrameAllocatorStats before = FrameAllocator::ThisThreadFrameStats();
  round();
  const FrameAllocatorStats after = FrameAllocator::ThisThreadFrameStats();
  const double allocations = static_cast<double>(after.allocations - before.allocations);
  const double per_spawn = allocations / kRound;
  const double system_per_spawn =
      static_cast<double>(after.system_allocations - before.system_allocations) / kRound;
  const double bytes_per_spawn =
      static_cast<double>(after.bytes_requested - before.bytes_requested) / kRound;
  const double rounded_per_spawn =
      static_cast<double>(after.bytes_rounded - before.bytes_rounded) / kRound;
  std::printf("sizeof(CoroutineState) = %zu\n", sizeof(internal::CoroutineState));
  std::printf(
      "per spawn: %.2f allocations, %.1f bytes requested (%.1f in size classes), %.4f from "
      "the system\n",
      per_spawn, bytes_per_spawn, rounded_per_spawn, system_per_spawn);
  // The root frame, with the state in its header, and nothing else (no Get blocked).
  EXPECT_EQ(after.allocations - before.allocations, std::uint64_t{kRound});
  // Blocks stranded in the workers' caches are bounded (kThreadCacheLimit per class), so a
  // round of 20000 spawns should need well under 5% of its blocks from the system.
  EXPECT_LT(system_per_spawn, 0.05);
}

struct StackSpread {
  std::atomic<std::uintptr_t> low{UINTPTR_MAX};
  std::atomic<std::uintptr_t> high{0};
  void Record() {  // called by one coroutine at a time; atomics only for the final read
    const auto sp = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    if (sp < low.load(std::memory_order_relaxed)) low.store(sp, std::memory_order_relaxed);
    if (sp > high.load(std::memory_order_relaxed)) high.store(sp, std::memory_order_relaxed);
  }
};

// Each worker has its own stack: record per thread, compare spreads within one thread.
Lazy<std::int64_t> Nested(int depth, StackSpread* spreads, std::thread::id* ids) {
  const std::thread::id me = std::this_thread::get_id();
  spreads[me == ids[0] ? 0 : 1].Record();
  if (depth == 0) co_return 0;
  if (depth % 100'000 == 0) co_await Yield();  // move between workers mid-chain
  co_return 1 + co_await Nested(depth - 1, spreads, ids);
}

TEST(RuntimeStressTest, MillionDeepChainOnWorkersKeepsTheStackFlat) {
  constexpr int kDepth = 1'000'000;
  TaskScheduler sched;
  sched.Start(2);
  StackSpread spreads[2];
  std::thread::id ids[2];
  // Learn one worker's id so the records split by thread.
  auto who = []() -> Lazy<std::thread::id> { co_return std::this_thread::get_id(); };
  ids[0] = Spawn(sched, who()).Get();
  EXPECT_EQ(Spawn(sched, Nested(kDepth, spreads, ids)).Get(), kDepth);
  for (const StackSpread& spread : spreads) {
    if (spread.high.load() == 0) continue;  // this worker never ran a level
    EXPECT_LT(spread.high.load() - spread.low.load(), 4096u);
  }
}

// Wakers race with each wait's deadline, with cancellation and with the coroutine itself.
TEST(RuntimeStressTest, WakersDeadlinesAndCancelEndEachWaitExactlyOnce) {
  const int kCoroutines = 8;
  const int kWaits = static_cast<int>(StressIterations(2000, 10));
  TaskScheduler sched;
  sched.Start(2);

  struct Slot {
    Mutex mu;
    std::vector<Waker> wakers;  // the current one last; older ones are stale
    std::atomic<std::int64_t> successful_wakes{0};
    std::atomic<bool> finished{false};
  };
  std::vector<Slot> slots(kCoroutines);

  struct Counts {
    std::int64_t woken = 0, deadline = 0, cancelled = 0, other = 0;
  };
  auto body = [&](int c) -> Lazy<Counts> {
    Counts counts;
    std::minstd_rand random(c + 1);
    for (int w = 0; w < kWaits; ++w) {
      Waker waker = PrepareWait(w % 7 == 0 ? WaitMode::kUncancellable : WaitMode::kCancellable);
      {
        MutexLock lock(slots[c].mu);
        if (slots[c].wakers.size() > 4) slots[c].wakers.erase(slots[c].wakers.begin());
        slots[c].wakers.push_back(waker);
      }
      // Mostly short deadlines that race with the wakers; some infinite ones, which a lost
      // wakeup would turn into a hang (the firing threads keep firing until every
      // coroutine is done, so even an uncancellable infinite wait ends).
      const int pick = static_cast<int>(random() % 4);
      const TaskDeadline deadline =
          pick == 0 ? kTaskDeadlineInfinite : DeadlineAfter(microseconds(random() % 50));
      const WakeReason reason = co_await WaitWoken(deadline);
      switch (reason) {
        case WakeReason::kWakeup:
        case WakeReason::kSignal:
          counts.woken++;
          break;
        case WakeReason::kDeadline:
          counts.deadline++;
          break;
        case WakeReason::kCancelled:
          counts.cancelled++;
          break;
        default:
          counts.other++;
      }
      if (random() % 8 == 0) co_await Yield();
    }
    slots[c].finished.store(true);
    co_return counts;
  };

  std::vector<JoinHandle<Counts>> handles;
  for (int c = 0; c < kCoroutines; ++c) handles.push_back(Spawn(sched, body(c)));

  std::atomic<bool> stop_firing{false};
  auto fire = [&](unsigned seed) {
    std::minstd_rand random(seed);
    while (!stop_firing.load(std::memory_order_relaxed)) {
      const int c = static_cast<int>(random() % kCoroutines);
      Waker waker;
      {
        MutexLock lock(slots[c].mu);
        if (slots[c].wakers.empty()) continue;
        // Usually the current waker, sometimes a stale one.
        const std::size_t back = slots[c].wakers.size() - 1;
        waker = slots[c].wakers[random() % 3 == 0 ? random() % (back + 1) : back];
      }
      const bool woke = random() % 2 == 0 ? waker.Wakeup() : waker.Signal();
      if (woke) slots[c].successful_wakes.fetch_add(1);
    }
  };
  std::thread firer1(fire, 1), firer2(fire, 2);
  // Cancel half of the coroutines part-way.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (int c = 0; c < kCoroutines; c += 2) handles[c].Cancel();

  std::vector<Counts> results;
  for (JoinHandle<Counts>& handle : handles) results.push_back(handle.Get());
  stop_firing.store(true);
  firer1.join();
  firer2.join();
  for (int c = 0; c < kCoroutines; ++c) {
    const Counts& counts = results[c];
    EXPECT_EQ(counts.woken + counts.deadline + counts.cancelled, kWaits) << c;
    EXPECT_EQ(counts.other, 0) << c;
    EXPECT_EQ(counts.woken, slots[c].successful_wakes.load()) << c;
    if (c % 2 == 1) {
      EXPECT_EQ(counts.cancelled, 0) << c;
    }
    MutexLock lock(slots[c].mu);
    slots[c].wakers.clear();  // drop the last references before the scheduler goes
  }
}

// A CancelCallback's destructor racing with the callback running on the cancelling thread:
// once the destructor has returned, the callback is finished and never starts again.
TEST(RuntimeStressTest, CancelCallbackDestructionRacesWithItsInvocation) {
  const int kRounds = static_cast<int>(StressIterations(500, 10));
  TaskScheduler sched;
  sched.Start(2);
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<bool> registered{false};
    std::atomic<int> running{0};
    std::atomic<bool> ran_after_destruction{false};
    std::atomic<bool> destroyed{false};
    auto body = [&]() -> Lazy<> {
      {
        CancelCallback callback([&](CancelReason) {
          running.fetch_add(1);
          if (destroyed.load()) ran_after_destruction.store(true);
          for (int i = 0; i < 100; ++i) CpuRelax();
          if (destroyed.load()) ran_after_destruction.store(true);
          running.fetch_sub(1);
        });
        registered.store(true);
        co_await Yield();
      }  // ~CancelCallback: waits if the callback runs on the cancelling thread right now
      destroyed.store(true);
      EXPECT_EQ(running.load(), 0);
    };
    JoinHandle<void> handle = Spawn(sched, body());
    while (!registered.load()) std::this_thread::yield();
    handle.Cancel();
    handle.Get();
    EXPECT_FALSE(ran_after_destruction.load());
  }
}

// Signal/Wakeup/Cancel from other threads racing with WaitSignal and its deadline: the
// coroutine always finishes, never sees a reason twice for one wait, and sees kCancelled
// after the cancellation.
TEST(RuntimeStressTest, ExternalSignalsRaceWithWaitSignalAndCancel) {
  const int kRounds = static_cast<int>(StressIterations(200, 10));
  TaskScheduler sched;
  sched.Start(2);
  for (int round = 0; round < kRounds; ++round) {
    auto body = [](int waits) -> Lazy<int> {
      int after_cancel_not_cancelled = 0;
      for (int i = 0; i < waits; ++i) {
        const bool was_cancelled = IsCancelled();
        const WakeReason reason = co_await WaitSignal(DeadlineAfter(microseconds(20)));
        if (was_cancelled && reason != WakeReason::kCancelled) ++after_cancel_not_cancelled;
      }
      co_return after_cancel_not_cancelled;
    };
    JoinHandle<int> handle = Spawn(sched, body(50));
    CoroutineRef ref = handle.Ref();
    std::thread signaller([ref] {
      for (int i = 0; i < 50; ++i) (i % 2 ? ref.Signal() : ref.Wakeup());
    });
    std::thread canceller([ref, round] {
      if (round % 2 == 0) ref.Cancel();
    });
    signaller.join();
    canceller.join();
    EXPECT_EQ(handle.Get(), 0);
  }
}

}  // namespace
}  // namespace fairsched::coro
