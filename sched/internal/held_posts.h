// Held posts: how the scheduler keeps a run-now post made by a task in its worker's local
// batch (the ring is sched/internal/local_batch.h) and how every held post joins the shared
// FIFO within the bound of PostOrder::kBatched. Part of BasicTaskScheduler's definition
// (sched/task_scheduler.h declares the members).
//
//   - AppendLocal: the post, held (or pushed at once when a worker may be idle).
//   - PublishOwnLocalToFront / MoveLocalToReady: the owner publishes its batch, through the
//     front queue or (holding the role) straight into the ready queue.
//   - TakeOverLocalBatches (idle worker) / TakeOverStaleBatches (busy worker): another
//     worker publishes a batch its owner holds too long.
//   - ClaimLocalInPlace: a lone worker runs its own batch without the trip through the role.
// docs/design.md, "The hot path every resume takes", explains the rules and the bound.
//
// Included at the end of sched/task_scheduler.h; it includes that header itself, so that a
// copy of this file included first (tests/explore's seeded bugs) replaces it.
#ifndef FAIRSCHED_SCHED_INTERNAL_HELD_POSTS_H_
#define FAIRSCHED_SCHED_INTERNAL_HELD_POSTS_H_

#include "sched/task_scheduler.h"

namespace fairsched {

// A run-now post by a task running on `worker` (this thread): kept in the local batch.
// The task is hot (its callback is running or just posted it); its flags are set here,
// as the sched-role's MakeReady would set them (a run-now post counts as expired), so
// that publishing it later does not touch it again.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::AppendLocal(Worker* worker,
                                                                                 Task* task) {
  // Another worker is idle and could run it now (parked, or in the role, where it may be
  // sleeping): no batching, the usual push, behind this worker's earlier posts. Relaxed
  // load: a stale answer only delays the post to the next task boundary (the same test
  // again), or until another worker takes the batch over (TakeOverStaleBatches, Park).
  if (SomeWorkerMayBeIdle()) {
    PublishOwnLocalToFront(worker);
    PushFront(task);
    return;
  }
  task->MarkReady(/*expired=*/true);
  if (worker->local.IsFull()) PublishOwnLocalToFront(worker);
  worker->local.Append(task);
}

// Pushes `count` tasks (oldest first) into the front queue as one chain (one exchange).
// Returns the push's `was_empty`, for AfterFrontPush (which a local-batch publication
// calls after it has released the batch: the wake need not hold up the batch's owner).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::PushChain(
    Task** tasks, std::uint32_t count) {
  for (std::uint32_t i = 0; i + 1 < count; ++i) tasks[i]->next = tasks[i + 1];
  return front_.PushChain(tasks[0], tasks[count - 1]);
}

// The owner: publishes its local batch through the front queue, for when it cannot put
// it into the ready queue itself (the role is held elsewhere, the batch is full inside a
// callback, it posts past the batch) or must not (older posts wait in the front queue).
// The sched-role receives the tasks like any post. When it returns, every earlier post
// of this worker's tasks is in the front queue (see LocalBatch's per-owner order), so a
// push the caller makes next lands behind them.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::PublishOwnLocalToFront(
    Worker* worker) {
  bool was_empty = false;
  worker->local.PublishAsOwner(
      [&](Task** tasks, std::uint32_t count) { was_empty = PushChain(tasks, count); });
  AfterFrontPush(was_empty);
}

// Another worker: takes `owner`'s local batch over and publishes it through the front
// queue. An idle worker (`wait` false) gives up when a publication of the batch is under
// way (its publisher pushes and wakes); a busy one enforcing the bound waits for it,
// so that it starts nothing while a publisher that the OS descheduled holds those posts
// (TakeOverStaleBatches). Returns whether it published anything.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::TakeOverLocalBatch(
    Worker* owner, bool wait) {
  bool was_empty = false;
  // Maybe called several times (LocalBatch::PublishUntilEmpty): the first push's answer
  // is the one that can be true.
  const auto publish = [&](Task** tasks, std::uint32_t count) {
    was_empty = PushChain(tasks, count) || was_empty;
  };
  const bool published = wait ? owner->local.TakeOver(publish) : owner->local.TryTakeOver(publish);
  AfterFrontPush(was_empty);
  return published;
}

// Sched-role, on `worker` (the holder), once the front queue is empty: the local batch
// goes straight into the ready queue, behind everything the front queue held. Returns
// how many tasks it made ready (published by the caller's FlushPending).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::size_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::MoveLocalToReady(
    Worker* worker) {
  std::size_t made_ready = 0;
  bool was_empty = false;
  worker->local.PublishAsOwner([&](Task** tasks, std::uint32_t count) {
    // A take-over that published earlier posts of ours pushed them into the front queue
    // before we got the claim (PublishAsOwner waited for it): ours go behind them,
    // through it too. Exact: we are the front queue's consumer, and the taker's push is
    // complete.
    if (!front_.IsEmpty()) {
      was_empty = PushChain(tasks, count);
      return;
    }
    for (std::uint32_t i = 0; i < count; ++i) {
      internal::TraceStep(internal::SchedStep::kReadyLocal, tasks[i]);
    }
    // Pending in the ready queue until the caller's FlushPending: only this thread (the
    // role holder) adds to it, so nothing posted later can get ahead of them meanwhile.
    for (std::uint32_t i = 0; i < count; ++i) ready_.PushPending(tasks[i]);
    made_ready = count;
  });
  AfterFrontPush(was_empty);
  return made_ready;
}

// An idle worker, before it sleeps: takes over the local batches of the other workers
// (tasks posted while every worker was busy, whose owner now runs a task that may be
// long) and publishes them. Returns whether it found any.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::TakeOverLocalBatches(
    Worker* self) {
  bool found = false;
  for (const auto& other : workers_) {
    if (other.get() != self && TakeOverLocalBatch(other.get(), /*wait=*/false)) {
      self->stats.idle_take_overs.Add();
      found = true;
    }
  }
  return found;
}

// A busy worker, at the end of each of its execution batches: takes over every other
// worker's local batch that stayed unpublished while this worker started
// execute_batch_size tasks (its owner is still inside the execution batch it was made
// in: a long task, a blocking wait). This is what bounds the hold when no worker is idle
// (docs/design.md, "Nothing waits behind a long task"). Reads one line of each other worker; takes
// nothing from an owner that publishes on time. A batch counts as held while its head
// stays where it was: the head moves only when a publication has ended, so a batch
// whose publisher was descheduled in the middle of it still counts as held, and the
// take-over then waits for that publisher instead of starting more tasks past its posts.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::TakeOverStaleBatches(
    Worker* self) {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    Worker* const other = workers_[i].get();
    if (other == self) continue;
    typename Worker::SeenBatch& seen = self->seen[i];
    if (other->local.LooksEmpty()) {
      seen.held = false;
      continue;
    }
    const std::uint32_t head = other->local.Head();
    if (!seen.held || seen.head != head) {
      seen = {true, head, self->started};  // a batch we had not seen: its clock starts
      continue;
    }
    if (self->started - seen.started < options_.execute_batch_size) continue;
    if (TakeOverLocalBatch(other, /*wait=*/true)) self->stats.stale_take_overs.Add();
    seen.held = false;
  }
}

// One worker, its claimed tasks and the ready queue empty: its local batch is what the
// sched-role would make ready next when nothing older waits (the front queue is empty,
// no timer is due), so it claims the batch and runs it in place, without the trip through
// the role (a lone coroutine's Yield: post, run). Returns whether it claimed anything.
// The execution batch still ends at execute_batch_size, where the role polls IO and
// timers as after any batch. The front queue is read from outside its consumer: a post
// racing with the read is concurrent with the batch's posts either way.
// At most kClaimCapacity tasks (a larger batch goes through the role).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::ClaimLocalInPlace(
    Worker* worker) {
  // No taker can shrink the batch meanwhile: one worker.
  if (worker->local.SizeForOwner() > kClaimCapacity || !front_.IsEmpty() || TimerDue()) {
    return false;
  }
  // Empty claimed ring (the caller checked): its indexes start again at 0, and the batch
  // (at most kClaimCapacity, checked above) is taken straight into it.
  const std::uint32_t count = worker->local.TakeAlone(worker->claimed);
  for (std::uint32_t i = 0; i < count; ++i) {
    internal::TraceStep(internal::SchedStep::kClaimLocal, worker->claimed[i]);
  }
  worker->claimed_head = 0;
  worker->claimed_end = count;
  return count > 0;
}

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_INTERNAL_HELD_POSTS_H_
