// Planted bugs: the explorer must find each one. Every scratch copy below repeats one of the
// library's algorithms (the front queue, the task state machine, AutoResetEvent) with a
// `Bug` parameter that changes one step; the kNone copy is checked to pass, so the copies
// are faithful, and every other value must produce a counterexample in the same scenario
// the real code passes. These tests pass only when the explorer reports the bug with its
// expected message; each prints how many schedules the depth-first search (bound 2) and the random search needed.
#include <cstdint>
#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "tests/explore/front_queue_scenario.h"
#include "tests/explore/seeded_bug_util.h"
#include "tests/explore/auto_reset_event_scenario.h"
#include "tests/explore/task_wake_scenario.h"

namespace fairsched {
namespace {

using testing::QueueItem;

// --- Front queue (queues/mpsc_queue.h): Dmitry Vyukov's queue, one exchange per push, one
// item per pop, a stub node. Push: P1 null the item's link, P2 exchange the tail, P3 link
// the previous tail to the item. Pop hands out an item only once it has a successor, checks
// the tail to tell "last item" from "a push is in flight", and puts the stub behind the last
// item to hand it out. Same steps as the shipped queue (memory orders aside: every step
// here is seq_cst). ---

enum class VyukovBug {
  kNone,
  kMissingLink,            // P3 left out: the item never becomes reachable
  kNullLinkAfterExchange,  // P1 after P2: may overwrite the next producer's link
  kNoInFlightCheck,        // Pop appends the stub without asking whether a push is in flight
  kStoreInsteadOfExchange,  // P2 as a load + a store of the tail: a racing push is lost
  kWasEmptyFromFirstLoad,   // Push answers "was empty" from a tail load before P2
  kNoLinkReadAfterStub,     // Pop takes the stub as head's successor without reading the link
};

template <VyukovBug kBug>
class ScratchVyukovQueue {
 public:
  bool Push(QueueItem* item) {
    if constexpr (kBug == VyukovBug::kWasEmptyFromFirstLoad) {
      const bool looked_empty = tail_.load() == &stub_;
      Append(item);
      return looked_empty;
    }
    return Append(item) == &stub_;
  }
  QueueItem* Pop() {
    QueueItem* head = head_.load();
    QueueItem* next = Link(head).load();
    if (head == &stub_) {
      if (next == nullptr) return nullptr;
      head = next;
      next = Link(head).load();
    }
    if (next == nullptr) {
      if constexpr (kBug != VyukovBug::kNoInFlightCheck) {
        if (tail_.load() != head) {  // a push is in flight behind `head`
          head_.store(head);
          return nullptr;
        }
      }
      Append(&stub_);
      if constexpr (kBug == VyukovBug::kNoLinkReadAfterStub) {
        next = &stub_;
      } else {
        next = Link(head).load();
      }
      if (next == nullptr) {
        head_.store(head);
        return nullptr;
      }
    }
    head_.store(next);
    return head;
  }
  bool IsEmpty() { return head_.load() == &stub_ && tail_.load() == &stub_; }

 private:
  static AtomicRef<QueueItem*> Link(QueueItem* node) { return AtomicRef<QueueItem*>(node->next); }
  QueueItem* Append(QueueItem* node) {
    if constexpr (kBug != VyukovBug::kNullLinkAfterExchange) Link(node).store(nullptr);
    QueueItem* prev;
    if constexpr (kBug == VyukovBug::kStoreInsteadOfExchange) {
      prev = tail_.load();
      tail_.store(node);
    } else {
      prev = tail_.exchange(node);
    }
    if constexpr (kBug == VyukovBug::kNullLinkAfterExchange) Link(node).store(nullptr);
    if constexpr (kBug != VyukovBug::kMissingLink) Link(prev).store(node);
    return prev;
  }

  QueueItem stub_;
  Atomic<QueueItem*> tail_{&stub_};
  Atomic<QueueItem*> head_{&stub_};
};

// --- Task state machine (sched/task.h). ---

enum class TaskBug {
  kNone,
  kWakeLoadThenStore,     // TryWake as load + store instead of fetch_or
  kExpiryStoreNoCas,      // expiry tests WAITING, then stores WAITING|WOKEN (no CAS)
  kBeginLoadThenClear,    // BeginExecution as load + store(0) instead of exchange(0)
  kReceiveSkipsWokenTest,  // sched-role does not test WOKEN before the PENDING -> WAITING CAS
  kWakeRelaxedAbsorb       // TryWake returns after a relaxed load that finds the task woken
};

// The production memory orders (sched/task.h), so that happens-before is checked too.
template <TaskBug kBug>
struct ScratchTaskOps {
  struct Object {
    Object* next = nullptr;
    Atomic<std::uint8_t> state{0};
  };
  static constexpr std::uint8_t kWaiting = 1;
  static constexpr std::uint8_t kWoken = 2;
  static constexpr std::uint8_t kSignaled = 4;

  static bool TryPendingToWaiting(Object& task) {
    std::uint8_t expected = 0;
    return task.state.compare_exchange_strong(expected, kWaiting, std::memory_order_release,
                                              std::memory_order_relaxed);
  }
  static bool TryWaitingToReady(Object& task) {
    if constexpr (kBug == TaskBug::kExpiryStoreNoCas) {
      if (task.state.load() != kWaiting) return false;
      task.state.store(kWaiting | kWoken);
      return true;
    }
    std::uint8_t expected = kWaiting;
    return task.state.compare_exchange_strong(expected, kWaiting | kWoken,
                                              std::memory_order_relaxed, std::memory_order_relaxed);
  }
  static bool TryWake(Object& task, std::uint8_t bits) {
    std::uint8_t old;
    if constexpr (kBug == TaskBug::kWakeLoadThenStore) {
      old = task.state.load();
      task.state.store(static_cast<std::uint8_t>(old | bits));
    } else {
      if constexpr (kBug == TaskBug::kWakeRelaxedAbsorb) {
        // Planted (a bug fixed earlier): already woken with these bits,
        // absorbed without writing, so nothing is released.
        old = task.state.load(std::memory_order_relaxed);
        if ((old & kWoken) != 0 && (old & bits) == bits) return false;
      }
      old = task.state.fetch_or(bits, std::memory_order_acq_rel);
    }
    return (old & (kWaiting | kWoken)) == kWaiting;
  }
  static bool IsWoken(Object& task) {
    // Planted: the sched-role never sees WOKEN on a task from the front queue, so a task a
    // waker pushed there goes through the CAS-failure path and stays in the wait queue.
    if constexpr (kBug == TaskBug::kReceiveSkipsWokenTest) return false;
    return (task.state.load() & kWoken) != 0;
  }
  static bool BeginExecution(Object& task) {
    std::uint8_t old;
    if constexpr (kBug == TaskBug::kBeginLoadThenClear) {
      old = task.state.load();
      task.state.store(0);
    } else {
      old = task.state.load(std::memory_order_relaxed);
      if (old != 0) old = task.state.exchange(0, std::memory_order_acquire);
    }
    return (old & kSignaled) != 0;
  }
  static std::uint8_t StateBits(Object& task) { return task.state.load(); }
};

// --- AutoResetEvent (sync/auto_reset_event.cc), infinite waits only. ---

enum class SignalBug {
  kNone,
  kCountReadBeforeSet,  // Send reads the waiter count before setting the bit
  kNoRecheckBeforeWait  // Receive registers, then waits without re-checking the bit
};

template <SignalBug kBug>
class ScratchSignal {
 public:
  void Send() {
    if constexpr (kBug == SignalBug::kCountReadBeforeSet) {
      const bool sleeper = waiters_.load() != 0;
      if (flag_.exchange(true)) return;
      if (!sleeper) return;
    } else {
      if (flag_.exchange(true)) return;
      if (waiters_.load() == 0) return;
    }
    { MutexLock lock(mu_); }
    cv_.notify_one();
  }
  void Receive() {
    if (TryReceive()) return;
    MutexLock lock(mu_);
    waiters_.fetch_add(1);
    if constexpr (kBug == SignalBug::kNoRecheckBeforeWait) {
      do {
        cv_.wait(lock);
      } while (!flag_.exchange(false));
    } else {
      while (!flag_.exchange(false)) cv_.wait(lock);
    }
    waiters_.fetch_sub(1);
  }
  bool TryReceive() {
    if (!flag_.load()) return false;
    return flag_.exchange(false);
  }

 private:
  Atomic<bool> flag_{false};
  Atomic<std::uint32_t> waiters_{0};
  Mutex mu_;
  ConditionVariable cv_;
};

// --- Harness. ---

// The explorer's failure messages (sync/explore/internal/runtime.h) that a planted bug may
// end in.
constexpr const char* kSpinLivelock = "livelock: every thread is blocked or spinning in CpuRelax";
constexpr const char* kStepLivelock =
    "livelock: more than max_steps steps in one schedule (an endless loop: a spin loop without "
    "CpuRelax, a corrupted (cyclic) structure, or threads waiting for each other forever)";
constexpr const char* kDeadlock = "deadlock: every thread is blocked";

// Random schedules tried per planted bug: a cross-check, not a guarantee (some bugs need
// tens of thousands).
constexpr std::uint64_t kRandomSchedules = 2000;

explore::Result Search(void (*scenario)(), explore::Options::Strategy strategy) {
  explore::Options options;
  options.strategy = strategy;
  options.preemption_bound = 2;
  options.max_executions =
      strategy == explore::Options::Strategy::kRandom ? kRandomSchedules : 20000;
  return explore::Explore(options, scenario);
}

void ExpectCorrectCopyPasses(void (*scenario)(), const char* name) {
  const explore::Result result = Search(scenario, explore::Options::Strategy::kDepthFirst);
  EXPECT_FALSE(result.failed) << name << ": " << result.Report();
  EXPECT_TRUE(result.complete) << name;
  std::printf("correct copy %-32s passes: %llu schedules\n", name,
              static_cast<unsigned long long>(result.executions));
}

// Passes only if the depth-first search fails with exactly `expected` (the whole message,
// without the location of a failed check).
void ExpectBugFound(void (*scenario)(), const char* name, const std::string& expected) {
  const explore::Result dfs = Search(scenario, explore::Options::Strategy::kDepthFirst);
  ASSERT_TRUE(dfs.failed) << name << " not found: " << dfs.Report();
  EXPECT_EQ(testing::FailureWithoutLocation(dfs.failure), expected) << name << ": " << dfs.Report();
  const explore::Result random = Search(scenario, explore::Options::Strategy::kRandom);
  std::printf("planted %-32s found after %5llu schedules depth-first, %s randomly: %s\n", name,
              static_cast<unsigned long long>(dfs.executions),
              random.failed ? std::to_string(random.executions).c_str()
                            : ("NOT FOUND in " + std::to_string(kRandomSchedules)).c_str(),
              dfs.failure.c_str());
  // The first bug report is printed in full once, to show what a report looks like.
  static bool shown = false;
  if (!shown) {
    shown = true;
    std::printf("%s\n", dfs.Report().c_str());
  }
}

template <typename Queue>
void QueueScenario() {
  testing::TwoProducersOneConsumer<Queue>();
}
template <TaskBug kBug>
void TaskScenario() {
  testing::WakersRaceExpiry<ScratchTaskOps<kBug>>(2);
}
template <TaskBug kBug>
void TaskAbsorbScenario() {
  testing::AbsorbedWakeupPublishesTheWakersWrites<ScratchTaskOps<kBug>>();
}
template <SignalBug kBug>
void PingPongScenario() {
  testing::PingPong<ScratchSignal<kBug>>();
}
template <SignalBug kBug>
void TwoSendersScenario() {
  testing::TwoSendersOneReceiver<ScratchSignal<kBug>>();
}

TEST(PlantedBugsTest, CorrectCopiesPass) {
  ExpectCorrectCopyPasses(&QueueScenario<ScratchVyukovQueue<VyukovBug::kNone>>, "vyukov queue");
  ExpectCorrectCopyPasses(&TaskScenario<TaskBug::kNone>, "task state");
  ExpectCorrectCopyPasses(&TaskAbsorbScenario<TaskBug::kNone>, "task absorbed wakeup");
  ExpectCorrectCopyPasses(&PingPongScenario<SignalBug::kNone>, "signal ping-pong");
  ExpectCorrectCopyPasses(&TwoSendersScenario<SignalBug::kNone>, "signal two senders");
}

// A lost item or a lost wakeup leaves the consumer spinning on its wake flag while the
// producers have finished: the spin livelock.

TEST(PlantedBugsTest, VyukovStoreInsteadOfExchange) {
  ExpectBugFound(&QueueScenario<ScratchVyukovQueue<VyukovBug::kStoreInsteadOfExchange>>,
                 "vyukov: P2 as load + store", kSpinLivelock);
}

TEST(PlantedBugsTest, VyukovWasEmptyFromFirstLoad) {
  ExpectBugFound(&QueueScenario<ScratchVyukovQueue<VyukovBug::kWasEmptyFromFirstLoad>>,
                 "vyukov: was-empty from first load", kSpinLivelock);
}

TEST(PlantedBugsTest, VyukovNoLinkReadAfterStub) {
  ExpectBugFound(&QueueScenario<ScratchVyukovQueue<VyukovBug::kNoLinkReadAfterStub>>,
                 "vyukov: no link read after stub", kSpinLivelock);
}

TEST(PlantedBugsTest, VyukovMissingLink) {
  ExpectBugFound(&QueueScenario<ScratchVyukovQueue<VyukovBug::kMissingLink>>,
                 "vyukov: missing link (P3)", kSpinLivelock);
}

TEST(PlantedBugsTest, VyukovNullLinkAfterExchange) {
  ExpectBugFound(&QueueScenario<ScratchVyukovQueue<VyukovBug::kNullLinkAfterExchange>>,
                 "vyukov: P1 after P2", kSpinLivelock);
}

TEST(PlantedBugsTest, VyukovNoInFlightCheck) {
  ExpectBugFound(&QueueScenario<ScratchVyukovQueue<VyukovBug::kNoInFlightCheck>>,
                 "vyukov: no in-flight check", kStepLivelock);
}

TEST(PlantedBugsTest, TaskWakeLoadThenStore) {
  ExpectBugFound(&TaskScenario<TaskBug::kWakeLoadThenStore>, "task: wake load+store",
                 "check failed: the signal was lost");
}

TEST(PlantedBugsTest, TaskExpiryStoreWithoutCas) {
  ExpectBugFound(&TaskScenario<TaskBug::kExpiryStoreNoCas>, "task: expiry without CAS",
                 "check failed: the task was made ready 2 times for one post");
}

TEST(PlantedBugsTest, TaskBeginExecutionLoadThenClear) {
  ExpectBugFound(&TaskScenario<TaskBug::kBeginLoadThenClear>, "task: begin load+clear",
                 "check failed: the signal was lost");
}

TEST(PlantedBugsTest, TaskReceiveSkipsWokenTest) {
  ExpectBugFound(&TaskScenario<TaskBug::kReceiveSkipsWokenTest>, "task: receive skips WOKEN",
                 "check failed: the task is ready but still in the wait queue");
}

TEST(PlantedBugsTest, TaskWakeRelaxedAbsorb) {
  ExpectBugFound(&TaskAbsorbScenario<TaskBug::kWakeRelaxedAbsorb>, "task: relaxed-load absorb",
                 "check failed: data race: a read is not ordered after thread 1's write "
                 "(happens-before)");
}

TEST(PlantedBugsTest, SignalCountReadBeforeSet) {
  ExpectBugFound(&PingPongScenario<SignalBug::kCountReadBeforeSet>, "signal: count read before set",
                 kDeadlock);
}

TEST(PlantedBugsTest, SignalNoRecheckBeforeWait) {
  ExpectBugFound(&PingPongScenario<SignalBug::kNoRecheckBeforeWait>,
                 "signal: no re-check before wait", kDeadlock);
}

}  // namespace
}  // namespace fairsched
