// The scenario that motivates Task signals (docs/semantics.md, "Why Signal exists"): a task
// starts async work with a deadline; the work finishes exactly when the deadline fires; the
// task deletes itself once the work is done.
//
//  - PlainWakeupPlusFlagIsBroken forces the bad interleaving deterministically: the async
//    side sets `ready` (1) and pauses, the deadline fires and the task sees `ready` and
//    "deletes" itself, and only then does the async side reach Wakeup (2), on a dead task. The test
//    keeps the memory alive and records the deletion instead of freeing, so it stays
//    memory-safe and ASan-clean while showing the use-after-free that real code would hit.
//  - The Signal tests run the same scenario (deterministically and as a stress test with
//    real `delete`): the task deletes itself only after ReceiveSignal(), and Signal does not
//    touch the task after the atomic step that delivers the signal. ASan checks it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "sched/task_scheduler.h"
#include "sync/auto_reset_event.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(SignalScenarioTest, PlainWakeupPlusFlagIsBroken) {
  // The async work sets `ready` (1) and then calls Wakeup (2). Between the two, the async
  // thread may be preempted for any length of time; the test makes that pause explicit by
  // waiting at that point (bounded) while the deadline fires. The task, when its deadline
  // fires, checks `ready` and "deletes" itself. With plain Wakeup nothing in the scheduler
  // holds the task back until (2), so the task is gone before (2) touches it: a
  // use-after-free in real code. Memory is kept alive and the deletion only recorded, so
  // the test stays ASan-clean. (Waiting for the race to happen by chance made the test
  // depend on the machine's timing; forcing the pause shows the same flaw every run.)
  TaskScheduler sched;
  sched.Start(2);
  struct Job {
    Task task;
    std::atomic<bool> ready{false};
    std::atomic<bool> deleted{false};  // stands in for `delete this`
    std::atomic<int> runs{0};
  };
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    auto job = std::make_unique<Job>();  // outlives the round: "deleted" is not freed
    job->task.SetCallback([&job = *job](Task* self) {
      job.runs.fetch_add(1);
      if (job.ready.load()) {
        job.deleted = true;  // "work is done": real code would `delete this` here
        return;
      }
      if (!job.deleted.load()) TaskScheduler::Current()->PostWait(self);
    });
    // The work finishes (1) before the deadline fires (set first, so that a slow main
    // thread cannot let the deadline run the task before `ready` and park it for good).
    job->ready = true;  // (1)
    sched.PostDelay(&job->task, microseconds(200 + 100 * (round % 5)));
    // The async thread is "preempted" here; the deadline fires meanwhile.
    const auto give_up = TaskClock::now() + seconds(10);
    while (!job->deleted.load() && TaskClock::now() < give_up) std::this_thread::yield();
    ASSERT_TRUE(job->deleted.load())
        << "round " << round << ": the deadline did not run the task within 10 s";
    // (2): in real code this Wakeup touches freed memory. The scheduler accepted nothing
    // that could have delayed the deletion: the task ran exactly once, from its deadline.
    EXPECT_EQ(job->runs.load(), 1);
    sched.Wakeup(&job->task);
    ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  }
}

// The "async work with a deadline" multi-step task, with real self-deletion.
class Request {
 public:
  Request(TaskScheduler& sched, std::atomic<int>& deleted, fairsched::AutoResetEvent* on_expiry)
      : sched_(sched), deleted_(deleted), on_expiry_(on_expiry), task_(this, &Request::Wait) {}

  Task* task() { return &task_; }

 private:
  void Wait(Task* self) {
    if (self->ReceiveSignal()) {
      // Completed: whoever called Signal is done with us.
      deleted_.fetch_add(1);
      delete this;
      return;
    }
    // The only other reason to run: the deadline passed (or Stop).
    EXPECT_TRUE(self->IsExpired() || sched_.IsStopping());
    // After the re-post below another worker may run and delete us: copy what we need.
    fairsched::AutoResetEvent* on_expiry = on_expiry_;
    sched_.PostWait(self);  // cancel the work (not modelled) and wait for its Signal
    if (on_expiry != nullptr) on_expiry->Send();  // test hook: does not touch `this`
  }

  TaskScheduler& sched_;
  std::atomic<int>& deleted_;
  fairsched::AutoResetEvent* on_expiry_;
  Task task_;
};

// Deterministic: the deadline fires first, then the work completes with Signal.
TEST(SignalScenarioTest, SignalAfterDeadlineFiredIsSafe) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> deleted{0};
  fairsched::AutoResetEvent expired;
  auto* request = new Request(sched, deleted, &expired);
  sched.PostDelay(request->task(), milliseconds(10));
  expired.Receive();              // the deadline fired, the task is waiting again
  sched.Signal(request->task());  // the work completes
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_EQ(deleted.load(), 1);
}

// Deterministic: the work completes before the deadline.
TEST(SignalScenarioTest, SignalBeforeDeadlineWakesEarly) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<int> deleted{0};
  auto* request = new Request(sched, deleted, nullptr);
  sched.PostDelay(request->task(), seconds(3600));
  sched.Signal(request->task());
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_EQ(deleted.load(), 1);
}

// Many requests whose work completes at about the deadline, from several threads: every
// request is deleted exactly once, by itself, and ASan/TSan see no access after delete.
TEST(SignalScenarioStressTest, CompletionRacingWithDeadline) {
  TaskScheduler sched;
  sched.Start(3);
  const int kRequests = static_cast<int>(testing::StressIterations(20000, 4));
  constexpr int kCompleters = 2;
  std::atomic<int> deleted{0};
  std::vector<std::thread> completers;
  for (int c = 0; c < kCompleters; ++c) {
    completers.emplace_back([&, c] {
      std::mt19937 rng(c + 1);
      for (int i = c; i < kRequests; i += kCompleters) {
        auto* request = new Request(sched, deleted, nullptr);
        const auto delay = microseconds(rng() % 50);
        sched.PostDelay(request->task(), delay);
        // Complete "at" the deadline: sometimes before, sometimes after it fires.
        const auto until = TaskClock::now() + microseconds(rng() % 60);
        while (TaskClock::now() < until) CpuRelax();
        sched.Signal(request->task());  // must be the last touch of `request`
      }
    });
  }
  for (auto& t : completers) t.join();
  ASSERT_TRUE(sched.WaitEmpty(seconds(120)));
  EXPECT_EQ(deleted.load(), kRequests);
}

}  // namespace
}  // namespace fairsched
