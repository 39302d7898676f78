// Tests for the cooperative budget (coro/budget.h): on one worker, a coroutine whose
// operations never suspend (ConsumeBudget in a loop, Receive on a channel that is never
// empty) lets another ready coroutine run at least once per budget; a real suspension
// refills the budget; SetReadyBudget changes it and 0 turns it off; on 2 and 3 workers that
// all flood, a coroutine spawned from outside starts before the floods end; outside a
// spawned coroutine it never suspends.
#include "coro/budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "coro/channel.h"
#include "coro/runtime.h"
#include "sched/task_scheduler.h"

namespace fairsched::coro {
namespace {

// Restores the process-wide budget when a test that changes it ends.
class BudgetTest : public ::testing::Test {
 protected:
  void TearDown() override { SetReadyBudget(kDefaultReadyBudget); }
};

// Two coroutines on one worker: `other` counts its runs (one per Yield) until the flood is
// over; the flood calls `step` `operations` times and measures the longest run of steps
// during which `other` did not run.
class Flood {
 public:
  template <typename Step>
  Lazy<> Run(int operations, Step step) {
    int last_seen = progress_.load();
    int run = 0;
    for (int i = 0; i < operations; ++i) {
      co_await step(i);
      const int now = progress_.load();
      run = now == last_seen ? run + 1 : 1;
      longest_run_ = std::max(longest_run_, run);
      last_seen = now;
    }
    done_.store(true);
  }
  Lazy<> Other() {
    while (!done_.load()) {
      progress_.fetch_add(1);
      co_await Yield();
    }
  }
  int progress() const { return progress_.load(); }
  int longest_run() const { return longest_run_; }

 private:
  std::atomic<int> progress_{0};
  std::atomic<bool> done_{false};
  int longest_run_ = 0;  // the flood's coroutine only
};

// Starts `other` first, so that it is ready (queued) while the flood runs.
template <typename FloodBody>
void RunBeside(Flood* flood, FloodBody body) {
  TaskScheduler sched;
  sched.Start(1);
  JoinHandle<void> other = Spawn(sched, flood->Other());
  Spawn(sched, body()).Get();
  other.Get();
}

TEST_F(BudgetTest, AReadyLoopLetsAnotherCoroutineRunOncePerBudget) {
  Flood flood;
  auto consume = [](int) { return ConsumeBudget(); };
  RunBeside(&flood, [&] { return flood.Run(20 * kDefaultReadyBudget, consume); });
  // The flood yields after every kDefaultReadyBudget operations; each yield puts it behind
  // `other`, which runs once. (Without the budget: one run of 20 budgets, no progress.)
  EXPECT_GE(flood.progress(), 10);
  EXPECT_LE(flood.longest_run(), 2 * kDefaultReadyBudget);
}

TEST_F(BudgetTest, ReceivingFromAChannelThatIsNeverEmptyYieldsToo) {
  constexpr int kValues = 20000;
  Channel<int> channel(kValues);
  for (int i = 0; i < kValues; ++i) ASSERT_EQ(channel.TrySend(i), ChannelStatus::kOk);
  Flood flood;
  auto receive = [&](int i) -> Lazy<> {
    Received<int> got = co_await channel.Receive();
    EXPECT_EQ(got.value(), i);
  };
  RunBeside(&flood, [&] { return flood.Run(kValues, receive); });
  EXPECT_GE(flood.progress(), kValues / kDefaultReadyBudget / 2);
  EXPECT_LE(flood.longest_run(), 2 * kDefaultReadyBudget);
}

TEST_F(BudgetTest, SetReadyBudgetChangesTheRunAndZeroTurnsItOff) {
  SetReadyBudget(16);
  EXPECT_EQ(ReadyBudget(), 16);
  Flood small;
  auto consume = [](int) { return ConsumeBudget(); };
  RunBeside(&small, [&] { return small.Run(1000, consume); });
  EXPECT_GE(small.progress(), 1000 / 16 / 2);
  EXPECT_LE(small.longest_run(), 2 * 16);

  SetReadyBudget(0);
  EXPECT_EQ(ReadyBudget(), 0);
  Flood unbounded;
  RunBeside(&unbounded, [&] { return unbounded.Run(10 * kDefaultReadyBudget, consume); });
  // Nothing made the flood yield: `other` ran at most before it started.
  EXPECT_EQ(unbounded.longest_run(), 10 * kDefaultReadyBudget);
}

// A real suspension (here a Yield) starts a new step with a full budget: operations just
// under the budget on either side of it never yield for the budget.
TEST_F(BudgetTest, ARealSuspensionRefillsTheBudget) {
  TaskScheduler sched;
  sched.Start(1);
  std::atomic<bool> done{false};
  std::atomic<int> runs{0};
  auto other = [&]() -> Lazy<> {
    while (!done.load()) {
      runs.fetch_add(1);
      co_await Yield();
    }
  };
  auto body = [&]() -> Lazy<> {
    co_await Yield();  // a fresh step, `other` queued behind us
    const int start = runs.load();
    for (int i = 0; i < kDefaultReadyBudget; ++i) co_await ConsumeBudget();
    EXPECT_EQ(runs.load(), start);  // the whole budget, no yield
    co_await Yield();
    EXPECT_EQ(runs.load(), start + 1);
    for (int i = 0; i < kDefaultReadyBudget; ++i) co_await ConsumeBudget();
    EXPECT_EQ(runs.load(), start + 1);  // refilled by the Yield
    co_await ConsumeBudget();           // one more than the budget: yields once
    EXPECT_EQ(runs.load(), start + 2);
    done.store(true);
  };
  JoinHandle<void> other_handle = Spawn(sched, other());
  Spawn(sched, body()).Get();
  other_handle.Get();
}

// Every worker busy: on 2 and 3 workers, each worker runs a coroutine whose operations
// never suspend (no worker goes idle). A coroutine spawned from outside then must start
// while they all still run: each budget yield re-posts its flood behind it (the
// scheduler's order bound). A flood stops once the probe has run, or after 5 s; without
// the budget each flood is one long task, so the probe starts only after they stopped.
void ProbeStartsWhileEveryWorkerFloods(int workers) {
  struct Shared {
    std::atomic<int> started{0};
    std::atomic<int> running{0};
    std::atomic<bool> probe_ran{false};
    int running_at_probe = -1;
  } shared;
  auto flood = [](Shared* shared) -> Lazy<> {
    shared->running.fetch_add(1);
    shared->started.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (long i = 1; !shared->probe_ran.load(); ++i) {
      co_await ConsumeBudget();
      if (i % 1024 == 0 && std::chrono::steady_clock::now() > give_up) break;
    }
    shared->running.fetch_sub(1);
  };
  auto probe = [](Shared* shared) -> Lazy<> {
    shared->running_at_probe = shared->running.load();
    shared->probe_ran.store(true);
    co_return;
  };
  TaskScheduler sched;
  sched.Start(workers);
  std::vector<JoinHandle<void>> floods;
  for (int i = 0; i < workers; ++i) floods.push_back(Spawn(sched, flood(&shared)));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (shared.started.load() < workers && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  ASSERT_EQ(shared.started.load(), workers) << "the floods did not all start";
  Spawn(sched, probe(&shared)).Get();
  for (JoinHandle<void>& handle : floods) handle.Get();
  EXPECT_EQ(shared.running_at_probe, workers) << "the probe waited for floods to end";
}

TEST_F(BudgetTest, ACoroutineSpawnedWhileTwoWorkersFloodStartsBeforeTheyEnd) {
  ProbeStartsWhileEveryWorkerFloods(2);
}

TEST_F(BudgetTest, ACoroutineSpawnedWhileThreeWorkersFloodStartsBeforeTheyEnd) {
  ProbeStartsWhileEveryWorkerFloods(3);
}

TEST_F(BudgetTest, OutsideASpawnedCoroutineItNeverSuspends) {
  auto loop = []() -> Lazy<int> {
    for (int i = 0; i < 10 * kDefaultReadyBudget; ++i) co_await ConsumeBudget();
    co_return 1;
  };
  EXPECT_EQ(RunSync(loop()), 1);  // RunSync aborts if the task suspends
}

}  // namespace
}  // namespace fairsched::coro
