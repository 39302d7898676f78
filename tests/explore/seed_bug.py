#!/usr/bin/env python3
"""Writes a scratch copy of a shipped source file with one seeded bug.

Usage: seed_bug.py BUG INPUT OUTPUT

Each bug below replaces one exact piece of the shipped code (one or a few whole lines) by a
broken version. The copy is what the seeded-bug explore tests compile instead of the
shipped file (tests/explore/BUILD); the shipped file is never edited. The replaced text must
occur exactly once in INPUT, so a seed whose code has changed fails the build instead of
silently testing nothing.
"""

import sys

# BUG name -> (the file it applies to, shipped text, seeded text).
BUGS = {
    # queues/home_ring.h TakeFront: reads the ring pointer before the tail, so a claim can
    # count items pushed into a ring that a growth swapped in after that read, and read their
    # slots from the old ring, which never held them.
    "home_ring_ring_before_tail": (
        "queues/home_ring.h",
        "      const std::uint64_t tail = tail_.load(std::memory_order_acquire);\n"
        "      if (head >= tail) return 0;\n"
        "      // Acquire, and after the tail: the ring current when the slots up to that tail were\n"
        "      // written, or a later one (each holds every unclaimed item as of its swap). Read\n"
        "      // before the tail, it could be a ring swapped out before some of those slots were\n"
        "      // written, and a slot read from it would be one it never held.\n"
        "      const Ring& ring = *ring_.load(std::memory_order_acquire);\n",
        "      const Ring& ring = *ring_.load(std::memory_order_acquire);\n"
        "      const std::uint64_t tail = tail_.load(std::memory_order_acquire);\n"
        "      if (head >= tail) return 0;\n",
    ),
    # queues/home_ring.h Push: publishes the tail relaxed, so a claimer can take an item
    # whose slot (and payload) it is not ordered after.
    "home_ring_tail_relaxed": (
        "queues/home_ring.h",
        "    tail_.store(tail + 1, std::memory_order_release);\n",
        "    tail_.store(tail + 1, std::memory_order_relaxed);\n",
    ),
    # queues/home_ring.h Grow: swaps the ring pointer relaxed, so a claimer that reads the
    # new ring can read a slot before the copy into it.
    "home_ring_grow_relaxed": (
        "queues/home_ring.h",
        "    ring_.store(now, std::memory_order_release);\n",
        "    ring_.store(now, std::memory_order_relaxed);\n",
    ),
    # sync/auto_reset_event.cc: the receiver's re-check consumes the bit with a load and a store
    # instead of one exchange, so two receivers can both take one Send's bit.
    "event_recheck_load_store": (
        "sync/auto_reset_event.cc",
        "    if (flag_.exchange(0, std::memory_order_seq_cst) != 0) {\n",
        "    if (flag_.load(std::memory_order_seq_cst) != 0) {\n"
        "      flag_.store(0, std::memory_order_seq_cst);\n",
    ),
    # sched/task_scheduler.h CountFinished: reads the WaitEmpty waiter count before
    # counting the finished runs (the Dekker pair with WaitEmpty in the wrong order).
    "count_finished_reads_waiters_first": (
        "sched/task_scheduler.h",
        "    counters_.CountFinished(worker->counter, n);\n",
        "    const bool waiter_seen = empty_waiters_.load(std::memory_order_seq_cst) > 0;\n"
        "    counters_.CountFinished(worker->counter, n);\n"
        "    if (!waiter_seen) return;\n",
    ),
    # sched/internal/idle.h AfterFrontPush: a post into an empty front queue does not
    # notify the role holder, which may be asleep in the IO backend.
    "post_without_notify": (
        "sched/internal/idle.h",
        "  // Notify is a flag that the next WaitUntil consumes, so it is never lost.\n"
        "  io_.Notify();\n",
        "  // Notify is a flag that the next WaitUntil consumes, so it is never lost.\n",
    ),
    # sched/internal/sched_role.h Schedule: the expiry path readies a task even when a
    # waker won it first (the waker pushes it into the front queue too).
    "expiry_ignores_lost_race": (
        "sched/internal/sched_role.h",
        "      // Lost the race to a waker: the waker pushes the task into the front queue and the\n"
        "      // front path readies it. Making it ready here too would run it twice.\n"
        "      if (!task->TryWaitingToReady()) continue;\n",
        "      task->TryWaitingToReady();\n",
    ),
    # sched/task.h TryWake: Wakeup as a load and a store instead of one fetch_or, so a
    # wakeup racing the sched-role's PENDING -> WAITING step can be overwritten or lost.
    "wakeup_load_store": (
        "sched/task.h",
        "    const std::uint8_t old = state_.fetch_or(bits, std::memory_order_acq_rel);\n",
        "    const std::uint8_t old = state_.load(std::memory_order_acquire);\n"
        "    state_.store(static_cast<std::uint8_t>(old | bits), std::memory_order_release);\n",
    ),
    # sched/task.h TryPendingToWaiting: the sched-role's PENDING -> WAITING step as a test
    # and a store instead of a CAS, so a wakeup landing in between is overwritten.
    "pending_to_waiting_test_and_store": (
        "sched/task.h",
        "    std::uint8_t expected = 0;\n"
        "    return state_.compare_exchange_strong(expected, kWaiting, std::memory_order_release,\n"
        "                                          std::memory_order_relaxed);\n",
        "    if (state_.load(std::memory_order_relaxed) != 0) return false;\n"
        "    state_.store(kWaiting, std::memory_order_release);\n"
        "    return true;\n",
    ),
    # sched/internal/worker_loop.h WorkerMain: a worker leaves at once when it sees exit_,
    # dropping what it holds: a post its task made into its local batch after Stop's
    # WaitEmpty saw the scheduler empty, and the ready tasks the lone worker claimed.
    # Stop's restart loop then waits for them forever.
    "exit_drops_held_work": (
        "sched/internal/worker_loop.h",
        "    if (exit_.load(std::memory_order_acquire)) {\n"
        "      PublishOwnLocalToFront(worker);\n"
        "      if (!worker->HasClaimed()) break;\n"
        "      ExecuteBatch(worker);\n"
        "      continue;\n"
        "    }\n",
        "    if (exit_.load(std::memory_order_acquire)) break;\n",
    ),
    # sched/internal/home_queues.h TakeHomeLeftovers: Stop takes only the first worker's
    # home queue's leftovers after the workers left, so a post left in another worker's queue across the
    # exit is retired with that worker (PostOrder::kHome).
    "home_drain_first_queue_only": (
        "sched/internal/home_queues.h",
        "  for (const auto& worker : workers_) {\n"
        "    Task* tasks[kTakeCapacity];\n",
        "  for (const auto& worker : workers_) {\n"
        "    if (worker != workers_.front()) break;  // seeded: the first queue only\n"
        "    Task* tasks[kTakeCapacity];\n",
    ),
    # sched/internal/worker_loop.h WorkerMain: on exit_ a worker runs its claimed tasks but
    # does not publish its local batch.
    "exit_drops_local_batch": (
        "sched/internal/worker_loop.h",
        "    if (exit_.load(std::memory_order_acquire)) {\n"
        "      PublishOwnLocalToFront(worker);\n",
        "    if (exit_.load(std::memory_order_acquire)) {\n",
    ),
    # sched/internal/worker_loop.h WorkerMain: a busy worker never takes over another
    # worker's local batch at the end of its execution batches, so a post held by a long
    # task waits for that task while the other workers run on (the bound is gone).
    "busy_worker_skips_take_over": (
        "sched/internal/worker_loop.h",
        "      if (local_batches_ && worker_count_ > 1) TakeOverStaleBatches(worker);\n",
        "",
    ),
    # sched/internal/sched_role.h LazyNow::IsDue: a deadline less than 2 ms away counts as
    # due, so a timer can start up to 2 ms early.
    "deadline_due_early": (
        "sched/internal/sched_role.h",
        "  bool IsDue(TaskDeadline deadline) { return deadline < TaskDeadline{} || deadline <= Get(); }\n",
        "  bool IsDue(TaskDeadline deadline) {\n"
        "    return deadline < TaskDeadline{} || deadline <= Get() + std::chrono::milliseconds(2);\n"
        "  }\n",
    ),
    # sched/task_scheduler.h PostMarked: a post of a task that does not go into the local
    # batch (a deadline, PostDeadlineThroughStop) no longer publishes the task's earlier
    # posts held there first, so it can overtake them (per-poster order).
    "post_skips_held_publish": (
        "sched/task_scheduler.h",
        "      // Any other post of a task goes behind that task's earlier posts still held locally.\n"
        "      if (local_batches_) PublishOwnLocalToFront(worker);\n",
        "",
    ),
    # sched/internal/held_posts.h AppendLocal: a run-now post from a task that finds a
    # worker idle is pushed at once without publishing the worker's held posts first, so it
    # overtakes the earlier posts of the same worker still in its local batch (per-poster
    # order; only when a worker becomes idle between two posts of one execution batch).
    "idle_post_skips_held_publish": (
        "sched/internal/held_posts.h",
        "  if (SomeWorkerMayBeIdle()) {\n"
        "    PublishOwnLocalToFront(worker);\n"
        "    PushFront(task);\n",
        "  if (SomeWorkerMayBeIdle()) {\n"
        "    PushFront(task);\n",
    ),
    # sched/internal/held_posts.h ClaimLocalInPlace: a lone worker claims its local batch to
    # run in place without looking at the front queue, so its held posts start ahead of
    # posts that were waiting there, made before them (only when the ready queue is empty).
    "claim_in_place_ignores_front": (
        "sched/internal/held_posts.h",
        "  if (worker->local.SizeForOwner() > kClaimCapacity || !front_.IsEmpty() || TimerDue()) {\n",
        "  if (worker->local.SizeForOwner() > kClaimCapacity || TimerDue()) {\n",
    ),
    # sched/internal/local_batch.h PublishClaimed: the head moves past the items before
    # they are published (the rule before the fix: take, then push), so a looker that
    # finds the batch empty runs on while a descheduled publisher still holds the items.
    "local_batch_head_before_publish": (
        "sched/internal/local_batch.h",
        "    publish(items, count);\n"
        "    // Release, after the publication: a thread that reads this head (the owner's\n"
        "    // IsEmptyForOwner and IsFull, a looker's LooksEmpty) sees the items published, and the\n"
        "    // owner reuses the slots only after our reads of them.\n"
        "    head_.store(head + count, std::memory_order_release);\n",
        "    head_.store(head + count, std::memory_order_release);\n"
        "    publish(items, count);\n",
    ),
    # sched/internal/local_batch.h PublishAsOwner: the owner publishes without the claim,
    # so it can publish items that a take-over is publishing too, or publish after them
    # items appended later that come out first.
    "local_batch_owner_skips_claim": (
        "sched/internal/local_batch.h",
        "    Claim();\n"
        "    const std::uint32_t count = PublishClaimed(publish);\n"
        "    Release();\n"
        "    return count;\n",
        "    return PublishClaimed(publish);\n",
    ),
    # coro/internal/wait_word.h HandOverOwnReference: Finish marks itself done but reports
    # the coroutine's own reference as not handed over, so it drops it itself instead of
    # leaving it to the attached JoinHandle, and the root frame (the parameters) can be
    # destroyed after the join returned (the defect before the hand-over).
    "join_own_reference_not_handed_over": (
        "coro/internal/wait_word.h",
        "      if (word_.compare_exchange_weak(old, old | kFinishDone | kOwnRefHandedOver,\n"
        "                                      std::memory_order_release, std::memory_order_relaxed)) {\n"
        "        return true;\n",
        "      if (word_.compare_exchange_weak(old, old | kFinishDone,\n"
        "                                      std::memory_order_release, std::memory_order_relaxed)) {\n"
        "        return false;\n",
    ),
    # coro/internal/wait_word.h CloseEpoch: a Waker closes the wait with a relaxed CAS, so
    # what it wrote before waking is not published to the coroutine that sees the wait
    # closed (a weakened memory order).
    "wait_word_close_epoch_relaxed": (
        "coro/internal/wait_word.h",
        "    } while (!word_.compare_exchange_weak(old, Closed(old, reason), std::memory_order_release,\n"
        "                                          std::memory_order_relaxed));\n"
        "    return true;\n",
        "    } while (!word_.compare_exchange_weak(old, Closed(old, reason), std::memory_order_relaxed,\n"
        "                                          std::memory_order_relaxed));\n"
        "    return true;\n",
    ),
    # coro/internal/wait_word.h HandOverOwnReference: the hand-over does not look for
    # kDetached (a blind OR in effect), so a JoinHandle that let go first is handed the
    # coroutine's own reference too, which nobody then drops (a wrong transition).
    "wait_word_hand_over_ignores_detach": (
        "coro/internal/wait_word.h",
        "      if ((old & kDetached) != 0) return false;\n",
        "",
    ),
    # coro/mutex.h HandOff: Unlock hands the lock to the newest waiter instead of the oldest.
    "mutex_hands_to_newest": (
        "coro/mutex.h",
        "    while (internal::WaitNode* node = wait_list_.PopFront()) {\n",
        "    for (internal::WaitNode* node = wait_list_.front(); node != nullptr;\n"
        "         node = wait_list_.front()) {\n"
        "      while (node->next != nullptr) node = node->next;\n"
        "      wait_list_.Remove(node);\n",
    ),
    # coro/channel.h SendLocked: a value handed to a receiver that had just left (deadline,
    # cancellation) is dropped, and the Send still reports kOk.
    "channel_drops_for_leaving_receiver": (
        "coro/channel.h",
        "      parcel.value.emplace(std::move(*receiver->value));\n"
        "      receiver->value.reset();\n"
        "    }\n",
        "      receiver->value.reset();\n"
        "      return true;\n"
        "    }\n",
    ),
}


def main() -> int:
    if len(sys.argv) != 4 or sys.argv[1] not in BUGS:
        print(__doc__ + "\nBUG is one of: " + ", ".join(sorted(BUGS)), file=sys.stderr)
        return 2
    bug, source, target = sys.argv[1:]
    path, shipped, seeded = BUGS[bug]
    if not source.endswith(path):
        print(f"seed_bug: {bug} applies to {path}, not {source}", file=sys.stderr)
        return 1
    with open(source, encoding="utf-8") as f:
        text = f.read()
    count = text.count(shipped)
    if count != 1:
        print(f"seed_bug: {bug}: the shipped text occurs {count} times in {source} "
              f"(expected once; has the code changed?):\n{shipped}", file=sys.stderr)
        return 1
    with open(target, "w", encoding="utf-8") as f:
        f.write(text.replace(shipped, seeded))
    return 0


if __name__ == "__main__":
    sys.exit(main())
