// Runs of the tracing build of the scheduler (FAIRSCHED_SCHED_TRACE) whose records the
// trace conformance tests check: trace_conformance_test.cc on the shipped code, and
// trace_seeded_test.cc, trace_seeded_order_test.cc and trace_seeded_claim_test.cc on copies
// with a seeded bug (tests/explore/BUILD).
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

// Spins until `flag` is true or `limit` has passed; returns the flag.
inline bool SpinUntilSet(const Atomic<bool>& flag, std::chrono::nanoseconds limit) {
  const auto give_up = TaskClock::now() + limit;
  while (!flag.load(std::memory_order_acquire)) {
    if (TaskClock::now() >= give_up) return false;
    std::this_thread::yield();
  }
  return true;
}

struct IdleBetweenPostsRun {
  std::vector<SchedEvent> trace;
  bool raced = false;  // Y was posted while the other worker, idle, held the role
};

// Two posts of one callback with a worker going idle in between, on two workers under
// PostOrder::kBatched (the race of held_post_test.cc's TwoPostsOfOneTask* tests, made on
// purpose): task P waits until task G runs on the other worker, posts X (both workers
// execute, so X is held in P's worker's local batch) and lets G return. G's worker, idle
// now, takes the role; its pass's IO poll (HookedBackend::before_poll), which comes before
// the pass would take X over, lets P post Y and waits until that post has returned. A
// worker may be idle, so Y is pushed into the front queue, and X, held, must be published
// ahead of it (AppendLocal): the pass receives X, then Y. The trace names the tasks t1 G,
// t2 P, t3 X, t4 Y.
inline IdleBetweenPostsRun RunIdleBetweenPosts() {
  using namespace std::chrono_literals;
  TracedScheduler scheduler;
  Atomic<bool> gate_running{false};
  Atomic<bool> x_posted{false};
  Atomic<bool> go{false};
  Atomic<bool> y_posted{false};
  Task x([] {});
  Task y([] {});
  Task gate([&] {
    gate_running.store(true, std::memory_order_release);
    SpinUntilSet(x_posted, 5s);
  });
  Task poster([&] {
    SpinUntilSet(gate_running, 5s);
    scheduler.Post(&x);
    x_posted.store(true, std::memory_order_release);
    SpinUntilSet(go, 5s);
    scheduler.Post(&y);
    y_posted.store(true, std::memory_order_release);
  });
  // Only role holders run the hook (one at a time, RoleLock orders them).
  bool fired = false;
  bool raced = false;
  HookedBackend::before_poll = [&] {
    if (fired || !x_posted.load(std::memory_order_acquire)) return;
    fired = true;
    go.store(true, std::memory_order_release);
    raced = SpinUntilSet(y_posted, 5s);
  };
  SchedTrace::Clear();
  scheduler.Post(&gate);
  scheduler.Post(&poster);
  scheduler.Start(2);
  scheduler.Stop();
  HookedBackend::before_poll = nullptr;
  return {SchedTrace::Take(), raced};
}

// Posts from outside while a lone worker re-posts, on one worker under PostOrder::kBatched:
// task T waits until the owner has posted A and B (they wait in the front queue: the
// worker, inside T, receives nothing), then re-posts itself. The re-post is held in the
// local batch, and at T's task boundary the ready queue is empty; but A and B, made before
// the re-post, wait in the front queue, so the worker must not run the re-post in place
// (ClaimLocalInPlace) but go through the role, which makes A and B ready first. The trace
// names the tasks t1 T, t2 A, t3 B.
inline std::vector<SchedEvent> RunOutsidePostsBesideALoneRePoster() {
  using namespace std::chrono_literals;
  TracedScheduler scheduler;
  Atomic<bool> t_running{false};
  Atomic<bool> posted{false};
  bool reposted = false;  // only T's runs touch it, one at a time
  Task a([] {});
  Task b([] {});
  Task t([&](Task* self) {
    if (reposted) return;
    reposted = true;
    t_running.store(true, std::memory_order_release);
    SpinUntilSet(posted, 5s);
    scheduler.Post(self);
  });
  SchedTrace::Clear();
  scheduler.Post(&t);
  scheduler.Start(1);
  SpinUntilSet(t_running, 5s);
  scheduler.Post(&a);
  scheduler.Post(&b);
  posted.store(true, std::memory_order_release);
  scheduler.Stop();
  return SchedTrace::Take();
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_SCHED_TRACE_SCENARIOS_H_
