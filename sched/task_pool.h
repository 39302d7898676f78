// TaskPool: recycles the Task objects the scheduler owns (the ones PostOneShot creates), so
// a one-shot post does not allocate, and a worker does not free memory another thread
// allocated, once the pool is warm.
//
// Tasks move between three tiers:
//   - Cache: a plain list owned by one thread, no synchronisation. Each worker has one (the
//     tasks it executed go there, and it takes from it when a task of its own posts a
//     one-shot); every other thread has one thread-local cache, shared by all pools (a pooled
//     task is a plain `new Task`, tied to no pool while it is free).
//   - shared: up to kMaxSharedBatches batches of kBatch tasks under a mutex. A worker whose
//     cache grows past 2 * kBatch hands kBatch of them over in one step; a thread whose cache
//     is empty takes one batch in one step. So the mutex is taken once per kBatch tasks on
//     each side, not once per post.
//   - the heap: Take allocates when the cache and the shared batches are empty (counted in
//     Allocations()); a batch handed over while the shared tier is full is freed.
//
// Bounds: a worker cache holds at most 2 * kBatch tasks, a thread-local cache at most kBatch,
// the shared tier kMaxSharedBatches * kBatch; everything beyond that goes back to the heap.
// Memory comes back: Release(cache) and ReleaseShared() free those tiers (the scheduler calls
// them from Stop and its destructor), a thread-local cache is freed when its thread exits.
//
// Free tasks are constructed Tasks without a callback, linked through `next`. Take hands out
// such a blank task; the caller gives it back blank (no callback, not queued).
//
// Threading: Take/Give with a cache from its owning thread only; the shared tier and
// Allocations() from any thread; Release(cache) by the cache's owner (or after it exited).
#ifndef FAIRSCHED_SCHED_TASK_POOL_H_
#define FAIRSCHED_SCHED_TASK_POOL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sched/task.h"
#include "sync/per_thread.h"
#include "sync/primitives.h"

namespace fairsched {

class TaskPool {
 public:
  static constexpr std::size_t kBatch = 64;
  static constexpr std::size_t kMaxSharedBatches = 16;  // 1024 tasks, 64 KiB

  // A list of free tasks owned by one thread.
  class Cache {
   public:
    Cache() = default;
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;
    ~Cache() { FreeAll(); }

    std::size_t size() const { return size_; }

   private:
    friend class TaskPool;
    void Push(Task* task) {
      task->next = head_;
      head_ = task;
      ++size_;
    }
    Task* Pop() {
      Task* task = head_;
      head_ = task->next;
      task->next = nullptr;
      --size_;
      return task;
    }
    void FreeAll() {
      while (head_ != nullptr) delete Pop();
    }
    Task* head_ = nullptr;
    std::size_t size_ = 0;
  };

  TaskPool() { shared_.reserve(kMaxSharedBatches); }  // no allocation under the mutex
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;
  ~TaskPool() { ReleaseShared(); }

  // The calling thread's cache for threads that are not workers of a scheduler (a
  // thread_local, except in the Windows build: see sync/per_thread.h).
  static Cache& ThreadCache() { return PerThread<Cache>(); }

  // A blank task: from `cache`, else one shared batch moved into `cache`, else the heap.
  Task* Take(Cache& cache) {
    if (cache.size_ == 0 && !RefillFromShared(cache)) {
      // Relaxed: a statistic; nothing is published through it.
      allocations_.fetch_add(1, std::memory_order_relaxed);
      Task* task = new Task();
      task->MarkPooled();  // before anyone else can see the task (see Task::pooled_)
      return task;
    }
    return cache.Pop();
  }

  // Gives back a blank task (no callback, not queued). Moves kBatch tasks to the shared
  // tier (or frees them when it is full) once `cache` holds more than 2 * kBatch.
  void Give(Cache& cache, Task* task) {
    cache.Push(task);
    if (cache.size_ > 2 * kBatch) HandOverBatch(cache);
  }

  // Frees every task in `cache`.
  static void Release(Cache& cache) { cache.FreeAll(); }

  // Frees every task in the shared tier.
  void ReleaseShared() {
    std::vector<Task*> batches;
    {
      MutexLock lock(mu_);
      batches.swap(shared_);
    }
    for (Task* batch : batches) {
      while (batch != nullptr) {
        Task* next = batch->next;
        delete batch;
        batch = next;
      }
    }
  }

  // Tasks allocated from the heap by Take since construction (not decreased by frees).
  std::uint64_t Allocations() const { return allocations_.load(std::memory_order_relaxed); }

 private:
  bool RefillFromShared(Cache& cache) {
    Task* batch = nullptr;
    {
      MutexLock lock(mu_);
      if (shared_.empty()) return false;
      batch = shared_.back();
      shared_.pop_back();
    }
    // Each shared batch is a chain of exactly kBatch tasks (HandOverBatch).
    cache.head_ = batch;
    cache.size_ = kBatch;
    return true;
  }

  void HandOverBatch(Cache& cache) {
    Task* batch = cache.head_;
    Task* last = batch;
    for (std::size_t i = 1; i < kBatch; ++i) last = last->next;
    cache.head_ = last->next;
    cache.size_ -= kBatch;
    last->next = nullptr;
    {
      MutexLock lock(mu_);
      if (shared_.size() < kMaxSharedBatches) {
        shared_.push_back(batch);
        return;
      }
    }
    while (batch != nullptr) {
      Task* next = batch->next;
      delete batch;
      batch = next;
    }
  }

  Mutex mu_;
  std::vector<Task*> shared_;  // guarded by mu_: heads of kBatch-task chains
  Atomic<std::uint64_t> allocations_{0};
};

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_TASK_POOL_H_
