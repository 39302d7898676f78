// The coroutine runtime's join under the interleaving explorer: spawned coroutines on the
// real BasicTaskScheduler (scheduler_scenarios.h), whose workers are model threads. Checks
// the lifetime rule of coro/runtime.h ("Wakers and lifetime"): a join returns only after
// the joined coroutine's root frame, its parameters included, has been destroyed (Finish
// hands its own reference to the attached JoinHandle; the join waits for Finish's last
// step and drops both), and a Detach racing the end destroys the frame exactly once. The
// parameter's destructor writes an explore::Data, so a destruction that is not ordered
// before the join's return (a missing release/acquire in the hand-over) is a reported data
// race even where the value happens to be right. Every schedule with one preemption.
#include <gtest/gtest.h>

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/scheduler_scenarios.h"

namespace fairsched::coro {
namespace {

using testing::ExpectPass;

// Counts the destruction of the copy in the coroutine frame (the argument itself is a
// temporary of the spawning expression and counts nothing).
class FrameParameter {
 public:
  explicit FrameParameter(explore::Data<int>* destroyed) : destroyed_(destroyed) {}
  FrameParameter(FrameParameter&& other) noexcept
      : destroyed_(other.destroyed_), in_frame_(true) {}
  ~FrameParameter() {
    if (in_frame_) destroyed_->Write(destroyed_->Read() + 1);
  }

 private:
  explore::Data<int>* destroyed_;
  bool in_frame_ = false;
};

Task<int> Child(FrameParameter parameter, bool yield) {
  (void)parameter;
  if (yield) co_await Yield();  // the join then waits for it (SetJoinWaker)
  co_return 7;
}

// A plain thread's Get races the coroutine's end on a worker.
void PlainThreadGet() {
  explore::Data<int> destroyed{0};
  TaskScheduler scheduler(testing::ExploreSchedulerOptions());
  scheduler.Start(1);
  JoinHandle<int> handle = Spawn(scheduler, Child(FrameParameter(&destroyed), false));
  explore::Check(handle.Get() == 7, "Get returned the wrong value");
  explore::Check(destroyed.Read() == 1, "Get returned before the coroutine's frame was destroyed");
  scheduler.Stop();
}

// Detach races the coroutine's end: the frame is destroyed exactly once, by whichever of
// the two comes last.
void DetachRacesTheEnd() {
  explore::Data<int> destroyed{0};
  TaskScheduler scheduler(testing::ExploreSchedulerOptions());
  scheduler.Start(1);
  JoinHandle<int> handle = Spawn(scheduler, Child(FrameParameter(&destroyed), false));
  handle.Detach();
  scheduler.Stop();
  explore::Check(destroyed.Read() == 1, "a detached coroutine's frame was not destroyed once");
}

// A coroutine joins a child on the other worker: co_await of the JoinHandle (with the child
// yielding first, the join waits and Finish wakes it).
void CoroutineJoin(bool yield) {
  explore::Data<int> destroyed{0};
  TaskScheduler scheduler(testing::ExploreSchedulerOptions());
  scheduler.Start(2);
  auto joiner = [](explore::Data<int>* destroyed, bool yield) -> Task<int> {
    const int value = co_await SpawnHere(Child(FrameParameter(destroyed), yield));
    explore::Check(destroyed->Read() == 1,
                   "the join returned before the coroutine's frame was destroyed");
    co_return value;
  };
  JoinHandle<int> handle = Spawn(scheduler, joiner(&destroyed, yield));
  explore::Check(handle.Get() == 7, "the joiner returned the wrong value");
  scheduler.Stop();
}

TEST(CoroJoinExploreTest, PlainThreadGet) {
  ExpectPass(&PlainThreadGet, 1, "coro join: 1 worker, Get racing the end");
}

TEST(CoroJoinExploreTest, DetachRacesTheEnd) {
  ExpectPass(&DetachRacesTheEnd, 1, "coro join: 1 worker, Detach racing the end");
}

// Two workers: random schedules. (Depth-first with sleep sets, once its one preemption is
// spent, keeps running an idle worker's timed park loop while the finishing worker, whose
// last step the joiner spins for, sleeps in the sleep set: a livelock of the search, not
// of the code.)
void ExpectRandomPass(void (*scenario)(), const char* name) {
  explore::Options options;
  options.strategy = explore::Options::Strategy::kRandom;
  options.max_executions = testing::DeepExploration() ? 20000 : 1000;
  const explore::Result result = explore::Explore(options, scenario);
  testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
}

TEST(CoroJoinExploreTest, CoroutineJoin) {
  ExpectRandomPass([] { CoroutineJoin(false); }, "coro join: 2 workers, co_await of a handle");
}

TEST(CoroJoinExploreTest, CoroutineJoinThatWaits) {
  ExpectRandomPass([] { CoroutineJoin(true); },
                   "coro join: 2 workers, co_await of a handle whose coroutine yields first");
}

}  // namespace
}  // namespace fairsched::coro
