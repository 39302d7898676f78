// Trace conformance: runs of the scheduler built with FAIRSCHED_SCHED_TRACE are replayed
// against the steps of tla/TaskScheduler.tla (trace_checker.h) and must be accepted; and
// the checker itself rejects hand-made traces of the bugs it is for, naming the first bad
// step. The same check on a seeded bug: trace_seeded_test.cc (tests/explore/BUILD).
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/sched/trace_checker.h"
#include "tests/sched/trace_scenarios.h"

namespace fairsched::testing {
namespace {

using namespace std::chrono_literals;

int CountSteps(const std::vector<SchedEvent>& trace, SchedStep step) {
  int n = 0;
  for (const SchedEvent& e : trace) n += e.step == step ? 1 : 0;
  return n;
}

// Posts run-now, one-shot, self-re-posting (local batches), deadline and PostWait tasks,
// wakes the waiting ones with Wakeup, Signal and Cancel, leaves some for Stop to wake
// (one of which posts while Stop drains), and returns the record.
std::vector<SchedEvent> RunMixed(int workers) {
  TracedScheduler scheduler;
  Atomic<int> runs{0};
  auto count = [&] { runs.fetch_add(1, std::memory_order_relaxed); };
  int reposts_left = 40;  // touched only by the re-poster's runs (one at a time)
  Task reposter([&](Task* self) {
    count();
    if (--reposts_left > 0) scheduler.Post(self);
  });
  std::array<Task, 8> timers;
  std::array<Task, 9> waits;
  for (Task& t : timers) t.SetCallback(count);
  for (Task& t : waits) t.SetCallback(count);
  // Woken by Stop: posts one more task while the scheduler drains.
  Task stop_woken([&] {
    count();
    scheduler.PostOneShot(count);
  });
  SchedTrace::Clear();
  scheduler.Post(&reposter);
  for (int i = 0; i < 30; ++i) scheduler.PostOneShot(count);
  scheduler.Start(workers);
  for (std::size_t i = 0; i < timers.size(); ++i) {
    scheduler.PostDelay(&timers[i], std::chrono::microseconds(500 * i));
  }
  for (Task& t : waits) scheduler.PostWait(&t);
  scheduler.PostWait(&stop_woken);
  for (int i = 0; i < 30; ++i) scheduler.PostOneShot(count);
  std::this_thread::sleep_for(2ms);
  for (std::size_t i = 0; i + 3 < waits.size(); i += 3) {
    scheduler.Wakeup(&waits[i]);
    scheduler.Signal(&waits[i + 1]);
    scheduler.Cancel(&waits[i + 2]);
  }
  scheduler.Stop();
  EXPECT_EQ(runs.load(std::memory_order_relaxed),
            40 + 60 + static_cast<int>(timers.size() + waits.size()) + 2);
  return SchedTrace::Take();
}

void ExpectAccepted(const std::vector<SchedEvent>& trace) {
  const TraceVerdict verdict = CheckTrace(trace);
  EXPECT_TRUE(verdict.ok) << verdict.message;
  std::printf("a trace of %lu steps: %s\n", static_cast<unsigned long>(trace.size()),
              verdict.ok ? "accepted" : "rejected");
  // Every post started, and the run went through the steps the checker is for (whether
  // the waits are received before their wakeups depends on the timing: the wait queue's
  // steps are certain in WakeBeatingExpiryIsABehaviourOfTheSpec).
  EXPECT_EQ(CountSteps(trace, SchedStep::kStart), CountSteps(trace, SchedStep::kPost));
  EXPECT_GT(CountSteps(trace, SchedStep::kReady), 0);
  EXPECT_GT(CountSteps(trace, SchedStep::kFlush), 0);
  EXPECT_EQ(CountSteps(trace, SchedStep::kStopReturn), 1);
}

TEST(TraceConformanceTest, MixedRunOnOneWorkerIsABehaviourOfTheSpec) {
  ExpectAccepted(RunMixed(1));
}

TEST(TraceConformanceTest, MixedRunOnTwoWorkersIsABehaviourOfTheSpec) {
  for (int round = 0; round < 3; ++round) ExpectAccepted(RunMixed(2));
}

TEST(TraceConformanceTest, WakeBeatingExpiryIsABehaviourOfTheSpec) {
  const WakeBeatsExpiryRun run = RunWakeBeatsExpiry([](const WakeBeatsExpiryRun& stuck) {
    std::fprintf(stderr, "the scheduler did not become empty (the timer ran %d times): %s\n",
                 stuck.timer_runs, CheckTrace(stuck.trace).message.c_str());
    std::_Exit(1);
  });
  ASSERT_TRUE(run.raced) << "the hook never saw the timer waiting after its deadline";
  const TraceVerdict verdict = CheckTrace(run.trace);
  EXPECT_TRUE(verdict.ok) << verdict.message;
  EXPECT_EQ(run.timer_runs, 1);
  EXPECT_EQ(CountSteps(run.trace, SchedStep::kWait), 1);
  EXPECT_EQ(CountSteps(run.trace, SchedStep::kWakePush), 1);
}

// --- The checker on hand-made traces. Threads: 1 the owner, 2 and 3 workers. ---

class Trace {
 public:
  Trace& Add(int thread, SchedStep step, int task = 0, std::int64_t deadline = -1) {
    SchedEvent e;
    e.seq = events_.size();
    e.thread = thread;
    e.step = step;
    e.task = static_cast<std::uintptr_t>(task) * 64;
    e.deadline = deadline;
    events_.push_back(e);
    return *this;
  }
  // Post of `task` by the owner (with `deadline`), received by worker 2 in a role take.
  Trace& Received(int task, std::int64_t deadline = -1) {
    return Add(1, SchedStep::kPost, task, deadline)
        .Add(2, SchedStep::kRoleTake)
        .Add(2, SchedStep::kReceive, task);
  }
  // ... then made ready and flushed, and the role released.
  Trace& PostedAndReady(int task) {
    return Received(task)
        .Add(2, SchedStep::kReady, task)
        .Add(2, SchedStep::kFlush)
        .Add(2, SchedStep::kRoleRelease);
  }
  const std::vector<SchedEvent>& events() const { return events_; }

 private:
  std::vector<SchedEvent> events_;
};

void ExpectRejected(const Trace& trace, std::size_t index, const std::string& message) {
  const TraceVerdict verdict = CheckTrace(trace.events());
  ASSERT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.index, index);
  EXPECT_EQ(verdict.message, message);
}

TEST(TraceCheckerTest, AcceptsAPostThatRunsOnceAndAStopAfterIt) {
  Trace trace;
  trace.PostedAndReady(1)
      .Add(3, SchedStep::kStart, 1)
      .Add(3, SchedStep::kFinish, 1)
      .Add(1, SchedStep::kStopBegin)
      .Add(1, SchedStep::kStopReturn);
  EXPECT_TRUE(CheckTrace(trace.events()).ok) << CheckTrace(trace.events()).message;
}

TEST(TraceCheckerTest, RejectsATaskStartedTwice) {
  Trace trace;
  trace.PostedAndReady(1)
      .Add(3, SchedStep::kStart, 1)
      .Add(3, SchedStep::kFinish, 1)
      .Add(2, SchedStep::kStart, 1);
  ExpectRejected(trace, 8,
                 "step 8: thread 2 kStart t1: t1 starts while it is in no queue, not ready "
                 "[ExecuteBatchPop]");
}

TEST(TraceCheckerTest, RejectsAStartBeforeTheRoleReceivedTheTask) {
  Trace trace;
  trace.Add(1, SchedStep::kPost, 1).Add(2, SchedStep::kStart, 1);
  ExpectRejected(trace, 1,
                 "step 1: thread 2 kStart t1: t1 starts while it is posted, not received, not "
                 "ready [ExecuteBatchPop]");
}

TEST(TraceCheckerTest, RejectsAStartBeforeTheFlush) {
  Trace trace;
  trace.Received(1).Add(2, SchedStep::kReady, 1).Add(3, SchedStep::kStart, 1);
  ExpectRejected(trace, 4,
                 "step 4: thread 3 kStart t1: t1 starts while it is pending (made ready, not "
                 "flushed), not ready [ExecuteBatchPop]");
}

TEST(TraceCheckerTest, RejectsStopReturningWithWorkLeft) {
  Trace trace;
  trace.PostedAndReady(1)
      .Add(1, SchedStep::kPost, 2)
      .Add(1, SchedStep::kStopBegin)
      .Add(3, SchedStep::kStart, 1)
      .Add(3, SchedStep::kFinish, 1)
      .Add(1, SchedStep::kStopReturn);
  ExpectRejected(trace, 10,
                 "step 10: thread 1 kStopReturn: Stop returns while t2 is posted, not received "
                 "[StopDrains]");
}

TEST(TraceCheckerTest, RejectsARoleStepOfAThreadThatDoesNotHoldTheRole) {
  Trace trace;
  trace.Add(1, SchedStep::kPost, 1).Add(2, SchedStep::kRoleTake).Add(3, SchedStep::kReceive, 1);
  ExpectRejected(trace, 2,
                 "step 2: thread 3 kReceive t1: a step of the sched-role by a thread that does "
                 "not hold it [SchedulePop]");
}

TEST(TraceCheckerTest, RejectsAnEarlyTimerUnlessWoken) {
  Trace trace;
  trace.Received(1, 1000)
      .Add(2, SchedStep::kWait, 1)
      .Add(2, SchedStep::kReady, 1)
      .Add(2, SchedStep::kFlush)
      .Add(2, SchedStep::kRoleRelease)
      .Add(3, SchedStep::kStart, 1);
  std::vector<SchedEvent> early = trace.events();
  early.back().time = 400;
  TraceVerdict verdict = CheckTrace(early);
  ASSERT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.message,
            "step 7: thread 3 kStart t1: t1 starts 600 ticks before its deadline, not woken "
            "[Timers]");
  // The same start after a Wakeup of the task is allowed.
  Trace woken;
  woken.Add(1, SchedStep::kPost, 1, 1000).Add(1, SchedStep::kWakeCall, 1);
  std::vector<SchedEvent> events = woken.events();
  for (std::size_t i = 1; i < trace.events().size(); ++i) {
    events.push_back(trace.events()[i]);
    events.back().seq = events.size() - 1;
  }
  events.back().time = 400;
  verdict = CheckTrace(events);
  EXPECT_TRUE(verdict.ok) << verdict.message;
}

}  // namespace
}  // namespace fairsched::testing
