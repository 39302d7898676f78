// TaskPool: recycles the Task objects the scheduler owns (the ones PostOneShot creates), so
// a one-shot post does not allocate, and a worker does not free memory another thread
// allocated, once the pool is warm.
//
// Tasks move between three tiers:
//   - Cache: a stack of task pointers owned by one thread, no synchronisation. Each worker
//     has one (the tasks it executed go there, and it takes from it when a task of its own
//     posts a one-shot); every other thread has one thread-local cache, shared by all pools
//     (a pooled task is a plain `new Task`, tied to no pool while it is free).
//   - shared: up to kMaxSharedBatches batches of kBatch task pointers under a mutex. A
//     worker whose cache grows past 2 * kBatch hands its kBatch oldest over in one step; a
//     thread whose cache is empty takes one batch in one step. So the mutex is taken once
//     per kBatch tasks on each side, not once per post.
//   - the heap: Take allocates when the cache and the shared batches are empty (counted in
//     Allocations()); a batch handed over while the shared tier is full is freed.
//
// Bounds: a cache holds at most 2 * kBatch + 1 tasks (a thread that is not a worker gives
// nothing back, so its cache holds at most kBatch), the shared tier kMaxSharedBatches *
// kBatch; everything beyond that goes back to the heap. Memory comes back: Release(cache)
// and ReleaseShared() free those tiers (the scheduler calls them from Stop and its
// destructor), a thread-local cache is freed when its thread exits.
//
// Free tasks are constructed Tasks without a callback. The tiers hold pointers to them and
// never write a free task, so a task is touched only by the thread that ran it and then by
// the one Take hands it to. That hand-over is the cost left on an outside poster's path: the
// task's line was last written on the core that ran it. Pointers, unlike a list linked
// through the tasks, tell Take which task it hands out kPrefetchAhead pops later, and it
// prefetches that one, so the poster's wait for the line overlaps the posts in between.
// Take hands out a blank task; the caller gives it back blank (no callback, not queued).
//
// Threading: Take/Give with a cache from its owning thread only; the shared tier and
// Allocations() from any thread; Release(cache) by the cache's owner (or after it exited).
#ifndef FAIRSCHED_SCHED_TASK_POOL_H_
#define FAIRSCHED_SCHED_TASK_POOL_H_

#include <algorithm>
#include <array>
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
  // How many pops ahead Take prefetches the task it will hand out (see above;
  // bench/results/json/task_pool_prefetch/ has the measurement).
  static constexpr std::size_t kPrefetchAhead = 4;

  // The free tasks owned by one thread, most recently given back on top.
  class Cache {
   public:
    Cache() = default;
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;
    ~Cache() { FreeAll(); }

    std::size_t size() const { return size_; }

   private:
    friend class TaskPool;
    static constexpr std::size_t kCapacity = 2 * kBatch + 1;
    void Push(Task* task) { tasks_[size_++] = task; }
    Task* Pop() {
      Task* const task = tasks_[--size_];
      // Write intent: the poster's next stores go to that task. Only a hint; a task it
      // names stays in this cache until popped, so the address is valid.
      if (size_ >= kPrefetchAhead) __builtin_prefetch(tasks_[size_ - kPrefetchAhead], 1);
      return task;
    }
    void FreeAll() {
      while (size_ > 0) delete tasks_[--size_];
    }
    Task* tasks_[kCapacity];
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
    std::vector<Batch> batches;
    {
      MutexLock lock(mu_);
      batches.swap(shared_);
    }
    for (const Batch& batch : batches) {
      for (Task* task : batch) delete task;
    }
  }

  // Tasks allocated from the heap by Take since construction (not decreased by frees).
  std::uint64_t Allocations() const { return allocations_.load(std::memory_order_relaxed); }

 private:
  using Batch = std::array<Task*, kBatch>;

  bool RefillFromShared(Cache& cache) {
    {
      MutexLock lock(mu_);
      if (shared_.empty()) return false;
      std::copy(shared_.back().begin(), shared_.back().end(), cache.tasks_);
      shared_.pop_back();
    }
    cache.size_ = kBatch;
    for (std::size_t i = 1; i <= kPrefetchAhead; ++i) {
      __builtin_prefetch(cache.tasks_[kBatch - i], 1);
    }
    return true;
  }

  // Hands over the kBatch tasks at the bottom of `cache`: the ones freed longest ago, whose
  // lines are the least likely to be still in this thread's cache.
  void HandOverBatch(Cache& cache) {
    Batch batch;
    std::copy(cache.tasks_, cache.tasks_ + kBatch, batch.begin());
    std::copy(cache.tasks_ + kBatch, cache.tasks_ + cache.size_, cache.tasks_);
    cache.size_ -= kBatch;
    {
      MutexLock lock(mu_);
      if (shared_.size() < kMaxSharedBatches) {
        shared_.push_back(batch);
        return;
      }
    }
    for (Task* task : batch) delete task;
  }

  Mutex mu_;
  std::vector<Batch> shared_;  // guarded by mu_; capacity kMaxSharedBatches, reserved
  Atomic<std::uint64_t> allocations_{0};
};

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_TASK_POOL_H_
