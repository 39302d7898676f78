---------------------------- MODULE TaskScheduler ----------------------------
(***************************************************************************)
(* BasicTaskScheduler (sched/task_scheduler.h) with the task state machine *)
(* of sched/task.h: the front -> wait/ready -> workers pipeline, the       *)
(* sched-role that any worker may take (RoleLock), deadlines that expire   *)
(* nondeterministically, Wakeup/Signal/Cancel racing with expiry and with  *)
(* execution, and the two wake-up channels: the ready event to parked     *)
(* workers and the front notify to the role holder sleeping in WaitUntil.  *)
(*                                                                         *)
(* Harness (as in tla/spin/task_scheduler.pml): task Blocker is posted     *)
(* "now" and its callback blocks until task Timer has run, so Timer needs  *)
(* a second worker. Timer is posted with a deadline from                   *)
(* TimerFirstDeadlines; waker 1 Signals it after that post; its first run  *)
(* re-posts it with PostWait; waker 2 Cancels it after the re-post.        *)
(*                                                                         *)
(* Local batches (LocalRepost = TRUE; the Spin model's -DLOCAL_REPOST;     *)
(* sched/internal/held_posts.h and docs/design.md, "The hot path every     *)
(* resume takes"; the ring in sched/internal/local_batch.h): a run-now     *)
(* post made by a task while                                               *)
(* every worker executes (executing = number of workers, read as its own   *)
(* step before the append, as AppendLocal's SomeWorkerMayBeIdle) goes into *)
(* its worker's local batch; when a worker may be idle it goes to the      *)
(* front queue, behind the poster's held posts (PublishOwnLocalToFront     *)
(* first: the per-poster order). `executing` counts the workers inside an  *)
(* execution batch (up at the first pop, down when the batch ends); a      *)
(* batch starts at most ExecBatch (execute_batch_size, E) tasks. At a task *)
(* boundary a worker with a local batch ends its batch when a worker may   *)
(* be idle or the ready queue looks empty (the relaxed look may also miss  *)
(* an idle worker: it may go on while tasks are ready). The owner          *)
(* publishes its batch at the top of the worker loop: as the role holder   *)
(* straight into the ready queue when the front queue is empty             *)
(* (MoveLocalToReady), else as one chain into the front queue              *)
(* (PublishOwnLocalToFront: notify if it was empty, wake a parked worker   *)
(* if the role is free). Every publication of a batch, the owner's and a   *)
(* take-over by another worker, holds the batch's claim (`taking`,         *)
(* taking_; the owner waits for it too) from before it reads the items     *)
(* until it has pushed them, and only then moves the batch's head past     *)
(* them: an item stays in the batch until it is published, and the owner's *)
(* later posts land behind it. An idle worker takes every other batch over *)
(* before it parks (after the park re-checks) and the role holder before   *)
(* it sleeps in WaitUntil (TakeOverLocalBatches, TryTakeOver: gives up     *)
(* when the claim is held; both sleeps may end whenever a worker executes: *)
(* kLocalBatchRecheck, BatchRecheck); and at the end of each of its        *)
(* execution batches that started a task, a busy worker looks at every     *)
(* other batch (TakeOverStaleBatches): it takes over (TakeOver: waits for  *)
(* the claim) a batch that stayed held, its head unchanged (no publication *)
(* of it ended), while it started E tasks since it first saw it held       *)
(* (`seen`). The order bound this gives, 3E starts of another worker, is   *)
(* derived at OvertakeBound. A worker that sees exit_ publishes its batch  *)
(* before it leaves (not reached: no harness has both Stop and local       *)
(* batches).                                                               *)
(*                                                                         *)
(* Harness (EndlessRepost = FALSE): the client posts Short (blocks until   *)
(* Timer ran once), Timer (due; its first run re-posts it to run at once)  *)
(* and Blocker (blocks until Timer ran twice), with Batch = 3, E = 3 and   *)
(* no wakers. The worker that ran Timer may go on with Blocker while its   *)
(* batch holds Timer's re-post: only the other worker's idle take-over     *)
(* moves it. BugNoTakeOver: the idle take-over does nothing (the seeded    *)
(* bug; Spin's BUG_NO_TAKEOVER).                                           *)
(*                                                                         *)
(* Harness EndlessRepost: Reposter and Long are both posted before         *)
(* the workers start; Reposter re-posts itself to run at once from every   *)
(* run, forever; Long posts X, then X2, and blocks until both have run.    *)
(* While X is held in the batch of Long's worker, that worker ends no      *)
(* execution batch and the other one, running Reposter, is never idle:     *)
(* only the busy take-over moves X, or Long's worker itself when the post  *)
(* of X2 finds a worker idle (PublishOwnLocalToFront before the push of    *)
(* X2): then Reposter runs on while that publisher is between its claim    *)
(* and its push (a thread the OS deschedules there). Checked: X runs and   *)
(* Long returns (HeldPostRuns, weak fairness), X starts before X2          *)
(* (PerPosterOrder), and Reposter starts at most 3E times between X's post *)
(* and X's start (BoundedOvertaking; E + 1 in this harness:                *)
(* HarnessOvertaking). BugNoBusyTakeOver: no TakeOverStaleBatches, the     *)
(* earlier rule (only idle workers take over): X waits forever.            *)
(* BugHeadBeforePublish: a publication moves the head past the items it    *)
(* reads at once, before its push (the take of the rule before, one CAS):  *)
(* while Long's worker is between the two, the busy looks find its batch   *)
(* empty and Reposter starts on past X, out of every queue.                *)
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
(* steps (SchedulePop, ReceiveFromFront, TryPendingToWaiting,              *)
(* WaitQueuePush, SchedLocal, PopExpired, TryWaitingToReady,               *)
(* FlushPending/ScheduleDecide, WaitUntil), Unlock, WakeOne,               *)
(* ExecuteBatchPop, ChainWake, BeginExecution (the relaxed load) and       *)
(* BeginExchange (the acquire exchange, only when bits were set),          *)
(* Callback, RepostDecide/RepostLocal/RepostFront (AppendLocal), BatchNext *)
(* (TimerDue, the E bound), AfterBatch (with TakeOverStaleBatches' looks), *)
(* CountFinished/Fin* (CountFinished), ExitUnlock/ExitSend,                *)
(* Park{Spin,Register,Recheck*,Receive,Done}, OwnPub/OwnPush/PubAfter/     *)
(* PubWake (PublishOwnLocalToFront, MoveLocalToReady: PublishAsOwner),     *)
(* TakeTake/TakePush (LocalBatch::TryTakeOver, TakeOver), TakeOverNext     *)
(* (TakeOverLocalBatches), Post/PushFront, TryWake.                        *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Workers,              \* model values, e.g. {w1, w2}
          Batch,                \* batch_size: front pops per role take, e.g. 1
          TimerFirstDeadlines,  \* subset of {"due", "future", "infinite"} (not LocalRepost)
          LocalRepost,          \* BOOLEAN: the local-batch harness (Spin: -DLOCAL_REPOST)
          ExecBatch,            \* with LocalRepost: execute_batch_size (E), at least 1:
                                \*   an execution batch starts at most E tasks, and it is
                                \*   the threshold of the busy take-over (elsewhere unused:
                                \*   there an execution batch is unbounded)
          EndlessRepost,        \* BOOLEAN, with LocalRepost: the endless re-poster harness
          BatchRecheck,         \* BOOLEAN: with LocalRepost, a park / role sleep may end
                                \*   while a worker executes (kLocalBatchRecheck)
          BugNoTakeOver,        \* BOOLEAN: seeded bug, the idle take-over publishes nothing
          BugNoBusyTakeOver,    \* BOOLEAN: seeded bug, no TakeOverStaleBatches: only an
                                \*   idle worker takes batches over (the earlier rule)
          BugHeadBeforePublish, \* BOOLEAN: seeded bug, a publication moves the batch's head
                                \*   past the items when it reads them, before its push
          StopHarness,          \* BOOLEAN: the Stop/drain/restart harness (see below)
          BugFinisherReadsWaitersFirst, \* BOOLEAN: seeded bug (StopHarness): CountFinished
                                \*   reads empty_waiters_ before it stores the finished count
          BugWaitEmptyReadsPostedFirst  \* BOOLEAN: seeded bug (StopHarness): AllFinished
                                \*   reads the posted counts before the finished counts

ASSUME LocalRepost \in BOOLEAN /\ BatchRecheck \in BOOLEAN /\ BugNoTakeOver \in BOOLEAN
ASSUME EndlessRepost \in BOOLEAN /\ BugNoBusyTakeOver \in BOOLEAN
ASSUME BugHeadBeforePublish \in BOOLEAN
ASSUME ExecBatch \in Nat /\ (LocalRepost => ExecBatch >= 1) /\ (EndlessRepost => LocalRepost)
ASSUME StopHarness \in BOOLEAN /\ BugFinisherReadsWaitersFirst \in BOOLEAN
ASSUME BugWaitEmptyReadsPostedFirst \in BOOLEAN /\ ~(StopHarness /\ LocalRepost)

\* Seeded bug, off here: Park's re-check after its registration skips the ready queue (the
\* sleep decision without !ReadySeemsNonEmpty). Not a CONSTANT, so the other configurations
\* need not name it; TaskSchedulerBugParkSkipsReadyRecheck.cfg overrides the definition.
BugParkSkipsReadyRecheck == FALSE

Blocker == 0
Timer == 1
Short == 2
NoTask == 3                     \* an executor's or receiver's task slot, empty (LocalRepost)
\* EndlessRepost: the same three task slots, other roles (Timer's is always due there).
Reposter == Timer               \* re-posts itself to run at once from every run, forever
Long == Blocker                 \* posts X and X2, then blocks until both have run
X == Short                      \* posted once, by Long, from inside its callback
X2 == 4                         \* posted once, by Long, right after X (a fourth task)
Tasks == CASE EndlessRepost -> {Long, Reposter, X, X2}
           [] LocalRepost -> {Blocker, Timer, Short}
           [] StopHarness -> {Timer}
           [] OTHER -> {Blocker, Timer}
Wakers == IF LocalRepost \/ StopHarness THEN {} ELSE {1, 2}
                                \* waker i acts once Timer's post i has begun
ClientPosts == CASE EndlessRepost -> <<Reposter, Long>>
                 [] LocalRepost -> <<Short, Timer, Blocker>>
                 [] StopHarness -> <<Timer, Timer>>
                 [] OTHER -> <<Blocker, Timer>>
\* StopHarness: the owner calls Stop after these posts (the second Stop finds no workers).
StopAfterPost == IF StopHarness THEN {1, 2} ELSE {}
W1 == CHOOSE w \in Workers : TRUE  \* worker index 0: the one StartWorkers(1) starts
NWorkers == Cardinality(Workers)
\* seen[w][o] (TakeOverStaleBatches): NoRecord, or the number of tasks w has started since
\* it recorded o's batch as held, with the head unchanged since (a publication of o's batch
\* that ends resets every record of it), counted up to E (all the rule asks).
NoRecord == -1
Min(a, b) == IF a < b THEN a ELSE b
Max(a, b) == IF a < b THEN b ELSE a

\* The order bound of a held post ("Order" in sched/task_scheduler.h; docs/design.md, "The
\* hot path every resume takes"), in task starts of another worker: 3E. The derivation, for a post
\* P appended to o's batch while worker w runs on (every step below is the spec's rule):
\*   1. w looks at o's batch at the end of each of its execution batches that started a
\*      task (TakeOverStaleBatches). Its first look after P's append comes at the end of the
\*      execution batch w is in: at most E starts.
\*   2. That look sees the batch held: P leaves it only with the head store that ends its
\*      publication, after the push (then P has joined). w either records the batch (count
\*      0) or finds a record with count c (c < E: else it takes over now) made while the
\*      head was where it is (a publication of o's batch that ends resets every record of
\*      it; one that ends without P began before P's append and, with two workers, is w's
\*      own take-over, after which w records anew: at the look of step 1). It takes over
\*      at the first of its batch ends at which the count reaches E: before that batch the
\*      count was at most E - 1, and the batch adds at most E, so at most (E - 1) + E =
\*      2E - 1 starts after the record.
\*   3. The take-over waits while another publication of o's batch holds the claim (the
\*      owner's, with P: w starts nothing meanwhile, however long that publisher stops),
\*      then pushes what is left: P has joined the FIFO. What w can start before P then is
\*      only what was ahead of P: in EndlessRepost, the one post of Reposter that may be
\*      queued ahead of it (Reposter is never queued twice).
\*   So w starts at most E + (2E - 1) + 1 = 3E tasks between P's append and P's start.
\*   (In EndlessRepost every execution batch of Reposter's worker before the take-over is
\*   one start, since the batch ends when the re-post is held and nothing else is ready, so
\*   the harness itself stays below 3E; the invariant checks the code's bound.)
OvertakeBound == 3 * ExecBatch

VARIABLES
  role, front, ready, pending, frontNotified, readySignal, parked,
  batch, executing, taking,                                       \* local batches; taking_
  state, deadline, queued, inWait,
  wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty,   \* [Workers -> ...]
  tvisit, took,                                                   \* [Workers -> ...]
  hold, early, seen,                                              \* [Workers -> ...]: the
                                            \*   items a publication read, not yet pushed
                                            \*   (still in the batch); batch_ended_early;
                                            \*   TakeOverStaleBatches' records (see there)
  cpc, cnext, cWasEmpty,                                          \* the client
  kpc, kOld, kWasEmpty,                                           \* [Wakers -> ...]
  posted, ran, running,                                           \* ghost
  overtakes,                                \* ghost (EndlessRepost): Reposter starts since
                                            \*   X's post, while X has not started
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
          taking, state, deadline, queued, inWait,
          wpc, wt, moved, popped, backlog, timers, executed, wWasEmpty, tvisit, took,
          hold, early, seen,
          cpc, cnext, cWasEmpty, kpc, kOld, kWasEmpty, posted, ran, running, overtakes,
          exit, stopping, stopGen, swept, cPosted, cPostedShared, cFinished, emptyWaiters,
          emptyMu, cvOwner, oFirst, wStop, uncounted, wSawWaiters>>

\* Groups for UNCHANGED.
stopShared == <<exit, stopping, stopGen, swept, cPosted, cPostedShared, cFinished,
                emptyWaiters, emptyMu, cvOwner, oFirst>>
stopWorker == <<wStop, uncounted, wSawWaiters>>

\* EndlessRepost: the client's two posts are made before the workers start (Post before
\* Start): both wait in the front queue, the first one's Notify pending, and the client is
\* done (its interleavings with the endless re-poster would only multiply the states; the
\* other harnesses check the client's post path).
PrePosted == IF EndlessRepost THEN {ClientPosts[i] : i \in DOMAIN ClientPosts} ELSE {}
Init ==
  /\ role = FALSE /\ ready = <<>> /\ pending = <<>>
  /\ front = IF EndlessRepost THEN ClientPosts ELSE <<>>
  /\ frontNotified = EndlessRepost /\ readySignal = FALSE /\ parked = 0
  /\ batch = [w \in Workers |-> <<>>] /\ executing = 0
  /\ state = [t \in Tasks |-> {}] /\ deadline = [t \in Tasks |-> "due"]
  /\ queued = [t \in Tasks |-> t \in PrePosted] /\ inWait = [t \in Tasks |-> FALSE]
  /\ wpc = [w \in Workers |-> "top"]
  /\ wt = [w \in Workers |-> IF LocalRepost \/ StopHarness THEN NoTask ELSE Blocker]
  /\ moved = [w \in Workers |-> 0] /\ popped = [w \in Workers |-> 0]
  /\ backlog = [w \in Workers |-> FALSE] /\ timers = [w \in Workers |-> FALSE]
  /\ executed = [w \in Workers |-> 0] /\ wWasEmpty = [w \in Workers |-> FALSE]
  /\ tvisit = [w \in Workers |-> {}] /\ took = [w \in Workers |-> FALSE]
  /\ hold = [w \in Workers |-> <<>>] /\ early = [w \in Workers |-> TRUE]
  /\ seen = [w \in Workers |-> [o \in Workers |-> NoRecord]]
  /\ taking = [w \in Workers |-> FALSE]
  /\ overtakes = 0
  /\ cpc = IF EndlessRepost THEN "done" ELSE "post"
  /\ cnext = (IF EndlessRepost THEN Len(ClientPosts) ELSE 1) /\ cWasEmpty = FALSE
  /\ kpc = [k \in Wakers |-> "wait"] /\ kOld = [k \in Wakers |-> {}]
  /\ kWasEmpty = [k \in Wakers |-> FALSE]
  /\ posted = [t \in Tasks |-> IF t \in PrePosted THEN 1 ELSE 0]
  /\ ran = [t \in Tasks |-> 0] /\ running = [t \in Tasks |-> 0]
  /\ exit = FALSE /\ stopping = FALSE /\ stopGen = 0 /\ swept = 0
  /\ cPosted = [w \in Workers |-> 0] /\ cPostedShared = 0 /\ cFinished = [w \in Workers |-> 0]
  /\ emptyWaiters = 0 /\ emptyMu = "none" /\ cvOwner = FALSE /\ oFirst = 0
  /\ wStop = [w \in Workers |-> FALSE] /\ uncounted = [w \in Workers |-> 0]
  /\ wSawWaiters = [w \in Workers |-> FALSE]

Set(f, x, v) == [f EXCEPT ![x] = v]
Range(s) == {s[i] : i \in DOMAIN s}

\* With LocalRepost, worker-local values are reset where they die (as the Spin model does):
\* fewer distinct states, the same behaviours. The harnesses without local batches keep
\* their values (their state spaces are small enough).
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

\* WakeOne: parked_ > 0 -> ready_event_.Send().
WakeOneEffect == readySignal' = (readySignal \/ parked > 0)

----------------------------------------------------------------------------
(* The client: Post of each task of ClientPosts in turn (Timer's first deadline from     *)
(* TimerFirstDeadlines, every other post due), each followed by PushFront's checks.      *)

ClientNext ==                  \* on to the next post, Stop (StopHarness), or done
  IF cnext \in StopAfterPost THEN cpc' = "stop_begin" /\ UNCHANGED cnext
  ELSE IF cnext = Len(ClientPosts) THEN cpc' = "done" /\ UNCHANGED cnext
  ELSE cpc' = "post" /\ cnext' = cnext + 1

KeepForClient == UNCHANGED <<role, ready, pending, parked, batch, executing, taking, state,
                             inWait, wpc, wt, moved, popped, backlog, timers, executed, hold,
                             early, seen, wWasEmpty, tvisit, took, kpc, kOld, kWasEmpty, ran,
                             running, overtakes>>
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

KeepOwnerRest == UNCHANGED <<role, front, ready, pending, parked, batch, executing, taking,
                             state, deadline, queued, inWait, wt, moved, popped, backlog,
                             timers, executed, hold, early, seen, wWasEmpty, tvisit, took,
                             cnext, cWasEmpty, kpc, kOld, kWasEmpty, posted, ran, running,
                             overtakes, swept, cPosted, cPostedShared, cFinished>>
                 /\ UNCHANGED stopWorker

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
  /\ UNCHANGED <<wpc, frontNotified, readySignal, exit, emptyWaiters, emptyMu, cvOwner,
                 oFirst>>
  /\ KeepOwnerRest

\* io_.Notify() and ready_event_.Send(): two flags that stay set until consumed, one step.
\* code: sched/task_scheduler.h Stop: io_.Notify();
\* code: sched/task_scheduler.h Stop: ready_event_.Send();
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
  /\ UNCHANGED <<role, front, ready, pending, parked, batch, executing, taking,
                 state, deadline, queued, inWait, wt, moved, popped, backlog,
                 timers, executed, hold, early, seen, wWasEmpty, tvisit, took, cWasEmpty,
                 kpc, kOld, kWasEmpty, posted, ran, running, overtakes, swept, cPosted,
                 cPostedShared, cFinished>> /\ UNCHANGED stopWorker

Owner == StopBegin \/ StopSet \/ StopNotify \/ WaitEmptyRegister \/ WaitEmptyLock
         \/ WaitEmptyReadFirst \/ WaitEmptyReadSecond \/ WaitEmptyWoken \/ WaitEmptyDone
         \/ StopExit \/ StopJoin \/ StopReturn

Client == ClientPost \/ ClientAfterPush \/ ClientWakeOne \/ Owner

----------------------------------------------------------------------------
(* Wakers: Signal (waker 1) and Cancel (waker 2) of Timer: Wake = TryWake + PushFront. *)

WakeBits(k) == IF k = 1 THEN {"woken", "signaled"} ELSE {"woken", "cancelled"}

KeepForWaker == UNCHANGED <<role, ready, pending, parked, batch, executing, taking, deadline,
                            queued, inWait, wpc, wt, moved, popped, backlog, timers, executed,
                            hold, early, seen, wWasEmpty, tvisit, took, cpc, cnext, cWasEmpty,
                            posted, ran, running, overtakes>>
                /\ UNCHANGED stopShared /\ UNCHANGED stopWorker

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

KeepWorkerLocals(w) == UNCHANGED <<wt, moved, popped, backlog, timers, executed, hold, early,
                                   seen, wWasEmpty, tvisit, took>>
KeepClientWakers == UNCHANGED <<cpc, cnext, cWasEmpty, kpc, kOld, kWasEmpty>>
KeepOthers == KeepClientWakers /\ UNCHANGED stopShared /\ UNCHANGED stopWorker
KeepTasks == UNCHANGED <<state, deadline, queued, inWait, posted, ran, running, overtakes>>
KeepLocal == UNCHANGED <<batch, executing, taking>>
KeepQueues == UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role>>
              /\ KeepLocal

\* Worker-local step that only reads shared state and jumps.
Jump(w, from, to) ==
  /\ wpc[w] = from /\ Goto(w, to)
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* The loop top: exit_ set (StopHarness): leave, with nothing held: the local batch goes to
\* the front queue first (PublishOwnLocalToFront; skipped when the batch is empty: its
\* IsEmptyForOwner makes it a no-op then; the claimed tasks of a single worker are not
\* modelled).
\* Else TryLock, after a batch that ended early or with a local batch (LocalRepost only: a
\* batch without the E bound always ends early); failing it with a local batch (the role
\* is held elsewhere): PublishOwnLocalToFront. (The exit load, the HasLocal read and the
\* TryLock are one step here: exit_ only goes from false to true while workers run.)
\* code: sched/internal/worker_loop.h WorkerMain: if (exit_.load(std::memory_order_acquire)) {
\* code: sched/internal/worker_loop.h WorkerMain: PublishOwnLocalToFront(worker);
\* code: sched/internal/worker_loop.h WorkerMain: : batch_ended_early || has_local;
TryLock(w) ==
  /\ wpc[w] = "top"
  /\ LET hasLocal == LocalRepost /\ batch[w] # <<>> IN
     IF exit THEN /\ Goto(w, IF batch[w] # <<>> THEN "exit_pub" ELSE "exit_send")
                  /\ UNCHANGED role
     ELSE IF (early[w] \/ hasLocal) /\ ~role THEN role' = TRUE /\ Goto(w, "sched_start")
     ELSE /\ UNCHANGED role
          /\ Goto(w, IF hasLocal THEN "own_pub" ELSE "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* The top of Schedule's loop: exit_ set: leave (Unlock, then out of the worker loop). Else
\* read stopping_; the first role take of a Stop generation sweeps the wait queue
\* (WakeWaitingForStop: PopAny, then the kWaiting -> kWaiting|kWoken CAS, which a waker may
\* have beaten; the wait queue is role-only state, so pop and CAS are one step here).
\* code: sched/internal/sched_role.h Schedule: if (exit_.load(std::memory_order_acquire)) {
\* code: sched/internal/sched_role.h Schedule: const bool stopping = stopping_.load(std::memory_order_acquire);
\* code: sched/internal/sched_role.h WakeWaitingForStop: if (generation == swept_generation_) return 0;
\* code: sched/internal/sched_role.h WakeWaitingForStop: while (Task* task = wait_.PopAny()) {
\* code: sched/internal/sched_role.h WakeWaitingForStop: if (!task->TryWaitingToReady()) continue;
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
  /\ UNCHANGED <<wt, backlog, timers, executed, hold, early, seen, wWasEmpty, tvisit, took>>
  /\ KeepClientWakers
  /\ UNCHANGED <<exit, stopping, stopGen, cPosted, cPostedShared, cFinished, emptyWaiters,
                 emptyMu, cvOwner, oFirst, uncounted, wSawWaiters>>
  /\ UNCHANGED <<deadline, queued, posted, ran, running, overtakes>>
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal

\* code: sched/internal/sched_role.h Schedule: Task* task = front_.Pop();
SchedulePop(w) ==              \* front_.Pop(), at most Batch per round
  /\ wpc[w] = "sched_pop"
  /\ IF popped[w] < Batch /\ front # <<>>
       THEN /\ wt' = Set(wt, w, Head(front)) /\ front' = Tail(front)
            /\ popped' = [popped EXCEPT ![w] = @ + 1]
            /\ Goto(w, "receive")
       ELSE /\ UNCHANGED <<wt, front, popped>>
            /\ Goto(w, IF LocalRepost THEN "sched_local" ELSE "pop_expired")
  /\ UNCHANGED <<ready, pending, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<moved, backlog, timers, executed, hold, early, seen, wWasEmpty, tvisit, took>>
  /\ KeepOthers
  /\ KeepTasks

\* code: sched/internal/sched_role.h MakeReady: ready_.PushPending(task);
MakeReady(w, t) ==             \* ready_.PushPending(t)
  /\ pending' = Append(pending, t)
  /\ moved' = [moved EXCEPT ![w] = @ + 1]

\* Woken, due, stopping (the StopHarness: Stop wakes a wait on arrival), or on to the
\* kWaiting CAS.
\* code: sched/internal/sched_role.h ReceiveFromFront: if (task->IsWoken()) {
\* code: sched/internal/sched_role.h ReceiveFromFront: if (wait_.Contains(task)) wait_.Remove(task);
\* code: sched/internal/sched_role.h ReceiveFromFront: if (stopping && !task->WaitsThroughStop()) {
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
  /\ UNCHANGED <<popped, backlog, timers, executed, hold, early, seen, wWasEmpty, tvisit,
                 took>>
  /\ KeepOthers /\ UNCHANGED <<state, deadline, queued, posted, ran, running, overtakes>>

\* code: sched/task.h TryPendingToWaiting: return state_.compare_exchange_strong(expected, kWaiting, std::memory_order_release,
TryPendingToWaiting(w) ==      \* CAS 0 -> kWaiting (release)
  /\ wpc[w] = "try_pending_to_waiting"
  /\ LET t == wt[w] IN
     IF state[t] = {}
       THEN state' = Set(state, t, {"waiting"}) /\ Goto(w, "wait_queue_push")
            /\ UNCHANGED <<pending, moved>>
       ELSE MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED state   \* a waker won
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, hold, early, seen, wWasEmpty, tvisit,
                 took>>
  /\ KeepOthers /\ UNCHANGED <<deadline, queued, inWait, posted, ran, running, overtakes>>

\* code: sched/internal/sched_role.h ReceiveFromFront: wait_.Push(task, deadline);
WaitQueuePush(w) ==
  /\ wpc[w] = "wait_queue_push"
  /\ inWait' = Set(inWait, wt[w], TRUE)
  /\ Goto(w, "sched_pop")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues
  /\ UNCHANGED <<state, deadline, queued, posted, ran, running, overtakes>>

\* The holder's own local batch (HasLocal): straight into the ready queue behind an empty
\* front queue (MoveLocalToReady; IsEmpty is exact for its consumer), else through the front
\* queue (PublishOwnLocalToFront). Both are the owner's publications below.
\* code: sched/internal/sched_role.h Schedule: if (worker->HasLocal()) {
SchedLocal(w) == Jump(w, "sched_local", IF batch[w] = <<>> THEN "pop_expired"
                                        ELSE IF front = <<>> THEN "move_pub"
                                        ELSE "sched_pub")

\* code: sched/internal/sched_role.h Schedule: wait_.NextDeadline() == kNoDeadline ? nullptr : wait_.PopExpired(now.Get());
PopExpired(w) ==               \* a finite deadline may have passed: take it out
  /\ wpc[w] = "pop_expired"
  /\ \/ /\ inWait[Timer] /\ deadline[Timer] = "future"
        /\ inWait' = Set(inWait, Timer, FALSE) /\ Goto(w, "try_waiting_to_ready")
     \/ /\ Goto(w, "decide") /\ UNCHANGED inWait
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues
  /\ UNCHANGED <<state, deadline, queued, posted, ran, running, overtakes>>

\* code: sched/internal/sched_role.h Schedule: if (!task->TryWaitingToReady()) continue;
\* code: sched/task.h TryWaitingToReady: return state_.compare_exchange_strong(expected, kWaiting | kWoken, std::memory_order_relaxed,
TryWaitingToReady(w) ==        \* CAS kWaiting -> kWaiting|kWoken; on failure a waker pushes it
  /\ wpc[w] = "try_waiting_to_ready"
  /\ IF state[Timer] = {"waiting"}
       THEN state' = Set(state, Timer, {"waiting", "woken"}) /\ MakeReady(w, Timer)
       ELSE UNCHANGED <<state, pending, moved>>
  /\ Goto(w, "decide")
  /\ UNCHANGED <<front, ready, frontNotified, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<wt, popped, backlog, timers, executed, hold, early, seen, wWasEmpty, tvisit,
                 took>>
  /\ KeepOthers /\ UNCHANGED <<deadline, queued, inWait, posted, ran, running, overtakes>>

\* Going to sleep (Park after its re-checks: p = "park"; the role holder before WaitUntil:
\* p = "role"). With local batches, TakeOverLocalBatches first (BugNoTakeOver: nothing).
EnterSleep(w, p) ==
  IF LocalRepost
    THEN /\ tvisit' = Set(tvisit, w, IF BugNoTakeOver THEN {} ELSE Workers \ {w})
         /\ Goto(w, p \o "_to_next")
    ELSE /\ UNCHANGED tvisit
         /\ Goto(w, IF p = "park" THEN "park_receive" ELSE "wait_until")

\* code: sched/internal/sched_role.h Schedule: result.backlog = !front_.IsEmpty();
\* code: sched/internal/sched_role.h Schedule: ready_.FlushPending();
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
  /\ UNCHANGED <<wt, moved, popped, executed, wWasEmpty, took, hold, early, seen>>
  /\ KeepOthers /\ KeepTasks

\* code: sched/internal/sched_role.h Schedule: io_.WaitUntil(until, io_sink);
WaitUntil(w) ==                \* io_.WaitUntil(next deadline): a notify, or the deadline
  /\ wpc[w] = "wait_until"
  /\ \/ frontNotified /\ frontNotified' = FALSE
     \/ inWait[Timer] /\ deadline[Timer] = "future" /\ UNCHANGED frontNotified
     \/ LocalRepost /\ BatchRecheck /\ executing > 0 /\ UNCHANGED frontNotified
                                                     \* kLocalBatchRecheck
  /\ Goto(w, "sched_start")
  /\ UNCHANGED <<front, ready, pending, readySignal, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/internal/worker_loop.h WorkerMain: role_.Unlock();
Unlock(w) ==                   \* role_.Unlock() (seq_cst)
  /\ wpc[w] = "unlock"
  /\ role' = FALSE
  /\ Goto(w, "release_check")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/internal/worker_loop.h WorkerMain: const bool more_to_schedule = result.backlog || !front_.IsEmpty(std::memory_order_seq_cst);
ReleaseCheck(w) ==             \* more_to_schedule = backlog || !front_.IsEmpty(seq_cst)
  /\ wpc[w] = "release_check"
  /\ LET more == backlog[w] \/ front # <<>>
     IN Goto(w, IF moved[w] > 1 \/ more \/ (moved[w] > 0 /\ timers[w]) THEN "wake_one"
                ELSE "exec")
  /\ moved' = Dead(moved, w, 0) /\ popped' = Dead(popped, w, 0)
  /\ backlog' = Dead(backlog, w, FALSE) /\ timers' = Dead(timers, w, FALSE)
  /\ UNCHANGED <<wt, executed, wWasEmpty, tvisit, took, hold, early, seen>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* code: sched/internal/idle.h WakeOne: if (parked_.load(std::memory_order_seq_cst) == 0) return;
\* code: sched/internal/idle.h WakeOne: ready_event_.Send();
WakeOne(w) ==
  /\ wpc[w] = "wake_one"
  /\ WakeOneEffect
  /\ Goto(w, "exec")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* consumer.Pop(); the first task of an execution batch counts the worker in `executing`
\* (`executed` is still 0 then: BatchNext counts the task after it).
\* code: sched/internal/worker_loop.h NextReadyTask: Task* const task = worker->consumer.Pop();
\* code: sched/internal/worker_loop.h ExecuteBatch: executing_.fetch_add(1, std::memory_order_relaxed);
ExecuteBatchPop(w) ==
  /\ wpc[w] = "exec"
  /\ IF ready # <<>>
       THEN /\ wt' = Set(wt, w, Head(ready)) /\ ready' = Tail(ready) /\ Goto(w, "chain_wake")
            /\ executing' = IF executed[w] > 0 THEN executing ELSE executing + 1
       ELSE UNCHANGED <<wt, ready, executing>> /\ Goto(w, "after_batch")
  /\ UNCHANGED <<front, pending, frontNotified, readySignal, parked, role, batch, taking>>
  /\ UNCHANGED <<moved, popped, backlog, timers, executed, hold, early, seen, wWasEmpty,
                 tvisit, took>>
  /\ KeepOthers /\ KeepTasks

\* code: sched/internal/worker_loop.h ExecuteBatch: if (parked_.load(std::memory_order_relaxed) > 0 && ReadySeemsNonEmpty(worker)) {
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
\* EndlessRepost: Reposter's post and run counts are kept as their difference (its posts
\* and runs never end): a start takes one from `posted` (RunsMatchPosts then sees a start
\* without a post as posted < 0). `overtakes` counts its starts between X's post and X's
\* start (up to OvertakeBound + 1, so that the seeded bug's state space stays finite) and
\* starts again from 0 when X starts (each value was checked before).
StartCallback(w, t) ==
  /\ queued' = Set(queued, t, FALSE)
  /\ IF EndlessRepost /\ t = Reposter
       THEN posted' = [posted EXCEPT ![t] = @ - 1] /\ UNCHANGED ran
       ELSE ran' = [ran EXCEPT ![t] = @ + 1] /\ UNCHANGED posted
  /\ running' = [running EXCEPT ![t] = @ + 1]
  /\ overtakes' = CASE EndlessRepost /\ t = Reposter /\ posted[X] = 1 /\ ran[X] = 0 ->
                        Min(overtakes + 1, OvertakeBound + 1)
                   [] EndlessRepost /\ t = X -> 0
                   [] OTHER -> overtakes
  /\ Goto(w, "callback")
BeginExecution(w) ==
  /\ wpc[w] = "begin_execution"
  /\ LET t == wt[w] IN
     IF state[t] = {}
       THEN StartCallback(w, t)
       ELSE Goto(w, "begin_exchange") /\ UNCHANGED <<queued, posted, ran, running, overtakes>>
  /\ UNCHANGED <<state, deadline, inWait>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues

\* code: sched/task.h BeginExecution: if (old != 0) old = state_.exchange(0, std::memory_order_acquire);
BeginExchange(w) ==
  /\ wpc[w] = "begin_exchange"
  /\ LET t == wt[w] IN
     /\ state' = Set(state, t, {})
     /\ StartCallback(w, t)
  /\ UNCHANGED <<deadline, inWait>>
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepQueues

\* Blocker waits for Timer (once; twice with LocalRepost), Short for Timer's first run.
\* Timer's first run re-posts it: PostWait, or (LocalRepost) to run at once.
\* EndlessRepost: Long waits for X and X2; Reposter re-posts itself from every run.
CallbackMayReturn(t) ==
  CASE EndlessRepost -> t = Long => ran[X] >= 1 /\ ran[X2] >= 1
    [] LocalRepost -> /\ t = Blocker => ran[Timer] >= 2
                      /\ t = Short => ran[Timer] >= 1
    [] OTHER -> t = Blocker => ran[Timer] >= 1
RepostsOnReturn(t) == IF EndlessRepost THEN t = Reposter ELSE t = Timer /\ ran[Timer] = 1
\* The post a task makes from inside its callback (the repost_* steps), and where the
\* callback goes on after it: Long posts X, then X2, at its start, then blocks in its
\* callback.
LongPosts(w) == EndlessRepost /\ wt[w] = Long /\ posted[X2] = 0
PostedTask(w) == IF EndlessRepost /\ wt[w] = Long THEN (IF posted[X] = 0 THEN X ELSE X2)
                 ELSE wt[w]
AfterPost(w) == IF EndlessRepost /\ wt[w] = Long THEN "callback" ELSE "batch_next"

\* The callback returns (StopHarness: one more execution for the batch end's CountFinished),
\* or (EndlessRepost) Long, at its start, posts X, then X2. The PostWait from inside (the
\* harnesses without local batches) is the PostMarked path that first publishes the poster's
\* held posts (PublishOwnLocalToFront): a no-op there, their local batches stay empty.
Callback(w) ==
  /\ wpc[w] = "callback"
  /\ LET t == wt[w] IN
     IF LongPosts(w)
       THEN /\ Goto(w, "repost_decide")
            /\ UNCHANGED <<running, uncounted, queued, deadline, posted, front, frontNotified,
                           wWasEmpty, cPosted, cPostedShared>>
       ELSE /\ CallbackMayReturn(t)
            /\ running' = [running EXCEPT ![t] = @ - 1]
            /\ IF t = Timer /\ ran[Timer] = 1 /\ ~LocalRepost
                 THEN /\ PostPushFrom(w, Timer, "infinite")       \* PostWait from inside
                      /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
                      /\ Goto(w, "repost_after_push")
                 ELSE /\ UNCHANGED <<queued, deadline, posted, front, frontNotified,
                                     wWasEmpty>>
                      /\ UNCHANGED <<cPosted, cPostedShared>>
                      /\ Goto(w, IF RepostsOnReturn(t) THEN "repost_decide" ELSE "batch_next")
            /\ uncounted' = IF StopHarness THEN [uncounted EXCEPT ![w] = @ + 1] ELSE uncounted
  /\ UNCHANGED <<ready, pending, readySignal, parked, role, state, inWait, ran, overtakes>>
  /\ KeepLocal
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, hold, early, seen, tvisit,
                 took>>
  /\ KeepClientWakers /\ UNCHANGED <<exit, stopping, stopGen, swept, cFinished, emptyWaiters,
                                      emptyMu, cvOwner, oFirst, wStop, wSawWaiters>>

\* A run-now post from inside a task (PostMarked -> AppendLocal): SomeWorkerMayBeIdle is
\* read first; no worker idle: into the local batch, else PublishOwnLocalToFront (the
\* poster's held posts go first: the owner's publication "append" below), then PushFront.
\* (The batch's capacity, 128, is not reached here: IsFull's publication is not modelled.)
\* code: sched/internal/held_posts.h AppendLocal: if (SomeWorkerMayBeIdle()) {
RepostDecide(w) == Jump(w, "repost_decide", IF executing = NWorkers THEN "repost_local"
                                            ELSE "append_pub")

\* code: sched/internal/held_posts.h AppendLocal: worker->local.Append(task);
\* code: sched/internal/local_batch.h Append: tail_.store(end + 1, std::memory_order_release);
RepostLocal(w) ==              \* MarkQueued + setters + the append (tail_ store)
  /\ wpc[w] = "repost_local"
  /\ LET t == PostedTask(w) IN
     /\ queued' = Set(queued, t, TRUE)
     /\ deadline' = Set(deadline, t, "due")
     /\ posted' = [posted EXCEPT ![t] = @ + 1]
     /\ batch' = [batch EXCEPT ![w] = Append(@, t)]
  /\ Goto(w, AfterPost(w))
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role, executing,
                 taking>>
  /\ UNCHANGED <<state, inWait, ran, running, overtakes>> /\ KeepWorkerLocals(w) /\ KeepOthers

\* code: sched/internal/held_posts.h AppendLocal: PushFront(task);
RepostFront(w) ==              \* a worker may be idle: the usual Post (PushFront)
  /\ wpc[w] = "repost_front"
  /\ PostPushFrom(w, PostedTask(w), "due")
  /\ wWasEmpty' = Set(wWasEmpty, w, front = <<>>)
  /\ Goto(w, "repost_after_push")
  /\ UNCHANGED <<ready, pending, readySignal, parked, role>> /\ KeepLocal
  /\ UNCHANGED <<state, inWait, ran, running, overtakes>> /\ KeepClientWakers
  /\ UNCHANGED <<exit, stopping, stopGen, swept, cFinished, emptyWaiters, emptyMu, cvOwner,
                 oFirst>> /\ UNCHANGED stopWorker
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, hold, early, seen, tvisit,
                 took>>

RepostAfterPush(w) ==
  /\ wpc[w] = "repost_after_push"
  /\ Goto(w, IF wWasEmpty[w] /\ ~role THEN "repost_wake_one" ELSE AfterPost(w))
  /\ wWasEmpty' = Dead(wWasEmpty, w, FALSE)
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, hold, early, seen, tvisit,
                 took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

RepostWakeOne(w) ==
  /\ wpc[w] = "repost_wake_one"
  /\ WakeOneEffect
  /\ Goto(w, AfterPost(w))
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* The task boundary (ExecuteBatch after Execute: `executed` counts the task). A local batch
\* (LocalRepost) ends the batch when a worker may be idle or the ready queue looks empty;
\* the relaxed look at `executing` may miss an idle worker (go on while tasks are ready).
\* TimerDue with the role free ends it too: with LocalRepost whenever Timer waits for a
\* future deadline (the harness's choice), without it (the harness with wakers) whenever
\* that deadline may have passed, i.e. either way. With LocalRepost the batch also ends
\* after E = ExecBatch starts (the loop's bound; elsewhere `executed` only says "some").
\* (A lone worker would claim its local batch in place, ClaimLocalInPlace; the harnesses
\* with local batches have two workers.)
\* code: sched/internal/worker_loop.h ExecuteBatch: const bool out_of_ready = !worker->HasClaimed() && !ReadySeemsNonEmpty(worker);
\* code: sched/internal/worker_loop.h ExecuteBatch: if (SomeWorkerMayBeIdle() ||
\* code: sched/internal/worker_loop.h ExecuteBatch: if (TimerDue() && !role_.IsLocked()) break;
\* code: sched/internal/worker_loop.h ExecuteBatch: while (executed < options_.execute_batch_size) {
BatchNext(w) ==
  /\ wpc[w] = "batch_next"
  /\ executed' = Set(executed, w, IF LocalRepost THEN executed[w] + 1 ELSE 1)
  /\ wt' = Dead(wt, w, NoTask)
  /\ IF LocalRepost
       THEN LET loc == batch[w] # <<>>
                idle == executing < NWorkers
                full == executed[w] + 1 >= ExecBatch
                endIt == (loc /\ (idle \/ ready = <<>>))
                         \/ (~role /\ inWait[Timer] /\ deadline[Timer] = "future")
                         \/ full
                missIdle == loc /\ idle /\ ready # <<>> /\ ~full
            IN \/ endIt /\ Goto(w, "after_batch")
               \/ (missIdle \/ ~endIt) /\ Goto(w, "exec")
       ELSE \/ ~role /\ inWait[Timer] /\ deadline[Timer] = "future" /\ Goto(w, "after_batch")
            \/ Goto(w, "exec")
  /\ UNCHANGED <<moved, popped, backlog, timers, wWasEmpty, tvisit, took, hold, early, seen>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* The batch ends: if it ran anything, executing_.fetch_sub and `started` += executed,
\* StopHarness: then CountFinished; LocalRepost with several workers: then
\* TakeOverStaleBatches (BugNoBusyTakeOver: not), then the loop top. Ran nothing: role free:
\* take it; a local batch (not reachable: only a task appends): publish it at the top; else
\* park. The batch's head and `started` act through `seen` only: a publication of o's batch
\* that ends (its head store, PubHeadStore) resets every record of o's batch (a record of
\* an older head and no record lead to the same next look: record anew), and w's starts
\* count up in its own records. batch_ended_early (`early`): ended before E starts (without
\* the E bound: always).
\* TakeOverStaleBatches' looks at the other workers' batches (LooksEmpty, then, if held,
\* Head: relaxed hints) are one step with the batch end here, for every other worker o:
\* o's batch empty: forget it; no record since its head last moved: record it (our count
\* starts at 0); recorded and we have started E tasks since: take it over (the stale_*
\* steps, then the loop top) and forget it; else look again at our next batch end. A batch
\* whose publication has read its items but not pushed them still looks held (the items
\* stay in it until the push, and the head with them): its look counts on, and once stale
\* the take-over waits for the claim (TakeTake).
\* code: sched/internal/worker_loop.h ExecuteBatch: executing_.fetch_sub(1, std::memory_order_relaxed);
\* code: sched/internal/worker_loop.h ExecuteBatch: worker->started += executed;
\* code: sched/internal/worker_loop.h WorkerMain: batch_ended_early = executed < options_.execute_batch_size;
\* code: sched/internal/worker_loop.h WorkerMain: if (local_batches_ && worker_count_ > 1) TakeOverStaleBatches(worker);
\* code: sched/internal/held_posts.h TakeOverStaleBatches: if (other->local.LooksEmpty()) {
\* code: sched/internal/local_batch.h LooksEmpty: return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
\* code: sched/internal/held_posts.h TakeOverStaleBatches: const std::uint32_t head = other->local.Head();
\* code: sched/internal/local_batch.h Head: std::uint32_t Head() const { return head_.load(std::memory_order_relaxed); }
\* code: sched/internal/held_posts.h TakeOverStaleBatches: if (!seen.held || seen.head != head) {
\* code: sched/internal/held_posts.h TakeOverStaleBatches: if (self->started - seen.started < options_.execute_batch_size) continue;
\* code: sched/internal/held_posts.h TakeOverStaleBatches: if (TakeOverLocalBatch(other, /*wait=*/true))
\* code: sched/internal/worker_loop.h WorkerMain: if (!role_.IsLocked()) continue;  // the role is free: go and take it
AfterBatch(w) ==
  /\ wpc[w] = "after_batch"
  /\ LET ran1 == executed[w] > 0
         looks == LocalRepost /\ ran1 /\ NWorkers > 1 /\ ~BugNoBusyTakeOver
         \* w's records after the batch's starts, and after its looks
         counted(o) == IF seen[w][o] = NoRecord THEN NoRecord
                       ELSE Min(ExecBatch, seen[w][o] + executed[w])
         takeIt(o) == batch[o] # <<>> /\ counted(o) # NoRecord /\ counted(o) >= ExecBatch
         looked(o) == CASE batch[o] = <<>> \/ takeIt(o) -> NoRecord
                        [] counted(o) = NoRecord -> 0
                        [] OTHER -> counted(o)
         stale == {o \in Workers \ {w} : looks /\ takeIt(o)}
     IN
     /\ executed' = Set(executed, w, 0)
     /\ executing' = IF ran1 THEN executing - 1 ELSE executing
     /\ early' = Set(early, w, ~LocalRepost \/ executed[w] < ExecBatch)
     /\ seen' = IF LocalRepost /\ ran1
                  THEN Set(seen, w, [o \in Workers |->
                         IF o = w THEN NoRecord ELSE IF looks THEN looked(o) ELSE counted(o)])
                  ELSE seen
     /\ tvisit' = IF stale # {} THEN Set(tvisit, w, stale) ELSE tvisit
     /\ Goto(w, IF StopHarness /\ ran1
                  THEN (IF BugFinisherReadsWaitersFirst THEN "fin_waiters_first"
                                                        ELSE "count_finished")
                ELSE IF stale # {} THEN "stale_take"
                ELSE IF ran1 \/ ~role \/ batch[w] # <<>> THEN "top" ELSE "park_spin")
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, wWasEmpty, took, hold>> /\ KeepOthers
  /\ KeepTasks /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role>>
  /\ UNCHANGED <<batch, taking>>

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

\* code: sched/internal/worker_loop.h WorkerMain: if (result.exit) continue;
ExitUnlock(w) ==               \* Schedule returned result.exit: Unlock, then the loop top
  /\ wpc[w] = "exit_unlock"
  /\ role' = FALSE
  /\ Goto(w, "top")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/internal/worker_loop.h WorkerMain: ready_event_.Send();
\* code: sched/internal/worker_loop.h WorkerMain: io_.Notify();
ExitSend(w) ==
  /\ wpc[w] = "exit_send"
  /\ readySignal' = TRUE /\ frontNotified' = TRUE
  /\ Goto(w, "off")
  /\ wt' = Set(wt, w, NoTask) /\ moved' = Set(moved, w, 0) /\ popped' = Set(popped, w, 0)
  /\ backlog' = Set(backlog, w, FALSE) /\ timers' = Set(timers, w, FALSE)
  /\ wWasEmpty' = Set(wWasEmpty, w, FALSE) /\ wStop' = Set(wStop, w, FALSE)
  /\ early' = Set(early, w, TRUE) /\ seen' = Set(seen, w, [o \in Workers |-> NoRecord])
  /\ UNCHANGED <<executed, tvisit, took, hold, uncounted, wSawWaiters>>
  /\ UNCHANGED <<front, ready, pending, parked, role>> /\ KeepLocal
  /\ KeepClientWakers /\ KeepTasks
  /\ UNCHANGED <<exit, stopping, stopGen, swept, cPosted, cPostedShared, cFinished,
                 emptyWaiters, emptyMu, cvOwner, oFirst>>

----------------------------------------------------------------------------
(* Park. *)

\* code: sched/internal/idle.h Park: if (SpinFor(options_.spin_before_park, [&] { return WorkVisible(worker); })) return false;
ParkSpin(w) ==                 \* SpinFor, then the yields (yields_before_park): each look
                               \* (WorkVisible) may find work and return early
  /\ wpc[w] = "park_spin"
  /\ \/ /\ ready # <<>> \/ (~role /\ front # <<>>)
        /\ Goto(w, "top")
     \/ Goto(w, "park_register")
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks /\ KeepQueues

\* code: sched/internal/idle.h Park: parked_.fetch_add(1, std::memory_order_seq_cst);
ParkRegister(w) ==             \* parked_.fetch_add(1, seq_cst)
  /\ wpc[w] = "park_register"
  /\ parked' = parked + 1
  /\ Goto(w, "park_recheck_ready")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* The re-checks: exit_ (StopHarness), the ready queue, the role, the front queue.
\* code: sched/internal/idle.h Park: const bool sleep = !exit_.load(std::memory_order_seq_cst) && !ReadySeemsNonEmpty(worker) &&
\* code: sched/internal/idle.h Park: const bool role_locked = role_.IsLocked(std::memory_order_seq_cst);
\* code: sched/internal/idle.h Park: (role_locked || front_.IsEmpty(std::memory_order_seq_cst)) &&
ParkRecheckReady(w) ==
  Jump(w, "park_recheck_ready",
       IF exit \/ (ready # <<>> /\ ~BugParkSkipsReadyRecheck) THEN "park_done"
       ELSE "park_recheck_role")

\* The re-checks found nothing: sleep (with LocalRepost: take the batches over first).
ParkRecheckSleep(w, from, sleep, elseTo) ==
  /\ wpc[w] = from
  /\ IF sleep THEN EnterSleep(w, "park") ELSE Goto(w, elseTo) /\ UNCHANGED tvisit
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, hold, early, seen, wWasEmpty,
                 took>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

ParkRecheckRole(w) == ParkRecheckSleep(w, "park_recheck_role", role, "park_recheck_front")
ParkRecheckFront(w) == ParkRecheckSleep(w, "park_recheck_front", front = <<>>, "park_done")

\* code: sched/internal/idle.h Park: ready_event_.ReceiveUntil(until);
ParkReceive(w) ==              \* ready_event_.ReceiveUntil(): a Send, or the re-check time
  /\ wpc[w] = "park_receive"
  /\ \/ readySignal /\ readySignal' = FALSE
     \/ LocalRepost /\ BatchRecheck /\ executing > 0 /\ UNCHANGED readySignal
                                                     \* kLocalBatchRecheck
  /\ Goto(w, "park_done")
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

\* code: sched/internal/idle.h Park: parked_.fetch_sub(1, std::memory_order_relaxed);
ParkDone(w) ==                 \* parked_.fetch_sub(1)
  /\ wpc[w] = "park_done"
  /\ parked' = parked - 1
  /\ Goto(w, "top")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, role>> /\ KeepLocal
  /\ KeepWorkerLocals(w) /\ KeepOthers /\ KeepTasks

----------------------------------------------------------------------------
(* Publishing local batches (LocalRepost only; sched/internal/local_batch.h). Every        *)
(* publication of a batch takes the batch's claim (`taking`, taking_), reads the items     *)
(* (`hold`), publishes them: as one chain into the front queue (PushChain: one exchange,   *)
(* the Notify if the queue was empty) or (MoveLocalToReady) into the ready queue; only     *)
(* then moves the head past them (they leave the batch) and releases the claim. After the  *)
(* release, AfterFrontPush's check of the role and a WakeOne.                              *)
(* The owner's publications (PublishAsOwner: nothing when IsEmptyForOwner; else it waits   *)
(* for the claim like any publisher, so a take-over that holds earlier posts of its own    *)
(* has pushed them before it publishes or posts anything more: the per-poster order), p =  *)
(*   "own"    PublishOwnLocalToFront at the loop top, the role held elsewhere;             *)
(*   "sched"  PublishOwnLocalToFront by the role holder, behind a non-empty front queue;   *)
(*   "move"   MoveLocalToReady by the role holder behind an empty front queue: into the    *)
(*            ready queue, or through the front queue if a taker's push made it non-empty; *)
(*   "append" PublishOwnLocalToFront in AppendLocal (a worker may be idle), before its     *)
(*            PushFront: the per-poster order;                                             *)
(*   "exit"   PublishOwnLocalToFront at the loop top when exit_ is set.                    *)
(* The take-overs of another worker o's batch, p =                                         *)
(*   "park", "role"  TakeOverLocalBatches: an idle worker before it parks / sleeps in the  *)
(*            role (TryTakeOver: gives up when the claim is held, its holder publishes;    *)
(*            BugNoTakeOver: nothing);                                                     *)
(*   "stale"  TakeOverStaleBatches at the end of an execution batch that started a task,   *)
(*            when its look finds o's batch held, its head unchanged, for E of our starts  *)
(*            (TakeOver: waits for the claim, then publishes what is left; BugNoBusyTake-  *)
(*            Over: no look).                                                              *)
(* Each publication is two steps, then AfterFrontPush (PubAfter, PubWake):                 *)
(*   - the claim with the read (OwnPub, TakeTake). Between the two in the code, the owner  *)
(*     may append, which the read sees as well had it come just before the claim, and      *)
(*     another publisher finds the claim held, as just after the read (looks read only the *)
(*     head, which neither moves). A claim that reads nothing is released in the same      *)
(*     step: held, it would only delay the owner (with two workers the other publisher);   *)
(*   - the push with the head store and the release (OwnPush, TakePush). A thread that     *)
(*     reads the head between the push and the head store (a busy look, the owner's        *)
(*     IsEmptyForOwner) finds the batch as just before the push: held, its head unchanged, *)
(*     and it at most waits for the claim and then finds those items gone, as after the    *)
(*     head store (also when it started one of the pushed items meanwhile); the release    *)
(*     only lets such a waiter go on.                                                      *)
(* Between the two steps the items are read but not pushed: a publisher that the OS        *)
(* deschedules stops there (any number of the others' steps). The items stay in the batch  *)
(* (`hold` is a copy), so a busy look counts on and, once stale, waits (TakeTake).         *)
(* BugHeadBeforePublish (the take of the rule before: one CAS moved the head, then the     *)
(* push): the head store comes with the read, and in the window the batch looks empty      *)
(* while the items are in no queue. The other workers are visited one by one (tvisit; the  *)
(* current one is PubTarget).                                                              *)

IsTakeOver(p) == p \in {"park", "role", "stale"}
OwnerPubs == {"own", "sched", "move", "append", "exit"}
PubTarget(w, p) == IF IsTakeOver(p) THEN CHOOSE o \in tvisit[w] : TRUE ELSE w
\* Where a publication goes on: the owner's to its caller; a take-over to the next worker.
NextVisit(w, p, o) == CASE p # "stale" -> p \o "_to_next"
                        [] tvisit[w] \ {o} = {} -> "top"
                        [] OTHER -> "stale_take"
PubDone(w, p) == CASE p = "own" -> "exec"
                   [] p \in {"sched", "move"} -> "pop_expired"
                   [] p = "append" -> "repost_front"
                   [] p = "exit" -> "exit_send"
                   [] OTHER -> NextVisit(w, p, PubTarget(w, p))
\* The end of a take-over's visit of o (its claim already released): o visited.
EndVisit(w, p) ==
  IF IsTakeOver(p) THEN tvisit' = Set(tvisit, w, tvisit[w] \ {PubTarget(w, p)})
                   ELSE UNCHANGED tvisit

KeepPubLocals == UNCHANGED <<wt, popped, backlog, timers, executed, wWasEmpty, early>>

\* The head store: the n oldest items leave o's batch, and with the head's move every
\* record of o's batch ends (TakeOverStaleBatches compares the head it recorded).
PubHeadStore(o, n) ==
  /\ batch' = [batch EXCEPT ![o] = SubSeq(@, n + 1, Len(@))]
  /\ seen' = [v \in Workers |-> [seen[v] EXCEPT ![o] = NoRecord]]

\* The claim taken (by w, of o's batch): the read. The items stay in the batch; with
\* BugHeadBeforePublish the head moves past them now.
PubRead(w, o) ==
  /\ taking' = Set(taking, o, TRUE)
  /\ hold' = Set(hold, w, batch[o])
  /\ IF BugHeadBeforePublish THEN PubHeadStore(o, Len(batch[o]))
                             ELSE UNCHANGED <<batch, seen>>

\* The publication of the items read: "move" behind an empty front queue: PushPending each;
\* else the chain into the front queue with the Notify when it was empty. Then the head
\* store (BugHeadBeforePublish: done at the read) and the release; AfterFrontPush's check
\* next when the front queue was empty (only then: `if (!was_empty) return`).
PubPush(w, p) ==
  LET o == PubTarget(w, p)
      b == hold[w]
      toReady == p = "move" /\ front = <<>>
  IN
  /\ wpc[w] = p \o "_push"
  /\ IF toReady
       THEN /\ pending' = pending \o b
            /\ moved' = [moved EXCEPT ![w] = @ + Len(b)]
            /\ UNCHANGED <<front, frontNotified>>
       ELSE /\ front' = front \o b
            /\ frontNotified' = (frontNotified \/ front = <<>>)
            /\ UNCHANGED <<pending, moved>>
  /\ IF BugHeadBeforePublish THEN UNCHANGED <<batch, seen>> ELSE PubHeadStore(o, Len(b))
  /\ taking' = Set(taking, o, FALSE)
  /\ hold' = Set(hold, w, <<>>)
  /\ IF ~toReady /\ front = <<>>
       THEN Goto(w, p \o "_after") /\ UNCHANGED tvisit
       ELSE Goto(w, PubDone(w, p)) /\ EndVisit(w, p)
  /\ UNCHANGED <<ready, readySignal, parked, role, executing, took>>
  /\ KeepPubLocals /\ KeepOthers /\ KeepTasks

\* The owner: nothing waits (IsEmptyForOwner): done, no claim. Else the claim (enabled only
\* while no take-over holds it: the owner's wait) and the read.
\* code: sched/internal/held_posts.h PublishOwnLocalToFront: worker->local.PublishAsOwner(
\* code: sched/internal/held_posts.h MoveLocalToReady: worker->local.PublishAsOwner([&](Task** tasks, std::uint32_t count) {
\* code: sched/internal/local_batch.h PublishAsOwner: if (IsEmptyForOwner()) return 0;
\* code: sched/internal/local_batch.h IsEmptyForOwner: bool IsEmptyForOwner() const { return end_ == head_.load(std::memory_order_acquire); }
\* code: sched/internal/local_batch.h Claim: while (taking_.exchange(true, std::memory_order_acquire)) {
\* code: sched/internal/local_batch.h Claim: while (taking_.load(std::memory_order_relaxed)) YieldThread();
\* code: sched/internal/local_batch.h PublishClaimed: const std::uint32_t head = head_.load(std::memory_order_relaxed);
\* code: sched/internal/local_batch.h PublishClaimed: std::uint32_t count = tail_.load(std::memory_order_acquire) - head;
\* code: sched/internal/local_batch.h PublishClaimed: items[i] = slots_[(head + i) % Capacity].load(std::memory_order_relaxed);
OwnPub(w, p) ==
  /\ wpc[w] = p \o "_pub"
  /\ IF batch[w] = <<>>
       THEN /\ Goto(w, PubDone(w, p))
            /\ UNCHANGED <<taking, hold, batch, seen>>
       ELSE /\ ~taking[w]
            /\ PubRead(w, w)
            /\ Goto(w, p \o "_push")
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role, executing>>
  /\ UNCHANGED <<moved, tvisit, took>> /\ KeepPubLocals /\ KeepOthers /\ KeepTasks

\* The owner's publication (PubPush above).
\* code: sched/internal/local_batch.h PublishClaimed: publish(items, count);
\* code: sched/internal/held_posts.h PublishOwnLocalToFront: [&](Task** tasks, std::uint32_t count) { was_empty = PushChain(tasks, count); });
\* code: sched/internal/held_posts.h MoveLocalToReady: if (!front_.IsEmpty()) {
\* code: sched/internal/held_posts.h MoveLocalToReady: was_empty = PushChain(tasks, count);
\* code: sched/internal/held_posts.h MoveLocalToReady: for (std::uint32_t i = 0; i < count; ++i) ready_.PushPending(tasks[i]);
\* code: sched/internal/held_posts.h PushChain: return front_.PushChain(tasks[0], tasks[count - 1]);
\* code: sched/internal/local_batch.h PublishClaimed: head_.store(head + count, std::memory_order_release);
\* code: sched/internal/local_batch.h Release: void Release() { taking_.store(false, std::memory_order_release); }
OwnPush(w, p) == PubPush(w, p)

\* A take-over: the idle one (TryTakeOver) gives up when the claim is held; the busy one
\* (TakeOver, "stale") waits for it. Claimed: nothing to read: release, next; else the read.
\* `took` remembers that TakeOverLocalBatches found some.
\* code: sched/internal/held_posts.h TakeOverLocalBatch: const bool published = wait ? owner->local.TakeOver(publish) : owner->local.TryTakeOver(publish);
\* code: sched/internal/local_batch.h TryTakeOver: if (taking_.exchange(true, std::memory_order_acquire)) return false;
\* code: sched/internal/local_batch.h Claim: while (taking_.exchange(true, std::memory_order_acquire)) {
\* code: sched/internal/local_batch.h Claim: while (taking_.load(std::memory_order_relaxed)) YieldThread();
\* code: sched/internal/local_batch.h PublishClaimed: std::uint32_t count = tail_.load(std::memory_order_acquire) - head;
\* code: sched/internal/local_batch.h PublishClaimed: if (count == 0) return 0;
TakeTake(w, p) ==
  /\ wpc[w] = p \o "_take"
  /\ LET o == PubTarget(w, p) IN
     /\ p = "stale" => ~taking[o]
     /\ IF taking[o] \/ batch[o] = <<>>
          THEN /\ tvisit' = Set(tvisit, w, tvisit[w] \ {o})
               /\ Goto(w, NextVisit(w, p, o))
               /\ UNCHANGED <<taking, batch, seen, hold, took>>
          ELSE /\ PubRead(w, o)
               /\ took' = IF p \in {"park", "role"} THEN Set(took, w, TRUE) ELSE took
               /\ Goto(w, p \o "_push")
               /\ UNCHANGED tvisit
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role, executing>>
  /\ UNCHANGED moved /\ KeepPubLocals /\ KeepOthers /\ KeepTasks

\* The take-over's publication (PubPush above): the chain into the front queue.
\* code: sched/internal/held_posts.h TakeOverLocalBatch: was_empty = PushChain(tasks, count) || was_empty;
\* code: sched/internal/local_batch.h PublishClaimed: head_.store(head + count, std::memory_order_release);
\* code: sched/internal/local_batch.h Release: void Release() { taking_.store(false, std::memory_order_release); }
TakePush(w, p) == PubPush(w, p)

\* AfterFrontPush after a push into an empty front queue (the owner's or a take-over's),
\* after the release.
\* code: sched/internal/held_posts.h PublishOwnLocalToFront: AfterFrontPush(was_empty);
\* code: sched/internal/held_posts.h TakeOverLocalBatch: AfterFrontPush(was_empty);
\* code: sched/internal/idle.h AfterFrontPush: if (!role_.IsLocked(std::memory_order_seq_cst) && parked_.load(std::memory_order_seq_cst) > 0) {
PubAfter(w, p) ==              \* the role free: WakeOne next
  /\ wpc[w] = p \o "_after"
  /\ IF ~role THEN Goto(w, p \o "_wake") /\ UNCHANGED tvisit
              ELSE Goto(w, PubDone(w, p)) /\ EndVisit(w, p)
  /\ UNCHANGED <<front, ready, pending, frontNotified, readySignal, parked, role, batch,
                 executing, taking>>
  /\ UNCHANGED <<moved, hold, took, seen>> /\ KeepPubLocals /\ KeepOthers /\ KeepTasks

PubWake(w, p) ==
  /\ wpc[w] = p \o "_wake"
  /\ WakeOneEffect
  /\ Goto(w, PubDone(w, p)) /\ EndVisit(w, p)
  /\ UNCHANGED <<front, ready, pending, frontNotified, parked, role, batch, executing, taking>>
  /\ UNCHANGED <<moved, hold, took, seen>> /\ KeepPubLocals /\ KeepOthers /\ KeepTasks

\* TakeOverLocalBatches' loop: the next other worker, or done: found some -> look again
\* (Park returns, Schedule continues); found none -> sleep (ReceiveUntil / WaitUntil).
\* code: sched/internal/held_posts.h TakeOverLocalBatches: if (other.get() != self && TakeOverLocalBatch(other.get(), /*wait=*/false)) {
TakeOverNext(w, p) ==
  /\ wpc[w] = p \o "_to_next"
  /\ IF tvisit[w] # {}
       THEN Goto(w, p \o "_take") /\ UNCHANGED took
       ELSE /\ took' = Set(took, w, FALSE)
            /\ Goto(w, CASE p = "park" -> IF took[w] THEN "park_done" ELSE "park_receive"
                         [] p = "role" -> IF took[w] THEN "sched_start" ELSE "wait_until")
  /\ UNCHANGED <<wt, moved, popped, backlog, timers, executed, wWasEmpty, tvisit, hold, early,
                 seen>>
  /\ KeepOthers /\ KeepTasks /\ KeepQueues

Publish(w) ==
  \/ \E p \in OwnerPubs : OwnPub(w, p) \/ OwnPush(w, p)
  \/ \E p \in OwnerPubs \cup {"park", "role", "stale"} : PubAfter(w, p) \/ PubWake(w, p)
  \/ \E p \in {"park", "role", "stale"} : TakeTake(w, p) \/ TakePush(w, p)
  \/ \E p \in {"park", "role"} : TakeOverNext(w, p)

Worker(w) ==
  \/ TryLock(w) \/ ScheduleStart(w) \/ SchedulePop(w) \/ ReceiveFromFront(w)
  \/ TryPendingToWaiting(w) \/ WaitQueuePush(w) \/ SchedLocal(w)
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
\* (EndlessRepost never rests: Reposter runs forever.)
AtRest == ~EndlessRepost /\ AllRan /\ cpc = "done" /\ \A k \in Wakers : kpc[k] = "done"

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

\* Never in two queues: at most once in front/pending/ready/the local batches/the items a
\* publication read and that are in no batch any more (only with BugHeadBeforePublish: else
\* they stay in their batch until pushed) together, and a task that is ready is not in the
\* wait queue (a woken waiting task may sit in the front queue and in the wait queue at
\* once: the sched-role removes it from the wait queue on receipt).
InNoBatch(t) == \A w \in Workers : t \notin Range(batch[w])
NeverInTwoQueues ==
  \A t \in Tasks :
    /\ Count(front, t) + Count(pending, t) + Count(ready, t)
         + Cardinality({w \in Workers : t \in Range(batch[w])})
         + Cardinality({w \in Workers : t \in Range(hold[w]) /\ InNoBatch(t)}) <= 1
    /\ \A w \in Workers : Count(batch[w], t) <= 1 /\ Count(hold[w], t) <= 1
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
     /\ \A w \in Workers : batch[w] = <<>> /\ hold[w] = <<>>
     /\ \A t \in Tasks : ~inWait[t] /\ ~queued[t]

\* Liveness: every post eventually runs.
EveryPostRuns == <>AllRan

\* StopHarness: every Stop returns (the owner gets to the end).
StopsReturn == <>(cpc = "done")

\* EndlessRepost (Reposter never ends, so EveryPostRuns cannot hold; the finite posts):
\* X, held in the local batch of Long's worker while Long blocks until it has run, starts,
\* and Long returns (so X2 has run too); under weak fairness of each worker, while Reposter
\* runs on the other.
HeldPostRuns == <>(ran[X] = 1 /\ ran[Long] = 1 /\ running[Long] = 0)

\* EndlessRepost: the order bound. Reposter's starts between X's post and X's start are at
\* most OvertakeBound = 3E (derived at OvertakeBound's definition).
BoundedOvertaking == overtakes <= OvertakeBound

\* EndlessRepost, the per-poster order: X2, posted by Long after X, does not start before X
\* (the start order is the ready queue's order here: with two workers only Reposter's worker
\* can start them, Long's worker is blocked in Long until both ran).
\* X2 is held behind X, or goes to the front queue after Long's worker has published X
\* (PublishOwnLocalToFront before its PushFront, waiting for a take-over that holds X).
PerPosterOrder == EndlessRepost => (ran[X2] >= 1 => ran[X] >= 1)

\* EndlessRepost, this harness's own bound, E + 1: while X is held, every execution batch of
\* Reposter's worker is one start (its re-post is held and nothing else is ready, so the
\* batch ends), so the first look comes after at most one start (the Reposter that worker
\* had popped when X was appended), the take-over after E more batches of one start (it
\* waits while Long's worker is publishing X itself, starting nothing), and then X is
\* ahead of Reposter (the taker's role take pops X from the front queue before it moves its
\* own held re-post). Reached (TLC finds a violation of overtakes <= E): it pins
\* the rule's threshold, where 3E would let an off-by-one or two through.
HarnessOvertaking == overtakes <= ExecBatch + 1

TypeOK ==
  /\ role \in BOOLEAN /\ parked \in 0..NWorkers /\ executing \in 0..NWorkers
  /\ \A t \in Tasks : state[t] \subseteq {"waiting", "woken", "signaled", "cancelled"}
  /\ \A w \in Workers : Range(batch[w]) \subseteq Tasks /\ tvisit[w] \subseteq Workers \ {w}
  /\ \A w \in Workers : Range(hold[w]) \subseteq Tasks /\ early[w] \in BOOLEAN
  /\ \A w \in Workers : taking[w] \in BOOLEAN /\ executed[w] \in 0..Max(ExecBatch, 1)
  /\ \A w, o \in Workers : seen[w][o] \in {NoRecord} \cup 0..ExecBatch
                           /\ (o = w => seen[w][o] = NoRecord)
  /\ overtakes \in 0..OvertakeBound + 1
  /\ executing = Cardinality({w \in Workers : executed[w] > 0 \/ wpc[w] \in
       {"chain_wake", "begin_execution", "begin_exchange", "callback", "repost_decide",
        "repost_local", "repost_front", "repost_after_push", "repost_wake_one",
        "append_pub", "append_push", "append_after", "append_wake", "batch_next"}})
=============================================================================
