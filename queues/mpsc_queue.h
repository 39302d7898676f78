// MpscQueue: the scheduler's front queue. Unbounded, intrusive, lock-free; any number of
// producers, one consumer. Models the FrontQueue concept of queues/concepts.h.
//
// It is a stack (Treiber): `Push` CASes a new top, `PopAll` exchanges the top with null and
// takes the whole chain. The chain comes out newest first; `PopAll` reverses it to restore
// FIFO order, `PopAllReversed` skips that pass for callers that do not care. One pointer
// of shared state means one contended cache line and no ABA problem: the consumer never
// pops a single item, so a producer's CAS can only fail because another push (or the
// consumer's exchange) changed the top, and retrying with the returned value is correct.
//
// The item type links itself through a member `T* next` (or the member named by `kNext`).
// The queue never owns items. Items must stay alive while queued.
#ifndef FAIRSCHED_QUEUES_MPSC_QUEUE_H_
#define FAIRSCHED_QUEUES_MPSC_QUEUE_H_

#include "queues/concepts.h"
#include "sync/primitives.h"

namespace fairsched {

template <typename T, T* T::*kNext = &T::next>
class MpscQueue {
 public:
  MpscQueue() = default;
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  // Pushes `item`; returns true if the queue was empty before this push. Thread-safe.
  bool Push(T* item) {
    // Relaxed is enough for this first read: the value is only a guess that the CAS below
    // validates, and nothing is read through it.
    T* old_top = top_.load(std::memory_order_relaxed);
    do {
      item->*kNext = old_top;
      // seq_cst on success (a release, plus a place in the single total order): the
      // consumer's acquire exchange in PopAll must see our write of the link above and
      // everything the producer wrote into the item before Push; and a scheduler that
      // pushes and then reads its "is anybody awake" flags with seq_cst needs the push
      // ordered before those reads (a Dekker pair; the same instruction on x86).
      // Relaxed on failure: the failed CAS only hands back the current top to retry with
      // (loaded once, then refreshed by each failed CAS, as DESIGN.md asks).
    } while (!top_.compare_exchange_weak(old_top, item, std::memory_order_seq_cst,
                                         std::memory_order_relaxed));
    return old_top == nullptr;
  }

  // Takes every queued item; returns them oldest first, linked through `next`, or nullptr.
  // One consumer at a time.
  T* PopAll() { return ReverseChain<T, kNext>(PopAllReversed()); }

  // Takes every queued item; returns them newest first. One consumer at a time.
  T* PopAllReversed() {
    // Fast exit without a locked instruction when nothing is queued. Relaxed: an empty
    // answer carries no data, and a push racing with this load is taken next time.
    if (top_.load(std::memory_order_relaxed) == nullptr) return nullptr;
    // Acquire pairs with the producers' release CAS: every item in the chain, and its link,
    // is fully written before we walk it.
    return top_.exchange(nullptr, std::memory_order_acquire);
  }

  // Snapshot; exact only when no producer is running. Relaxed by default; seq_cst for a
  // consumer's half of a Dekker pair with Push (see Push).
  bool IsEmpty(std::memory_order order = std::memory_order_relaxed) const {
    return top_.load(order) == nullptr;
  }

 private:
  // Own cache line: producers hammer it, and it must not share a line with whatever the
  // embedding object puts next to the queue.
  alignas(kCacheLineSize) Atomic<T*> top_{nullptr};
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_MPSC_QUEUE_H_
