------------------------------- MODULE Signal -------------------------------
(***************************************************************************)
(* AutoResetEvent (sync/auto_reset_event.h, sync/auto_reset_event.cc): a *)
(* one-bit event whose Send and Receive avoid the mutex on their fast      *)
(* paths (the module keeps the class's old name, Signal). Send exchanges the flag    *)
(* and, if it set it and sees a registered receiver, passes through the    *)
(* mutex and notifies one waiter. Receive clears a set flag without the    *)
(* mutex; otherwise it takes the mutex, registers in `waiters`, and loops: *)
(* re-check (exchange) the flag, else wait on the condition variable.      *)
(*                                                                         *)
(* Harness as in tla/spin/signal.pml: each sender publishes one unit of    *)
(* work and Sends; receivers Receive until all work is visible; the first  *)
(* to see it passes the exit on with one more Send. Action names follow    *)
(* the code: SendExchange, SendLoadWaiters, SendLock, SendNotify;          *)
(* ReceiveTryClear, ReceiveLock, ReceiveRegister, ReceiveRecheck,          *)
(* ReceiveWait (cv.wait), ReceiveWoken (re-acquire), ReceiveUnregister.    *)
(* This is the mutex + condition variable path (!FAIRSCHED_SIGNAL_USES_    *)
(* FUTEX); the Linux futex path is not modelled in this spec.           *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS Senders, Receivers,  \* disjoint sets of model values
          None,                \* model value: "nobody holds the mutex"
          BugNoRecheck         \* BOOLEAN: seeded bug (Spin's BUG_NO_RECHECK): a receiver
                               \*   registers and waits without re-checking the flag first

ASSUME Senders \cap Receivers = {} /\ None \notin Senders \cup Receivers
ASSUME BugNoRecheck \in BOOLEAN

Threads == Senders \cup Receivers

VARIABLES
  flag,       \* the bit
  waiters,    \* receivers registered in the slow path
  mutex,      \* holder of mu_, or "none"
  cvWaiting,  \* receivers inside cv.wait, not yet notified
  pc,         \* [Threads -> program counter]
  old,        \* [Threads -> BOOLEAN]: the last exchange's result
  work,       \* units of work published
  finished,   \* receivers that returned for good
  bitsSet,    \* ghost: Sends that turned the flag on
  bitsTaken   \* ghost: receives that turned it off

vars == <<flag, waiters, mutex, cvWaiting, pc, old, work, finished, bitsSet, bitsTaken>>

Init ==
  /\ flag = FALSE /\ waiters = 0 /\ mutex = None /\ cvWaiting = {}
  /\ pc = [t \in Threads |-> IF t \in Senders THEN "publish" ELSE "loop"]
  /\ old = [t \in Threads |-> FALSE]
  /\ work = 0 /\ finished = 0 /\ bitsSet = 0 /\ bitsTaken = 0

Goto(t, label) == pc' = [pc EXCEPT ![t] = label]

----------------------------------------------------------------------------
(* Send, as a sender's only step after publishing, or a receiver's exit. *)

Publish(t) ==
  /\ pc[t] = "publish"
  /\ work' = work + 1
  /\ Goto(t, "send_exchange")
  /\ UNCHANGED <<flag, waiters, mutex, cvWaiting, old, finished, bitsSet, bitsTaken>>

AfterSend(t) == IF t \in Senders THEN "done" ELSE "finish"

\* code: sync/auto_reset_event.cc Send: if (flag_.exchange(1, std::memory_order_seq_cst) != 0) {
SendExchange(t) ==             \* flag_.exchange(true, seq_cst)
  /\ pc[t] = "send_exchange"
  /\ flag' = TRUE
  /\ old' = [old EXCEPT ![t] = flag]
  /\ bitsSet' = IF flag THEN bitsSet ELSE bitsSet + 1
  /\ Goto(t, IF flag THEN AfterSend(t) ELSE "send_load_waiters")
  /\ UNCHANGED <<waiters, mutex, cvWaiting, work, finished, bitsTaken>>

\* code: sync/auto_reset_event.cc Send: if (waiters_.load(std::memory_order_seq_cst) == 0) return;
SendLoadWaiters(t) ==          \* waiters_.load(seq_cst) == 0: nobody can be asleep
  /\ pc[t] = "send_load_waiters"
  /\ Goto(t, IF waiters = 0 THEN AfterSend(t) ELSE "send_lock")
  /\ UNCHANGED <<flag, waiters, mutex, cvWaiting, old, work, finished, bitsSet, bitsTaken>>

\* code: sync/auto_reset_event.cc WakeOne: MutexLock lock(mu_);
SendLock(t) ==                 \* { MutexLock lock(mu_); }: lock and unlock
  /\ pc[t] = "send_lock"
  /\ mutex = None
  /\ Goto(t, "send_notify")
  /\ UNCHANGED <<flag, waiters, mutex, cvWaiting, old, work, finished, bitsSet, bitsTaken>>

\* code: sync/auto_reset_event.cc WakeOne: cv_.notify_one();
SendNotify(t) ==               \* cv_.notify_one()
  /\ pc[t] = "send_notify"
  /\ \/ /\ cvWaiting = {} /\ UNCHANGED cvWaiting
     \/ \E r \in cvWaiting : cvWaiting' = cvWaiting \ {r}
  /\ Goto(t, AfterSend(t))
  /\ UNCHANGED <<flag, waiters, mutex, old, work, finished, bitsSet, bitsTaken>>

----------------------------------------------------------------------------
(* Receivers. *)

ReceiveLoop(r) ==              \* harness: stop once all work is visible
  /\ pc[r] = "loop"
  /\ Goto(r, IF work = Cardinality(Senders) THEN "send_exchange" ELSE "try_clear")
  /\ UNCHANGED <<flag, waiters, mutex, cvWaiting, old, work, finished, bitsSet, bitsTaken>>

\* code: sync/auto_reset_event.h TryClear: if (flag_.load(std::memory_order_relaxed) == 0) return false;
\* code: sync/auto_reset_event.h TryClear: return flag_.exchange(0, std::memory_order_acquire) != 0;
ReceiveTryClear(r) ==          \* TryClear: exchange(false) if the relaxed load saw it set
  /\ pc[r] = "try_clear"
  /\ flag' = FALSE
  /\ bitsTaken' = IF flag THEN bitsTaken + 1 ELSE bitsTaken
  /\ Goto(r, IF flag THEN "loop" ELSE "lock")
  /\ UNCHANGED <<waiters, mutex, cvWaiting, old, work, finished, bitsSet>>

\* code: sync/auto_reset_event.cc ReceiveUntil: MutexLock lock(mu_); // held from registration into the wait (see signal.h)
ReceiveLock(r) ==
  /\ pc[r] = "lock"
  /\ mutex = None
  /\ mutex' = r
  /\ Goto(r, "register")
  /\ UNCHANGED <<flag, waiters, cvWaiting, old, work, finished, bitsSet, bitsTaken>>

\* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_add(1, std::memory_order_seq_cst);
ReceiveRegister(r) ==          \* waiters_.fetch_add(1, seq_cst)
  /\ pc[r] = "register"
  /\ waiters' = waiters + 1
  /\ Goto(r, IF BugNoRecheck THEN "wait" ELSE "recheck")
  /\ UNCHANGED <<flag, mutex, cvWaiting, old, work, finished, bitsSet, bitsTaken>>

\* code: sync/auto_reset_event.cc ReceiveUntil: if (flag_.exchange(0, std::memory_order_seq_cst) != 0) {
ReceiveRecheck(r) ==           \* flag_.exchange(false, seq_cst) under the mutex
  /\ pc[r] = "recheck"
  /\ flag' = FALSE
  /\ bitsTaken' = IF flag THEN bitsTaken + 1 ELSE bitsTaken
  /\ Goto(r, IF flag THEN "unregister" ELSE "wait")
  /\ UNCHANGED <<waiters, mutex, cvWaiting, old, work, finished, bitsSet>>

\* code: sync/auto_reset_event.cc ReceiveUntil: cv_.wait(lock);
ReceiveWait(r) ==              \* cv_.wait: releases the mutex and blocks, atomically
  /\ pc[r] = "wait"
  /\ cvWaiting' = cvWaiting \cup {r}
  /\ mutex' = None
  /\ Goto(r, "woken")
  /\ UNCHANGED <<flag, waiters, old, work, finished, bitsSet, bitsTaken>>

ReceiveWoken(r) ==             \* notified: re-acquire the mutex, re-check
  /\ pc[r] = "woken"
  /\ r \notin cvWaiting
  /\ mutex = None
  /\ mutex' = r
  /\ Goto(r, "recheck")
  /\ UNCHANGED <<flag, waiters, cvWaiting, old, work, finished, bitsSet, bitsTaken>>

\* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_sub(1, std::memory_order_relaxed);
ReceiveUnregister(r) ==        \* waiters_.fetch_sub, unlock, return true
  /\ pc[r] = "unregister"
  /\ waiters' = waiters - 1
  /\ mutex' = None
  /\ Goto(r, "loop")
  /\ UNCHANGED <<flag, cvWaiting, old, work, finished, bitsSet, bitsTaken>>

Finish(r) ==
  /\ pc[r] = "finish"
  /\ finished' = finished + 1
  /\ Goto(r, "done")
  /\ UNCHANGED <<flag, waiters, mutex, cvWaiting, old, work, bitsSet, bitsTaken>>

----------------------------------------------------------------------------
Thread(t) ==
  \/ Publish(t) \/ SendExchange(t) \/ SendLoadWaiters(t) \/ SendLock(t) \/ SendNotify(t)
  \/ ReceiveLoop(t) \/ ReceiveTryClear(t) \/ ReceiveLock(t) \/ ReceiveRegister(t)
  \/ ReceiveRecheck(t) \/ ReceiveWait(t) \/ ReceiveWoken(t) \/ ReceiveUnregister(t)
  \/ Finish(t)

AllDone == \A t \in Threads : pc[t] = "done"

Next == (\E t \in Threads : Thread(t)) \/ (AllDone /\ UNCHANGED vars)

Spec == Init /\ [][Next]_vars /\ \A t \in Threads : WF_vars(Thread(t))

----------------------------------------------------------------------------
(* Properties. Deadlock checking catches a receiver left in cv.wait forever. *)

\* Each set bit is consumed at most once.
BitsConsumedOnce == bitsTaken <= bitsSet

\* No lost wakeup: while a receiver sleeps in cv.wait with the flag set, some other thread
\* is still awake and on its way (a sender about to notify, or a receiver that will
\* consume the flag or send once more); deadlock checking covers the rest.
Asleep(r) == pc[r] = "woken" /\ r \in cvWaiting
NoSleepingOnSetFlag ==
  (flag /\ \E r \in Receivers : Asleep(r)) =>
     \E t \in Threads : pc[t] \notin {"done", "finish"} /\ ~Asleep(t)

TypeOK == flag \in BOOLEAN /\ waiters \in Nat /\ cvWaiting \subseteq Receivers

\* Liveness: every receiver returns for good.
AllFinish == <>(finished = Cardinality(Receivers))
=============================================================================
