// The record of a tracing build of the scheduler: every step the scheduler reports through
// sched/internal/trace_hook.h (FAIRSCHED_SCHED_TRACE), in one global order, for
// tests/sched/trace_checker.h to replay against tla/TaskScheduler.tla.
//
// Linking this library defines internal::RecordSchedStep; every translation unit of the
// binary that includes the scheduler must be compiled with FAIRSCHED_SCHED_TRACE (the
// test targets set it in local_defines). The record is process-wide: one traced scheduler
// at a time. Clear it before the run, Take it after Stop.
#ifndef FAIRSCHED_TESTS_SCHED_SCHED_TRACE_H_
#define FAIRSCHED_TESTS_SCHED_SCHED_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sched/internal/trace_hook.h"

namespace fairsched::testing {

using internal::SchedStep;

// One recorded step.
struct SchedEvent {
  std::uint64_t seq = 0;     // its place in the record (0, 1, ...)
  int thread = 0;            // the recording thread, numbered 1, 2, ... by first record
  SchedStep step = SchedStep::kPost;
  std::uintptr_t task = 0;   // the task's address; 0 for steps without a task
  // kPost only: the post's deadline in steady-clock ticks (negative: run now;
  // kNoDeadline's ticks: PostWait).
  std::int64_t deadline = 0;
  std::int64_t time = 0;     // steady-clock ticks when it was recorded
};

// The process-wide record.
class SchedTrace {
 public:
  // Empties the record and restarts the sequence and the thread numbers.
  static void Clear();
  // The record so far (and empties it).
  static std::vector<SchedEvent> Take();
};

// "kPost", "kStart", ...
const char* StepName(SchedStep step);

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_SCHED_SCHED_TRACE_H_
