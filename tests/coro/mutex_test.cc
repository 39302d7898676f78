// Tests for coro::Mutex (coro/mutex.h): the fast paths, mutual exclusion under contention,
// strict FIFO grants, direct hand-off, TryLockUntil with deadlines, cancellation and Stop,
// hand-offs racing with timeouts and cancellation (stress), and misuse messages.
#include "coro/mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::coro {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::StressIterations;

TEST(MutexTest, TryLockUnlockAndGuard) {
  TaskScheduler sched;
  sched.Start(1);
  Mutex mutex;
  auto body = [&]() -> Lazy<> {
    EXPECT_FALSE(mutex.IsLocked());
    EXPECT_TRUE(mutex.TryLock());
    EXPECT_TRUE(mutex.IsLocked());
    EXPECT_FALSE(mutex.TryLock());  // not recursive
    mutex.Unlock();
    EXPECT_FALSE(mutex.IsLocked());
    co_await mutex.Lock();
    EXPECT_TRUE(mutex.IsLocked());
    mutex.Unlock();
    {
      MutexGuard guard = co_await mutex.LockGuard();
      EXPECT_TRUE(guard.OwnsLock());
      EXPECT_TRUE(mutex.IsLocked());
    }
    EXPECT_FALSE(mutex.IsLocked());
    EXPECT_EQ(co_await mutex.TryLockUntil(kTaskDeadlineInfinite), WaitStatus::kOk);
    MutexGuard adopted(mutex, std::adopt_lock);
    EXPECT_TRUE(mutex.IsLocked());
    adopted.Unlock();
    EXPECT_FALSE(mutex.IsLocked());
  };
  Spawn(sched, body()).Get();
}

// Starts `waiter` and lets it run until it suspends: on a one-worker scheduler the spawned
// coroutine is ahead of us in the ready queue, so after our Yield it has queued.
template <typename T>
Lazy<JoinHandle<T>> SpawnAndLetItQueue(TaskScheduler* sched, Lazy<T> waiter) {
  JoinHandle<T> handle = Spawn(*sched, std::move(waiter), {.child_of_current = false});
  co_await Yield();
  co_return handle;
}

TEST(MutexTest, WaitersAreGrantedInFifoOrder) {
  constexpr int kWaiters = 8;
  TaskScheduler sched;
  sched.Start(1);
  Mutex mutex;
  std::vector<int> order;  // guarded by mutex
  auto waiter = [&](int i) -> Lazy<> {
    // Alternate the three ways of waiting: all of them queue in one FIFO.
    if (i % 3 == 0) {
      co_await mutex.Lock();
    } else if (i % 3 == 1) {
      EXPECT_EQ(co_await mutex.TryLockUntil(DeadlineAfter(seconds(60))), WaitStatus::kOk);
    } else {
      (co_await mutex.LockGuard()).Release();
    }
    order.push_back(i);
    mutex.Unlock();
  };
  auto holder = [&]() -> Lazy<> {
    co_await mutex.Lock();
    std::vector<JoinHandle<void>> waiters;
    for (int i = 0; i < kWaiters; ++i) {
      waiters.push_back(co_await SpawnAndLetItQueue(&sched, waiter(i)));
    }
    EXPECT_TRUE(order.empty());
    mutex.Unlock();
    for (JoinHandle<void>& handle : waiters) co_await std::move(handle);
  };
  Spawn(sched, holder()).Get();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kWaiters));
  for (int i = 0; i < kWaiters; ++i) EXPECT_EQ(order[i], i);
  EXPECT_FALSE(mutex.IsLocked());
}

TEST(MutexTest, UnlockHandsOffDirectlyToTheOldestWaiter) {
  TaskScheduler sched;
  sched.Start(1);
  Mutex mutex;
  std::vector<char> order;  // guarded by mutex
  auto waiter = [&]() -> Lazy<> {
    co_await mutex.Lock();
    order.push_back('w');
    mutex.Unlock();
  };
  auto holder = [&]() -> Lazy<> {
    co_await mutex.Lock();
    JoinHandle<void> w = co_await SpawnAndLetItQueue(&sched, waiter());
    mutex.Unlock();
    // The waiter owns it now, although it has not run yet: no barging.
    EXPECT_TRUE(mutex.IsLocked());
    EXPECT_FALSE(mutex.TryLock());
    EXPECT_EQ(co_await mutex.TryLockUntil(DeadlineAfter(microseconds(0))), WaitStatus::kDeadline);
    co_await mutex.Lock();  // queues behind the waiter
    order.push_back('h');
    mutex.Unlock();
    co_await std::move(w);
  };
  Spawn(sched, holder()).Get();
  EXPECT_EQ(order, (std::vector<char>{'w', 'h'}));
  EXPECT_FALSE(mutex.IsLocked());
}

TEST(MutexTest, TryLockUntilTimesOutAndLeavesTheQueue) {
  TaskScheduler sched;
  sched.Start(2);
  Mutex mutex;
  auto body = [&]() -> Lazy<> {
    co_await mutex.Lock();
    auto waiter = [&]() -> Lazy<WaitStatus> {
      co_return co_await mutex.TryLockUntil(DeadlineAfter(milliseconds(20)));
    };
    const auto start = TaskClock::now();
    EXPECT_EQ(co_await Spawn(sched, waiter()), WaitStatus::kDeadline);
    EXPECT_GE(TaskClock::now() - start, milliseconds(20));
    mutex.Unlock();  // nobody waits any more: a plain unlock
    EXPECT_FALSE(mutex.IsLocked());
    EXPECT_TRUE(mutex.TryLock());
    mutex.Unlock();
  };
  Spawn(sched, body()).Get();
}

TEST(MutexTest, CancelEndsTryLockUntilButNotLock) {
  TaskScheduler sched;
  sched.Start(1);
  Mutex mutex;
  auto try_waiter = [&]() -> Lazy<WaitStatus> {
    const WaitStatus status = co_await mutex.TryLockUntil(kTaskDeadlineInfinite);
    if (status == WaitStatus::kOk) mutex.Unlock();
    co_return status;
  };
  auto lock_waiter = [&]() -> Lazy<bool> {
    co_await mutex.Lock();
    const bool cancelled = IsCancelled();
    mutex.Unlock();
    co_return cancelled;
  };
  auto holder = [&]() -> Lazy<> {
    co_await mutex.Lock();
    JoinHandle<WaitStatus> a = co_await SpawnAndLetItQueue(&sched, try_waiter());
    JoinHandle<bool> b = co_await SpawnAndLetItQueue(&sched, lock_waiter());
    JoinHandle<WaitStatus> c = co_await SpawnAndLetItQueue(&sched, try_waiter());
    EXPECT_TRUE(a.Cancel());
    EXPECT_TRUE(b.Cancel());
    EXPECT_EQ(co_await std::move(a), WaitStatus::kCancelled);
    mutex.Unlock();                      // b (uncancellable) is next, then c
    EXPECT_TRUE(co_await std::move(b));  // it got the lock although cancelled
    EXPECT_EQ(co_await std::move(c), WaitStatus::kOk);
  };
  Spawn(sched, holder()).Get();
  EXPECT_FALSE(mutex.IsLocked());
}

// A cancel callback of a waiting coroutine cancels another waiter whose callback cancels
// the first one back, while both wait for the same mutex: no deadlock, both leave.
TEST(MutexTest, MutuallyCancellingWaitersDoNotDeadlock) {
  TaskScheduler sched;
  sched.Start(2);
  Mutex mutex;
  CoroutineRef refs[2];
  std::atomic<int> registered{0};
  auto waiter = [&](int i) -> Lazy<WaitStatus> {
    auto cancel_other = [&, i](CancelReason) { refs[1 - i].Cancel(); };
    CancelCallback callback(cancel_other);
    registered.fetch_add(1);
    const WaitStatus status = co_await mutex.TryLockUntil(kTaskDeadlineInfinite);
    if (status == WaitStatus::kOk) mutex.Unlock();
    co_return status;
  };
  auto holder = [&]() -> Lazy<> {
    co_await mutex.Lock();
    JoinHandle<WaitStatus> a = Spawn(sched, waiter(0), {.child_of_current = false});
    JoinHandle<WaitStatus> b = Spawn(sched, waiter(1), {.child_of_current = false});
    refs[0] = a.Ref();
    refs[1] = b.Ref();
    while (registered.load() != 2) co_await Yield();
    a.Cancel();
    EXPECT_EQ(co_await std::move(a), WaitStatus::kCancelled);
    EXPECT_EQ(co_await std::move(b), WaitStatus::kCancelled);
    mutex.Unlock();
    EXPECT_FALSE(mutex.IsLocked());
  };
  Spawn(sched, holder()).Get();
  refs[0] = refs[1] = CoroutineRef();
}

TEST(MutexTest, StopEndsCancellableWaitsWithShutdownAndLockWaitsGetTheLock) {
  std::atomic<int> queued{0};
  std::atomic<bool> try_done{false};
  WaitStatus try_status = WaitStatus::kOk;
  bool lock_waiter_ran = false;
  JoinHandle<void> owner, try_waiter, lock_waiter;
  {
    TaskScheduler sched;
    sched.Start(2);
    Mutex mutex;
    auto owner_body = [&]() -> Lazy<> {
      co_await mutex.Lock();
      queued.fetch_add(1);
      // Holds the lock until the scheduler stops (shutdown ends this wait), and until the
      // cancellable waiter has left (else the lock might be handed to it first).
      EXPECT_EQ(co_await WaitSignal(), WakeReason::kShutdown);
      while (!try_done.load()) co_await Yield();
      mutex.Unlock();
    };
    auto try_body = [&]() -> Lazy<> {
      queued.fetch_add(1);
      try_status = co_await mutex.TryLockUntil(kTaskDeadlineInfinite);
      if (try_status == WaitStatus::kOk) mutex.Unlock();
      try_done.store(true);
    };
    auto lock_body = [&]() -> Lazy<> {
      queued.fetch_add(1);
      co_await mutex.Lock();
      lock_waiter_ran = true;
      mutex.Unlock();
    };
    owner = Spawn(sched, owner_body());
    while (queued.load() != 1) std::this_thread::yield();
    try_waiter = Spawn(sched, try_body());
    lock_waiter = Spawn(sched, lock_body());
    while (queued.load() != 3) std::this_thread::yield();
    std::this_thread::sleep_for(milliseconds(5));  // let them queue (not required)
    sched.Stop();
    EXPECT_TRUE(owner.IsDone() && try_waiter.IsDone() && lock_waiter.IsDone());
    EXPECT_FALSE(mutex.IsLocked());
  }
  EXPECT_EQ(try_status, WaitStatus::kShutdown);
  EXPECT_TRUE(lock_waiter_ran);
  owner.Get();
  try_waiter.Get();
  lock_waiter.Get();
}

// Counters without atomics inside the critical section, incremented by coroutines on four
// workers with every way of locking; TSan checks that the mutex orders them.
TEST(MutexStressTest, MutualExclusionOnFourWorkers) {
  constexpr int kCoroutines = 8;
  const int kRounds = static_cast<int>(StressIterations(4000, 10));
  TaskScheduler sched;
  sched.Start(4);
  Mutex mutex;
  std::int64_t counter = 0;  // guarded by mutex
  std::int64_t shadow = 0;   // guarded by mutex; read-modify-written across a Yield
  int inside = 0;            // guarded by mutex
  auto body = [&](int c) -> Lazy<std::int64_t> {
    std::minstd_rand random(c + 1);
    std::int64_t mine = 0;
    for (int r = 0; r < kRounds; ++r) {
      const int how = static_cast<int>(random() % 4);
      if (how == 0) {
        co_await mutex.Lock();
      } else if (how == 1) {
        if (!mutex.TryLock()) continue;
      } else if (how == 2) {
        const WaitStatus locked =
            co_await mutex.TryLockUntil(DeadlineAfter(microseconds(random() % 100)));
        if (locked != WaitStatus::kOk) continue;
      } else {
        (co_await mutex.LockGuard()).Release();
      }
      EXPECT_EQ(inside++, 0);
      const std::int64_t seen = shadow;
      ++counter;
      if (random() % 16 == 0) co_await Yield();  // hold the lock across a suspension
      shadow = seen + 1;
      --inside;
      ++mine;
      mutex.Unlock();
    }
    co_return mine;
  };
  std::vector<JoinHandle<std::int64_t>> handles;
  for (int c = 0; c < kCoroutines; ++c) handles.push_back(Spawn(sched, body(c)));
  std::int64_t acquired = 0;
  for (JoinHandle<std::int64_t>& handle : handles) acquired += handle.Get();
  EXPECT_EQ(counter, acquired);
  EXPECT_EQ(shadow, acquired);
  EXPECT_GT(acquired, 0);
  EXPECT_FALSE(mutex.IsLocked());
}

// Unlock hands off while waiters' deadlines expire, another thread cancels some of them
// and signals the others (CoroutineRef::Signal/Wakeup): each TryLockUntil ends exactly once, the
// lock is never held twice, and never lost (the last Unlock leaves the mutex free; a lost hand-off
// would leave it locked forever).
TEST(MutexStressTest, HandOffRacesWithDeadlinesAndCancellation) {
  constexpr int kWaiters = 6;
  const int kRounds = static_cast<int>(StressIterations(300, 10));
  TaskScheduler sched;
  sched.Start(2);
  Mutex mutex;
  int inside = 0;            // guarded by mutex
  std::int64_t granted = 0;  // guarded by mutex
  for (int round = 0; round < kRounds; ++round) {
    std::minstd_rand random(round + 1);
    std::atomic<int> statuses[4] = {};
    auto waiter = [&](unsigned seed) -> Lazy<> {
      std::minstd_rand local(seed);
      const TaskDeadline deadline =
          local() % 4 == 0 ? kTaskDeadlineInfinite : DeadlineAfter(microseconds(local() % 200));
      const WaitStatus status = co_await mutex.TryLockUntil(deadline);
      statuses[static_cast<int>(status)].fetch_add(1);
      if (status != WaitStatus::kOk) co_return;
      EXPECT_EQ(inside++, 0);
      ++granted;
      --inside;
      mutex.Unlock();
    };
    auto holder = [&]() -> Lazy<> {
      co_await mutex.Lock();
      std::vector<JoinHandle<void>> waiters;
      for (int i = 0; i < kWaiters; ++i) {
        waiters.push_back(Spawn(sched, waiter(random()), {.child_of_current = false}));
      }
      co_await SleepFor(microseconds(random() % 150));
      // Cancels the even waiters; fires external Wakeup/Signal at the odd ones, which must
      // not end (or be mistaken for the grant of) a mutex wait.
      std::thread canceller([&] {
        for (int i = 0; i < kWaiters; ++i) {
          if (i % 2 == 0) {
            waiters[i].Cancel();
          } else {
            waiters[i].Signal();
            waiters[i].Wakeup();
          }
        }
      });
      mutex.Unlock();  // races with the deadlines and the canceller
      canceller.join();
      for (JoinHandle<void>& handle : waiters) co_await std::move(handle);
    };
    Spawn(sched, holder()).Get();
    int total = 0;
    for (auto& status : statuses) total += status.load();
    ASSERT_EQ(total, kWaiters) << round;
    EXPECT_EQ(statuses[static_cast<int>(WaitStatus::kShutdown)].load(), 0);
    ASSERT_FALSE(mutex.IsLocked()) << "the lock was lost in round " << round;
  }
  EXPECT_GT(granted, 0);
}

// The example of coro/README.md ("Mutex, semaphore, event").
coro::Mutex readme_mutex;
std::map<std::string, int> readme_table;  // guarded by readme_mutex

Lazy<> Add(std::string key) {
  MutexGuard guard = co_await readme_mutex.LockGuard();
  ++readme_table[key];
  co_await Yield();
}

Lazy<bool> AddWithin(std::string key, std::chrono::milliseconds budget) {
  const WaitStatus locked = co_await readme_mutex.TryLockUntil(DeadlineAfter(budget));
  if (locked != WaitStatus::kOk) co_return false;
  MutexGuard guard(readme_mutex, std::adopt_lock);
  ++readme_table[key];
  co_return true;
}

TEST(MutexTest, ReadmeExample) {
  TaskScheduler sched;
  sched.Start(2);
  std::vector<JoinHandle<void>> adds;
  std::vector<JoinHandle<bool>> timed;
  for (int i = 0; i < 10; ++i) {
    adds.push_back(Spawn(sched, Add("a")));
    timed.push_back(Spawn(sched, AddWithin("b", seconds(60))));
  }
  for (JoinHandle<void>& handle : adds) handle.Get();
  for (JoinHandle<bool>& handle : timed) EXPECT_TRUE(handle.Get());
  EXPECT_EQ(readme_table["a"], 10);
  EXPECT_EQ(readme_table["b"], 10);
}

#ifndef NDEBUG
template <typename Body>
void RunInCoroutine(Body body) {
  TaskScheduler sched;
  sched.Start(1);
  Spawn(sched, body()).Get();
}

TEST(MutexDeathTest, UnlockOfAnUnlockedMutexDies) {
  auto body = []() -> Lazy<> {
    Mutex mutex;
    mutex.Unlock();
    co_return;
  };
  EXPECT_DEATH(RunInCoroutine(body), "Unlock of a coro::Mutex that is not locked");
}

TEST(MutexDeathTest, UnlockByANonOwnerDies) {
  auto run = [] {
    TaskScheduler sched;
    sched.Start(1);
    Mutex mutex;
    auto owner = [&]() -> Lazy<> {
      co_await mutex.Lock();
      co_return;
    };
    // Keep the owner's state alive (unjoined handle), so its address is not reused.
    JoinHandle<void> owner_handle = Spawn(sched, owner());
    owner_handle.WaitFor(seconds(60));
    auto other = [&]() -> Lazy<> {
      mutex.Unlock();
      co_return;
    };
    Spawn(sched, other()).Get();
  };
  EXPECT_DEATH(run(), "Unlock of a coro::Mutex by a coroutine that does not own it");
}

TEST(MutexDeathTest, LockingAMutexTwiceDies) {
  auto body = []() -> Lazy<> {
    Mutex mutex;
    co_await mutex.Lock();
    co_await mutex.Lock();
  };
  EXPECT_DEATH(RunInCoroutine(body), "waits for a coro::Mutex it already owns");
}

TEST(MutexDeathTest, DestroyingALockedMutexDies) {
  auto body = []() -> Lazy<> {
    Mutex mutex;
    co_await mutex.Lock();
  };
  EXPECT_DEATH(RunInCoroutine(body), "destroyed while locked");
}

#endif

TEST(MutexDeathTest, UseOutsideASpawnedCoroutineDies) {
  Mutex mutex;
  EXPECT_DEATH(mutex.TryLock(), "coro::Mutex used outside a spawned coroutine");
}

}  // namespace
}  // namespace fairsched::coro
