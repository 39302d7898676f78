// The worker loop (WorkerMain) and the execute path: taking ready tasks (NextReadyTask:
// claimed tasks, prefetch), running them (ExecuteBatch, Execute), recycling one-shot tasks
// and counting post-to-start latency. Part of BasicTaskScheduler's definition
// (sched/task_scheduler.h declares the members). docs/design.md, "The sched-role", walks
// through the loop.
//
// Included at the end of sched/task_scheduler.h; it includes that header itself, so that a
// copy of this file included first (tests/explore's seeded bugs) replaces it.
#ifndef FAIRSCHED_SCHED_INTERNAL_WORKER_LOOP_H_
#define FAIRSCHED_SCHED_INTERNAL_WORKER_LOOP_H_

#include "sched/task_scheduler.h"

namespace fairsched {

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::WorkerMain(Worker* worker,
                                                                                std::size_t index) {
  current_ = this;
  current_worker_ = worker;
#if defined(__linux__)
  // "<name>-<index>", cut to the 15 characters Linux keeps; only for debuggers and top.
  const std::string thread_name = (options_.name + "-" + std::to_string(index)).substr(0, 15);
  pthread_setname_np(pthread_self(), thread_name.c_str());
#else
  (void)index;
#endif
  bool woke_from_park = false;
  // Whether the last execution batch ended because the ready queue had nothing for this
  // worker (Pop returned nothing) or a timer was due, rather than at execute_batch_size.
  bool batch_ended_early = true;
  while (true) {
    // Acquire: pairs with Stop's release store; Stop sets it only when empty. But a post
    // allowed while stopping may have raced with Stop's last look and be held here, in
    // the local batch or claimed: leave with nothing held. The local batch goes to the
    // front queue (Stop drains it on a fresh worker), the claimed tasks run first. (Under
    // PostOrder::kHome the home queues stay as they are: once every worker has left, Stop
    // hands them, merged by stamp, to the fresh worker that finishes the drain.)
    if (exit_.load(std::memory_order_acquire)) {
      PublishOwnLocalToFront(worker);
      if (!worker->HasClaimed()) break;
      ExecuteBatch(worker);
      continue;
    }
    // The sched-role only after a batch that ended early, i.e. when this worker ran out of
    // ready tasks (or a timer is due). Posts in the front queue cannot start before the
    // tasks already ready (FIFO), so moving them earlier gains nothing, while moving a
    // batch per few executed tasks lets the ready queue grow without bound under a fast
    // poster, and every task then goes cold between being received and being run.
    // Expired timers go to the ready queue's tail too, so they lose nothing either.
    // (Decided on Pop's answer, not on a peek: a stale peek could keep a worker away
    // from the role forever.)
    // A local batch is published at every batch end: through the role when it is free,
    // else through the front queue.
    // Under PostOrder::kHome a busy worker's own queue never runs dry while its tasks
    // re-post, so it takes the role after every execution batch (as a worker with a local
    // batch does): outside posts, timers and IO must not wait for an idle worker. With
    // several workers not with a task claimed: one taken from another worker's queue runs
    // before anything else (see TakeOneFromOthers). A lone worker's claimed tasks are the
    // head of its own queue, older than anything the role makes ready, so it takes the role
    // with them: its claims of kClaimCapacity and an execution batch that is a multiple of
    // it could otherwise leave one claimed at every batch end, for ever
    // (HomeQueueTest.OutsidePostsKeepFlowingBesideALongQueue: no role take in 25 million
    // runs).
    const bool has_local = worker->HasLocal();
    const bool wants_role = home_queues_ ? worker_count_ == 1 || !worker->HasClaimed()
                                         : batch_ended_early || has_local;
    if (wants_role && role_.TryLock()) {
      worker->stats.sched_role_taken.Add();
      internal::TraceStep(internal::SchedStep::kRoleTake);
      const ScheduleResult result = Schedule(worker);
      internal::TraceStep(internal::SchedStep::kRoleRelease);
      // seq_cst unlock, then seq_cst look at the front queue: the holder's half of the
      // Dekker pair with PushFront (a poster that saw the role held woke nobody).
      role_.Unlock();
      if (result.exit) continue;  // leave at the loop top, with nothing held
      const bool more_to_schedule = result.backlog || !front_.IsEmpty(std::memory_order_seq_cst);
      // Wake a helper when there is more work than this worker can start, or when a
      // parked worker must time its park to a new nearest deadline (see
      // PublishNearestDeadline). Timers alone wake nobody: parked workers time their park.
      if (result.ready > 1 || more_to_schedule || result.retime_parkers) WakeOne(worker);
    } else if (has_local) {
      PublishOwnLocalToFront(worker);
    }
    const std::size_t executed = ExecuteBatch(worker);
    batch_ended_early = executed < options_.execute_batch_size;
    if (executed > 0) {
      woke_from_park = false;
      if (local_batches_ && worker_count_ > 1) TakeOverStaleBatches(worker);
      continue;
    }
    if (!role_.IsLocked()) continue;  // the role is free: go and take it
    if (woke_from_park) worker->stats.idle_wakeups.Add();
    woke_from_park = Park(worker);
  }
  // Pass the exit on: one Send wakes one sleeper, which exits and wakes the next.
  ready_event_.Send();
  io_.Notify();
  current_ = nullptr;
  current_worker_ = nullptr;
}

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline std::size_t BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::ExecuteBatch(
    Worker* worker) {
  std::size_t executed = 0;
  std::uint64_t batch_start = 0;  // PostOrder::kHome: CycleCount at the batch's first start
  // PostOrder::kHome: every execution batch starts with a look at the other queues.
  worker->look_now = home_queues_;
  while (executed < options_.execute_batch_size) {
    Task* task = NextReadyTask(worker);
    if (task == nullptr) break;
    // Relaxed RMW, twice per batch: counts workers inside a batch for SomeWorkerMayBeIdle,
    // a hint that orders nothing. Under PostOrder::kHome it is also half of a Dekker pair
    // (seq_cst, the same locked instruction on x86): a worker that slept untimed because
    // nobody executed (Park, the idle role holder) must hear that one does now if a task
    // may be left behind in its queue while it runs: one already queued behind the task it
    // takes now (so only then here), or one a task of this batch posts into it (PostMarked).
    // A lone task wakes nobody, and neither does one task at a time
    // (ContractTest.OneTaskAtATimeDoesNotWakeIdleWorkersUnderHomeQueues: 80 idle wake-ups
    // for 200 posts when every batch start woke the sleepers).
    if (executed == 0) {
      if (home_queues_) {
        executing_.fetch_add(1, std::memory_order_seq_cst);
        if (worker->home->SeemsNonEmpty()) WakeUntimedSleepers();
        batch_start = CycleCount();
      } else {
        executing_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    // Chain wake (docs/design.md, "Who wakes whom"): if more tasks seem ready than the one we just
    // took, wake one more worker before running ours, so a long task of ours does not
    // leave them waiting. A wrong guess costs one spurious or one missed wakeup, never a
    // lost task: this worker keeps draining until it finds the queue empty.
    if (parked_.load(std::memory_order_relaxed) > 0 && ReadySeemsNonEmpty(worker)) {
      WakeOne(worker);
    }
    if (task->IsStamped()) RecordPostToStart(worker, task);
    Execute(worker, task);
    ++executed;
    // End the batch early to publish the local batch when another worker may be idle (it
    // could run those tasks now) or the ready queue looks empty (the others are about to
    // run out of work), or to serve a due timer when the role is free. Alone, with nothing
    // else to run, the worker runs its local batch in place instead (ClaimLocalInPlace).
    if (worker->HasLocal()) {
      const bool out_of_ready = !worker->HasClaimed() && !ReadySeemsNonEmpty(worker);
      if (SomeWorkerMayBeIdle() ||
          (out_of_ready && !(worker_count_ == 1 && ClaimLocalInPlace(worker)))) {
        break;
      }
    }
    if (TimerDue() && !role_.IsLocked()) break;
    // PostOrder::kHome: past the time budget, back to the role (kHomeBatchBudget). Looked
    // at after the 1st, 4th, 16th... start (the powers of four): four counter reads per
    // batch of 64 short tasks (the x86 counter costs about 10 ns on a virtual machine), and
    // a batch ends after a first task longer than the budget, or within four times the
    // budget if its tasks take about the same time.
    if (home_queues_ && (executed & (executed - 1)) == 0 &&
        (executed & 0x5555'5555'5555'5555u) != 0 &&
        CycleCount() - batch_start >= kHomeBatchBudget && !role_.IsLocked()) {
      break;
    }
  }
  if (executed > 0) {
    executing_.fetch_sub(1, std::memory_order_relaxed);
    worker->started += executed;
    worker->stats.tasks_executed.Add(executed);
    CountFinished(worker, executed);
  }
  return executed;
}

// The next ready task for `worker`. Alone (one worker), it takes up to kClaimCapacity
// ready tasks at once ("claimed", one CAS on the ready queue for them all) and runs them
// in order: nobody else could run them sooner. With several workers it takes one at a
// time: a task this worker held while running a long one could be overtaken by later
// posts that another worker starts (tests/sched/fairness_test.cc).
//
// The tasks behind the one taken are known before they run (claimed, or seen in the
// ready queue), so their memory is prefetched kPrefetchDistance tasks ahead: the task's
// line and the kPrefetchLines - 1 after it. Tasks are often the head of a larger object
// whose next lines the callback uses at once (a spawned coroutine's task, its state and
// the first two lines of its frame, where a loop's counter lives, coro/runtime.h); with
// many tasks in flight those lines are not in the cache, and the miss would otherwise
// stall the start of every task. Three tasks ahead and four lines: a profile of a lone
// worker's yields found the task's own line and its state's still missing at distance 2,
// and the frame's second line never prefetched; the change ran those rows 1.06-1.13x
// (bench/results/json/task_line_prefetch/). Not further: what runs now must stay cached.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline Task* BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::NextReadyTask(
    Worker* worker) {
  if (home_queues_) return NextHomeTask(worker);
  if (worker->HasClaimed()) {
    const std::uint32_t head = worker->claimed_head++;
    if (head + 1 + kPrefetchDistance <= worker->claimed_end) {
      Prefetch(worker->claimed[(head + kPrefetchDistance) % kClaimCapacity]);
    }
    return worker->claimed[head % kClaimCapacity];
  }
  if constexpr (requires { worker->consumer.PopUpTo(static_cast<Task**>(nullptr), 1u); }) {
    if (worker_count_ == 1) {
      Task* batch[kClaimCapacity];
      const std::uint32_t count = worker->consumer.PopUpTo(batch, kClaimCapacity);
      if (count == 0) return nullptr;
      for (std::uint32_t i = 1; i <= kPrefetchDistance && i < count; ++i) Prefetch(batch[i]);
      const std::uint32_t end = worker->claimed_end;
      for (std::uint32_t i = 1; i < count; ++i) {
        worker->claimed[(end + i - 1) % kClaimCapacity] = batch[i];
      }
      worker->claimed_end = end + count - 1;
      return batch[0];
    }
  }
  Task* const task = worker->consumer.Pop();
  if constexpr (requires { worker->consumer.Peek(kPrefetchDistance - 1); }) {
    if (task != nullptr) {
      if (const Task* ahead = worker->consumer.Peek(kPrefetchDistance - 1)) Prefetch(ahead);
    }
  }
  return task;
}

template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::Prefetch(const Task* task,
                                                                              int lines) {
  const char* const line = reinterpret_cast<const char*>(task);
  for (int i = 0; i < lines; ++i) __builtin_prefetch(line + i * kCacheLineSize, 1);
}

// No try/catch and no noexcept on the way from the worker's entry to the callback, on
// purpose: an exception that escapes a callback then finds no handler during the
// unwinder's search phase, and the C++ runtime calls std::terminate from the throw
// itself, before any frame is unwound: the throw site stays on the stack for the core
// dump or debugger. (A catch-and-abort, or a noexcept frame, makes gcc's runtime unwind
// to that frame first.) internal::TaskTerminateHandler prints the message.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::Execute(Worker* worker,
                                                                             Task* task) {
  internal::t_running_task = true;
  task->BeginExecution();
  // Read before the call: any other task may be deleted or re-posted by its callback.
  const bool one_shot = task->IsOneShot();
  worker->running = task;  // for Post: "re-posted from its own callback"
  internal::TraceStep(internal::SchedStep::kStart, task);
  task->Run();             // may delete or re-post the task: do not touch it afterwards...
  internal::TraceStep(internal::SchedStep::kFinish, task);  // the address only
  worker->running = nullptr;
  internal::t_running_task = false;
  if (one_shot) RecycleOneShot(worker, task);  // ...unless the scheduler owns it
}

// A one-shot task whose callback returned: blank it and give it back to the pool (only
// this thread can reach it now: see Task::ResetForPool).
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::RecycleOneShot(Worker* worker,
                                                                                    Task* task) {
  task->ResetForPool();  // destroys the callable and its captures
  pool_.Give(worker->task_cache, task);
}

// Executor, just before a stamped task starts: counts its post-to-start latency. Relaxed
// single-writer counter (see WorkerStats); the stamp was published with the task.
template <typename ReadyQueueT, typename WaitQueueT, typename IoBackendT>
inline void BasicTaskScheduler<ReadyQueueT, WaitQueueT, IoBackendT>::RecordPostToStart(
    Worker* worker, const Task* task) {
  const auto waited =
      std::chrono::duration_cast<std::chrono::nanoseconds>(TaskClock::now() - task->PostTime());
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(waited.count(), 0));
  worker->stats.latency[fairsched::LatencyHistogram::BucketOf(ns)].Add();
}

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_INTERNAL_WORKER_LOOP_H_
