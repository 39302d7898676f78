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
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "bench/sched/trivial_sched.h"
#include "sync/primitives.h"

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
  // `spin`: how long an idle worker polls before it sleeps (TrivialSched's optional spin).
  explicit TrivialSchedAdapter(int workers,
                               std::chrono::nanoseconds spin = std::chrono::nanoseconds::zero())
      : sched_(workers, spin) {}
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

// (f) Not a scheduler: the machine's floor for waking a thread. One thread that never
// sleeps polls a one-closure mailbox; Post hands it a closure and returns. Its post -> start
// latency is a cache line crossing cores plus whatever the hypervisor and the kernel add
// (timer ticks, vCPU preemption): no scheduler that parks its threads can beat its p50, and
// its p99 shows how much of a scheduler's p99 is the machine. Used only in wake/post (it
// burns a core the whole time).
class SpinFloorAdapter : public ClosureAdapter<SpinFloorAdapter> {
 public:
  static constexpr const char* kName = "spin_floor";
  explicit SpinFloorAdapter(int /*workers*/) : thread_([this] { Run(); }) {}
  ~SpinFloorAdapter() {
    Post([this] { stop_ = true; });
    thread_.join();
  }
  template <typename F>
  void Post(F&& f) {
    // Acquire: the poller's release store of false ended its reads of the previous closure.
    while (full_.load(std::memory_order_acquire)) CpuRelax();
    closure_ = std::forward<F>(f);
    // Release: publishes the closure to the poller's acquire load.
    full_.store(true, std::memory_order_release);
  }

 private:
  void Run() {
    while (!stop_) {
      // Acquire: pairs with Post's release store (the closure is written).
      if (!full_.load(std::memory_order_acquire)) {
        CpuRelax();
        continue;
      }
      std::function<void()> f = std::move(closure_);
      closure_ = nullptr;
      f();
      // Release: the next Post may overwrite the mailbox only after we are done with it.
      full_.store(false, std::memory_order_release);
    }
  }

  std::function<void()> closure_;
  bool stop_ = false;  // written and read by the poller only (set by a posted closure)
  std::atomic<bool> full_{false};
  std::thread thread_;
};

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_PEER_ADAPTERS_H_
