------------------------------ MODULE CoroMutex ------------------------------
(***************************************************************************)
(* coro::Mutex (coro/mutex.h) on the FIFO wait list of coro/wait_list.h   *)
(* and the epoch-checked wait of coro/internal/wait_word.h. The same       *)
(* algorithm, harness and properties as tla/spin/coro_mutex.pml.           *)
(*                                                                         *)
(* The mutex word state_ is `owner` (None = unlocked) plus `hasWaiters`    *)
(* (kHasWaiters), changed together by each CAS. The wait list is a FIFO   *)
(* sequence of coroutines behind `listLock`. Each coroutine has a wait     *)
(* word: `open` (kOpen), `why` (how the last wait closed) and `epoch`; its *)
(* node holds the epoch of the Waker that PrepareWait returned.            *)
(*                                                                         *)
(* Harness: each coroutine does Rounds times lock / critical section /     *)
(* unlock. Coroutines in LockCoros use Lock() (uncancellable); the others  *)
(* use TryLockUntil, whose wait can end at any moment by deadline, cancel  *)
(* or shutdown (Leave: the CAS that closes the open wait, racing with the  *)
(* granter's Waker::Wakeup), or which may find its deadline already passed *)
(* (DeadlinePassed: a try without waiting).                                *)
(*                                                                         *)
(* Action names follow the code: TryAcquireFast, TryAcquireLockedLoad/Cas  *)
(* (Mutex::TryAcquireLocked), PrepareWait (with WaitList::PushBack),       *)
(* WaitWoken, Leave (CoroutineState::FinishWait / RequestCancel), Finish*  *)
(* (ListWaitAwaiter::Finish: Remove + Mutex::WaiterLeftLocked), Unlock*    *)
(* (Mutex::Unlock's load and fast CAS), HandOff* (Mutex::HandOff: PopFront,*)
(* store the new owner, WakePopped = Waker::Wakeup = WakeEpoch).           *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Coros,      \* the coroutines (model values)
          LockCoros,  \* those that use Lock(); the others use TryLockUntil
          Rounds,     \* lock/unlock rounds per coroutine
          None,       \* model value: no owner / nobody holds the list lock
          BugHandOffNewest  \* BOOLEAN: seeded bug (Spin's BUG_HANDOFF_NEWEST): the
                            \*   hand-off pops the newest waiter instead of the oldest

ASSUME LockCoros \subseteq Coros /\ None \notin Coros /\ Rounds \in Nat
ASSUME BugHandOffNewest \in BOOLEAN

VARIABLES
  owner,       \* state_: the owning coroutine, or None
  hasWaiters,  \* state_: kHasWaiters
  listLock,    \* WaitList::mu_: holder or None
  list,        \* WaitList: Seq(Coros), oldest first
  open,        \* [Coros -> BOOLEAN]: the wait word's kOpen
  why,         \* [Coros -> {"none", "wakeup", "left"}]: reason of the last closed wait
  epoch,       \* [Coros -> Nat]: the wait word's epoch
  nodeEpoch,   \* [Coros -> Nat]: the epoch of the Waker in the coroutine's node
  pc,          \* [Coros -> program counter]
  snapOwner,   \* [Coros -> Coros \cup {None}]: TryAcquireLocked's loaded owner
  snapWaiters, \* [Coros -> BOOLEAN]: the loaded kHasWaiters (TryAcquireLocked, Unlock)
  popped,      \* [Coros -> Coros \cup {None}]: the node a HandOff is granting to
  round,       \* [Coros -> Nat]
  inCs,        \* ghost: coroutines in the critical section
  ticket,      \* ghost: [Coros -> Nat], queueing order of the current wait
  nextTicket,  \* ghost
  inAwaiter    \* ghost: [Coros -> BOOLEAN], the node (in the coroutine frame) exists

vars == <<owner, hasWaiters, listLock, list, open, why, epoch, nodeEpoch, pc, snapOwner,
          snapWaiters, popped, round, inCs, ticket, nextTicket, inAwaiter>>

Init ==
  /\ owner = None /\ hasWaiters = FALSE /\ listLock = None /\ list = <<>>
  /\ open = [c \in Coros |-> FALSE] /\ why = [c \in Coros |-> "none"]
  /\ epoch = [c \in Coros |-> 0] /\ nodeEpoch = [c \in Coros |-> 0]
  /\ pc = [c \in Coros |-> "start"]
  /\ snapOwner = [c \in Coros |-> None] /\ snapWaiters = [c \in Coros |-> FALSE]
  /\ popped = [c \in Coros |-> None] /\ round = [c \in Coros |-> 0]
  /\ inCs = {} /\ ticket = [c \in Coros |-> 0] /\ nextTicket = 1
  /\ inAwaiter = [c \in Coros |-> FALSE]

Goto(c, label) == pc' = [pc EXCEPT ![c] = label]

Remove(s, c) == SelectSeq(s, LAMBDA x : x # c)
InList(c) == \E i \in 1..Len(list) : list[i] = c

\* Variable groups for UNCHANGED.
waitWord == <<open, why, epoch, nodeEpoch>>
ghosts == <<inCs, ticket, nextTicket, inAwaiter>>
locals == <<snapOwner, snapWaiters, popped, round>>

----------------------------------------------------------------------------
(* Lock / TryLockUntil: ListWaitAwaiter. *)

StartRound(c) ==
  /\ pc[c] = "start"
  /\ Goto(c, IF round[c] < Rounds THEN "fast" ELSE "done")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, locals, ghosts>>

\* code: coro/mutex.h TryAcquireFast: return state_.compare_exchange_strong(expected, owner, std::memory_order_acquire,
TryAcquireFast(c) ==           \* CAS state_ 0 -> c, acquire
  /\ pc[c] = "fast"
  /\ IF owner = None
       THEN /\ owner' = c
            /\ Goto(c, "cs")
       ELSE /\ UNCHANGED owner
            /\ Goto(c, "slow")
  /\ UNCHANGED <<hasWaiters, listLock, list, waitWord, locals, ghosts>>

\* code: coro/wait_list.h await_ready: if (deadline_ != kTaskDeadlineInfinite && deadline_ <= TaskClock::now()) {
DeadlinePassed(c) ==           \* TryLockUntil with a past deadline: no wait, kDeadline
  /\ pc[c] = "slow"
  /\ c \notin LockCoros
  /\ Goto(c, "next")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, locals, ghosts>>

\* code: coro/wait_list.h await_ready: MutexLock lock(primitive_->wait_list_.lock());
LockList(c) ==                 \* MutexLock lock(wait_list_.lock())
  /\ pc[c] = "slow"
  /\ listLock = None
  /\ listLock' = c
  /\ Goto(c, "locked_load")
  /\ UNCHANGED <<owner, hasWaiters, list, waitWord, locals, ghosts>>

\* code: coro/mutex.h TryAcquireLocked: std::uint64_t state = state_.load(std::memory_order_relaxed);
TryAcquireLockedLoad(c) ==     \* relaxed load of state_
  /\ pc[c] = "locked_load"
  /\ snapOwner' = [snapOwner EXCEPT ![c] = owner]
  /\ snapWaiters' = [snapWaiters EXCEPT ![c] = hasWaiters]
  /\ Goto(c, "locked_cas")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, popped, round, ghosts>>

Reload(c) ==
  /\ snapOwner' = [snapOwner EXCEPT ![c] = owner]
  /\ snapWaiters' = [snapWaiters EXCEPT ![c] = hasWaiters]

\* code: coro/mutex.h TryAcquireLocked: if (state_.compare_exchange_weak(state, owner, std::memory_order_acquire,
\* code: coro/mutex.h TryAcquireLocked: if (state_.compare_exchange_weak(state, state | kHasWaiters, std::memory_order_relaxed,
TryAcquireLockedCas(c) ==      \* the CAS loop: 0 -> c, or s -> s | kHasWaiters
  /\ pc[c] = "locked_cas"
  /\ \/ /\ snapOwner[c] = None                       \* looked free: take it
        /\ IF owner = None /\ ~hasWaiters
             THEN owner' = c /\ Goto(c, "got_locked") /\ UNCHANGED <<snapOwner, snapWaiters>>
             ELSE Reload(c) /\ UNCHANGED <<owner, pc>>
        /\ UNCHANGED hasWaiters
     \/ /\ snapOwner[c] # None /\ snapWaiters[c]     \* already announced: queue
        /\ Goto(c, "prepare")
        /\ UNCHANGED <<owner, hasWaiters, snapOwner, snapWaiters>>
     \/ /\ snapOwner[c] # None /\ ~snapWaiters[c]    \* announce: set kHasWaiters
        /\ IF owner = snapOwner[c] /\ ~hasWaiters
             THEN hasWaiters' = TRUE /\ Goto(c, "prepare") /\ UNCHANGED <<snapOwner, snapWaiters>>
             ELSE Reload(c) /\ UNCHANGED <<hasWaiters, pc>>
        /\ UNCHANGED owner
  /\ UNCHANGED <<listLock, list, waitWord, popped, round, ghosts>>

GotLockedRelease(c) ==         \* got it under the list lock: release the list lock
  /\ pc[c] = "got_locked"
  /\ listLock' = None
  /\ Goto(c, "cs")
  /\ UNCHANGED <<owner, hasWaiters, list, waitWord, locals, ghosts>>

\* code: coro/wait_list.h await_ready: node_.waker = PrepareWait(mode_);
\* code: coro/wait_list.h await_ready: primitive_->wait_list_.PushBack(&node_);
PrepareWait(c) ==              \* PrepareWait (new epoch, open wait) + WaitList::PushBack
  /\ pc[c] = "prepare"
  /\ epoch' = [epoch EXCEPT ![c] = @ + 1]
  /\ open' = [open EXCEPT ![c] = TRUE]
  /\ nodeEpoch' = [nodeEpoch EXCEPT ![c] = epoch[c] + 1]
  /\ list' = Append(list, c)
  /\ ticket' = [ticket EXCEPT ![c] = nextTicket]
  /\ nextTicket' = nextTicket + 1
  /\ inAwaiter' = [inAwaiter EXCEPT ![c] = TRUE]
  /\ Goto(c, "queued_release")
  /\ UNCHANGED <<owner, hasWaiters, listLock, why, locals, inCs>>

QueuedRelease(c) ==
  /\ pc[c] = "queued_release"
  /\ listLock' = None
  /\ Goto(c, "wait")
  /\ UNCHANGED <<owner, hasWaiters, list, waitWord, locals, ghosts>>

WaitWoken(c) ==                \* resumed: the wait is closed (by the granter's Wakeup)
  /\ pc[c] = "wait"
  /\ ~open[c]
  /\ Goto(c, IF why[c] = "wakeup" THEN "woken" ELSE "finish_lock")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, locals, ghosts>>

Woken(c) ==                    \* kWakeup: we own the lock; the node is gone
  /\ pc[c] = "woken"
  /\ inAwaiter' = [inAwaiter EXCEPT ![c] = FALSE]
  /\ ticket' = [ticket EXCEPT ![c] = 0]
  /\ Goto(c, "cs")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, locals, inCs, nextTicket>>

Leave(c) ==                    \* deadline / cancel / shutdown: CAS closes the open wait
  /\ pc[c] = "wait"
  /\ c \notin LockCoros
  /\ open[c]
  /\ open' = [open EXCEPT ![c] = FALSE]
  /\ why' = [why EXCEPT ![c] = "left"]
  /\ Goto(c, "finish_lock")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, epoch, nodeEpoch, locals, ghosts>>

\* code: coro/wait_list.h Finish: MutexLock lock(primitive_->wait_list_.lock());
FinishLock(c) ==
  /\ pc[c] = "finish_lock"
  /\ listLock = None
  /\ listLock' = c
  /\ Goto(c, "finish")
  /\ UNCHANGED <<owner, hasWaiters, list, waitWord, locals, ghosts>>

\* code: coro/wait_list.h Finish: primitive_->wait_list_.Remove(&node_);
\* code: coro/mutex.h WaiterLeftLocked: if (wait_list_.empty()) state_.fetch_and(~kHasWaiters, std::memory_order_relaxed);
Finish(c) ==                   \* Remove if still linked, then WaiterLeftLocked
  /\ pc[c] = "finish"
  /\ IF InList(c)
       THEN /\ list' = Remove(list, c)
            /\ hasWaiters' = IF Remove(list, c) = <<>> THEN FALSE ELSE hasWaiters
       ELSE UNCHANGED <<list, hasWaiters>>
  /\ Goto(c, "finish_release")
  /\ UNCHANGED <<owner, listLock, waitWord, locals, ghosts>>

FinishRelease(c) ==            \* unlock the list; the awaiter (and its node) goes away
  /\ pc[c] = "finish_release"
  /\ listLock' = None
  /\ inAwaiter' = [inAwaiter EXCEPT ![c] = FALSE]
  /\ ticket' = [ticket EXCEPT ![c] = 0]
  /\ Goto(c, "next")
  /\ UNCHANGED <<owner, hasWaiters, list, waitWord, locals, inCs, nextTicket>>

----------------------------------------------------------------------------
(* Critical section and Unlock. *)

EnterCs(c) ==
  /\ pc[c] = "cs"
  /\ inCs' = inCs \cup {c}
  /\ Goto(c, "unlock_load")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, locals, ticket, nextTicket,
                 inAwaiter>>

\* code: coro/mutex.h Unlock: std::uint64_t state = state_.load(std::memory_order_relaxed);
UnlockLoad(c) ==               \* leave the critical section; relaxed load of state_
  /\ pc[c] = "unlock_load"
  /\ inCs' = inCs \ {c}
  /\ snapWaiters' = [snapWaiters EXCEPT ![c] = hasWaiters]
  /\ Goto(c, "unlock_cas")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, snapOwner, popped, round,
                 ticket, nextTicket, inAwaiter>>

\* code: coro/mutex.h Unlock: state_.compare_exchange_strong(state, 0, std::memory_order_release,
UnlockCas(c) ==                \* fast path: CAS c -> 0 (release), only without waiters
  /\ pc[c] = "unlock_cas"
  /\ IF ~snapWaiters[c] /\ owner = c /\ ~hasWaiters
       THEN owner' = None /\ Goto(c, "next")
       ELSE UNCHANGED owner /\ Goto(c, "handoff_lock")
  /\ UNCHANGED <<hasWaiters, listLock, list, waitWord, locals, ghosts>>

\* code: coro/mutex.h HandOff: MutexLock lock(wait_list_.lock());
HandOffLock(c) ==
  /\ pc[c] = "handoff_lock"
  /\ listLock = None
  /\ listLock' = c
  /\ Goto(c, "handoff_pop")
  /\ UNCHANGED <<owner, hasWaiters, list, waitWord, locals, ghosts>>

\* code: coro/mutex.h HandOff: while (internal::WaitNode* node = wait_list_.PopFront()) {
\* code: coro/mutex.h HandOff: state_.store(0, std::memory_order_release);
HandOffPop(c) ==               \* PopFront; an empty list stores 0 (release)
  /\ pc[c] = "handoff_pop"
  /\ IF list = <<>>
       THEN /\ owner' = None /\ hasWaiters' = FALSE
            /\ Goto(c, "handoff_release")
            /\ UNCHANGED <<list, popped>>
       ELSE /\ IF BugHandOffNewest
                 THEN /\ popped' = [popped EXCEPT ![c] = list[Len(list)]]
                      /\ list' = SubSeq(list, 1, Len(list) - 1)
                 ELSE /\ popped' = [popped EXCEPT ![c] = Head(list)]
                      /\ list' = Tail(list)
            /\ Goto(c, "handoff_store")
            /\ UNCHANGED <<owner, hasWaiters>>
  /\ UNCHANGED <<listLock, waitWord, snapOwner, snapWaiters, round, ghosts>>

\* code: coro/mutex.h HandOff: state_.store(node->request | (wait_list_.empty() ? 0 : kHasWaiters),
HandOffStore(c) ==             \* the popped waiter owns the lock from here on
  /\ pc[c] = "handoff_store"
  /\ owner' = popped[c]
  /\ hasWaiters' = (list # <<>>)
  /\ Goto(c, "wake_popped")
  /\ UNCHANGED <<listLock, list, waitWord, locals, ghosts>>

\* code: coro/mutex.h HandOff: if (internal::WaitList::WakePopped(node)) return;
WakePopped(c) ==               \* Waker::Wakeup: one CAS, only on the open wait of its epoch
  /\ pc[c] = "wake_popped"
  /\ LET n == popped[c] IN
       IF open[n] /\ epoch[n] = nodeEpoch[n]
         THEN /\ open' = [open EXCEPT ![n] = FALSE]
              /\ why' = [why EXCEPT ![n] = "wakeup"]
              /\ Goto(c, "handoff_release")
         ELSE /\ UNCHANGED <<open, why>>        \* it already left: try the next node
              /\ Goto(c, "handoff_pop")
  /\ popped' = [popped EXCEPT ![c] = None]
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, epoch, nodeEpoch, snapOwner,
                 snapWaiters, round, ghosts>>

HandOffRelease(c) ==
  /\ pc[c] = "handoff_release"
  /\ listLock' = None
  /\ Goto(c, "next")
  /\ UNCHANGED <<owner, hasWaiters, list, waitWord, locals, ghosts>>

NextRound(c) ==
  /\ pc[c] = "next"
  /\ round' = [round EXCEPT ![c] = @ + 1]
  /\ Goto(c, "start")
  /\ UNCHANGED <<owner, hasWaiters, listLock, list, waitWord, snapOwner, snapWaiters,
                 popped, ghosts>>

----------------------------------------------------------------------------
Coro(c) ==
  \/ StartRound(c) \/ TryAcquireFast(c) \/ DeadlinePassed(c) \/ LockList(c)
  \/ TryAcquireLockedLoad(c) \/ TryAcquireLockedCas(c) \/ GotLockedRelease(c)
  \/ PrepareWait(c) \/ QueuedRelease(c) \/ WaitWoken(c) \/ Woken(c) \/ Leave(c)
  \/ FinishLock(c) \/ Finish(c) \/ FinishRelease(c)
  \/ EnterCs(c) \/ UnlockLoad(c) \/ UnlockCas(c)
  \/ HandOffLock(c) \/ HandOffPop(c) \/ HandOffStore(c) \/ WakePopped(c) \/ HandOffRelease(c)
  \/ NextRound(c)

AllDone == \A c \in Coros : pc[c] = "done"

Next == (\E c \in Coros : Coro(c)) \/ (AllDone /\ UNCHANGED vars)

Spec == Init /\ [][Next]_vars /\ \A c \in Coros : WF_vars(Coro(c))

----------------------------------------------------------------------------
(* Properties. Deadlock checking catches a Lock() waiter left waiting forever. *)

TypeOK ==
  /\ owner \in Coros \cup {None} /\ hasWaiters \in BOOLEAN
  /\ listLock \in Coros \cup {None} /\ inCs \subseteq Coros

\* Mutual exclusion: at most one coroutine in the critical section, and it owns the lock.
MutualExclusion == \A c \in inCs : inCs = {c} /\ owner = c

\* The lock is never lost: with the list lock free, waiters imply an owner that knows of
\* them (its Unlock will hand off); when everybody is done the mutex is free and empty.
LockNeverLost ==
  /\ (listLock = None /\ list # <<>>) => (owner # None /\ hasWaiters)
  /\ AllDone => (owner = None /\ ~hasWaiters /\ list = <<>>)

\* No stale grant: a waiter that left by deadline/cancel does not own the lock when it
\* returns (Finish runs under the list lock, after any granter that popped it gave up).
NoStaleGrant == \A c \in Coros : pc[c] = "finish_release" => owner # c

\* No granter touches a node whose awaiter (frame) is gone.
NodesAlive == \A c \in Coros : (popped[c] # None => inAwaiter[popped[c]])
                               /\ \A i \in 1..Len(list) : inAwaiter[list[i]]

\* FIFO, no barging: taking a free lock happens only while nobody waits ...
NoBarging == [][\A c \in Coros : (owner = None /\ owner' = c) => \A d \in Coros : ~open[d]]_vars

\* ... and a hand-off goes to the oldest waiter that is still waiting.
HandOffToOldest ==
  [][\A n \in Coros : (open[n] /\ ~open'[n] /\ why'[n] = "wakeup") =>
       ~\E e \in Coros : e # n /\ open[e] /\ ticket[e] < ticket[n]]_vars

\* Liveness: every coroutine finishes all its rounds, so every waiter eventually gets the
\* lock or leaves by deadline/cancel.
AllFinish == <>AllDone
=============================================================================
