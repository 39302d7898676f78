// SignalWait (io/signal_wait.h): a signal raised in the process reaches the coroutine that
// waits for it (and WaitBlocking), Cancel and the coroutine's own cancellation end a wait
// that no signal ends, the scheduler's Stop is not held up, and the previous handlers come
// back when the SignalWait goes. Linux: the POSIX handler.
#include "io/signal_wait.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

coro::Lazy<IoResult<int>> WaitFor(SignalWait* signals, TaskDeadline deadline) {
  co_return co_await signals->Wait(deadline);
}

TEST(SignalWaitTest, RaisedSigtermReachesTheWaitingCoroutine) {
  TaskScheduler scheduler;
  scheduler.Start(2);
  SignalWait signals;
  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, coro::DeadlineAfter(seconds(20))));
  // Most likely waiting by now; a signal that comes first is returned at once as well.
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_EQ(::raise(SIGTERM), 0);  // the default action would end the test process
  IoResult<int> got = waiter.Get();
  ASSERT_TRUE(got.ok()) << ToString(got.error().code());
  EXPECT_EQ(got.value(), SIGTERM);
  EXPECT_EQ(signals.received(), SIGTERM);
  // Later waits return the same signal at once.
  EXPECT_EQ(coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite)).Get().value(),
            SIGTERM);
  scheduler.Stop();
}

TEST(SignalWaitTest, SigintReachesAPlainThread) {
  SignalWait signals;
  ASSERT_EQ(::raise(SIGINT), 0);
  IoResult<int> got = signals.WaitBlocking(seconds(20));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got.value(), SIGINT);
}

TEST(SignalWaitTest, CancelEndsPendingAndLaterWaits) {
  TaskScheduler scheduler;
  scheduler.Start(2);
  SignalWait signals;
  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  signals.Cancel();
  IoResult<int> got = waiter.Get();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), IoErrorCode::kCancelled);
  IoResult<int> later = coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite)).Get();
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().code(), IoErrorCode::kCancelled);
  EXPECT_EQ(signals.WaitBlocking(seconds(20)).error().code(), IoErrorCode::kCancelled);
  ASSERT_EQ(::raise(SIGTERM), 0);  // still handled, but Cancel came first
  EXPECT_EQ(signals.received(), 0);
  scheduler.Stop();
}

TEST(SignalWaitTest, DeadlineAndCoroutineCancellationEndTheWait) {
  TaskScheduler scheduler;
  scheduler.Start(2);
  SignalWait signals;
  IoResult<int> timed_out =
      coro::Spawn(scheduler, WaitFor(&signals, coro::DeadlineAfter(milliseconds(30)))).Get();
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.error().code(), IoErrorCode::kTimeout);
  EXPECT_EQ(signals.WaitBlocking(milliseconds(30)).error().code(), IoErrorCode::kTimeout);

  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  waiter.Cancel();
  IoResult<int> cancelled = waiter.Get();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error().code(), IoErrorCode::kCancelled);
  scheduler.Stop();
}

// A coroutine still waiting when the scheduler stops ends (kShutdown): Stop returns.
TEST(SignalWaitTest, AWaitingCoroutineDoesNotHoldUpStop) {
  TaskScheduler scheduler;
  scheduler.Start(1);
  SignalWait signals;
  coro::JoinHandle<IoResult<int>> waiter =
      coro::Spawn(scheduler, WaitFor(&signals, kTaskDeadlineInfinite));
  std::this_thread::sleep_for(milliseconds(20));
  scheduler.Stop();
  IoResult<int> got = waiter.Get();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), IoErrorCode::kShutdown);
}

void CountSignal(int) {}

// The handler installed before comes back; a new SignalWait after it works again and does
// not see a signal that arrived for its predecessor.
TEST(SignalWaitTest, RestoresThePreviousHandlerAndCanBeMadeAgain) {
  struct sigaction mine = {};
  mine.sa_handler = &CountSignal;
  sigemptyset(&mine.sa_mask);
  struct sigaction before = {};
  ASSERT_EQ(::sigaction(SIGTERM, &mine, &before), 0);
  {
    SignalWait first;
    ASSERT_EQ(::raise(SIGTERM), 0);
    ASSERT_TRUE(first.WaitBlocking(seconds(20)).ok());
    ASSERT_EQ(::raise(SIGTERM), 0);  // a second one, left in the pipe
  }
  struct sigaction now = {};
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, &CountSignal);
  {
    SignalWait second;
    EXPECT_EQ(second.WaitBlocking(milliseconds(50)).error().code(), IoErrorCode::kTimeout);
    ASSERT_EQ(::raise(SIGINT), 0);
    IoResult<int> got = second.WaitBlocking(seconds(20));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got.value(), SIGINT);
  }
  ASSERT_EQ(::sigaction(SIGTERM, &before, nullptr), 0);
}

}  // namespace
}  // namespace fairsched
