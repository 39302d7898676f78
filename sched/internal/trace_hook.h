// Opt-in step tracing of BasicTaskScheduler, for trace conformance checking
// (tests/sched/sched_trace.h records, tests/sched/trace_checker.h replays the record against
// the steps of tla/TaskScheduler.tla; docs/testing.md, "Trace conformance").
//
// The scheduler calls TraceStep at each step the spec names. Without FAIRSCHED_SCHED_TRACE
// (every shipped build) TraceStep is an empty inline function: no code, no data. A build
// that defines FAIRSCHED_SCHED_TRACE for every translation unit that includes the scheduler
// must link a definition of RecordSchedStep (tests/sched:sched_trace provides one).
//
// Where each hook sits decides which order the record can show (see sched_trace.h): a step
// that hands something to other threads (a push, a store they read) is recorded before the
// hand-off; a step that takes something from other threads (a pop, a successful lock) is
// recorded after it.
#ifndef FAIRSCHED_SCHED_INTERNAL_TRACE_HOOK_H_
#define FAIRSCHED_SCHED_INTERNAL_TRACE_HOOK_H_

#include <cstdint>

namespace fairsched {

class Task;

namespace internal {

// The traced steps. `task` is null for the steps that name none.
enum class SchedStep : std::uint8_t {
  kPost,         // Post*/PostOneShot, before the task joins the front queue or a local batch
  kWakeCall,     // Wakeup/Signal/Cancel, before the task's wake bits are set
  kWakePush,     // ... that won a waiting task, before it is pushed into the front queue
  kRoleTake,     // the sched-role taken (after a successful TryLock)
  kReceive,      // the role holder popped the task from the front queue
  kWait,         // the role holder puts the task into the wait queue (before its CAS)
  kReady,        // the role holder makes the task ready (PushPending, not yet visible)
  kReadyLocal,   // the role holder moves a post of its own local batch to the ready queue
  kClaimLocal,   // a lone worker claims a post of its own local batch to run in place
  kFlush,        // the role holder publishes its pending ready tasks (FlushPending)
  kRoleRelease,  // the sched-role released (before the Unlock)
  kStart,        // a worker starts the task's callback
  kFinish,       // the callback returned (the task may be gone: only its address is kept)
  kPark,         // a worker goes to sleep on the ready event
  kUnpark,       // ... and wakes up
  kStopBegin,    // Stop called (before stopping_ is set)
  kStopReturn,   // Stop returns
};

#ifdef FAIRSCHED_SCHED_TRACE
void RecordSchedStep(SchedStep step, const Task* task);
inline void TraceStep(SchedStep step, const Task* task = nullptr) { RecordSchedStep(step, task); }
#else
inline void TraceStep(SchedStep, const Task* = nullptr) {}
#endif

}  // namespace internal
}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_INTERNAL_TRACE_HOOK_H_
