// TrivialSched: the textbook thread pool from the talk's "Trivial scheduler" slide, kept as a
// benchmark baseline. One mutex, one condition variable, one queue of std::function, N
// threads. Every Post and every pop takes the mutex; idle workers sleep on the condition
// variable. It has no deadlines, no wakeups and no signals.
//
// The slide uses a linked list; this uses std::deque, which allocates once per 512 bytes of
// entries instead of once per entry, so the baseline is if anything a little stronger than
// the one in the talk.
//
// Optional spin (a second peer for the wake-up benchmark, not in the talk): a worker that
// finds the queue empty first polls it for `spin` without the mutex, then sleeps on the
// condition variable, like the pool without it. With the same spin as fairsched's `spin_before_park`, a
// post that arrives within the spin costs neither pool a futex wake-up.
#ifndef FAIRSCHED_BENCH_SCHED_TRIVIAL_SCHED_H_
#define FAIRSCHED_BENCH_SCHED_TRIVIAL_SCHED_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "sync/primitives.h"

namespace fairsched::bench {

class TrivialSched {
 public:
  // Starts `thread_count` workers at once; an idle worker polls for `spin` before it sleeps.
  explicit TrivialSched(int thread_count,
                        std::chrono::nanoseconds spin = std::chrono::nanoseconds::zero())
      : spin_(spin) {
    threads_.reserve(thread_count);
    for (int i = 0; i < thread_count; ++i) threads_.emplace_back([this] { Run(); });
  }

  // Stops the workers after they drained the queue; joins them.
  ~TrivialSched() {
    {
      MutexLock lock(mutex_);
      stopped_ = true;
      cond_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
  }

  TrivialSched(const TrivialSched&) = delete;
  TrivialSched& operator=(const TrivialSched&) = delete;

  // Queues `callback`; one sleeping worker is woken. Any thread, including workers.
  void Post(std::function<void()> callback) {
    MutexLock lock(mutex_);
    queue_.push_back(std::move(callback));
    // Relaxed: only a hint for spinning workers, which take the mutex before they look at
    // the queue itself; the mutex orders the callback's contents. Without a spin nobody
    // reads it, and the textbook pool stays exactly the slide's.
    if (Spins()) queued_.store(queue_.size(), std::memory_order_relaxed);
    cond_.notify_one();
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> callback;
      {
        MutexLock lock(mutex_);
        bool spun = false;
        while (queue_.empty()) {
          if (stopped_) return;
          if (!spun && Spins()) {
            spun = true;
            lock.unlock();
            SpinUntilQueued();
            lock.lock();
            continue;
          }
          cond_.wait(lock);
        }
        callback = std::move(queue_.front());
        queue_.pop_front();
        if (Spins()) queued_.store(queue_.size(), std::memory_order_relaxed);  // as in Post
      }
      callback();
    }
  }

  bool Spins() const { return spin_ > std::chrono::nanoseconds::zero(); }

  // Polls the queue-size hint for up to spin_; returns early when something was queued.
  void SpinUntilQueued() const {
    const auto until = std::chrono::steady_clock::now() + spin_;
    while (queued_.load(std::memory_order_relaxed) == 0 &&
           std::chrono::steady_clock::now() < until) {
      CpuRelax();
    }
  }

  const std::chrono::nanoseconds spin_;
  Atomic<std::size_t> queued_{0};  // queue_.size() after the last change; a hint only
  Mutex mutex_;
  ConditionVariable cond_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  bool stopped_ = false;                     // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_TRIVIAL_SCHED_H_
