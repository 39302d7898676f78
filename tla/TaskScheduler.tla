---------------------------- MODULE TaskScheduler ----------------------------
(***************************************************************************)
(* BasicTaskScheduler (sched/task_scheduler.h) with the task state machine *)
(* of sched/task.h: the front -> wait/ready -> workers pipeline, the       *)
(* sched-role that any worker may take (RoleLock), deadlines that expire   *)
(* nondeterministically, Wakeup/Signal/Cancel racing with expiry and with  *)
(* execution, and the two wake-up channels: the ready signal to parked     *)
(* workers and the front notify to the role holder sleeping in WaitUntil.  *)
(*                                                                         *)
(* Harness (as in tla/spin/task_scheduler.pml): task Blocker is posted     *)
(* "now" and its callback blocks until task Timer has run, so Timer needs  *)
(* a second worker. Timer is posted with a deadline from                   *)
(* TimerFirstDeadlines; waker 1 Signals it after that post; its first run  *)
(* re-posts it with PostWait; waker 2 Cancels it after the re-post.        *)
(*                                                                         *)
(* Local batches (LocalRepost = TRUE; the Spin model's -DLOCAL_REPOST;     *)
(* "Local batches and claimed tasks" in sched/task_scheduler.h): a run-now *)
(* post made by a task while every worker executes (executing = number of  *)
(* workers, read as its own step before the append, as AppendLocal's       *)
(* SomeWorkerMayBeIdle) goes into its worker's local batch. `executing`    *)
(* counts the workers inside an execution batch (up at the first pop, down *)
(* when the batch ends). At a task boundary a worker with a local batch    *)
(* ends its batch when a worker may be idle or the ready queue looks empty *)
(* (the relaxed look may also miss an idle worker: it may go on while      *)
(* tasks are ready). The batch is published at the top of the worker loop: *)
(* by the role holder straight into the ready queue when the front queue   *)
(* is empty (MoveLocalToReady), else as one chain into the front queue     *)
(* (PublishLocalToFront: notify if it was empty, wake a parked worker if   *)
(* the role is free). An idle worker takes the other workers' batches over *)
(* (TakeOverLocalBatches) before it parks (after the park re-checks) and   *)
(* the role holder before it sleeps in WaitUntil; both sleeps may end      *)
(* whenever a worker executes (kLocalBatchRecheck; BatchRecheck).          *)
(* Harness: the client posts Short (blocks until Timer ran once), Timer    *)
(* (due; its first run re-posts it to run at once) and Blocker (blocks     *)
(* until Timer ran twice), with Batch = 3 and no wakers. The worker that   *)
(* ran Timer may go on with Blocker while its batch holds Timer's re-post: *)
(* only the other worker's take-over moves it. BugNoTakeOver: the take-    *)
(* over does nothing (the seeded bug; Spin's BUG_NO_TAKEOVER).             *)
(*                                                                         *)
(* Stop, drain and restart (StopHarness = TRUE; Stop, WaitEmpty,          *)
(* PostCounters, WakeWaitingForStop in sched/task_scheduler.h and          *)
(* sched/post_counters.h): the owner posts Timer (due; its first run       *)
(* re-posts it with PostWait), calls Stop, then posts Timer again          *)
(* (PostWait) with no worker running and calls Stop again, which starts    *)
(* one worker. Posts are counted per worker slot (a task's post) or        *)
(* in the shared slot (the owner's); CountFinished at the end of each      *)
(* execution batch stores the finished count, then reads empty_waiters_;   *)
(* WaitEmpty registers in empty_waiters_, then checks AllFinished (the     *)
(* finished sum, then the posted sum) under empty_mu_ and waits on         *)
(* empty_cv_. Seeded bugs: BugFinisherReadsWaitersFirst (the finisher's    *)
(* read of empty_waiters_ moved before its finished count: Stop hangs),    *)
(* BugWaitEmptyReadsPostedFirst (AllFinished sums `posted` first: WaitEmpty*)
(* returns while a post made by a finishing task has not run).             *)
(*                                                                         *)
(* Each step that mirrors an atomic operation or a queue call carries a    *)
(* `code:` comment with the function and the text of the line it mirrors  *)
(* (checked by //tools/model_refs:model_refs_test).                        *)
(*                                                                         *)
(* The front and ready queues are atomic FIFOs here (MpscQueue.tla and     *)
(* McspQueue.tla refine them); the role holder's PushPending items stay    *)
(* invisible until FlushPending. Task state bits are sets of names         *)
(* ("waiting", "woken", "signaled", "cancelled"); fetch_or is a union.     *)
(* Action names follow the functions in the code: TryLock, Schedule's      *)
(* steps (SchedulePop, ReceiveFromFront, TryPendingToWaiting, WaitQueuePush,*)
(* SchedLocal/SchedMoveLocal, PopExpired, TryWaitingToReady,               *)
(* FlushPending/ScheduleDecide, WaitUntil), Unlock, WakeOne,               *)
(* ExecuteBatchPop, ChainWake, BeginExecution (the relaxed load) and      *)
(* BeginExchange (the acquire exchange, only when bits were set),          *)
(* Callback, RepostDecide/RepostLocal (AppendLocal), BatchNext (TimerDue), *)
(* AfterBatch, CountFinished/Fin* (CountFinished), ExitUnlock/ExitSend,    *)
(* Park{Spin,Register,Recheck*,Receive,Done}, PubTake/PubAfter/PubWake     *)
(* (PublishLocalToFront), TakeOverNext (TakeOverLocalBatches),             *)
(* Post/PushFront, TryWake.                                                *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Workers,              \* model values, e.g. {w1, w2}
          Batch,                \* batch_size: front pops per role take, e.g. 1
          TimerFirstDeadlines,  \* subset of {"due", "future", "infinite"} (not LocalRepost)
          LocalRepost,          \* BOOLEAN: the local-batch harness (Spin: -DLOCAL_REPOST)
          BatchRecheck,         \* BOOLEAN: with LocalRepost, a park / role sleep may end
                                \*   while a worker executes (kLocalBatchRecheck)
          BugNoTakeOver,        \* BOOLEAN: seeded bug, the take-over publishes nothing
          StopHarness,          \* BOOLEAN: the Stop/drain/restart harness (see below)
          BugFinisherReadsWaitersFirst, \* BOOLEAN: seeded bug (StopHarness): CountFinished
                                \*   reads empty_waiters_ before it stores the finished count
          BugWaitEmptyReadsPostedFirst  \* BOOLEAN: seeded bug (StopHarness): AllFinished
                                \*   reads the posted counts before the finished counts

ASSUME LocalRepost \in BOOLEAN /\ BatchRecheck \in BOOLEAN /\ BugNoTakeOver \in BOOLEAN
ASSUME StopHarness \in BOOLEAN /\ BugFinisherReadsWaitersFirst \in BOOLEAN
ASSUME BugWaitEmptyReadsPostedFirst \in BOOLEAN /\ ~(StopHarness /\ LocalRepost)

Blocker == 0
Timer == 1
Short == 2
NoTask == 3                     \* an executor's or receiver's task slot, empty (LocalRepost)
Tasks == CASE LocalRepost -> {Blocker, Timer, Short}
           [] StopHarness -> {Timer}
           [] OTHER -> {Blocker, Timer}
Wakers == IF LocalRepost \/ StopHarness THEN {} ELSE {1, 2}
                                \* waker i acts once Timer's post i has begun
ClientPosts == CASE LocalRepost -> <<Short, Timer, Blocker>>
                 [] StopHarness -> <<Timer, Timer>>
                 [] OTHER -> <<Blocker, Timer>>
\* StopHarness: the owner calls Stop after these posts (the second Stop finds no workers).
StopAfterPost == IF StopHarness THEN {1, 2} ELSE {}
W1 == CHOOSE w \in Workers : TRUE  \* worker index 0: the one StartWorkers(1) starts
NWorkers == Cardinality(Workers)

VARIABLES
  role, front, ready, pending, frontNotified, readySignal, parked,
  batch, executing,                                               \* local batches
  state, deadline, queued, inWait,
  wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,   \* [Workers -> ...]
  tvisit, took,                                                   \* [Workers -> ...]
  cpc, cnext, cWasEmpty,                                          \* the client
  kpc, kOld, kWasEmpty,                                           \* [Wakers -> ...]
  posted, ran, running,                                           \* ghost
  exit, stopping, stopGen, swept,           \* Stop: exit_, stopping_, stop_generation_,
                                            \*   swept_generation_ (role state)
  cPosted, cPostedShared, cFinished,        \* PostCounters: [Workers -> Nat] slots + shared
  emptyWaiters, emptyMu, cvOwner,           \* WaitEmpty: empty_waiters_, empty_mu_ holder,
                                            \*   the owner waiting in empty_cv_
  oFirst,                                   \* the owner's first sum in AllFinished
  wStop, uncounted, wSawWaiters             \* [Workers -> ...]: the stopping_ a role take
                                            \*   read; callbacks returned, not yet counted;
                                            \*   the waiter count read (BugFinisher...)

vars == <<role, front, ready, pending, frontNotified, readySignal, parked, batch, executing,
          state, deadline, queued, inWait,
          wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty, tvisit, took,
          cpc, cnext, cWasEmpty, kpc, kOld, kWasEmpty, posted, ran, running,
          exit, stopping, stopGen, swept, cPosted, cPostedShared, cFinished, emptyWaiters,
          emptyMu, cvOwner, oFirst, wStop, uncounted, wSawWaiters>>

\* Groups for UNCHANGED.
stopShared == <<exit, stopping, stopGen, swept, cPosted, cPostedShared, cFinished,
                emptyWaiters, emptyMu, cvOwner, oFirst>>
stopWorker == <<wStop, uncounted, wSawWaiters>>

Init ==
  /\ role = FALSE /\ front = <<>> /\ ready = <<>> /\ pending = <<>>
  /\ frontNotified = FALSE /\ readySignal = FALSE /\ parked = 0
  /\ batch = [w \in Workers |-> <<>>] /\ executing = 0
  /\ state = [t \in Tasks |-> {}] /\ deadline = [t \in Tasks |-> "due"]
  /\ queued = [t \in Tasks |-> FALSE] /\ inWait = [t \in Tasks |-> FALSE]
  /\ wpc = [w \in Workers |-> "top"]
  /\ wt = [w \in Workers |-> IF LocalRepost \/ StopHarness THEN NoTask ELSE Blocker]
  /\ moved = [w \in Workers |-> 0] /\ popped = [w \in Workers |-> 0]
  /\ backlog = [w \in Workers |-> FALSE] /\ timers = [w \in Workers |-> FALSE]
  /\ executed = [w \in Workers |-> FALSE] /\ wWasEmpty = [w \in Workers |-> FALSE]
  /\ tvisit = [w \in Workers |-> {}] /\ took = [w \in Workers |-> FALSE]
  /\ cpc = "post" /\ cnext = 1 /\ cWasEmpty = FALSE
  /\ kpc = [k \in Wakers |-> "wait"] /\ kOld = [k \in Wakers |-> {}]
  /\ kWasEmpty = [k \in Wakers |-> FALSE]
  /\ posted = [t \in Tasks |-> 0] /\ ran = [t \in Tasks |-> 0] /\ running = [t \in Tasks |-> 0]
  /\ exit = FALSE /\ stopping = FALSE /\ stopGen = 0 /\ swept = 0
  /\ cPosted = [w \in Workers |-> 0] /\ cPostedShared = 0 /\ cFinished = [w \in Workers |-> 0]
  /\ emptyWaiters = 0 /\ emptyMu = "none" /\ cvOwner = FALSE /\ oFirst = 0
  /\ wStop = [w \in Workers |-> FALSE] /\ uncounted = [w \in Workers |-> 0]
  /\ wSawWaiters = [w \in Workers |-> FALSE]

Set(f, x, v) == [f EXCEPT ![x] = v]
Range(s) == {s[i] : i \in DOMAIN s}

\* With LocalRepost, worker-local values are reset where they die (as the Spin model does):
\* fewer distinct states, the same behaviours. The harness without local batches keeps its
\* values as before (its state space is unchanged).
Dead(f, x, v) == IF LocalRepost \/ StopHarness THEN Set(f, x, v) ELSE f

\* PostCounters::AllFinished's two sums (each read here as one step: an abstraction of the
\* slot-by-slot loads, see the README).
RECURSIVE SumOver(_, _)
SumOver(f, S) == IF S = {} THEN 0 ELSE LET x == CHOOSE x \in S : TRUE
                                      IN f[x] + SumOver(f, S \ {x})
SumPosted == cPostedShared + SumOver(cPosted, Workers)
SumFinished == SumOver(cFinished, Workers)
AllFinishedNow == SumPosted = SumFinished

----------------------------------------------------------------------------
(* Shared pieces. *)

\* front_.Push(t) with the Notify folded in (a flag only the role holder consumes).
FrontPush(t, wasEmptyOut) ==
  /\ wasEmptyOut = (front = <<>>)
  /\ front' = Append(front, t)
  /\ frontNotified' = (frontNotified \/ front = <<>>)

\* MarkQueued + setters + CountPost + PushFront's push, one step (the task is private until
\* pushed; the count is read only through the task's hand-off chain, see post_counters.h).
\* The counters are kept only in the StopHarness (elsewhere nothing reads them).
\* code: sched/task_scheduler.h PostMarked: counters_.CountPost(worker != nullptr ? worker->counter : nullptr);
\* code: sched/task_scheduler.h PushFront: void PushFront(Task* task) { AfterFrontPush(front_.Push(task)); }
PostPushOnly(t, kind) ==
  /\ queued' = Set(queued, t, TRUE)
  /\ deadline' = Set(deadline, t, kind)
  /\ posted' = [posted EXCEPT ![t] = @ + 1]
  /\ front' = Append(front, t)
  /\ frontNotified' = (frontNotified \/ front = <<>>)
PostPush(t, kind) ==           \* a post from outside: the shared slot
  /\ PostPushOnly(t, kind)
  /\ cPostedShared' = IF StopHarness THEN cPostedShared + 1 ELSE cPostedShared
  /\ UNCHANGED cPosted
PostPushFrom(w, t, kind) ==    \* a post by a task running on worker w: w's own slot
  /\ PostPushOnly(t, kind)
  /\ cPosted' = IF StopHarness THEN [cPosted EXCEPT ![w] = @ + 1] ELSE cPosted
  /\ UNCHANGED cPostedShared

\* WakeOne: parked_ > 0 -> ready_signal_.Send().
WakeOneEffect == readySignal' = (readySignal \/ parked > 0)

----------------------------------------------------------------------------
(* The client: Post of each task of ClientPosts in turn (Timer's first deadline from     *)
(* TimerFirstDeadlines, every other post due), each followed by PushFront's checks.      *)

ClientNext ==                  \* on to the next post, Stop (StopHarness), or done
  IF cnext \in StopAfterPost THEN cpc' = "stop_begin" /\ UNCHANGED cnext
  ELSE IF cnext = Len(ClientPosts) THEN cpc' = "done" /\ UNCHANGED cnext
  ELSE cpc' = "post" /\ cnext' = cnext + 1

KeepForClient == UNCHANGED <<role, ready, pending, parked, batch, executing, state, inWait,
                             wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,
                             tvisit, took, kpc, kOld, kWasEmpty, ran, running>>
                 /\ UNCHANGED <<exit, stopping, stopGen, swept, cFinished, emptyWaiters,
                                emptyMu, cvOwner, oFirst>> /\ UNCHANGED stopWorker

\* Timer's first post takes its deadline from TimerFirstDeadlines; the StopHarness's third
\* post (Timer again, after the first Stop) is a PostWait, which only the second Stop wakes.
PostKind(t) == CASE t = Timer /\ ~LocalRepost /\ posted[Timer] = 0 -> TimerFirstDeadlines
                 [] t = Timer /\ StopHarness -> {"infinite"}
                 [] OTHER -> {"due"}

ClientPost ==
  /\ cpc = "post"
  /\ LET t == ClientPosts[cnext] IN
     \E kind \in PostKind(t) : PostPush(t, kind)
  /\ cWasEmpty' = (front = <<>>)
  /\ cpc' = "after"
  /\ UNCHANGED <<readySignal, cnext>> /\ KeepForClient

ClientAfterPush ==             \* was empty and the role is free (seq_cst load): WakeOne next
  /\ cpc = "after"
  /\ IF cWasEmpty /\ ~role THEN cpc' = "wake" /\ UNCHANGED cnext ELSE ClientNext
  /\ cWasEmpty' = (cWasEmpty /\ ~LocalRepost /\ ~StopHarness)   \* dead from here
  /\ UNCHANGED <<front, frontNotified, readySignal, deadline, queued, posted>>
  /\ UNCHANGED <<cPosted, cPostedShared>> /\ KeepForClient

ClientWakeOne ==
  /\ cpc = "wake"
  /\ WakeOneEffect
  /\ ClientNext
  /\ UNCHANGED <<front, frontNotified, deadline, queued, cWasEmpty, posted>>
  /\ UNCHANGED <<cPosted, cPostedShared>> /\ KeepForClient

----------------------------------------------------------------------------
(* StopHarness: the owner's Stop (sched/task_scheduler.h Stop, WaitEmpty). After posting   *)
(* Timer (due) the owner calls Stop while both workers run; Timer's first run               *)
(* re-posts it with PostWait (a post counted in its worker's slot), which only Stop wakes:  *)
(* through the wait-queue sweep (WakeWaitingForStop) or on arrival (ReceiveFromFront while  *)
(* stopping). Stop waits in WaitEmpty until the counters say every post finished, then      *)
(* sets exit_ and joins the workers. Then the owner posts Timer again (PostWait) with no     *)
(* workers running and calls Stop again: it starts one worker (StartWorkers(1): the         *)
(* restart), whose role take sweeps the wait queue for the new stop generation.             *)

AllWorkersOff == \A w \in Workers : wpc[w] = "off"

KeepOwnerRest == UNCHANGED <<role, front, ready, pending, parked, batch, executing,
                             state, deadline, queued, inWait, wt, moved, popped, backlog,
                             timers, executed, wWasEmpty, tvisit, took, cnext, cWasEmpty,
                             kpc, kOld, kWasEmpty, posted, ran, running, swept, cPosted,
                             cPostedShared, cFinished>> /\ UNCHANGED stopWorker

\* An owner step that moves cpc and changes only the variables it names.
OwnerStep(from, to) == cpc = from /\ cpc' = to

\* Stop: nothing to drain and no workers: return; no workers: StartWorkers(1) first.
\* code: sched/task_scheduler.h Stop: if (threads_.empty() && IsEmpty()) return;
\* code: sched/task_scheduler.h Stop: if (threads_.empty()) StartWorkers(1);
StopBegin ==
  /\ cpc = "stop_begin"
  /\ IF AllWorkersOff /\ AllFinishedNow THEN cpc' = "stop_returned" /\ UNCHANGED wpc
     ELSE IF AllWorkersOff THEN cpc' = "stop_set" /\ wpc' = Set(wpc, W1, "top")
     ELSE cpc' = "stop_set" /\ UNCHANGED wpc
  /\ UNCHANGED <<frontNotified, readySignal, exit, stopping, stopGen, emptyWaiters, emptyMu,
                 cvOwner, oFirst>> /\ KeepOwnerRest

\* code: sched/task_scheduler.h Stop: stop_generation_.store(stop_generation_.load(std::memory_order_relaxed) + 1,
\* code: sched/task_scheduler.h Stop: stopping_.store(true, std::memory_order_release);
StopSet ==
  /\ OwnerStep("stop_set", "stop_notify")
  /\ stopGen' = stopGen + 1 /\ stopping' = TRUE
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, emptyWaiters, emptyMu, cvOwner, oFirst>>
  /\ KeepOwnerRest

\* io_.Notify() and ready_signal_.Send(): two flags that stay set until consumed, one step.
\* code: sched/task_scheduler.h Stop: io_.Notify();
\* code: sched/task_scheduler.h Stop: ready_signal_.Send();
StopNotify ==
  /\ OwnerStep("stop_notify", "we_register")
  /\ frontNotified' = TRUE /\ readySignal' = TRUE
  /\ UNCHANGED <<wpc, exit, stopping, stopGen, emptyWaiters, emptyMu, cvOwner, oFirst>>
  /\ KeepOwnerRest

\* WaitEmpty(max): register, lock, check the predicate (AllFinished) under the mutex, wait.
\* code: sched/task_scheduler.h WaitEmpty: empty_waiters_.fetch_add(1, std::memory_order_seq_cst);
WaitEmptyRegister ==
  /\ OwnerStep("we_register", "we_lock")
  /\ emptyWaiters' = emptyWaiters + 1
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, stopping, stopGen, emptyMu, cvOwner,
                 oFirst>> /\ KeepOwnerRest

\* code: sched/task_scheduler.h WaitEmpty: MutexLock lock(empty_mu_);
WaitEmptyLock ==
  /\ OwnerStep("we_lock", "we_read_first")
  /\ emptyMu = "none" /\ emptyMu' = "owner"
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, stopping, stopGen, emptyWaiters,
                 cvOwner, oFirst>> /\ KeepOwnerRest

\* AllFinished: every `finished` first, then every `posted` (BugWaitEmptyReadsPostedFirst:
\* the other way round).
\* code: sched/post_counters.h AllFinished: for (const Slot& slot : slots_) finished += slot.finished.load(std::memory_order_seq_cst);
WaitEmptyReadFirst ==
  /\ OwnerStep("we_read_first", "we_read_second")
  /\ oFirst' = IF BugWaitEmptyReadsPostedFirst THEN SumPosted ELSE SumFinished
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, stopping, stopGen, emptyWaiters,
                 emptyMu, cvOwner>> /\ KeepOwnerRest

\* Equal: empty, return true. Else empty_cv_.wait: release the mutex and block, atomically.
\* code: sched/post_counters.h AllFinished: for (const Slot& slot : slots_) posted += slot.posted.load(std::memory_order_seq_cst);
\* code: sched/task_scheduler.h WaitEmpty: empty_cv_.wait(lock, is_empty);
WaitEmptyReadSecond ==
  /\ cpc = "we_read_second"
  /\ LET second == IF BugWaitEmptyReadsPostedFirst THEN SumFinished ELSE SumPosted IN
     IF second = oFirst
       THEN cpc' = "we_done" /\ UNCHANGED <<emptyMu, cvOwner>>
       ELSE cpc' = "we_woken" /\ emptyMu' = "none" /\ cvOwner' = TRUE
  /\ oFirst' = 0
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, stopping, stopGen, emptyWaiters>>
  /\ KeepOwnerRest

WaitEmptyWoken ==              \* notified: re-acquire the mutex, check again
  /\ OwnerStep("we_woken", "we_read_first")
  /\ ~cvOwner /\ emptyMu = "none" /\ emptyMu' = "owner"
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, stopping, stopGen, emptyWaiters,
                 cvOwner, oFirst>> /\ KeepOwnerRest

\* Unlock, then the relaxed fetch_sub (one step: a finisher that still counts us only
\* takes the mutex and notifies for nothing).
\* code: sched/task_scheduler.h WaitEmpty: empty_waiters_.fetch_sub(1, std::memory_order_relaxed);
WaitEmptyDone ==
  /\ OwnerStep("we_done", "stop_exit")
  /\ emptyMu' = "none" /\ emptyWaiters' = emptyWaiters - 1
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, stopping, stopGen, cvOwner, oFirst>>
  /\ KeepOwnerRest

\* Everything ran: exit_ (release), then Notify and Send to wake the sleepers.
\* code: sched/task_scheduler.h Stop: exit_.store(true, std::memory_order_release);
StopExit ==
  /\ OwnerStep("stop_exit", "stop_join")
  /\ exit' = TRUE /\ frontNotified' = TRUE /\ readySignal' = TRUE
  /\ UNCHANGED <<wpc, stopping, stopGen, emptyWaiters, emptyMu, cvOwner, oFirst>>
  /\ KeepOwnerRest

\* Join every worker, exit_ = false; a post that landed after WaitEmpty returned is drained
\* on a fresh worker (StartWorkers(1), back to WaitEmpty); else stopping_ = false.
\* code: sched/task_scheduler.h Stop: for (Thread& thread : threads_) thread.join();
\* code: sched/task_scheduler.h Stop: exit_.store(false, std::memory_order_relaxed);
\* code: sched/task_scheduler.h Stop: if (IsEmpty()) break;
StopJoin ==
  /\ cpc = "stop_join"
  /\ AllWorkersOff
  /\ exit' = FALSE
  /\ IF AllFinishedNow THEN cpc' = "stop_returned" /\ UNCHANGED wpc
                       ELSE cpc' = "we_register" /\ wpc' = Set(wpc, W1, "top")
  /\ UNCHANGED <<frontNotified, readySignal, stopping, stopGen, emptyWaiters, emptyMu,
                 cvOwner, oFirst>> /\ KeepOwnerRest

\* Stop returns: stopping_ = false (restartable); the owner goes on with its next post.
\* code: sched/task_scheduler.h Stop: stopping_.store(false, std::memory_order_relaxed);
StopReturn ==
  /\ cpc = "stop_returned"
  /\ stopping' = FALSE
  /\ IF cnext = Len(ClientPosts) THEN cpc' = "done" /\ UNCHANGED cnext
                                 ELSE cpc' = "post" /\ cnext' = cnext + 1
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, stopGen, emptyWaiters, emptyMu,
                 cvOwner, oFirst>>
  /\ UNCHANGED <<role, front, ready, pending, parked, batch, executing,
                 state, deadline, queued, inWait, wt, moved, popped, backlog,
                 timers, executed, wWasEmpty, tvisit, took, cWasEmpty,
                 kpc, kOld, kWasEmpty, posted, ran, running, swept, cPosted,
                 cPostedShared, cFinished>> /\ UNCHANGED stopWorker

Owner == StopBegin \/ StopSet \/ StopNotify \/ WaitEmptyRegister \/ WaitEmptyLock
         \/ WaitEmptyReadFirst \/ WaitEmptyReadSecond \/ WaitEmptyWoken \/ WaitEmptyDone
         \/ StopExit \/ StopJoin \/ StopReturn

Client == ClientPost \/ ClientAfterPush \/ ClientWakeOne \/ Owner

----------------------------------------------------------------------------
(* Wakers: Signal (waker 1) and Cancel (waker 2) of Timer: Wake = TryWake + PushFront. *)

WakeBits(k) == IF k = 1 THEN {"woken", "signaled"} ELSE {"woken", "cancelled"}

KeepForWaker == UNCHANGED <<role, ready, pending, parked, batch, executing, deadline, queued,
                            inWait, wpc, wt, moved, popped, backlog, timers, executed,
                            wWasEmpty, tvisit, took, cpc, cnext, cWasEmpty, posted, ran,
                            running>> /\ UNCHANGED stopShared /\ UNCHANGED stopWorker

TryWake(k) ==                  \* state_.fetch_or(bits, acq_rel)
  /\ kpc[k] = "wait"
  /\ posted[Timer] >= k
  /\ kOld' = Set(kOld, k, state[Timer])
  /\ state' = Set(state, Timer, state[Timer] \cup WakeBits(k))
  /\ kpc' = Set(kpc, k, IF state[Timer] \cap {"waiting", "woken"} = {"waiting"}
                        THEN "push" ELSE "done")
  /\ UNCHANGED <<front, frontNotified, readySignal, kWasEmpty>> /\ KeepForWaker

WakerPushFront(k) ==           \* won a waiting task: hand it to the sched-role
  /\ kpc[k] = "push"
  /\ \E e \in BOOLEAN : FrontPush(Timer, e) /\ kWasEmpty' = Set(kWasEmpty, k, e)
  /\ kpc' = Set(kpc, k, "after_push")
  /\ UNCHANGED <<state, readySignal, kOld>> /\ KeepForWaker

WakerAfterPush(k) ==
  /\ kpc[k] = "after_push"
  /\ kpc' = Set(kpc, k, IF kWasEmpty[k] /\ ~role THEN "wake_one" ELSE "done")
  /\ UNCHANGED <<front, frontNotified, readySignal, state, kOld, kWasEmpty>> /\ KeepForWaker

WakerWakeOne(k) ==
  /\ kpc[k] = "wake_one"
  /\ WakeOneEffect
  /\ kpc' = Set(kpc, k, "done")
  /\ UNCHANGED <<front, frontNotified, state, kOld, kWasEmpty>> /\ KeepForWaker

Waker(k) == TryWake(k) \/ WakerPushFront(k) \/ WakerAfterPush(k) \/ WakerWakeOne(k)

----------------------------------------------------------------------------
(* Workers. `Goto(w, l)` moves worker w to label l. *)

Goto(w, l) == wpc' = Set(wpc, w, l)

KeepWorkerLocals(w) == UNCHANGED <<wt, moved, popped, backlog, timers, executed, wWasEmpty,
                                   tvisit, took>>
KeepClientWakers == UNCHANGED <<cpc, cnext, cWasEmpty, kpc, kOld, kWasEmpty>>
KeepOthers == KeepClientWakers /\ UNCHANGED stopShared /\ UNCHANGED stopWorker
KeepTasks == UNCHANGED <<state, deadline, queued, inWait, posted, ran, running>>
KeepLocal == UNCHANGED <<batch, executing>>
KeepQueues == UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role>>
              /\ KeepLocal

\* Worker-local step that only reads shared state and jumps.
Jump(w, from, to) ==
  /\ wpc[w] = from /\ Goto(w, to)
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* The loop top: exit_ set (StopHarness): leave. Else TryLock; failing it with a local batch
\* (the role is held elsewhere): PublishLocalToFront. (The exit load and the TryLock are one
\* step here: exit_ only goes from false to true while workers run.)
\* code: sched/task_scheduler.h WorkerMain: if (exit_.load(std::memory_order_acquire)) break;
\* code: sched/task_scheduler.h WorkerMain: if ((batch_ended_early || has_local) && role_.TryLock()) {
TryLock(w) ==
  /\ wpc[w] = "top"
  /\ IF exit THEN Goto(w, "exit_send") /\ UNCHANGED role
     ELSE IF ~role THEN role' = TRUE /\ Goto(w, "sched_start")
     ELSE /\ UNCHANGED role
          /\ Goto(w, IF LocalRepost /\ batch[w] # <<>> THEN "own_pub" ELSE "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* The top of Schedule's loop: exit_ set: leave (Unlock, then out of the worker loop). Else
\* read stopping_; the first role take of a Stop generation sweeps the wait queue
\* (WakeWaitingForStop: PopAny, then the kWaiting -> kWaiting|kWoken CAS, which a waker may
\* have beaten; the wait queue is role-only state, so pop and CAS are one step here).
\* code: sched/task_scheduler.h Schedule: if (exit_.load(std::memory_order_acquire)) {
\* code: sched/task_scheduler.h Schedule: const bool stopping = stopping_.load(std::memory_order_acquire);
\* code: sched/task_scheduler.h WakeWaitingForStop: if (generation == swept_generation_) return 0;
\* code: sched/task_scheduler.h WakeWaitingForStop: while (Task* task = wait_.PopAny()) {
\* code: sched/task_scheduler.h WakeWaitingForStop: if (!task->TryWaitingToReady()) continue;
SweepWins == inWait[Timer] /\ state[Timer] = {"waiting"}
ScheduleStart(w) ==
  /\ wpc[w] = "sched_start"
  /\ popped' = Set(popped, w, 0)
  /\ IF exit
       THEN /\ Goto(w, "exit_unlock") /\ moved' = Set(moved, w, 0)
            /\ UNCHANGED <<wStop, swept, pending, state, inWait>>
       ELSE /\ Goto(w, "sched_pop")
            /\ wStop' = Set(wStop, w, stopping)
            /\ IF stopping /\ stopGen # swept
                 THEN /\ swept' = stopGen
                      /\ inWait' = Set(inWait, Timer, FALSE)
                      /\ IF SweepWins
                           THEN /\ state' = Set(state, Timer, {"waiting", "woken"})
                                /\ pending' = Append(pending, Timer)
                                /\ moved' = Set(moved, w, 1)
                           ELSE /\ UNCHANGED <<state, pending>>
                                /\ moved' = Set(moved, w, 0)
                 ELSE /\ UNCHANGED <<swept, pending, state, inWait>>
                      /\ moved' = Set(moved, w, 0)
  /\ UNCHANGED <<wt, backlog, timers, executed, wWasEmpty, tvisit, took>> /\ KeepClientWakers
  /\ UNCHANGED <<exit, stopping, stopGen, cPosted, cPostedShared, cFinished, emptyWaiters,
                 emptyMu, cvOwner, oFirst, uncounted, wSawWaiters>>
  /\ UNCHANGED <<deadline, queued, posted, ran, running>>
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal

\* code: sched/task_scheduler.h Schedule: Task* task = front_.Pop();
SchedulePop(w) ==              \* front_.Pop(), at most Batch per round
  /\ wpc[w] = "sched_pop"
  /\ IF popped[w] < Batch /\ front # <<>>
       THEN /\ wt' = Set(wt, w, Head(front)) /\ front' = Tail(front)
            /\ popped' = [popped EXCEPT ![w] = @ + 1]
            /\ Goto(w, "receive")
       ELSE /\ UNCHANGED <<wt, front, popped>>
            /\ Goto(w, IF LocalRepost THEN "sched_local" ELSE "pop_expired")
  /\ UNCHANGED <<ready, pending, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<moved, backlog, timers, executed, wWasEmpty, tvisit, took>> /\ KeepOthers
  /\ KeepTasks

\* code: sched/task_scheduler.h MakeReady: ready_.PushPending(task);
MakeReady(w, t) ==             \* ready_.PushPending(t)
  /\ pending' = Append(pending, t)
  /\ moved' = [moved EXCEPT ![w] = @ + 1]

\* Woken, due, stopping (the StopHarness: Stop wakes a wait on arrival), or on to the
\* kWaiting CAS.
\* code: sched/task_scheduler.h ReceiveFromFront: if (task->IsWoken()) {
\* code: sched/task_scheduler.h ReceiveFromFront: if (wait_.Contains(task)) wait_.Remove(task);
\* code: sched/task_scheduler.h ReceiveFromFront: if (stopping && !task->WaitsThroughStop()) {
ReceiveFromFront(w) ==
  /\ wpc[w] = "receive"
  /\ LET t == wt[w] IN
     \/ /\ "woken" \in state[t]                         \* IsWoken: remove from wait, ready
        /\ inWait' = Set(inWait, t, FALSE) /\ MakeReady(w, t) /\ Goto(w, "sched_pop")
        /\ wt' = Dead(wt, w, NoTask)
     \/ /\ "woken" \notin state[t] /\ deadline[t] \in {"due", "future"}   \* deadline <= now
        /\ MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED inWait
        /\ wt' = Dead(wt, w, NoTask)
     \/ /\ "woken" \notin state[t] /\ deadline[t] # "due" /\ wStop[w]
        /\ MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED inWait
        /\ wt' = Dead(wt, w, NoTask)
     \/ /\ "woken" \notin state[t] /\ deadline[t] # "due" /\ ~wStop[w]
        /\ Goto(w, "try_pending_to_waiting") /\ UNCHANGED <<inWait, pending, moved, wt>>
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ UNCHANGED <<state, deadline, queued, posted, ran, running>>

\* code: sched/task.h TryPendingToWaiting: return state_.compare_exchange_strong(expected, kWaiting, std::memory_order_release,
TryPendingToWaiting(w) ==      \* CAS 0 -> kWaiting (release)
  /\ wpc[w] = "try_pending_to_waiting"
  /\ LET t == wt[w] IN
     IF state[t] = {}
       THEN state' = Set(state, t, {"waiting"}) /\ Goto(w, "wait_queue_push")
            /\ UNCHANGED <<pending, moved>>
       ELSE MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED state   \* a waker won
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ UNCHANGED <<deadline, queued, inWait, posted, ran, running>>

\* code: sched/task_scheduler.h ReceiveFromFront: wait_.Push(task, deadline);
WaitQueuePush(w) ==
  /\ wpc[w] = "wait_queue_push"
  /\ inWait' = Set(inWait, wt[w], TRUE)
  /\ Goto(w, "sched_pop")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues
  /\ UNCHANGED <<state, deadline, queued, posted, ran, running>>

\* The holder's own local batch (HasLocal): straight into the ready queue behind an empty
\* front queue (IsEmpty is exact for its consumer), else through the front queue.
SchedLocal(w) == Jump(w, "sched_local", IF batch[w] = <<>> THEN "pop_expired"
                                        ELSE IF front = <<>> THEN "sched_move_local"
                                        ELSE "sched_pub")

\* code: sched/task_scheduler.h MoveLocalToReady: const std::uint32_t count = TakeLocalBatch(worker, batch);
\* code: sched/task_scheduler.h MoveLocalToReady: for (std::uint32_t i = 0; i < count; ++i) ready_.PushPending(batch[i]);
SchedMoveLocal(w) ==           \* MoveLocalToReady: TakeLocalBatch, PushPending each
  /\ wpc[w] = "sched_move_local"
  /\ pending' = pending \o batch[w]
  /\ moved' = [moved EXCEPT ![w] = @ + Len(batch[w])]
  /\ batch' = Set(batch, w, <<>>)
  /\ Goto(w, "pop_expired")
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role, executing>>
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h Schedule: wait_.NextDeadline() == kNoDeadline ? nullptr : wait_.PopExpired(now.Get());
PopExpired(w) ==               \* a finite deadline may have passed: take it out
  /\ wpc[w] = "pop_expired"
  /\ \/ /\ inWait[Timer] /\ deadline[Timer] = "future"
        /\ inWait' = Set(inWait, Timer, FALSE) /\ Goto(w, "try_waiting_to_ready")
     \/ /\ Goto(w, "decide") /\ UNCHANGED inWait
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues
  /\ UNCHANGED <<state, deadline, queued, posted, ran, running>>

\* code: sched/task_scheduler.h Schedule: if (!task->TryWaitingToReady()) continue;
\* code: sched/task.h TryWaitingToReady: return state_.compare_exchange_strong(expected, kWaiting | kWoken, std::memory_order_relaxed,
TryWaitingToReady(w) ==        \* CAS kWaiting -> kWaiting|kWoken; on failure a waker pushes it
  /\ wpc[w] = "try_waiting_to_ready"
  /\ IF state[Timer] = {"waiting"}
       THEN state' = Set(state, Timer, {"waiting", "woken"}) /\ MakeReady(w, Timer)
       ELSE UNCHANGED <<state, pending, moved>>
  /\ Goto(w, "decide")
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ UNCHANGED <<deadline, queued, inWait, posted, ran, running>>

\* Going to sleep (Park after its re-checks: p = "park"; the role holder before WaitUntil:
\* p = "role"). With local batches, TakeOverLocalBatches first (BugNoTakeOver: nothing).
EnterSleep(w, p) ==
  IF LocalRepost
    THEN /\ tvisit' = Set(tvisit, w, IF BugNoTakeOver THEN {} ELSE Workers \ {w})
         /\ Goto(w, p \o "_to_next")
    ELSE /\ UNCHANGED tvisit
         /\ Goto(w, IF p = "park" THEN "park_receive" ELSE "wait_until")

\* code: sched/task_scheduler.h Schedule: result.backlog = !front_.IsEmpty();
\* code: sched/task_scheduler.h Schedule: ready_.FlushPending();
ScheduleDecide(w) ==           \* backlog/timers; FlushPending and leave, or go on, or sleep
  /\ wpc[w] = "decide"
  /\ backlog' = Set(backlog, w, front # <<>>)
  /\ timers' = Set(timers, w, inWait[Timer])
  /\ IF moved[w] > 0
       THEN /\ ready' = ready \o pending /\ pending' = <<>> /\ Goto(w, "unlock")
            /\ UNCHANGED tvisit
       ELSE /\ UNCHANGED <<ready, pending>>
            /\ IF ready # <<>> THEN Goto(w, "unlock") /\ UNCHANGED tvisit   \* Count() > 0
               ELSE IF front # <<>> /\ popped[w] > 0 THEN Goto(w, "unlock") /\ UNCHANGED tvisit
               ELSE IF front # <<>> THEN Goto(w, "sched_start") /\ UNCHANGED tvisit
                                                                   \* push in flight
               ELSE EnterSleep(w, "role")
  /\ UNCHANGED <<front, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<wt, moved, popped, executed, wWasEmpty, took>> /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h Schedule: io_.WaitUntil(until, io_sink);
WaitUntil(w) ==                \* io_.WaitUntil(next deadline): a notify, or the deadline
  /\ wpc[w] = "wait_until"
  /\ \/ frontNotified /\ frontNotified' = FALSE
     \/ inWait[Timer] /\ deadline[Timer] = "future" /\ UNCHANGED frontNotified
     \/ LocalRepost /\ BatchRecheck /\ executing > 0 /\ UNCHANGED frontNotified
                                                     \* kLocalBatchRecheck
  /\ Goto(w, "sched_start")
  /\ UNCHANGED <<front, ready, pending, readySignal, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h WorkerMain: role_.Unlock();
Unlock(w) ==                   \* role_.Unlock() (seq_cst)
  /\ wpc[w] = "unlock"
  /\ role' = FALSE
  /\ Goto(w, "release_check")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h WorkerMain: const bool more_to_schedule = result.backlog || !front_.IsEmpty(std::memory_order_seq_cst);
ReleaseCheck(w) ==             \* more_to_schedule = backlog || !front_.IsEmpty(seq_cst)
  /\ wpc[w] = "release_check"
  /\ LET more == backlog[w] \/ front # <<>>
     IN Goto(w, IF moved[w] > 1 \/ more \/ (moved[w] > 0 /\ timers[w]) THEN "wake_one"
                ELSE "exec")
  /\ moved' = Dead(moved, w, 0) /\ popped' = Dead(popped, w, 0)
  /\ backlog' = Dead(backlog, w, FALSE) /\ timers' = Dead(timers, w, FALSE)
  /\ UNCHANGED <<wt, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* code: sched/task_scheduler.h WakeOne: if (parked_.load(std::memory_order_seq_cst) == 0) return;
\* code: sched/task_scheduler.h WakeOne: ready_signal_.Send();
WakeOne(w) ==
  /\ wpc[w] = "wake_one"
  /\ WakeOneEffect
  /\ Goto(w, "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* consumer.Pop(); the first task of an execution batch counts the worker in `executing`
\* (`executed` is still FALSE then: BatchNext sets it after the task).
\* code: sched/task_scheduler.h NextReadyTask: Task* const task = worker->consumer.Pop();
\* code: sched/task_scheduler.h ExecuteBatch: if (executed == 0) executing_.fetch_add(1, std::memory_order_relaxed);
ExecuteBatchPop(w) ==
  /\ wpc[w] = "exec"
  /\ IF ready # <<>>
       THEN /\ wt' = Set(wt, w, Head(ready)) /\ ready' = Tail(ready) /\ Goto(w, "chain_wake")
            /\ executing' = IF executed[w] THEN executing ELSE executing + 1
       ELSE UNCHANGED <<wt, ready, executing>> /\ Goto(w, "after_batch")
  /\ UNCHANGED <<front, pending, frontNotified, readySignal, parked, role, batch>>
  /\ UNCHANGED <<moved, popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h ExecuteBatch: if (parked_.load(std::memory_order_relaxed) > 0 && ReadySeemsNonEmpty(worker)) {
ChainWake(w) ==                \* parked workers and more seem ready: WakeOne
  /\ wpc[w] = "chain_wake"
  /\ readySignal' = (readySignal \/ (parked > 0 /\ ready # <<>>))
  /\ Goto(w, "begin_execution")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* Task::BeginExecution: a relaxed load of the state; only if bits are set, the acquire
\* exchange(0) takes them (a waker whose fetch_or comes after the load leaves its bits for
\* the next post, which then runs at once). Then queued_ = 0 and the callback starts.
\* code: sched/task.h BeginExecution: std::uint8_t old = state_.load(std::memory_order_relaxed);
\* code: sched/task.h BeginExecution: queued_.store(0, std::memory_order_relaxed);
StartCallback(w, t) ==
  /\ queued' = Set(queued, t, FALSE)
  /\ ran' = [ran EXCEPT ![t] = @ + 1]
  /\ running' = [running EXCEPT ![t] = @ + 1]
  /\ Goto(w, "callback")
BeginExecution(w) ==
  /\ wpc[w] = "begin_execution"
  /\ LET t == wt[w] IN
     IF state[t] = {}
       THEN StartCallback(w, t)
       ELSE Goto(w, "begin_exchange") /\ UNCHANGED <<queued, ran, running>>
  /\ UNCHANGED <<state, deadline, inWait, posted>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues

\* code: sched/task.h BeginExecution: if (old != 0) old = state_.exchange(0, std::memory_order_acquire);
BeginExchange(w) ==
  /\ wpc[w] = "begin_exchange"
  /\ LET t == wt[w] IN
     /\ state' = Set(state, t, {})
     /\ StartCallback(w, t)
  /\ UNCHANGED <<deadline, inWait, posted>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues

\* Blocker waits for Timer (once; twice with LocalRepost), Short for Timer's first run.
\* Timer's first run re-posts it: PostWait, or (LocalRepost) to run at once.
CallbackMayReturn(t) ==
  IF LocalRepost THEN /\ t = Blocker => ran[Timer] >= 2
                      /\ t = Short => ran[Timer] >= 1
                 ELSE t = Blocker => ran[Timer] >= 1

\* The callback returns (StopHarness: one more execution for the batch end's CountFinished).
Callback(w) ==
  /\ wpc[w] = "callback"
  /\ LET t == wt[w] IN
     /\ CallbackMayReturn(t)
     /\ running' = [running EXCEPT ![t] = @ - 1]
     /\ IF t = Timer /\ ran[Timer] = 1 /\ ~LocalRepost
          THEN /\ PostPushFrom(w, Timer, "infinite")              \* PostWait from inside
               /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
               /\ Goto(w, "repost_after_push")
          ELSE /\ UNCHANGED <<queued, deadline, posted, front, frontNotified, wWasEmpty>>
               /\ UNCHANGED <<cPosted, cPostedShared>>
               /\ Goto(w, IF t = Timer /\ ran[Timer] = 1 THEN "repost_decide"
                          ELSE "batch_next")
  /\ uncounted' = IF StopHarness THEN [uncounted EXCEPT ![w] = @ + 1] ELSE uncounted
  /\ UNCHANGED <<ready, pending, readySignal, parked, role, state, inWait, ran>> /\ KeepLocal
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, tvisit, took>>
  /\ KeepClientWakers /\ UNCHANGED <<exit, stopping, stopGen, swept, cFinished, emptyWaiters,
                                      emptyMu, cvOwner, oFirst, wStop, wSawWaiters>>

\* A run-now post from inside a task (PostMarked -> AppendLocal): SomeWorkerMayBeIdle is
\* read first; no worker idle: into the local batch, else PushFront.
RepostDecide(w) == Jump(w, "repost_decide", IF executing = NWorkers THEN "repost_local"
                                            ELSE "repost_front")

\* code: sched/task_scheduler.h AppendLocal: if (SomeWorkerMayBeIdle()) {
\* code: sched/task_scheduler.h AppendLocal: worker->local_tail.store(end + 1, std::memory_order_release);
RepostLocal(w) ==              \* MarkQueued + setters + the append (local_tail store)
  /\ wpc[w] = "repost_local"
  /\ queued' = Set(queued, Timer, TRUE)
  /\ deadline' = Set(deadline, Timer, "due")
  /\ posted' = [posted EXCEPT ![Timer] = @ + 1]
  /\ batch' = [batch EXCEPT ![w] = Append(@, Timer)]
  /\ Goto(w, "batch_next")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role, executing>>
  /\ UNCHANGED <<state, inWait, ran, running>> /\ KeepWorkerLocals(w) /\ KeepOthers

RepostFront(w) ==              \* a worker may be idle: the usual Post (PushFront)
  /\ wpc[w] = "repost_front"
  /\ PostPushFrom(w, Timer, "due")
  /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
  /\ Goto(w, "repost_after_push")
  /\ UNCHANGED <<ready, pending, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<state, inWait, ran, running>> /\ KeepClientWakers
  /\ UNCHANGED <<exit, stopping, stopGen, swept, cFinished, emptyWaiters, emptyMu, cvOwner,
                 oFirst>> /\ UNCHANGED stopWorker
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, tvisit, took>>

RepostAfterPush(w) ==
  /\ wpc[w] = "repost_after_push"
  /\ Goto(w, IF wWasEmpty[w] /\ ~role THEN "repost_wake_one" ELSE "batch_next")
  /\ wWasEmpty' = Dead(wWasEmpty, w, FALSE)
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, tvisit, took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

RepostWakeOne(w) ==
  /\ wpc[w] = "repost_wake_one"
  /\ WakeOneEffect
  /\ Goto(w, "batch_next")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* The task boundary (ExecuteBatch after Execute). A local batch (LocalRepost) ends the
\* batch when a worker may be idle or the ready queue looks empty; the relaxed look at
\* `executing` may miss an idle worker (go on while tasks are ready). TimerDue with the role
\* free ends it too: with LocalRepost whenever Timer waits for a future deadline (the
\* harness's choice), without it (the harness with wakers) whenever that deadline may
\* have passed, i.e. either way.
\* code: sched/task_scheduler.h ExecuteBatch: (SomeWorkerMayBeIdle() || (!worker->HasClaimed() && !ReadySeemsNonEmpty(worker)))) {
\* code: sched/task_scheduler.h ExecuteBatch: if (TimerDue() && !role_.IsLocked()) break;
BatchNext(w) ==
  /\ wpc[w] = "batch_next"
  /\ executed' = Set(executed, w, TRUE)
  /\ wt' = Dead(wt, w, NoTask)
  /\ IF LocalRepost
       THEN LET loc == batch[w] # <<>>
                idle == executing < NWorkers
                endIt == (loc /\ (idle \/ ready = <<>>))
                         \/ (~role /\ inWait[Timer] /\ deadline[Timer] = "future")
                missIdle == loc /\ idle /\ ready # <<>>
            IN \/ endIt /\ Goto(w, "after_batch")
               \/ (missIdle \/ ~endIt) /\ Goto(w, "exec")
       ELSE \/ ~role /\ inWait[Timer] /\ deadline[Timer] = "future" /\ Goto(w, "after_batch")
            \/ Goto(w, "exec")
  /\ UNCHANGED <<moved, popped, backlog, timers, wWasEmpty, tvisit, took>> /\ KeepOthers
  /\ KeepTasks /\ KeepQueues

\* The batch ends (executing_.fetch_sub if it ran anything; StopHarness: then
\* CountFinished). Executed something: loop; role free: take it; a local batch (not
\* reachable: only a task appends): publish it at the top; else park.
\* code: sched/task_scheduler.h ExecuteBatch: executing_.fetch_sub(1, std::memory_order_relaxed);
\* code: sched/task_scheduler.h WorkerMain: if (!role_.IsLocked()) continue;  // the role is free: go and take it
AfterBatch(w) ==
  /\ wpc[w] = "after_batch"
  /\ executed' = Set(executed, w, FALSE)
  /\ executing' = IF executed[w] THEN executing - 1 ELSE executing
  /\ Goto(w, IF StopHarness /\ executed[w]
               THEN (IF BugFinisherReadsWaitersFirst THEN "fin_waiters_first"
                                                     ELSE "count_finished")
             ELSE IF executed[w] \/ ~role \/ batch[w] # <<>> THEN "top" ELSE "park_spin")
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, wWasEmpty, tvisit, took>> /\ KeepOthers
  /\ KeepTasks /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED batch

----------------------------------------------------------------------------
(* CountFinished (StopHarness): the finisher's half of the Dekker pair with WaitEmpty:    *)
(* store the finished count (seq_cst), then read empty_waiters_ (seq_cst); a waiter and    *)
(* nothing left: lock and unlock empty_mu_, notify_all. BugFinisherReadsWaitersFirst       *)
(* reads empty_waiters_ first: a waiter that registers and checks in between is never      *)
(* notified. The finisher's IsEmpty is one step here (see AllFinishedNow).                *)

KeepFinisher(w) == /\ KeepWorkerLocals(w) /\ KeepClientWakers /\ KeepTasks /\ KeepQueues
                   /\ UNCHANGED <<exit, stopping, stopGen, swept, cPosted, cPostedShared,
                                  emptyWaiters, emptyMu, oFirst, wStop>>

\* code: sched/post_counters.h CountFinished: slot->finished.store(slot->finished.load(std::memory_order_relaxed) + n,
CountFinished(w) ==
  /\ wpc[w] = "count_finished"
  /\ cFinished' = [cFinished EXCEPT ![w] = @ + uncounted[w]]
  /\ uncounted' = Set(uncounted, w, 0)
  /\ Goto(w, IF ~BugFinisherReadsWaitersFirst THEN "fin_waiters"
             ELSE IF wSawWaiters[w] THEN "fin_empty" ELSE "top")
  /\ wSawWaiters' = Set(wSawWaiters, w, FALSE)
  /\ UNCHANGED cvOwner /\ KeepFinisher(w)

\* code: sched/task_scheduler.h CountFinished: if (empty_waiters_.load(std::memory_order_seq_cst) > 0 && IsEmpty()) {
FinWaitersFirst(w) ==          \* the seeded bug: the waiter count before the finished count
  /\ wpc[w] = "fin_waiters_first"
  /\ wSawWaiters' = Set(wSawWaiters, w, emptyWaiters > 0)
  /\ Goto(w, "count_finished")
  /\ UNCHANGED <<cFinished, uncounted, cvOwner>> /\ KeepFinisher(w)

FinWaiters(w) ==
  /\ wpc[w] = "fin_waiters"
  /\ Goto(w, IF emptyWaiters > 0 THEN "fin_empty" ELSE "top")
  /\ UNCHANGED <<cFinished, uncounted, wSawWaiters, cvOwner>> /\ KeepFinisher(w)

FinEmpty(w) ==                 \* IsEmpty()
  /\ wpc[w] = "fin_empty"
  /\ Goto(w, IF AllFinishedNow THEN "fin_lock" ELSE "top")
  /\ UNCHANGED <<cFinished, uncounted, wSawWaiters, cvOwner>> /\ KeepFinisher(w)

\* code: sched/task_scheduler.h CountFinished: { MutexLock lock(empty_mu_); }
FinLock(w) ==
  /\ wpc[w] = "fin_lock"
  /\ emptyMu = "none"
  /\ Goto(w, "fin_notify")
  /\ UNCHANGED <<cFinished, uncounted, wSawWaiters, cvOwner>> /\ KeepFinisher(w)

\* code: sched/task_scheduler.h CountFinished: empty_cv_.notify_all();
FinNotify(w) ==
  /\ wpc[w] = "fin_notify"
  /\ cvOwner' = FALSE
  /\ Goto(w, "top")
  /\ UNCHANGED <<cFinished, uncounted, wSawWaiters>> /\ KeepFinisher(w)

(* Leaving (StopHarness): the role holder unlocks first; every exiting worker passes the  *)
(* exit on (Send, Notify) and is gone (wpc "off"; its locals reset for a restart).         *)

ExitUnlock(w) ==               \* Schedule returned result.exit: Unlock, then break
  /\ wpc[w] = "exit_unlock"
  /\ role' = FALSE
  /\ Goto(w, "exit_send")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h WorkerMain: ready_signal_.Send();
\* code: sched/task_scheduler.h WorkerMain: io_.Notify();
ExitSend(w) ==
  /\ wpc[w] = "exit_send"
  /\ readySignal' = TRUE /\ frontNotified' = TRUE
  /\ Goto(w, "off")
  /\ wt' = Set(wt, w, NoTask) /\ moved' = Set(moved, w, 0) /\ popped' = Set(popped, w, 0)
  /\ backlog' = Set(backlog, w, FALSE) /\ timers' = Set(timers, w, FALSE)
  /\ wWasEmpty' = Set(wWasEmpty, w, FALSE) /\ wStop' = Set(wStop, w, FALSE)
  /\ UNCHANGED <<executed, tvisit, took, uncounted, wSawWaiters>>
  /\ UNCHANGED <<front, ready, pending, parked, role>> /\ KeepLocal
  /\ KeepClientWakers /\ KeepTasks
  /\ UNCHANGED <<exit, stopping, stopGen, swept, cPosted, cPostedShared, cFinished,
                 emptyWaiters, emptyMu, cvOwner, oFirst>>

----------------------------------------------------------------------------
(* Park. *)

\* code: sched/task_scheduler.h Park: if (SpinFor(options_.spin_before_park, [&] { return WorkVisible(worker); })) return false;
ParkSpin(w) ==                 \* SpinFor(WorkVisible) may find work and return early
  /\ wpc[w] = "park_spin"
  /\ \/ /\ ready # <<>> \/ (~role /\ front # <<>>)
        /\ Goto(w, "top")
     \/ Goto(w, "park_register")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* code: sched/task_scheduler.h Park: parked_.fetch_add(1, std::memory_order_seq_cst);
ParkRegister(w) ==             \* parked_.fetch_add(1, seq_cst)
  /\ wpc[w] = "park_register"
  /\ parked' = parked + 1
  /\ Goto(w, "park_recheck_ready")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* The re-checks: exit_ (StopHarness), the ready queue, the role, the front queue.
\* code: sched/task_scheduler.h Park: const bool sleep = !exit_.load(std::memory_order_seq_cst) && !ReadySeemsNonEmpty(worker) &&
\* code: sched/task_scheduler.h Park: const bool role_locked = role_.IsLocked(std::memory_order_seq_cst);
\* code: sched/task_scheduler.h Park: (role_locked || front_.IsEmpty(std::memory_order_seq_cst)) &&
ParkRecheckReady(w) == Jump(w, "park_recheck_ready", IF exit \/ ready # <<>> THEN "park_done"
                                                     ELSE "park_recheck_role")

\* The re-checks found nothing: sleep (with LocalRepost: take the batches over first).
ParkRecheckSleep(w, from, sleep, elseTo) ==
  /\ wpc[w] = from
  /\ IF sleep THEN EnterSleep(w, "park") ELSE Goto(w, elseTo) /\ UNCHANGED tvisit
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, wWasEmpty, took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

ParkRecheckRole(w) == ParkRecheckSleep(w, "park_recheck_role", role, "park_recheck_front")
ParkRecheckFront(w) == ParkRecheckSleep(w, "park_recheck_front", front = <<>>, "park_done")

\* code: sched/task_scheduler.h Park: ready_signal_.ReceiveUntil(until);
ParkReceive(w) ==              \* ready_signal_.ReceiveUntil(): a Send, or the re-check time
  /\ wpc[w] = "park_receive"
  /\ \/ readySignal /\ readySignal' = FALSE
     \/ LocalRepost /\ BatchRecheck /\ executing > 0 /\ UNCHANGED readySignal
                                                     \* kLocalBatchRecheck
  /\ Goto(w, "park_done")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h Park: parked_.fetch_sub(1, std::memory_order_relaxed);
ParkDone(w) ==                 \* parked_.fetch_sub(1)
  /\ wpc[w] = "park_done"
  /\ parked' = parked - 1
  /\ Goto(w, "top")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

----------------------------------------------------------------------------
(* Publishing local batches (LocalRepost only). PublishLocalToFront of worker o's batch,   *)
(* run by p = "own" (the owner at the top of its loop, the role held elsewhere), "sched"  *)
(* (the role holder, its own batch behind a non-empty front queue), "park" or "role"      *)
(* (TakeOverLocalBatches: an idle worker, o another worker, visited one by one).          *)

PubTarget(w, p) == IF p \in {"own", "sched"} THEN w ELSE CHOOSE o \in tvisit[w] : TRUE
PubDone(p) == CASE p = "own" -> "exec"
                [] p = "sched" -> "pop_expired"
                [] OTHER -> p \o "_to_next"
IsTakeOver(p) == p \in {"park", "role"}

\* TakeLocalBatch (one CAS takes it all) + PushChain (one exchange) + the Notify if the
\* front queue was empty.
\* code: sched/task_scheduler.h TakeLocalBatch: if (owner->local_head.compare_exchange_weak(head, tail, std::memory_order_acq_rel,
\* code: sched/task_scheduler.h PublishLocalToFront: AfterFrontPush(front_.PushChain(batch[0], batch[count - 1]));
PubTake(w, p) ==
  /\ wpc[w] = p \o "_pub"
  /\ LET o == PubTarget(w, p) IN
     /\ tvisit' = IF IsTakeOver(p) THEN Set(tvisit, w, tvisit[w] \ {o}) ELSE tvisit
     /\ IF batch[o] # <<>>
          THEN /\ front' = front \o batch[o]
               /\ frontNotified' = (frontNotified \/ front = <<>>)
               /\ batch' = Set(batch, o, <<>>)
               /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
               /\ took' = IF IsTakeOver(p) THEN Set(took, w, TRUE) ELSE took
               /\ Goto(w, p \o "_pub_after")
          ELSE /\ UNCHANGED <<front, frontNotified, batch, wWasEmpty, took>>
               /\ Goto(w, PubDone(p))
  /\ UNCHANGED <<ready, pending, readySignal, parked, role, executing>>
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed>> /\ KeepOthers /\ KeepTasks

\* code: sched/task_scheduler.h AfterFrontPush: if (!role_.IsLocked(std::memory_order_seq_cst) && parked_.load(std::memory_order_seq_cst) > 0) {
PubAfter(w, p) ==              \* AfterFrontPush: was empty and the role is free: WakeOne next
  /\ wpc[w] = p \o "_pub_after"
  /\ Goto(w, IF wWasEmpty[w] /\ ~role THEN p \o "_pub_wake" ELSE PubDone(p))
  /\ wWasEmpty' = Set(wWasEmpty, w, FALSE)
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, tvisit, took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

PubWake(w, p) ==
  /\ wpc[w] = p \o "_pub_wake"
  /\ WakeOneEffect
  /\ Goto(w, PubDone(p))
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* TakeOverLocalBatches' loop: the next other worker, or done: found some -> look again
\* (Park returns, Schedule continues); found none -> sleep (ReceiveUntil / WaitUntil).
TakeOverNext(w, p) ==
  /\ wpc[w] = p \o "_to_next"
  /\ IF tvisit[w] # {}
       THEN Goto(w, p \o "_pub") /\ UNCHANGED took
       ELSE /\ took' = Set(took, w, FALSE)
            /\ Goto(w, CASE p = "park" -> IF took[w] THEN "park_done" ELSE "park_receive"
                         [] p = "role" -> IF took[w] THEN "sched_start" ELSE "wait_until")
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, wWasEmpty, tvisit>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

Publish(w) ==
  \E p \in {"own", "sched", "park", "role"} :
    PubTake(w, p) \/ PubAfter(w, p) \/ PubWake(w, p)
    \/ (IsTakeOver(p) /\ TakeOverNext(w, p))

Worker(w) ==
  \/ TryLock(w) \/ ScheduleStart(w) \/ SchedulePop(w) \/ ReceiveFromFront(w)
  \/ TryPendingToWaiting(w) \/ WaitQueuePush(w) \/ SchedLocal(w) \/ SchedMoveLocal(w)
  \/ PopExpired(w) \/ TryWaitingToReady(w)
  \/ ScheduleDecide(w) \/ WaitUntil(w) \/ Unlock(w) \/ ReleaseCheck(w) \/ WakeOne(w)
  \/ ExecuteBatchPop(w) \/ ChainWake(w) \/ BeginExecution(w) \/ BeginExchange(w)
  \/ Callback(w)
  \/ RepostDecide(w) \/ RepostLocal(w) \/ RepostFront(w)
  \/ RepostAfterPush(w) \/ RepostWakeOne(w) \/ BatchNext(w) \/ AfterBatch(w)
  \/ ParkSpin(w) \/ ParkRegister(w) \/ ParkRecheckReady(w) \/ ParkRecheckRole(w)
  \/ ParkRecheckFront(w) \/ ParkReceive(w) \/ ParkDone(w)
  \/ Publish(w)
  \/ CountFinished(w) \/ FinWaitersFirst(w) \/ FinWaiters(w) \/ FinEmpty(w) \/ FinLock(w)
  \/ FinNotify(w) \/ ExitUnlock(w) \/ ExitSend(w)

----------------------------------------------------------------------------
AllRan == \A t \in Tasks : ran[t] = CASE t # Timer -> 1 [] StopHarness -> 3 [] OTHER -> 2

\* At rest: every post ran, the client and wakers are done (workers sleep). Only then may
\* the system stop moving; any other state without a successor is a deadlock (TLC reports it).
AtRest == AllRan /\ cpc = "done" /\ \A k \in Wakers : kpc[k] = "done"

Next ==
  \/ \E w \in Workers : Worker(w)
  \/ Client
  \/ \E k \in Wakers : Waker(k)
  \/ (AtRest /\ UNCHANGED vars)

Spec == Init /\ [][Next]_vars
        /\ \A w \in Workers : WF_vars(Worker(w))
        /\ WF_vars(Client) /\ \A k \in Wakers : WF_vars(Waker(k))

----------------------------------------------------------------------------
(* Properties. *)

Count(s, t) == Cardinality({i \in DOMAIN s : s[i] = t})

\* Exactly once: no run without its post, never two runs of a task at once.
RunsMatchPosts == \A t \in Tasks : ran[t] <= posted[t] /\ running[t] <= 1

\* Never in two queues: at most once in front/pending/ready/the local batches together, and
\* a task that is ready is not in the wait queue (a woken waiting task may sit in the front
\* queue and in the wait queue at once: the sched-role removes it from the wait queue on
\* receipt).
NeverInTwoQueues ==
  \A t \in Tasks :
    /\ Count(front, t) + Count(pending, t) + Count(ready, t)
         + Cardinality({w \in Workers : t \in Range(batch[w])}) <= 1
    /\ \A w \in Workers : Count(batch[w], t) <= 1
    /\ Count(pending, t) + Count(ready, t) = 1 => ~inWait[t]

\* Post order for two tasks due at once (Blocker, then Timer with its first deadline due;
\* with LocalRepost, Timer then Blocker): while the second one's first post is queued to
\* run, the first, posted before it, is ahead of it in the ready queue, popped, or has begun.
FirstDue == IF LocalRepost THEN Timer ELSE Blocker
SecondDue == IF LocalRepost THEN Blocker ELSE Timer
Index(s, t) == CHOOSE i \in DOMAIN s : s[i] = t
PostOrder ==
  LET q == ready \o pending IN
  (deadline[SecondDue] = "due" /\ posted[SecondDue] = 1 /\ SecondDue \in Range(q)) =>
     \/ ran[FirstDue] >= 1
     \/ \E w \in Workers : wt[w] = FirstDue /\ wpc[w] \in {"chain_wake", "begin_execution",
                                                          "begin_exchange"}
     \/ FirstDue \in Range(q) /\ Index(q, FirstDue) < Index(q, SecondDue)

\* No lost wakeup is deadlock freedom here: CHECK_DEADLOCK with AtRest as the only end.

\* StopHarness: WaitEmpty returns true only when every post has finished (the owner posts
\* nothing while it waits, and the tasks' own posts count); Stop returns with the scheduler
\* drained: every post ran, no queue holds a task, every worker has exited.
Finished == \A t \in Tasks : ran[t] = posted[t] /\ running[t] = 0
WaitEmptyMeansFinished ==
  cpc \in {"we_done", "stop_exit", "stop_join", "stop_returned"} => Finished
StopDrains ==
  cpc = "stop_returned" =>
     /\ Finished /\ AllWorkersOff /\ ~role /\ parked = 0
     /\ front = <<>> /\ ready = <<>> /\ pending = <<>>
     /\ \A t \in Tasks : ~inWait[t] /\ ~queued[t]

\* Liveness: every post eventually runs.
EveryPostRuns == <>AllRan

\* StopHarness: every Stop returns (the owner gets to the end).
StopsReturn == <>(cpc = "done")

TypeOK ==
  /\ role \in BOOLEAN /\ parked \in 0..NWorkers /\ executing \in 0..NWorkers
  /\ \A t \in Tasks : state[t] \subseteq {"waiting", "woken", "signaled", "cancelled"}
  /\ \A w \in Workers : Range(batch[w]) \subseteq Tasks /\ tvisit[w] \subseteq Workers \ {w}
  /\ executing = Cardinality({w \in Workers : executed[w] \/ wpc[w] \in
       {"chain_wake", "begin_execution", "begin_exchange", "callback", "repost_decide",
        "repost_local", "repost_front", "repost_after_push", "repost_wake_one",
        "batch_next"}})
=============================================================================
