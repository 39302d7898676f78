// Stress drivers shared by the queue tests: the same no-loss / no-duplicate / order checks
// run against every implementation of a role (the lock-free queue and its locked baseline).
#ifndef FAIRSCHED_TESTS_QUEUES_QUEUE_STRESS_H_
#define FAIRSCHED_TESTS_QUEUES_QUEUE_STRESS_H_

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
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

// `producers` threads push numbered items into a FrontQueue while one consumer drains it
// with PopAll. Checks exactly-once delivery and per-producer FIFO order.
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
  auto drain = [&] {
    for (StressItem* it = queue.PopAll(); it != nullptr; it = it->next) {
      if (it->seq != next_expected[it->producer]) order_ok = false;
      next_expected[it->producer] = it->seq + 1;
      ++received;
    }
  };
  while (producers_done.load(std::memory_order_acquire) < producers) drain();
  drain();
  for (auto& t : threads) t.join();
  EXPECT_TRUE(order_ok);
  EXPECT_EQ(received, std::int64_t{producers} * per_producer);
  for (int p = 0; p < producers; ++p) EXPECT_EQ(next_expected[p], per_producer);
  EXPECT_TRUE(queue.IsEmpty());
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_QUEUES_QUEUE_STRESS_H_
