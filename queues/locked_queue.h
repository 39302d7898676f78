// The trivial mutex-protected baselines for two queue roles of queues/concepts.h.
//
//   LockedFrontQueue<T, &T::next>  models FrontQueue: a mutex around an intrusive FIFO list.
//   LockedReadyQueue<T>            models ReadyQueue: a mutex around a std::deque<T*>.
//
// They exist for two reasons: the benchmarks measure every lock-free queue against its
// trivial locked version in the same run, and the scheduler's "trivial" policy
// (TrivialPolicyTaskScheduler) plugs them in to show what the lock-free queues buy.
// So they are deliberately plain: every operation takes the mutex, nothing is clever.
// Both count their mutex acquisitions (see queues/lock_stats.h).
//
// Neither owns its items; items must stay alive while queued.
#ifndef FAIRSCHED_QUEUES_LOCKED_QUEUE_H_
#define FAIRSCHED_QUEUES_LOCKED_QUEUE_H_

#include <cstddef>
#include <deque>
#include <vector>

#include "queues/lock_stats.h"
#include "sync/primitives.h"

namespace fairsched {

// FrontQueue: any number of producers, one consumer, FIFO. The item links itself through
// the member `kNext` (default `T* next`).
template <typename T, T* T::*kNext = &T::next>
class LockedFrontQueue {
 public:
  LockedFrontQueue() = default;
  LockedFrontQueue(const LockedFrontQueue&) = delete;
  LockedFrontQueue& operator=(const LockedFrontQueue&) = delete;

  // Appends `item`; returns true if the queue was empty before. Thread-safe.
  bool Push(T* item) {
    item->*kNext = nullptr;
    MutexLock lock = counter_.Lock(mutex_);
    const bool was_empty = head_ == nullptr;
    if (was_empty) {
      head_ = item;
    } else {
      tail_->*kNext = item;
    }
    tail_ = item;
    return was_empty;
  }

  // Takes the oldest item, or returns nullptr if none. (A push is never in flight here:
  // it is complete when it releases the mutex.)
  T* Pop() {
    MutexLock lock = counter_.Lock(mutex_);
    T* head = head_;
    if (head != nullptr) head_ = head->*kNext;
    return head;
  }

  // Takes the mutex (and counts it), like every operation of this class.
  bool IsEmpty() const {
    MutexLock lock = counter_.Lock(mutex_);
    return head_ == nullptr;
  }

  QueueLockStats LockStats() const { return counter_.Stats(); }

 private:
  mutable Mutex mutex_;
  mutable LockCounter counter_;
  T* head_ = nullptr;  // guarded by mutex_
  T* tail_ = nullptr;  // guarded by mutex_; meaningful only when head_ != nullptr
};

// ReadyQueue: one producer, many consumers, FIFO over published items. Stores T* in a
// std::deque, so T needs no hook.
//
// Pending items (PushPending) are kept in a producer-private vector without the lock and
// appended under one lock acquisition by FlushPending (or by the next Push, which publishes
// them ahead of its own item, as the concept requires).
template <typename T>
class LockedReadyQueue {
 public:
  // A consuming thread's handle. Holds no position (the deque is shared); it exists to
  // model the concept and to count this consumer's own lock acquisitions.
  class Consumer {
   public:
    explicit Consumer(LockedReadyQueue& queue) : queue_(&queue) {}
    // Movable (so consumers can live in a std::vector); not copyable. The moved-from
    // handle must not be used again.
    Consumer(Consumer&& other) noexcept : queue_(other.queue_), counter_(other.counter_.Stats()) {}
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    // The oldest published item not yet popped, or nullptr.
    T* Pop() { return queue_->PopFor(&counter_); }

    // Lock acquisitions made by this consumer's Pop calls.
    QueueLockStats LockStats() const { return counter_.Stats(); }

   private:
    LockedReadyQueue* queue_;
    LockCounter counter_;  // written only by the thread using this consumer
  };

  explicit LockedReadyQueue(std::size_t /*block_size, unused*/ = 0) {}
  LockedReadyQueue(const LockedReadyQueue&) = delete;
  LockedReadyQueue& operator=(const LockedReadyQueue&) = delete;

  // Producer only. Publishes any pending items, then `item`.
  void Push(T* item) {
    pending_.push_back(item);
    FlushPending();
  }

  // Producer only. Stages `item`; visible to consumers after FlushPending or Push.
  void PushPending(T* item) { pending_.push_back(item); }

  // Producer only. Publishes the staged items, in staging order, under one lock.
  void FlushPending() {
    if (pending_.empty()) return;
    {
      MutexLock lock = counter_.Lock(mutex_);
      items_.insert(items_.end(), pending_.begin(), pending_.end());
      // Written under the mutex, read without it by Count (relaxed: a snapshot).
      count_.store(items_.size(), std::memory_order_relaxed);
    }
    pending_.clear();
  }

  // Published, not yet popped items (snapshot; does not take the mutex).
  std::size_t Count() const { return count_.load(std::memory_order_relaxed); }

  // Pre-sizes the producer's staging buffer. (std::deque cannot reserve.)
  void Reserve(std::size_t n) { pending_.reserve(n); }

  // All acquisitions of the mutex, by the producer and every consumer.
  QueueLockStats LockStats() const { return counter_.Stats(); }

 private:
  T* PopFor(LockCounter* consumer_counter) {
    MutexLock lock = counter_.Lock(mutex_, consumer_counter);
    if (items_.empty()) return nullptr;
    T* item = items_.front();
    items_.pop_front();
    count_.store(items_.size(), std::memory_order_relaxed);
    return item;
  }

  Mutex mutex_;
  LockCounter counter_;
  std::deque<T*> items_;          // guarded by mutex_
  Atomic<std::size_t> count_{0};  // == items_.size(), written under mutex_
  std::vector<T*> pending_;       // producer-private
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_LOCKED_QUEUE_H_
