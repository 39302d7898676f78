---------------------------- MODULE HomeScheduler ----------------------------
(***************************************************************************)
(* PostOrder::kHome (sched/internal/home_queues.h): the parts of the home  *)
(* queues that tla/spin/home_queues.pml (the order rule: stamps, looks,    *)
(* published heads) does not model: how outside posts get in, who takes    *)
(* the sched-role, how idle workers find work and who wakes them, and      *)
(* Stop. TaskScheduler.tla is the default order's (kBatched) model.        *)
(*                                                                         *)
(* What is modelled (each a step of one worker, the code's function names  *)
(* in the action names):                                                   *)
(*   - The sched-role (Schedule, sched/internal/sched_role.h) receives     *)
(*     outside posts from the front queue (FIFO) into the holder's own     *)
(*     home queue (MakeReady -> HomePush), at most FrontPopLimit per pass: *)
(*     as many as keep that queue at Batch tasks, and at least             *)
(*     min(ExecBatch, Batch). With nothing moved and nothing of its own    *)
(*     the idle holder claims one task of another queue                    *)
(*     (ClaimOneFromOthers) or sleeps in the backend (WaitUntil), timed    *)
(*     while a worker executes (RecheckWhileOthersExecute), else untimed.  *)
(*   - The worker loop (WorkerMain, sched/internal/worker_loop.h): the     *)
(*     role after every execution batch, with several workers only with    *)
(*     no claimed task, a lone worker also with claimed ones (wants_role); *)
(*     ExecuteBatch: at most ExecBatch starts, the first counted in        *)
(*     executing_ and followed by WakeUntimedSleepers if the worker's own  *)
(*     queue still holds a task, and a post a task makes into its own      *)
(*     queue followed by WakeUntimedSleepers (PostMarked); NextHomeTask:   *)
(*     claimed tasks first; a lone worker claims up to ClaimCap of its     *)
(*     own queue at once; with several workers the look (TakeOldTask),     *)
(*     its own head, or with its own queue empty TakeOneFromOthers (a      *)
(*     queue holding two or more, or a lone task the role made ready).     *)
(*   - Park (sched/internal/idle.h): register in parked_, re-check (own    *)
(*     queue, role, front queue, ClaimOneFromOthers with lone_if_stuck),   *)
(*     then RecheckWhileOthersExecute and sleep on the ready event.        *)
(*   - HomePush wakes a parked worker when the queue holds more than one   *)
(*     task (a relaxed load of parked_: the model lets it miss).           *)
(*   - Stop (sched/task_scheduler.h): stopping_, WaitEmpty, exit_, a       *)
(*     worker that sees exit_ runs its claimed tasks and leaves (the home  *)
(*     queues stay as they are), join, TakeHomeLeftovers (what every queue *)
(*     holds, merged by stamp), and while not empty one fresh worker       *)
(*     (StartWorkers(1): RequeueHomeLeftovers pushes the leftovers into    *)
(*     its home queue before it starts, stamps kept, marked made ready by  *)
(*     the role; the front queue keeps its posts, which that worker's role *)
(*     receives behind them) and again.                                    *)
(*                                                                         *)
(* Abstractions (README, "HomeScheduler.tla"): a push, a pop, a take, a    *)
(* receive pass and Park's re-check are each one atomic step (the ring's   *)
(* lock-free steps are tla/spin/home_ring.pml's; the front queue's are     *)
(* MpscQueue.tla's); the Dekker pairs of this mode (executing_ against     *)
(* untimed_sleepers_; Unlock against Park's look at the role) are split    *)
(* into their separate loads and stores. The look (TakeOldTask) is         *)
(* over-approximated: it MAY take the head of any other non-empty queue    *)
(* while its own queue is not empty (the stamp rule picks among these;     *)
(* home_queues.pml checks that rule), so no stamps are needed outside the  *)
(* Stop harness. Stamps come from one counter (kStampBlock = 1), kept only *)
(* in the Stop harness, the only place that reads them (the merge). The    *)
(* lone_if_stuck test (ClaimedCount against seen_claimed) is kept as a     *)
(* flag per (looker, queue): "claimed from since the looker's last look".  *)
(* Timers, IO, the spin before sleeping and the chain wake's guess are not *)
(* modelled (no timers are posted; a spin that finds work is the same as   *)
(* no spin; the chain wake is kept as a wake that may be sent).            *)
(*                                                                         *)
(* Harnesses (CONSTANT Harness):                                           *)
(*   "endless": worker 0's queue holds RP, a task that re-posts itself to  *)
(*     run now from every run, for ever, and may first spawn ONE (a task   *)
(*     that posts nothing) when none is queued: the harness, not the       *)
(*     scheduler, picks, so starts and posts do not keep step and the      *)
(*     queue may stay at two tasks at every batch end. With two workers,   *)
(*     worker 1 runs Long, which blocks until every outside post has       *)
(*     started. The client posts NOut outside posts at any time. Checked:  *)
(*     OutsidePostsStart (liveness).                                       *)
(*   "idle": two workers, the client posts Long, which posts X into its    *)
(*     worker's home queue (a lone task) and blocks until X has started:   *)
(*     only the other worker, idle, can take X (lone_if_stuck), and only   *)
(*     while it does not sleep untimed. With IdlePair, the client posts    *)
(*     Long and then X itself, and Long posts nothing: a role pass may     *)
(*     receive both into one queue, and Long's worker then starts Long     *)
(*     with X behind it (received: the idle worker takes it at once).      *)
(*     With IdleSeeder, the client posts S, whose run posts Long and X     *)
(*     into its worker's queue: its next execution batch starts Long with  *)
(*     X, an own post, left behind it. Checked: NoLostWakeup, deadlock     *)
(*     freedom, EveryPostRuns.                                             *)
(*   "stop": the owner posts A (its run posts B to run now: into its       *)
(*     worker's home queue) and calls Stop; a third thread posts P (whose  *)
(*     run posts Q; with LateChildren = 2, Q and Q2) at any time while     *)
(*     Stop lasts, also after WaitEmpty returned and after exit_: they may *)
(*     be left in a home queue across the exit, or claimed by a lone       *)
(*     worker that sees exit_. With LateAfter, the third thread then posts *)
(*     P2 at any time while Stop lasts once Q is posted: P2, made after Q, *)
(*     can wait in the front queue while Q is left in a home queue.        *)
(*     Checked: StopDrains, StopReturns, and with LateAfter                *)
(*     LoneWorkerKeepsPostOrder (a lone worker never starts a task while a *)
(*     run-now post made before it waits; ghost: made, madeAt).            *)
(* Every harness: ExactlyOnce (each task in at most one place, no post     *)
(* lost, no run without a post) and TypeOK.                                *)
(*                                                                         *)
(* Fairness: weak fairness of each worker's steps, of the client and of    *)
(* the owner; none on which way the harness's re-poster goes (spawn ONE    *)
(* or not) or which task a look takes: those are choices inside a step,    *)
(* and the properties must hold whatever they pick. A timed sleep ends by  *)
(* a step of its worker that is enabled as long as it sleeps timed         *)
(* (kLocalBatchRecheck passes).                                            *)
(*                                                                         *)
(* Seeded bugs (each a CONSTANT, on in its own .cfg):                      *)
(*   BugLoneWorkerNoRoleWithClaims: wants_role without the lone worker's   *)
(*     exception (the bug fixed in the role rule: a lone worker left with  *)
(*     one claimed task at every batch end never takes the role).          *)
(*   BugNoReceiveMinimum: FrontPopLimit without the execute_batch_size     *)
(*     minimum (a holder whose queue is at Batch receives nothing).        *)
(*   BugNoWakeUntimed: nothing wakes untimed sleepers (neither a batch's   *)
(*     first start nor a post into the poster's own queue).                *)
(*   BugNoWakeAtBatchStart: only the posts wake them, a batch's first      *)
(*     start with a task left in its worker's queue does not.              *)
(*   BugDrainFirstQueueOnly: Stop takes the leftovers of worker 0's home   *)
(*     queue only (the others' are lost).                                  *)
(*   BugLeftoversToFront: Stop appends the leftovers to the back of the    *)
(*     front queue (the code before the fix, DrainHomesToFront): an        *)
(*     outside post made after a leftover and waiting in the front queue   *)
(*     starts before it (with LateAfter: LoneWorkerKeepsPostOrder).        *)
(*                                                                         *)
(* Each step that mirrors a line of the code carries a `code:` comment     *)
(* (checked by //tools/model_refs:model_refs_test).                        *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS NW,            \* workers started (1 or 2)
          ExecBatch,     \* execute_batch_size (E), at least 1
          Batch,         \* batch_size, at least 1
          ClaimCap,      \* kClaimCapacity: a lone worker's claim, at least 1
          NOut,          \* outside posts of the "endless" harness (1..3)
          Harness,       \* "endless", "idle" or "stop"
          IdlePair,      \* the "idle" harness: the client posts Long and X (else Long posts X)
          IdleSeeder,    \* the "idle" harness: the client posts S, whose run posts Long and X
          LateChildren,  \* the "stop" harness: how many tasks P posts when it runs (1 or 2)
          LateAfter,     \* the "stop" harness: the late poster posts P2 once Q is posted
          BugLoneWorkerNoRoleWithClaims, BugNoReceiveMinimum, BugNoWakeUntimed,
          BugNoWakeAtBatchStart, BugDrainFirstQueueOnly, BugLeftoversToFront

ASSUME NW \in {1, 2} /\ ExecBatch >= 1 /\ Batch >= 1 /\ ClaimCap >= 1 /\ NOut \in 1..3
ASSUME LateChildren \in {1, 2} /\ LateAfter \in BOOLEAN /\ (LateAfter => Harness = "stop")
ASSUME Harness \in {"endless", "idle", "stop"} /\ (Harness = "idle" => NW = 2)
ASSUME ~(IdlePair /\ IdleSeeder)
ASSUME \A b \in {IdlePair, IdleSeeder, BugLoneWorkerNoRoleWithClaims, BugNoReceiveMinimum,
                 BugNoWakeUntimed, BugNoWakeAtBatchStart, BugDrainFirstQueueOnly,
                 BugLeftoversToFront} : b \in BOOLEAN

Workers == 0..(NW - 1)
None == "none"      \* no task
NoWorker == -1     \* the role is free
Min(a, b) == IF a < b THEN a ELSE b
Max(a, b) == IF a < b THEN b ELSE a
Range(s) == {s[i] : i \in DOMAIN s}

\* Tasks. RP and ONE are the endless re-poster and its spawn (not counted: they run for
\* ever); the others are posted once each and counted.
Outs == SubSeq(<<"o1", "o2", "o3">>, 1, NOut)
OutSet == Range(Outs)
Counted == CASE Harness = "endless" -> OutSet \cup (IF NW = 2 THEN {"long"} ELSE {})
             [] Harness = "idle" -> {"long", "x"} \cup (IF IdleSeeder THEN {"s"} ELSE {})
             [] Harness = "stop" -> {"a", "b", "p", "q"} \cup
                                      (IF LateChildren = 2 THEN {"q2"} ELSE {}) \cup
                                      (IF LateAfter THEN {"p2"} ELSE {})
Tasks == Counted \cup (IF Harness = "endless" THEN {"rp", "one"} ELSE {})
\* What a task's run posts to run now (into its worker's home queue, PostMarked's kHome
\* branch), besides RP's own re-post.
Children(t) == CASE t = "long" /\ Harness = "idle" /\ ~IdlePair /\ ~IdleSeeder -> <<"x">>
                 [] t = "s" -> <<"long", "x">>
                 [] t = "a" -> <<"b">>
                 [] t = "p" -> IF LateChildren = 2 THEN <<"q", "q2">> ELSE <<"q">>
                 [] OTHER -> <<>>
\* Long blocks (inside its run) until this holds.
LongMayReturn(r) == IF Harness = "idle" THEN r["x"] >= 1 ELSE \A o \in OutSet : r[o] >= 1

VARIABLES
  pc,          \* [Workers -> label]: where each worker is ("off": not running)
  home,        \* [Workers -> Seq(Tasks)]: the home queues (HomeRing)
  claimed,     \* [Workers -> Seq(Tasks)]: claimed tasks (claimed[], run first)
  front,       \* Seq(Tasks): the front queue (MpscQueue, FIFO)
  role,        \* the role holder, or None
  executing,   \* executing_: workers inside an execution batch
  wexec,       \* [Workers -> Nat]: tasks started in the current execution batch
  cur,         \* [Workers -> Tasks \cup {None}]: the task a worker took or runs
  lookNow,     \* [Workers -> BOOLEAN]: look_now
  resWake,     \* [Workers -> BOOLEAN]: the role pass's "ready > 1 or backlog"
  parked,      \* parked_, as the set of registered workers
  untimed,     \* untimed_sleepers_, as the set of registered workers
  timed,       \* [Workers -> BOOLEAN]: the current sleep is timed (kLocalBatchRecheck)
  readySignal, \* ready_event_ (AutoResetEvent: a flag one receiver consumes)
  ioNotified,  \* io_.Notify's flag, consumed by the role holder's WaitUntil
  dirty,       \* [Workers -> [Workers -> BOOLEAN]]: dirty[w][o]: o's queue was claimed from
               \*   since w's last lone_if_stuck look at it (seen_claimed != ClaimedCount)
  nw,          \* worker_count_
  exit,        \* exit_
  stopping,    \* stopping_
  opc,         \* the client / owner: "post", "stop_set", "wait_empty", "exit", "join",
               \*   "returned" (Stop returned), "done"
  lpc,         \* the late poster (stop harness): "wait", "after" (LateAfter: P2 next),
               \*   "done"
  posted, ran, \* ghost: [Counted -> Nat]
  nOutPosted,  \* the endless harness: outside posts made so far
  stamp, clock, \* stop harness: each queued task's stamp; the order clock
  recv,        \* [Tasks -> BOOLEAN]: the task's queue entry was made ready by the role
               \*   (MakeReady), not posted by its worker's own task (PostMarked)
  made, madeAt, \* ghost, LateAfter only: posts made so far; [Tasks -> Nat]: when each
               \*   post was made (1, 2, ...; 0: not yet): an outside post at its push into
               \*   the front queue, a task's run-now post at its push into a home queue
  nPosted, nFinished \* stop harness: PostCounters' sums (finished counted at batch end)

vars == <<pc, home, claimed, front, role, executing, wexec, cur, lookNow, resWake, parked,
          untimed, timed, readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc,
          posted, ran, nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

LongWorker == 1    \* the endless harness with two workers: Long runs there from the start

Init ==
  /\ pc = [w \in Workers |-> IF Harness = "endless" /\ NW = 2 /\ w = LongWorker
                               THEN "blocked" ELSE "top"]
  /\ home = [w \in Workers |-> IF Harness = "endless" /\ w = 0 THEN <<"rp">> ELSE <<>>]
  /\ claimed = [w \in Workers |-> <<>>]
  /\ front = <<>>
  /\ role = NoWorker
  /\ executing = IF Harness = "endless" /\ NW = 2 THEN 1 ELSE 0
  /\ wexec = [w \in Workers |-> 0]
  /\ cur = [w \in Workers |-> IF Harness = "endless" /\ NW = 2 /\ w = LongWorker
                                THEN "long" ELSE None]
  /\ lookNow = [w \in Workers |-> FALSE]
  /\ resWake = [w \in Workers |-> FALSE]
  /\ parked = {} /\ untimed = {}
  /\ timed = [w \in Workers |-> FALSE]
  /\ readySignal = FALSE /\ ioNotified = FALSE
  /\ dirty = [w \in Workers |-> [o \in Workers |-> FALSE]]
  /\ nw = NW
  /\ exit = FALSE /\ stopping = FALSE
  /\ opc = "post" /\ lpc = IF Harness = "stop" THEN "wait" ELSE "done"
  /\ posted = [t \in Counted |-> IF t = "long" /\ Harness = "endless" THEN 1 ELSE 0]
  /\ ran = [t \in Counted |-> 0]
  /\ nOutPosted = 0
  /\ stamp = [t \in Tasks |-> 0] /\ clock = 0
  /\ recv = [t \in Tasks |-> FALSE]
  /\ made = 0 /\ madeAt = [t \in Tasks |-> 0]
  /\ nPosted = 0 /\ nFinished = 0

Set(f, x, v) == [f EXCEPT ![x] = v]
Goto(w, l) == pc' = Set(pc, w, l)

\* A claim from o's queue (Pop, TakeFront): every looker's lone_if_stuck record of o is
\* stale now (ClaimedCount grew).
Claimed(o) == [x \in Workers |-> [dirty[x] EXCEPT ![o] = TRUE]]

Count(s, t) == Cardinality({i \in DOMAIN s : s[i] = t})
\* Where t is: the front queue, a home queue, claimed, or taken by a worker (to run, running).
HeldBy(t, w) == Count(home[w], t) + Count(claimed[w], t) + (IF cur[w] = t THEN 1 ELSE 0)
Held(t) == Count(front, t) + HeldBy(t, 0) + (IF NW = 2 THEN HeldBy(t, 1) ELSE 0)

\* Stamps only where read (stop harness).
NextStamp == IF Harness = "stop" THEN clock + 1 ELSE 0

\* Ghost: the posts `ts` (in order) are made now (LateAfter only: LoneWorkerKeepsPostOrder,
\* the only reader, is checked with it).
Made(ts) ==
  IF LateAfter
    THEN /\ madeAt' = [t \in Tasks |-> IF \E i \in DOMAIN ts : ts[i] = t
                                       THEN made + CHOOSE i \in DOMAIN ts : ts[i] = t
                                       ELSE madeAt[t]]
         /\ made' = made + Len(ts)
    ELSE UNCHANGED <<made, madeAt>>

----------------------------------------------------------------------------
(* HomePush: pushes `ts` (in order) at the tail of w's queue, each with the next stamp.  *)
(* Wakes a parked worker when the queue then holds more than one task: a relaxed load of *)
(* parked_, so it may miss a registration (the parker's re-check or its timed re-check    *)
(* covers that): the model lets it send or not when some worker is registered.           *)
\* code: sched/internal/home_queues.h HomePush: worker->home->Push(task, stamp);
\* code: sched/internal/home_queues.h HomePush: if (size > 1 && parked_.load(std::memory_order_relaxed) > 0) ready_event_.Send();
HomePushMany(w, ts, fromRole) ==
  /\ home' = Set(home, w, home[w] \o ts)
  /\ recv' = [t \in Tasks |-> IF t \in Range(ts) THEN fromRole ELSE recv[t]]
  /\ IF Harness = "stop" /\ ts # <<>>
       THEN /\ stamp' = [t \in Tasks |-> IF \E i \in DOMAIN ts : ts[i] = t
                                            THEN clock + CHOOSE i \in DOMAIN ts : ts[i] = t
                                            ELSE stamp[t]]
            /\ clock' = clock + Len(ts)
       ELSE UNCHANGED <<stamp, clock>>
  /\ IF Len(home[w]) + Len(ts) > 1 /\ ts # <<>> /\ parked # {}
       THEN readySignal' \in {readySignal, TRUE}
       ELSE UNCHANGED readySignal

\* PushFront + AfterFrontPush (one step; its Dekker pairs are TaskScheduler.tla's): into
\* an empty front queue: Notify the role holder, and if the role is free wake a parked
\* worker. An outside post is made here (the ghost madeAt).
\* code: sched/internal/idle.h AfterFrontPush: io_.Notify();
\* code: sched/internal/idle.h AfterFrontPush: if (!role_.IsLocked(std::memory_order_seq_cst) && parked_.load(std::memory_order_seq_cst) > 0) {
PushFront(t) ==
  /\ front' = Append(front, t)
  /\ ioNotified' = (ioNotified \/ front = <<>>)
  /\ readySignal' = (readySignal \/ (front = <<>> /\ role = NoWorker /\ parked # {}))
  /\ Made(<<t>>)

----------------------------------------------------------------------------
(* The worker loop's top (WorkerMain).                                                   *)

\* exit_ set: run the claimed tasks, then leave (passing the exit on: Send and Notify).
\* code: sched/internal/worker_loop.h WorkerMain: if (exit_.load(std::memory_order_acquire)) {
\* code: sched/internal/worker_loop.h WorkerMain: if (!worker->HasClaimed()) break;
TopExit(w) ==
  /\ pc[w] = "top" /\ exit
  /\ IF claimed[w] = <<>>
       THEN /\ Goto(w, "off")
            /\ readySignal' = TRUE /\ ioNotified' = TRUE
            /\ UNCHANGED lookNow
       ELSE /\ Goto(w, "exec") /\ lookNow' = Set(lookNow, w, nw > 1)
            /\ UNCHANGED <<readySignal, ioNotified>>
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, resWake, parked,
                 untimed, timed, dirty, nw, exit, stopping, opc, lpc, posted, ran,
                 nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* The role after every execution batch: with several workers only with nothing claimed,
\* a lone worker also with claimed tasks (BugLoneWorkerNoRoleWithClaims: never with them).
\* TryLock fails while another worker holds it: straight on to ExecuteBatch.
\* code: sched/internal/worker_loop.h WorkerMain: const bool wants_role = home_queues_ ? worker_count_ == 1 || !worker->HasClaimed()
\* code: sched/internal/worker_loop.h WorkerMain: if (wants_role && role_.TryLock()) {
\* code: sched/internal/worker_loop.h ExecuteBatch: worker->look_now = home_queues_;
WantsRole(w) == IF BugLoneWorkerNoRoleWithClaims THEN claimed[w] = <<>>
                ELSE nw = 1 \/ claimed[w] = <<>>
TopRole(w) ==
  /\ pc[w] = "top" /\ ~exit
  /\ IF WantsRole(w) /\ role = NoWorker
       THEN role' = w /\ Goto(w, "sched") /\ UNCHANGED lookNow
       ELSE Goto(w, "exec") /\ lookNow' = Set(lookNow, w, nw > 1) /\ UNCHANGED role
  /\ UNCHANGED <<home, claimed, front, executing, wexec, cur, resWake, parked, untimed,
                 timed, readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc, posted,
                 ran, nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

----------------------------------------------------------------------------
(* The sched-role (Schedule).                                                             *)

\* FrontPopLimit: as many as keep the holder's queue at Batch, and at least
\* min(ExecBatch, Batch) (BugNoReceiveMinimum: without that minimum).
\* code: sched/internal/sched_role.h FrontPopLimit: held >= options_.batch_size ? 0 : options_.batch_size - static_cast<std::size_t>(held);
\* code: sched/internal/sched_role.h FrontPopLimit: return std::max(room, std::min(options_.execute_batch_size, options_.batch_size));
FrontPopLimit(w) ==
  LET held == Len(home[w])
      room == IF held >= Batch THEN 0 ELSE Batch - held
  IN IF BugNoReceiveMinimum THEN room ELSE Max(room, Min(ExecBatch, Batch))

KeepSchedRest == UNCHANGED <<executing, wexec, cur, lookNow, parked, untimed, timed, nw,
                             exit, stopping, opc, lpc, posted, ran, nOutPosted, made, madeAt,
                             nPosted, nFinished>>

\* ClaimOneFromOthers / TakeOneFromOthers(lone_if_stuck = TRUE): another queue that holds
\* two or more, or a lone task the role made ready (received: the take's stamp limit, the
\* end of the owner's received stamps, admits only such a head), or, with lone_if_stuck, a
\* lone task whose queue nobody claimed from since w's last look at it; every such look
\* refreshes w's record. Took one: claimed, go to `found`; else to `none`.
\* (The order of the others is the code's index order; with two workers there is one.)
\* code: sched/internal/home_queues.h TakeOneFromOthers: stuck = size == 1 && self->seen_claimed[i] == claimed;
\* code: sched/internal/home_queues.h TakeOneFromOthers: self->seen_claimed[i] = claimed;
\* code: sched/internal/home_queues.h TakeOneFromOthers: const std::uint64_t below = size >= 2 || stuck
\* code: sched/internal/home_queues.h TakeOneFromOthers: : other->received_stamp_end.load(std::memory_order_relaxed);
\* code: sched/internal/home_queues.h ClaimOneFromOthers: self->claimed[0] = task;
Takeable(w, o, loneIfStuck) ==
  o # w /\ o < nw /\
  \/ Len(home[o]) >= 2
  \/ Len(home[o]) = 1 /\ recv[Head(home[o])]
  \/ loneIfStuck /\ Len(home[o]) = 1 /\ ~dirty[w][o]
ClaimOne(w, found, none) ==
  IF \E o \in Workers : Takeable(w, o, TRUE) /\ o < nw
    THEN LET o == CHOOSE o \in Workers : Takeable(w, o, TRUE) /\ o < nw IN
         /\ claimed' = Set(claimed, w, <<Head(home[o])>>)
         /\ home' = Set(home, o, Tail(home[o]))
         /\ dirty' = LET d == Claimed(o) IN
                     [d EXCEPT ![w] = [o2 \in Workers |-> IF o2 = w THEN d[w][o2] ELSE
                                                          IF o2 = o THEN TRUE ELSE FALSE]]
         /\ Goto(w, found)
    ELSE /\ dirty' = Set(dirty, w, [o \in Workers |-> FALSE])
         /\ Goto(w, none)
         /\ UNCHANGED <<claimed, home>>

\* One pass of Schedule's loop: exit_ set: return (exit); else receive up to
\* FrontPopLimit posts from the front queue into this worker's own queue (MakeReady ->
\* HomePush, one step for the pass). Nothing moved: return if this worker has tasks of its
\* own (its queue, or claimed), else claim one of another queue (ClaimOneFromOthers) and
\* return, or go and sleep (SchedSleepCheck).
\* code: sched/internal/sched_role.h Schedule: if (exit_.load(std::memory_order_acquire)) {
\* code: sched/internal/sched_role.h Schedule: for (const std::size_t limit = FrontPopLimit(worker); popped < limit; ++popped) {
\* code: sched/internal/sched_role.h MakeReady: HomePush(role_worker_, task);
\* code: sched/internal/sched_role.h MakeReady: role_worker_->received_stamp_end.store(stamp + 1, std::memory_order_relaxed);
\* code: sched/internal/sched_role.h Schedule: (home_queues_ ? worker->home->SeemsNonEmpty() : ready_.Count() > 0)) {
\* code: sched/internal/sched_role.h Schedule: if (ClaimOneFromOthers(worker)) return result;
SchedPass(w) ==
  /\ pc[w] = "sched"
  /\ IF exit
       THEN /\ Goto(w, "unlock_exit") /\ resWake' = Set(resWake, w, FALSE)
            /\ UNCHANGED <<home, claimed, front, readySignal, ioNotified, dirty, stamp, clock, recv>>
       ELSE LET k == Min(FrontPopLimit(w), Len(front)) IN
            IF k > 0
              THEN /\ front' = SubSeq(front, k + 1, Len(front))
                   /\ HomePushMany(w, SubSeq(front, 1, k), TRUE)
                   /\ resWake' = Set(resWake, w, k > 1 \/ Len(front) > k)
                   /\ Goto(w, "unlock")
                   /\ UNCHANGED <<claimed, ioNotified, dirty>>
            ELSE IF claimed[w] # <<>> \/ home[w] # <<>>
              THEN /\ Goto(w, "unlock") /\ resWake' = Set(resWake, w, front # <<>>)
                   /\ UNCHANGED <<home, claimed, front, readySignal, ioNotified, dirty, stamp,
                                  clock, recv>>
              ELSE /\ ClaimOne(w, "unlock", "role_rc1")
                   /\ resWake' = Set(resWake, w, FALSE)
                   /\ UNCHANGED <<front, readySignal, ioNotified, stamp, clock, recv>>
  /\ UNCHANGED role /\ KeepSchedRest

\* RecheckWhileOthersExecute (the idle holder's and Park's): a worker executes: a timed
\* sleep; else register untimed (seq_cst), and look again (seq_cst): now one executes:
\* deregister, timed; else untimed. `p` is "role" or "park".
\* code: sched/internal/idle.h RecheckWhileOthersExecute: if (executing_.load(std::memory_order_relaxed) == 0) {
\* code: sched/internal/idle.h RecheckWhileOthersExecute: untimed_sleepers_.fetch_add(1, std::memory_order_seq_cst);
Recheck1(w, p) ==
  /\ pc[w] = p \o "_rc1"
  /\ IF executing > 0
       THEN timed' = Set(timed, w, TRUE) /\ Goto(w, p \o "_sleep") /\ UNCHANGED untimed
       ELSE untimed' = untimed \cup {w} /\ Goto(w, p \o "_rc2") /\ UNCHANGED timed
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, lookNow, resWake, parked,
                 readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc, posted, ran,
                 nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* code: sched/internal/idle.h RecheckWhileOthersExecute: if (executing_.load(std::memory_order_seq_cst) == 0) return false;
\* code: sched/internal/idle.h RecheckWhileOthersExecute: untimed_sleepers_.fetch_sub(1, std::memory_order_relaxed);
Recheck2(w, p) ==
  /\ pc[w] = p \o "_rc2"
  /\ IF executing > 0
       THEN timed' = Set(timed, w, TRUE) /\ untimed' = untimed \ {w}
       ELSE timed' = Set(timed, w, FALSE) /\ UNCHANGED untimed
  /\ Goto(w, p \o "_sleep")
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, lookNow, resWake, parked,
                 readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc, posted, ran,
                 nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* The holder's sleep in the backend (io_.WaitUntil): ends on a Notify, or, timed, after
\* kLocalBatchRecheck; then deregisters if untimed and goes round Schedule's loop.
\* code: sched/internal/sched_role.h Schedule: io_.WaitUntil(until, io_sink);
\* code: sched/internal/sched_role.h Schedule: if (untimed) untimed_sleepers_.fetch_sub(1, std::memory_order_relaxed);
RoleWait(w) ==
  /\ pc[w] = "role_sleep"
  /\ ioNotified \/ timed[w]
  /\ ioNotified' = FALSE
  /\ untimed' = untimed \ {w} /\ timed' = Set(timed, w, FALSE)
  /\ Goto(w, "sched")
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, lookNow, resWake, parked,
                 readySignal, dirty, nw, exit, stopping, opc, lpc, posted, ran, nOutPosted,
                 stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* Unlock (seq_cst), then the seq_cst look at the front queue and WakeOne when the pass
\* made more than one task ready or left a backlog.
\* code: sched/internal/worker_loop.h WorkerMain: role_.Unlock();
\* code: sched/internal/worker_loop.h WorkerMain: if (result.exit) continue;  // leave at the loop top, with nothing held
Unlock(w) ==
  /\ pc[w] \in {"unlock", "unlock_exit"}
  /\ role' = NoWorker
  /\ Goto(w, IF pc[w] = "unlock" THEN "unlock_wake" ELSE "top")
  /\ UNCHANGED <<home, claimed, front, executing, wexec, cur, lookNow, resWake, parked,
                 untimed, timed, readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc,
                 posted, ran, nOutPosted, stamp, clock, recv, made, madeAt, nPosted,
                 nFinished>>

\* code: sched/internal/worker_loop.h WorkerMain: const bool more_to_schedule = result.backlog || !front_.IsEmpty(std::memory_order_seq_cst);
\* code: sched/internal/idle.h WakeOne: if (parked_.load(std::memory_order_seq_cst) == 0) return;
UnlockWake(w) ==
  /\ pc[w] = "unlock_wake"
  /\ readySignal' = (readySignal \/ ((resWake[w] \/ front # <<>>) /\ parked # {}))
  /\ resWake' = Set(resWake, w, FALSE)
  /\ Goto(w, "exec") /\ lookNow' = Set(lookNow, w, nw > 1)
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, parked, untimed, timed,
                 ioNotified, dirty, nw, exit, stopping, opc, lpc, posted, ran, nOutPosted,
                 stamp, clock, recv, made, madeAt, nPosted, nFinished>>

----------------------------------------------------------------------------
(* ExecuteBatch and NextHomeTask.                                                         *)

\* The next task, or the batch's end (at ExecBatch starts, or nothing found). Claimed
\* first; a lone worker claims up to ClaimCap of its own queue and runs the first; with
\* several workers: while look_now, the look MAY take the head of any other non-empty
\* queue (the stamp rule's choice, over-approximated) and looks again, or stops looking;
\* then its own head; with its own queue empty, TakeOneFromOthers (two or more).
\* code: sched/internal/home_queues.h NextHomeTask: if (worker->HasClaimed()) return worker->claimed[worker->claimed_head++ % kClaimCapacity];
\* code: sched/internal/home_queues.h NextHomeTask: worker->home->TakeFront(HomeRing<Task>::kAnyStamp, kClaimCapacity, false, batch);
\* code: sched/internal/home_queues.h NextHomeTask: if (Task* old = TakeOldTask(worker)) return old;  // and look again before the next
\* code: sched/internal/home_queues.h NextHomeTask: if (Task* task = worker->home->Pop()) {
\* code: sched/internal/home_queues.h NextHomeTask: return TakeOneFromOthers(worker, /*lone_if_stuck=*/false);
\* code: sched/internal/worker_loop.h ExecuteBatch: while (executed < options_.execute_batch_size) {
Took(w, t) ==
  /\ cur' = Set(cur, w, t)
  /\ Goto(w, IF wexec[w] = 0 THEN "count" ELSE "run")
NextTask(w) ==
  /\ pc[w] = "exec"
  /\ wexec[w] < ExecBatch
  /\ \/ /\ claimed[w] # <<>>
        /\ Took(w, Head(claimed[w])) /\ claimed' = Set(claimed, w, Tail(claimed[w]))
        /\ UNCHANGED <<home, dirty, lookNow>>
     \/ /\ claimed[w] = <<>> /\ nw = 1 /\ home[w] # <<>>
        /\ LET n == Min(ClaimCap, Len(home[w])) IN
           /\ Took(w, Head(home[w]))
           /\ claimed' = Set(claimed, w, SubSeq(home[w], 2, n))
           /\ home' = Set(home, w, SubSeq(home[w], n + 1, Len(home[w])))
        /\ dirty' = Claimed(w)
        /\ UNCHANGED lookNow
     \/ /\ claimed[w] = <<>> /\ nw > 1 /\ lookNow[w] /\ home[w] # <<>>
        /\ \E o \in Workers \ {w} :
             /\ home[o] # <<>> /\ o < nw
             /\ Took(w, Head(home[o])) /\ home' = Set(home, o, Tail(home[o]))
             /\ dirty' = Claimed(o)
        /\ UNCHANGED <<claimed, lookNow>>
     \/ /\ claimed[w] = <<>> /\ nw > 1 /\ home[w] # <<>>
        /\ Took(w, Head(home[w])) /\ home' = Set(home, w, Tail(home[w]))
        /\ lookNow' = Set(lookNow, w, FALSE) /\ dirty' = Claimed(w)
        /\ UNCHANGED claimed
     \/ /\ claimed[w] = <<>> /\ nw > 1 /\ home[w] = <<>>
        /\ \E o \in Workers : Takeable(w, o, FALSE) /\ o < nw
        /\ LET o == CHOOSE o \in Workers : Takeable(w, o, FALSE) /\ o < nw IN
           /\ Took(w, Head(home[o])) /\ home' = Set(home, o, Tail(home[o]))
           /\ dirty' = Claimed(o)
        /\ lookNow' = Set(lookNow, w, FALSE)
        /\ UNCHANGED claimed
  /\ UNCHANGED <<front, role, executing, wexec, resWake, parked, untimed, timed, readySignal,
                 ioNotified, nw, exit, stopping, opc, lpc, posted, ran, nOutPosted, stamp,
                 clock, recv, made, madeAt, nPosted, nFinished>>

\* Nothing found (or ExecBatch started): the batch ends; also after any start while the
\* role is free (the time budget, kHomeBatchBudget, and a due timer, TimerDue: both read
\* the clock, which the model leaves out, so either may end any batch). Having started
\* some: executing_ down, the finished count (CountFinished), back to the loop's top.
\* Started none: the role is free: the top (to take it); else Park.
\* code: sched/internal/worker_loop.h ExecuteBatch: CycleCount() - batch_start >= kHomeBatchBudget && !role_.IsLocked()) {
\* code: sched/internal/worker_loop.h ExecuteBatch: executing_.fetch_sub(1, std::memory_order_relaxed);
\* code: sched/internal/worker_loop.h WorkerMain: if (!role_.IsLocked()) continue;  // the role is free: go and take it
\* code: sched/internal/worker_loop.h WorkerMain: woke_from_park = Park(worker);
NothingToTake(w) ==
  /\ claimed[w] = <<>>
  /\ IF nw = 1 THEN home[w] = <<>>
     ELSE home[w] = <<>> /\ ~\E o \in Workers : Takeable(w, o, FALSE) /\ o < nw
BatchEnd(w) ==
  /\ pc[w] = "exec"
  /\ wexec[w] = ExecBatch \/ NothingToTake(w) \/ (wexec[w] > 0 /\ role = NoWorker)
  /\ IF wexec[w] > 0
       THEN /\ executing' = executing - 1
            /\ nFinished' = IF Harness = "stop" THEN nFinished + wexec[w] ELSE nFinished
            /\ Goto(w, "top")
       ELSE /\ UNCHANGED <<executing, nFinished>>
            /\ Goto(w, IF role = NoWorker THEN "top" ELSE "park_reg")
  /\ wexec' = Set(wexec, w, 0) /\ lookNow' = Set(lookNow, w, FALSE)
  /\ UNCHANGED <<home, claimed, front, role, cur, resWake, parked, untimed, timed,
                 readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc, posted, ran,
                 nOutPosted, stamp, clock, recv, made, madeAt, nPosted>>

\* The batch's first start: count in executing_ (seq_cst), then, if a task is left in
\* its own queue behind the one taken, WakeUntimedSleepers (seq_cst load of
\* untimed_sleepers_; Send and Notify). BugNoWakeUntimed, BugNoWakeAtBatchStart: no wake.
\* code: sched/internal/worker_loop.h ExecuteBatch: executing_.fetch_add(1, std::memory_order_seq_cst);
\* code: sched/internal/worker_loop.h ExecuteBatch: if (worker->home->SeemsNonEmpty()) WakeUntimedSleepers();
CountExecuting(w) ==
  /\ pc[w] = "count"
  /\ executing' = executing + 1
  /\ Goto(w, IF BugNoWakeUntimed \/ BugNoWakeAtBatchStart \/ home[w] = <<>> THEN "run"
             ELSE "wake_untimed")
  /\ UNCHANGED <<home, claimed, front, role, wexec, cur, lookNow, resWake, parked, untimed,
                 timed, readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc, posted,
                 ran, nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* code: sched/internal/idle.h WakeUntimedSleepers: if (untimed_sleepers_.load(std::memory_order_seq_cst) == 0) return;
\* code: sched/internal/idle.h WakeUntimedSleepers: io_.Notify();  // the role holder sleeps in the backend
WakeUntimed(w) ==
  /\ pc[w] = "wake_untimed"
  /\ IF untimed # {} THEN readySignal' = TRUE /\ ioNotified' = TRUE
                     ELSE UNCHANGED <<readySignal, ioNotified>>
  /\ Goto(w, "run")
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, lookNow, resWake, parked,
                 untimed, timed, dirty, nw, exit, stopping, opc, lpc, posted, ran, nOutPosted,
                 stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* The task runs (the chain wake folded in: with a worker parked and its own queue not
\* empty, it may wake one). Its run-now posts go to the tail of this worker's queue
\* (PostMarked's kHome branch; counted as posts before they are pushed), followed by
\* WakeUntimedSleepers (PostWake, a step of its own): RP re-posts itself and may first
\* spawn ONE; A, P and Long post their children (made then: the ghost madeAt); Long then
\* blocks.
\* code: sched/task_scheduler.h PostMarked: if (home_queues_ && task->Deadline() < TaskDeadline{} && !task->WaitsThroughStop()) {
\* code: sched/task_scheduler.h PostMarked: HomePush(worker, task);
\* code: sched/internal/worker_loop.h ExecuteBatch: if (parked_.load(std::memory_order_relaxed) > 0 && ReadySeemsNonEmpty(worker)) {
FinishTo(w, t, l) ==
  /\ wexec' = Set(wexec, w, wexec[w] + 1)
  /\ cur' = Set(cur, w, None)
  /\ ran' = IF t \in Counted THEN [ran EXCEPT ![t] = @ + 1] ELSE ran
  /\ Goto(w, l)
Finish(w, t) == FinishTo(w, t, "exec")
\* After the posts: WakeUntimedSleepers (PostWake; BugNoWakeUntimed: none), then Long
\* blocks; any other task's run ends (counted here, before the wake step: the ghost `ran`
\* only marks that it ran, and RP's re-post must not sit beside a running RP).
AfterPosts(w, t) ==
  IF t = "long"
    THEN Goto(w, IF BugNoWakeUntimed THEN "blocked" ELSE "post_wake")
         /\ UNCHANGED <<wexec, cur, ran>>
    ELSE FinishTo(w, t, IF BugNoWakeUntimed THEN "exec" ELSE "post_wake")
Run(w) ==
  /\ pc[w] = "run"
  /\ LET t == cur[w] IN
     IF t = "rp"
       THEN /\ \E spawn \in (IF Held("one") > 0 THEN {FALSE} ELSE {FALSE, TRUE}) :
               HomePushMany(w, IF spawn THEN <<"one", "rp">> ELSE <<"rp">>, FALSE)
            /\ AfterPosts(w, t)
            /\ UNCHANGED <<posted, nPosted, made, madeAt>>
     ELSE IF Children(t) # <<>>
       THEN /\ HomePushMany(w, Children(t), FALSE) /\ Made(Children(t))
            /\ posted' = [x \in Counted |-> IF x \in Range(Children(t)) THEN posted[x] + 1
                                                                      ELSE posted[x]]
            /\ nPosted' = IF Harness = "stop" THEN nPosted + Len(Children(t)) ELSE nPosted
            /\ AfterPosts(w, t)
     ELSE IF t = "long"
       THEN Goto(w, "blocked") /\ UNCHANGED <<wexec, cur, ran, home, readySignal, posted,
                                              nPosted, stamp, clock, recv, made, madeAt>>
     ELSE \* a task that posts nothing; the chain wake may send
          /\ Finish(w, t)
          /\ IF parked # {} /\ home[w] # <<>> THEN readySignal' \in {readySignal, TRUE}
                                              ELSE UNCHANGED readySignal
          /\ UNCHANGED <<home, posted, nPosted, stamp, clock, recv, made, madeAt>>
  /\ UNCHANGED <<claimed, front, role, executing, lookNow, resWake, parked, untimed, timed,
                 ioNotified, dirty, nw, exit, stopping, opc, lpc, nOutPosted, nFinished>>

\* code: sched/task_scheduler.h PostMarked: WakeUntimedSleepers();
PostWake(w) ==
  /\ pc[w] = "post_wake"
  /\ IF untimed # {} THEN readySignal' = TRUE /\ ioNotified' = TRUE
                     ELSE UNCHANGED <<readySignal, ioNotified>>
  /\ Goto(w, IF cur[w] = "long" THEN "blocked" ELSE "exec")
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, lookNow, resWake, parked,
                 untimed, timed, dirty, nw, exit, stopping, opc, lpc, posted, ran, nOutPosted,
                 stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* Long returns once LongMayReturn holds (it waits inside its run; its worker executes).
Unblock(w) ==
  /\ pc[w] = "blocked"
  /\ LongMayReturn(ran)
  /\ Finish(w, "long")
  /\ UNCHANGED <<home, claimed, front, role, executing, lookNow, resWake, parked, untimed,
                 timed, readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc, posted,
                 nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

----------------------------------------------------------------------------
(* Park.                                                                                  *)

\* code: sched/internal/idle.h Park: parked_.fetch_add(1, std::memory_order_seq_cst);
ParkRegister(w) ==
  /\ pc[w] = "park_reg"
  /\ parked' = parked \cup {w}
  /\ Goto(w, "park_check")
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, lookNow, resWake,
                 untimed, timed, readySignal, ioNotified, dirty, nw, exit, stopping, opc, lpc,
                 posted, ran, nOutPosted, stamp, clock, recv, made, madeAt, nPosted,
                 nFinished>>

\* The re-check, one step: exit_, its own queue, the front queue unless the role is held,
\* ClaimOneFromOthers (lone_if_stuck). Anything found: deregister and back to the top.
\* code: sched/internal/idle.h Park: const bool role_locked = role_.IsLocked(std::memory_order_seq_cst);
\* code: sched/internal/idle.h Park: const bool sleep = !exit_.load(std::memory_order_seq_cst) && !ReadySeemsNonEmpty(worker) &&
\* code: sched/internal/idle.h Park: (role_locked || front_.IsEmpty(std::memory_order_seq_cst)) &&
\* code: sched/internal/idle.h Park: !(home_queues_ ? ClaimOneFromOthers(worker) : TakeOverLocalBatches(worker));
ParkCheck(w) ==
  /\ pc[w] = "park_check"
  /\ IF exit \/ home[w] # <<>> \/ (role = NoWorker /\ front # <<>>) \/ claimed[w] # <<>>
       THEN /\ Goto(w, "top") /\ parked' = parked \ {w}
            /\ UNCHANGED <<home, claimed, dirty>>
       ELSE /\ ClaimOne(w, "top", "park_rc1")
            /\ parked' = IF pc'[w] = "top" THEN parked \ {w} ELSE parked
  /\ UNCHANGED <<front, role, executing, wexec, cur, lookNow, resWake, untimed, timed,
                 readySignal, ioNotified, nw, exit, stopping, opc, lpc, posted, ran,
                 nOutPosted, stamp, clock, recv, made, madeAt, nPosted, nFinished>>

\* ready_event_.ReceiveUntil: ends when the event is set (consuming it), or, timed, after
\* kLocalBatchRecheck; deregisters (untimed_sleepers_ if untimed, then parked_).
\* code: sched/internal/idle.h Park: ready_event_.ReceiveUntil(until);
\* code: sched/internal/idle.h Park: if (untimed) untimed_sleepers_.fetch_sub(1, std::memory_order_relaxed);
\* code: sched/internal/idle.h Park: parked_.fetch_sub(1, std::memory_order_relaxed);
ParkSleep(w) ==
  /\ pc[w] = "park_sleep"
  /\ readySignal \/ timed[w]
  /\ readySignal' = FALSE
  /\ untimed' = untimed \ {w} /\ timed' = Set(timed, w, FALSE) /\ parked' = parked \ {w}
  /\ Goto(w, "top")
  /\ UNCHANGED <<home, claimed, front, role, executing, wexec, cur, lookNow, resWake,
                 ioNotified, dirty, nw, exit, stopping, opc, lpc, posted, ran, nOutPosted,
                 stamp, clock, recv, made, madeAt, nPosted, nFinished>>

Worker(w) ==
  \/ TopExit(w) \/ TopRole(w)
  \/ SchedPass(w) \/ Recheck1(w, "role") \/ Recheck2(w, "role") \/ RoleWait(w)
  \/ Unlock(w) \/ UnlockWake(w)
  \/ NextTask(w) \/ BatchEnd(w) \/ CountExecuting(w) \/ WakeUntimed(w) \/ Run(w)
  \/ PostWake(w)
  \/ Unblock(w)
  \/ ParkRegister(w) \/ ParkCheck(w) \/ Recheck1(w, "park") \/ Recheck2(w, "park")
  \/ ParkSleep(w)

----------------------------------------------------------------------------
(* The client and the owner.                                                              *)

KeepWorkers == UNCHANGED <<pc, home, claimed, role, executing, wexec, cur, lookNow, resWake,
                           parked, untimed, timed, dirty, nw, stamp, clock, recv>>

\* "endless": the outside posts, in order, at any time. "idle": Long (with IdlePair, then
\* X). "stop": A, then Stop.
ClientPost ==
  /\ opc = "post"
  /\ CASE Harness = "endless" ->
            /\ PushFront(Outs[nOutPosted + 1])
            /\ posted' = [posted EXCEPT ![Outs[nOutPosted + 1]] = 1]
            /\ nOutPosted' = nOutPosted + 1
            /\ opc' = IF nOutPosted + 1 = NOut THEN "done" ELSE "post"
            /\ UNCHANGED nPosted
       [] Harness = "idle" ->
            /\ LET t == IF IdleSeeder THEN "s" ELSE IF posted["long"] = 0 THEN "long" ELSE "x" IN
               /\ PushFront(t) /\ posted' = [posted EXCEPT ![t] = 1]
               /\ opc' = IF IdlePair /\ t = "long" THEN "post" ELSE "done"
            /\ UNCHANGED <<nOutPosted, nPosted>>
       [] Harness = "stop" ->
            /\ PushFront("a") /\ posted' = [posted EXCEPT !["a"] = 1]
            /\ nPosted' = nPosted + 1
            /\ opc' = "stop_set" /\ UNCHANGED nOutPosted
  /\ UNCHANGED <<exit, stopping, lpc, ran, nFinished>> /\ KeepWorkers

\* Stop: stopping_, Notify and Send.
\* code: sched/task_scheduler.h Stop: stopping_.store(true, std::memory_order_release);
StopSet ==
  /\ opc = "stop_set" /\ opc' = "wait_empty"
  /\ stopping' = TRUE /\ ioNotified' = TRUE /\ readySignal' = TRUE
  /\ UNCHANGED <<front, exit, lpc, posted, ran, nOutPosted, made, madeAt, nPosted,
                 nFinished>>
  /\ KeepWorkers

\* WaitEmpty, one step: returns once every post counted has finished (its protocol is
\* TaskScheduler.tla's StopHarness).
\* code: sched/task_scheduler.h Stop: WaitEmpty(std::chrono::nanoseconds::max());
StopWaitEmpty ==
  /\ opc = "wait_empty" /\ nPosted = nFinished /\ opc' = "exit"
  /\ UNCHANGED <<front, exit, stopping, ioNotified, readySignal, lpc, posted, ran,
                 nOutPosted, made, madeAt, nPosted, nFinished>>
  /\ KeepWorkers

\* code: sched/task_scheduler.h Stop: exit_.store(true, std::memory_order_release);
StopExit ==
  /\ opc = "exit" /\ opc' = "join"
  /\ exit' = TRUE /\ ioNotified' = TRUE /\ readySignal' = TRUE
  /\ UNCHANGED <<front, stopping, lpc, posted, ran, nOutPosted, made, madeAt, nPosted,
                 nFinished>>
  /\ KeepWorkers

\* Join, TakeHomeLeftovers (the tasks left in every home queue, merged by stamp;
\* BugDrainFirstQueueOnly: worker 0's only), RetireWorkers (the workers and their queues go:
\* a task still in a queue not taken is lost), exit_ = false; then empty: return; else
\* StartWorkers(1), which pushes the leftovers into the fresh worker's empty home queue,
\* oldest first, with their stamps, and marks them made ready by the role
\* (RequeueHomeLeftovers: received_stamp_end), before its thread starts; and WaitEmpty
\* again. The front queue keeps its posts: the fresh worker's role receives them behind the
\* leftovers. BugLeftoversToFront (the code before the fix, DrainHomesToFront): the
\* leftovers go to the back of the front queue instead (one chain push with AfterFrontPush's
\* Notify), behind the outside posts that arrived since, made after them.
\* code: sched/task_scheduler.h Stop: for (Thread& thread : threads_) thread.join();
\* code: sched/task_scheduler.h Stop: if (home_queues_) TakeHomeLeftovers();
\* code: sched/internal/home_queues.h TakeHomeLeftovers: for (const auto& worker : workers_) {
\* code: sched/internal/home_queues.h TakeHomeLeftovers: std::stable_sort(home_leftovers_.begin(), home_leftovers_.end(),
\* code: sched/task_scheduler.h Stop: exit_.store(false, std::memory_order_relaxed);
\* code: sched/task_scheduler.h Stop: StartWorkers(1);
\* code: sched/task_scheduler.h StartWorkers: if (!home_leftovers_.empty()) RequeueHomeLeftovers(workers_.front().get());
\* code: sched/internal/home_queues.h RequeueHomeLeftovers: for (const auto& [stamp, task] : home_leftovers_) worker->home->Push(task, stamp);
\* code: sched/internal/home_queues.h RequeueHomeLeftovers: worker->received_stamp_end.store(home_leftovers_.back().first + 1, std::memory_order_relaxed);
Drained == IF BugDrainFirstQueueOnly THEN {0} ELSE Workers
Left == UNION {Range(home[w]) : w \in Drained}
SortedByStamp(S) ==
  CHOOSE s \in [1..Cardinality(S) -> S] :
    Range(s) = S /\ \A i, j \in DOMAIN s : i < j => stamp[s[i]] < stamp[s[j]]
StopJoin ==
  /\ opc = "join"
  /\ \A w \in Workers : pc[w] = "off"
  /\ IF BugLeftoversToFront
       THEN /\ front' = front \o SortedByStamp(Left)
            /\ ioNotified' = (ioNotified \/ (front = <<>> /\ Left # {}))
       ELSE UNCHANGED <<front, ioNotified>>
  /\ IF nPosted = nFinished
       THEN /\ opc' = "returned" /\ UNCHANGED <<pc, nw, dirty, lookNow, recv>>
            /\ home' = [w \in Workers |-> <<>>]
       ELSE /\ opc' = "wait_empty" /\ pc' = Set(pc, 0, "top") /\ nw' = 1
            /\ dirty' = [w \in Workers |-> [o \in Workers |-> FALSE]]
            /\ lookNow' = [w \in Workers |-> FALSE]
            /\ IF BugLeftoversToFront
                 THEN home' = [w \in Workers |-> <<>>] /\ UNCHANGED recv
                 ELSE /\ home' = [w \in Workers |-> IF w = 0 THEN SortedByStamp(Left)
                                                              ELSE <<>>]
                      /\ recv' = [t \in Tasks |-> t \in Left \/ recv[t]]
  /\ exit' = FALSE
  /\ UNCHANGED <<stopping, readySignal, lpc, posted, ran, nOutPosted, made, madeAt, nPosted,
                 nFinished>>
  /\ UNCHANGED <<claimed, role, executing, wexec, cur, resWake, parked, untimed, timed,
                 stamp, clock>>

\* code: sched/task_scheduler.h Stop: stopping_.store(false, std::memory_order_relaxed);  // not started again: restartable
StopReturn ==
  /\ opc = "returned" /\ opc' = "done" /\ stopping' = FALSE
  /\ UNCHANGED <<front, exit, ioNotified, readySignal, lpc, posted, ran, nOutPosted, made,
                 madeAt, nPosted, nFinished>>
  /\ KeepWorkers

\* The late poster: P, from another thread, at any time while Stop lasts (stopping_). With
\* LateAfter, then P2 (counted), at any time while Stop lasts once P's run has posted Q
\* (into its worker's home queue, stamped then): P2 is made after Q, and a lone worker must
\* not start it while Q waits (LoneWorkerKeepsPostOrder).
LatePost ==
  /\ lpc = "wait" /\ stopping /\ opc \notin {"returned", "done"}
  /\ PushFront("p") /\ posted' = [posted EXCEPT !["p"] = 1] /\ nPosted' = nPosted + 1
  /\ lpc' = IF LateAfter THEN "after" ELSE "done"
  /\ UNCHANGED <<exit, stopping, opc, ran, nOutPosted, nFinished>> /\ KeepWorkers
LatePostAfter ==
  /\ lpc = "after" /\ posted["q"] = 1 /\ stopping /\ opc \notin {"returned", "done"}
  /\ PushFront("p2") /\ posted' = [posted EXCEPT !["p2"] = 1] /\ nPosted' = nPosted + 1
  /\ lpc' = "done"
  /\ UNCHANGED <<exit, stopping, opc, ran, nOutPosted, nFinished>> /\ KeepWorkers

Client == ClientPost \/ StopSet \/ StopWaitEmpty \/ StopExit \/ StopJoin \/ StopReturn
Late == LatePost \/ LatePostAfter

\* At rest (the harness is over): every counted post ran and the client is done; the
\* "endless" harness never rests. Only then may nothing move (else: deadlock).
AllRan == \A t \in Counted : ran[t] = posted[t]
AtRest == Harness # "endless" /\ AllRan /\ opc = "done"

Next == \/ \E w \in Workers : Worker(w)
        \/ Client \/ Late
        \/ (AtRest /\ UNCHANGED vars)

Spec == Init /\ [][Next]_vars /\ \A w \in Workers : WF_vars(Worker(w))
        /\ WF_vars(Client) /\ WF_vars(Late)

----------------------------------------------------------------------------
(* Properties.                                                                            *)

\* The model's own consistency: the types, executing_ counts the workers inside an execution
\* batch (from their count to the batch's end), the role holder is in Schedule, a lone
\* worker's claims stay below ClaimCap, the sleepers are registered.
RoleLabels == {"sched", "role_rc1", "role_rc2", "role_sleep", "unlock", "unlock_exit"}
TypeOK ==
  /\ Range(front) \subseteq Tasks /\ role \in Workers \cup {NoWorker}
  /\ parked \subseteq Workers /\ untimed \subseteq Workers /\ recv \in [Tasks -> BOOLEAN]
  /\ \A w \in Workers :
       /\ Range(home[w]) \subseteq Tasks /\ Range(claimed[w]) \subseteq Tasks
       /\ cur[w] \in Tasks \cup {None} /\ wexec[w] \in 0..ExecBatch
       /\ Len(claimed[w]) < Max(ClaimCap, 2)
       /\ (pc[w] \in {"park_sleep", "role_sleep"} /\ ~timed[w]) => w \in untimed
       /\ pc[w] = "park_sleep" => w \in parked
  /\ executing = Cardinality({w \in Workers :
                               \/ wexec[w] > 0
                               \/ pc[w] \in {"wake_untimed", "run", "post_wake", "blocked"}})
  /\ role # NoWorker => pc[role] \in RoleLabels
  /\ \A w \in Workers : pc[w] \in RoleLabels => role = w

\* Exactly once: a task is in at most one place (a queue, claimed, or taken and running);
\* a counted post that has not run is in exactly one (nothing lost); none runs more often
\* than posted. RP is always somewhere (it re-posts itself from every run).
ExactlyOnce ==
  /\ \A t \in Tasks : Held(t) <= 1
  /\ \A t \in Counted : ran[t] <= posted[t] /\ (ran[t] < posted[t] <=> Held(t) = 1)
  /\ (Harness = "endless" => Held("rp") = 1)

\* No lost wakeup: never does a task wait in a queue while every worker is asleep with no
\* timeout and no wake pending for it, or blocked in a task (once every worker has left at
\* Stop's exit, the owner's join drains and starts a fresh worker: StopDrains, StopReturns).
Stuck(w) == \/ pc[w] = "park_sleep" /\ ~timed[w] /\ ~readySignal
            \/ pc[w] = "role_sleep" /\ ~timed[w] /\ ~ioNotified
            \/ pc[w] = "blocked" /\ ~LongMayReturn(ran)
WorkWaiting == front # <<>> \/ \E w \in Workers : home[w] # <<>> \/ claimed[w] # <<>>
NoLostWakeup ==
  WorkWaiting => \/ \E w \in Workers : pc[w] # "off" /\ ~Stuck(w)
                 \/ \A w \in Workers : pc[w] = "off"

\* Stop returned: every post made before or during it ran, every queue is empty and every
\* worker has left.
StopDrains ==
  opc \in {"returned", "done"} =>
    /\ AllRan /\ front = <<>> /\ role = NoWorker
    /\ \A w \in Workers : pc[w] = "off" /\ home[w] = <<>> /\ claimed[w] = <<>>

\* The post order a lone worker keeps (LateAfter; with NW = 2 only the fresh worker of
\* Stop's drain is alone): when a lone worker has taken a task t (to run, or running), no
\* run-now post (B, Q, Q2) made before t was made still waits, in the front queue, a home
\* queue or claimed. It holds because a run-now post is pushed at the tail of its worker's
\* home queue (stamped) when made, an outside post at the tail of the lone worker's queue
\* when the role receives it, after it was made, the lone worker claims and starts from its
\* head in order, and Stop's join puts the leftovers, merged by stamp, ahead of everything
\* the fresh worker receives. Only run-now posts are waited for: an outside post is stamped
\* only when received, so one made before a run-now post may rightly start after it. (A
\* post is made once and waits from then until taken, so this check of the states with t
\* taken is the same as a check at t's take.)
RunNowPosts == UNION {Range(Children(t)) : t \in Tasks}
Waits(u) == Held(u) > 0 /\ \A w \in Workers : cur[w] # u
LoneWorkerKeepsPostOrder ==
  LateAfter /\ nw = 1 =>
    \A w \in Workers : cur[w] # None =>
      \A u \in RunNowPosts : Waits(u) => ~(madeAt[u] < madeAt[cur[w]])

\* Liveness.
OutsidePostsStart == <>(\A o \in OutSet : ran[o] = 1)
EveryPostRuns == <>(AllRan /\ \A t \in Counted : posted[t] >= 1)
StopReturns == <>(opc = "done")
=============================================================================
