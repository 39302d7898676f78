// LocalBatch: a worker's local batch, the run-now posts its tasks made while every worker
// was executing, kept out of the shared front queue until they are published together
// (sched/internal/held_posts.h; docs/design.md, "The hot path every resume takes").
//
// Contract:
//   - One owner (the worker's thread) appends; it is the only thread that calls Append,
//     IsFull, IsEmptyForOwner and SizeForOwner, and it publishes its own batch with
//     PublishAsOwner (or, when no other thread can reach the batch, TakeAlone).
//   - Any other thread may take the whole batch over and publish it: TryTakeOver gives up
//     when another publication of the batch is under way, TakeOver waits for it to end.
//   - A publication holds the batch's claim from before it reads the items until after the
//     items are published (the caller's `publish` callback has returned), and only then
//     removes them from the batch. So an item is always in the batch until it is
//     published, and a thread that finds the batch empty (LooksEmpty, IsEmptyForOwner)
//     finds every item appended before the emptying publication already published. A
//     publisher that the OS deschedules in the middle leaves its items in the batch, and
//     anyone who wants them waits for it (TakeOver, PublishAsOwner) instead of running on
//     past them: this is what lets the scheduler's order bound hold for every thread, also
//     one that stops running at the worst moment.
//   - Every item appended is published exactly once, and the items of one batch come out
//     oldest first.
//   - Per-owner order: when PublishAsOwner returns, every item the owner appended before
//     the call has been published (by it, or by a take-over that ended before). So a post
//     the owner makes next lands behind everything of its own.
//   - Staleness (for take-overs by busy workers): Head() moves exactly when a publication
//     ends; a batch that is not empty and whose head another thread sees unchanged has
//     been held since that thread's earlier look.
//
// Cost: Append is two stores and one load (no locked instruction); a publication is one
// exchange (the claim) and one store for the whole batch; TakeAlone has no locked
// instruction.
#ifndef FAIRSCHED_SCHED_INTERNAL_LOCAL_BATCH_H_
#define FAIRSCHED_SCHED_INTERNAL_LOCAL_BATCH_H_

#include <cstdint>

#include "sync/primitives.h"

namespace fairsched::internal {

template <typename T, std::uint32_t Capacity>
class LocalBatch {
 public:
  static constexpr std::uint32_t kCapacity = Capacity;

  // Owner: whether no item of its own waits. Acquire: the head is stored after its
  // publication, so an owner that sees its batch empty sees that publication done, and a
  // post it makes next lands behind it (per-owner order without taking the claim).
  bool IsEmptyForOwner() const { return end_ == head_.load(std::memory_order_acquire); }
  // Owner: how many items wait. Relaxed: a publication running meanwhile only makes the
  // answer too large.
  std::uint32_t SizeForOwner() const { return end_ - head_.load(std::memory_order_relaxed); }
  // Owner: whether Append needs a publication first. Acquire: the slot written next was
  // last read by the publication whose head store moved past it; its read must come before
  // our write. A stale (smaller) head only makes the owner publish early.
  bool IsFull() const { return end_ - head_.load(std::memory_order_acquire) == Capacity; }
  // Owner, when !IsFull().
  void Append(T* item) {
    const std::uint32_t end = end_;
    slots_[end % Capacity].store(item, std::memory_order_relaxed);
    end_ = end + 1;
    // Release, no read-modify-write: a publisher that reads this tail (acquire) reads the
    // slot.
    tail_.store(end + 1, std::memory_order_release);
  }

  // Any thread: whether the batch looks empty. Acquire on the head: a batch seen empty had
  // its last publication done (see the contract). The tail load is relaxed: a stale tail
  // only misses items appended concurrently with the look.
  bool LooksEmpty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
  }
  // Any thread: the count of items published so far, which moves when a publication ends
  // (see "Staleness"). Relaxed: a stale value only makes a take-over come one look later.
  std::uint32_t Head() const { return head_.load(std::memory_order_relaxed); }

  // Owner: publishes every waiting item, oldest first, through `publish(T** items, count)`
  // (called only when there are some), and returns how many. Waits while a take-over
  // publishes (it may hold earlier items of ours: per-owner order).
  template <typename Publish>
  std::uint32_t PublishAsOwner(Publish publish) {
    if (IsEmptyForOwner()) return 0;  // nothing of ours waits, nothing is being published
    Claim();
    const std::uint32_t count = PublishClaimed(publish);
    Release();
    return count;
  }

  // Owner, when no other thread can reach this batch (its scheduler has one worker): takes
  // every waiting item, oldest first, into `out` (room for SizeForOwner() items). No claim:
  // nobody else publishes or looks.
  std::uint32_t TakeAlone(T** out) {
    const std::uint32_t head = head_.load(std::memory_order_relaxed);  // ours alone
    const std::uint32_t count = end_ - head;
    for (std::uint32_t i = 0; i < count; ++i) {
      out[i] = slots_[(head + i) % Capacity].load(std::memory_order_relaxed);
    }
    head_.store(end_, std::memory_order_relaxed);  // read back only by this thread
    return count;
  }

  // Another thread: publishes every waiting item through `publish(T** items, count)`
  // unless another publication of this batch is under way (which may be the owner's, or
  // hold the same items). Returns whether it published anything.
  template <typename Publish>
  bool TryTakeOver(Publish publish) {
    // Acquire on success: see Claim.
    if (taking_.exchange(true, std::memory_order_acquire)) return false;
    const bool published = PublishUntilEmpty(publish);
    Release();
    return published;
  }

  // Another thread: like TryTakeOver, but waits for a publication under way to end, then
  // publishes what is left. When it returns, everything appended before the call has been
  // published. Returns whether it published anything itself.
  template <typename Publish>
  bool TakeOver(Publish publish) {
    Claim();
    const bool published = PublishUntilEmpty(publish);
    Release();
    return published;
  }

 private:
  // Takes the batch's claim, waiting while another thread holds it. Acquire: the previous
  // holder's publication and its head store are ordered before our reads, so we read the
  // exact head (only claim holders write it) and publish behind what it published.
  void Claim() {
    while (taking_.exchange(true, std::memory_order_acquire)) {
      // Test before the next exchange: waiting does not bounce the line. The holder is
      // a few instructions from its release unless the OS descheduled it.
      while (taking_.load(std::memory_order_relaxed)) YieldThread();
    }
  }
  // Release: the next holder (and the owner's IsEmptyForOwner, through the head) sees our
  // publication done.
  void Release() { taking_.store(false, std::memory_order_release); }

  // A take-over, with the claim held: publishes until a look after its own head store finds
  // nothing more (`publish` may be called several times). The owner may be appending while
  // we publish (its task runs on); an item it appended after our read would otherwise be
  // left behind by a publication that moved the head, and a busy looker that sees the head
  // move starts its count for the batch again (TakeOverStaleBatches): the item would wait
  // for a whole second count. So a take-over ends only when the head it stored is the tail
  // it reads after: whatever is appended later arrives after that head store, and is
  // counted from the looker's first look after it. Ends: each round takes everything
  // appended so far, and the owner appends one item per post its task makes.
  template <typename Publish>
  bool PublishUntilEmpty(Publish publish) {
    bool published = false;
    while (PublishClaimed(publish) > 0) published = true;
    return published;
  }

  // With the claim held: reads every waiting item, publishes them, and only then moves the
  // head past them. Returns how many.
  template <typename Publish>
  std::uint32_t PublishClaimed(Publish publish) {
    // Relaxed: only claim holders write the head, and Claim's acquire ordered the last
    // one's store before this load. Acquire on the tail: pairs with Append's release
    // store, so the slots below it are written.
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    std::uint32_t count = tail_.load(std::memory_order_acquire) - head;
    if (count == 0) return 0;
    // Never more than Capacity: the owner appends only while end - head < Capacity, with a
    // head no newer than the exact one we read (the explorer's harness checks every
    // publication's count). The clamp keeps `items` in bounds should that ever break; it
    // loses nothing, the rest stays for the next publication.
    if (count > Capacity) count = Capacity;
    T* items[Capacity];
    for (std::uint32_t i = 0; i < count; ++i) {
      items[i] = slots_[(head + i) % Capacity].load(std::memory_order_relaxed);
    }
    publish(items, count);
    // Release, after the publication: a thread that reads this head (the owner's
    // IsEmptyForOwner and IsFull, a looker's LooksEmpty) sees the items published, and the
    // owner reuses the slots only after our reads of them.
    head_.store(head + count, std::memory_order_release);
    return count;
  }

  // The shared line: read by lookers, publishers and the owner.
  alignas(kCacheLineSize) Atomic<std::uint32_t> head_{0};  // written by claim holders
  Atomic<std::uint32_t> tail_{0};                          // written by the owner
  Atomic<bool> taking_{false};                             // the claim: a publication runs
  std::uint32_t end_ = 0;  // == tail_, owner only
  // Atomic slots, relaxed: the accesses are ordered by the tail and head stores above, but
  // the explorer checks them as atomics (a plain pointer would not be instrumented).
  Atomic<T*> slots_[Capacity] = {};
};

}  // namespace fairsched::internal

#endif  // FAIRSCHED_SCHED_INTERNAL_LOCAL_BATCH_H_
