// The record behind sched/internal/trace_hook.h: one mutex-protected vector.
//
// Why the record's order is a linearization of the steps the spec models: every step is
// appended under one mutex, so the record is a total order, and a mutex's lock order
// extends happens-before (an unlock synchronizes with the next lock). Each hook sits on
// the side of its step that keeps the order of dependent steps: a step that hands
// something to other threads (a post's push, the role's PushPending/FlushPending, a
// wake's push, Stop's store of stopping_) is recorded before the atomic operation that
// publishes it, and a step that takes something from other threads (a front pop, a
// successful TryLock, the start after the ready pop) is recorded after the operation that
// took it. So for any hand-off, record(give) happens-before publish happens-before take
// happens-before record(take): the record shows the give first. Steps of one thread keep
// their program order. Steps that do not depend on each other may appear in either order,
// and each order is one the spec also allows (their actions commute). What the record
// cannot show is the exact moment of a step between its hook and its atomic operation;
// the checker (trace_checker.h) only asks for orders that hand-offs force.
#include "tests/sched/sched_trace.h"

#include <utility>

#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched {
namespace testing {
namespace {

Mutex g_mu;
std::vector<SchedEvent> g_events;  // guarded by g_mu
int g_threads = 0;                 // threads numbered so far, guarded by g_mu
std::uint64_t g_generation = 1;    // bumped by Clear, guarded by g_mu

// This thread's number in generation `generation` (0: none yet).
thread_local std::uint64_t t_generation = 0;
thread_local int t_thread = 0;

}  // namespace

void SchedTrace::Clear() {
  MutexLock lock(g_mu);
  g_events.clear();
  g_threads = 0;
  ++g_generation;
}

std::vector<SchedEvent> SchedTrace::Take() {
  MutexLock lock(g_mu);
  return std::exchange(g_events, {});
}

const char* StepName(SchedStep step) {
  switch (step) {
    case SchedStep::kPost: return "kPost";
    case SchedStep::kWakeCall: return "kWakeCall";
    case SchedStep::kWakePush: return "kWakePush";
    case SchedStep::kRoleTake: return "kRoleTake";
    case SchedStep::kReceive: return "kReceive";
    case SchedStep::kWait: return "kWait";
    case SchedStep::kReady: return "kReady";
    case SchedStep::kReadyLocal: return "kReadyLocal";
    case SchedStep::kClaimLocal: return "kClaimLocal";
    case SchedStep::kFlush: return "kFlush";
    case SchedStep::kRoleRelease: return "kRoleRelease";
    case SchedStep::kStart: return "kStart";
    case SchedStep::kFinish: return "kFinish";
    case SchedStep::kPark: return "kPark";
    case SchedStep::kUnpark: return "kUnpark";
    case SchedStep::kStopBegin: return "kStopBegin";
    case SchedStep::kStopReturn: return "kStopReturn";
  }
  return "?";
}

}  // namespace testing

namespace internal {

void RecordSchedStep(SchedStep step, const Task* task) {
  testing::SchedEvent event;
  event.step = step;
  event.task = reinterpret_cast<std::uintptr_t>(task);
  // Only a post reads the task: its poster still owns it (it is in no queue yet).
  if (step == SchedStep::kPost) {
    event.deadline = task->Deadline().time_since_epoch().count();
  }
  MutexLock lock(testing::g_mu);
  if (testing::t_generation != testing::g_generation) {
    testing::t_generation = testing::g_generation;
    testing::t_thread = ++testing::g_threads;
  }
  event.thread = testing::t_thread;
  event.seq = testing::g_events.size();
  // Read under the mutex: the times are in record order.
  event.time = TaskClock::now().time_since_epoch().count();
  testing::g_events.push_back(event);
}

}  // namespace internal
}  // namespace fairsched
