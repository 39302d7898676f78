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
};

template <typename Scheduler>
class FairschedAdapter {
 public:
  struct Hook {
    Task task;
  };

  explicit FairschedAdapter(int workers) { sched_.Start(workers); }
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

  WorkerTotals Totals() const {
    WorkerTotals sum;
    for (const auto& w : sched_.Stats()) {
      sum.tasks_executed += w.tasks_executed;
      sum.sched_role_taken += w.sched_role_taken;
      sum.ready_lock_taken += w.ready_lock_taken;
      sum.ready_lock_contended += w.ready_lock_contended;
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

// The default scheduler with the timing wheel as its wait queue (timer benchmark only).
struct FairschedTimerWheel
    : FairschedAdapter<BasicTaskScheduler<McspQueue<Task>, TimerWheel<Task>>> {
  static constexpr const char* kName = "fairsched_timer_wheel";
  using FairschedAdapter::FairschedAdapter;
};

}  // namespace fairsched::bench

#endif  // FAIRSCHED_BENCH_SCHED_FAIRSCHED_ADAPTER_H_
