// Self-tests of the interleaving explorer (sync/explore): it finds textbook bugs (a lost
// update, a lock-order deadlock, a lost condition-variable wakeup), passes their fixed
// versions with a complete search, and replays a failing schedule to the same failure.
#include <string>

#include "gtest/gtest.h"
#include "sync/primitives.h"

namespace fairsched {
namespace {

using explore::Check;
using explore::Explore;
using explore::Options;
using explore::Thread;

// Two threads increment a counter; `atomic_increment` picks fetch_add over load + store.
void Increments(bool atomic_increment) {
  Atomic<int> counter{0};
  auto increment = [&] {
    if (atomic_increment) {
      counter.fetch_add(1);
    } else {
      counter.store(counter.load() + 1);
    }
  };
  Thread a(increment);
  Thread b(increment);
  a.Join();
  b.Join();
  Check(counter.load() == 2, "counter is " + std::to_string(counter.load()));
}

TEST(ExplorerTest, FindsLostUpdateDepthFirst) {
  const explore::Result result = Explore(Options{}, [] { Increments(false); });
  ASSERT_TRUE(result.failed) << result.Report();
  EXPECT_NE(result.failure.find("counter is 1"), std::string::npos) << result.Report();
  std::printf("lost update found after %llu schedule(s)\n",
              static_cast<unsigned long long>(result.executions));
}

TEST(ExplorerTest, FindsLostUpdateRandomly) {
  Options options;
  options.strategy = Options::Strategy::kRandom;
  options.max_executions = 1000;
  const explore::Result result = Explore(options, [] { Increments(false); });
  EXPECT_TRUE(result.failed) << result.Report();
}

TEST(ExplorerTest, AtomicIncrementPassesCompleteSearch) {
  const explore::Result result = Explore(Options{}, [] { Increments(true); });
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete);
  // Several interleavings exist (who starts, preemptions inside each thread): not one run.
  EXPECT_GT(result.executions, 1u);
}

TEST(ExplorerTest, ReplayReproducesTheFailure) {
  const explore::Result first = Explore(Options{}, [] { Increments(false); });
  ASSERT_TRUE(first.failed);
  Options options;
  options.replay = first.schedule;
  const explore::Result again = Explore(options, [] { Increments(false); });
  EXPECT_TRUE(again.failed);
  EXPECT_EQ(again.executions, 1u);
  EXPECT_EQ(again.failure, first.failure);
  EXPECT_EQ(again.trace, first.trace);
}

TEST(ExplorerTest, ZeroPreemptionsMissesTheLostUpdateWithBoundOneFindsIt) {
  Options options;
  options.preemption_bound = 0;
  const explore::Result none = Explore(options, [] { Increments(false); });
  EXPECT_FALSE(none.failed) << none.Report();
  EXPECT_TRUE(none.complete);
  options.preemption_bound = 1;
  EXPECT_TRUE(Explore(options, [] { Increments(false); }).failed);
}

TEST(ExplorerTest, FindsLockOrderDeadlock) {
  const explore::Result result = Explore(Options{}, [] {
    Mutex first;
    Mutex second;
    Thread a([&] {
      MutexLock one(first);
      MutexLock two(second);
    });
    Thread b([&] {
      MutexLock two(second);
      MutexLock one(first);
    });
    a.Join();
    b.Join();
  });
  ASSERT_TRUE(result.failed);
  EXPECT_NE(result.failure.find("deadlock"), std::string::npos) << result.Report();
}

// A flag handed over with a condition variable. `notify_under_lock` false sets the flag and
// notifies without the mutex while the waiter tests it under the mutex: the notify can fall
// between the waiter's test and its wait (a lost wakeup, so a deadlock).
void Handoff(bool notify_under_lock) {
  Mutex mu;
  ConditionVariable cv;
  Atomic<bool> ready{false};
  Thread waiter([&] {
    MutexLock lock(mu);
    while (!ready.load()) cv.wait(lock);
  });
  Thread notifier([&] {
    if (notify_under_lock) {
      MutexLock lock(mu);
      ready.store(true);
      cv.notify_one();
    } else {
      ready.store(true);
      cv.notify_one();
    }
  });
  waiter.Join();
  notifier.Join();
}

TEST(ExplorerTest, ConditionVariableHandoff) {
  const explore::Result good = Explore(Options{}, [] { Handoff(true); });
  EXPECT_FALSE(good.failed) << good.Report();
  EXPECT_TRUE(good.complete);
  const explore::Result racy = Explore(Options{}, [] { Handoff(false); });
  EXPECT_TRUE(racy.failed) << racy.Report();
  EXPECT_NE(racy.failure.find("deadlock"), std::string::npos) << racy.Report();
}

TEST(ExplorerTest, SpinWithoutProgressIsALivelock) {
  const explore::Result result = Explore(Options{}, [] {
    Atomic<bool> never{false};
    Thread spinner([&] {
      while (!never.load()) CpuRelax();
    });
    spinner.Join();
  });
  ASSERT_TRUE(result.failed);
  EXPECT_NE(result.failure.find("livelock"), std::string::npos) << result.Report();
}

// A spinner that decided to spin on a value another thread has changed since (and then
// finished) is not stuck: it must get another look before a livelock is declared.
TEST(ExplorerTest, SpinnerGetsAnotherLookAfterTheLastWriterFinished) {
  const explore::Result result = Explore(Options{}, [] {
    Atomic<bool> flag{false};
    Atomic<int> unrelated{0};
    Thread spinner([&] {
      while (true) {
        const bool seen = flag.load();
        unrelated.load();  // a scheduling point between the look and the decision
        if (seen) break;
        CpuRelax();
      }
    });
    Thread writer([&] { flag.store(true); });
    spinner.Join();
    writer.Join();
  });
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete);
}

}  // namespace
}  // namespace fairsched
