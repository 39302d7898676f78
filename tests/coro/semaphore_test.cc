// Tests for coro::Semaphore (coro/semaphore.h): counting, FIFO without barging (a large
// request holds back later small ones), AcquireUntil with deadlines, cancellation and Stop,
// a cancel callback that releases, a bounded-concurrency stress with racing timeouts and
// cancellation, and misuse messages.
#include "coro/semaphore.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::coro {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using testing::StressIterations;

// See mutex_test.cc: on one worker, the spawned coroutine runs (and queues) during our Yield.
template <typename T>
Lazy<JoinHandle<T>> SpawnAndLetItQueue(TaskScheduler* sched, Lazy<T> waiter) {
  JoinHandle<T> handle = Spawn(*sched, std::move(waiter), {.child_of_current = false});
  co_await Yield();
  co_return handle;
}

TEST(SemaphoreTest, CountsPermits) {
  TaskScheduler sched;
  sched.Start(1);
  Semaphore semaphore(3);
  auto body = [&]() -> Lazy<> {
    EXPECT_EQ(semaphore.Available(), 3);
    EXPECT_TRUE(semaphore.TryAcquire(2));
    EXPECT_FALSE(semaphore.TryAcquire(2));
    EXPECT_TRUE(semaphore.TryAcquire());
    EXPECT_FALSE(semaphore.TryAcquire());
    semaphore.Release(3);
    co_await semaphore.Acquire(3);
    EXPECT_EQ(semaphore.Available(), 0);
    EXPECT_EQ(co_await semaphore.AcquireUntil(DeadlineAfter(milliseconds(10))),
              WaitStatus::kDeadline);
    semaphore.Release();
    EXPECT_EQ(co_await semaphore.AcquireUntil(kTaskDeadlineInfinite), WaitStatus::kOk);
    EXPECT_EQ(semaphore.Available(), 0);
  };
  Spawn(sched, body()).Get();
}

TEST(SemaphoreTest, FifoWithoutBargingAndHandOffOnRelease) {
  TaskScheduler sched;
  sched.Start(1);
  Semaphore semaphore(0);
  std::vector<int> order;  // touched only on the single worker
  auto waiter = [&](int id, std::int64_t n) -> Lazy<> {
    co_await semaphore.Acquire(n);
    order.push_back(id);
  };
  auto driver = [&]() -> Lazy<> {
    JoinHandle<void> big = co_await SpawnAndLetItQueue(&sched, waiter(0, 3));
    JoinHandle<void> small = co_await SpawnAndLetItQueue(&sched, waiter(1, 1));
    semaphore.Release(2);
    // 2 free permits, but the oldest waiter needs 3: nobody may take them ahead of it.
    EXPECT_EQ(semaphore.Available(), 2);
    EXPECT_FALSE(semaphore.TryAcquire(1));
    co_await Yield();
    EXPECT_TRUE(order.empty());
    semaphore.Release(2);  // 4: 3 to the big waiter, then 1 to the small one, directly
    EXPECT_EQ(semaphore.Available(), 0);
    co_await std::move(big);
    co_await std::move(small);
    EXPECT_EQ(order, (std::vector<int>{0, 1}));
  };
  Spawn(sched, driver()).Get();
}

TEST(SemaphoreTest, AWaiterThatLeavesUnblocksTheOnesBehindIt) {
  TaskScheduler sched;
  sched.Start(1);
  Semaphore semaphore(2);
  auto big = [&]() -> Lazy<WaitStatus> {
    co_return co_await semaphore.AcquireUntil(DeadlineAfter(milliseconds(20)), 5);
  };
  auto small = [&]() -> Lazy<WaitStatus> {
    co_return co_await semaphore.AcquireUntil(kTaskDeadlineInfinite, 2);
  };
  auto driver = [&]() -> Lazy<> {
    EXPECT_TRUE(semaphore.TryAcquire(2));
    JoinHandle<WaitStatus> b = co_await SpawnAndLetItQueue(&sched, big());
    JoinHandle<WaitStatus> s = co_await SpawnAndLetItQueue(&sched, small());
    semaphore.Release(2);  // the big waiter (5) holds back the small one (2)
    EXPECT_EQ(co_await std::move(b), WaitStatus::kDeadline);
    EXPECT_EQ(co_await std::move(s), WaitStatus::kOk);  // served when the big one left
    EXPECT_EQ(semaphore.Available(), 0);
  };
  Spawn(sched, driver()).Get();
}

// A cancel callback that releases the semaphore its own coroutine waits for: the callback
// runs before the cancellation ends the wait, so the wait is served instead (exactly one
// outcome); no deadlock either way.
TEST(SemaphoreTest, CancelCallbackThatReleasesDoesNotDeadlock) {
  TaskScheduler sched;
  sched.Start(2);
  Semaphore semaphore(0);
  std::atomic<bool> registered{false};
  auto waiter = [&]() -> Lazy<WaitStatus> {
    auto release = [&](CancelReason) { semaphore.Release(); };
    CancelCallback callback(release);
    registered.store(true);
    co_return co_await semaphore.AcquireUntil(kTaskDeadlineInfinite);
  };
  JoinHandle<WaitStatus> handle = Spawn(sched, waiter());
  while (!registered.load()) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(2));
  EXPECT_TRUE(handle.Cancel());
  const WaitStatus status = handle.Get();
  // kOk: the release reached the queued waiter; kCancelled: it was not queued yet, and the
  // permit is still free.
  if (status == WaitStatus::kOk) {
    EXPECT_EQ(semaphore.Available(), 0);
  } else {
    EXPECT_EQ(status, WaitStatus::kCancelled);
    EXPECT_EQ(semaphore.Available(), 1);
  }
}

TEST(SemaphoreTest, StopEndsCancellableWaitsWithShutdown) {
  std::atomic<int> started{0};
  std::vector<JoinHandle<WaitStatus>> handles;
  {
    TaskScheduler sched;
    sched.Start(2);
    Semaphore semaphore(0);
    auto waiter = [&]() -> Lazy<WaitStatus> {
      started.fetch_add(1);
      co_return co_await semaphore.AcquireUntil(kTaskDeadlineInfinite, 2);
    };
    for (int i = 0; i < 4; ++i) handles.push_back(Spawn(sched, waiter()));
    while (started.load() != 4) std::this_thread::yield();
    semaphore.Release(1);  // not enough for anybody
    sched.Stop();
    EXPECT_EQ(semaphore.Available(), 1);
  }
  for (JoinHandle<WaitStatus>& handle : handles) EXPECT_EQ(handle.Get(), WaitStatus::kShutdown);
}

// A semaphore of 3 bounds concurrency among coroutines on 4 workers, with Acquire,
// TryAcquire, short AcquireUntil deadlines, requests of 1 or 2, and a thread cancelling
// some of them: never more than 3 permits in use, and every permit comes back.
TEST(SemaphoreStressTest, BoundsConcurrencyWithRacingTimeoutsAndCancellation) {
  constexpr int kCoroutines = 8;
  constexpr std::int64_t kPermits = 3;
  const int kRounds = static_cast<int>(StressIterations(3000, 10));
  TaskScheduler sched;
  sched.Start(4);
  Semaphore semaphore(kPermits);
  std::atomic<std::int64_t> in_use{0};
  std::atomic<std::int64_t> max_in_use{0};
  auto body = [&](int c) -> Lazy<std::int64_t> {
    std::minstd_rand random(c + 7);
    std::int64_t served = 0;
    for (int r = 0; r < kRounds; ++r) {
      const std::int64_t n = 1 + static_cast<std::int64_t>(random() % 2);
      const int how = static_cast<int>(random() % 3);
      if (how == 0 && !IsCancelled()) {
        co_await semaphore.Acquire(n);
      } else if (how == 1) {
        if (!semaphore.TryAcquire(n)) continue;
      } else {
        const WaitStatus acquired =
            co_await semaphore.AcquireUntil(DeadlineAfter(microseconds(random() % 100)), n);
        if (acquired != WaitStatus::kOk) continue;
      }
      const std::int64_t now = in_use.fetch_add(n) + n;
      std::int64_t max = max_in_use.load();
      while (now > max && !max_in_use.compare_exchange_weak(max, now)) {
      }
      if (random() % 8 == 0) co_await Yield();
      in_use.fetch_sub(n);
      semaphore.Release(n);
      ++served;
    }
    co_return served;
  };
  std::vector<JoinHandle<std::int64_t>> handles;
  for (int c = 0; c < kCoroutines; ++c) handles.push_back(Spawn(sched, body(c)));
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(3));
    for (int c = 0; c < kCoroutines; c += 3) handles[c].Cancel();
  });
  canceller.join();
  std::int64_t served = 0;
  for (JoinHandle<std::int64_t>& handle : handles) served += handle.Get();
  EXPECT_GT(served, 0);
  EXPECT_LE(max_in_use.load(), kPermits);
  EXPECT_EQ(semaphore.Available(), kPermits);  // no permit lost or duplicated
}

#ifndef NDEBUG
TEST(SemaphoreDeathTest, BadCountsDie) {
  EXPECT_DEATH(Semaphore(-1), "count outside");
  Semaphore semaphore(1);
  EXPECT_DEATH(semaphore.Release(0), "n must be in");
  EXPECT_DEATH(semaphore.TryAcquire(-2), "n must be in");
  EXPECT_DEATH(semaphore.Release(Semaphore::kMaxCount), "more than kMaxCount");
}

TEST(SemaphoreDeathTest, DestroyingASemaphoreWithWaitersDies) {
  auto run = [] {
    TaskScheduler sched;
    sched.Start(1);
    auto* semaphore = new Semaphore(0);
    auto waiter = [semaphore]() -> Lazy<> { co_await semaphore->Acquire(); };
    // Runs after the waiter has queued: one worker, posted in this order.
    auto destroyer = [semaphore]() -> Lazy<> {
      delete semaphore;
      co_return;
    };
    Spawn(sched, waiter()).Detach();
    Spawn(sched, destroyer()).Get();
  };
  EXPECT_DEATH(run(), "destroyed while coroutines wait");
}
#endif

}  // namespace
}  // namespace fairsched::coro
