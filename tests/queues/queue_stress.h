// Stress drivers shared by the queue tests: the same no-loss / no-duplicate / order checks
// run against every implementation of a role (the lock-free queue and its locked baseline).
#ifndef FAIRSCHED_TESTS_QUEUES_QUEUE_STRESS_H_
#define FAIRSCHED_TESTS_QUEUES_QUEUE_STRESS_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "queues/concepts.h"

namespace fairsched::testing {

struct StressItem {
  int producer = 0;
  std::int64_t seq = 0;
  StressItem* next = nullptr;
  std::uint32_t wait_index = kNotInWaitQueue;
};

// `n` items numbered 0 .. n - 1 (their `seq`).
inline std::vector<StressItem> Numbered(std::int64_t n) {
  std::vector<StressItem> items(n);
  for (std::int64_t i = 0; i < n; ++i) items[i].seq = i;
  return items;
}

// Books the pops of several consumer threads: every item of `count` numbered items must be
// popped exactly once, and each consumer must see increasing sequence numbers. Each consumer
// thread keeps its own `last` (start it at -1) and calls Record for every item it pops.
class PopLedger {
 public:
  explicit PopLedger(std::int64_t count) : count_(count), seen_(count) {}

  bool Done() const { return popped_.load(std::memory_order_relaxed) >= count_; }

  void Record(const StressItem* item, std::int64_t* last) {
    if (item->seq <= *last) order_ok_.store(false, std::memory_order_relaxed);
    *last = item->seq;
    seen_[item->seq].fetch_add(1, std::memory_order_relaxed);
    popped_.fetch_add(1, std::memory_order_relaxed);
  }

  // Call after every consumer thread has been joined.
  void ExpectEachPoppedOnceInOrder() const {
    EXPECT_TRUE(order_ok_.load()) << "a consumer saw an older item after a newer one";
    EXPECT_EQ(popped_.load(), count_);
    std::int64_t bad = 0;
    for (const auto& s : seen_) bad += s.load() != 1;
    EXPECT_EQ(bad, 0) << "items popped zero or several times";
  }

 private:
  const std::int64_t count_;
  std::vector<std::atomic<int>> seen_;  // value-initialised to 0
  std::atomic<std::int64_t> popped_{0};
  std::atomic<bool> order_ok_{true};
};

// The ReadyQueue staging contract of queues/concepts.h, checked on an empty `queue`: staged
// items stay invisible until FlushPending; a Push publishes the staged items ahead of its
// own; FIFO throughout; an empty FlushPending is a no-op.
template <typename Queue>
void ExpectPendingVisibleOnlyAfterFlush(Queue& queue) {
  typename Queue::Consumer consumer(queue);
  StressItem items[4];
  queue.PushPending(&items[0]);
  queue.PushPending(&items[1]);
  EXPECT_EQ(consumer.Pop(), nullptr);
  EXPECT_EQ(queue.Count(), 0u);
  queue.FlushPending();
  EXPECT_EQ(queue.Count(), 2u);
  queue.PushPending(&items[2]);
  queue.Push(&items[3]);  // publishes the pending item first
  EXPECT_EQ(queue.Count(), 4u);
  for (StressItem& item : items) EXPECT_EQ(consumer.Pop(), &item);
  EXPECT_EQ(consumer.Pop(), nullptr);
  queue.FlushPending();  // nothing staged: no-op
  EXPECT_EQ(consumer.Pop(), nullptr);
  EXPECT_EQ(queue.Count(), 0u);
}

// One producer publishes `count` numbered items into a ReadyQueue, alternating single
// pushes with batches of `PushPending` + `FlushPending` (batch sizes 1..max_batch), while
// `consumers` threads pop. Checks: every item popped exactly once; each consumer sees
// increasing sequence numbers (the queue is FIFO over published items, so no consumer can
// get an older item after a newer one); Count() ends at 0.
template <typename Queue, typename... QueueArgs>
void RunReadyQueueStress(int consumers, std::int64_t count, int max_batch,
                         QueueArgs... queue_args) {
  Queue queue(queue_args...);
  std::vector<StressItem> items(count);
  PopLedger ledger(count);

  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      typename Queue::Consumer consumer(queue);
      std::int64_t last = -1;
      while (!ledger.Done()) {
        StressItem* item = consumer.Pop();
        if (item == nullptr) {
          std::this_thread::yield();
          continue;
        }
        ledger.Record(item, &last);
      }
    });
  }

  std::int64_t next = 0;
  int batch = 1;
  while (next < count) {
    if (batch == 1) {
      items[next].seq = next;
      queue.Push(&items[next]);
      ++next;
    } else {
      for (int i = 0; i < batch && next < count; ++i, ++next) {
        items[next].seq = next;
        queue.PushPending(&items[next]);
      }
      queue.FlushPending();
    }
    batch = batch % max_batch + 1;
  }
  for (auto& t : threads) t.join();

  ledger.ExpectEachPoppedOnceInOrder();
  EXPECT_EQ(queue.Count(), 0u);
}

// Pops everything `queue` hands out right now; returns how many (calls `f` for each).
template <typename Queue, typename F>
std::int64_t PopAvailable(Queue& queue, F f) {
  std::int64_t n = 0;
  for (StressItem* it = queue.Pop(); it != nullptr; it = queue.Pop(), ++n) f(it);
  return n;
}

// `producers` threads push numbered items into a FrontQueue while one consumer pops them.
// Checks exactly-once delivery and per-producer FIFO order, and that IsEmpty() is true
// after the last pop.
template <typename Queue>
void RunFrontQueueStress(int producers, int per_producer) {
  std::vector<std::vector<StressItem>> items(producers, std::vector<StressItem>(per_producer));
  Queue queue;
  std::atomic<int> producers_done{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < per_producer; ++i) {
        items[p][i].producer = p;
        items[p][i].seq = i;
        queue.Push(&items[p][i]);
      }
      producers_done.fetch_add(1, std::memory_order_release);
    });
  }
  std::vector<std::int64_t> next_expected(producers, 0);
  std::int64_t received = 0;
  bool order_ok = true;
  auto check = [&](StressItem* it) {
    if (it->seq != next_expected[it->producer]) order_ok = false;
    next_expected[it->producer] = it->seq + 1;
    ++received;
  };
  while (producers_done.load(std::memory_order_acquire) < producers) {
    if (PopAvailable(queue, check) == 0) std::this_thread::yield();
  }
  // Every push is complete now (acquire above), so nothing is in flight.
  PopAvailable(queue, check);
  for (auto& t : threads) t.join();
  EXPECT_TRUE(order_ok);
  EXPECT_EQ(received, std::int64_t{producers} * per_producer);
  for (int p = 0; p < producers; ++p) EXPECT_EQ(next_expected[p], per_producer);
  EXPECT_TRUE(queue.IsEmpty());
}

// Cross-thread causal order. In each round thread A pushes X and then releases a flag;
// thread B acquires the flag and then pushes Y. X's push happens-before Y's, so the
// consumer, popping concurrently, must get X before Y. (A queue made of per-producer
// sub-queues, like moodycamel's, fails this whenever it drains B's part first.) Noise
// producers push concurrently so the queue is seldom empty in between.
template <typename Queue>
void RunFrontQueueCausalOrder(int rounds) {
  constexpr int kNoiseProducers = 2;
  constexpr int kNoisePerRound = 2;
  std::vector<StressItem> xs(rounds), ys(rounds);
  std::vector<StressItem> noise(static_cast<std::size_t>(rounds) * kNoiseProducers *
                                kNoisePerRound);
  const std::int64_t total = static_cast<std::int64_t>(rounds) * 2 + std::ssize(noise);
  for (int r = 0; r < rounds; ++r) {
    xs[r].producer = 0;
    xs[r].seq = r;
    ys[r].producer = 1;
    ys[r].seq = r;
  }
  Queue queue;
  std::atomic<int> x_pushed{0};  // rounds whose X has been pushed
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int r = 0; r < rounds; ++r) {
      queue.Push(&xs[r]);
      // Release: Y's push, after B's acquire of this value, happens-after X's push.
      x_pushed.store(r + 1, std::memory_order_release);
    }
  });
  threads.emplace_back([&] {
    for (int r = 0; r < rounds; ++r) {
      while (x_pushed.load(std::memory_order_acquire) <= r) std::this_thread::yield();
      queue.Push(&ys[r]);
    }
  });
  for (int n = 0; n < kNoiseProducers; ++n) {
    threads.emplace_back([&, n] {
      const std::size_t per = static_cast<std::size_t>(rounds) * kNoisePerRound;
      for (std::size_t i = 0; i < per; ++i) {
        StressItem& item = noise[n * per + i];
        item.producer = 2 + n;
        queue.Push(&item);
      }
    });
  }
  std::vector<bool> x_seen(rounds, false);
  int y_before_x = 0;
  std::int64_t received = 0;
  while (received < total) {
    const std::int64_t got = PopAvailable(queue, [&](StressItem* it) {
      if (it->producer == 0) x_seen[it->seq] = true;
      if (it->producer == 1 && !x_seen[it->seq]) ++y_before_x;
    });
    received += got;
    if (got == 0) std::this_thread::yield();
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(y_before_x, 0) << "Y was popped before X although X's push happened-before Y's";
  EXPECT_EQ(received, total);
  EXPECT_TRUE(queue.IsEmpty());
}

// The wake-up protocol the scheduler builds on the queue: producers notify the consumer
// only when Push returns true (queue was empty); the consumer sleeps only when Pop returns
// nullptr AND IsEmpty() is true. If a push that returned false could go unseen by a consumer
// about to sleep, the consumer would sleep with items queued and no notify coming: the
// sleep is bounded by a long timeout that fails the test instead of hanging it. Producers
// pause now and then so the queue keeps draining empty (the transitions under test).
template <typename Queue>
void RunFrontQueueWakeProtocol(int producers, int per_producer) {
  std::vector<StressItem> items(static_cast<std::size_t>(producers) * per_producer);
  Queue queue;
  std::mutex mu;
  std::condition_variable cv;
  bool notified = false;  // guarded by mu: a flag, so a notify before the wait is not lost
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < per_producer; ++i) {
        StressItem& item = items[static_cast<std::size_t>(p) * per_producer + i];
        item.producer = p;
        item.seq = i;
        if (queue.Push(&item)) {
          std::lock_guard<std::mutex> lock(mu);
          notified = true;
          cv.notify_one();
        }
        if (i % 7 == p % 7) std::this_thread::yield();
      }
    });
  }
  const std::int64_t total = std::ssize(items);
  std::vector<std::int64_t> next_expected(producers, 0);
  std::int64_t received = 0;
  bool order_ok = true;
  bool lost_wakeup = false;
  while (received < total && !lost_wakeup) {
    received += PopAvailable(queue, [&](StressItem* it) {
      if (it->seq != next_expected[it->producer]) order_ok = false;
      next_expected[it->producer] = it->seq + 1;
    });
    if (received == total) break;
    if (!queue.IsEmpty()) {  // a push is in flight: must not sleep
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(mu);
    lost_wakeup = !cv.wait_for(lock, std::chrono::seconds(20), [&] { return notified; });
    notified = false;
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(lost_wakeup) << "consumer slept with items queued and no notify coming";
  EXPECT_TRUE(order_ok);
  EXPECT_EQ(received, total);
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_QUEUES_QUEUE_STRESS_H_
