// Trace conformance: runs of the scheduler built with FAIRSCHED_SCHED_TRACE are replayed
// against the steps of tla/TaskScheduler.tla (trace_checker.h) and must be accepted; and
// the checker itself rejects hand-made traces of the bugs it is for, naming the first bad
// step. The same check on seeded bugs: trace_seeded_test.cc, trace_seeded_order_test.cc and
// trace_seeded_claim_test.cc (tests/explore/BUILD).
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
std::vector<SchedEvent> RunMixed(int workers, const TaskSchedulerOptions& options) {
  TracedScheduler scheduler(options);
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

void ExpectAccepted(const std::vector<SchedEvent>& trace,
                    const TaskSchedulerOptions& options = {}) {
  const TraceVerdict verdict = CheckTrace(trace, options);
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

// A small execute_batch_size, so that held posts reach their own worker's bound (E starts)
// within a run.
TaskSchedulerOptions MixedOptions(PostOrder order) {
  TaskSchedulerOptions options;
  options.post_order = order;
  options.execute_batch_size = 4;
  return options;
}

TEST(TraceConformanceTest, MixedRunOnOneWorkerIsABehaviourOfTheSpec) {
  for (PostOrder order : {PostOrder::kBatched, PostOrder::kStrict}) {
    for (int round = 0; round < 2; ++round) {
      ExpectAccepted(RunMixed(1, MixedOptions(order)), MixedOptions(order));
    }
  }
  ExpectAccepted(RunMixed(1, {}));  // the default options (execute_batch_size 64)
}

TEST(TraceConformanceTest, MixedRunOnTwoWorkersIsABehaviourOfTheSpec) {
  for (PostOrder order : {PostOrder::kBatched, PostOrder::kStrict}) {
    for (int round = 0; round < 3; ++round) {
      ExpectAccepted(RunMixed(2, MixedOptions(order)), MixedOptions(order));
    }
  }
  ExpectAccepted(RunMixed(2, {}));
}

TEST(TraceConformanceTest, MixedRunOnThreeWorkersIsABehaviourOfTheSpec) {
  for (PostOrder order : {PostOrder::kBatched, PostOrder::kStrict}) {
    for (int round = 0; round < 3; ++round) {
      ExpectAccepted(RunMixed(3, MixedOptions(order)), MixedOptions(order));
    }
  }
}

// A held post next to a re-poster (the spec's EndlessRepost harness, on real threads), on
// `workers` workers under kBatched with execute_batch_size 4: task L waits until R runs,
// posts X and X2 to run at once (every worker executes: they are held in L's worker's local
// batch, unless a worker was between batches) and waits until both have run, while R
// re-posts itself; on three workers a blocker keeps the third one executing until then.
// Only a busy take-over by R's worker publishes X and X2, after about 4 and at most 3 * 4
// of its starts; R's posts made after that must join behind them.
std::vector<SchedEvent> RunHeldPostNextToARePoster(int workers,
                                                   const TaskSchedulerOptions& options) {
  TracedScheduler scheduler(options);
  Atomic<bool> reposter_running{false};
  Atomic<int> x_runs{0};
  Task x([&] { x_runs.fetch_add(1, std::memory_order_relaxed); });
  Task x2([&] { x_runs.fetch_add(1, std::memory_order_relaxed); });
  // Runs for 100 us, so that its worker is nearly always inside an execution batch.
  Task reposter([&](Task* self) {
    reposter_running.store(true, std::memory_order_release);
    const auto until = TaskClock::now() + 100us;
    while (TaskClock::now() < until) {
    }
    if (x_runs.load(std::memory_order_relaxed) < 2) scheduler.Post(self);
  });
  std::vector<Task> blockers(static_cast<std::size_t>(workers - 2));
  for (Task& blocker : blockers) {
    blocker.SetCallback([&] {
      while (x_runs.load(std::memory_order_relaxed) < 2) std::this_thread::yield();
    });
  }
  Task long_task([&] {
    SpinUntilSet(reposter_running, 5s);
    scheduler.Post(&x);
    scheduler.Post(&x2);
    const auto give_up = TaskClock::now() + 5s;
    while (x_runs.load(std::memory_order_relaxed) < 2 && TaskClock::now() < give_up) {
      std::this_thread::yield();
    }
  });
  SchedTrace::Clear();
  scheduler.Post(&long_task);
  scheduler.Post(&reposter);
  for (Task& blocker : blockers) scheduler.Post(&blocker);
  scheduler.Start(workers);
  scheduler.Stop();
  EXPECT_EQ(x_runs.load(std::memory_order_relaxed), 2);
  return SchedTrace::Take();
}

TEST(TraceConformanceTest, HeldPostsNextToARePosterAreABehaviourOfTheSpec) {
  const TaskSchedulerOptions options = MixedOptions(PostOrder::kBatched);
  for (int workers : {2, 3}) {
    for (int round = 0; round < 3; ++round) {
      const TraceVerdict verdict =
          CheckTrace(RunHeldPostNextToARePoster(workers, options), options);
      EXPECT_TRUE(verdict.ok) << verdict.message;
    }
  }
}

// The per-poster order where it is easiest to lose: a worker goes idle between two posts
// of one callback, the first one held (trace_scenarios.h).
TEST(TraceConformanceTest, PostsAroundAWorkerGoingIdleAreABehaviourOfTheSpec) {
  for (int round = 0; round < 3; ++round) {
    const IdleBetweenPostsRun run = RunIdleBetweenPosts();
    ASSERT_TRUE(run.raced) << "the idle worker's role pass never let the second post happen";
    const TraceVerdict verdict = CheckTrace(run.trace);
    EXPECT_TRUE(verdict.ok) << verdict.message;
  }
}

// A lone worker's held re-post next to posts from outside that wait in the front queue
// (trace_scenarios.h): the re-post is not run in place ahead of them.
TEST(TraceConformanceTest, OutsidePostsBesideALoneRePosterAreABehaviourOfTheSpec) {
  for (int round = 0; round < 3; ++round) {
    const std::vector<SchedEvent> trace = RunOutsidePostsBesideALoneRePoster();
    const TraceVerdict verdict = CheckTrace(trace);
    EXPECT_TRUE(verdict.ok) << verdict.message;
    EXPECT_EQ(CountSteps(trace, SchedStep::kClaimLocal), 0);
  }
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

// --- The order rules. ---

// The owner posts t1 and t2; worker 2 takes the role and makes both ready (t1 first).
Trace TwoReady() {
  Trace trace;
  trace.Add(1, SchedStep::kPost, 1)
      .Add(1, SchedStep::kPost, 2)
      .Add(2, SchedStep::kRoleTake)
      .Add(2, SchedStep::kReceive, 1)
      .Add(2, SchedStep::kReady, 1)
      .Add(2, SchedStep::kReceive, 2)
      .Add(2, SchedStep::kReady, 2)
      .Add(2, SchedStep::kFlush)
      .Add(2, SchedStep::kRoleRelease);
  return trace;
}

TEST(TraceCheckerTest, RejectsAWorkerStartingReadyTasksOutOfFifoOrder) {
  Trace trace = TwoReady();
  trace.Add(3, SchedStep::kStart, 2).Add(3, SchedStep::kFinish, 2).Add(3, SchedStep::kStart, 1);
  ExpectRejected(trace, 11,
                 "step 11: thread 3 kStart t1: t1 starts after t2, which was made ready after it "
                 "and started before this thread's previous step: the ready queue is FIFO "
                 "[Order]");
}

TEST(TraceCheckerTest, RejectsAStartOfATaskOvertakenInTheReadyQueueByAnotherWorker) {
  // Thread 4 took t1 after its park ended, so after thread 3 had taken t2.
  Trace trace = TwoReady();
  trace.Add(4, SchedStep::kPark)
      .Add(3, SchedStep::kStart, 2)
      .Add(4, SchedStep::kUnpark)
      .Add(4, SchedStep::kStart, 1);
  ExpectRejected(trace, 12,
                 "step 12: thread 4 kStart t1: t1 starts after t2, which was made ready after it "
                 "and started before this thread's previous step: the ready queue is FIFO "
                 "[Order]");
  // Without a step of thread 4 in between, it may have taken t1 first and recorded later.
  Trace raced = TwoReady();
  raced.Add(4, SchedStep::kPark).Add(4, SchedStep::kUnpark);
  raced.Add(3, SchedStep::kStart, 2).Add(4, SchedStep::kStart, 1);
  EXPECT_TRUE(CheckTrace(raced.events()).ok) << CheckTrace(raced.events()).message;
}

TEST(TraceCheckerTest, RejectsPostsOfOneThreadJoiningOutOfPostOrder) {
  Trace trace;
  trace.Add(1, SchedStep::kPost, 1)
      .Add(1, SchedStep::kPost, 2)
      .Add(2, SchedStep::kRoleTake)
      .Add(2, SchedStep::kReceive, 2);
  ExpectRejected(trace, 3,
                 "step 3: thread 2 kReceive t2: t2 joins the shared FIFO before t1, which the "
                 "same thread posted before it [PerPosterOrder]");
}

TEST(TraceCheckerTest, RejectsAPostJoiningAheadOfOneThatHadJoinedBeforeIt) {
  // t1 is in the front queue once its poster's next step is recorded (step 1); t3, posted
  // after that by another thread, must be received after it.
  Trace trace;
  trace.Add(1, SchedStep::kPost, 1)
      .Add(1, SchedStep::kPost, 2)
      .Add(4, SchedStep::kPost, 3)
      .Add(2, SchedStep::kRoleTake)
      .Add(2, SchedStep::kReceive, 3);
  ExpectRejected(trace, 4,
                 "step 4: thread 2 kReceive t3: t3 joins the shared FIFO before t1, which had "
                 "joined it (by step 1) before t3 was posted [Order]");
  // Posted before the owner's next step, t3 may have been pushed first.
  Trace raced;
  raced.Add(1, SchedStep::kPost, 1)
      .Add(4, SchedStep::kPost, 3)
      .Add(1, SchedStep::kPost, 2)
      .Add(2, SchedStep::kRoleTake)
      .Add(2, SchedStep::kReceive, 3);
  EXPECT_TRUE(CheckTrace(raced.events()).ok) << CheckTrace(raced.events()).message;
}

// The owner posts t1 to t4, made ready by thread 2; t1 runs on thread 3 and posts t5 to
// run at once (under kBatched it may be held); thread 4 starts t2, t3 and t4; then the
// owner posts t6, which thread 2 receives while t5 was not received yet.
std::vector<SchedEvent> HeldPostAndOtherStarts() {
  Trace trace;
  for (int task = 1; task <= 4; ++task) trace.Add(1, SchedStep::kPost, task);
  trace.Add(2, SchedStep::kRoleTake);
  for (int task = 1; task <= 4; ++task) {
    trace.Add(2, SchedStep::kReceive, task).Add(2, SchedStep::kReady, task);
  }
  trace.Add(2, SchedStep::kFlush)
      .Add(2, SchedStep::kRoleRelease)
      .Add(3, SchedStep::kStart, 1)
      .Add(3, SchedStep::kPost, 5)
      .Add(3, SchedStep::kFinish, 1);
  for (int task = 2; task <= 4; ++task) {
    trace.Add(4, SchedStep::kStart, task).Add(4, SchedStep::kFinish, task);
  }
  trace.Add(1, SchedStep::kPost, 6).Add(2, SchedStep::kRoleTake).Add(2, SchedStep::kReceive, 6);
  return trace.events();
}

TEST(TraceCheckerTest, RejectsAPostOvertakingAHeldPostPastTheOrderBound) {
  // execute_batch_size 1: thread 4's third start (step 22) since t5's poster recorded its
  // next step is past the bound (3 * 1), so t5 had joined before t6 was posted.
  TaskSchedulerOptions options;
  options.execute_batch_size = 1;
  const TraceVerdict verdict = CheckTrace(HeldPostAndOtherStarts(), options);
  ASSERT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.index, 26u);
  EXPECT_EQ(verdict.message,
            "step 26: thread 2 kReceive t6: t6 joins the shared FIFO before t5, which had "
            "joined it (by step 22) before t6 was posted [Order]");
  // With execute_batch_size 2 (a bound of 6 starts) t5 may still be held.
  options.execute_batch_size = 2;
  EXPECT_TRUE(CheckTrace(HeldPostAndOtherStarts(), options).ok);
  // Under kStrict every post joins when it is made: t5 had joined by its poster's next step.
  options.post_order = PostOrder::kStrict;
  EXPECT_EQ(CheckTrace(HeldPostAndOtherStarts(), options).message,
            "step 26: thread 2 kReceive t6: t6 joins the shared FIFO before t5, which had "
            "joined it (by step 17) before t6 was posted [Order]");
}

// The owner posts t1 and t2 with these deadlines; the role receives both into the wait queue.
Trace TwoWaiting(std::int64_t t1_deadline, std::int64_t t2_deadline) {
  Trace trace;
  trace.Add(1, SchedStep::kPost, 1, t1_deadline)
      .Add(1, SchedStep::kPost, 2, t2_deadline)
      .Add(2, SchedStep::kRoleTake)
      .Add(2, SchedStep::kReceive, 1)
      .Add(2, SchedStep::kWait, 1)
      .Add(2, SchedStep::kReceive, 2)
      .Add(2, SchedStep::kWait, 2);
  return trace;
}

// t1 (deadline 2000) and t2 (1000) wait; a later pass makes `first_ready` ready (the last step).
Trace OneExpires(int first_ready) {
  Trace trace = TwoWaiting(2000, 1000);
  trace.Add(2, SchedStep::kRoleRelease)
      .Add(2, SchedStep::kRoleTake)
      .Add(2, SchedStep::kReady, first_ready);
  return trace;
}

TEST(TraceCheckerTest, RejectsAnExpiryAheadOfAnEarlierDeadline) {
  ExpectRejected(OneExpires(1), 9,
                 "step 9: thread 2 kReady t1: t1 leaves the wait queue before t2, which waits "
                 "with an earlier deadline and was not woken [Order]");
  EXPECT_TRUE(CheckTrace(OneExpires(2).events()).ok);
  // A later deadline (t2) woken by a Wakeup that won between the role's kWait and its CAS:
  // made ready at once, while t1 waits.
  Trace woken = TwoWaiting(1000, 2000);
  woken.Add(1, SchedStep::kWakeCall, 2).Add(2, SchedStep::kReady, 2);
  const TraceVerdict verdict = CheckTrace(woken.events());
  EXPECT_TRUE(verdict.ok) << verdict.message;
}

}  // namespace
}  // namespace fairsched::testing
