// Runs of the tracing build of the scheduler (FAIRSCHED_SCHED_TRACE) whose records the
// trace conformance tests check: trace_conformance_test.cc on the shipped code, and
// trace_seeded_test.cc on a copy with a seeded bug (tests/explore/BUILD).
#ifndef FAIRSCHED_TESTS_SCHED_TRACE_SCENARIOS_H_
#define FAIRSCHED_TESTS_SCHED_TRACE_SCENARIOS_H_

#include <array>
#include <chrono>
#include <thread>
#include <vector>

#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/sched/hooked_backend.h"
#include "tests/sched/sched_trace.h"

namespace fairsched::testing {

using TracedScheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, HookedBackend>;

struct WakeBeatsExpiryRun {
  std::vector<SchedEvent> trace;
  int timer_runs = 0;
  bool raced = false;  // the Signal won the waiting timer (the trace has its kWakePush)
};

// The race between a waker and the expiry of the same task, made on purpose on one worker:
// a timer T waits in the wait queue; once its deadline has passed, the role holder's next
// pass (its IO poll, HookedBackend::before_poll) posts a task F and Signals T, which pushes
// T into the front queue behind F. With batch_size 1 the pass receives only F, then finds
// T expired in the wait queue: its TryWaitingToReady loses to the Signal, so T must be
// left to the front queue's copy, and runs once. The worker's first two passes (T into
// the wait queue, then the sleeper) must come before T's deadline; on a machine so loaded
// that they do not, T is not waiting when the hook Signals it: the run is tried again.
//
// A scheduler that runs T twice never becomes empty again (its post counters never
// balance), so Stop would never return: if it is not empty 2 s after T ran, `when_stuck`
// gets the record so far and must not return (the scheduler cannot be stopped).
using StuckHandler = void (*)(const WakeBeatsExpiryRun& run);

inline WakeBeatsExpiryRun RecordedWakeBeatsExpiry(int timer_runs) {
  WakeBeatsExpiryRun run{SchedTrace::Take(), timer_runs};
  for (const SchedEvent& e : run.trace) run.raced = run.raced || e.step == SchedStep::kWakePush;
  return run;
}

inline WakeBeatsExpiryRun RunWakeBeatsExpiryOnce(StuckHandler when_stuck) {
  using namespace std::chrono_literals;
  TaskSchedulerOptions options;
  options.batch_size = 1;
  TracedScheduler scheduler(options);
  Atomic<int> timer_runs{0};
  Task timer([&] { timer_runs.fetch_add(1, std::memory_order_relaxed); });
  Task filler([] {});
  const TaskDeadline deadline = TaskClock::now() + 50ms;
  // Keeps the only worker busy past T's deadline, so that the next role pass polls first.
  Task sleeper([&] { std::this_thread::sleep_until(deadline + 5ms); });
  // Only the worker's passes read and write it (the hook runs on the worker).
  bool fired = false;
  HookedBackend::before_poll = [&] {
    if (fired || TaskClock::now() < deadline) return;
    fired = true;
    scheduler.Post(&filler);
    scheduler.Signal(&timer);
  };
  SchedTrace::Clear();
  scheduler.PostDeadline(&timer, deadline);
  scheduler.Post(&sleeper);
  scheduler.Start(1);
  // Stop would wake T early (its wait-queue sweep): first let T run, within a bound.
  const auto give_up = TaskClock::now() + 5s;
  while (timer_runs.load(std::memory_order_relaxed) == 0 && TaskClock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  if (!scheduler.WaitEmpty(2s)) {
    when_stuck(RecordedWakeBeatsExpiry(timer_runs.load(std::memory_order_relaxed)));
  }
  scheduler.Stop();
  HookedBackend::before_poll = nullptr;
  return RecordedWakeBeatsExpiry(timer_runs.load(std::memory_order_relaxed));
}

inline WakeBeatsExpiryRun RunWakeBeatsExpiry(StuckHandler when_stuck) {
  WakeBeatsExpiryRun run = RunWakeBeatsExpiryOnce(when_stuck);
  for (int attempt = 1; attempt < 5 && !run.raced; ++attempt) {
    run = RunWakeBeatsExpiryOnce(when_stuck);
  }
  return run;
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_SCHED_TRACE_SCENARIOS_H_
