// Idle workers: how a worker that runs out of work spins and parks, and who wakes it. Part
// of BasicTaskScheduler's definition (sched/task_scheduler.h declares the members).
//
//   - AfterFrontPush: a post that made the front queue non-empty notifies the role holder
//     and, if the role is free, wakes one parked worker.
//   - WakeOne: a publisher of more work than it can start wakes one parked worker.
//   - Park: spin (SpinFor), register in parked_, re-check every source of work, sleep on
//     the ready event, timed to the nearest deadline.
//   - SomeWorkerMayBeIdle: the hint that decides whether a run-now post may be held.
// Each sleeper/publisher pair is a Dekker pair whose halves are commented at the code; the
// whole protocol is in docs/design.md, "The lost-wakeup trap".
//
// Included at the end of sched/task_scheduler.h; it includes that header itself, so that a
// copy of this file included first (tests/explore's seeded bugs) replaces it.
#ifndef FAIRSCHED_SCHED_INTERNAL_IDLE_H_
#define FAIRSCHED_SCHED_INTERNAL_IDLE_H_

#include "sched/task_scheduler.h"

namespace fairsched {

// After a push (or a chain push) into the front queue that returned `was_empty`.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::AfterFrontPush(
    bool was_empty) {
  // The push is seq_cst (see MpscQueue): with the loads below it forms the poster's half
  // of two Dekker pairs.
  if (!was_empty) {
    // Not the first task in the front queue: whoever made it non-empty already arranged
    // for it to be scheduled, and that covers ours. The task before ours stays in the
    // queue until our push is complete (see MpscQueue), so the queue stays non-empty until
    // ours is popped; the role holder never sleeps while the queue is not empty, including
    // while our push is still in flight (IsEmpty is false then; see Schedule), and looks
    // at the queue again after releasing the role (WorkerMain).
    return;
  }
  // The role holder may be asleep (or about to sleep) without knowing about this task.
  // Notify is a flag that the next WaitUntil consumes, so it is never lost.
  io_.Notify();
  // If nobody holds the role, nobody will take this task unless a worker comes by: a
  // busy worker takes the role once it runs out of ready tasks, but if every worker is parked
  // we must wake one. seq_cst loads, after our seq_cst push: either we see the role free
  // and a parked worker (and wake it), or the parker's re-check after registering sees
  // our task, or the releasing role holder's check after its seq_cst Unlock sees it.
  if (!role_.IsLocked(std::memory_order_seq_cst) && parked_.load(std::memory_order_seq_cst) > 0) {
    ready_event_.Send();
  }
}

// Whether another worker may be idle: not every worker is inside an execution batch (the
// others are spinning, parked, or in the role, where the holder may be asleep). Relaxed
// load; a hint (see AppendLocal).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::SomeWorkerMayBeIdle() const {
  return executing_.load(std::memory_order_relaxed) < worker_count_;
}

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::WakeOne(Worker* worker) {
  // The publisher's half of the Dekker pair with Park (see there). Every ready-queue
  // publication is made by the role holder (Schedule, MoveLocalToReady), as a release store
  // that Park re-checks with relaxed loads; what orders it before this read of parked_ is
  // the role's seq_cst Unlock, which WorkerMain makes between the publication and this call
  // (Park makes the matching seq_cst look at the role). seq_cst load: if it misses a
  // registration, it comes before that registration in the single total order, so Park's
  // look at the role, later in that order, reads our Unlock (or a later TryLock, which
  // continues its release sequence) and its re-check sees the publication. No fence: with
  // the role release between them, none is needed (tests/explore: the real scheduler,
  // SchedulerWakeExploreTest.ReadiedPairNeedsTheParkerUnderCpp20, fails when the Unlock is
  // only a release; memory_order_test's mirror, ParkWakeOneOrderTest, shows the same). A
  // caller that publishes to the ready queue without releasing the role in between would
  // need a seq_cst fence here and in Park. The chain wake (ExecuteBatch) publishes
  // nothing: it only hurries a worker along to work whose publisher already woke whom it
  // had to. Parked workers are rare on a busy scheduler, so the load is usually one read
  // of a shared line.
  if (parked_.load(std::memory_order_seq_cst) == 0) return;
  worker->stats.wakes_sent.Add();
  ready_event_.Send();
}

// True if this worker could do something right now: a ready task seems available, or the
// role is free and the front queue holds posts.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::WorkVisible(
    Worker* worker) const {
  return ReadySeemsNonEmpty(worker) || (home_queues_ && OtherHomesHaveWork(worker)) ||
         (!role_.IsLocked() && !front_.IsEmpty());
}

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::ReadySeemsNonEmpty(
    Worker* worker) const {
  if (home_queues_) return worker->home->SeemsNonEmpty();  // its own queue (exact: owner)
  if constexpr (requires { worker->consumer.HasMore(); }) {
    return worker->consumer.HasMore();
  } else {
    return ready_.Count() > 0;
  }
}

// Idle: spin briefly, then sleep on the ready event. Returns true if it slept.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::Park(Worker* worker) {
  if (SpinFor(options_.spin_before_park, [&] { return WorkVisible(worker); })) return false;
  // Then give the core away a few times (yields_before_park), looking after each: on a
  // machine whose cores are all busy, the thread that publishes our next work (the role
  // holder woken by IO, a poster) may need this core to do it. Finding the work here
  // saves the park and the publisher's wake (two futex calls); it is only a look, before
  // the registration below, so nothing of the protocol changes.
  for (int i = 0; i < options_.yields_before_park; ++i) {
    YieldThread();
    if (WorkVisible(worker)) return false;
  }
  // Register first, then re-check everything that could need us. A publisher (role
  // holder, poster, chain waker) first makes its work visible and then reads parked_:
  // either our re-check sees its work (we do not sleep) or its read sees our registration
  // (it sends the signal, which Receive cannot miss because the AutoResetEvent is a flag).
  // Which ordering makes that so depends on the work: the front queue, the role lock and
  // the nearest deadline are written and re-checked with seq_cst accesses (one total
  // order). The ready queue is published with a release store and re-checked with relaxed
  // loads; its publisher is always the role holder, and its seq_cst Unlock between the
  // publication and its read of parked_, with our seq_cst look at the role (role_locked,
  // below) between the registration and the re-check, orders the pair (see WakeOne).
  // front_.IsEmpty from here (not the queue's consumer) reads the consumer's head as of
  // the role release our seq_cst IsLocked load synchronised with; a holder that took the
  // role after that load pops what we miss, and its release-time check reads parked_
  // after our registration.
  parked_.fetch_add(1, std::memory_order_seq_cst);
  const std::int64_t next_deadline = nearest_deadline_.load(std::memory_order_seq_cst);
  const bool role_locked = role_.IsLocked(std::memory_order_seq_cst);
  const bool timer_due = next_deadline != kNoDeadlineTicks &&
                         TaskClock::now().time_since_epoch().count() >= next_deadline;
  const bool sleep = !exit_.load(std::memory_order_seq_cst) && !ReadySeemsNonEmpty(worker) &&
                     (role_locked || front_.IsEmpty(std::memory_order_seq_cst)) &&
                     !(timer_due && !role_locked) &&
                     !(home_queues_ ? ClaimOneFromOthers(worker) : TakeOverLocalBatches(worker));
  if (sleep) {
    worker->stats.parks.Add();
    // Timed to the nearest deadline, so a timer is served even while every other worker
    // runs long tasks and nobody sleeps in the role. A due one with the role held is the
    // holder's to serve; it wakes us if it publishes a deadline we did not time.
    TaskDeadline until = next_deadline == kNoDeadlineTicks || timer_due
                             ? kNoDeadline
                             : TaskDeadline(TaskClock::duration(next_deadline));
    // While a worker executes, it may have put a post into its local batch just after
    // our look (it decided that nobody was idle just before we became so): look again
    // within kLocalBatchRecheck, so such a task waits at most that long for us.
    const bool untimed = !RecheckWhileOthersExecute(until);
    internal::TraceStep(internal::SchedStep::kPark);
    ready_event_.ReceiveUntil(until);
    internal::TraceStep(internal::SchedStep::kUnpark);
    if (untimed) untimed_sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  // Relaxed: a publisher that still counts us merely sends one spurious signal.
  parked_.fetch_sub(1, std::memory_order_relaxed);
  return sleep;
}

// An idle worker about to sleep until `until` (Park, or the role holder in WaitUntil): if a
// worker executes, shortens the sleep to kLocalBatchRecheck, so that a post it held (a local
// batch, or under PostOrder::kHome a lone task in its queue) waits at most that long for
// us. Returns whether it did; if not, under kHome, the sleeper is registered as untimed and
// must deregister after its sleep. The registration and the second look at executing_ are
// seq_cst, the sleeper's half of the Dekker pair with a worker that starts executing (its
// seq_cst count, then WakeUntimedSleepers wherever a task may be left behind in its queue
// while it runs: at the batch start if its queue holds one, and after each post into it):
// either we see it executing and time our sleep, or it sees us and wakes us (we then sleep
// again, timed). A worker whose queue stays empty strands nothing and wakes nobody.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::RecheckWhileOthersExecute(
    TaskDeadline& until) {
  if (executing_.load(std::memory_order_relaxed) == 0) {
    // Under the other orders a held post needs every worker executing when it is made, so
    // a worker that starts executing later sends its posts on (SomeWorkerMayBeIdle).
    if (!home_queues_) return false;
    untimed_sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (executing_.load(std::memory_order_seq_cst) == 0) return false;
    untimed_sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  until = std::min(until, TaskClock::now() + kLocalBatchRecheck);
  return true;
}

// PostOrder::kHome, a worker counted in executing_ whose queue holds a task that could wait
// behind the one it runs (ExecuteBatch, PostMarked): wakes the workers
// that sleep with no timeout (RecheckWhileOthersExecute), so they sleep again timed. The
// load is seq_cst, after the seq_cst count (the Dekker pair); usually nobody sleeps untimed
// (only when no worker executed), so this is one read of a line that rarely changes.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::WakeUntimedSleepers() {
  if (untimed_sleepers_.load(std::memory_order_seq_cst) == 0) return;
  ready_event_.Send();
  io_.Notify();  // the role holder sleeps in the backend
}

// Spins until `found()` or `duration` passed; returns whether found.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
template <typename Found>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::SpinFor(
    std::chrono::nanoseconds duration, Found found) {
  if (duration <= std::chrono::nanoseconds::zero()) return false;
  const TaskClock::time_point until = TaskClock::now() + duration;
  do {
    for (int i = 0; i < 16; ++i) {
      if (found()) return true;
      CpuRelax();
    }
  } while (TaskClock::now() < until);
  return found();
}

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_INTERNAL_IDLE_H_
