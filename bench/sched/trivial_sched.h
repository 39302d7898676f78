// TrivialSched: the textbook thread pool from the talk's "Trivial scheduler" slide, kept as a
// benchmark baseline. One mutex, one condition variable, one queue of std::function, N
// threads. Every Post and every pop takes the mutex; idle workers sleep on the condition
// variable. It has no deadlines, no wakeups and no signals.
//
// The slide uses a linked list; this uses std::deque, which allocates once per 512 bytes of
// entries instead of once per entry, so the baseline is if anything a little stronger than
// the one in the talk.
#ifndef FAIRSCHED_BENCH_SCHED_TRIVIAL_SCHED_H_
#define FAIRSCHED_BENCH_SCHED_TRIVIAL_SCHED_H_

#include <deque>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "sync/primitives.h"

namespace fairsched::bench {

class TrivialSched {
 public:
  // Starts `thread_count` workers at once.
  explicit TrivialSched(int thread_count) {
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
    cond_.notify_one();
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> callback;
      {
        MutexLock lock(mutex_);
        while (queue_.empty()) {
          if (stopped_) return;
          cond_.wait(lock);
        }
        callback = std::move(queue_.front());
        queue_.pop_front();
      }
      callback();
    }
  }

  Mutex mutex_;
  ConditionVariable cond_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  bool stopped_ = false;                     // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_TRIVIAL_SCHED_H_
