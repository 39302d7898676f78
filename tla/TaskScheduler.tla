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
(* The front and ready queues are atomic FIFOs here (MpscQueue.tla and     *)
(* McspQueue.tla refine them); the role holder's PushPending items stay    *)
(* invisible until FlushPending. Task state bits are sets of names         *)
(* ("waiting", "woken", "signaled", "cancelled"); fetch_or is a union.     *)
(* Action names follow the functions in the code: TryLock, Schedule's      *)
(* steps (SchedulePop, ReceiveFromFront, TryPendingToWaiting, WaitQueuePush,*)
(* PopExpired, TryWaitingToReady, FlushPending/ScheduleDecide, WaitUntil), *)
(* Unlock, WakeOne, ExecuteBatchPop, ChainWake, BeginExecution, Callback,  *)
(* Park{Spin,Register,Recheck*,Receive,Done}, Post/PushFront, TryWake.     *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Workers,              \* model values, e.g. {w1, w2}
          Batch,                \* batch_size: front pops per role take, e.g. 1
          TimerFirstDeadlines   \* subset of {"due", "future", "infinite"}

Blocker == 0
Timer == 1
Tasks == {Blocker, Timer}
Wakers == {1, 2}                \* waker i acts once Timer's post number i has begun

VARIABLES
  role, front, ready, pending, frontNotified, readySignal, parked,
  state, deadline, queued, inWait,
  wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,   \* [Workers -> ...]
  cpc, cWasEmpty,                                                 \* the client
  kpc, kOld, kWasEmpty,                                           \* [Wakers -> ...]
  posted, ran, running                                            \* ghost

vars == <<role, front, ready, pending, frontNotified, readySignal, parked,
          state, deadline, queued, inWait,
          wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,
          cpc, cWasEmpty, kpc, kOld, kWasEmpty, posted, ran, running>>

Init ==
  /\ role = FALSE /\ front = <<>> /\ ready = <<>> /\ pending = <<>>
  /\ frontNotified = FALSE /\ readySignal = FALSE /\ parked = 0
  /\ state = [t \in Tasks |-> {}] /\ deadline = [t \in Tasks |-> "due"]
  /\ queued = [t \in Tasks |-> FALSE] /\ inWait = [t \in Tasks |-> FALSE]
  /\ wpc = [w \in Workers |-> "top"] /\ wt = [w \in Workers |-> Blocker]
  /\ moved = [w \in Workers |-> 0] /\ popped = [w \in Workers |-> 0]
  /\ backlog = [w \in Workers |-> FALSE] /\ timers = [w \in Workers |-> FALSE]
  /\ executed = [w \in Workers |-> FALSE] /\ wWasEmpty = [w \in Workers |-> FALSE]
  /\ cpc = "post_blocker" /\ cWasEmpty = FALSE
  /\ kpc = [k \in Wakers |-> "wait"] /\ kOld = [k \in Wakers |-> {}]
  /\ kWasEmpty = [k \in Wakers |-> FALSE]
  /\ posted = [t \in Tasks |-> 0] /\ ran = [t \in Tasks |-> 0] /\ running = [t \in Tasks |-> 0]

Set(f, x, v) == [f EXCEPT ![x] = v]
Range(s) == {s[i] : i \in DOMAIN s}

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
(* The client: Post(Blocker), Post(Timer, deadline), each followed by PushFront's checks. *)

ClientPostBlocker ==
  /\ cpc = "post_blocker"
  /\ PostPush(Blocker, "due")
  /\ cWasEmpty' = (front = <<>>)
  /\ cpc' = "after_blocker"
  /\ UNCHANGED <<role, ready, pending, readySignal, parked, state, inWait, wpc, wt, moved,
                 popped, backlog, timers, executed, wWasEmpty, kpc, kOld, kWasEmpty, ran,
                 running>>

ClientPostTimer ==
  /\ cpc = "post_timer"
  /\ \E kind \in TimerFirstDeadlines : PostPush(Timer, kind)
  /\ cWasEmpty' = (front = <<>>)
  /\ cpc' = "after_timer"
  /\ UNCHANGED <<role, ready, pending, readySignal, parked, state, inWait, wpc, wt, moved,
                 popped, backlog, timers, executed, wWasEmpty, kpc, kOld, kWasEmpty, ran,
                 running>>

ClientAfterPush ==             \* was empty and the role is free (seq_cst load): WakeOne next
  /\ cpc \in {"after_blocker", "after_timer"}
  /\ LET nextPc == IF cpc = "after_blocker" THEN "post_timer" ELSE "done"
     IN cpc' = IF cWasEmpty /\ ~role
                 THEN (IF cpc = "after_blocker" THEN "wake_blocker" ELSE "wake_timer")
                 ELSE nextPc
  /\ UNCHANGED <<role, front, ready, pending, frontNotified, readySignal, parked, state,
                 deadline, queued, inWait, wpc, wt, moved, popped, backlog, timers, executed,
                 wWasEmpty, cWasEmpty, kpc, kOld, kWasEmpty, posted, ran, running>>

ClientWakeOne ==
  /\ cpc \in {"wake_blocker", "wake_timer"}
  /\ WakeOneEffect
  /\ cpc' = IF cpc = "wake_blocker" THEN "post_timer" ELSE "done"
  /\ UNCHANGED <<role, front, ready, pending, frontNotified, parked, state, deadline, queued,
                 inWait, wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,
                 cWasEmpty, kpc, kOld, kWasEmpty, posted, ran, running>>

Client == ClientPostBlocker \/ ClientPostTimer \/ ClientAfterPush \/ ClientWakeOne

----------------------------------------------------------------------------
(* Wakers: Signal (waker 1) and Cancel (waker 2) of Timer: Wake = TryWake + PushFront. *)

WakeBits(k) == IF k = 1 THEN {"woken", "signaled"} ELSE {"woken", "cancelled"}

KeepForWaker == UNCHANGED <<role, ready, pending, parked, deadline, queued, inWait, wpc, wt,
                            moved, popped, backlog, timers, executed, wWasEmpty, cpc,
                            cWasEmpty, posted, ran, running>>

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

KeepWorkerLocals(w) == UNCHANGED <<wt, moved, popped, backlog, timers, executed, wWasEmpty>>
KeepOthers == UNCHANGED <<cpc, cWasEmpty, kpc, kOld, kWasEmpty>>
KeepTasks == UNCHANGED <<state, deadline, queued, inWait, posted, ran, running>>
KeepQueues == UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role>>

\* Worker-local step that only reads shared state and jumps.
Jump(w, from, to) ==
  /\ wpc[w] = from /\ Goto(w, to)
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

TryLock(w) ==
  /\ wpc[w] = "top"
  /\ IF ~role THEN role' = TRUE /\ Goto(w, "sched_start")
              ELSE UNCHANGED role /\ Goto(w, "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ScheduleStart(w) ==
  /\ wpc[w] = "sched_start"
  /\ moved' = Set(moved, w, 0) /\ popped' = Set(popped, w, 0)
  /\ Goto(w, "sched_pop")
  /\ UNCHANGED <<wt, backlog, timers, executed, wWasEmpty>> /\ KeepOthers /\ KeepTasks
  /\ KeepQueues

SchedulePop(w) ==              \* front_.Pop(), at most Batch per round
  /\ wpc[w] = "sched_pop"
  /\ IF popped[w] < Batch /\ front # <<>>
       THEN /\ wt' = Set(wt, w, Head(front)) /\ front' = Tail(front)
            /\ popped' = [popped EXCEPT ![w] = @ + 1]
            /\ Goto(w, "receive")
       ELSE /\ UNCHANGED <<wt, front, popped>> /\ Goto(w, "pop_expired")
  /\ UNCHANGED <<ready, pending, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED <<moved, backlog, timers, executed, wWasEmpty>> /\ KeepOthers /\ KeepTasks

MakeReady(w, t) ==             \* ready_.PushPending(t)
  /\ pending' = Append(pending, t)
  /\ moved' = [moved EXCEPT ![w] = @ + 1]

ReceiveFromFront(w) ==         \* woken, due, or on to the kWaiting CAS
  /\ wpc[w] = "receive"
  /\ LET t == wt[w] IN
     \/ /\ "woken" \in state[t]                         \* IsWoken: remove from wait, ready
        /\ inWait' = Set(inWait, t, FALSE) /\ MakeReady(w, t) /\ Goto(w, "sched_pop")
     \/ /\ "woken" \notin state[t] /\ deadline[t] \in {"due", "future"}   \* deadline <= now
        /\ MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED inWait
     \/ /\ "woken" \notin state[t] /\ deadline[t] # "due"
        /\ Goto(w, "try_pending_to_waiting") /\ UNCHANGED <<inWait, pending, moved>>
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty>> /\ KeepOthers
  /\ UNCHANGED <<state, deadline, queued, posted, ran, running>>

TryPendingToWaiting(w) ==      \* CAS 0 -> kWaiting (release)
  /\ wpc[w] = "try_pending_to_waiting"
  /\ LET t == wt[w] IN
     IF state[t] = {}
       THEN state' = Set(state, t, {"waiting"}) /\ Goto(w, "wait_queue_push")
            /\ UNCHANGED <<pending, moved>>
       ELSE MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED state   \* a waker won
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty>> /\ KeepOthers
  /\ UNCHANGED <<deadline, queued, inWait, posted, ran, running>>

WaitQueuePush(w) ==
  /\ wpc[w] = "wait_queue_push"
  /\ inWait' = Set(inWait, wt[w], TRUE)
  /\ Goto(w, "sched_pop")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues
  /\ UNCHANGED <<state, deadline, queued, posted, ran, running>>

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
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty>> /\ KeepOthers
  /\ UNCHANGED <<deadline, queued, inWait, posted, ran, running>>

ScheduleDecide(w) ==           \* backlog/timers; FlushPending and leave, or go on, or sleep
  /\ wpc[w] = "decide"
  /\ backlog' = Set(backlog, w, front # <<>>)
  /\ timers' = Set(timers, w, inWait[Timer])
  /\ IF moved[w] > 0
       THEN /\ ready' = ready \o pending /\ pending' = <<>> /\ Goto(w, "unlock")
       ELSE /\ UNCHANGED <<ready, pending>>
            /\ Goto(w, IF ready # <<>> THEN "unlock"                    \* Count() > 0
                       ELSE IF front # <<>> /\ popped[w] > 0 THEN "unlock"
                       ELSE IF front # <<>> THEN "sched_start"          \* push in flight
                       ELSE "wait_until")
  /\ UNCHANGED <<front, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED <<wt, moved, popped, executed, wWasEmpty>> /\ KeepOthers /\ KeepTasks

WaitUntil(w) ==                \* io_.WaitUntil(next deadline): a notify, or the deadline
  /\ wpc[w] = "wait_until"
  /\ \/ frontNotified /\ frontNotified' = FALSE
     \/ inWait[Timer] /\ deadline[Timer] = "future" /\ UNCHANGED frontNotified
  /\ Goto(w, "sched_start")
  /\ UNCHANGED <<front, ready, pending, readySignal, parked, role>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

Unlock(w) ==                   \* role_.Unlock() (seq_cst)
  /\ wpc[w] = "unlock"
  /\ role' = FALSE
  /\ Goto(w, "release_check")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ReleaseCheck(w) ==             \* more_to_schedule = backlog || !front_.IsEmpty(seq_cst)
  /\ wpc[w] = "release_check"
  /\ LET more == backlog[w] \/ front # <<>>
     IN Goto(w, IF moved[w] > 1 \/ more \/ (moved[w] > 0 /\ timers[w]) THEN "wake_one"
                ELSE "exec")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

WakeOne(w) ==
  /\ wpc[w] = "wake_one"
  /\ WakeOneEffect
  /\ Goto(w, "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ExecuteBatchPop(w) ==          \* consumer.Pop()
  /\ wpc[w] = "exec"
  /\ IF ready # <<>>
       THEN wt' = Set(wt, w, Head(ready)) /\ ready' = Tail(ready) /\ Goto(w, "chain_wake")
       ELSE UNCHANGED <<wt, ready>> /\ Goto(w, "after_batch")
  /\ UNCHANGED <<front, pending, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED <<moved, popped, backlog, timers, executed, wWasEmpty>> /\ KeepOthers
  /\ KeepTasks

ChainWake(w) ==                \* parked workers and more seem ready: WakeOne
  /\ wpc[w] = "chain_wake"
  /\ readySignal' = (readySignal \/ (parked > 0 /\ ready # <<>>))
  /\ Goto(w, "begin_execution")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>>
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

Callback(w) ==                 \* Blocker waits for Timer; Timer's first run re-posts it
  /\ wpc[w] = "callback"
  /\ LET t == wt[w] IN
     /\ t = Blocker => ran[Timer] >= 1
     /\ running' = [running EXCEPT ![t] = @ - 1]
     /\ IF t = Timer /\ ran[Timer] = 1
          THEN /\ PostPush(Timer, "infinite")                      \* PostWait from inside
               /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
               /\ Goto(w, "repost_after_push")
          ELSE /\ UNCHANGED <<queued, deadline, posted, front, frontNotified, wWasEmpty>>
               /\ Goto(w, "batch_next")
  /\ UNCHANGED <<ready, pending, readySignal, parked, role, state, inWait, ran>>
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed>> /\ KeepOthers

RepostAfterPush(w) ==
  /\ wpc[w] = "repost_after_push"
  /\ Goto(w, IF wWasEmpty[w] /\ ~role THEN "repost_wake_one" ELSE "batch_next")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

RepostWakeOne(w) ==
  /\ wpc[w] = "repost_wake_one"
  /\ WakeOneEffect
  /\ Goto(w, "batch_next")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

BatchNext(w) ==                \* RoleWorkDue ends the batch early
  /\ wpc[w] = "batch_next"
  /\ executed' = Set(executed, w, TRUE)
  /\ Goto(w, IF ~role /\ (front # <<>> \/ inWait[Timer]) THEN "after_batch" ELSE "exec")
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, wWasEmpty>> /\ KeepOthers /\ KeepTasks
  /\ KeepQueues

AfterBatch(w) ==               \* executed something: loop; role free: take it; else park
  /\ wpc[w] = "after_batch"
  /\ executed' = Set(executed, w, FALSE)
  /\ Goto(w, IF executed[w] \/ ~role THEN "top" ELSE "park_spin")
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, wWasEmpty>> /\ KeepOthers /\ KeepTasks
  /\ KeepQueues

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
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, role>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ParkRecheckReady(w) == Jump(w, "park_recheck_ready", IF ready # <<>> THEN "park_done"
                                                     ELSE "park_recheck_role")
ParkRecheckRole(w) == Jump(w, "park_recheck_role", IF role THEN "park_receive"
                                                   ELSE "park_recheck_front")
ParkRecheckFront(w) == Jump(w, "park_recheck_front", IF front = <<>> THEN "park_receive"
                                                     ELSE "park_done")

ParkReceive(w) ==              \* ready_signal_.Receive()
  /\ wpc[w] = "park_receive"
  /\ readySignal /\ readySignal' = FALSE
  /\ Goto(w, "park_done")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

ParkDone(w) ==                 \* parked_.fetch_sub(1)
  /\ wpc[w] = "park_done"
  /\ parked' = parked - 1
  /\ Goto(w, "top")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, role>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

Worker(w) ==
  \/ TryLock(w) \/ ScheduleStart(w) \/ SchedulePop(w) \/ ReceiveFromFront(w)
  \/ TryPendingToWaiting(w) \/ WaitQueuePush(w) \/ PopExpired(w) \/ TryWaitingToReady(w)
  \/ ScheduleDecide(w) \/ WaitUntil(w) \/ Unlock(w) \/ ReleaseCheck(w) \/ WakeOne(w)
  \/ ExecuteBatchPop(w) \/ ChainWake(w) \/ BeginExecution(w) \/ Callback(w)
  \/ RepostAfterPush(w) \/ RepostWakeOne(w) \/ BatchNext(w) \/ AfterBatch(w)
  \/ ParkSpin(w) \/ ParkRegister(w) \/ ParkRecheckReady(w) \/ ParkRecheckRole(w)
  \/ ParkRecheckFront(w) \/ ParkReceive(w) \/ ParkDone(w)

----------------------------------------------------------------------------
AllRan == ran[Blocker] = 1 /\ ran[Timer] = 2

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

\* Never in two queues: at most once in front/pending/ready together, and a task that is
\* ready is not in the wait queue (a woken waiting task may sit in the front queue and in
\* the wait queue at once: the sched-role removes it from the wait queue on receipt).
NeverInTwoQueues ==
  \A t \in Tasks :
    /\ Count(front, t) + Count(pending, t) + Count(ready, t) <= 1
    /\ Count(pending, t) + Count(ready, t) = 1 => ~inWait[t]

\* Post order for tasks due at once: while Timer (first post, due) is queued to run, Blocker,
\* posted before it, is ahead of it in the ready queue, popped, or has begun.
Index(s, t) == CHOOSE i \in DOMAIN s : s[i] = t
PostOrder ==
  LET q == ready \o pending IN
  (deadline[Timer] = "due" /\ posted[Timer] = 1 /\ Timer \in Range(q)) =>
     \/ ran[Blocker] >= 1
     \/ \E w \in Workers : wt[w] = Blocker /\ wpc[w] \in {"chain_wake", "begin_execution"}
     \/ Blocker \in Range(q) /\ Index(q, Blocker) < Index(q, Timer)

\* No lost wakeup is deadlock freedom here: CHECK_DEADLOCK with AtRest as the only end.

\* Liveness: every post eventually runs.
EveryPostRuns == <>AllRan

TypeOK ==
  /\ role \in BOOLEAN /\ parked \in 0..Cardinality(Workers)
  /\ \A t \in Tasks : state[t] \subseteq {"waiting", "woken", "signaled", "cancelled"}
=============================================================================
