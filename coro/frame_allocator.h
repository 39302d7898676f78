// FrameAllocator: the recycling allocator behind every coroutine frame and every spawned
// coroutine's state in coro/.
//
// A server spawns and finishes coroutines at a high rate, and every coroutine call
// allocates a frame of one of a few sizes. Instead of a malloc/free pair per frame, blocks
// are kept in size classes (multiples of kGranule bytes up to kMaxRecycledSize) and
// recycled:
//   - each thread keeps a small free list per size class (no locks, no atomics);
//   - a thread whose list grows beyond kThreadCacheLimit (frames are often freed on another
//     worker than the one that allocated them) moves a batch of kBatchSize blocks to a
//     global pool (one mutex per size class, taken once per batch);
//   - a thread whose list is empty takes a whole batch from the global pool, and only if
//     that is empty asks the system for one block;
//   - a thread's cache goes to the global pool when the thread exits.
// Larger requests go straight to ::operator new.
//
// What is kept, and why: the memory held for reuse is bounded, so a burst of live frames
// is given back to the system when it ends. Each thread's cache holds at most
// kThreadCacheLimit blocks per class, the global pool at most kMaxPooledBytes over all
// classes. A batch given to a full pool goes back to the system, unless another class holds
// more than the giver's would: then a batch of that class goes first, so a class filled by
// a burst and then unused makes room for the classes in use. Within the cap, a flow of
// frames allocated on one thread and freed on another (a plain thread spawning, workers
// finishing) circulates between the caches and the pool without malloc. Trim() returns
// everything the pool holds.
//
// Contract: Deallocate(pointer, size) must get the size given to Allocate (the sized
// operator delete of a coroutine promise passes it). Blocks are kAlignment (64) byte
// aligned: a spawned coroutine's state (its scheduler task first) sits at the start of a
// block and starts on a cache line of its own (coro/lazy.h, coro/internal/coroutine_state.h).
// Under AddressSanitizer a recycled block is poisoned while it sits in a cache, so a use
// of a freed frame is still reported.
//
// Stats: each thread counts its own allocations (ThisThreadFrameStats); tests and
// benchmarks read them on the thread that spawns to measure bytes per frame and system
// allocations per spawn. PooledBytes() is what the global pool holds.
#ifndef FAIRSCHED_CORO_FRAME_ALLOCATOR_H_
#define FAIRSCHED_CORO_FRAME_ALLOCATOR_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "sync/per_thread.h"
#include "sync/primitives.h"
#include "sync/sanitizers.h"

#if defined(FAIRSCHED_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace fairsched::coro {

// Counters of the calling thread (plain counters: each thread writes only its own).
struct FrameAllocatorStats {
  std::uint64_t allocations = 0;         // Allocate calls
  std::uint64_t bytes_requested = 0;     // sum of the sizes asked for
  std::uint64_t bytes_rounded = 0;       // sum of the block sizes handed out
  std::uint64_t system_allocations = 0;  // blocks taken from ::operator new
  std::uint64_t deallocations = 0;       // Deallocate calls
};

class FrameAllocator {
 public:
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kClassCount = 16;
  static constexpr std::size_t kMaxRecycledSize = kGranule * kClassCount;  // 1024
  static constexpr std::size_t kBatchSize = 32;
  static constexpr std::size_t kThreadCacheLimit = 2 * kBatchSize;
  static constexpr std::size_t kAlignment = 64;
  // The most the global pool holds, over all classes: room for 16,384 frames of the
  // 256-byte class a small spawned coroutine takes, in flight from the threads that free
  // them to the one that allocates them; a small part of the 256 MiB a burst of a million
  // such coroutines takes.
  static constexpr std::size_t kMaxPooledBytes = std::size_t{4} << 20;

  static void* Allocate(std::size_t size) {
#if defined(FAIRSCHED_EXPLORE)
    // The interleaving explorer (sync/explore) needs every schedule of a scenario to take
    // the same steps; the caches carry blocks from one schedule into the next and their
    // pool mutex would be a scheduling point, so that build takes every block from the
    // system. The allocator itself is not what such a scenario checks.
    return ::operator new(size == 0 ? 1 : size, std::align_val_t{kAlignment});
#endif
    ThreadCache& cache = Cache();
    cache.stats.allocations++;
    cache.stats.bytes_requested += size;
    if (size == 0 || size > kMaxRecycledSize) {
      cache.stats.bytes_rounded += size;
      cache.stats.system_allocations++;
      return ::operator new(size, std::align_val_t{kAlignment});
    }
    const std::size_t index = ClassIndex(size);
    const std::size_t block_size = (index + 1) * kGranule;
    cache.stats.bytes_rounded += block_size;
    FreeList& list = cache.lists[index];
    if (list.head == nullptr) Refill(cache, index);
    Block* block = list.head;
    if (block == nullptr) {
      cache.stats.system_allocations++;
      return ::operator new(block_size, std::align_val_t{kAlignment});
    }
    Unpoison(block, block_size);
    list.head = block->next;
    list.count--;
    return block;
  }

  static void Deallocate(void* pointer, std::size_t size) {
    if (pointer == nullptr) return;
#if defined(FAIRSCHED_EXPLORE)
    ::operator delete(pointer, std::align_val_t{kAlignment});  // see Allocate
    return;
#endif
    ThreadCache& cache = Cache();
    cache.stats.deallocations++;
    if (size == 0 || size > kMaxRecycledSize) {
      ::operator delete(pointer, std::align_val_t{kAlignment});
      return;
    }
    const std::size_t index = ClassIndex(size);
    FreeList& list = cache.lists[index];
    Block* block = static_cast<Block*>(pointer);
    block->next = list.head;
    Poison(block, (index + 1) * kGranule);
    list.head = block;
    if (++list.count > kThreadCacheLimit) Spill(list, index);
  }

  static FrameAllocatorStats ThisThreadFrameStats() { return Cache().stats; }

  // Bytes held by the global pool (blocks in the threads' caches not included). A batch is
  // counted from just before it enters the pool until just after it leaves, so the value
  // is never below what the pool holds, and never above kMaxPooledBytes.
  static std::size_t PooledBytes() { return Pool().bytes.load(std::memory_order_relaxed); }

  // Returns every block of the global pool to the system (the threads' own caches stay).
  static void Trim() {
    GlobalPool& pool = Pool();
    for (std::size_t index = 0; index < kClassCount; ++index) {
      GlobalClass& global = pool.classes[index];
      std::vector<Batch> batches;
      {
        MutexLock lock(global.mu);
        batches.swap(global.batches);
        global.bytes.store(0, std::memory_order_relaxed);
      }
      pool.bytes.fetch_sub(batches.size() * BatchBytes(index), std::memory_order_relaxed);
      for (Batch batch : batches) FreeChain(batch.head, index);
    }
  }

 private:
  struct Block {
    Block* next;
  };
  struct FreeList {
    Block* head = nullptr;
    std::size_t count = 0;
  };
  // A global pool entry: a list of exactly kBatchSize blocks.
  struct Batch {
    Block* head;
  };
  struct alignas(kCacheLineSize) GlobalClass {
    fairsched::Mutex mu;
    std::vector<Batch> batches;  // guarded by mu
    // batches.size() * BatchBytes(class). Written under mu; atomic because a spill into a
    // full pool reads every class's value without its mutex to pick the class to shrink.
    std::atomic<std::size_t> bytes{0};
  };
  struct GlobalPool {
    std::array<GlobalClass, kClassCount> classes;
    // Bytes of every class together, reserved (compare-exchange, never past
    // kMaxPooledBytes) before a batch is pushed and released after one is popped. Atomic
    // because it is shared by all classes, whose mutexes are separate. Relaxed: it is an
    // account only; the blocks themselves go from thread to thread under a class mutex.
    alignas(kCacheLineSize) std::atomic<std::size_t> bytes{0};
    ~GlobalPool() {
      for (std::size_t index = 0; index < kClassCount; ++index) {
        for (Batch batch : classes[index].batches) FreeChain(batch.head, index);
      }
    }
  };
  struct ThreadCache {
    std::array<FreeList, kClassCount> lists;
    FrameAllocatorStats stats;
    // Touching the pool here constructs it before this cache, so (by the rules for
    // thread-local and static destructors) it is destroyed after every thread's cache.
    GlobalPool& pool = Pool();
    ~ThreadCache() {
      for (std::size_t index = 0; index < kClassCount; ++index) {
        while (lists[index].count >= kBatchSize) Spill(lists[index], index);
        FreeChain(lists[index].head, index);
      }
    }
  };

  static std::size_t ClassIndex(std::size_t size) { return (size - 1) / kGranule; }

  static GlobalPool& Pool() {
    static GlobalPool pool;
    return pool;
  }
  // The calling thread's cache (a thread_local, except in the Windows build: see
  // sync/per_thread.h).
  static ThreadCache& Cache() { return PerThread<ThreadCache>(); }

  static std::size_t BatchBytes(std::size_t index) { return kBatchSize * (index + 1) * kGranule; }

  // Moves kBatchSize blocks from the thread's list to the global pool, or to the system if
  // the pool has no room for them.
  static void Spill(FreeList& list, std::size_t index) {
    const std::size_t block_size = (index + 1) * kGranule;
    Block* head = list.head;
    Block* tail = head;
    for (std::size_t i = 1; i < kBatchSize; ++i) tail = NextOf(tail, block_size);
    list.head = NextOf(tail, block_size);
    list.count -= kBatchSize;
    Unpoison(tail, sizeof(Block));
    tail->next = nullptr;
    Poison(tail, block_size);
    const std::size_t batch_bytes = BatchBytes(index);
    while (!Reserve(batch_bytes)) {
      if (!ShrinkLargestFor(index)) {
        FreeChain(head, index);
        return;
      }
    }
    GlobalClass& global = Pool().classes[index];
    MutexLock lock(global.mu);
    global.batches.push_back(Batch{head});
    global.bytes.store(global.bytes.load(std::memory_order_relaxed) + batch_bytes,
                       std::memory_order_relaxed);
  }

  // Counts `bytes` more in the pool if that keeps it within kMaxPooledBytes.
  static bool Reserve(std::size_t bytes) {
    std::atomic<std::size_t>& pooled = Pool().bytes;
    std::size_t held = pooled.load(std::memory_order_relaxed);
    do {
      if (held + bytes > kMaxPooledBytes) return false;
    } while (!pooled.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
    return true;
  }

  // The pool is full and class `index` has a batch to give it: frees a batch of the class
  // holding the most bytes, if that class holds more than `index` would with its batch.
  // Returns false if there is no such class (the batch of `index` should go instead).
  static bool ShrinkLargestFor(std::size_t index) {
    GlobalPool& pool = Pool();
    std::size_t victim = index;
    std::size_t most =
        pool.classes[index].bytes.load(std::memory_order_relaxed) + BatchBytes(index);
    for (std::size_t other = 0; other < kClassCount; ++other) {
      const std::size_t bytes = pool.classes[other].bytes.load(std::memory_order_relaxed);
      if (bytes > most) {
        most = bytes;
        victim = other;
      }
    }
    if (victim == index) return false;
    GlobalClass& global = pool.classes[victim];
    Batch batch{nullptr};
    {
      MutexLock lock(global.mu);
      if (global.batches.empty()) return false;  // taken meanwhile
      batch = global.batches.back();
      global.batches.pop_back();
      global.bytes.store(global.bytes.load(std::memory_order_relaxed) - BatchBytes(victim),
                         std::memory_order_relaxed);
    }
    pool.bytes.fetch_sub(BatchBytes(victim), std::memory_order_relaxed);
    FreeChain(batch.head, victim);
    return true;
  }

  static void Refill(ThreadCache& cache, std::size_t index) {
    GlobalClass& global = Pool().classes[index];
    Batch batch{nullptr};
    {
      MutexLock lock(global.mu);
      if (global.batches.empty()) return;
      batch = global.batches.back();
      global.batches.pop_back();
      global.bytes.store(global.bytes.load(std::memory_order_relaxed) - BatchBytes(index),
                         std::memory_order_relaxed);
    }
    Pool().bytes.fetch_sub(BatchBytes(index), std::memory_order_relaxed);
    cache.lists[index].head = batch.head;
    cache.lists[index].count = kBatchSize;
  }

  static Block* NextOf(Block* block, std::size_t block_size) {
    Unpoison(block, sizeof(Block));
    Block* next = block->next;
    Poison(block, block_size);
    return next;
  }

  static void FreeChain(Block* head, std::size_t index) {
    const std::size_t block_size = (index + 1) * kGranule;
    while (head != nullptr) {
      Block* next = NextOf(head, block_size);
      Unpoison(head, block_size);
      ::operator delete(head, std::align_val_t{kAlignment});
      head = next;
    }
  }

  static void Poison([[maybe_unused]] void* block, [[maybe_unused]] std::size_t size) {
#if defined(FAIRSCHED_ASAN)
    ASAN_POISON_MEMORY_REGION(block, size);
#endif
  }
  static void Unpoison([[maybe_unused]] void* block, [[maybe_unused]] std::size_t size) {
#if defined(FAIRSCHED_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(block, size);
#endif
  }
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_FRAME_ALLOCATOR_H_
