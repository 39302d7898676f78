// Replays a scheduler trace (tests/sched/sched_trace.h) against the steps of
// tla/TaskScheduler.tla and reports the first step the spec does not allow.
//
// The checker keeps the part of the spec's state that the trace shows: for each task
// whether it is queued (posted, not started) and where its post is (the front queue or a
// local batch, received by the role holder, the wait queue, pending, ready), the woken
// copies a waker pushed into the front queue, whether it runs; who holds the sched-role;
// which workers are parked; whether Stop runs. Each step's precondition and effect are the
// spec action's, restricted to those variables; each rule quotes the spec's text in a
// `code:` comment that //tools/model_refs:model_refs_test keeps in step with the spec.
//
// Checked: exactly once (a post starts once, never twice at a time, never without a post;
// a run ends, for the spec, when its callback returns or posts its own task again);
// the pipeline (a task starts only after the role made it ready and flushed it; only the
// role holder receives, waits, readies and flushes; it flushes before it releases the role;
// a waker pushes only a waiting task, and the role readies it once); a task is never in
// two queues; the role has one holder; a parked worker does nothing until it wakes; Stop
// returns only when every post has finished, nothing is queued, the role is free and no
// worker is parked; and the promise of sched/task_scheduler.h that a timer does not start
// before its deadline unless woken (Wakeup/Signal/Cancel, or a Stop while it was queued).
// Not checked (the trace does not show them, or not in an order the hand-offs force): the
// FIFO orders of the front and ready queues (several threads record their pushes and pops
// outside the queues' own order), the local batches' claims and the order bound, the
// wake-up channels (a missed wakeup shows as a hang, not as a wrong step), the Stop and
// WaitEmpty counters themselves, whether a Stop's wake-up is right for a
// PostDeadlineThroughStop post (the trace treats every post queued during a Stop as woken). ClaimLocalInPlace (a lone worker running its own local
// batch without the ready queue) is not a step of the spec; the checker allows it for the
// worker that made the post.
// Tasks are told apart by address: a task deleted by its own callback whose memory holds
// a new task that is posted and started before the old callback has returned (its kFinish)
// would show as a start while it runs. The tests' tasks outlive their runs.
#ifndef FAIRSCHED_TESTS_SCHED_TRACE_CHECKER_H_
#define FAIRSCHED_TESTS_SCHED_TRACE_CHECKER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "tests/sched/sched_trace.h"

namespace fairsched::testing {

struct TraceVerdict {
  bool ok = true;
  std::size_t index = 0;  // the first step not allowed (when !ok)
  // When !ok: "step <index>: thread <n> <step> t<k>: <what the spec does not allow>",
  // with tasks numbered t1, t2, ... by their first appearance.
  std::string message;
};

TraceVerdict CheckTrace(const std::vector<SchedEvent>& trace);

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_SCHED_TRACE_CHECKER_H_
