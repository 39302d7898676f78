// LocalBatch: a worker's local batch, the run-now posts its tasks made while every worker
// was executing, kept out of the shared front queue until they are published together
// (sched/task_scheduler.h, "Local batches and the order bound").
//
// Contract:
//   - One owner (the worker's thread) appends; it is the only thread that calls Append,
//     IsFull and IsEmptyForOwner, and it publishes its own batch with TakeAsOwner.
//   - Any other thread may take the whole batch over with TakeOver, which hands the items
//     to a callback (the publication) before it lets the owner publish again.
//   - Every item appended is taken exactly once, by one TakeAsOwner or TakeOver, and the
//     items of one batch come out oldest first.
//   - Per-owner order: when TakeAsOwner returns, every item the owner appended before the
//     call has been taken, and every TakeOver that took some of them has finished its
//     callback. So what the owner publishes next (the items TakeAsOwner returned, or a post
//     it makes after it) follows everything of its own that was published before.
//   - Staleness (for take-overs by busy workers): the owner advances Epoch() at the end of
//     each of its execution batches; a batch that is not empty and whose epoch another
//     thread sees unchanged has been held since that thread's earlier look.
//
// Cost: Append is two plain-ish stores and one load (no locked instruction); a take is one
// CAS for the whole batch.
#ifndef FAIRSCHED_SCHED_INTERNAL_LOCAL_BATCH_H_
#define FAIRSCHED_SCHED_INTERNAL_LOCAL_BATCH_H_

#include <cstdint>

#include "sync/primitives.h"

namespace fairsched::internal {

template <typename T, std::uint32_t Capacity>
class LocalBatch {
 public:
  static constexpr std::uint32_t kCapacity = Capacity;

  // Owner: whether no item of its own waits (a take-over may still be publishing some: see
  // TakeAsOwner). Relaxed: the owner wrote end_, and a stale head only says "not empty".
  bool IsEmptyForOwner() const { return end_ == head_.load(std::memory_order_relaxed); }
  // Owner: how many items wait, as of the last take it saw (relaxed, like IsEmptyForOwner:
  // a take-over running meanwhile only makes the answer too large).
  std::uint32_t SizeForOwner() const { return end_ - head_.load(std::memory_order_relaxed); }
  // Owner: whether Append needs a publication first. Acquire: the slot written next was
  // last read by the taker whose CAS moved the head past it; its read must come before our
  // write. A stale (smaller) head only makes the owner publish early.
  bool IsFull() const { return end_ - head_.load(std::memory_order_acquire) == Capacity; }
  // Owner, when !IsFull().
  void Append(T* item) {
    const std::uint32_t end = end_;
    slots_[end % Capacity].store(item, std::memory_order_relaxed);
    end_ = end + 1;
    // Release, no read-modify-write: a taker that reads this tail (acquire) reads the slot.
    tail_.store(end + 1, std::memory_order_release);
  }

  // Any thread: whether the batch looks empty. Relaxed: a hint for whether to look closer.
  bool LooksEmpty() const {
    return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_relaxed);
  }
  // The owner's execution-batch count (see "Staleness"). Relaxed: a stale value only makes a
  // take-over come earlier or one look later; no item depends on it.
  std::uint32_t Epoch() const { return epoch_.load(std::memory_order_relaxed); }
  // Owner, at the end of each execution batch. Single writer: a load and a store.
  void AdvanceEpoch() {
    epoch_.store(epoch_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Owner: takes every item, oldest first, into `out` (room for Capacity); returns how
  // many. Then waits for a take-over in progress to finish its callback (see "Per-owner
  // order"): a taker that took earlier items of ours may not have published them yet.
  std::uint32_t TakeAsOwner(T** out) {
    const std::uint32_t count = Take(out);
    // Acquire: pairs with TakeOver's closing release store, so the taker's publication
    // happens before whatever we publish next. A taker whose CAS took items of ours set taking_
    // before that CAS, and our Take read the head that CAS wrote (acquire), so we see
    // taking_ set until it finishes. A taker that starts after our Take finds only what we
    // append later, which we cannot publish before it is done: we wait here first.
    while (taking_.load(std::memory_order_acquire)) YieldThread();
    return count;
  }

  // Another thread: takes every item and passes them to `publish(T** items, count)` (only
  // when there are some). At most one take-over runs at a time; returns false at once if
  // another is running (it publishes the same items) or the batch was empty.
  template <typename Publish>
  bool TakeOver(Publish publish) {
    // Acquire on success: the previous taker's publication is ordered before ours. The
    // store of true must come before our head CAS (which releases it): see TakeAsOwner.
    if (taking_.exchange(true, std::memory_order_acquire)) return false;
    T* items[Capacity];
    const std::uint32_t count = Take(items);
    if (count > 0) publish(items, count);
    // Release: the owner's acquire load in TakeAsOwner sees our publication done.
    taking_.store(false, std::memory_order_release);
    return count > 0;
  }

 private:
  // Like a ready-queue pop: read the slots, then claim them all with one CAS on the head
  // (a loser drops what it read). The owner never overwrites a slot before the head has
  // passed it, so what a taker read was written before the tail it acquired.
  std::uint32_t Take(T** out) {
    // Acquire: pairs with the head CAS of an earlier taker (its reads of the slots come
    // before the owner reuses them) and, for the tail, with Append's release store.
    std::uint32_t head = head_.load(std::memory_order_acquire);
    while (true) {
      const std::uint32_t tail = tail_.load(std::memory_order_acquire);
      const std::uint32_t count = tail - head;
      if (count == 0) return 0;
      if (count > Capacity) {
        // Our head is stale: since we read it the head moved on (the owner's take) and the
        // owner refilled past it, and our tail load saw the refill (weak memory allows it;
        // the C++ model explorer finds it). Reading `count` slots would overrun `out` (and
        // the CAS would fail anyway): read the head again.
        head = head_.load(std::memory_order_acquire);
        continue;
      }
      for (std::uint32_t i = 0; i < count; ++i) {
        out[i] = slots_[(head + i) % Capacity].load(std::memory_order_relaxed);
      }
      // Acq_rel: release orders our slot reads before the owner's reuse of the slots (it
      // acquires the head before writing past it); acquire on failure: see the first load.
      if (head_.compare_exchange_weak(head, tail, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return count;
      }
    }
  }

  // The shared line: read by takers and the owner.
  alignas(kCacheLineSize) Atomic<std::uint32_t> head_{0};
  Atomic<std::uint32_t> tail_{0};
  Atomic<bool> taking_{false};  // a TakeOver runs (at most one at a time)
  Atomic<std::uint32_t> epoch_{0};
  std::uint32_t end_ = 0;  // == tail_, owner only
  // Atomic slots, relaxed: a taker may read a slot the owner is rewriting (its CAS then
  // fails and it drops what it read), which would be a data race on plain pointers.
  Atomic<T*> slots_[Capacity] = {};
};

}  // namespace fairsched::internal

#endif  // FAIRSCHED_SCHED_INTERNAL_LOCAL_BATCH_H_
