// Randomized API sequences for coroutines, checked against a reference model of the promises
// in coro/spawn.h, cancel.h, mutex.h, semaphore.h, event.h, channel.h and combinators.h
// (docs/testing.md, "Randomized API sequences").
//
// A scenario is drawn from one 64-bit seed (std::mt19937_64): 1-3 workers, one coro::Mutex,
// one Semaphore (1-3 permits), one Event, one Channel<Item> (capacity 1-4) and 4-20
// top-level coroutines of eight roles: lockers (Lock or TryLockUntil, holding the lock across
// a Yield or a short sleep), permit users (Acquire / AcquireUntil of 1..count permits),
// senders (numbered items, Send with a short deadline), receivers (Receive, with or without
// a deadline, until the channel is closed), event waiters, sleepers (Yield, SleepFor,
// WaitSignal), combiners (WhenAll, WhenAny and WithTimeout over leaf coroutines that sleep,
// lock or receive one item) and parents (children that they join, cancel and join, or
// detach). The test's own thread then cancels, signals and detaches top-level coroutines at
// random moments, sets the event, and either lets everything finish (then closes the channel
// and joins) or calls Stop in the middle. The seed fixes the scenario, not the interleaving.
//
// The model, checked during and after each run:
//   - every coroutine (top-level, child, combinator leaf) ran its body to the end exactly
//     once and its frame was destroyed exactly once; no frame is alive after the run;
//   - a wait reports kCancelled only if the coroutine or an ancestor was cancelled (leaves
//     under a combinator may be cancelled by it), kShutdown only after Stop began, and an
//     Event wait kOk only once the event is set;
//   - the mutex has one owner at a time and is granted in strictly increasing order of
//     arrival (each Lock / TryLockUntil takes a ticket under a test lock around the
//     awaiter's await_ready, which is where it takes the lock or joins the wait list), and
//     is free at the end;
//   - the semaphore never has more permits out than it holds, and all are back at the end;
//   - the channel delivers every item whose Send returned kOk exactly once (to a receiver or
//     to the final drain), never an item whose Send failed, and each receiver (and the
//     drain) sees each sender's items in the order they were sent;
//   - Stop returns and every join returns within the hang limit.
//
// Entry point: RunScenario (one seed), for tests/sched/random_sequences.h's RunMany, which
// also reads the environment (FAIRSCHED_RANDOM_SEED, FAIRSCHED_RANDOM_RUNS).
#ifndef FAIRSCHED_TESTS_CORO_RANDOM_SEQUENCES_H_
#define FAIRSCHED_TESTS_CORO_RANDOM_SEQUENCES_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coro/channel.h"
#include "coro/combinators.h"
#include "coro/event.h"
#include "coro/mutex.h"
#include "coro/runtime.h"
#include "coro/semaphore.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/sched/random_sequences.h"

namespace fairsched::testing::coro_random_sequences {

using random_sequences::Outcome;
using std::chrono::microseconds;
using std::chrono::milliseconds;

namespace internal {

enum class Role : std::uint8_t {
  kLocker, kPermits, kSender, kReceiver, kEventWaiter, kSleeper, kCombiner, kParent,
  // Only under a combiner: one short job (a sleep, a lock held across a sleep, or one Receive).
  kLeaf,
};
inline constexpr int kRoles = 8;  // the top-level roles

// What a parent does with one child.
enum class ChildFate : std::uint8_t { kJoin, kCancelThenJoin, kDetach };

struct Item {
  int sender = 0;
  int seq = 0;
};

// One coroutine of the scenario, drawn before the run. Children and leaves have plans too.
struct Plan {
  Role role = Role::kSleeper;
  int id = 0;
  int parent = -1;   // -1: top-level
  bool leaf_may_be_cancelled = false;  // under a combinator, which cancels losers
  int rounds = 1;
  int permits = 1;
  bool use_deadline = false;
  microseconds wait{0};   // a wait's deadline, from its start
  microseconds hold{0};   // work while holding the mutex / permits (0: Yield)
  std::uint32_t variant = 0;
  std::vector<int> children;  // kParent, kCombiner: plan ids
  std::vector<ChildFate> fates;
};

enum class ActionKind : std::uint8_t { kCancel, kSignal, kDetach, kSetEvent, kPause };
struct Action {
  ActionKind kind = ActionKind::kPause;
  int target = 0;  // a top-level plan id
  microseconds pause{0};
};

struct Scenario {
  int workers = 1;
  std::size_t capacity = 1;
  std::int64_t permits = 1;
  std::vector<Plan> plans;  // index == id
  std::vector<int> top_level;
  std::vector<Action> actions;
  bool stop_midway = false;
  std::string config;
};

// What the model tracks of one coroutine.
struct Record {
  std::atomic<int> finished{0};   // the body reached its end
  std::atomic<int> destroyed{0};  // its frame (parameters included) went
  // Release/acquire: set before the Cancel call, read by the coroutine after the wakeup the
  // Cancel causes; the flag must be visible when the coroutine checks why its wait ended.
  std::atomic<bool> cancel_requested{false};
  // Written only by the coroutine itself, read by the checker after its frame is gone.
  std::vector<Item> received;
  std::vector<std::uint8_t> sent;  // kSender: 1 for each seq whose Send returned kOk
};

struct World {
  explicit World(const Scenario& s)
      : scenario(s), permits(s.permits), channel(s.capacity), records(s.plans.size()) {
    for (const Plan& plan : s.plans) {
      if (plan.role == Role::kSender) records[plan.id].sent.assign(plan.rounds, 0);
    }
  }

  const Scenario& scenario;
  coro::Mutex mutex;
  coro::Semaphore permits;
  coro::Event event;
  coro::Channel<Item> channel;
  std::vector<Record> records;
  std::atomic<int> live_frames{0};
  std::atomic<bool> stop_begun{false};
  std::atomic<int> mutex_holder{-1};
  std::atomic<std::int64_t> permits_out{0};

  // Mutex arrival tickets (ticket_lock) and grants (guarded by `mutex` itself).
  fairsched::Mutex ticket_lock;
  std::uint64_t next_ticket = 0;
  std::vector<std::uint64_t> grants;

  fairsched::Mutex failure_lock;
  std::string failure;

  void Fail(const std::string& what) {
    MutexLock lock(failure_lock);
    if (failure.size() < 2000) failure += "  " + what + "\n";
  }
};

// A coroutine's first parameter: counts the frame while it exists (the argument's temporary
// hands its count over to the parameter copy in the frame).
class FrameToken {
 public:
  FrameToken(World* world, int id) : world_(world), id_(id) { world_->live_frames.fetch_add(1); }
  FrameToken(FrameToken&& other) noexcept
      : world_(std::exchange(other.world_, nullptr)), id_(other.id_) {}
  FrameToken& operator=(FrameToken&&) = delete;
  ~FrameToken() {
    if (world_ == nullptr) return;
    world_->records[id_].destroyed.fetch_add(1);
    // Seq_cst (default): the checker's load of 0 must see every write the coroutine made.
    world_->live_frames.fetch_sub(1);
  }
  World& world() const { return *world_; }
  const Plan& plan() const { return world_->scenario.plans[id_]; }
  Record& record() const { return world_->records[id_]; }

 private:
  World* world_;
  int id_;
};

// Whether `id` or an ancestor was cancelled (or it is a leaf its combinator may cancel).
inline bool MayBeCancelled(World& world, int id) {
  for (int at = id; at >= 0; at = world.scenario.plans[at].parent) {
    if (world.scenario.plans[at].leaf_may_be_cancelled) return true;
    if (world.records[at].cancel_requested.load(std::memory_order_acquire)) return true;
  }
  return false;
}

// Checks a wait's result against what the model allows.
inline void CheckWait(const FrameToken& me, coro::WaitStatus status, bool had_deadline,
                      const char* what) {
  World& world = me.world();
  const int id = me.plan().id;
  if (status == coro::WaitStatus::kCancelled && !MayBeCancelled(world, id) &&
      !world.stop_begun.load()) {
    world.Fail("coroutine " + std::to_string(id) + ": " + what + " returned kCancelled, "
               "but nobody cancelled it");
  }
  if (status == coro::WaitStatus::kShutdown && !world.stop_begun.load()) {
    world.Fail("coroutine " + std::to_string(id) + ": " + what + " returned kShutdown before Stop");
  }
  if (status == coro::WaitStatus::kDeadline && !had_deadline) {
    world.Fail("coroutine " + std::to_string(id) + ": " + what + " without a deadline returned "
               "kDeadline");
  }
}

inline coro::WaitStatus StatusOf(coro::ChannelStatus status) {
  switch (status) {
    case coro::ChannelStatus::kOk:
    case coro::ChannelStatus::kClosed:
    case coro::ChannelStatus::kFull:
    case coro::ChannelStatus::kEmpty:
      return coro::WaitStatus::kOk;
    case coro::ChannelStatus::kDeadline:
      return coro::WaitStatus::kDeadline;
    case coro::ChannelStatus::kCancelled:
      return coro::WaitStatus::kCancelled;
    case coro::ChannelStatus::kShutdown:
      return coro::WaitStatus::kShutdown;
  }
  return coro::WaitStatus::kOk;
}

inline coro::WaitStatus StatusOf(coro::WakeReason reason) {
  return coro::internal::StatusOf(reason);
}

// Wraps a Mutex awaiter: takes an arrival ticket under the world's ticket lock around
// await_ready, where the awaiter either takes the lock or joins the wait list.
template <typename Inner>
struct Ticketed {
  Inner inner;
  World* world;
  std::uint64_t* ticket;
  bool await_ready() {
    MutexLock lock(world->ticket_lock);
    *ticket = world->next_ticket++;
    return inner.await_ready();
  }
  void await_suspend(std::coroutine_handle<> handle) { inner.await_suspend(handle); }
  auto await_resume() { return inner.await_resume(); }
};

inline TaskDeadline WaitDeadline(const Plan& plan) {
  return plan.use_deadline ? coro::DeadlineAfter(plan.wait) : kTaskDeadlineInfinite;
}

// Works for `hold` (a sleep; 0: a Yield). Cancellation or Stop may end the sleep early.
inline coro::Lazy<void> Work(microseconds hold) {
  if (hold.count() == 0) {
    co_await coro::Yield();
  } else {
    co_await coro::SleepFor(hold);
  }
}

// Takes the mutex (Lock, or TryLockUntil with a deadline), checks and records the grant,
// holds it across `plan.hold`, unlocks.
inline coro::Lazy<void> LockOnce(const FrameToken& me) {
  World& world = me.world();
  const Plan& plan = me.plan();
  std::uint64_t ticket = 0;
  coro::WaitStatus status = coro::WaitStatus::kOk;
  if (plan.use_deadline) {
    Ticketed<coro::internal::ListWaitAwaiter<coro::Mutex>> lock{
        world.mutex.TryLockUntil(WaitDeadline(plan)), &world, &ticket};
    status = co_await lock;
    CheckWait(me, status, true, "TryLockUntil");
  } else {
    Ticketed<decltype(world.mutex.Lock())> lock{world.mutex.Lock(), &world, &ticket};
    co_await lock;
  }
  if (status != coro::WaitStatus::kOk) co_return;
  const int was = world.mutex_holder.exchange(plan.id);
  if (was != -1) {
    world.Fail("mutex: coroutine " + std::to_string(plan.id) + " got it while " +
               std::to_string(was) + " held it");
  }
  world.grants.push_back(ticket);
  co_await Work(plan.hold);
  world.mutex_holder.store(-1);
  world.mutex.Unlock();
}

inline coro::Lazy<void> AcquireOnce(const FrameToken& me) {
  World& world = me.world();
  const Plan& plan = me.plan();
  if (plan.use_deadline) {
    const coro::WaitStatus status = co_await world.permits.AcquireUntil(WaitDeadline(plan),
                                                                        plan.permits);
    CheckWait(me, status, true, "AcquireUntil");
    if (status != coro::WaitStatus::kOk) co_return;
  } else {
    co_await world.permits.Acquire(plan.permits);
  }
  const std::int64_t out = world.permits_out.fetch_add(plan.permits) + plan.permits;
  if (out > world.scenario.permits) {
    world.Fail("semaphore: " + std::to_string(out) + " permits out of " +
               std::to_string(world.scenario.permits));
  }
  co_await Work(plan.hold);
  world.permits_out.fetch_sub(plan.permits);
  world.permits.Release(plan.permits);
}

// One Receive; a value goes into this coroutine's record. Returns the status.
inline coro::Lazy<coro::ChannelStatus> ReceiveOnce(const FrameToken& me) {
  const TaskDeadline deadline = WaitDeadline(me.plan());
  coro::Received<Item> got = co_await me.world().channel.Receive(deadline);
  CheckWait(me, StatusOf(got.status()), deadline != kTaskDeadlineInfinite, "Receive");
  if (got.ok()) me.record().received.push_back(got.value());
  co_return got.status();
}

inline coro::Lazy<void> Sleep(const FrameToken& me) {
  const Plan& plan = me.plan();
  switch (plan.variant % 3) {
    case 0:
      co_await coro::Yield();
      break;
    case 1: {
      const coro::WakeReason why = co_await coro::SleepFor(plan.wait);
      CheckWait(me, StatusOf(why), true, "SleepFor");
      break;
    }
    default: {
      // Always bounded: nobody is obliged to signal it.
      const coro::WakeReason why = co_await coro::WaitSignal(coro::DeadlineAfter(plan.wait * 4));
      CheckWait(me, StatusOf(why), true, "WaitSignal");
      break;
    }
  }
}

inline coro::Lazy<int> Leaf(FrameToken me) {
  switch (me.plan().variant % 3) {
    case 0:
      co_await Sleep(me);
      break;
    case 1:
      co_await LockOnce(me);
      break;
    default:
      co_await ReceiveOnce(me);
      break;
  }
  me.record().finished.fetch_add(1);
  co_return me.plan().id;
}

inline coro::Lazy<void> Body(FrameToken me);

inline coro::Lazy<void> RunCombiners(const FrameToken& me) {
  World& world = me.world();
  const Plan& plan = me.plan();
  const std::vector<int>& c = plan.children;  // five leaves
  // Each leaf is made before its co_await (no temporaries with destructors inside one).
  std::vector<coro::Lazy<int>> leaves;
  for (int leaf : c) leaves.push_back(Leaf(FrameToken(&world, leaf)));
  auto [a, b] = co_await coro::WhenAll(std::move(leaves[0]), std::move(leaves[1]));
  if (a != c[0] || b != c[1]) world.Fail("WhenAll returned the wrong values");
  coro::WhenAnyResult<int> any = co_await coro::WhenAny(std::move(leaves[2]), std::move(leaves[3]));
  if (any.index > 1 || any.value != c[2 + any.index]) world.Fail("WhenAny: wrong winner value");
  coro::TimeoutOr<int> timed = co_await coro::WithTimeout(std::move(leaves[4]), plan.wait);
  if (!timed.timed_out() && timed.value() != c[4]) world.Fail("WithTimeout: wrong value");
}

inline coro::Lazy<void> RunChildren(const FrameToken& me) {
  World& world = me.world();
  const Plan& plan = me.plan();
  std::vector<coro::JoinHandle<void>> handles;
  for (int child : plan.children) {
    handles.push_back(coro::SpawnHere(Body(FrameToken(&world, child))));
  }
  co_await coro::Yield();
  for (std::size_t i = 0; i < handles.size(); ++i) {
    switch (plan.fates[i]) {
      case ChildFate::kDetach:
        handles[i].Detach();
        break;
      case ChildFate::kCancelThenJoin:
        world.records[plan.children[i]].cancel_requested.store(true, std::memory_order_release);
        handles[i].Cancel();
        co_await std::move(handles[i]);
        break;
      case ChildFate::kJoin:
        co_await std::move(handles[i]);
        break;
    }
  }
}

inline coro::Lazy<void> RunRole(const FrameToken& me) {
  World& world = me.world();
  const Plan& plan = me.plan();
  switch (plan.role) {
    case Role::kLocker:
      for (int i = 0; i < plan.rounds; ++i) co_await LockOnce(me);
      break;
    case Role::kPermits:
      for (int i = 0; i < plan.rounds; ++i) co_await AcquireOnce(me);
      break;
    case Role::kSender:
      for (int seq = 0; seq < plan.rounds; ++seq) {
        const coro::ChannelStatus status =
            co_await world.channel.Send(Item{plan.id, seq}, coro::DeadlineAfter(plan.wait));
        CheckWait(me, StatusOf(status), true, "Send");
        me.record().sent[seq] = status == coro::ChannelStatus::kOk ? 1 : 0;
        if (seq % 4 == 3) co_await Work(plan.hold);
      }
      break;
    case Role::kReceiver:
      for (;;) {
        const coro::ChannelStatus status = co_await ReceiveOnce(me);
        if (status == coro::ChannelStatus::kClosed || status == coro::ChannelStatus::kCancelled ||
            status == coro::ChannelStatus::kShutdown) {
          break;
        }
      }
      break;
    case Role::kEventWaiter: {
      const TaskDeadline deadline = WaitDeadline(plan);
      const coro::WaitStatus status = co_await world.event.Wait(deadline);
      CheckWait(me, status, deadline != kTaskDeadlineInfinite, "Event::Wait");
      if (status == coro::WaitStatus::kOk && !world.event.IsSet()) {
        world.Fail("event: Wait returned kOk before Set");
      }
      break;
    }
    case Role::kSleeper:
      for (int i = 0; i < plan.rounds; ++i) co_await Sleep(me);
      break;
    case Role::kCombiner:
      co_await RunCombiners(me);
      break;
    case Role::kParent:
      co_await RunChildren(me);
      break;
    case Role::kLeaf:
      break;
  }
}

inline coro::Lazy<void> Body(FrameToken me) {
  co_await RunRole(me);
  me.record().finished.fetch_add(1);
}

// --- Drawing a scenario ---

inline microseconds Short(std::mt19937_64& rng) {
  static constexpr int kChoices[] = {0, 20, 50, 100, 200, 500, 1000, 3000};
  return microseconds(kChoices[rng() % 8]);
}

inline int AddPlan(Scenario& s, std::mt19937_64& rng, Role role, int parent) {
  Plan plan;
  plan.role = role;
  plan.id = static_cast<int>(s.plans.size());
  plan.parent = parent;
  plan.rounds = 1 + static_cast<int>(rng() % 6);
  plan.permits = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(s.permits));
  plan.use_deadline = rng() % 2 == 0;
  plan.wait = Short(rng) + microseconds(10);
  plan.hold = rng() % 3 == 0 ? microseconds(0) : Short(rng);
  plan.variant = static_cast<std::uint32_t>(rng());
  if (role == Role::kSender) plan.rounds = 1 + static_cast<int>(rng() % 24);
  // Receivers mostly time out while senders are busy: a Receive that ends by its deadline
  // just as a value is handed to it is the race the channel must get right.
  if (role == Role::kReceiver) plan.wait = microseconds(10 + rng() % 100);
  s.plans.push_back(plan);
  return plan.id;
}

inline Scenario Draw(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Scenario s;
  s.workers = 1 + static_cast<int>(rng() % 3);
  s.capacity = 1 + rng() % 4;
  s.permits = 1 + static_cast<std::int64_t>(rng() % 3);
  s.stop_midway = rng() % 4 == 0;
  const int top = 4 + static_cast<int>(rng() % 17);
  for (int i = 0; i < top; ++i) {
    const Role role = static_cast<Role>(rng() % kRoles);
    const int id = AddPlan(s, rng, role, -1);
    s.top_level.push_back(id);
    if (role == Role::kCombiner) {
      for (int leaf = 0; leaf < 5; ++leaf) {
        const int child = AddPlan(s, rng, Role::kLeaf, id);
        s.plans[child].leaf_may_be_cancelled = true;
        s.plans[id].children.push_back(child);
      }
    } else if (role == Role::kParent) {
      const int children = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < children; ++k) {
        static constexpr Role kChildRoles[] = {Role::kLocker, Role::kPermits, Role::kSleeper};
        const int child = AddPlan(s, rng, kChildRoles[rng() % 3], id);
        s.plans[id].children.push_back(child);
        s.plans[id].fates.push_back(static_cast<ChildFate>(rng() % 3));
      }
    }
  }
  const int actions = static_cast<int>(rng() % 12);
  for (int i = 0; i < actions; ++i) {
    Action action;
    action.kind = static_cast<ActionKind>(rng() % 5);
    action.target = s.top_level[rng() % s.top_level.size()];
    action.pause = Short(rng);
    s.actions.push_back(action);
  }
  s.config = "workers=" + std::to_string(s.workers) + " coroutines=" +
             std::to_string(s.plans.size()) + " capacity=" + std::to_string(s.capacity) +
             " permits=" + std::to_string(s.permits) + " actions=" + std::to_string(actions) +
             (s.stop_midway ? " stop-midway" : "");
  return s;
}

// --- After the run ---

inline void CheckChannel(World& world, const std::vector<Item>& drained) {
  const Scenario& s = world.scenario;
  std::vector<std::vector<int>> deliveries(s.plans.size());
  auto take = [&](const std::vector<Item>& items, const std::string& who) {
    std::vector<int> last(s.plans.size(), -1);
    for (const Item& item : items) {
      if (item.sender < 0 || item.sender >= static_cast<int>(s.plans.size()) ||
          s.plans[item.sender].role != Role::kSender) {
        world.Fail(who + " received an item from no sender");
        continue;
      }
      if (item.seq <= last[item.sender]) {
        world.Fail(who + " received sender " + std::to_string(item.sender) + "'s item " +
                   std::to_string(item.seq) + " after its item " +
                   std::to_string(last[item.sender]));
      }
      last[item.sender] = item.seq;
      deliveries[item.sender].push_back(item.seq);
    }
  };
  for (const Plan& plan : s.plans) {
    take(world.records[plan.id].received, "coroutine " + std::to_string(plan.id));
  }
  take(drained, "the final drain");
  for (const Plan& plan : s.plans) {
    if (plan.role != Role::kSender) continue;
    std::vector<int> got = deliveries[plan.id];
    std::sort(got.begin(), got.end());
    const std::vector<std::uint8_t>& sent = world.records[plan.id].sent;
    for (int seq = 0; seq < plan.rounds; ++seq) {
      const auto n = std::count(got.begin(), got.end(), seq);
      const int expected = sent[seq];
      if (n != expected) {
        world.Fail("channel: sender " + std::to_string(plan.id) + "'s item " +
                   std::to_string(seq) + (expected ? " (sent, kOk)" : " (not sent)") +
                   " was delivered " + std::to_string(n) + " time(s)");
      }
    }
  }
}

inline void CheckAfterRun(World& world, const std::vector<Item>& drained) {
  const Scenario& s = world.scenario;
  for (const Plan& plan : s.plans) {
    const Record& record = world.records[plan.id];
    if (record.finished.load() != 1 || record.destroyed.load() != 1) {
      world.Fail("coroutine " + std::to_string(plan.id) + ": finished " +
                 std::to_string(record.finished.load()) + " time(s), frame destroyed " +
                 std::to_string(record.destroyed.load()) + " time(s)");
    }
  }
  for (std::size_t i = 1; i < world.grants.size(); ++i) {
    if (world.grants[i] <= world.grants[i - 1]) {
      world.Fail("mutex: arrival " + std::to_string(world.grants[i]) + " got the lock after " +
                 "arrival " + std::to_string(world.grants[i - 1]) + " (not FIFO)");
      break;
    }
  }
  if (world.mutex.IsLocked()) world.Fail("mutex: still locked after the run");
  if (world.permits.Available() != s.permits) {
    world.Fail("semaphore: " + std::to_string(world.permits.Available()) + " permits after the " +
               "run, expected " + std::to_string(s.permits));
  }
  CheckChannel(world, drained);
}

// Polls `done` until it is true or `limit` passes.
template <typename Done>
bool WaitUntil(Done done, milliseconds limit) {
  const TaskDeadline give_up = TaskClock::now() + limit;
  while (!done()) {
    if (TaskClock::now() > give_up) return false;
    std::this_thread::sleep_for(microseconds(100));
  }
  return true;
}

}  // namespace internal

// Runs the scenario of `seed` and checks it. A hang (a join, Stop, or a frame that never
// goes, for `hang_limit`) fails the run; its scheduler and objects are then leaked on
// purpose (threads may still use them) and `hung` is set.
// `home_queues`: the scheduler runs under PostOrder::kHome (else the default order).
inline Outcome RunScenario(std::uint64_t seed, milliseconds hang_limit, bool home_queues) {
  using namespace internal;
  auto scenario = std::make_unique<Scenario>(Draw(seed));
  auto world = std::make_unique<World>(*scenario);
  TaskSchedulerOptions options;
  if (home_queues) options.post_order = PostOrder::kHome;
  auto sched = std::make_unique<TaskScheduler>(options);
  Outcome outcome;
  outcome.seed = seed;
  outcome.config = scenario->config + (home_queues ? ", kHome" : "");
  auto hang = [&](const std::string& what) {
    outcome.hung = true;
    outcome.failure = "  no progress for " + std::to_string(hang_limit.count()) + " ms: " + what +
                      "\n" + world->failure;
    static_cast<void>(scenario.release());
    static_cast<void>(world.release());
    static_cast<void>(sched.release());
    return outcome;
  };

  sched->Start(scenario->workers);
  std::vector<std::optional<coro::JoinHandle<void>>> handles(scenario->plans.size());
  for (int id : scenario->top_level) {
    handles[id].emplace(coro::Spawn(*sched, Body(FrameToken(world.get(), id))));
  }
  const std::size_t stop_at =
      scenario->stop_midway ? static_cast<std::size_t>(seed % (scenario->actions.size() + 1))
                            : scenario->actions.size() + 1;
  std::optional<std::thread> stopper;
  std::atomic<bool> stopped{false};
  auto begin_stop = [&] {
    world->stop_begun.store(true);
    stopper.emplace([&] {
      sched->Stop();
      stopped.store(true);
    });
  };
  for (std::size_t i = 0; i < scenario->actions.size(); ++i) {
    if (i == stop_at) begin_stop();
    const Action& action = scenario->actions[i];
    std::optional<coro::JoinHandle<void>>& handle = handles[action.target];
    switch (action.kind) {
      case ActionKind::kCancel:
        if (!handle.has_value()) break;
        world->records[action.target].cancel_requested.store(true, std::memory_order_release);
        handle->Cancel();
        break;
      case ActionKind::kSignal:
        if (handle.has_value()) handle->Signal();
        break;
      case ActionKind::kDetach:
        if (handle.has_value()) handle->Detach();
        handle.reset();
        break;
      case ActionKind::kSetEvent:
        world->event.Set();
        break;
      case ActionKind::kPause:
        break;
    }
    std::this_thread::sleep_for(action.pause);
  }
  if (!stopper.has_value()) {
    world->event.Set();
    // Senders end on their own (every Send has a deadline); then the receivers see kClosed.
    auto senders_done = [&] {
      for (const Plan& plan : scenario->plans) {
        if (plan.role == Role::kSender && world->records[plan.id].finished.load() == 0) {
          return false;
        }
      }
      return true;
    };
    if (!WaitUntil(senders_done, hang_limit)) return hang("senders did not finish");
    world->channel.Close();
    for (std::optional<coro::JoinHandle<void>>& handle : handles) {
      if (!handle.has_value()) continue;
      if (!handle->WaitFor(hang_limit)) return hang("a join did not return");
      handle->Get();
      handle.reset();
    }
    if (!WaitUntil([&] { return world->live_frames.load() == 0; }, hang_limit)) {
      return hang("a detached coroutine did not finish");
    }
    begin_stop();
  }
  if (!WaitUntil([&] { return stopped.load(); }, hang_limit)) return hang("Stop did not return");
  stopper->join();
  if (!sched->IsEmpty()) world->Fail("IsEmpty() is false after Stop");
  for (std::optional<coro::JoinHandle<void>>& handle : handles) {
    if (!handle.has_value()) continue;
    if (!handle->IsDone()) world->Fail("a coroutine is not done after Stop returned");
    handle->Get();
    handle.reset();
  }
  if (!WaitUntil([&] { return world->live_frames.load() == 0; }, hang_limit)) {
    return hang("a frame is still alive after Stop and the joins");
  }
  std::vector<Item> drained;
  for (;;) {
    coro::Received<Item> item = world->channel.TryReceive();
    if (!item.ok()) break;
    drained.push_back(item.value());
  }
  CheckAfterRun(*world, drained);
  outcome.failure = world->failure;
  return outcome;
}

}  // namespace fairsched::testing::coro_random_sequences

#endif  // FAIRSCHED_TESTS_CORO_RANDOM_SEQUENCES_H_
