// Benchmark adapter for fairsched's BasicTaskScheduler (both the default policies and the
// trivial locked ready queue). See peer_adapters.h for the adapter interface. Jobs embed a
// fairsched::Task, so re-posting a job is a plain Post of its own task, with no allocation;
// one-shot posts go through PostOneShot, which allocates a self-deleting task like the
// README's `new Task(...)` example.
#ifndef FAIRSCHED_BENCH_SCHED_FAIRSCHED_ADAPTER_H_
#define FAIRSCHED_BENCH_SCHED_FAIRSCHED_ADAPTER_H_

#include <chrono>
#include <cstdint>
#include <utility>

#include "queues/mcsp_queue.h"
#include "queues/timer_wheel.h"
#include "sched/task.h"
#include "sched/task_scheduler.h"

namespace fairsched::bench {

// Sums of the per-worker statistics the driver turns into per-task counters.
struct WorkerTotals {
  std::uint64_t tasks_executed = 0;
  std::uint64_t sched_role_taken = 0;
  std::uint64_t ready_lock_taken = 0;
  std::uint64_t ready_lock_contended = 0;
  std::uint64_t parks = 0;
  std::uint64_t role_sleeps = 0;
  std::uint64_t wakes_sent = 0;
};

template <typename Scheduler>
class FairschedAdapter {
 public:
  struct Hook {
    Task task;
  };

  explicit FairschedAdapter(int workers, TaskSchedulerOptions options = {})
      : sched_(std::move(options)) {
    sched_.Start(workers);
  }
  ~FairschedAdapter() { sched_.Stop(); }

  template <typename J>
  void InitJob(J* job) {
    job->hook.task.SetCallback([job](Task*) { job->Execute(); });
  }
  template <typename J>
  void PostJob(J* job) {
    sched_.Post(&job->hook.task);
  }
  template <typename J>
  void PostJobAt(J* job, std::chrono::steady_clock::time_point deadline) {
    sched_.PostDeadline(&job->hook.task, deadline);
  }
  template <typename F>
  void PostOneShot(F f) {
    sched_.PostOneShot(std::move(f));
  }
  // Wake-up benchmark: park `job` until WakeJob.
  template <typename J>
  void PostJobWaiting(J* job) {
    sched_.PostWait(&job->hook.task);
  }
  template <typename J>
  void WakeJob(J* job) {
    sched_.Wakeup(&job->hook.task);
  }
  Scheduler& scheduler() { return sched_; }

  WorkerTotals Totals() const {
    WorkerTotals sum;
    for (const auto& w : sched_.Stats()) {
      sum.tasks_executed += w.tasks_executed;
      sum.sched_role_taken += w.sched_role_taken;
      sum.ready_lock_taken += w.ready_lock_taken;
      sum.ready_lock_contended += w.ready_lock_contended;
      sum.parks += w.parks;
      sum.role_sleeps += w.role_sleeps;
      sum.wakes_sent += w.wakes_sent;
    }
    return sum;
  }

 private:
  Scheduler sched_;
};

struct FairschedDefault : FairschedAdapter<TaskScheduler> {
  static constexpr const char* kName = "fairsched";
  using FairschedAdapter::FairschedAdapter;
};

struct FairschedTrivialPolicy : FairschedAdapter<TrivialPolicyTaskScheduler> {
  static constexpr const char* kName = "fairsched_trivial_policy";
  using FairschedAdapter::FairschedAdapter;
};

// The default scheduler, re-posting jobs as fresh one-shots (a small closure per post, like
// the peers) instead of re-posting the job's own Task.
struct FairschedOneShot : FairschedAdapter<TaskScheduler> {
  static constexpr const char* kName = "fairsched_oneshot";
  using FairschedAdapter::FairschedAdapter;
  template <typename J>
  void PostJob(J* job) {
    PostOneShot([job] { job->Execute(); });
  }
};

// The default scheduler with PostOrder::kStrict: every post joins the shared queue when it
// is made (what the local batches cost against strict post order).
struct FairschedStrict : FairschedAdapter<TaskScheduler> {
  static constexpr const char* kName = "fairsched_strict";
  explicit FairschedStrict(int workers)
      : FairschedAdapter(workers, TaskSchedulerOptions{.post_order = PostOrder::kStrict}) {}
};

// The default scheduler with PostOrder::kHome and the skew following the queues up to
// 4,096: the candidate for the default order (bench/results/json/home_as_default/).
struct FairschedHome : FairschedAdapter<TaskScheduler> {
  static constexpr const char* kName = "fairsched_home";
  explicit FairschedHome(int workers)
      : FairschedAdapter(workers, TaskSchedulerOptions{.post_order = PostOrder::kHome,
                                                       .home_skew_ceiling = 4096}) {}
};

// The default scheduler with the latency histogram off / stamping every post (its cost).
struct FairschedHistogramOff : FairschedAdapter<TaskScheduler> {
  static constexpr const char* kName = "fairsched_hist_off";
  explicit FairschedHistogramOff(int workers)
      : FairschedAdapter(workers, TaskSchedulerOptions{.latency_sample_period = 0}) {}
};
struct FairschedHistogramEvery : FairschedAdapter<TaskScheduler> {
  static constexpr const char* kName = "fairsched_hist_every";
  explicit FairschedHistogramEvery(int workers)
      : FairschedAdapter(workers, TaskSchedulerOptions{.latency_sample_period = 1}) {}
};

// The default scheduler with another spin before parking (wake-up benchmarks).
template <int kSpinUs>
struct FairschedSpin : FairschedAdapter<TaskScheduler> {
  static constexpr const char* kName = kSpinUs == 0     ? "fairsched_spin0"
                                       : kSpinUs == 100 ? "fairsched_spin100"
                                                        : "fairsched_spin_other";
  explicit FairschedSpin(int workers)
      : FairschedAdapter(workers, TaskSchedulerOptions{
                                      .spin_before_park = std::chrono::microseconds(kSpinUs)}) {}
};

// The default scheduler with the timing wheel as its wait queue (timer benchmark only).
struct FairschedTimerWheel
    : FairschedAdapter<BasicTaskScheduler<McspQueue<Task>, TimerWheel<Task>>> {
  static constexpr const char* kName = "fairsched_timer_wheel";
  using FairschedAdapter::FairschedAdapter;
};

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_FAIRSCHED_ADAPTER_H_
