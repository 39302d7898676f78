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
//   - the global pool has no cap: a steady flow of frames allocated on one thread and
//     freed on another (a plain thread spawning, workers finishing) circulates between the
//     caches and the pool and never goes back to malloc. The memory kept is the peak of
//     live frames; Trim() returns the global pool's blocks to the system. A thread's cache
//     goes to the global pool when the thread exits.
// Larger requests go straight to ::operator new.
//
// Contract: Deallocate(pointer, size) must get the size given to Allocate (the sized
// operator delete of a coroutine promise passes it). Blocks are kAlignment (64) byte
// aligned: a spawned coroutine's state (its scheduler task first) sits at the start of a
// block and starts on a cache line of its own (coro/task.h, coro/runtime.h).
// Under AddressSanitizer a recycled block is poisoned while it sits in a cache, so a use
// of a freed frame is still reported.
//
// Stats: each thread counts its own allocations (ThisThreadFrameStats); tests and
// benchmarks read them on the thread that spawns to measure bytes per frame and system
// allocations per spawn.
#ifndef FAIRSCHED_CORO_FRAME_ALLOCATOR_H_
#define FAIRSCHED_CORO_FRAME_ALLOCATOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "sync/per_thread.h"
#include "sync/primitives.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define FAIRSCHED_CORO_ASAN 1
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

  // Returns every block of the global pool to the system (the threads' own caches stay).
  static void Trim() {
    for (std::size_t index = 0; index < kClassCount; ++index) {
      std::vector<Batch> batches;
      {
        MutexLock lock(Pool().classes[index].mu);
        batches.swap(Pool().classes[index].batches);
      }
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
  };
  struct GlobalPool {
    std::array<GlobalClass, kClassCount> classes;
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

  // Moves kBatchSize blocks from the thread's list to the global pool.
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
    GlobalClass& global = Pool().classes[index];
    MutexLock lock(global.mu);
    global.batches.push_back(Batch{head});
  }

  static void Refill(ThreadCache& cache, std::size_t index) {
    GlobalClass& global = Pool().classes[index];
    Batch batch{nullptr};
    {
      MutexLock lock(global.mu);
      if (global.batches.empty()) return;
      batch = global.batches.back();
      global.batches.pop_back();
    }
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
#if defined(FAIRSCHED_CORO_ASAN)
    ASAN_POISON_MEMORY_REGION(block, size);
#endif
  }
  static void Unpoison([[maybe_unused]] void* block, [[maybe_unused]] std::size_t size) {
#if defined(FAIRSCHED_CORO_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(block, size);
#endif
  }
};

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_FRAME_ALLOCATOR_H_
