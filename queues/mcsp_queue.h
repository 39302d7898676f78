// McspQueue: the scheduler's ready queue. Unbounded, one producer, many consumers,
// "semi-lock-free"; models the ReadyQueue concept of queues/concepts.h. Stores T* and never
// owns, copies or frees the items.
//
// Structure: a chain of fixed-size blocks (sub-queues) linked oldest to newest.
//
//   head_ -> [block] -> [block] -> ... -> [block] <- tail_ (the producer writes here)
//             begin..end: published, not yet popped
//
// Each block is a bounded array of `block_size` slots with two indexes:
//   `end`   - slots below it are published. Only the producer writes it: it first writes the
//             slot, then stores `end` with release.
//   `begin` - the next slot to pop. Consumers claim a slot by a CAS of `begin` from b to b+1,
//             after reading slot b. The CAS decides who owns item b; losers retry.
// A block is filled once: when it is full the producer links a fresh block after it and never
// writes the old one again, so inside one block's life a slot is written once and then only
// read. The only time a slot can be overwritten is when the block is recycled (below).
//
// Consumers hold explicit state (a `Consumer`): the block they are in. They pop lock-free
// inside it. When it is exhausted (begin == end and a successor exists, which means `end` is
// final) they take the mutex to step to the successor. The producer takes the mutex only to
// link a new block. So the mutex is taken about once per block_size pushes by the producer
// and once per block_size pops per consumer: "lock per operation" is ~(1 + consumers) /
// block_size. `LockStats()` counts it.
//
// Why reading a slot before winning the CAS is safe: a consumer reads slot b, then CASes.
// If it loses, it drops what it read. The read is only harmless if nobody writes slot b
// concurrently. Within a block's life nobody does (filled once). Across lives the block is
// rewritten after recycling, and recycling is what must wait: every block counts the
// consumers attached to it (`consumers`, changed only under the mutex), and a block is
// recycled only when it is exhausted, no longer the tail, and no consumer is attached, all
// decided under the mutex. A consumer detaches only under the mutex, after its last read of
// the block, so its reads happen-before the producer's later writes into the recycled block
// (both sides synchronise through the mutex). The same count rules out ABA on `begin`: the
// indexes are reset on recycling, but no consumer holding an old `begin` value is attached.
//
// Recycling: exhausted blocks with no consumers are unlinked from the chain (even when a
// lagging consumer sits in an older block) and put on a free list, from which the producer
// takes its next block. Steady state therefore does not allocate. `Reserve(n)` fills the free
// list up front.
//
// Attaching: a new Consumer attaches at the oldest block that still may hold unpopped items
// (it skips exhausted blocks), so it can pop items published before it existed. Every
// published item is popped exactly once no matter when consumers come and go.
//
// Batches: `PushPending` writes slots without moving `end`; `FlushPending` stores `end` once.
// Deviation from "one step": a batch that does not fit in the tail block is published in
// more than one step, because the producer must publish a block's final `end` before it
// links the successor (consumers read "has a successor" as "end is final"). Each step keeps
// the order; consumers can see the first part of such a batch slightly before the rest.
//
// Threading: Push/PushPending/FlushPending/Reserve from one producer thread at a time.
// Each Consumer is used by one thread at a time. Count/LockStats from any thread. The queue
// must outlive its consumers.
#ifndef FAIRSCHED_QUEUES_MCSP_QUEUE_H_
#define FAIRSCHED_QUEUES_MCSP_QUEUE_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "queues/lock_stats.h"
#include "sync/primitives.h"

namespace fairsched {

template <typename T>
class McspQueue {
  struct Block;

 public:
  static constexpr std::size_t kDefaultBlockSize = 1024;

  // A consuming thread's handle: the block it is in plus a cached copy of that block's `end`.
  class Consumer {
   public:
    // Attaches to the oldest block that may still hold unpopped items (takes the mutex).
    explicit Consumer(McspQueue& queue) : queue_(&queue) { block_ = queue_->Attach(&counter_); }
    // Movable (the moved-from handle is detached and must not be used), not copyable.
    Consumer(Consumer&& other) noexcept
        : queue_(other.queue_),
          block_(other.block_),
          cached_end_(other.cached_end_),
          counter_(other.counter_.Stats()) {
      other.block_ = nullptr;
    }
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;
    ~Consumer() {
      if (block_ != nullptr) queue_->Detach(block_, &counter_);
    }

    // The oldest published item not yet taken by any consumer, or nullptr. Lock-free except
    // when stepping to the next block.
    T* Pop() {
      T* item = nullptr;
      return PopUpTo(&item, 1) == 1 ? item : nullptr;
    }

    // Takes up to `max` (>= 1) of the oldest published items, in order, with one CAS (they
    // must all lie in the attached block: a batch never spans two blocks). Returns how many
    // it took (0: none visible). The items are this consumer's from then on: a consumer
    // that takes several keeps the others from the rest of the batch.
    std::uint32_t PopUpTo(T** out, std::uint32_t max) {
      while (true) {
        Block* const block = block_;
        // Relaxed: only the first guess for the CAS below; a stale (smaller) value just makes
        // the CAS fail and hand back the current one. Nothing is read through it before the
        // `end` check below has made the slot's contents visible.
        std::uint32_t begin = block->begin.load(std::memory_order_relaxed);
        while (true) {
          if (begin >= cached_end_) {
            // Acquire pairs with the producer's release store of `end` (Publish): every slot
            // below the value we load is fully written and visible to our plain read below.
            // The cached copy stays valid: `end` only grows during a block's life, and our
            // attachment keeps the block from being recycled under us.
            cached_end_ = block->end.load(std::memory_order_acquire);
            if (begin >= cached_end_) break;  // nothing published beyond `begin`
          }
          // Plain reads of slots we do not own yet; safe because no one writes them during
          // this block's life (see the header comment) - we may lose the CAS and drop them.
          const std::uint32_t count = std::min(max, cached_end_ - begin);
          for (std::uint32_t i = 0; i < count; ++i) out[i] = block->slots[begin + i];
          // Relaxed on success and failure: the CAS only arbitrates which consumer owns slots
          // [begin, begin + count) (RMWs on one atomic are totally ordered, so exactly one
          // wins each index). The items' data became visible through the acquire of `end`
          // above, and ordering against block reuse is provided by the mutex on
          // detach/recycle, not by `begin`.
          if (block->begin.compare_exchange_weak(begin, begin + count, std::memory_order_relaxed,
                                                 std::memory_order_relaxed)) {
            return count;
          }
          // Lost (or spurious failure): `begin` now holds the current value; try again.
        }
        // The block looks empty. The producer links a successor only after filling a block,
        // so a block not yet full (as of our acquire of `end`) has none: nothing is visible.
        if (cached_end_ < queue_->block_size_) return 0;
        // Without a successor the whole queue is empty.
        // Acquire pairs with the release store that linked the successor (producer in
        // StartNewBlock, or a recycler re-linking around a freed block): the producer stored
        // this block's final `end` before that, so the re-read of `end` below is final.
        if (block->next.load(std::memory_order_acquire) == nullptr) return 0;
        // Items published between our `end` load and the link are still to be popped here.
        // Relaxed: ordered after the acquire above, which already made the final value visible.
        cached_end_ = block->end.load(std::memory_order_relaxed);
        if (block->begin.load(std::memory_order_relaxed) < cached_end_) continue;
        // Exhausted for good: move on (takes the mutex).
        block_ = queue_->StepForward(block, &counter_);
        cached_end_ = 0;
      }
    }

    // A hint for prefetching: the item `ahead` places behind the next one to be popped, if
    // this consumer already knows it is published (no acquire, no write); else nullptr. It
    // may be popped by another consumer meanwhile: only look at it, never use it.
    T* Peek(std::uint32_t ahead) const {
      const Block* const block = block_;
      // Relaxed: a hint; the slot below cached_end_ is published and, while we are
      // attached to the block, never rewritten.
      const std::uint32_t index = block->begin.load(std::memory_order_relaxed) + ahead;
      return index < cached_end_ ? block->slots[index] : nullptr;
    }

    // A cheap hint for wake-up decisions (three relaxed loads, no lock, no write): true if
    // the attached block seems to hold published items nobody has popped, or is exhausted
    // but has a successor that may. It may be stale in both directions; never base a
    // correctness decision on it (Pop is the truth).
    bool HasMore() const {
      const Block* const block = block_;
      // Relaxed: a hint only (see above); nothing is read through these values.
      if (block->begin.load(std::memory_order_relaxed) <
          block->end.load(std::memory_order_relaxed)) {
        return true;
      }
      return block->next.load(std::memory_order_relaxed) != nullptr;
    }

    // Mutex acquisitions made by this consumer (attach, block steps, detach).
    QueueLockStats LockStats() const { return counter_.Stats(); }

   private:
    McspQueue* queue_;
    Block* block_ = nullptr;        // attached block (counted in block_->consumers)
    std::uint32_t cached_end_ = 0;  // last `end` loaded (acquire) from block_
    LockCounter counter_;           // written only by the thread using this consumer
  };

  // `block_size` slots per block (>= 1). Allocates the first block.
  explicit McspQueue(std::size_t block_size = kDefaultBlockSize)
      : block_size_(static_cast<std::uint32_t>(block_size)) {
    assert(block_size >= 1 && block_size < UINT32_MAX);
    write_block_ = head_ = tail_ = NewBlock();
  }
  McspQueue(const McspQueue&) = delete;
  McspQueue& operator=(const McspQueue&) = delete;

  // All consumers must have been destroyed. Pending and unpopped items are dropped (the
  // queue does not own them).
  ~McspQueue() {
    assert(consumer_count_ == 0 && "McspQueue destroyed while consumers are attached");
    Block* block = head_;
    while (block != nullptr) {
      Block* next = block->next.load(std::memory_order_relaxed);
      delete block;
      block = next;
    }
    while (free_ != nullptr) {
      Block* next = free_->free_next;
      delete free_;
      free_ = next;
    }
  }

  // Producer only. Publishes pending items (if any) and `item`.
  void Push(T* item) {
    PushPending(item);
    Publish();
  }

  // Producer only. Writes `item` into the next slot without publishing it.
  void PushPending(T* item) {
    if (write_end_ == block_size_) StartNewBlock();
    // Plain write: no consumer reads a slot at or above `end`, and a recycled block has no
    // consumer attached (see the header comment).
    write_block_->slots[write_end_++] = item;
  }

  // Producer only. Publishes every pending item at once.
  void FlushPending() {
    if (write_end_ != published_end_) Publish();
  }

  // Published, not yet popped items. A snapshot; takes the mutex (not counted in LockStats)
  // and walks the chain, O(blocks). For statistics and tests, not for hot paths.
  std::size_t Count() const {
    MutexLock lock(mutex_);
    std::size_t count = 0;
    for (const Block* block = head_;; block = block->next.load(std::memory_order_relaxed)) {
      // Relaxed: a snapshot. Load begin first: end only grows, so it is usually >= the begin
      // we saw, but nothing orders the two loads, hence the clamp.
      const std::uint32_t begin = block->begin.load(std::memory_order_relaxed);
      const std::uint32_t end = block->end.load(std::memory_order_relaxed);
      if (end > begin) count += end - begin;
      if (block == tail_) break;
    }
    return count;
  }

  // Pre-allocates enough free blocks for `n` more items, so the next `n` pushes do not
  // allocate. Producer thread (or before consumers start).
  void Reserve(std::size_t n) {
    MutexLock lock(mutex_);
    const std::size_t blocks = (n + block_size_ - 1) / block_size_;
    while (free_count_ < blocks) FreeBlockLocked(NewBlock());
  }

  // Every counted acquisition of the mutex (producer links, consumer steps, attach/detach).
  QueueLockStats LockStats() const { return lock_counter_.Stats(); }

  std::size_t BlockSize() const { return block_size_; }

  // Blocks allocated so far (chain + free list). Steady state keeps this constant.
  std::size_t AllocatedBlocks() const {
    MutexLock lock(mutex_);
    return allocated_blocks_;
  }

 private:
  struct Block {
    explicit Block(std::uint32_t size) : slots(new T*[size]) {}

    // Producer-written, consumer-read: on its own line so the producer's stores do not
    // invalidate the line consumers CAS, and vice versa.
    alignas(kCacheLineSize) Atomic<std::uint32_t> end{0};
    // Consumer-claimed by CAS.
    alignas(kCacheLineSize) Atomic<std::uint32_t> begin{0};
    // Successor in the chain. Written under the mutex (link by the producer, re-link around
    // a recycled block, reset on free); read lock-free by consumers only as "is there a
    // successor", and dereferenced only under the mutex.
    alignas(kCacheLineSize) Atomic<Block*> next{nullptr};
    int consumers = 0;           // attached consumers; guarded by mutex_
    Block* free_next = nullptr;  // free-list link; guarded by mutex_
    std::unique_ptr<T*[]> slots;
  };

  Block* NewBlock() {
    ++allocated_blocks_;
    return new Block(block_size_);
  }

  // Producer: makes slots [0, write_end_) of the tail block visible.
  void Publish() {
    // Release: a consumer that loads this `end` with acquire sees the slot writes before it
    // (and, transitively, everything the producer wrote into the items).
    write_block_->end.store(write_end_, std::memory_order_release);
    published_end_ = write_end_;
  }

  // Producer: the tail block is full; link a fresh one after it.
  void StartNewBlock() {
    // Consumers treat "has a successor" as "end is final", so every pending slot of the old
    // block must be published before the link below.
    if (write_end_ != published_end_) Publish();
    Block* fresh;
    {
      MutexLock lock = lock_counter_.Lock(mutex_);
      if (free_ != nullptr) {
        fresh = free_;
        free_ = fresh->free_next;
        --free_count_;
      } else {
        fresh = NewBlock();
      }
      // Release pairs with the consumers' acquire load of `next`: they then see this block's
      // final `end` (stored above) when they re-read it. The fresh block's reset indexes are
      // visible to them through the same edge (it was reset under this mutex).
      write_block_->next.store(fresh, std::memory_order_release);
      tail_ = fresh;
    }
    write_block_ = fresh;
    write_end_ = 0;
    published_end_ = 0;
  }

  // Under the mutex: whether `block` will never yield another item. Only meaningful for a
  // block that is not the tail: then the producer published its final `end` before linking
  // the successor under this mutex, so the relaxed loads below see the final value.
  static bool ExhaustedLocked(const Block* block) {
    return block->begin.load(std::memory_order_relaxed) ==
           block->end.load(std::memory_order_relaxed);
  }

  // Under the mutex: the first block at or after `block` that may still hold items.
  Block* SkipExhaustedLocked(Block* block) const {
    while (block != tail_ && ExhaustedLocked(block)) {
      block = block->next.load(std::memory_order_relaxed);
    }
    return block;
  }

  Block* Attach(LockCounter* consumer_counter) {
    MutexLock lock = lock_counter_.Lock(mutex_, consumer_counter);
    Block* block = SkipExhaustedLocked(head_);
    ++block->consumers;
    ++consumer_count_;
    return block;
  }

  void Detach(Block* block, LockCounter* consumer_counter) {
    MutexLock lock = lock_counter_.Lock(mutex_, consumer_counter);
    --block->consumers;
    --consumer_count_;
    RecycleLocked();
  }

  // A consumer's `block` is exhausted and has a successor: move it forward, past any other
  // exhausted blocks, and recycle what nobody needs any more.
  Block* StepForward(Block* block, LockCounter* consumer_counter) {
    MutexLock lock = lock_counter_.Lock(mutex_, consumer_counter);
    // Relaxed: under the mutex, which every writer of `next` holds.
    Block* target = SkipExhaustedLocked(block->next.load(std::memory_order_relaxed));
    --block->consumers;
    ++target->consumers;
    RecycleLocked();
    return target;
  }

  // Under the mutex: unlinks every exhausted, non-tail block without consumers and puts it on
  // the free list. Exhausted blocks always form a prefix of the chain (consumers only move
  // past exhausted blocks and only pop where they are), so the walk stops at the first block
  // that may still hold items.
  void RecycleLocked() {
    Block* prev = nullptr;
    Block* block = head_;
    while (block != tail_ && ExhaustedLocked(block)) {
      Block* const next = block->next.load(std::memory_order_relaxed);
      if (block->consumers == 0) {
        if (prev == nullptr) {
          head_ = next;
        } else {
          // Release: a consumer sitting in `prev` may load this pointer lock-free (acquire)
          // as its "has a successor" test; it must still find a non-null successor and the
          // final `end` of its block, both of which this store preserves and publishes.
          prev->next.store(next, std::memory_order_release);
        }
        FreeBlockLocked(block);
      } else {
        prev = block;
      }
      block = next;
    }
  }

  // Under the mutex: resets `block` for its next life and puts it on the free list. No
  // consumer is attached, so no one can observe the reset or be inside the block; relaxed
  // stores suffice because the producer takes the block from the free list under the mutex.
  void FreeBlockLocked(Block* block) {
    block->begin.store(0, std::memory_order_relaxed);
    block->end.store(0, std::memory_order_relaxed);
    block->next.store(nullptr, std::memory_order_relaxed);
    block->free_next = free_;
    free_ = block;
    ++free_count_;
  }

  const std::uint32_t block_size_;

  // Producer-private state (only the producer thread touches it).
  Block* write_block_ = nullptr;     // == tail_, without needing the mutex
  std::uint32_t write_end_ = 0;      // next slot to write in write_block_
  std::uint32_t published_end_ = 0;  // last value stored into write_block_->end

  // Shared state guarded by mutex_.
  mutable Mutex mutex_;
  LockCounter lock_counter_;
  Block* head_ = nullptr;  // oldest block in the chain
  Block* tail_ = nullptr;  // newest block (the producer's)
  Block* free_ = nullptr;  // recycled blocks, linked by free_next
  std::size_t free_count_ = 0;
  std::size_t allocated_blocks_ = 0;
  std::size_t consumer_count_ = 0;
};

}  // namespace fairsched

#endif  // FAIRSCHED_QUEUES_MCSP_QUEUE_H_
