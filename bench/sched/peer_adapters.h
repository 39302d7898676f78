// Benchmark adapters for the schedulers fairsched is compared with. Each adapter is the
// small interface the generic driver in sched_bench.cc is written against:
//
//   static constexpr const char* kName;       // contestant name in benchmark names
//   struct Hook;                              // per-job storage the adapter needs
//   explicit Adapter(int workers);            // starts `workers` worker threads
//   template <class J> void InitJob(J* job);  // once per job object, before its first post
//   template <class J> void PostJob(J* job);  // run job->Execute() on a worker; callable
//                                             // from outside and from inside Execute
//   template <class F> void PostOneShot(F f); // run f() once on a worker
//   optional: template <class J> void PostJobAt(J* job, TimePoint deadline);  // timers
//   optional: WorkerTotals Totals();          // scheduler statistics (fairsched only)
//
// The peers here run closures, so re-posting a job posts a fresh small closure holding the
// job pointer; that is how each of them is meant to be used.
#ifndef FAIRSCHED_BENCH_SCHED_PEER_ADAPTERS_H_
#define FAIRSCHED_BENCH_SCHED_PEER_ADAPTERS_H_

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <asio.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "bench/sched/trivial_sched.h"

namespace fairsched::bench {

using BenchClock = std::chrono::steady_clock;

// Shared shape of the closure-based adapters: `Derived::Post(f)` is all they provide.
template <typename Derived>
class ClosureAdapter {
 public:
  struct Hook {};
  template <typename J>
  void InitJob(J*) {}
  template <typename J>
  void PostJob(J* job) {
    static_cast<Derived*>(this)->Post([job] { job->Execute(); });
  }
  template <typename F>
  void PostOneShot(F f) {
    static_cast<Derived*>(this)->Post(std::move(f));
  }
};

// (c) The talk's TrivialSched.
class TrivialSchedAdapter : public ClosureAdapter<TrivialSchedAdapter> {
 public:
  static constexpr const char* kName = "trivial_sched";
  explicit TrivialSchedAdapter(int workers) : sched_(workers) {}
  template <typename F>
  void Post(F&& f) {
    sched_.Post(std::forward<F>(f));
  }

 private:
  TrivialSched sched_;
};

// (d) oneTBB: an arena with exactly `workers` worker slots (none reserved for the posting
// thread, which never joins), fed with task_arena::enqueue. TBB sizes its global worker pool
// to the core count minus one by default, so the limit is raised for the oversubscribed
// points.
class TbbAdapter : public ClosureAdapter<TbbAdapter> {
 public:
  static constexpr const char* kName = "tbb_arena";
  explicit TbbAdapter(int workers)
      : limit_(tbb::global_control::max_allowed_parallelism, workers + 1),
        arena_(workers, /*reserved_for_masters=*/0) {
    arena_.initialize();
  }
  template <typename F>
  void Post(F&& f) {
    arena_.enqueue(std::forward<F>(f));
  }

 private:
  tbb::global_control limit_;
  tbb::task_arena arena_;
};

// (e) asio::thread_pool with asio::post; deadlines use asio::steady_timer on the pool.
class AsioAdapter : public ClosureAdapter<AsioAdapter> {
 public:
  static constexpr const char* kName = "asio_pool";
  struct Hook {
    std::optional<asio::steady_timer> timer;
  };
  explicit AsioAdapter(int workers) : pool_(workers) {}
  ~AsioAdapter() { pool_.join(); }
  template <typename J>
  void InitJob(J* job) {
    job->hook.timer.emplace(pool_.get_executor());
  }
  template <typename F>
  void Post(F&& f) {
    asio::post(pool_, std::forward<F>(f));
  }
  template <typename J>
  void PostJobAt(J* job, BenchClock::time_point deadline) {
    job->hook.timer->expires_at(deadline);
    job->hook.timer->async_wait([job](const std::error_code&) { job->Execute(); });
  }

 private:
  asio::thread_pool pool_;
};

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_PEER_ADAPTERS_H_
