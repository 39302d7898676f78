// Scenarios on the real TaskScheduler (scheduler_scenarios.h's setup) for steps whose
// omission loses no work and so passes the other scheduler scenarios:
//   - a missed wake-up is only a delay: a parked worker re-looks within kLocalBatchRecheck
//     while another executes, and an idle role holder takes a held post over when its timed
//     sleep ends. In the model only timeouts move the logical clock, and a timeout that
//     races a thread that could run costs a preemption. So a task that must start at
//     logical time 0 (MustStartInTime) turns the delay into a failure. Searched with one
//     preemption, which each race below needs itself, and the shipped code passes every
//     such schedule;
//   - WaitEmpty's registration, whose seq_cst matters only under weak memory: a C++20-model
//     search (WaitEmptyRacesTheOnlyFinish).
// scheduler_wake_explore_test.cc explores them; tools/mutate counts them as the killers of
// Park without its ready re-check, a batch end that keeps the local batch, and an acq_rel
// registration in WaitEmpty.
#ifndef FAIRSCHED_TESTS_EXPLORE_SCHEDULER_WAKE_SCENARIOS_H_
#define FAIRSCHED_TESTS_EXPLORE_SCHEDULER_WAKE_SCENARIOS_H_

#include <string>

#include "sched/task.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/explore/scheduler_scenarios.h"

namespace fairsched::testing {

// A task that records that it started and checks that no timeout came first.
struct MustStartInTime {
  explicit MustStartInTime(const char* name) : name(name) {}
  const char* name;
  Atomic<bool> started{false};
  Task task{[this](Task*) {
    explore::Check(SteadyClock::now() == SteadyClock::time_point{},
                   std::string(name) +
                       " started only after a timeout: the worker that ran it slept, unwoken");
    started.store(true, std::memory_order_release);
  }};
};

// Spins until `other` has started (so its worker cannot run `other` itself), then tells
// WaitDone.
struct WaitsFor {
  explicit WaitsFor(const Atomic<bool>& other) : other(other) {}
  const Atomic<bool>& other;
  Mutex mu;
  ConditionVariable done_cv;
  bool done = false;  // under mu
  Task task{[this](Task*) {
    while (!other.load(std::memory_order_acquire)) CpuRelax();
    {
      MutexLock lock(mu);
      done = true;
    }
    done_cv.notify_all();
  }};
  // Blocks (no steps) until the task has run, so that the owner's Stop does not interleave
  // with the race.
  void WaitDone() {
    MutexLock lock(mu);
    done_cv.wait(lock, [this] { return done; });
  }
};

// Two workers, both idle: the role holder sleeps in the role, the other parks. A poster
// posts A and B; the holder readies both and runs A, which spins until B has started, so
// B is the parker's. The race: the parker registers in parked_ just after the holder's
// WakeOne read it (one preemption); then only Park's re-check of the ready queue keeps it
// awake. Without it, it sleeps until its kLocalBatchRecheck timeout.
inline void ReadiedPairNeedsTheParkerUnder(PostOrder order) {
  MustStartInTime b("B");
  WaitsFor a(b.started);
  TaskSchedulerOptions options = ExploreSchedulerOptions();
  options.post_order = order;
  TaskScheduler scheduler(options);
  scheduler.Start(2);
  explore::Thread poster([&] {
    scheduler.Post(&a.task);
    scheduler.Post(&b.task);
  });
  poster.Join();
  a.WaitDone();
  scheduler.Stop();
}
inline void ReadiedPairNeedsTheParker() { ReadiedPairNeedsTheParkerUnder(PostOrder::kBatched); }

// The pair under PostOrder::kHome: when the holder receives A and B in one pass, both go
// into its own queue, it runs A, and B is left alone there. A lone task the sched-role
// made ready (received, woken, a due timer) has no core to stay on, so an idle worker takes
// it at once; only a lone task its owner's own task posted (a Yield's continuation) waits
// for the owner to be seen stuck at a timed re-check. B must start at logical time 0.
inline void ReadiedPairNeedsTheParkerUnderHomeQueues() {
  ReadiedPairNeedsTheParkerUnder(PostOrder::kHome);
}

// The same race under PostOrder::kHome: the holder readies A, B and C into its own home
// queue and runs A, which spins until B has started. B and C wait in the holder's queue,
// two tasks, which a parker takes at once (as it takes a lone task the role made ready): the
// parker that registers just after the holder's WakeOne read must see them in its re-check
// (ClaimOneFromOthers) and take B.
inline void ReadiedTrioNeedsTheParkerUnderHomeQueues() {
  MustStartInTime b("B");
  WaitsFor a(b.started);
  CountingTask c;
  TaskSchedulerOptions options = ExploreSchedulerOptions();
  options.post_order = PostOrder::kHome;
  TaskScheduler scheduler(options);
  scheduler.Start(2);
  explore::Thread poster([&] {
    scheduler.Post(&a.task);
    scheduler.Post(&b.task);
    scheduler.Post(&c.task);
  });
  poster.Join();
  a.WaitDone();
  scheduler.Stop();
  explore::Check(c.runs.load() == 1, "C did not run once");
}

// Two workers, execute_batch_size 1. X posts Y while both workers execute (V spins until X
// runs), so Y goes into X's worker's local batch. The race: the other worker finishes V,
// takes the role, finds no held post and sleeps in the role between X's look at
// `executing_` and its append (one preemption). X's worker, at its batch end with the
// role held, must publish Y through the front queue (whose push notifies the holder);
// kept, Y waits for the holder's timed sleep to end.
inline void HeldPostWithTheRoleHeld() {
  TaskSchedulerOptions options = ExploreSchedulerOptions();
  options.execute_batch_size = 1;
  TaskScheduler scheduler(options);
  MustStartInTime y("Y");
  Atomic<bool> x_started{false};
  Task x([&](Task*) {
    x_started.store(true, std::memory_order_release);
    scheduler.Post(&y.task);
  });
  WaitsFor v(x_started);
  scheduler.Post(&v.task);
  scheduler.Post(&x);
  scheduler.Start(2);
  scheduler.Stop();
}

// One worker runs one post while the owner waits in WaitEmpty: explored under the C++20
// model with no preemption, so the owner registers and looks before the worker finishes
// (its wait is the free switch). The worker's read of the waiter count after its seq_cst
// count must see the registration: the seq_cst total order makes it so, which an acq_rel
// registration does not (the read may return the count before it, and nobody notifies).
inline void WaitEmptyRacesTheOnlyFinish() {
  CountingTask tasks[1];
  TaskScheduler scheduler(ExploreSchedulerOptions());
  scheduler.Post(&tasks[0].task);
  scheduler.Start(1);
  ExpectEmpty(scheduler, tasks, 1);
  scheduler.Stop();
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_SCHEDULER_WAKE_SCENARIOS_H_
