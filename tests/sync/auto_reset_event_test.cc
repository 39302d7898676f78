// Tests for //sync:auto_reset_event (AutoResetEvent): one-bit semantics, timeouts that never end early, cross-thread
// visibility, and stress tests for lost wakeups (ping-pong and many senders) that count
// every event.
#include "sync/auto_reset_event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using Clock = std::chrono::steady_clock;

TEST(SignalTest, StartsClear) {
  AutoResetEvent s;
  EXPECT_FALSE(s.IsSet());
  EXPECT_FALSE(s.TryReceive());
}

TEST(SignalTest, SendThenReceiveConsumesTheBit) {
  AutoResetEvent s;
  s.Send();
  EXPECT_TRUE(s.IsSet());
  s.Receive();  // returns at once
  EXPECT_FALSE(s.IsSet());
  EXPECT_FALSE(s.TryReceive());
}

TEST(SignalTest, SendsCoalesce) {
  AutoResetEvent s;
  s.Send();
  s.Send();
  s.Send();
  EXPECT_TRUE(s.TryReceive());
  EXPECT_FALSE(s.TryReceive());
}

TEST(SignalTest, ReceiveTimedWithBitSetReturnsTrueAtOnce) {
  AutoResetEvent s;
  s.Send();
  EXPECT_TRUE(s.ReceiveTimed(milliseconds(0)));
  s.Send();
  EXPECT_TRUE(s.ReceiveTimed(nanoseconds(-5)));
  s.Send();
  EXPECT_TRUE(s.ReceiveTimed(std::chrono::hours(1)));
  EXPECT_FALSE(s.ReceiveTimed(milliseconds(0)));
}

TEST(SignalTest, ReceiveTimedNeverReturnsEarly) {
  AutoResetEvent s;
  for (const auto timeout : {milliseconds(1), milliseconds(5), milliseconds(20)}) {
    const auto start = Clock::now();
    EXPECT_FALSE(s.ReceiveTimed(timeout));
    EXPECT_GE(Clock::now() - start, timeout);
  }
}

TEST(SignalTest, ReceiveUntilPastDeadlineIsTryReceive) {
  AutoResetEvent s;
  EXPECT_FALSE(s.ReceiveUntil(Clock::now() - milliseconds(1)));
  s.Send();
  EXPECT_TRUE(s.ReceiveUntil(Clock::now() - milliseconds(1)));
}

TEST(SignalTest, HugeTimeoutDoesNotOverflow) {
  AutoResetEvent s;
  std::thread sender([&] {
    std::this_thread::sleep_for(milliseconds(5));
    s.Send();
  });
  EXPECT_TRUE(s.ReceiveTimed(nanoseconds::max()));
  sender.join();
}

TEST(SignalTest, BlockingReceiveWakesOnSendFromAnotherThread) {
  AutoResetEvent s;
  int payload = 0;  // plain: Send/Receive must order it (TSan checks)
  std::thread sender([&] {
    std::this_thread::sleep_for(milliseconds(10));
    payload = 42;
    s.Send();
  });
  s.Receive();
  EXPECT_EQ(payload, 42);
  sender.join();
}

TEST(SignalTest, TimedReceiveWakesOnSendBeforeTimeout) {
  AutoResetEvent s;
  std::thread sender([&] {
    std::this_thread::sleep_for(milliseconds(10));
    s.Send();
  });
  EXPECT_TRUE(s.ReceiveTimed(std::chrono::seconds(30)));
  sender.join();
}

// Two threads bounce two signals; each side counts the events it received and checks a
// plain counter the other side wrote before sending (visibility through Send/Receive).
TEST(SignalStressTest, PingPongCountsEveryEvent) {
  const std::int64_t rounds = testing::StressIterations(30000);
  AutoResetEvent ping, pong;
  std::int64_t shared = 0;  // written alternately by both threads, ordered by the signals
  std::int64_t pings_received = 0;
  std::thread responder([&] {
    for (std::int64_t i = 0; i < rounds; ++i) {
      ping.Receive();
      ++pings_received;
      EXPECT_EQ(shared, 2 * i + 1);
      ++shared;
      pong.Send();
    }
  });
  std::int64_t pongs_received = 0;
  for (std::int64_t i = 0; i < rounds; ++i) {
    ++shared;
    ping.Send();
    // Mix the receive flavours: all of them must see every event.
    if (i % 3 == 0) {
      pong.Receive();
    } else if (i % 3 == 1) {
      ASSERT_TRUE(pong.ReceiveTimed(std::chrono::seconds(30)));
    } else {
      while (!pong.TryReceive()) std::this_thread::yield();
    }
    ++pongs_received;
    ASSERT_EQ(shared, 2 * i + 2);
  }
  responder.join();
  EXPECT_EQ(pings_received, rounds);
  EXPECT_EQ(pongs_received, rounds);
  EXPECT_FALSE(ping.IsSet());
  EXPECT_FALSE(pong.IsSet());
}

// Many senders publish work and Send; one consumer sleeps whenever it has seen all the
// work published so far. A lost wakeup (the consumer asleep with the bit set, or a Send
// that skipped waking it) shows up as a long ReceiveTimed timeout with work outstanding.
TEST(SignalStressTest, ManySendersNoLostWakeup) {
  constexpr int kSenders = 3;
  const std::int64_t per_sender = testing::StressIterations(50000);
  AutoResetEvent s;
  std::atomic<std::int64_t> published{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < kSenders; ++i) {
    senders.emplace_back([&] {
      for (std::int64_t j = 0; j < per_sender; ++j) {
        published.fetch_add(1, std::memory_order_relaxed);
        s.Send();
        if (j % 64 == 0) std::this_thread::yield();
      }
    });
  }
  const std::int64_t total = kSenders * per_sender;
  std::int64_t seen = 0;
  std::int64_t wakeups = 0;
  while (seen < total) {
    ASSERT_TRUE(s.ReceiveTimed(std::chrono::seconds(20)))
        << "lost wakeup: " << seen << " of " << total << " seen";
    ++wakeups;
    seen = published.load(std::memory_order_relaxed);
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(seen, total);
  EXPECT_LE(wakeups, total);
}

// Several receivers share one signal; the sender sends one bit at a time and waits until
// it was consumed. Every bit must be consumed by exactly one receiver.
TEST(SignalStressTest, EachBitConsumedByExactlyOneReceiver) {
  constexpr int kReceivers = 3;
  const std::int64_t bits = testing::StressIterations(20000);
  AutoResetEvent s;
  AutoResetEvent consumed;
  std::atomic<std::int64_t> received{0};
  std::atomic<bool> done{false};
  std::atomic<int> exited{0};
  std::vector<std::thread> receivers;
  for (int i = 0; i < kReceivers; ++i) {
    receivers.emplace_back([&, i] {
      while (true) {
        const bool got = (i == 0) ? (s.Receive(), true) : s.ReceiveTimed(milliseconds(1 + i));
        if (done.load(std::memory_order_acquire)) {
          exited.fetch_add(1);
          return;
        }
        if (got) {
          received.fetch_add(1, std::memory_order_relaxed);
          consumed.Send();
        }
      }
    });
  }
  for (std::int64_t b = 0; b < bits; ++b) {
    s.Send();
    ASSERT_TRUE(consumed.ReceiveTimed(std::chrono::seconds(20))) << "bit " << b << " lost";
  }
  EXPECT_EQ(received.load(), bits);
  done.store(true, std::memory_order_release);
  // Receiver 0 blocks without a timeout, and sends coalesce: keep sending until all left.
  while (exited.load() < kReceivers) {
    s.Send();
    std::this_thread::yield();
  }
  for (auto& t : receivers) t.join();
}

}  // namespace
}  // namespace fairsched
