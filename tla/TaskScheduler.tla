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
(* The front and ready queues are atomic FIFOs here (MpscQueue.tla and     *)
(* McspQueue.tla refine them); the role holder's PushPending items stay    *)
(* invisible until FlushPending. Task state bits are sets of names         *)
(* ("waiting", "woken", "signaled", "cancelled"); fetch_or is a union.     *)
(* Action names follow the functions in the code: TryLock, Schedule's      *)
(* steps (SchedulePop, ReceiveFromFront, TryPendingToWaiting, WaitQueuePush,*)
(* SchedLocal/SchedMoveLocal, PopExpired, TryWaitingToReady,               *)
(* FlushPending/ScheduleDecide, WaitUntil), Unlock, WakeOne,               *)
(* ExecuteBatchPop, ChainWake, BeginExecution, Callback, RepostDecide/     *)
(* RepostLocal (AppendLocal), BatchNext, AfterBatch,                       *)
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
          BugNoTakeOver         \* BOOLEAN: seeded bug, the take-over publishes nothing

ASSUME LocalRepost \in BOOLEAN /\ BatchRecheck \in BOOLEAN /\ BugNoTakeOver \in BOOLEAN

Blocker == 0
Timer == 1
Short == 2
NoTask == 3                     \* an executor's or receiver's task slot, empty (LocalRepost)
Tasks == IF LocalRepost THEN {Blocker, Timer, Short} ELSE {Blocker, Timer}
Wakers == IF LocalRepost THEN {} ELSE {1, 2}   \* waker i acts once Timer's post i has begun
ClientPosts == IF LocalRepost THEN <<Short, Timer, Blocker>> ELSE <<Blocker, Timer>>
NWorkers == Cardinality(Workers)

VARIABLES
  role, front, ready, pending, frontNotified, readySignal, parked,
  batch, executing,                                               \* local batches
  state, deadline, queued, inWait,
  wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,   \* [Workers -> ...]
  tvisit, took,                                                   \* [Workers -> ...]
  cpc, cnext, cWasEmpty,                                          \* the client
  kpc, kOld, kWasEmpty,                                           \* [Wakers -> ...]
  posted, ran, running                                            \* ghost

vars == <<role, front, ready, pending, frontNotified, readySignal, parked, batch, executing,
          state, deadline, queued, inWait,
          wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty, tvisit, took,
          cpc, cnext, cWasEmpty, kpc, kOld, kWasEmpty, posted, ran, running>>

Init ==
  /\ role = FALSE /\ front = <<>> /\ ready = <<>> /\ pending = <<>>
  /\ frontNotified = FALSE /\ readySignal = FALSE /\ parked = 0
  /\ batch = [w \in Workers |-> <<>>] /\ executing = 0
  /\ state = [t \in Tasks |-> {}] /\ deadline = [t \in Tasks |-> "due"]
  /\ queued = [t \in Tasks |-> FALSE] /\ inWait = [t \in Tasks |-> FALSE]
  /\ wpc = [w \in Workers |-> "top"]
  /\ wt = [w \in Workers |-> IF LocalRepost THEN NoTask ELSE Blocker]
  /\ moved = [w \in Workers |-> 0] /\ popped = [w \in Workers |-> 0]
  /\ backlog = [w \in Workers |-> FALSE] /\ timers = [w \in Workers |-> FALSE]
  /\ executed = [w \in Workers |-> FALSE] /\ wWasEmpty = [w \in Workers |-> FALSE]
  /\ tvisit = [w \in Workers |-> {}] /\ took = [w \in Workers |-> FALSE]
  /\ cpc = "post" /\ cnext = 1 /\ cWasEmpty = FALSE
  /\ kpc = [k \in Wakers |-> "wait"] /\ kOld = [k \in Wakers |-> {}]
  /\ kWasEmpty = [k \in Wakers |-> FALSE]
  /\ posted = [t \in Tasks |-> 0] /\ ran = [t \in Tasks |-> 0] /\ running = [t \in Tasks |-> 0]

Set(f, x, v) == [f EXCEPT ![x] = v]
Range(s) == {s[i] : i \in DOMAIN s}

\* With LocalRepost, worker-local values are reset where they die (as the Spin model does):
\* fewer distinct states, the same behaviours. The harness without local batches keeps its
\* values as before (its state space is unchanged).
Dead(f, x, v) == IF LocalRepost THEN Set(f, x, v) ELSE f

----------------------------------------------------------------------------
(* Shared pieces. *)

\* front_.Push(t) with the Notify folded in (a flag only the role holder consumes).
FrontPush(t, wasEmptyOut) ==
  /\ wasEmptyOut = (front = <<>>)
  /\ front' = Append(front, t)
  /\ frontNotified' = (frontNotified \/ front = <<>>)

\* MarkQueued + setters + PushFront's push, one step (the task is private until pushed).
PostPush(t, kind) ==
  /\ queued' = Set(queued, t, TRUE)
  /\ deadline' = Set(deadline, t, kind)
  /\ posted' = [posted EXCEPT ![t] = @ + 1]
  /\ front' = Append(front, t)
  /\ frontNotified' = (frontNotified \/ front = <<>>)

\* WakeOne: parked_ > 0 -> ready_signal_.Send().
WakeOneEffect == readySignal' = (readySignal \/ parked > 0)

----------------------------------------------------------------------------
(* The client: Post of each task of ClientPosts in turn (Timer's first deadline from     *)
(* TimerFirstDeadlines, every other post due), each followed by PushFront's checks.      *)

ClientNext ==                  \* on to the next post, or done
  IF cnext = Len(ClientPosts) THEN cpc' = "done" /\ UNCHANGED cnext
                              ELSE cpc' = "post" /\ cnext' = cnext + 1

KeepForClient == UNCHANGED <<role, ready, pending, parked, batch, executing, state, inWait,
                             wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,
                             tvisit, took, kpc, kOld, kWasEmpty, ran, running>>

ClientPost ==
  /\ cpc = "post"
  /\ LET t == ClientPosts[cnext] IN
     \E kind \in (IF t = Timer /\ ~LocalRepost THEN TimerFirstDeadlines ELSE {"due"}) :
       PostPush(t, kind)
  /\ cWasEmpty' = (front = <<>>)
  /\ cpc' = "after"
  /\ UNCHANGED <<readySignal, cnext>> /\ KeepForClient

ClientAfterPush ==             \* was empty and the role is free (seq_cst load): WakeOne next
  /\ cpc = "after"
  /\ IF cWasEmpty /\ ~role THEN cpc' = "wake" /\ UNCHANGED cnext ELSE ClientNext
  /\ cWasEmpty' = (cWasEmpty /\ ~LocalRepost)          \* dead from here (LocalRepost: reset)
  /\ UNCHANGED <<front, frontNotified, readySignal, deadline, queued, posted>>
  /\ KeepForClient

ClientWakeOne ==
  /\ cpc = "wake"
  /\ WakeOneEffect
  /\ ClientNext
  /\ UNCHANGED <<front, frontNotified, deadline, queued, cWasEmpty, posted>> /\ KeepForClient

Client == ClientPost \/ ClientAfterPush \/ ClientWakeOne

----------------------------------------------------------------------------
(* Wakers: Signal (waker 1) and Cancel (waker 2) of Timer: Wake = TryWake + PushFront. *)

WakeBits(k) == IF k = 1 THEN {"woken", "signaled"} ELSE {"woken", "cancelled"}

KeepForWaker == UNCHANGED <<role, ready, pending, parked, batch, executing, deadline, queued,
                            inWait, wpc, wt, moved, popped, backlog, timers, executed,
                            wWasEmpty, tvisit, took, cpc, cnext, cWasEmpty, posted, ran,
                            running>>

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
KeepOthers == UNCHANGED <<cpc, cnext, cWasEmpty, kpc, kOld, kWasEmpty>>
KeepTasks == UNCHANGED <<state, deadline, queued, inWait, posted, ran, running>>
KeepLocal == UNCHANGED <<batch, executing>>
KeepQueues == UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role>>
              /\ KeepLocal

\* Worker-local step that only reads shared state and jumps.
Jump(w, from, to) ==
  /\ wpc[w] = from /\ Goto(w, to)
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* TryLock; failing it with a local batch (the role is held elsewhere): PublishLocalToFront.
TryLock(w) ==
  /\ wpc[w] = "top"
  /\ IF ~role THEN role' = TRUE /\ Goto(w, "sched_start")
              ELSE /\ UNCHANGED role
                   /\ Goto(w, IF LocalRepost /\ batch[w] # <<>> THEN "own_pub" ELSE "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ScheduleStart(w) ==
  /\ wpc[w] = "sched_start"
  /\ moved' = Set(moved, w, 0) /\ popped' = Set(popped, w, 0)
  /\ Goto(w, "sched_pop")
  /\ UNCHANGED <<wt, backlog, timers, executed, wWasEmpty, tvisit, took>> /\ KeepOthers
  /\ KeepTasks /\ KeepQueues

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

MakeReady(w, t) ==             \* ready_.PushPending(t)
  /\ pending' = Append(pending, t)
  /\ moved' = [moved EXCEPT ![w] = @ + 1]

ReceiveFromFront(w) ==         \* woken, due, or on to the kWaiting CAS
  /\ wpc[w] = "receive"
  /\ LET t == wt[w] IN
     \/ /\ "woken" \in state[t]                         \* IsWoken: remove from wait, ready
        /\ inWait' = Set(inWait, t, FALSE) /\ MakeReady(w, t) /\ Goto(w, "sched_pop")
        /\ wt' = Dead(wt, w, NoTask)
     \/ /\ "woken" \notin state[t] /\ deadline[t] \in {"due", "future"}   \* deadline <= now
        /\ MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED inWait
        /\ wt' = Dead(wt, w, NoTask)
     \/ /\ "woken" \notin state[t] /\ deadline[t] # "due"
        /\ Goto(w, "try_pending_to_waiting") /\ UNCHANGED <<inWait, pending, moved, wt>>
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ UNCHANGED <<state, deadline, queued, posted, ran, running>>

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

SchedMoveLocal(w) ==           \* MoveLocalToReady: TakeLocalBatch, PushPending each
  /\ wpc[w] = "sched_move_local"
  /\ pending' = pending \o batch[w]
  /\ moved' = [moved EXCEPT ![w] = @ + Len(batch[w])]
  /\ batch' = Set(batch, w, <<>>)
  /\ Goto(w, "pop_expired")
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role, executing>>
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ KeepTasks

PopExpired(w) ==               \* a finite deadline may have passed: take it out
  /\ wpc[w] = "pop_expired"
  /\ \/ /\ inWait[Timer] /\ deadline[Timer] = "future"
        /\ inWait' = Set(inWait, Timer, FALSE) /\ Goto(w, "try_waiting_to_ready")
     \/ /\ Goto(w, "decide") /\ UNCHANGED inWait
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues
  /\ UNCHANGED <<state, deadline, queued, posted, ran, running>>

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

WaitUntil(w) ==                \* io_.WaitUntil(next deadline): a notify, or the deadline
  /\ wpc[w] = "wait_until"
  /\ \/ frontNotified /\ frontNotified' = FALSE
     \/ inWait[Timer] /\ deadline[Timer] = "future" /\ UNCHANGED frontNotified
     \/ LocalRepost /\ BatchRecheck /\ executing > 0 /\ UNCHANGED frontNotified
                                                     \* kLocalBatchRecheck
  /\ Goto(w, "sched_start")
  /\ UNCHANGED <<front, ready, pending, readySignal, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

Unlock(w) ==                   \* role_.Unlock() (seq_cst)
  /\ wpc[w] = "unlock"
  /\ role' = FALSE
  /\ Goto(w, "release_check")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ReleaseCheck(w) ==             \* more_to_schedule = backlog || !front_.IsEmpty(seq_cst)
  /\ wpc[w] = "release_check"
  /\ LET more == backlog[w] \/ front # <<>>
     IN Goto(w, IF moved[w] > 1 \/ more \/ (moved[w] > 0 /\ timers[w]) THEN "wake_one"
                ELSE "exec")
  /\ moved' = Dead(moved, w, 0) /\ popped' = Dead(popped, w, 0)
  /\ backlog' = Dead(backlog, w, FALSE) /\ timers' = Dead(timers, w, FALSE)
  /\ UNCHANGED <<wt, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

WakeOne(w) ==
  /\ wpc[w] = "wake_one"
  /\ WakeOneEffect
  /\ Goto(w, "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* consumer.Pop(); the first task of an execution batch counts the worker in `executing`
\* (`executed` is still FALSE then: BatchNext sets it after the task).
ExecuteBatchPop(w) ==
  /\ wpc[w] = "exec"
  /\ IF ready # <<>>
       THEN /\ wt' = Set(wt, w, Head(ready)) /\ ready' = Tail(ready) /\ Goto(w, "chain_wake")
            /\ executing' = IF executed[w] THEN executing ELSE executing + 1
       ELSE UNCHANGED <<wt, ready, executing>> /\ Goto(w, "after_batch")
  /\ UNCHANGED <<front, pending, frontNotified, readySignal, parked, role, batch>>
  /\ UNCHANGED <<moved, popped, backlog, timers, executed, wWasEmpty, tvisit, took>>
  /\ KeepOthers /\ KeepTasks

ChainWake(w) ==                \* parked workers and more seem ready: WakeOne
  /\ wpc[w] = "chain_wake"
  /\ readySignal' = (readySignal \/ (parked > 0 /\ ready # <<>>))
  /\ Goto(w, "begin_execution")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

BeginExecution(w) ==           \* state_.exchange(0); queued_ = 0; the callback starts
  /\ wpc[w] = "begin_execution"
  /\ LET t == wt[w] IN
     /\ state' = Set(state, t, {})
     /\ queued' = Set(queued, t, FALSE)
     /\ ran' = [ran EXCEPT ![t] = @ + 1]
     /\ running' = [running EXCEPT ![t] = @ + 1]
  /\ Goto(w, "callback")
  /\ UNCHANGED <<deadline, inWait, posted>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues

\* Blocker waits for Timer (once; twice with LocalRepost), Short for Timer's first run.
\* Timer's first run re-posts it: PostWait, or (LocalRepost) to run at once.
CallbackMayReturn(t) ==
  IF LocalRepost THEN /\ t = Blocker => ran[Timer] >= 2
                      /\ t = Short => ran[Timer] >= 1
                 ELSE t = Blocker => ran[Timer] >= 1

Callback(w) ==
  /\ wpc[w] = "callback"
  /\ LET t == wt[w] IN
     /\ CallbackMayReturn(t)
     /\ running' = [running EXCEPT ![t] = @ - 1]
     /\ IF t = Timer /\ ran[Timer] = 1 /\ ~LocalRepost
          THEN /\ PostPush(Timer, "infinite")                      \* PostWait from inside
               /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
               /\ Goto(w, "repost_after_push")
          ELSE /\ UNCHANGED <<queued, deadline, posted, front, frontNotified, wWasEmpty>>
               /\ Goto(w, IF t = Timer /\ ran[Timer] = 1 THEN "repost_decide"
                          ELSE "batch_next")
  /\ UNCHANGED <<ready, pending, readySignal, parked, role, state, inWait, ran>> /\ KeepLocal
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, tvisit, took>> /\ KeepOthers

\* A run-now post from inside a task (PostMarked -> AppendLocal): SomeWorkerMayBeIdle is
\* read first; no worker idle: into the local batch, else PushFront.
RepostDecide(w) == Jump(w, "repost_decide", IF executing = NWorkers THEN "repost_local"
                                            ELSE "repost_front")

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
  /\ PostPush(Timer, "due")
  /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
  /\ Goto(w, "repost_after_push")
  /\ UNCHANGED <<ready, pending, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<state, inWait, ran, running>> /\ KeepOthers
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

\* The task boundary. Without LocalRepost: RoleWorkDue ends the batch early. With it (the
\* code's ExecuteBatch): a local batch ends it when a worker may be idle or the ready queue
\* looks empty; the relaxed look at `executing` may miss an idle worker (go on while tasks
\* are ready); TimerDue with the role free ends it too.
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
       ELSE Goto(w, IF ~role /\ (front # <<>> \/ inWait[Timer]) THEN "after_batch" ELSE "exec")
  /\ UNCHANGED <<moved, popped, backlog, timers, wWasEmpty, tvisit, took>> /\ KeepOthers
  /\ KeepTasks /\ KeepQueues

\* The batch ends (executing_.fetch_sub if it ran anything). Executed something: loop;
\* role free: take it; a local batch (not reachable: only a task appends): publish it at
\* the top; else park.
AfterBatch(w) ==
  /\ wpc[w] = "after_batch"
  /\ executed' = Set(executed, w, FALSE)
  /\ executing' = IF executed[w] THEN executing - 1 ELSE executing
  /\ Goto(w, IF executed[w] \/ ~role \/ batch[w] # <<>> THEN "top" ELSE "park_spin")
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, wWasEmpty, tvisit, took>> /\ KeepOthers
  /\ KeepTasks /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED batch

ParkSpin(w) ==                 \* SpinFor(WorkVisible) may find work and return early
  /\ wpc[w] = "park_spin"
  /\ \/ /\ ready # <<>> \/ (~role /\ front # <<>>)
        /\ Goto(w, "top")
     \/ Goto(w, "park_register")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

ParkRegister(w) ==             \* parked_.fetch_add(1, seq_cst)
  /\ wpc[w] = "park_register"
  /\ parked' = parked + 1
  /\ Goto(w, "park_recheck_ready")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ParkRecheckReady(w) == Jump(w, "park_recheck_ready", IF ready # <<>> THEN "park_done"
                                                     ELSE "park_recheck_role")

\* The re-checks found nothing: sleep (with LocalRepost: take the batches over first).
ParkRecheckSleep(w, from, sleep, elseTo) ==
  /\ wpc[w] = from
  /\ IF sleep THEN EnterSleep(w, "park") ELSE Goto(w, elseTo) /\ UNCHANGED tvisit
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, wWasEmpty, took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

ParkRecheckRole(w) == ParkRecheckSleep(w, "park_recheck_role", role, "park_recheck_front")
ParkRecheckFront(w) == ParkRecheckSleep(w, "park_recheck_front", front = <<>>, "park_done")

ParkReceive(w) ==              \* ready_signal_.ReceiveUntil(): a Send, or the re-check time
  /\ wpc[w] = "park_receive"
  /\ \/ readySignal /\ readySignal' = FALSE
     \/ LocalRepost /\ BatchRecheck /\ executing > 0 /\ UNCHANGED readySignal
                                                     \* kLocalBatchRecheck
  /\ Goto(w, "park_done")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

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
  \/ ExecuteBatchPop(w) \/ ChainWake(w) \/ BeginExecution(w) \/ Callback(w)
  \/ RepostDecide(w) \/ RepostLocal(w) \/ RepostFront(w)
  \/ RepostAfterPush(w) \/ RepostWakeOne(w) \/ BatchNext(w) \/ AfterBatch(w)
  \/ ParkSpin(w) \/ ParkRegister(w) \/ ParkRecheckReady(w) \/ ParkRecheckRole(w)
  \/ ParkRecheckFront(w) \/ ParkReceive(w) \/ ParkDone(w)
  \/ Publish(w)

----------------------------------------------------------------------------
AllRan == \A t \in Tasks : ran[t] = IF t = Timer THEN 2 ELSE 1

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
     \/ \E w \in Workers : wt[w] = FirstDue /\ wpc[w] \in {"chain_wake", "begin_execution"}
     \/ FirstDue \in Range(q) /\ Index(q, FirstDue) < Index(q, SecondDue)

\* No lost wakeup is deadlock freedom here: CHECK_DEADLOCK with AtRest as the only end.

\* Liveness: every post eventually runs.
EveryPostRuns == <>AllRan

TypeOK ==
  /\ role \in BOOLEAN /\ parked \in 0..NWorkers /\ executing \in 0..NWorkers
  /\ \A t \in Tasks : state[t] \subseteq {"waiting", "woken", "signaled", "cancelled"}
  /\ \A w \in Workers : Range(batch[w]) \subseteq Tasks /\ tvisit[w] \subseteq Workers \ {w}
  /\ executing = Cardinality({w \in Workers : executed[w] \/ wpc[w] \in
       {"chain_wake", "begin_execution", "callback", "repost_decide", "repost_local",
        "repost_front", "repost_after_push", "repost_wake_one", "batch_next"}})
=============================================================================
