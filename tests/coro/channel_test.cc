// Tests for coro::Channel<T> (coro/channel.h): FIFO order of values, TrySend/TryReceive,
// backpressure (a fast producer is held at capacity), FIFO order of waiting senders and
// receivers, Close while both sides wait, deadlines, cancellation and Stop of waiting
// operations, a value or room handed to a waiter that has just left (it goes to the next
// one), move-only values, multi-worker stresses where every value is received exactly once
// (with racing deadlines, and with receivers cancelled from another thread), and misuse
// messages.
#include "coro/channel.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// One worker: spawns `operation` and yields, so that it runs until it waits on the channel
// before the caller goes on.
template <typename T>
Lazy<JoinHandle<T>> StartWaiting(TaskScheduler* sched, Lazy<T> operation) {
  SpawnOptions not_a_child;
  not_a_child.child_of_current = false;
  JoinHandle<T> waiting = Spawn(*sched, std::move(operation), not_a_child);
  co_await Yield();
  co_return waiting;
}

TEST(ChannelTest, ValuesComeOutInOrderAndTryOperationsReportFullEmptyClosed) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(3);
  auto body = [&]() -> Lazy<> {
    EXPECT_EQ(channel.capacity(), 3u);
    EXPECT_EQ(channel.TryReceive().status(), ChannelStatus::kEmpty);
    EXPECT_EQ(co_await channel.Send(1), ChannelStatus::kOk);
    EXPECT_EQ(channel.TrySend(2), ChannelStatus::kOk);
    const int three = 3;
    EXPECT_EQ(channel.TrySend(three), ChannelStatus::kOk);
    EXPECT_EQ(channel.TrySend(4), ChannelStatus::kFull);
    EXPECT_EQ(channel.Size(), 3u);
    Received<int> first = co_await channel.Receive();
    EXPECT_TRUE(first.ok());
    EXPECT_EQ(*first, 1);
    EXPECT_EQ(channel.TryReceive().value(), 2);
    EXPECT_EQ(co_await channel.Send(5), ChannelStatus::kOk);
    EXPECT_TRUE(channel.Close());
    EXPECT_FALSE(channel.Close());
    EXPECT_TRUE(channel.IsClosed());
    EXPECT_EQ(co_await channel.Send(6), ChannelStatus::kClosed);
    EXPECT_EQ(channel.TrySend(6), ChannelStatus::kClosed);
    // Closed: what is buffered still comes out, in order, then kClosed.
    EXPECT_EQ((co_await channel.Receive()).value(), 3);
    EXPECT_EQ(channel.TryReceive().value(), 5);
    EXPECT_EQ((co_await channel.Receive()).status(), ChannelStatus::kClosed);
    EXPECT_EQ(channel.TryReceive().status(), ChannelStatus::kClosed);
  };
  Spawn(sched, body()).Get();
}

TEST(ChannelTest, MoveOnlyValuesAndAFailedTrySendKeepsTheValue) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<std::unique_ptr<int>> channel(1);
  auto body = [&]() -> Lazy<> {
    EXPECT_EQ(co_await channel.Send(std::make_unique<int>(7)), ChannelStatus::kOk);
    auto eight = std::make_unique<int>(8);
    EXPECT_EQ(channel.TrySend(std::move(eight)), ChannelStatus::kFull);
    EXPECT_NE(eight, nullptr);  // not taken
    EXPECT_EQ(*eight, 8);
    Received<std::unique_ptr<int>> got = co_await channel.Receive();
    EXPECT_TRUE(got.ok());
    EXPECT_EQ(*got.value(), 7);
    EXPECT_EQ(channel.TrySend(std::move(eight)), ChannelStatus::kOk);
    EXPECT_EQ(eight, nullptr);
    EXPECT_EQ(*channel.TryReceive().value(), 8);
  };
  Spawn(sched, body()).Get();
}

// A producer much faster than its consumer: it never gets more than capacity values ahead,
// it waits (suspends) while the channel is full, and every value arrives in order.
TEST(ChannelTest, BackpressureHoldsAFastProducerAtCapacity) {
  constexpr int kCapacity = 4;
  constexpr int kValues = 200;
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(kCapacity);
  int sent = 0;  // one worker: plain ints
  auto producer = [&]() -> Lazy<> {
    for (int i = 0; i < kValues; ++i) {
      EXPECT_EQ(co_await channel.Send(i), ChannelStatus::kOk);
      sent = i + 1;
    }
  };
  auto consumer = [&]() -> Lazy<> {
    JoinHandle<void> produce = co_await StartWaiting(&sched, producer());
    // The producer ran until the channel was full and now waits in its fifth Send.
    EXPECT_EQ(sent, kCapacity);
    EXPECT_EQ(channel.Size(), static_cast<std::size_t>(kCapacity));
    for (int i = 0; i < kValues; ++i) {
      Received<int> got = co_await channel.Receive();
      EXPECT_TRUE(got.ok());
      EXPECT_EQ(got.value(), i);
      // Received i: values 0..i are out, at most kCapacity more are in, plus the one whose
      // Send is completing (handed into the ring by this Receive).
      EXPECT_LE(sent, i + 1 + kCapacity);
      EXPECT_LE(channel.Size(), static_cast<std::size_t>(kCapacity));
      if (i % 7 == 0) co_await Yield();
    }
    co_await std::move(produce);
  };
  Spawn(sched, consumer()).Get();
  EXPECT_EQ(sent, kValues);
}

TEST(ChannelTest, WaitingReceiversAreServedInTheOrderTheyCame) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(2);
  std::vector<int> order;  // receiver id * 100 + value; one worker
  auto receiver = [&](int id) -> Lazy<> {
    Received<int> got = co_await channel.Receive();
    EXPECT_TRUE(got.ok());
    order.push_back(id * 100 + got.value());
  };
  auto driver = [&]() -> Lazy<> {
    std::vector<JoinHandle<void>> handles;
    for (int id = 0; id < 4; ++id) handles.push_back(co_await StartWaiting(&sched, receiver(id)));
    for (int v = 1; v <= 4; ++v) EXPECT_EQ(channel.TrySend(v), ChannelStatus::kOk);  // handed over
    EXPECT_EQ(channel.Size(), 0u);
    for (JoinHandle<void>& handle : handles) co_await std::move(handle);
  };
  Spawn(sched, driver()).Get();
  // Receiver i got the i-th value (they may run in any order after their wakeups).
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<int>{1, 102, 203, 304}));
}

TEST(ChannelTest, WaitingSendersAreServedInTheOrderTheyCame) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(1);
  auto sender = [&](int value) -> Lazy<ChannelStatus> { co_return co_await channel.Send(value); };
  auto driver = [&]() -> Lazy<> {
    EXPECT_EQ(channel.TrySend(0), ChannelStatus::kOk);  // full from here on
    std::vector<JoinHandle<ChannelStatus>> handles;
    for (int v = 1; v <= 4; ++v) handles.push_back(co_await StartWaiting(&sched, sender(v)));
    // No barging: a TrySend finds the channel full while senders wait.
    EXPECT_EQ(channel.TrySend(99), ChannelStatus::kFull);
    for (int v = 0; v <= 4; ++v) {
      // Each receive takes the oldest value and moves the oldest waiting sender's value in.
      EXPECT_EQ(channel.TryReceive().value(), v);
      EXPECT_EQ(channel.Size(), v < 4 ? 1u : 0u);
    }
    for (JoinHandle<ChannelStatus>& handle : handles) {
      EXPECT_EQ(co_await std::move(handle), ChannelStatus::kOk);
    }
  };
  Spawn(sched, driver()).Get();
}

TEST(ChannelTest, CloseWakesWaitingReceiversWithClosed) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(2);
  auto receiver = [&]() -> Lazy<ChannelStatus> { co_return (co_await channel.Receive()).status(); };
  auto driver = [&]() -> Lazy<> {
    JoinHandle<ChannelStatus> a = co_await StartWaiting(&sched, receiver());
    JoinHandle<ChannelStatus> b = co_await StartWaiting(&sched, receiver());
    EXPECT_TRUE(channel.Close());
    EXPECT_EQ(co_await std::move(a), ChannelStatus::kClosed);
    EXPECT_EQ(co_await std::move(b), ChannelStatus::kClosed);
  };
  Spawn(sched, driver()).Get();
}

TEST(ChannelTest, CloseWakesWaitingSendersAndReceiversDrainWhatIsBuffered) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(2);
  auto sender = [&](int value) -> Lazy<ChannelStatus> { co_return co_await channel.Send(value); };
  auto driver = [&]() -> Lazy<> {
    EXPECT_EQ(co_await channel.Send(1), ChannelStatus::kOk);
    EXPECT_EQ(co_await channel.Send(2), ChannelStatus::kOk);
    JoinHandle<ChannelStatus> a = co_await StartWaiting(&sched, sender(3));
    JoinHandle<ChannelStatus> b = co_await StartWaiting(&sched, sender(4));
    EXPECT_TRUE(channel.Close());
    EXPECT_EQ(co_await std::move(a), ChannelStatus::kClosed);
    EXPECT_EQ(co_await std::move(b), ChannelStatus::kClosed);
    EXPECT_EQ((co_await channel.Receive()).value(), 1);
    EXPECT_EQ((co_await channel.Receive()).value(), 2);
    EXPECT_EQ((co_await channel.Receive()).status(), ChannelStatus::kClosed);
  };
  Spawn(sched, driver()).Get();
}

TEST(ChannelTest, DeadlinesEndWaitsAndAPassedDeadlineIsATry) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(1);
  auto body = [&]() -> Lazy<> {
    EXPECT_EQ((co_await channel.Receive(DeadlineAfter(milliseconds(10)))).status(),
              ChannelStatus::kDeadline);
    EXPECT_EQ((co_await channel.Receive(kTaskDeadlineNow)).status(), ChannelStatus::kDeadline);
    // A passed deadline does not stop an operation that can complete at once.
    EXPECT_EQ(co_await channel.Send(1, kTaskDeadlineNow), ChannelStatus::kOk);
    EXPECT_EQ(co_await channel.Send(2, DeadlineAfter(milliseconds(10))), ChannelStatus::kDeadline);
    EXPECT_EQ(channel.Size(), 1u);  // the timed-out value was not sent
    Received<int> got = co_await channel.Receive(kTaskDeadlineNow);
    EXPECT_EQ(got.value(), 1);
  };
  Spawn(sched, body()).Get();
}

// A waiting receiver whose deadline passed is skipped: the next value goes to the one
// behind it (and is not lost to the receiver that left).
TEST(ChannelTest, AReceiverThatLeftIsSkipped) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(1);
  auto timed = [&]() -> Lazy<ChannelStatus> {
    co_return (co_await channel.Receive(DeadlineAfter(milliseconds(5)))).status();
  };
  auto patient = [&]() -> Lazy<int> { co_return (co_await channel.Receive()).value(); };
  auto driver = [&]() -> Lazy<> {
    JoinHandle<ChannelStatus> a = co_await StartWaiting(&sched, timed());
    JoinHandle<int> b = co_await StartWaiting(&sched, patient());
    EXPECT_EQ(co_await std::move(a), ChannelStatus::kDeadline);
    EXPECT_EQ(channel.TrySend(42), ChannelStatus::kOk);
    EXPECT_EQ(co_await std::move(b), 42);
  };
  Spawn(sched, driver()).Get();
}

// The hand-off race, made deterministic on one worker: a waiter is cancelled (its wait is
// closed at once) but has not run yet, so its node is still queued when a value or room is
// handed to it. Its wakeup fails; the value goes to the next receiver (or back into the
// ring), the sender's value goes back to it, and the cancelled ones report kCancelled.
TEST(ChannelTest, WhatIsHandedToAWaiterThatJustLeftGoesToTheNextOne) {
  TaskScheduler sched;
  sched.Start(1);
  Channel<int> channel(1);
  auto receiver = [&]() -> Lazy<int> {
    Received<int> got = co_await channel.Receive();
    co_return got.ok() ? got.value() : -static_cast<int>(got.status());
  };
  auto sender = [&](int value) -> Lazy<ChannelStatus> { co_return co_await channel.Send(value); };
  auto driver = [&]() -> Lazy<> {
    JoinHandle<int> gone = co_await StartWaiting(&sched, receiver());
    JoinHandle<int> next = co_await StartWaiting(&sched, receiver());
    EXPECT_TRUE(gone.Cancel());  // its wait is closed; it runs only after we yield
    EXPECT_EQ(channel.TrySend(7), ChannelStatus::kOk);
    EXPECT_EQ(co_await std::move(gone), -static_cast<int>(ChannelStatus::kCancelled));
    EXPECT_EQ(co_await std::move(next), 7);

    JoinHandle<int> alone = co_await StartWaiting(&sched, receiver());
    EXPECT_TRUE(alone.Cancel());
    EXPECT_EQ(channel.TrySend(8), ChannelStatus::kOk);  // nobody left: into the ring
    EXPECT_EQ(co_await std::move(alone), -static_cast<int>(ChannelStatus::kCancelled));
    EXPECT_EQ(channel.Size(), 1u);  // 8 stays buffered: the channel is full

    JoinHandle<ChannelStatus> left = co_await StartWaiting(&sched, sender(9));
    EXPECT_TRUE(left.Cancel());
    EXPECT_EQ(channel.TryReceive().value(), 8);  // the room goes to `left`, which is gone
    EXPECT_EQ(channel.Size(), 0u);               // so 9 went back to it, not into the ring
    EXPECT_EQ(co_await std::move(left), ChannelStatus::kCancelled);
    EXPECT_EQ(channel.TryReceive().status(), ChannelStatus::kEmpty);
  };
  Spawn(sched, driver()).Get();
}

TEST(ChannelTest, CancellingAWaitingSendOrReceiveEndsItAndLeavesTheQueue) {
  TaskScheduler sched;
  sched.Start(2);
  Channel<int> full(1);
  Channel<int> empty(1);
  ASSERT_EQ(full.TrySend(1), ChannelStatus::kOk);
  std::atomic<int> started{0};
  auto sender = [&]() -> Lazy<ChannelStatus> {
    started.fetch_add(1);
    co_return co_await full.Send(2);
  };
  auto receiver = [&]() -> Lazy<ChannelStatus> {
    started.fetch_add(1);
    co_return (co_await empty.Receive()).status();
  };
  JoinHandle<ChannelStatus> send = Spawn(sched, sender());
  JoinHandle<ChannelStatus> receive = Spawn(sched, receiver());
  while (started.load() != 2) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(5));  // let both queue (a race is still correct)
  EXPECT_TRUE(send.Cancel());
  EXPECT_TRUE(receive.Cancel());
  EXPECT_EQ(send.Get(), ChannelStatus::kCancelled);
  EXPECT_EQ(receive.Get(), ChannelStatus::kCancelled);
  // Neither left anything behind: the full channel still holds only 1, the empty one
  // takes a value for the next receiver.
  EXPECT_EQ(full.Size(), 1u);
  EXPECT_EQ(full.TryReceive().value(), 1);
  EXPECT_EQ(full.TryReceive().status(), ChannelStatus::kEmpty);
  EXPECT_EQ(empty.TrySend(3), ChannelStatus::kOk);
  EXPECT_EQ(empty.TryReceive().value(), 3);
}

TEST(ChannelTest, StopEndsWaitingOperationsWithShutdown) {
  std::atomic<int> started{0};
  JoinHandle<ChannelStatus> receive, send;
  {
    TaskScheduler sched;
    sched.Start(2);
    Channel<int> empty(1);
    Channel<int> full(1);
    ASSERT_EQ(full.TrySend(1), ChannelStatus::kOk);
    auto receiver = [&]() -> Lazy<ChannelStatus> {
      started.fetch_add(1);
      co_return (co_await empty.Receive()).status();
    };
    auto sender = [&]() -> Lazy<ChannelStatus> {
      started.fetch_add(1);
      co_return co_await full.Send(2);
    };
    receive = Spawn(sched, receiver());
    send = Spawn(sched, sender());
    while (started.load() != 2) std::this_thread::yield();
    sched.Stop();
  }
  EXPECT_EQ(receive.Get(), ChannelStatus::kShutdown);
  EXPECT_EQ(send.Get(), ChannelStatus::kShutdown);
}

// Producers and consumers on a 2-worker scheduler, a small capacity, short deadlines and
// Try operations mixed in: every value is received exactly once, each producer's values
// reach any one consumer in the order they were sent, and Close ends every consumer.
TEST(ChannelStressTest, EveryValueIsReceivedExactlyOnce) {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 3;
  const int kPerProducer = static_cast<int>(testing::StressIterations(4000, 8));
  TaskScheduler sched;
  sched.Start(2);
  Channel<std::int64_t> channel(3);
  auto producer = [&](int p) -> Lazy<> {
    std::minstd_rand random(p + 1);
    for (int i = 0; i < kPerProducer;) {
      const std::int64_t value = std::int64_t{p} * kPerProducer + i;
      const int how = static_cast<int>(random() % 4);
      ChannelStatus status;
      if (how == 0) {
        status = channel.TrySend(value);
        if (status == ChannelStatus::kFull) co_await Yield();
      } else if (how == 1) {
        status = co_await channel.Send(value, DeadlineAfter(microseconds(random() % 200)));
      } else {
        status = co_await channel.Send(value);
      }
      EXPECT_NE(status, ChannelStatus::kClosed);
      if (status == ChannelStatus::kOk) ++i;  // else: try the same value again
    }
  };
  auto consumer = [&](int c) -> Lazy<std::vector<std::int64_t>> {
    std::minstd_rand random(c + 100);
    std::vector<std::int64_t> got;
    while (true) {
      if (random() % 4 == 0) {
        Received<std::int64_t> now = channel.TryReceive();
        if (now.ok()) got.push_back(now.value());
        if (now.status() == ChannelStatus::kClosed) break;
        if (!now.ok()) co_await Yield();
        continue;
      }
      const TaskDeadline deadline =
          random() % 2 == 0 ? DeadlineAfter(microseconds(random() % 300)) : kTaskDeadlineInfinite;
      Received<std::int64_t> next = co_await channel.Receive(deadline);
      if (next.status() == ChannelStatus::kClosed) break;
      if (next.ok()) got.push_back(next.value());
    }
    co_return got;
  };
  std::vector<JoinHandle<std::vector<std::int64_t>>> consumers;
  for (int c = 0; c < kConsumers; ++c) consumers.push_back(Spawn(sched, consumer(c)));
  std::vector<JoinHandle<void>> producers;
  for (int p = 0; p < kProducers; ++p) producers.push_back(Spawn(sched, producer(p)));
  for (JoinHandle<void>& handle : producers) handle.Get();
  EXPECT_TRUE(channel.Close());
  std::vector<int> seen(static_cast<std::size_t>(kProducers) * kPerProducer, 0);
  for (JoinHandle<std::vector<std::int64_t>>& handle : consumers) {
    std::vector<std::int64_t> last(kProducers, -1);
    for (std::int64_t value : handle.Get()) {
      ASSERT_GE(value, 0);
      ASSERT_LT(value, static_cast<std::int64_t>(seen.size()));
      ++seen[static_cast<std::size_t>(value)];
      const int p = static_cast<int>(value / kPerProducer);
      EXPECT_GT(value, last[p]) << "producer " << p << "'s values out of order";
      last[p] = value;
    }
  }
  for (std::size_t v = 0; v < seen.size(); ++v) ASSERT_EQ(seen[v], 1) << "value " << v;
  EXPECT_EQ(channel.Size(), 0u);
}

// Receivers cancelled from another thread while values are being handed to them, on 2
// workers: a value is never swallowed by a receiver that reports kCancelled, nor delivered
// twice.
TEST(ChannelStressTest, CancelledReceiversNeverSwallowAValue) {
  constexpr int kReceivers = 6;
  constexpr int kValues = kReceivers / 2;  // the uncancelled receivers alone can take them
  const int kRounds = static_cast<int>(testing::StressIterations(400, 5));
  TaskScheduler sched;
  sched.Start(2);
  for (int round = 0; round < kRounds; ++round) {
    Channel<int> channel(1);
    auto receiver = [&]() -> Lazy<int> {
      Received<int> got = co_await channel.Receive();
      co_return got.ok() ? got.value() : -1;
    };
    auto producer = [&]() -> Lazy<> {
      for (int v = 0; v < kValues; ++v) EXPECT_EQ(co_await channel.Send(v), ChannelStatus::kOk);
    };
    std::vector<JoinHandle<int>> receivers;
    for (int r = 0; r < kReceivers; ++r) receivers.push_back(Spawn(sched, receiver()));
    JoinHandle<void> produce = Spawn(sched, producer());
    for (int r = 0; r < kReceivers; r += 2) receivers[r].Cancel();
    produce.Get();
    channel.Close();
    std::vector<int> seen(kValues, 0);
    for (JoinHandle<int>& handle : receivers) {
      const int value = handle.Get();
      if (value >= 0) ++seen[value];
    }
    for (Received<int> rest = channel.TryReceive(); rest.ok(); rest = channel.TryReceive()) {
      ++seen[rest.value()];
    }
    for (int v = 0; v < kValues; ++v) ASSERT_EQ(seen[v], 1) << "round " << round << " value " << v;
  }
}

#ifndef NDEBUG
TEST(ChannelDeathTest, CapacityZeroDies) {
  EXPECT_DEATH(Channel<int>(0), "capacity must be at least 1");
}

TEST(ChannelDeathTest, DestroyingAChannelWithWaitersDies) {
  auto run = [] {
    TaskScheduler sched;
    sched.Start(1);
    auto* channel = new Channel<int>(1);
    auto receive = [channel]() -> Lazy<> { co_await channel->Receive(); };
    auto destroy_while_it_waits = [&]() -> Lazy<> {
      JoinHandle<void> waiting = co_await StartWaiting(&sched, receive());
      waiting.Detach();
      delete channel;
    };
    Spawn(sched, destroy_while_it_waits()).Get();
  };
  EXPECT_DEATH(run(), "destroyed while coroutines wait");
}
#endif

}  // namespace
}  // namespace fairsched::coro
