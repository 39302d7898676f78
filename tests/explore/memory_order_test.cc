// The library's memory orders under the explorer's C++20 memory model (kCpp20,
// sync/explore/README.md), the evidence behind the table "Memory orders and the scenario
// that justifies each" in tla/README.md.
//
// 1. The existing scenarios on the real code (front queue, AutoResetEvent, Task's state machine)
//    and one of the ready queue, now with weak values: they must still pass.
// 2. For the key orders, a scenario that passes with the shipped order and fails when the
//    order is weakened one step. The library code cannot be weakened from a test, so:
//    - the Dekker pairs of Park/WakeOne (sched/internal/idle.h) and WaitEmpty/
//      CountFinished (sched/task_scheduler.h, sched/post_counters.h) are mirrored here step
//      by step (the real scheduler is too large a scenario for these searches); the Park
//      mirror calls the real ready queue (McspQueue::Consumer::HasMore);
//    - the Vyukov front queue (queues/mpsc_queue.h), AutoResetEvent's non-futex path
//      (sync/auto_reset_event.cc), Task's state byte (sched/task.h), RoleLock (sync/role_lock.h) and
//      the index-published ring shared by McspQueue's block and the scheduler's local batch
//      have scratch copies below whose orders are parameters; the shipped orders are the
//      defaults, and pass the same scenarios (as do the real classes where they fit one).
// Each weakened variant must fail with its own message. The copies can drift from the
// code; each names the function and step it repeats.
// 3. The same publications through the shipped classes, with explore::Data payloads
//    (real_code_order_scenarios.h): they pass here, and tools/mutate's runs show each one
//    failing when the library's order is weakened.
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "queues/mcsp_queue.h"
#include "queues/mpsc_queue.h"
#include "sched/task.h"
#include "sync/auto_reset_event.h"
#include "sync/primitives.h"
#include "sync/role_lock.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/front_queue_scenario.h"
#include "tests/explore/real_code_order_scenarios.h"
#include "tests/explore/real_task_ops.h"
#include "tests/explore/auto_reset_event_scenario.h"
#include "tests/explore/task_wake_scenario.h"

namespace fairsched {

namespace {

using explore::Check;
using explore::Thread;
using testing::PrintCounts;

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;
constexpr std::memory_order kAcquire = std::memory_order_acquire;
constexpr std::memory_order kRelease = std::memory_order_release;
constexpr std::memory_order kAcqRel = std::memory_order_acq_rel;
constexpr std::memory_order kSeqCst = std::memory_order_seq_cst;

explore::Options Cpp20(int bound = 2) {
  explore::Options options;
  options.memory_model = explore::Options::MemoryModel::kCpp20;
  options.preemption_bound = bound;
  return options;
}

template <typename Scenario>
void ExpectPass(const char* name, const explore::Options& options, Scenario scenario) {
  const explore::Result result = explore::Explore(options, scenario);
  PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << name << ": " << result.Report();
  EXPECT_TRUE(result.complete) << name << ": " << result.Report();
}

// The search fails with exactly `message` (a check's text, or the start of a runtime
// failure such as "deadlock: every thread is blocked").
template <typename Scenario>
void ExpectFailure(const char* name, const explore::Options& options, Scenario scenario,
                   const std::string& message) {
  const explore::Result result = explore::Explore(options, scenario);
  PrintCounts(name, result);
  ASSERT_TRUE(result.failed) << name << ": not caught";
  EXPECT_EQ(result.failure.rfind(message, 0), 0u) << name << ": " << result.Report();
}

// --- 1. The real code's scenarios under the C++20 model. ---

using testing::Payload;
using testing::RealTaskOps;

TEST(WeakMemoryScenarioTest, FrontQueueTwoProducersOneConsumer) {
  ExpectPass("cpp20: mpsc 2 producers x 2 items, bound 2", Cpp20(2),
             [] { testing::TwoProducersOneConsumer<MpscQueue<testing::QueueItem>>(); });
}

TEST(WeakMemoryScenarioTest, SignalPingPong) {
  ExpectPass("cpp20: signal ping-pong x2, bound 3", Cpp20(3), &testing::PingPong<AutoResetEvent>);
}

TEST(WeakMemoryScenarioTest, SignalTwoSendersOneReceiver) {
  ExpectPass("cpp20: signal 2 senders 1 receiver, bound 3", Cpp20(3),
             &testing::TwoSendersOneReceiver<AutoResetEvent>);
}

TEST(WeakMemoryScenarioTest, TaskWakersRaceExpiry) {
  ExpectPass("cpp20: task 2 wakers, bound 3", Cpp20(3),
             [] { testing::WakersRaceExpiry<RealTaskOps>(2); });
}

TEST(WeakMemoryScenarioTest, TaskAbsorbedWakeupPublishesTheWakersWrites) {
  ExpectPass("cpp20: task absorbed wakeup, bound 3", Cpp20(3),
             [] { testing::AbsorbedWakeupPublishesTheWakersWrites<RealTaskOps>(); });
}

TEST(WeakMemoryScenarioTest, ReadyQueueOneProducerTwoConsumers) {
  ExpectPass("cpp20: mcsp 1 producer x 2 items, 2 consumers, bound 2", Cpp20(2),
             &testing::ReadyQueueOneProducerTwoConsumers);
}

// --- 2a. Park / WakeOne (sched/internal/idle.h): the ready queue is published with a
// release store (McspQueue::Publish) and re-checked by Park with relaxed loads
// (HasMore). The bare pair needs a seq_cst fence on each side between its write and its
// read (the mirror's defaults); the scheduler has none, because the role's release and
// Park's look at the role sit between those steps (RoleReleaseOrdersThePublication). ---

struct ParkOrders {
  bool publisher_fence = true;                 // a fence before WakeOne's parked_ load
  std::memory_order parked_load = kSeqCst;     // WakeOne: parked_.load
  std::memory_order parked_register = kSeqCst;  // Park: parked_.fetch_add
  bool parker_fence = true;                    // a fence after Park's registration
  // The steps between them in the real code (see RoleReleaseOrdersThePublication): the
  // holder's role_.Unlock() after the publication, Park's role_.IsLocked(seq_cst) look.
  bool role_steps = false;
  std::memory_order role_unlock = kSeqCst;     // RoleLock::Unlock
};

struct ReadyItem {};

// A role holder publishes a ready task and calls WakeOne; a worker parks. Lost wakeup: the
// parker's re-check misses the task and the publisher misses the parker.
void ParkRacesPublish(const ParkOrders& orders) {
  McspQueue<ReadyItem> ready(/*block_size=*/4);
  ReadyItem item;
  Atomic<int> parked{0};
  bool woken = false;  // the publisher's Send; read after the joins
  bool sleeps = false;
  {
    McspQueue<ReadyItem>::Consumer consumer(ready);  // the parker's worker consumer
    Atomic<bool> role_held{true};  // the publisher holds the role
    Thread publisher([&] {
      ready.Push(&item);  // the role holder's MakeReady ... Publish (release store of end)
      if (orders.role_steps) role_held.store(false, orders.role_unlock);
      if (orders.publisher_fence) FenceSeqCst();
      if (parked.load(orders.parked_load) != 0) woken = true;  // ready_event_.Send()
    });
    Thread parker([&] {
      parked.fetch_add(1, orders.parked_register);
      if (orders.parker_fence) FenceSeqCst();
      // Park's look at the role. Its value does not decide here (the front queue is empty,
      // so the parker sleeps either way); its acquire may order the re-check below.
      if (orders.role_steps) role_held.load(kSeqCst);
      sleeps = !consumer.HasMore();  // Park's ReadySeemsNonEmpty re-check
    });
    publisher.Join();
    parker.Join();
  }
  Check(!sleeps || woken, "Park/WakeOne: the parker sleeps past a published task, unwoken");
}

constexpr char kParkLost[] =
    "check failed: Park/WakeOne: the parker sleeps past a published task, unwoken";

TEST(ParkWakeOneOrderTest, ShippedOrdersPass) {
  ExpectPass("cpp20: park/wake, shipped", Cpp20(), [] { ParkRacesPublish({}); });
}
TEST(ParkWakeOneOrderTest, WithoutWakeOnesFenceFails) {
  ParkOrders orders;
  orders.publisher_fence = false;
  ExpectFailure("cpp20: park/wake, no WakeOne fence", Cpp20(),
                [orders] { ParkRacesPublish(orders); }, kParkLost);
}
TEST(ParkWakeOneOrderTest, WithoutParksFenceFails) {
  ParkOrders orders;
  orders.parker_fence = false;
  ExpectFailure("cpp20: park/wake, no Park fence", Cpp20(),
                [orders] { ParkRacesPublish(orders); }, kParkLost);
}
// Why the shipped code needs neither fence (tools/mutate found each deletion surviving
// every test, and the fences were removed): the real publisher releases the role
// (seq_cst store) between its publication and its read of parked_, and Park reads the role
// (seq_cst load) between its registration and its re-check. When the publisher's read
// misses the registration, that read precedes the registration in the seq_cst total order,
// so Park's look at the role follows the release in it and reads it (or a later TryLock,
// which continues its release sequence): it synchronises with the release, and the re-check
// sees the publication. Without both fences this passes; with a release (not seq_cst)
// unlock the look may read the role still held, and the parker is lost again.
TEST(ParkWakeOneOrderTest, RoleReleaseOrdersThePublicationWithoutTheFences) {
  ParkOrders orders;
  orders.publisher_fence = false;
  orders.parker_fence = false;
  orders.role_steps = true;
  ExpectPass("cpp20: park/wake, no fences, role release and look",
             Cpp20(), [orders] { ParkRacesPublish(orders); });
}
TEST(ParkWakeOneOrderTest, WithoutFencesAReleaseUnlockFails) {
  ParkOrders orders;
  orders.publisher_fence = false;
  orders.parker_fence = false;
  orders.role_steps = true;
  orders.role_unlock = kRelease;
  ExpectFailure("cpp20: park/wake, no fences, release unlock", Cpp20(),
                [orders] { ParkRacesPublish(orders); }, kParkLost);
}
// With both fences, parked_'s own orders are not what this pair needs (C++20: fence-fence
// ordering through S): relaxed passes here. parked_ stays seq_cst for its other Dekker
// partners, the front-queue poster (AfterFrontPush) and the role release, which read it
// after seq_cst accesses without a fence.
TEST(ParkWakeOneOrderTest, ParkedCounterOrdersAreNotWhatThisPairNeeds) {
  ParkOrders orders;
  orders.parked_load = kRelaxed;
  orders.parked_register = kRelaxed;
  ExpectPass("cpp20: park/wake, parked_ relaxed, fences kept", Cpp20(),
             [orders] { ParkRacesPublish(orders); });
}

// --- 2b. WaitEmpty / CountFinished (sched/task_scheduler.h, sched/post_counters.h),
// mirrored: the finisher stores its `finished` count and then reads the waiter count; the
// waiter registers and then reads the counters (finished first, then posted). ---

struct EmptyOrders {
  std::memory_order count_finished = kSeqCst;  // PostCounters::CountFinished's store
  std::memory_order waiters_load = kSeqCst;    // CountFinished: empty_waiters_.load
  std::memory_order register_waiter = kSeqCst;  // WaitEmpty: empty_waiters_.fetch_add
  std::memory_order counters_load = kSeqCst;   // PostCounters::AllFinished's loads
};

void WaitEmptyRacesTheLastFinish(const EmptyOrders& orders) {
  Atomic<std::uint64_t> posted{1};  // one post, counted before the threads start
  Atomic<std::uint64_t> finished{0};
  Atomic<int> empty_waiters{0};
  bool notified = false;
  bool sleeps = false;
  Thread finisher([&] {
    finished.store(finished.load(kRelaxed) + 1, orders.count_finished);
    if (empty_waiters.load(orders.waiters_load) > 0) notified = true;  // (then IsEmpty, notify)
  });
  Thread waiter([&] {
    empty_waiters.fetch_add(1, orders.register_waiter);
    const std::uint64_t done = finished.load(orders.counters_load);
    sleeps = posted.load(orders.counters_load) != done;  // the predicate under empty_mu_
  });
  finisher.Join();
  waiter.Join();
  Check(!sleeps || notified, "WaitEmpty: the waiter sleeps after the last finish, unnotified");
}

constexpr char kEmptyLost[] =
    "check failed: WaitEmpty: the waiter sleeps after the last finish, unnotified";

TEST(WaitEmptyOrderTest, ShippedOrdersPass) {
  ExpectPass("cpp20: wait-empty, shipped", Cpp20(), [] { WaitEmptyRacesTheLastFinish({}); });
}
TEST(WaitEmptyOrderTest, CountFinishedReleaseFails) {
  EmptyOrders orders;
  orders.count_finished = kRelease;
  ExpectFailure("cpp20: wait-empty, CountFinished release", Cpp20(),
                [orders] { WaitEmptyRacesTheLastFinish(orders); }, kEmptyLost);
}
TEST(WaitEmptyOrderTest, WaiterCountAcquireLoadFails) {
  EmptyOrders orders;
  orders.waiters_load = kAcquire;
  ExpectFailure("cpp20: wait-empty, empty_waiters_ load acquire", Cpp20(),
                [orders] { WaitEmptyRacesTheLastFinish(orders); }, kEmptyLost);
}
TEST(WaitEmptyOrderTest, RegistrationAcqRelFails) {
  EmptyOrders orders;
  orders.register_waiter = kAcqRel;
  ExpectFailure("cpp20: wait-empty, registration acq_rel", Cpp20(),
                [orders] { WaitEmptyRacesTheLastFinish(orders); }, kEmptyLost);
}
TEST(WaitEmptyOrderTest, AcquireCounterLoadsFail) {
  EmptyOrders orders;
  orders.counters_load = kAcquire;
  ExpectFailure("cpp20: wait-empty, AllFinished acquire", Cpp20(),
                [orders] { WaitEmptyRacesTheLastFinish(orders); }, kEmptyLost);
}

// --- 2c. The Vyukov front queue (queues/mpsc_queue.h): a scratch copy of Push, Pop and
// IsEmpty with the orders as parameters (defaults: the shipped ones). ---

struct MpscOrders {
  std::memory_order p1_null = kRelaxed;    // Append P1: LinkOf(node).store(nullptr)
  std::memory_order p2_tail = kSeqCst;     // Append P2: tail_.exchange
  std::memory_order p3_link = kRelease;    // Append P3: LinkOf(prev).store(node)
  std::memory_order link_load = kAcquire;  // Pop C1/C2/C6: LinkOf(head).load
  std::memory_order c4_tail = kRelaxed;    // Pop C4: tail_.load
};

struct Node {
  Node* next = nullptr;
  explore::Data<int> payload{0};  // written before the push, read after the pop
};

class MpscCopy {
 public:
  explicit MpscCopy(const MpscOrders& orders) : orders_(orders) {}

  bool Push(Node* node) { return Append(node) == Stub(); }

  Node* Pop() {
    Node* const first = head_.load(kRelaxed);
    Node* head = first;
    Node* next = LinkOf(head).load(orders_.link_load);
    if (head == Stub()) {
      if (next == nullptr) return nullptr;
      head = next;
      next = LinkOf(head).load(orders_.link_load);
    }
    if (next == nullptr) {
      if (tail_.load(orders_.c4_tail) != head) {
        SetHead(first, head);
        return nullptr;
      }
      Append(Stub());
      next = LinkOf(head).load(orders_.link_load);
      if (next == nullptr) {
        SetHead(first, head);
        return nullptr;
      }
    }
    SetHead(first, next);
    return head;
  }

  bool IsEmpty(std::memory_order order = kRelaxed) const {
    return IsStub(head_.load(kRelaxed)) && IsStub(tail_.load(order));
  }

 private:
  Node* Append(Node* node) {
    LinkOf(node).store(nullptr, orders_.p1_null);
    Node* const prev = tail_.exchange(node, orders_.p2_tail);
    LinkOf(prev).store(node, orders_.p3_link);
    return prev;
  }
  AtomicRef<Node*> LinkOf(Node* node) {
    return AtomicRef<Node*>(node == Stub() ? stub_next_ : node->next);
  }
  Node* Stub() { return reinterpret_cast<Node*>(&stub_next_); }
  bool IsStub(const Node* node) const {
    return static_cast<const void*>(node) == static_cast<const void*>(&stub_next_);
  }
  void SetHead(Node* old_head, Node* new_head) {
    if (new_head != old_head) head_.store(new_head, kRelaxed);
  }

  const MpscOrders orders_;
  alignas(Node) Node* stub_next_ = nullptr;
  Atomic<Node*> tail_{Stub()};
  Atomic<Node*> head_{Stub()};
};

// Two producers push one node each with a payload; the consumer pops both and reads the
// payloads (explore::Data: a payload read not ordered after its write is a data race).
void PayloadsArePublished(const MpscOrders& orders) {
  MpscCopy queue(orders);
  Node nodes[2];
  Thread consumer([&] {
    int taken = 0;
    while (taken < 2) {
      Node* node = queue.Pop();
      if (node == nullptr) {
        CpuRelax();
        continue;
      }
      Check(node->payload.Read() == 1, "front queue: a popped item's payload is stale");
      ++taken;
    }
  });
  Thread first([&] {
    nodes[0].payload.Write(1);
    queue.Push(&nodes[0]);
  });
  Thread second([&] {
    nodes[1].payload.Write(1);
    queue.Push(&nodes[1]);
  });
  consumer.Join();
  first.Join();
  second.Join();
}

constexpr char kPayloadRace[] = "check failed: data race: a read is not ordered after thread ";

TEST(MpscQueueOrderTest, ShippedOrdersPublishPayloads) {
  ExpectPass("cpp20: mpsc copy payloads, shipped", Cpp20(), [] { PayloadsArePublished({}); });
}
TEST(MpscQueueOrderTest, P3RelaxedIsADataRace) {
  MpscOrders orders;
  orders.p3_link = kRelaxed;
  ExpectFailure("cpp20: mpsc copy, P3 relaxed", Cpp20(),
                [orders] { PayloadsArePublished(orders); }, kPayloadRace);
}
TEST(MpscQueueOrderTest, LinkLoadRelaxedIsADataRace) {
  MpscOrders orders;
  orders.link_load = kRelaxed;
  ExpectFailure("cpp20: mpsc copy, link loads relaxed", Cpp20(),
                [orders] { PayloadsArePublished(orders); }, kPayloadRace);
}

// The scheduler's Dekker pair through P2: a poster pushes into the empty front queue and
// then reads `parked` (AfterFrontPush); a parker registers and then asks IsEmpty(seq_cst)
// (Park). P2's seq_cst exchange is the poster's half.
template <typename Queue, typename Item>
void PostRacesPark(Queue& queue, Item* item) {
  Atomic<int> parked{0};
  bool woken = false;
  bool sleeps = false;
  Thread poster([&] {
    if (queue.Push(item) && parked.load(kSeqCst) != 0) woken = true;
  });
  Thread parker([&] {
    parked.fetch_add(1, kSeqCst);
    sleeps = queue.IsEmpty(kSeqCst);
  });
  poster.Join();
  parker.Join();
  Check(!sleeps || woken, "front queue: the parker sleeps past a post, unwoken");
}

TEST(MpscQueueOrderTest, RealQueueDekkerWithParkPasses) {
  ExpectPass("cpp20: mpsc real, post vs park", Cpp20(), [] {
    MpscQueue<testing::QueueItem> queue;
    testing::QueueItem item;
    PostRacesPark(queue, &item);
  });
}
TEST(MpscQueueOrderTest, P2AcqRelLosesTheParker) {
  MpscOrders orders;
  orders.p2_tail = kAcqRel;
  ExpectFailure("cpp20: mpsc copy, P2 acq_rel, post vs park", Cpp20(),
                [orders] {
                  MpscCopy queue(orders);
                  Node node;
                  PostRacesPark(queue, &node);
                },
                "check failed: front queue: the parker sleeps past a post, unwoken");
}

// --- 2d. AutoResetEvent (sync/auto_reset_event.cc, the mutex/condition-variable path the explorer runs): a
// scratch copy with the orders as parameters (defaults: the shipped ones). ---

struct SignalOrders {
  std::memory_order send_exchange = kSeqCst;  // Send: flag_.exchange(1)
  std::memory_order send_waiters = kSeqCst;   // Send: waiters_.load
  std::memory_order register_waiter = kSeqCst;  // ReceiveUntil: waiters_.fetch_add
  std::memory_order recheck = kSeqCst;        // ReceiveUntil: flag_.exchange(0)
  std::memory_order clear = kAcquire;         // TryClear: flag_.exchange(0)
};

class SignalCopy {
 public:
  explicit SignalCopy(const SignalOrders& orders) : orders_(orders) {}

  void Send() {
    if (flag_.exchange(1, orders_.send_exchange) != 0) return;
    if (waiters_.load(orders_.send_waiters) == 0) return;
    { MutexLock lock(mu_); }
    cv_.notify_one();
  }

  void Receive() {
    if (TryClear()) return;
    MutexLock lock(mu_);
    waiters_.fetch_add(1, orders_.register_waiter);
    while (flag_.exchange(0, orders_.recheck) == 0) cv_.wait(lock);
    waiters_.fetch_sub(1, kRelaxed);
  }

 private:
  bool TryClear() {
    if (flag_.load(kRelaxed) == 0) return false;
    return flag_.exchange(0, orders_.clear) != 0;
  }

  const SignalOrders orders_;
  Atomic<std::uint32_t> flag_{0};
  Atomic<std::uint32_t> waiters_{0};
  Mutex mu_;
  ConditionVariable cv_;
};

// Ping-pong with the payload in an explore::Data: each side reads what the other wrote
// before its Send (a data race if a Receive does not acquire it). `Event` is the copy or
// the real AutoResetEvent (section 3).
template <typename Event>
void PingPongWithPayload(Event& ping, Event& pong) {
  explore::Data<int> payload(0);
  Thread a([&] {
    payload.Write(1);
    ping.Send();
    pong.Receive();
    Check(payload.Read() == 2, "signal: pong payload");
  });
  Thread b([&] {
    ping.Receive();
    Check(payload.Read() == 1, "signal: ping payload");
    payload.Write(2);
    pong.Send();
  });
  a.Join();
  b.Join();
}

void SignalPingPong(const SignalOrders& orders) {
  SignalCopy ping(orders);
  SignalCopy pong(orders);
  PingPongWithPayload(ping, pong);
}

void SignalOneSenderOneReceiver(const SignalOrders& orders) {
  SignalCopy signal(orders);
  Thread receiver([&] { signal.Receive(); });
  Thread sender([&] { signal.Send(); });
  receiver.Join();
  sender.Join();
}

TEST(SignalOrderTest, ShippedOrdersPass) {
  ExpectPass("cpp20: signal copy ping-pong, shipped", Cpp20(3), [] { SignalPingPong({}); });
  ExpectPass("cpp20: signal copy 1 sender 1 receiver, shipped", Cpp20(3),
             [] { SignalOneSenderOneReceiver({}); });
}
TEST(SignalOrderTest, TryClearRelaxedIsADataRace) {
  SignalOrders orders;
  orders.clear = kRelaxed;
  ExpectFailure("cpp20: signal copy, TryClear relaxed", Cpp20(3),
                [orders] { SignalPingPong(orders); }, kPayloadRace);
}
TEST(SignalOrderTest, SendReleaseDropsTheSendersWrites) {
  // seq_cst -> acquire (no release half): the bit no longer carries the payload.
  SignalOrders orders;
  orders.send_exchange = kAcquire;
  ExpectFailure("cpp20: signal copy, Send exchange acquire", Cpp20(3),
                [orders] { SignalPingPong(orders); }, kPayloadRace);
}
// The lost-wakeup pair. Weakening ONE of its four seq_cst accesses one step (to acq_rel,
// or acquire for the load) does not lose a wakeup under C++20: both sides write flag_ with
// read-modify-writes, so a re-check that reads 0 is released to the Send exchange that
// reads it next (later in flag_'s modification order), and the sender's waiters_ load then
// sees the registration through happens-before. Only when the re-check also loses its
// release half (acquire) and the Send's waiters_ load is not seq_cst is a wakeup lost.
TEST(SignalOrderTest, OneWeakenedDekkerAccessStillPasses) {
  for (int which = 0; which < 4; ++which) {
    SignalOrders orders;
    if (which == 0) orders.send_exchange = kAcqRel;
    if (which == 1) orders.send_waiters = kAcquire;
    if (which == 2) orders.register_waiter = kAcqRel;
    if (which == 3) orders.recheck = kAcqRel;
    ExpectPass("cpp20: signal copy, one Dekker access weakened", Cpp20(3),
               [orders] { SignalOneSenderOneReceiver(orders); });
  }
}
TEST(SignalOrderTest, AcquireRecheckAndAcquireWaiterLoadLoseAWakeup) {
  SignalOrders orders;
  orders.recheck = kAcquire;
  orders.send_waiters = kAcquire;
  ExpectFailure("cpp20: signal copy, re-check acquire + waiters load acquire", Cpp20(3),
                [orders] { SignalOneSenderOneReceiver(orders); },
                "deadlock: every thread is blocked");
}

// --- 2e. Task's state byte (sched/task.h): a scratch copy of the transitions with the
// orders as template parameters (defaults: the shipped ones), driven by the scenarios of
// task_wake_scenario.h. ---

struct TaskOrders {
  std::memory_order wake = kAcqRel;    // TryWake: state_.fetch_or
  std::memory_order take = kAcquire;   // BeginExecution: state_.exchange(0)
};

template <TaskOrders kOrders>
struct TaskCopyOps {
  static constexpr std::uint8_t kWaiting = 1;
  static constexpr std::uint8_t kWoken = 2;
  static constexpr std::uint8_t kSignaled = 4;
  struct Object {
    Object* next = nullptr;  // the front queue's link
    Atomic<std::uint8_t> state{0};
  };
  static bool TryPendingToWaiting(Object& task) {
    std::uint8_t expected = 0;
    return task.state.compare_exchange_strong(expected, kWaiting, kRelease, kRelaxed);
  }
  static bool TryWaitingToReady(Object& task) {
    std::uint8_t expected = kWaiting;
    return task.state.compare_exchange_strong(expected, kWaiting | kWoken, kRelaxed, kRelaxed);
  }
  static bool TryWake(Object& task, std::uint8_t bits) {
    const std::uint8_t old = task.state.fetch_or(bits, kOrders.wake);
    return (old & (kWaiting | kWoken)) == kWaiting;
  }
  static bool IsWoken(const Object& task) { return (task.state.load(kRelaxed) & kWoken) != 0; }
  static bool BeginExecution(Object& task) {
    std::uint8_t old = task.state.load(kRelaxed);
    if (old != 0) old = task.state.exchange(0, kOrders.take);
    return (old & kSignaled) != 0;
  }
  // The probe, as for the real Task above (a relaxed RMW: the newest value, no acquire).
  static std::uint8_t StateBits(const Object& task) {
    return const_cast<Object&>(task).state.fetch_or(0, kRelaxed);
  }
};

constexpr char kAbsorbedRace[] =
    "check failed: data race: a read is not ordered after thread 1's write (happens-before)";

TEST(TaskOrderTest, ShippedOrdersPass) {
  ExpectPass("cpp20: task copy absorbed wakeup, shipped", Cpp20(3),
             [] { testing::AbsorbedWakeupPublishesTheWakersWrites<TaskCopyOps<TaskOrders{}>>(); });
  ExpectPass("cpp20: task copy 2 wakers, shipped", Cpp20(3),
             [] { testing::WakersRaceExpiry<TaskCopyOps<TaskOrders{}>>(2); });
}
TEST(TaskOrderTest, TryWakeAcquireDropsTheWakersWrites) {
  ExpectFailure("cpp20: task copy, TryWake acquire", Cpp20(3),
                [] {
                  testing::AbsorbedWakeupPublishesTheWakersWrites<
                      TaskCopyOps<TaskOrders{kAcquire, kAcquire}>>();
                },
                kAbsorbedRace);
}
TEST(TaskOrderTest, BeginExecutionRelaxedTakesNothing) {
  ExpectFailure("cpp20: task copy, BeginExecution exchange relaxed", Cpp20(3),
                [] {
                  testing::AbsorbedWakeupPublishesTheWakersWrites<
                      TaskCopyOps<TaskOrders{kAcqRel, kRelaxed}>>();
                },
                kAbsorbedRace);
}

// --- 2f. RoleLock (sync/role_lock.h): the handover of sched-only state, and the Dekker
// pair of a role release with a poster (WorkerMain's release-time check of the front queue
// vs AfterFrontPush). A scratch copy with the orders as parameters. ---

struct RoleOrders {
  std::memory_order take = kAcquire;   // TryLock: held_.exchange(true)
  std::memory_order unlock = kSeqCst;  // Unlock: held_.store(false)
};

class RoleLockCopy {
 public:
  explicit RoleLockCopy(const RoleOrders& orders) : orders_(orders) {}
  bool TryLock() {
    if (held_.load(kRelaxed)) return false;
    return !held_.exchange(true, orders_.take);
  }
  void Unlock() { held_.store(false, orders_.unlock); }
  bool IsLocked(std::memory_order order = kRelaxed) const { return held_.load(order); }

 private:
  const RoleOrders orders_;
  Atomic<bool> held_{false};
};

void RoleHandover(const RoleOrders& orders) {
  RoleLockCopy role(orders);
  testing::RoleHandoverOf(role);
}

// The role holder releases the role and then looks at the front queue (seq_cst); a poster
// pushes into the empty front queue and then checks the role (seq_cst). One must see the
// other, or the post waits with nobody to take it.
void RoleReleaseRacesPost(const RoleOrders& orders) {
  RoleLockCopy role(orders);
  MpscQueue<testing::QueueItem> front;
  testing::QueueItem item;
  bool holder_sees_post = false;
  bool poster_sees_free_role = false;
  Check(role.TryLock(), "the holder takes the free role");
  Thread holder([&] {
    role.Unlock();
    holder_sees_post = !front.IsEmpty(kSeqCst);
  });
  Thread poster([&] {
    if (front.Push(&item)) poster_sees_free_role = !role.IsLocked(kSeqCst);
  });
  holder.Join();
  poster.Join();
  Check(holder_sees_post || poster_sees_free_role,
        "role release: a post into the empty front queue is seen by nobody");
}

TEST(RoleLockOrderTest, ShippedOrdersPass) {
  ExpectPass("cpp20: role copy handover, shipped", Cpp20(), [] { RoleHandover({}); });
  ExpectPass("cpp20: role copy release vs post, shipped", Cpp20(),
             [] { RoleReleaseRacesPost({}); });
}
TEST(RoleLockOrderTest, TryLockRelaxedIsADataRace) {
  ExpectFailure("cpp20: role copy, TryLock relaxed", Cpp20(),
                [] { RoleHandover({kRelaxed, kSeqCst}); }, kPayloadRace);
}
TEST(RoleLockOrderTest, UnlockReleaseLosesAPost) {
  ExpectFailure("cpp20: role copy, Unlock release", Cpp20(),
                [] { RoleReleaseRacesPost({kAcquire, kRelease}); },
                "check failed: role release: a post into the empty front queue is seen by "
                "nobody");
}

// --- 2g. Index-published rings: the ready queue's block fast path (McspQueue::Publish and
// Consumer::PopUpTo within one block) and the scheduler's local batch (AppendLocal,
// TakeLocalBatch). Scratch copies of those steps with the orders as parameters (defaults:
// the shipped ones). A producer writes items whose payloads are explore::Data and publishes
// them by storing an index; a taker loads the index, reads the slots and claims them with a
// CAS, then reads the payloads. ---

struct RingOrders {
  std::memory_order publish = kRelease;  // Publish: end.store / AppendLocal: local_tail.store
  std::memory_order observe = kAcquire;  // PopUpTo: end.load / TakeLocalBatch: local_tail.load
};

class RingCopy {
 public:
  static constexpr std::uint32_t kCapacity = 2;
  explicit RingCopy(const RingOrders& orders) : orders_(orders) {}

  // Producer (one thread): write the slot, then publish the new end.
  void Push(Payload* item) {
    slots_[end_].store(item, kRelaxed);
    ++end_;
    published_.store(end_, orders_.publish);
  }

  // Any thread: takes everything published (up to kCapacity), oldest first; returns how
  // many. The slots are read before the CAS claims them (a loser drops what it read).
  std::uint32_t TakeAll(Payload** out) {
    std::uint32_t begin = begin_.load(kAcquire);
    while (true) {
      const std::uint32_t end = published_.load(orders_.observe);
      if (begin == end) return 0;
      for (std::uint32_t i = begin; i < end; ++i) out[i - begin] = slots_[i].load(kRelaxed);
      if (begin_.compare_exchange_weak(begin, end, kAcqRel, kAcquire)) return end - begin;
    }
  }

 private:
  const RingOrders orders_;
  Atomic<Payload*> slots_[kCapacity] = {};
  std::uint32_t end_ = 0;  // producer-only
  Atomic<std::uint32_t> published_{0};
  Atomic<std::uint32_t> begin_{0};
};

// The owner appends two items; the owner and an idle worker take batches; every item is
// taken once and its payload is read after the take.
void RingPublishesPayloads(const RingOrders& orders) {
  RingCopy ring(orders);
  Payload items[2];
  int taken_by[2] = {0, 0};
  auto take = [&](int k) {
    Payload* out[RingCopy::kCapacity];
    const std::uint32_t count = ring.TakeAll(out);
    for (std::uint32_t i = 0; i < count; ++i) {
      Check(out[i]->value.Read() == 1, "ring: a taken item's payload is stale");
    }
    taken_by[k] += static_cast<int>(count);
  };
  Thread owner([&] {
    for (Payload& item : items) {
      item.value.Write(1);
      ring.Push(&item);
    }
    take(0);
  });
  Thread idle([&] { take(1); });
  owner.Join();
  idle.Join();
  take(0);  // whatever is left, after the joins
  Check(taken_by[0] + taken_by[1] == 2, "ring: items lost or taken twice");
}

TEST(RingOrderTest, ShippedOrdersPass) {
  ExpectPass("cpp20: ring copy, shipped", Cpp20(), [] { RingPublishesPayloads({}); });
}
TEST(RingOrderTest, RelaxedPublishIsADataRace) {
  ExpectFailure("cpp20: ring copy, publish relaxed", Cpp20(),
                [] { RingPublishesPayloads({kRelaxed, kAcquire}); }, kPayloadRace);
}
TEST(RingOrderTest, RelaxedObserveIsADataRace) {
  ExpectFailure("cpp20: ring copy, observe relaxed", Cpp20(),
                [] { RingPublishesPayloads({kRelease, kRelaxed}); }, kPayloadRace);
}

// --- 3. The production code itself, with explore::Data payloads. ---
// The copies above show which step each order protects; these scenarios run the same
// publications through the shipped classes, so that weakening the order in the library
// (tools/mutate, docs/testing.md "Mutation score") fails a test here too.

TEST(RealCodeOrderTest, SignalPingPongPublishesThePayload) {
  // Receive's TryClear (acquire) and Send's exchange (seq_cst, a release) carry the payload.
  ExpectPass("cpp20: real signal ping-pong with payload", Cpp20(3), [] {
    AutoResetEvent ping;
    AutoResetEvent pong;
    PingPongWithPayload(ping, pong);
  });
}

TEST(RealCodeOrderTest, RoleLockHandsOverSchedState) {
  // TryLock's acquire pairs with Unlock's release.
  ExpectPass("cpp20: real role lock handover", Cpp20(), [] {
    RoleLock role;
    testing::RoleHandoverOf(role);
  });
}

TEST(RealCodeOrderTest, PendingToWaitingPublishesTheRolesWrites) {
  ExpectPass("cpp20: real task pending -> waiting publishes", Cpp20(3),
             &testing::PendingToWaitingPublishesTheRolesWrites);
}

TEST(RealCodeOrderTest, LocalBatchPublishesTheOwnersWrites) {
  ExpectPass("hb: real local batch publishes the owner's writes", explore::Options{},
             &testing::LocalBatchPublishesTheOwnersWrites);
}

}  // namespace
}  // namespace fairsched
