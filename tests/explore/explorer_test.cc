// Self-tests of the interleaving explorer (sync/explore): it finds textbook bugs (a lost
// update, a lock-order deadlock, a lost condition-variable wakeup), passes their fixed
// versions with a complete search, and replays a failing schedule to the same failure.
#include <optional>
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

// Two threads spin on a flag that a third holds (a claim, as in LocalBatch::Claim): their
// looks change nothing, so they must not keep handing the core to each other; the holder
// runs, releases, and both get through. (When a look counted as a move, each spinner made
// the other runnable again and the search never ended.)
TEST(ExplorerTest, TwoSpinnersOnAFlagTheThirdHolds) {
  Options options;
  options.preemption_bound = 2;
  const explore::Result result = Explore(options, [] {
    Atomic<bool> held{true};
    Atomic<int> through{0};
    auto wait_then_count = [&] {
      while (held.load(std::memory_order_acquire)) CpuRelax();
      through.fetch_add(1);
    };
    Thread first(wait_then_count);
    Thread second(wait_then_count);
    Thread holder([&] { held.store(false, std::memory_order_release); });
    first.Join();
    second.Join();
    holder.Join();
    explore::Check(through.load() == 2, "a spinner did not get through");
  });
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

// --- Happens-before and explore::Data: the message-passing litmus tests. A producer
// writes plain data and then a flag; a consumer that sees the flag reads the data. The
// C++ memory model makes the read race-free exactly when the flag publishes the write.

enum class Publish {
  kReleaseAcquire,       // store(release) / load(acquire): race-free
  kRelaxed,              // store(relaxed) / load(relaxed): a data race
  kRelaxedLoad,          // store(release) / load(relaxed): a data race (nothing acquired)
  kFences,               // relaxed accesses between a release and an acquire fence: race-free
  kReleaseSequenceRmw,   // release store, another thread's relaxed RMW, acquire load of the
                         // RMW's value: race-free (the RMW continues the release sequence)
  kBrokenByPlainStore,   // ... but a relaxed plain store instead of the RMW ends the
                         // sequence (C++20): a data race
  kMutex,                // data under a mutex: race-free
};

void MessagePassing(Publish how) {
  explore::Data<int> data(0);
  Atomic<int> flag{0};
  Mutex mu;
  bool published = false;  // guarded by mu (kMutex)
  const bool rmw = how == Publish::kReleaseSequenceRmw || how == Publish::kBrokenByPlainStore;
  Thread producer([&] {
    if (how == Publish::kMutex) {
      MutexLock lock(mu);
      data.Write(42);
      published = true;
      return;
    }
    data.Write(42);
    switch (how) {
      case Publish::kRelaxed:
        flag.store(1, std::memory_order_relaxed);
        break;
      case Publish::kFences:
        FenceSeqCst();
        flag.store(1, std::memory_order_relaxed);
        break;
      default:
        flag.store(1, std::memory_order_release);
        break;
    }
  });
  // A third thread that bumps the flag from 1 to 2 (a relaxed RMW, or a relaxed store).
  std::optional<Thread> bumper;
  if (rmw) {
    bumper.emplace([&] {
      if (how == Publish::kReleaseSequenceRmw) {
        int expected = 1;
        flag.compare_exchange_strong(expected, 2, std::memory_order_relaxed,
                                     std::memory_order_relaxed);
      } else if (flag.load(std::memory_order_relaxed) == 1) {
        flag.store(2, std::memory_order_relaxed);
      }
    });
  }
  Thread consumer([&] {
    if (how == Publish::kMutex) {
      MutexLock lock(mu);
      if (published) Check(data.Read() == 42, "stale data");
      return;
    }
    int seen;
    switch (how) {
      case Publish::kRelaxed:
      case Publish::kRelaxedLoad:
        seen = flag.load(std::memory_order_relaxed);
        break;
      case Publish::kFences:
        seen = flag.load(std::memory_order_relaxed);
        FenceSeqCst();
        break;
      default:
        seen = flag.load(std::memory_order_acquire);
        break;
    }
    // With the bumper: read only through its value, so the release sequence decides.
    if (rmw ? seen == 2 : seen != 0) Check(data.Read() == 42, "stale data");
  });
  producer.Join();
  if (bumper) bumper->Join();
  consumer.Join();
}

void ExpectRaceFree(Publish how, const char* name) {
  const explore::Result result = Explore(Options{}, [how] { MessagePassing(how); });
  EXPECT_FALSE(result.failed) << name << ": " << result.Report();
  EXPECT_TRUE(result.complete) << name;
}
void ExpectRace(Publish how, const char* name) {
  const explore::Result result = Explore(Options{}, [how] { MessagePassing(how); });
  ASSERT_TRUE(result.failed) << name << ": no race found";
  EXPECT_NE(result.failure.find("data race: a read is not ordered after thread 1's write"),
            std::string::npos)
      << name << ": " << result.Report();
}

TEST(ExplorerHappensBeforeTest, ReleaseAcquirePublishes) {
  ExpectRaceFree(Publish::kReleaseAcquire, "release/acquire");
}
TEST(ExplorerHappensBeforeTest, RelaxedFlagIsADataRace) { ExpectRace(Publish::kRelaxed, "relaxed"); }
TEST(ExplorerHappensBeforeTest, RelaxedLoadAcquiresNothing) {
  ExpectRace(Publish::kRelaxedLoad, "release store, relaxed load");
}
TEST(ExplorerHappensBeforeTest, FencesPublishRelaxedAccesses) {
  ExpectRaceFree(Publish::kFences, "fences");
}
TEST(ExplorerHappensBeforeTest, AReadModifyWriteContinuesTheReleaseSequence) {
  ExpectRaceFree(Publish::kReleaseSequenceRmw, "release sequence through an RMW");
}
TEST(ExplorerHappensBeforeTest, APlainStoreEndsTheReleaseSequence) {
  ExpectRace(Publish::kBrokenByPlainStore, "release sequence ended by a plain store");
}
TEST(ExplorerHappensBeforeTest, AMutexPublishes) { ExpectRaceFree(Publish::kMutex, "mutex"); }

// Write-write and read-write races are found too; thread start and join order accesses.
TEST(ExplorerHappensBeforeTest, UnorderedWritesAndJoinOrder) {
  const explore::Result racy = Explore(Options{}, [] {
    explore::Data<int> data(0);
    Thread a([&] { data.Write(1); });
    Thread b([&] { data.Write(2); });
    a.Join();
    b.Join();
  });
  ASSERT_TRUE(racy.failed);
  EXPECT_NE(racy.failure.find("data race: a write is not ordered after"), std::string::npos)
      << racy.Report();
  const explore::Result ordered = Explore(Options{}, [] {
    explore::Data<int> data(0);
    data.Write(1);  // before the threads start
    Thread a([&] { data.Write(data.Read() + 1); });
    a.Join();
    Thread b([&] { data.Write(data.Read() + 1); });  // after a's join
    b.Join();
    Check(data.Read() == 3, "lost write");
  });
  EXPECT_FALSE(ordered.failed) << ordered.Report();
}

}  // namespace
}  // namespace fairsched
