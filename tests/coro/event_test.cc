// Tests for coro::Event (coro/event.h): Set wakes every waiter and later waits return at
// once, deadlines, cancellation and Stop, Set racing with deadlines and cancellation
// (stress: each wait ends exactly once, nobody who waited for a set event is lost), and
// misuse messages.
#include "coro/event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
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
using std::chrono::seconds;
using testing::StressIterations;

TEST(EventTest, SetWakesAllWaitersAndLaterWaitsReturnAtOnce) {
  TaskScheduler sched;
  sched.Start(2);
  Event event;
  int payload = 0;  // written before Set, read by the woken waiters
  std::atomic<int> started{0};
  auto waiter = [&]() -> Lazy<int> {
    started.fetch_add(1);
    EXPECT_EQ(co_await event.Wait(), WaitStatus::kOk);
    co_return payload;
  };
  std::vector<JoinHandle<int>> handles;
  for (int i = 0; i < 5; ++i) handles.push_back(Spawn(sched, waiter()));
  while (started.load() != 5) std::this_thread::yield();
  EXPECT_FALSE(event.IsSet());
  payload = 7;
  event.Set();
  event.Set();  // idempotent
  EXPECT_TRUE(event.IsSet());
  for (JoinHandle<int>& handle : handles) EXPECT_EQ(handle.Get(), 7);
  EXPECT_EQ(Spawn(sched, waiter()).Get(), 7);
}

TEST(EventTest, DeadlineCancelAndStop) {
  std::atomic<int> started{0};
  JoinHandle<WaitStatus> cancelled, stopped;
  {
    TaskScheduler sched;
    sched.Start(2);
    Event event;
    auto timed = [&]() -> Lazy<WaitStatus> {
      co_return co_await event.Wait(DeadlineAfter(milliseconds(10)));
    };
    EXPECT_EQ(Spawn(sched, timed()).Get(), WaitStatus::kDeadline);
    auto forever = [&]() -> Lazy<WaitStatus> {
      started.fetch_add(1);
      co_return co_await event.Wait();
    };
    cancelled = Spawn(sched, forever());
    stopped = Spawn(sched, forever());
    while (started.load() != 2) std::this_thread::yield();
    EXPECT_TRUE(cancelled.Cancel());
    EXPECT_EQ(cancelled.Get(), WaitStatus::kCancelled);
    sched.Stop();
  }
  EXPECT_EQ(stopped.Get(), WaitStatus::kShutdown);
}

// Set races with short deadlines and a cancelling thread: every wait ends exactly once
// (kOk, kDeadline or kCancelled), and a waiter that gets kOk really sees the event set.
TEST(EventStressTest, SetRacesWithDeadlinesAndCancellation) {
  constexpr int kWaiters = 6;
  const int kRounds = static_cast<int>(StressIterations(300, 10));
  TaskScheduler sched;
  sched.Start(2);
  for (int round = 0; round < kRounds; ++round) {
    std::minstd_rand random(round + 3);
    auto event = std::make_unique<Event>();
    int payload = 0;
    std::atomic<int> statuses[4] = {};
    auto waiter = [&](unsigned seed) -> Lazy<> {
      std::minstd_rand local(seed);
      const TaskDeadline deadline =
          local() % 4 == 0 ? kTaskDeadlineInfinite : DeadlineAfter(microseconds(local() % 200));
      const WaitStatus status = co_await event->Wait(deadline);
      statuses[static_cast<int>(status)].fetch_add(1);
      if (status == WaitStatus::kOk) {  // only Set ends a wait with kOk
        EXPECT_TRUE(event->IsSet());
        EXPECT_EQ(payload, round + 1);
      }
    };
    std::vector<JoinHandle<void>> handles;
    for (int i = 0; i < kWaiters; ++i) handles.push_back(Spawn(sched, waiter(random())));
    // Cancels the even waiters; external Wakeup/Signal at the odd ones must not end their
    // waits (only Set, the deadline or a cancellation does).
    std::thread canceller([&] {
      for (int i = 0; i < kWaiters; ++i) {
        if (i % 2 == 0) {
          handles[i].Cancel();
        } else {
          handles[i].Signal();
          handles[i].Wakeup();
        }
      }
    });
    std::this_thread::sleep_for(microseconds(random() % 150));
    payload = round + 1;
    event->Set();
    canceller.join();
    // A waiter with an infinite deadline that missed the Set would hang here.
    for (JoinHandle<void>& handle : handles) handle.Get();
    int total = 0;
    for (auto& status : statuses) total += status.load();
    ASSERT_EQ(total, kWaiters) << round;
    EXPECT_EQ(statuses[static_cast<int>(WaitStatus::kShutdown)].load(), 0);
  }
}

#ifndef NDEBUG
TEST(EventDeathTest, DestroyingAnEventWithWaitersDies) {
  auto run = [] {
    TaskScheduler sched;
    sched.Start(1);
    auto* event = new Event();
    auto waiter = [event]() -> Lazy<> { co_await event->Wait(); };
    // Runs after the waiter has queued: one worker, posted in this order.
    auto destroyer = [event]() -> Lazy<> {
      delete event;
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
