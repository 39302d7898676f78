// BoundedMcQueue: a lock-free bounded ring, one producer, many consumers. Stores T*, never
// owns the items.
//
// This is the textbook form of the ready queue's sub-queue, kept as its own building block
// (and benchmarked on its own). It does not model the ReadyQueue concept of
// queues/concepts.h: that role is unbounded (`Push` cannot fail), while this ring's
// `TryPush` fails when it is full. McspQueue (queues/mcsp_queue.h) is the unbounded queue
// built from bounded blocks; its blocks are filled once per life instead of wrapping, which
// lets it read slots without atomics (see there).
//
// Algorithm. `capacity` (a power of two) slots and two 64-bit indexes that only grow:
//   end_   - the producer writes slot end_ % capacity, then publishes by storing end_ + 1
//            (release). Pending items (TryPushPending) are written but not yet published.
//   begin_ - consumers claim slot b by reading it and then CASing begin_ from b to b + 1.
// The ring wraps: slot i % capacity is reused for index i + capacity once begin_ > i. The
// producer checks for room against begin_ (cached; reloaded only when the ring looks full).
//
// Why a consumer may read a slot it has not yet claimed: if its CAS then fails, another
// consumer took the slot and the producer may already be writing the next lap's item into
// it. The value read is then garbage and is dropped. To make that concurrent read/write
// well-defined the slots are atomics (relaxed). If the CAS succeeds, begin_ was still b, so
// the producer had not yet seen room for index b + capacity: the producer overwrites a slot
// only after an acquire load of begin_ returns a value past it, and the consumer's CAS is a
// release, so the consumer's read happens-before the overwrite and saw the right item.
//
// Index wrap-around: indexes are 64-bit and compared only through unsigned differences,
// and capacity divides 2^64, so the ring stays correct when an index wraps past 2^64 - 1
// (the constructor can start the indexes anywhere; the tests start just below the wrap).
// ABA on begin_ would need 2^64 pops while one consumer is stalled between its load and its
// CAS, which cannot happen.
#ifndef FAIRSCHED_QUEUES_BOUNDED_MC_QUEUE_H_
#define FAIRSCHED_QUEUES_BOUNDED_MC_QUEUE_H_

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "sync/primitives.h"

namespace fairsched {

template <typename T>
class BoundedMcQueue {
 public:
  // `capacity` must be a power of two >= 1. `first_index` is where both indexes start (only
  // useful for testing index wrap-around).
  explicit BoundedMcQueue(std::size_t capacity, std::uint64_t first_index = 0)
      : mask_(capacity - 1),
        slots_(new Atomic<T*>[capacity]),
        write_(first_index),
        cached_begin_(first_index),
        end_(first_index),
        begin_(first_index) {
    assert(capacity >= 1 && (capacity & (capacity - 1)) == 0 && "capacity: power of two");
    for (std::size_t i = 0; i < capacity; ++i) slots_[i].store(nullptr, std::memory_order_relaxed);
  }
  BoundedMcQueue(const BoundedMcQueue&) = delete;
  BoundedMcQueue& operator=(const BoundedMcQueue&) = delete;

  // Producer only. Appends and publishes `item` (and any pending items); false if full (then
  // nothing changes, pending items stay pending).
  bool TryPush(T* item) {
    if (!TryPushPending(item)) return false;
    FlushPending();
    return true;
  }

  // Producer only. Writes `item` into the next slot without publishing it; false if full.
  bool TryPushPending(T* item) {
    if (write_ - cached_begin_ > mask_) {  // looks full: write_ - begin == capacity
      // Acquire pairs with the consumers' release CAS on begin_: every consumer read of a
      // slot below the value we load happened before we overwrite that slot next lap.
      cached_begin_ = begin_.load(std::memory_order_acquire);
      if (write_ - cached_begin_ > mask_) return false;
    }
    // Relaxed: publication is the release store of end_ in FlushPending. The store is atomic
    // only because a consumer that is about to lose its CAS may read this slot concurrently.
    slots_[write_ & mask_].store(item, std::memory_order_relaxed);
    ++write_;
    return true;
  }

  // Producer only. Publishes every pending item at once.
  void FlushPending() {
    // Release: consumers that acquire end_ see the slot stores above.
    end_.store(write_, std::memory_order_release);
  }

  // A consumer thread's optional handle: the same pop, but it remembers the last `end_` it
  // loaded, so while items are known to be published it does not touch the producer's
  // cache line at all (TryPop loads end_ on every call). Used by one thread at a time.
  class Consumer {
   public:
    // Starts from the current end_ (not 0: indexes may start anywhere, see the constructor).
    explicit Consumer(BoundedMcQueue& queue)
        : queue_(&queue), cached_end_(queue.end_.load(std::memory_order_acquire)) {}
    T* Pop() { return queue_->PopCached(cached_end_); }

   private:
    BoundedMcQueue* queue_;
    std::uint64_t cached_end_;  // some end_ value this consumer loaded with acquire
  };

  // Any thread. Claims the oldest published item; nullptr if none is visible.
  T* TryPop() {
    // Relaxed: a first guess; a stale value fails the CAS, which returns the current one.
    std::uint64_t begin = begin_.load(std::memory_order_relaxed);
    while (true) {
      // Acquire pairs with the producer's release store in FlushPending: slots below the
      // loaded end_ hold their published items.
      const std::uint64_t end = end_.load(std::memory_order_acquire);
      // Signed distance: `begin` may be newer than `end` (another consumer claimed up to a
      // later end_ than the one we loaded); then nothing is visible to us.
      if (static_cast<std::int64_t>(end - begin) <= 0) return nullptr;
      // Relaxed read of a slot we do not own yet; validated by the CAS (see the header).
      T* const item = slots_[begin & mask_].load(std::memory_order_relaxed);
      // Release on success: orders our slot read before the producer's next-lap overwrite,
      // which it does only after acquiring a begin_ at or past our new value. Relaxed on
      // failure: we only need the current begin_ to retry with.
      if (begin_.compare_exchange_weak(begin, begin + 1, std::memory_order_release,
                                       std::memory_order_relaxed)) {
        return item;
      }
    }
  }

  // Published, not yet popped items (a snapshot from any thread).
  std::size_t Count() const {
    const std::uint64_t begin = begin_.load(std::memory_order_relaxed);
    const std::uint64_t end = end_.load(std::memory_order_relaxed);
    const auto diff = static_cast<std::int64_t>(end - begin);
    return diff > 0 ? static_cast<std::size_t>(diff) : 0;
  }

  std::size_t Capacity() const { return mask_ + 1; }

 private:
  // TryPop with a caller-held copy of end_. A cached value stays a valid "published up to"
  // bound forever: the acquire that loaded it made every slot write below it visible, and a
  // slot below it can only have been overwritten (next lap) after begin_ moved past it, in
  // which case our CAS fails. Only when `begin` reaches the cached value is end_ reloaded.
  T* PopCached(std::uint64_t& cached_end) {
    // Relaxed: a first guess, validated by the CAS (as in TryPop).
    std::uint64_t begin = begin_.load(std::memory_order_relaxed);
    while (true) {
      if (static_cast<std::int64_t>(cached_end - begin) <= 0) {
        // Acquire: as in TryPop, pairs with the producer's release store of end_.
        cached_end = end_.load(std::memory_order_acquire);
        if (static_cast<std::int64_t>(cached_end - begin) <= 0) return nullptr;
      }
      T* const item = slots_[begin & mask_].load(std::memory_order_relaxed);
      // Release on success / relaxed on failure: exactly as in TryPop.
      if (begin_.compare_exchange_weak(begin, begin + 1, std::memory_order_release,
                                       std::memory_order_relaxed)) {
        return item;
      }
    }
  }

  const std::uint64_t mask_;
  const std::unique_ptr<Atomic<T*>[]> slots_;

  // Producer-private.
  alignas(kCacheLineSize) std::uint64_t write_;  // next index to write (>= end_)
  std::uint64_t cached_begin_;                   // last begin_ the producer loaded

  // Written by the producer, read by consumers.
  alignas(kCacheLineSize) Atomic<std::uint64_t> end_;
  // CASed by consumers, read by the producer when the ring looks full.
  alignas(kCacheLineSize) Atomic<std::uint64_t> begin_;
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_BOUNDED_MC_QUEUE_H_
