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
// The orders of the "Order" promise, as far as hand-offs force them in the record:
//   - the ready queue is FIFO: the role holders' kReady/kReadyLocal steps are its push
//     order (one producer at a time), and a worker's start of a ready task comes after its
//     pop, which comes after its previous step; so a start may not take a task that was
//     made ready before one that any thread started before the starter's previous step
//     (in particular each worker starts its ready tasks in FIFO order);
//   - per poster: the posts one thread makes join the shared FIFO (received from the front
//     queue, moved from a local batch to the ready queue, or claimed in place) in the order
//     it made them (the spec's PerPosterOrder);
//   - the bound: a post has joined the front queue once its poster has recorded its next
//     step, unless it may be held in a local batch (a run-now post from a callback, under
//     PostOrder::kBatched); a held post has joined once its own worker has started
//     execute_batch_size tasks since the post, or another worker 3 * execute_batch_size
//     since the poster's next step. A post made after another post joined must not join
//     before it;
//   - the wait queue by deadline: a task made ready from the wait queue outside a Stop (whose
//     sweep takes any order) and without a Wakeup/Signal/Cancel call is an expiry, so no
//     task waiting unwoken may have an earlier deadline. (An IO backend's wake,
//     WakeFromRole, has no hook: a traced run with IO would see it as an expiry, here and
//     in the timer rule above. The tests' backend does no IO.)
// Not checked: whether the role moves its local batch to the ready queue only when the
// front queue is empty (the record does not show whether a post is in the front queue or
// held), the wake-up channels (a missed wakeup shows as a hang, not as a wrong step), the
// Stop and WaitEmpty counters themselves, whether a Stop's wake-up is right for a
// PostDeadlineThroughStop post (the trace treats every post queued during a Stop as
// woken). ClaimLocalInPlace (a lone worker running its own local batch without the ready
// queue) is not a step of the spec; the checker allows it for the worker that made the
// post.
// Tasks are told apart by address: a task deleted by its own callback whose memory holds
// a new task that is posted and started before the old callback has returned (its kFinish)
// would show as a start while it runs. The tests' tasks outlive their runs.
#ifndef FAIRSCHED_TESTS_SCHED_TRACE_CHECKER_H_
#define FAIRSCHED_TESTS_SCHED_TRACE_CHECKER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "sched/task_scheduler_options.h"
#include "tests/sched/sched_trace.h"

namespace fairsched::testing {

struct TraceVerdict {
  bool ok = true;
  std::size_t index = 0;  // the first step not allowed (when !ok)
  // When !ok: "step <index>: thread <n> <step> t<k>: <what the spec does not allow>",
  // with tasks numbered t1, t2, ... by their first appearance.
  std::string message;
};

// `options`: those of the traced scheduler. post_order and execute_batch_size set the order
// bound (PostOrder::kStrict: every post joins when it is made).
TraceVerdict CheckTrace(const std::vector<SchedEvent>& trace,
                        const TaskSchedulerOptions& options = {});

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_SCHED_TRACE_CHECKER_H_
