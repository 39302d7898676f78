// Scenarios of the coroutine runtime's join (coro/runtime.h, "Wakers and lifetime") for the
// interleaving explorer, on the real BasicTaskScheduler (scheduler_scenarios.h): shared by
// coro_join_explore_test.cc (the shipped code) and coro_join_seeded_test.cc (a scratch copy
// of coro/runtime.h with the hand-over of the coroutine's own reference broken). The
// joined coroutine's parameter counts its destruction in an explore::Data, so a destruction
// that is not ordered before the join's return is also reported as a data race.
#ifndef FAIRSCHED_TESTS_EXPLORE_CORO_JOIN_SCENARIOS_H_
#define FAIRSCHED_TESTS_EXPLORE_CORO_JOIN_SCENARIOS_H_

#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/explore/scheduler_scenarios.h"

namespace fairsched::coro::testing {

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

Lazy<int> Child(FrameParameter parameter, bool yield) {
  (void)parameter;
  if (yield) co_await Yield();  // the join then waits for it (SetJoinWaker)
  co_return 7;
}

// A plain thread's Get races the coroutine's end on a worker.
void PlainThreadGet() {
  explore::Data<int> destroyed{0};
  TaskScheduler scheduler(fairsched::testing::ExploreSchedulerOptions());
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
  TaskScheduler scheduler(fairsched::testing::ExploreSchedulerOptions());
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
  TaskScheduler scheduler(fairsched::testing::ExploreSchedulerOptions());
  scheduler.Start(2);
  auto joiner = [](explore::Data<int>* destroyed, bool yield) -> Lazy<int> {
    const int value = co_await SpawnHere(Child(FrameParameter(destroyed), yield));
    explore::Check(destroyed->Read() == 1,
                   "the join returned before the coroutine's frame was destroyed");
    co_return value;
  };
  JoinHandle<int> handle = Spawn(scheduler, joiner(&destroyed, yield));
  explore::Check(handle.Get() == 7, "the joiner returned the wrong value");
  scheduler.Stop();
}

}  // namespace fairsched::coro::testing

#endif  // FAIRSCHED_TESTS_EXPLORE_CORO_JOIN_SCENARIOS_H_
