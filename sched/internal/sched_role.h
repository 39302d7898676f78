// The sched-role: what the worker holding the role does (Schedule). It polls the IO
// backend, receives posts from the front queue into the wait or ready queue
// (ReceiveFromFront), moves expired and Stop-woken tasks from the wait queue to the ready
// queue, publishes the nearest deadline, and sleeps in the IO backend when there is nothing
// to do. RoleReadySink is the backend's door into the ready queue during one Schedule call.
// Part of BasicTaskScheduler's definition (sched/task_scheduler.h declares the members);
// only the role holder touches the wait queue and the ready queue's producer side.
// docs/design.md, "The sched-role", explains the design.
//
// Included at the end of sched/task_scheduler.h; it includes that header itself, so that a
// copy of this file included first (tests/explore's seeded bugs) replaces it.
#ifndef FAIRSCHED_SCHED_INTERNAL_SCHED_ROLE_H_
#define FAIRSCHED_SCHED_INTERNAL_SCHED_ROLE_H_

#include "sched/task_scheduler.h"

namespace fairsched {

// The sched-role's "now", read from the steady clock at most once per pass and only when a
// decision needs it. A clock read can cost more than the rest of a pass that receives one
// task (a KVM guest's kvm-clock), and most passes only receive tasks posted to
// run at once, whose deadline (kTaskDeadlineNow, or a post-time stamp, see
// Task::StampPostTime) lies before the clock's epoch: due without looking. Relies on the
// steady clock never reading before its epoch (CLOCK_MONOTONIC counts from boot; checked
// in the constructor).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
class BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::LazyNow {
 public:
  TaskDeadline Get() {
    if (!read_) {
      now_ = TaskClock::now();
      read_ = true;
    }
    return now_;
  }
  bool IsDue(TaskDeadline deadline) { return deadline < TaskDeadline{} || deadline <= Get(); }
  // IsDue, exact at the call: a finite deadline after this pass's reading is checked
  // against a new reading (the pass may receive posts made after its first reading, whose
  // deadline passed before they were made). The reading only moves forward.
  bool IsDueNow(TaskDeadline deadline) {
    if (IsDue(deadline)) return true;
    if (deadline == kNoDeadline) return false;
    now_ = TaskClock::now();
    return deadline <= now_;
  }

 private:
  TaskDeadline now_{};
  bool read_ = false;
};

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
struct BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::ScheduleResult {
  std::size_t ready = 0;        // tasks made ready by this role take
  bool backlog = false;         // the front queue is not empty (batch bound, or a push in flight)
  bool retime_parkers = false;  // a parked worker may sleep past the new nearest deadline
  bool exit = false;            // Stop asked the workers to exit
};

// The IO backend's role-only door into the ready queue (see sched/io_backend.h): lives on
// the role holder's stack for one Schedule call and counts the tasks it made ready. The
// backend hands it on to the IO handlers it calls (io/io_op.h), so their wakes use it too.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
class BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::RoleReadySink final
    : public IoReadySink {
 public:
  explicit RoleReadySink(BasicTaskScheduler* scheduler)
      : IoReadySink(scheduler), scheduler_(scheduler) {}
  RoleReadySink(const RoleReadySink&) = delete;
  RoleReadySink& operator=(const RoleReadySink&) = delete;
  void Wake(Task* task, IoWake how) override {
    const std::uint8_t bits =
        how == IoWake::kSignal ? Task::kWoken | Task::kSignaled : Task::kWoken;
    made_ready_ += scheduler_->WakeFromRole(task, bits);
  }
  std::size_t TakeMadeReady() { return std::exchange(made_ready_, 0); }

 private:
  BasicTaskScheduler* scheduler_;
  std::size_t made_ready_ = 0;
};

// Sched-role: Wake for a waker that holds the role (the IO backend). The same state
// transition as Wake, but a won waiting task sits in the wait queue that we hold, so it
// goes straight to the ready queue instead of through the front queue. Returns 1 if it
// made the task ready (published by the caller's FlushPending).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::size_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::WakeFromRole(
    Task* task, std::uint8_t bits) {
  FAIRSCHED_DCHECK(task->IsOwnedByOrUnposted(this),
                   "an IO backend woke a task posted to another scheduler");
  // Lost (not waiting, or already woken): the bits are remembered and whoever owns the
  // task's hand-off runs it; we must not touch the task again (a Signal may let it delete
  // itself).
  if (!task->TryWake(bits)) return 0;
  // Won: kWaiting is set only by this role, right before the wait-queue push.
  FAIRSCHED_DCHECK(wait_.Contains(task), "a waiting task is missing from the wait queue");
  wait_.Remove(task);
  MakeReady(task, /*expired=*/false);
  return 1;
}

// How many front-queue posts the holder receives in one pass: batch_size. Under
// PostOrder::kHome only as many as keep its own queue (where they go) at batch_size, and at
// least execute_batch_size: a backlog of outside posts waits in the front queue (intrusive,
// nothing to copy) instead of growing the holder's ring, which a flood of outside posts
// otherwise swelled by up to batch_size per execution batch (bench/results/json/
// home_as_default/notes.md: the ring's growth and traffic, and the one-shots the poster
// then had to allocate). Every pass still receives some, so outside posts keep flowing
// beside a long queue of re-posters, in FIFO order, one pass per execution batch.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::size_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::FrontPopLimit(
    const Worker* worker) const {
  if (!home_queues_) return options_.batch_size;
  const std::uint64_t held = worker->home->SizeHint();  // exact: the holder owns its queue
  const std::size_t room =
      held >= options_.batch_size ? 0 : options_.batch_size - static_cast<std::size_t>(held);
  return std::max(room, std::min(options_.execute_batch_size, options_.batch_size));
}

// Runs with the sched-role held.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline auto BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::Schedule(Worker* worker)
    -> ScheduleResult {
  ScheduleResult result;
  role_worker_ = worker;  // MakeReady's queue under PostOrder::kHome
  RoleReadySink io_sink(this);
  // Poll IO without blocking at every role take, so a loaded scheduler (whose holder
  // never sleeps in WaitUntil) does not starve sockets. Not again after WaitUntil, which
  // delivered what it saw.
  bool poll_io = true;
  while (true) {
    if (exit_.load(std::memory_order_acquire)) {
      result.exit = true;
      return result;
    }
    const bool stopping = stopping_.load(std::memory_order_acquire);
    if (poll_io) io_.Poll(io_sink);
    poll_io = true;
    if (stopping) io_.CancelAll(io_sink);  // Stop: end every IO registration
    LazyNow now;
    std::size_t moved = io_sink.TakeMadeReady();
    if (stopping) moved += WakeWaitingForStop(now);
    // Front queue -> wait/ready, one task per Pop (O(1) each, FIFO): at most batch_size
    // per role take. Pop is done with a task before returning it, so a waker may push it
    // into the front queue again as soon as ReceiveFromFront makes it WAITING.
    std::size_t popped = 0;
    for (const std::size_t limit = FrontPopLimit(worker); popped < limit; ++popped) {
      Task* task = front_.Pop();
      if (task == nullptr) break;
      internal::TraceStep(internal::SchedStep::kReceive, task);
      moved += ReceiveFromFront(task, now, stopping);
    }
    // This worker's local batch: straight into the ready queue when the front queue is
    // empty (exact here: we are its consumer), else behind the posts still waiting there
    // (they may be older than the batch).
    if (worker->HasLocal()) {
      if (front_.IsEmpty()) {
        moved += MoveLocalToReady(worker);
      } else {
        PublishOwnLocalToFront(worker);
      }
    }
    // Expired wait queue -> ready.
    for (std::size_t n = 0; n < options_.batch_size; ++n) {
      // Only a finite deadline can have passed: no clock read for an empty wait queue or
      // one holding only PostWait tasks.
      Task* task = wait_.NextDeadline() == kNoDeadline ? nullptr : wait_.PopExpired(now.Get());
      if (task == nullptr) break;
      // Lost the race to a waker: the waker pushes the task into the front queue and the
      // front path readies it. Making it ready here too would run it twice.
      if (!task->TryWaitingToReady()) continue;
      MakeReady(task, /*expired=*/true);
      ++moved;
    }
    if (PublishNearestDeadline(now)) {
      result.retime_parkers = true;
    } else if (wait_.NextDeadline() == kNoDeadline) {
      // A deadline this role take published is gone again (its task was woken or ran out):
      // nobody can sleep past a deadline that no longer exists, so nobody is re-timed. The
      // common case: a socket read's deadline, published while the holder slept in
      // WaitUntil and removed when the readiness woke the read.
      result.retime_parkers = false;
    }
    // IsEmpty is exact here (we are the front queue's consumer): false while tasks wait
    // or a push is in flight (exchanged, not yet linked: Pop cannot take it yet, and its
    // poster, whose Push returned false, sends no notify).
    result.backlog = !front_.IsEmpty();
    if (moved > 0) {
      internal::TraceStep(internal::SchedStep::kFlush);
      ready_.FlushPending();
      result.ready = moved;
      return result;
    }
    // Nothing moved. If tasks are still ready, go and execute them instead: in the ready
    // queue (only this thread produces into it, so an empty answer cannot turn wrong behind
    // our back; Count is exact, it takes the queue's mutex, but only on this idle path), or
    // under PostOrder::kHome in our own queue (exact for its owner), or claimed by this lone
    // worker (under kHome a worker takes the role after every execution batch, also one
    // that ended with claimed tasks left).
    if (worker->HasClaimed() ||
        (home_queues_ ? worker->home->SeemsNonEmpty() : ready_.Count() > 0)) {
      return result;
    }
    if (result.backlog) {
      // Tasks were taken (all went to the wait queue) and more are queued: let the worker
      // loop come back for them. Otherwise Pop found nothing while the queue is not
      // empty: a push is in flight. Never sleep then (nobody would notify us); its
      // poster links the task within a few instructions unless it was preempted, so
      // yield the core to it and look again.
      if (popped > 0) return result;
      YieldThread();
      continue;
    }
    // Nothing to do and nothing ready: sleep, holding the role, until the nearest
    // deadline or a Notify (a post into an empty front queue, Stop). Spin first: work
    // that arrives within the spin window saves the kernel round trip. The spin watches
    // the backend too: IO that completes during it must not wait for it to end (a spin
    // on the front queue alone multiplies a 1-connection echo's round trip).
    if (options_.spin_before_park > std::chrono::nanoseconds::zero()) {
      worker->stats.role_spins.Add();
      if (SpinFor(options_.spin_before_park,
                  [this] { return !front_.IsEmpty() || io_.EventsReady(); })) {
        continue;
      }
    }
    // Like a parking worker (Park): take over the local batches of workers that run on,
    // and while any does, look again within kLocalBatchRecheck.
    // Under PostOrder::kHome: a task of another worker's queue, claimed to run first.
    if (home_queues_) {
      if (ClaimOneFromOthers(worker)) return result;
    } else if (TakeOverLocalBatches(worker)) {
      continue;
    }
    TaskDeadline until = wait_.NextDeadline();
    const bool untimed = !RecheckWhileOthersExecute(until);
    worker->stats.role_sleeps.Add();
    io_.WaitUntil(until, io_sink);
    if (untimed) untimed_sleepers_.fetch_sub(1, std::memory_order_relaxed);
    poll_io = false;
  }
}

// Sched-role: a task taken from the front queue. Returns 1 if it went to the ready queue.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::size_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::ReceiveFromFront(
    Task* task, LazyNow& now, bool stopping) {
  if (task->IsWoken()) {
    // Woken: either pushed here by a waker that won it while it waited (it is still in
    // the wait queue), or posted after a wakeup that landed while it ran (remembered).
    if (wait_.Contains(task)) wait_.Remove(task);
    MakeReady(task, now.IsDue(task->Deadline()));
    return 1;
  }
  FAIRSCHED_DCHECK(!task->IsWaiting(),
                   "a waiting task was posted again (posting a task that is already queued)");
  const TaskDeadline deadline = task->Deadline();
  // Exact (a clock read for a deadline that looks ahead): "a task whose deadline has
  // passed when the sched-role receives it is ready at once, in post order", also while
  // stopping (it then runs as expired, not as woken by Stop).
  if (now.IsDueNow(deadline)) {
    // Due now. The state stays 0: a wakeup racing with this only sets kWoken and pushes
    // nothing, so the task is still in exactly one queue.
    MakeReady(task, true);
    return 1;
  }
  if (stopping && !task->WaitsThroughStop()) {
    MakeReady(task, false);  // Stop wakes every waiting task at once
    return 1;
  }
  internal::TraceStep(internal::SchedStep::kWait, task);
  if (!task->TryPendingToWaiting()) {
    // A waker won between our load and the CAS; it saw no kWaiting, so it pushed nothing.
    MakeReady(task, false);
    return 1;
  }
  // Infinite waits go into the heap too (with key kNoDeadline, which never expires by
  // time), so Stop can find and wake them. The wait queue is sched-role-only state, and
  // wait_index is touched only by it: no race with a waker pushing the task (which writes
  // only `next`).
  wait_.Push(task, deadline);
  return 0;
}

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::MakeReady(Task* task,
                                                                               bool expired) {
  // A plain write of the task's flags (Task::MarkReady): the executor reads them after the
  // ready queue's release/acquire hand-off.
  task->MarkReady(expired);
  internal::TraceStep(internal::SchedStep::kReady, task);
  // Under PostOrder::kHome: into the holder's own queue, published at once (the Dekker
  // pair with Park is the same as for the ready queue: the holder's Unlock comes before its
  // WakeOne).
  if (home_queues_) {
    const std::uint64_t stamp = HomePush(role_worker_, task);
    if (worker_count_ == 1) return;  // nobody else reads them
    // Relaxed, on the holder's own line: read by the others' looks as a bound they check
    // against the queue itself (TakeOneFromOthers, OtherHomesHaveWork), never to find a
    // task through. The count is the queue's tail or, if a taker moved the head between
    // the two reads, a little less, which only makes the spinners' hint say no.
    role_worker_->received_stamp_end.store(stamp + 1, std::memory_order_relaxed);
    role_worker_->received_count_end.store(
        role_worker_->home->ClaimedCount() + role_worker_->home->SizeHint(),
        std::memory_order_relaxed);
    return;
  }
  ready_.PushPending(task);
}

// Sched-role, while stopping: the first role take of each Stop wakes every task in the
// wait queue at once, except the posts made with PostDeadlineThroughStop, which go back
// (in the order they came out: the heap's, so equal deadlines keep post order). Tasks
// posted to wait while the Stop lasts are woken on arrival (ReceiveFromFront), so one
// sweep per Stop is enough, and a task that waits through the Stop is never woken by it.
// Takes the queue apart with PopAny: PopExpired(kNoDeadline) would move a timer wheel's
// clock to the end of time. Returns how many tasks it made ready.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::size_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::WakeWaitingForStop(
    LazyNow& now) {
  // Relaxed: Stop wrote it before its release store of stopping_, which our acquire load
  // read.
  const std::uint64_t generation = stop_generation_.load(std::memory_order_relaxed);
  if (generation == swept_generation_) return 0;
  swept_generation_ = generation;
  std::vector<Task*> kept;  // allocates only when such waits exist, once per Stop
  std::size_t moved = 0;
  while (Task* task = wait_.PopAny()) {
    if (task->WaitsThroughStop()) {
      kept.push_back(task);
      continue;
    }
    // Lost to a waker: it pushes the task into the front queue (see the expiry loop).
    if (!task->TryWaitingToReady()) continue;
    MakeReady(task, now.IsDue(task->Deadline()));
    ++moved;
  }
  for (Task* task : kept) wait_.Push(task, task->Deadline());
  return moved;
}

// Sched-role: lets executing workers see when the next timer is due, so they come back
// to the role in time (ExecuteBatch), and parking workers time their park to it (Park).
// Returns true when a worker may be parked with a later timeout than the new deadline
// (it read an earlier value, or the earlier deadline has passed and it parked without a
// timeout): the caller then wakes one parked worker to re-time its park. seq_cst store:
// with the caller's seq_cst read of parked_ (WakeOne) after it, the publisher's half of a
// Dekker pair with Park (a parker registers, then reads this); written only when it
// changes, at most once per role take.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::PublishNearestDeadline(
    LazyNow& now) {
  const std::int64_t next = wait_.NextDeadline().time_since_epoch().count();
  const std::int64_t old = nearest_deadline_.load(std::memory_order_relaxed);  // ours
  if (old == next) return false;
  nearest_deadline_.store(next, std::memory_order_seq_cst);
  if (next == kNoDeadlineTicks) return false;
  return next < old || old <= now.Get().time_since_epoch().count();
}

// True if the nearest timer is due: a worker that has just finished a task goes to the
// sched-role now (if it is free), so long tasks on every worker do not delay timers by a
// whole batch. Relaxed load: a heuristic that bounds lateness; correctness never depends
// on it. No clock read while no finite deadline waits.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::TimerDue() const {
  const std::int64_t next = nearest_deadline_.load(std::memory_order_relaxed);
  if (next == kNoDeadlineTicks) return false;
  return TaskClock::now().time_since_epoch().count() >= next;
}

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_INTERNAL_SCHED_ROLE_H_
