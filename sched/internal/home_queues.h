// Home queues (PostOrder::kHome, experimental): each worker's own FIFO of ready tasks
// (queues/home_ring.h), the stamps that order them, and the looks that enforce the bound.
// Part of BasicTaskScheduler's definition (sched/task_scheduler.h declares the members).
//
//   - HomePush: a run-now post made by a task (PostMarked), or a task the sched-role makes
//     ready (MakeReady), at the tail of this worker's queue, with the next stamp.
//   - NextHomeTask: what a worker runs next: an old task of another worker's queue when it
//     looks (at the start of each execution batch, and again after each task it took so),
//     else its own head; with its own queue empty, one task of another worker's queue
//     (TakeOneFromOthers; ClaimOneFromOthers for Park and the idle role holder).
//   - TakeHomeLeftovers, RequeueHomeLeftovers: Stop, after the workers' exit, takes what is
//     left in the queues (a worker leaves them there), merged by stamp, and puts it at the
//     head of the fresh worker's queue that runs the rest of the drain, stamps kept.
//
// The bound (tla/spin/home_queues.pml checks it on two workers, with a worker blocked in a
// task and another re-posting for ever, and on three, with an idle worker beside two
// blocked ones, one of which posted a flood): a task X is overtaken by at most
// execute_batch_size + S + (kStampBlock - 1) x (workers - 1) later-posted starts on any one
// worker, whatever that worker runs, where S is the largest skew that worker looks with
// (SkewOf: home_skew, at most home_skew_ceiling). A queue's stamps only grow, so once a
// worker's head is more than S above X's stamp, its next look (within execute_batch_size
// starts) takes X or an older task, and it looks again after each such task until none is
// left; the skew lets at most S later stamps start first, and the blocks the other
// workers reserved before X's can hold at most kStampBlock - 1 more each. An idle worker
// takes at once from a queue that holds two or more tasks or a lone task the sched-role
// made ready (received, woken, due), and a lone run-now post once its owner has not
// claimed anything between two of its looks (1 ms apart while it sleeps, see
// RecheckWhileOthersExecute). Its takes count against the bound like its own tasks: it
// looks at each execution batch's start too, measuring the skew from the newest stamp it
// took since its last look (taken_stamp_max) when its own queue is empty. Without that, an
// idle worker that could not take the role (held by a descheduled worker) ran another
// busy worker's posts one by one, all but the last before X (HomeQueueTest.
// AnIdleWorkersTakesFromABusyQueueKeepTheBound: 999 of 1,000 against a bound of 237).
//
// Included at the end of sched/task_scheduler.h; it includes that header itself.
#ifndef FAIRSCHED_SCHED_INTERNAL_HOME_QUEUES_H_
#define FAIRSCHED_SCHED_INTERNAL_HOME_QUEUES_H_

#include "sched/task_scheduler.h"

namespace fairsched {

// The next stamp of this worker's reserved block, reserving a new block when it is used up.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::uint64_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::NextStamp(
    Worker* worker) {
  if (worker->stamp_next == worker->stamp_end) {
    // Relaxed RMW: the stamps need only one order of reservations, which the clock's
    // modification order gives (an RMW reads the latest value): a block reserved after
    // another, by any thread, has higher stamps. Nothing is published through it.
    worker->stamp_next = order_clock_.fetch_add(kStampBlock, std::memory_order_relaxed);
    worker->stamp_end = worker->stamp_next + kStampBlock;
  }
  return worker->stamp_next++;
}

// Owner (this worker's thread): `task` (made ready: its flags are set) at the tail of its
// queue; returns its stamp. Wakes a parked worker when the queue holds more than the one
// task this worker will run next, so a lone coroutine's Yield stays on its core. Relaxed
// load of parked_, no fence: a parker that registers just after it re-checks within
// kLocalBatchRecheck while any worker executes (tla/spin/home_ring.pml's timed re-check).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::uint64_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::HomePush(
    Worker* worker, Task* task) {
  const std::uint64_t stamp = NextStamp(worker);
  worker->home->Push(task, stamp);
  const std::uint64_t size = worker->home->SizeHint();
  // Into an empty queue: publish its head, so that a worker that posts and then blocks in
  // its task does not hide its posts from the others' looks (PublishHead).
  if (size == 1) worker->published_head.store(stamp, std::memory_order_relaxed);
  if (size > 1 && parked_.load(std::memory_order_relaxed) > 0) ready_event_.Send();
  return stamp;
}

// Owner: publishes its queue's head stamp (kNoHead when empty) for the others' looks, which
// read this one line instead of the queue's ends (written at every push and pop). Called at
// each of its own looks, when it finds its queue empty, and by a push into an empty queue.
// The published stamp is never newer than the real head (the head only moves to newer
// stamps, and an empty queue's next head is published by its push), so a look that skips
// a queue by it skips nothing old. Relaxed: a hint; a stale value is an older one (a
// wasted read of the queue) or, just after a push into an empty queue, kNoHead, which the
// next look (within execute_batch_size starts) reads anew.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::PublishHead(
    Worker* worker) {
  const std::optional<std::uint64_t> head = worker->home->HeadStamp();
  worker->published_head.store(head.value_or(kNoHead), std::memory_order_relaxed);
}

// The skew `worker` looks with: home_skew, or with a ceiling set, its own queue's length
// scaled to stamps (n tasks of one worker span about n x workers stamps while every worker
// posts) and divided by kHomeBacklogDivisor, kept within [home_skew, home_skew_ceiling]:
// a task in another queue is then passed by at most n x workers / 4 of this worker's later
// posts, a fraction of the backlog every task posted into it waits through, and a short
// queue keeps the tight bound. Owner only: its SizeHint is exact for it
// (tests/sched/held_post_test.cc, TheSkewFollowsTheBacklogUpToItsCeiling).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::uint64_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::SkewOf(
    const Worker* worker) const {
  if (options_.home_skew_ceiling == options_.home_skew) return options_.home_skew;
  const std::uint64_t scaled = worker->home->SizeHint() *
                               static_cast<std::uint64_t>(worker_count_) / kHomeBacklogDivisor;
  return std::clamp(scaled, options_.home_skew, options_.home_skew_ceiling);
}

// A worker looks: one task at the head of another worker's queue whose stamp is more than
// its skew (SkewOf) below its own head's, or below the newest stamp it took from the others
// since its last look (its own queue may be empty while it runs theirs), or nullptr. Takes
// one at a time: the caller runs it and looks again, so a long task among the old ones does
// not hold the others (another look, by this or another worker, takes them).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline Task* BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::TakeOldTask(Worker* self) {
  const std::uint64_t own =
      std::max(self->home->HeadStamp().value_or(0), self->taken_stamp_max);
  const std::uint64_t skew = SkewOf(self);
  if (own <= skew) return nullptr;
  const std::uint64_t below = own - skew;
  for (const auto& other : workers_) {
    if (other.get() == self) continue;
    if (other->published_head.load(std::memory_order_relaxed) >= below) continue;
    Task* task = nullptr;
    if (other->home->TakeFront(below, 1, /*half=*/false, &task) == 1) {
      self->stats.stale_take_overs.Add();
      return task;
    }
  }
  return nullptr;
}

// A worker whose own queue is empty: takes one task from the head of another worker's
// queue that holds two or more, or a lone task there that the sched-role made ready (a post
// received from the front queue, a woken or due task: it has no core to stay on), and,
// when `lone_if_stuck`, also a lone task whose owner has claimed nothing since this
// worker's previous such look (it runs a long task, blocks or was descheduled). Returns it,
// or nullptr. The caller runs it before anything else: a task taken and then kept waiting
// would let its poster's later posts, still in the owner's queue, start first (per-poster
// order). One at a time, so that nothing taken can wait behind a long task of the taker's.
// A lone task the owner's own task posted (a Yield's continuation) is taken only when the
// owner is stuck, and `lone_if_stuck` only where looks are far apart (Park, the idle role
// holder: their re-checks come every kLocalBatchRecheck while any worker executes): looks a
// few nanoseconds apart would see a yielding coroutine's owner as stuck and move it from
// core to core.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline Task* BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::TakeOneFromOthers(
    Worker* self, bool lone_if_stuck) {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    Worker* const other = workers_[i].get();
    if (other == self) continue;
    const std::uint64_t size = other->home->SizeHint();
    bool stuck = false;
    if (lone_if_stuck) {
      const std::uint64_t claimed = other->home->ClaimedCount();
      stuck = size == 1 && self->seen_claimed[i] == claimed;
      self->seen_claimed[i] = claimed;
    }
    // Nothing to take (the record above is refreshed all the same): no TakeFront, which
    // would read the owner's head, tail and ring again only to find them equal.
    if (size == 0) continue;
    // A lone task: only one the role made ready, unless its owner is stuck. The take's
    // stamp limit decides, not the size read above: it claims the head only if its stamp
    // is below the end of the owner's received stamps, so an own post never qualifies
    // (stamps grow along a queue; a head below the last received stamp with anything
    // behind it is not lone, and taking a queue's head is allowed then too). Relaxed: a
    // stale end is an older, smaller one, which only leaves a received task for the
    // owner or a later look.
    const std::uint64_t below = size >= 2 || stuck
                                    ? HomeRing<Task>::kAnyStamp
                                    : other->received_stamp_end.load(std::memory_order_relaxed);
    Task* task = nullptr;
    std::uint64_t stamp = 0;
    if (other->home->TakeFront(below, 1, /*half=*/false, &task, &stamp) == 1) {
      self->stats.idle_take_overs.Add();
      self->taken_stamp_max = std::max(self->taken_stamp_max, stamp);
      return task;
    }
  }
  return nullptr;
}

// Park and the idle role holder (PostOrder::kHome): takes one task as TakeOneFromOthers
// does (a lone one too, if its owner is stuck) and claims it, so that the worker runs it
// first when it gets back to ExecuteBatch. Returns whether it took one.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::ClaimOneFromOthers(
    Worker* self) {
  if (self->HasClaimed()) return true;
  Task* const task = TakeOneFromOthers(self, /*lone_if_stuck=*/true);
  if (task == nullptr) return false;
  self->claimed[0] = task;
  self->claimed_head = 0;
  self->claimed_end = 1;
  return true;
}

// What `worker` runs next under PostOrder::kHome (NextReadyTask), or nullptr when it has
// nothing (it then goes to the sched-role, or parks).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline Task* BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::NextHomeTask(
    Worker* worker) {
  if (worker->HasClaimed()) return worker->claimed[worker->claimed_head++ % kClaimCapacity];
  if (worker_count_ == 1) {
    // Alone: nobody else takes from this queue, so take up to kClaimCapacity at once (one
    // CAS for them all) and run them in order.
    Task* batch[kClaimCapacity];
    const int count =
        worker->home->TakeFront(HomeRing<Task>::kAnyStamp, kClaimCapacity, false, batch);
    if (count == 0) return nullptr;
    for (int i = 1; i <= static_cast<int>(kHomePrefetchDistance) && i < count; ++i) {
      Prefetch(batch[i], kHomePrefetchLines);
    }
    for (int i = 1; i < count; ++i) worker->claimed[i - 1] = batch[i];
    worker->claimed_head = 0;
    worker->claimed_end = static_cast<std::uint32_t>(count - 1);
    return batch[0];
  }
  if (worker->look_now) {
    if (Task* old = TakeOldTask(worker)) return old;  // and look again before the next
    worker->look_now = false;
    worker->taken_stamp_max = 0;  // the next look measures from what it takes after this one
    PublishHead(worker);
  }
  if (Task* task = worker->home->Pop()) {
    // Its successors' memory, as NextReadyTask does for the ready queue: with many tasks
    // in flight the task's lines (and a coroutine's frame behind them) are not in the
    // cache, and without this every start waits for main memory.
    if (const Task* ahead = worker->home->PeekAhead(kHomePrefetchDistance - 1)) {
      Prefetch(ahead, kHomePrefetchLines);
    }
    return task;
  }
  worker->published_head.store(kNoHead, std::memory_order_relaxed);  // see PublishHead
  return TakeOneFromOthers(worker, /*lone_if_stuck=*/false);
}

// Stop, on the owner's thread, after joining the workers: takes every task still in a home
// queue (posted across the workers' exit) into home_leftovers_, all queues merged by stamp,
// so that two posts of one task keep their order (its stamps grow), wherever looks and takes
// had moved them. The fresh worker Stop then starts gets them back (RequeueHomeLeftovers).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::TakeHomeLeftovers() {
  for (const auto& worker : workers_) {
    Task* tasks[kTakeCapacity];
    std::uint64_t stamps[kTakeCapacity];
    while (true) {
      const int n = worker->home->TakeFront(HomeRing<Task>::kAnyStamp, kTakeCapacity, false,
                                            tasks, stamps);
      if (n == 0) break;
      for (int i = 0; i < n; ++i) home_leftovers_.emplace_back(stamps[i], tasks[i]);
    }
  }
  std::stable_sort(home_leftovers_.begin(), home_leftovers_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

// StartWorkers, on the owner's thread before the threads start (their start publishes these
// pushes): the home queues' leftovers at the head of `worker`'s queue, with their stamps.
// They keep their place: every post the sched-role receives from now on gets a newer stamp
// and joins behind them. (Sent to the back of the front queue instead, they ran after the
// outside posts that had arrived since, made after them: 64 of 64 in HomeQueueTest.
// APostLeftInAHomeQueueKeepsItsPlaceAtStop, 37 against a bound of 17 in the randomized
// sequences.) Marked as made ready by the role (received_stamp_end), like a received post:
// they have no core to stay on, so an idle worker may take a lone one at once.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::RequeueHomeLeftovers(
    Worker* worker) {
  for (const auto& [stamp, task] : home_leftovers_) worker->home->Push(task, stamp);
  // Relaxed: the thread starts that follow publish them.
  worker->published_head.store(home_leftovers_.front().first, std::memory_order_relaxed);
  worker->received_stamp_end.store(home_leftovers_.back().first + 1, std::memory_order_relaxed);
  worker->received_count_end.store(home_leftovers_.size(), std::memory_order_relaxed);
  home_leftovers_.clear();
}

// Whether a spinning worker sees work in another worker's queue that it would take at
// once (TakeOneFromOthers without a stuck owner): two or more tasks, or a lone one the role
// made ready (its place in the queue, ClaimedCount, is below the owner's count of tasks up
// to its last received one). A hint, but not a loose one: one that stays true while
// TakeOneFromOthers finds nothing would keep the worker spinning instead of parking.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline bool BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::OtherHomesHaveWork(
    const Worker* self) const {
  for (const auto& other : workers_) {
    if (other.get() == self) continue;
    const std::uint64_t size = other->home->SizeHint();
    if (size > 1) return true;
    if (size == 1 && other->home->ClaimedCount() <
                         other->received_count_end.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_INTERNAL_HOME_QUEUES_H_
