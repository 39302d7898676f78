// HomeRing: one worker's home queue in the proposed home-queue scheduler (issue 31;
// tla/README.md, "Proposed: home queues with a skew bound"). A FIFO of T* with a stamp per
// item: the owner pushes at the tail and pops at the head; any thread may take a prefix of
// items from the head. Unbounded (it grows); never owns, copies or frees the items.
//
// Contract:
//   - Push(item, stamp): owner only. Stamps must not decrease from one push to the next
//     (the scheduler's global clock), so a prefix "older than X" is a prefix of the ring.
//   - Pop(): owner only. The oldest item, or nullptr if the ring is empty.
//   - TakeFront(below, max, half, out): any thread, the owner included. Claims the longest
//     prefix of items whose stamps are below `below`, at most `max` of them and, when
//     `half`, at most half of the ring (rounded up); writes them to out[0..n) in FIFO order
//     and returns n (and, if `stamps_out` is given, their stamps to stamps_out[0..n)).
//     Every pushed item is returned exactly once, by Pop or TakeFront.
//   - HeadStamp(): owner only; the head item's stamp, or nullopt if empty.
//   - PeekAhead(distance): owner only; the item `distance` places behind the head, or
//     nullptr if the ring holds fewer. Another thread may claim it meanwhile: a hint, for
//     prefetching the memory of what runs soon, never to run.
//   - SeemsNonEmpty(), SizeHint(): any thread; hints (exact for the owner). ClaimedCount():
//     any thread; how many items were claimed so far (it only grows).
//   - Not movable; destroy it only when no thread uses it any more.
//
// Structure: `head_` and `tail_` count items since the start (they only grow); item i lives
// in slot i & mask of the current ring. The owner writes a slot and then stores tail_
// (release). Claims, by the owner's Pop or any TakeFront, read head_, tail_, the ring
// pointer and the slots, and then CAS head_ from the value read to head_ + n: the CAS
// decides who owns those items, and a loser drops what it read (which may be stale: the
// owner reuses a slot once its item was claimed). A full ring grows: the owner copies the
// unclaimed items into a ring twice the size and swaps the ring pointer; the old ring is
// never written again and is kept until the HomeRing goes, so a claimer still reading it
// reads what it held. Doubling keeps all old rings together smaller than the current one.
// tla/spin/home_ring.pml checks these steps (exactly once, intact slots, growth), with
// seeded bugs for each ordering that matters below.
//
// Costs: Push is two relaxed slot stores, one acquire load and one release store (no
// locked instruction); Pop and TakeFront are one CAS each (a TakeFront claims up to `max`
// items with it). A full ring costs one allocation and a copy of its live items.
#ifndef FAIRSCHED_QUEUES_HOME_RING_H_
#define FAIRSCHED_QUEUES_HOME_RING_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "sync/primitives.h"

namespace fairsched {

template <typename T>
class HomeRing {
 public:
  // `first_size`: the first ring's slot count, rounded up to a power of two (at least 2).
  explicit HomeRing(std::size_t first_size = 256) {
    std::size_t size = 2;
    while (size < first_size) size *= 2;
    rings_.push_back(std::make_unique<Ring>(size));
    ring_.store(rings_.back().get(), std::memory_order_relaxed);  // published with *this
  }
  HomeRing(const HomeRing&) = delete;
  HomeRing& operator=(const HomeRing&) = delete;

  // Owner only.
  void Push(T* item, std::uint64_t stamp) {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);  // only we store it
    Ring* ring = rings_.back().get();
    // Acquire: the slot we reuse (item tail - size) was claimed by a CAS on head_; reading
    // the head that CAS wrote makes the claimer's read of the slot happen before our write,
    // so it cannot read this item as the old one. A stale head only makes the ring look
    // fuller: it grows early, never overwrites an unclaimed slot.
    if (tail - head_.load(std::memory_order_acquire) > ring->mask) ring = Grow(tail);
    Slot& slot = ring->slots[tail & ring->mask];
    // Relaxed: published by the tail store below. (Atomics because a claimer may still be
    // reading this slot's previous item, which it will drop when its CAS fails.)
    slot.item.store(item, std::memory_order_relaxed);
    slot.stamp.store(stamp, std::memory_order_relaxed);
    // Release: a claimer that reads this tail (acquire) reads the slot written above.
    tail_.store(tail + 1, std::memory_order_release);
  }

  // Owner only.
  T* Pop() {
    T* item = nullptr;
    return TakeFront(kAnyStamp, 1, false, &item) == 1 ? item : nullptr;
  }

  // Any thread. `out` has room for `max` items.
  int TakeFront(std::uint64_t below, std::size_t max, bool half, T** out,
                std::uint64_t* stamps_out = nullptr) {
    // Relaxed: a guess the CAS below checks. If the CAS succeeds, head was this value all
    // along, so no item from it on was claimed and the owner reused none of their slots.
    std::uint64_t head = head_.load(std::memory_order_relaxed);
    while (true) {
      // Acquire: the slots below this tail were written before the owner stored it.
      const std::uint64_t tail = tail_.load(std::memory_order_acquire);
      if (head >= tail) return 0;
      // Acquire, and after the tail: the ring current when the slots up to that tail were
      // written, or a later one (each holds every unclaimed item as of its swap). Read
      // before the tail, it could be a ring swapped out before some of those slots were
      // written, and a slot read from it would be one it never held.
      const Ring& ring = *ring_.load(std::memory_order_acquire);
      std::uint64_t limit = std::min<std::uint64_t>(tail - head, max);
      if (half) limit = std::min<std::uint64_t>(limit, (tail - head + 1) / 2);
      std::uint64_t n = 0;
      for (; n < limit; ++n) {
        const Slot& slot = ring.slots[(head + n) & ring.mask];
        const std::uint64_t stamp = slot.stamp.load(std::memory_order_relaxed);
        if (stamp >= below) break;
        out[n] = slot.item.load(std::memory_order_relaxed);
        if (stamps_out != nullptr) stamps_out[n] = stamp;
      }
      if (n == 0) return 0;
      // Claims items [head, head + n) against the owner and other claimers. Release: the
      // owner reuses these slots only after reading this head (acquire, in Push), so our
      // reads above happen before its writes. A failure reloads head (relaxed, a guess
      // again) and reads again: what was read may be stale.
      if (head_.compare_exchange_weak(head, head + n, std::memory_order_release,
                                      std::memory_order_relaxed)) {
        return static_cast<int>(n);
      }
    }
  }

  // Owner only.
  std::optional<std::uint64_t> HeadStamp() const {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_relaxed)) return std::nullopt;
    // Another thread may claim that item meanwhile: then this is an older stamp than the
    // new head's, which errs on the side of "old".
    const Ring& ring = *rings_.back();
    return ring.slots[head & ring.mask].stamp.load(std::memory_order_relaxed);
  }

  // Owner only.
  const T* PeekAhead(std::size_t distance) const {
    // Relaxed: the owner stored tail_ and every slot, so it reads its own latest values; a
    // stale head (a claim just made) names an item already claimed, harmless for a hint.
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (tail_.load(std::memory_order_relaxed) - head <= distance) return nullptr;
    const Ring& ring = *rings_.back();
    return ring.slots[(head + distance) & ring.mask].item.load(std::memory_order_relaxed);
  }

  // Any thread: a hint, exact for the owner. seq_cst loads, for a parker's re-check that
  // must be ordered after its registration (the caller's protocol decides what it needs).
  bool SeemsNonEmpty() const {
    return tail_.load(std::memory_order_seq_cst) > head_.load(std::memory_order_seq_cst);
  }

  // Any thread: how many items have been claimed since the start (by Pop or TakeFront); it
  // only grows. Relaxed: a hint, e.g. "the owner has not popped since my last look".
  std::uint64_t ClaimedCount() const { return head_.load(std::memory_order_relaxed); }

  // Any thread: how many items wait, a hint (exact for the owner). Relaxed loads of two
  // counters, so clamped: a tail older than the head read first reads as empty.
  std::uint64_t SizeHint() const {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    return tail > head ? tail - head : 0;
  }

  static constexpr std::uint64_t kAnyStamp = ~std::uint64_t{0};

 private:
  struct Slot {
    Atomic<T*> item{nullptr};
    Atomic<std::uint64_t> stamp{0};
  };
  struct Ring {
    explicit Ring(std::uint64_t size) : mask(size - 1), slots(std::make_unique<Slot[]>(size)) {}
    const std::uint64_t mask;  // size - 1
    std::unique_ptr<Slot[]> slots;
  };

  // Owner only, the ring is full: copies the unclaimed items [head, tail) into a ring twice
  // the size and makes it the current one.
  Ring* Grow(std::uint64_t tail) {
    const Ring& old = *rings_.back();
    auto bigger = std::make_unique<Ring>(2 * (old.mask + 1));
    // Acquire, as in Push: items below head are claimed and need no copy.
    for (std::uint64_t i = head_.load(std::memory_order_acquire); i < tail; ++i) {
      const Slot& from = old.slots[i & old.mask];
      Slot& to = bigger->slots[i & bigger->mask];
      to.item.store(from.item.load(std::memory_order_relaxed), std::memory_order_relaxed);
      to.stamp.store(from.stamp.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    Ring* now = bigger.get();
    rings_.push_back(std::move(bigger));
    // Release: a claimer that reads a tail counting a slot of this ring and then this
    // pointer (both acquire) reads the copies. Claimers still reading the old ring read
    // what it held: it is never written again.
    ring_.store(now, std::memory_order_release);
    return now;
  }

  // head_ is CASed by every claimer; tail_ is stored by the owner at every push: separate
  // lines, so claimers' CASes do not slow the owner's pushes. The owner's fields share
  // tail_'s line.
  alignas(kCacheLineSize) Atomic<std::uint64_t> head_{0};
  alignas(kCacheLineSize) Atomic<std::uint64_t> tail_{0};
  Atomic<Ring*> ring_{nullptr};  // the current ring, for claimers
  std::vector<std::unique_ptr<Ring>> rings_;  // the owner's: every ring, the last current
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_HOME_RING_H_
