/* task_scheduler.pml: BasicTaskScheduler (sched/task_scheduler.h) with the task state
 * machine of sched/task.h: the front/wait/ready pipeline, the sched-role that migrates
 * between workers, deadlines that expire nondeterministically, Wakeup/Signal/Cancel racing
 * with expiry and with execution, and the two wake-up channels: the ready signal to parked
 * workers and the front notify to the role holder sleeping in IoBackend::WaitUntil.
 *
 * The Schedule loop follows the front queue that pops one task at a time (the stub-node
 * MpscQueue): up to BATCH pops per role take, `backlog` = the front queue is not empty.
 *
 * Harness (WORKERS workers, two tasks):
 *   task 0, BLOCKER: posted "now"; its callback blocks until task 1 has run once. It
 *     occupies one worker, so task 1 needs another: a worker parked while task 1 waits in a
 *     queue must be woken (the lost-wakeup trap of the design).
 *   task 1, TIMER: posted with a deadline chosen nondeterministically (already due, in the
 *     future, or infinite: PostWait); waker A (Signal) races with its expiry, its receipt
 *     by the sched-role and its execution. Its first run re-posts it with PostWait (a
 *     multi-step task); waker B (Cancel) wakes it after that post. (Wakeup, Signal and Cancel
 *     differ only in the bit they add, which no scheduler decision reads.)
 *   A client thread posts both tasks; the wakers are two more threads.
 *   -DTIMER_DEADLINE=DUE|FUTURE|INFINITE fixes task 1's first deadline (CI runs one target
 *   per value; without it the three are explored together).
 *
 * Checked:
 *   - exactly once: every post runs once (no run without a post; all posts have run when
 *     the system comes to rest), never two runs of one task at the same time;
 *   - never in two queues: a task entering the front or the ready queue is in neither
 *     already, and a task entering the ready queue is not in the wait queue;
 *   - post order: two tasks due at once (BLOCKER, then TIMER with deadline DUE) enter the
 *     ready queue in post order;
 *   - no lost wakeup / no deadlock: when nothing can move any more (Spin's `timeout`), every
 *     post has run; workers may only rest parked on the ready signal or in WaitUntil;
 *   - liveness (LTL all_run, weak fairness): every post eventually runs.
 *
 * Abstractions: the front and ready queues are atomic FIFOs (their algorithms are checked in
 * mpsc_queue.pml and mcsp_queue.pml; the front queue's in-flight push only makes IsEmpty
 * answer "not empty" longer, which makes nobody sleep); the ready queue keeps the role
 * holder's pending items invisible until FlushPending. The two Signals are flags (Send sets,
 * Receive waits and clears; checked in signal.pml). Time is not modelled: a finite deadline
 * may be found due or not due at every look, and WaitUntil with a finite deadline may time
 * out at any moment. Stop, statistics and the spin-before-park loops are left out (spinning
 * only adds looks at the same state; a spin that finds work is modelled by the
 * nondeterministic early exit of Park). Sequentially consistent interleaving of every
 * shared access.
 *
 * Seeded bugs:
 *   BUG_RELEASE_NO_SIGNAL   the worker releasing the sched-role does not wake a parked
 *                           worker although posts arrived while it held the role.
 *   BUG_WAKE_PLAIN_STORE    Wakeup sets its bits with a load and a store instead of the
 *                           fetch_or: it can overwrite the sched-role's kWaiting.
 *   BUG_EXPIRY_IGNORES_CAS  an expired task is made ready even when the kWaiting ->
 *                           kWaiting|kWoken CAS lost to a waker (which pushes it too).
 *   BUG_PARK_NO_RECHECK     a parking worker registers and sleeps without re-checking the
 *                           queues.
 *   BUG_NO_FRONT_NOTIFY     a post into an empty front queue does not notify the role
 *                           holder (the other wake-up channel): it sleeps on in WaitUntil.
 */

#ifndef WORKERS
#define WORKERS 2
#endif
#ifndef BATCH
#define BATCH 1
#endif
#define TASKS 2
#define BLOCKER 0
#define TIMER 1

/* Task state bits (sched/task.h). */
#define kWaiting 1
#define kWoken 2
#define kSignaled 4
#define kCancelled 8

/* Deadline kinds. */
#define DUE 0
#define FUTURE 1
#define INFINITE 2

bool role;                       /* RoleLock */
chan front = [4] of { byte };    /* MpscQueue front_ */
chan ready = [4] of { byte };    /* McspQueue ready_: published items */
chan pending = [4] of { byte };  /* ... and the role holder's unpublished ones */
bool front_notified;             /* the IoBackend's Signal (Notify / WaitUntil) */
bool ready_signal;               /* ready_signal_ */
byte parked;                     /* parked_ */

byte state[TASKS];
byte deadline[TASKS];            /* the kind of the task's deadline */
bool queued[TASKS];              /* posted and not yet started (MarkQueued) */
bool in_wait[TASKS];             /* in the wait queue (sched-role only) */

/* Ghost state for the properties. */
bool in_front[TASKS];
bool in_ready[TASKS];
byte posted[TASKS];
byte ran[TASKS];
bool running[TASKS];
bool blocker_readied;            /* BLOCKER has entered the ready queue */

/* Reads parked_ and sends the ready signal if someone is parked. The load and the Send's
 * set are one step: the flag stays set until a receiver takes it, so a later set could only
 * wake a parker later, never one that this order would have missed. */
inline WakeOne() {
  atomic {
    if
    :: parked > 0 -> ready_signal = true
    :: else
    fi
  }
}

/* Client, wakers, workers: PushFront(t). The push is one atomic step; "was empty" decides
 * whether the role holder is notified and, if the role is free, a parked worker woken. */
/* The Notify (a flag only the role holder consumes, and which stays set until it does) is
 * folded into the push step that justifies it: setting it later could only delay a wakeup
 * of a holder that would find the task anyway, or wake it spuriously. */
inline FrontPush(t) {
  assert(!in_front[t] && !in_ready[t]);
  was_empty = (len(front) == 0);
  front!t;
  in_front[t] = true;
#ifndef BUG_NO_FRONT_NOTIFY
  if
  :: was_empty -> front_notified = true             /* io_.Notify() */
  :: else
  fi
#endif
}
inline AfterFrontPush() {
  if
  :: was_empty ->
     if
     :: !role -> WakeOne()       /* role_.IsLocked(seq_cst), then parked_ (seq_cst) */
     :: else
     fi
  :: else
  fi;
  was_empty = false
}
inline PushFront(t) {
  atomic { FrontPush(t) };
  AfterFrontPush()
}

/* Post: MarkQueued and the setters touch only the task, which nobody else may touch before
 * the push (a waker that races with the post lands before or after the push, and "before"
 * is indistinguishable from "just after, before the sched-role pops it"): one step with the
 * push. */
inline Post(t, kind) {
  atomic {
    assert(!queued[t]);          /* MarkQueued: no double post */
    queued[t] = true;
    deadline[t] = kind;
    posted[t]++;
    FrontPush(t)
  };
  AfterFrontPush()
}

/* Wakeup / Signal / Cancel. */
inline Wake(t, bits) {
#ifdef BUG_WAKE_PLAIN_STORE
  old = state[t];
  state[t] = old | bits;
#else
  atomic { old = state[t]; state[t] = old | bits };   /* TryWake: fetch_or */
#endif
  if
  :: (old & (kWaiting | kWoken)) == kWaiting -> PushFront(t)
  :: else
  fi;
  old = 0
}

/* Sched-role: MakeReady = ready_.PushPending. */
inline MakeReady(t) {
  assert(!in_ready[t] && !in_front[t] && !in_wait[t]);
  /* Post order for tasks due at once: the client posted BLOCKER first. */
  assert(!(t == TIMER && deadline[TIMER] == DUE && posted[TIMER] == 1) || blocker_readied);
  if
  :: t == BLOCKER -> blocker_readied = true
  :: else
  fi;
  pending!t;
  in_ready[t] = true;
  moved++
}

/* Sched-role: a task popped from the front queue. */
inline ReceiveFromFront(t) {
  if
  :: (state[t] & kWoken) != 0 ->                     /* IsWoken */
     atomic { in_wait[t] = false; MakeReady(t) }     /* wait_.Remove if Contains */
  :: else ->
     assert((state[t] & kWaiting) == 0);
     if
     :: deadline[t] == DUE -> MakeReady(t)
     :: deadline[t] == FUTURE -> MakeReady(t)        /* the deadline has passed by now */
     :: deadline[t] != DUE ->
        atomic {                                     /* TryPendingToWaiting */
          if
          :: state[t] == 0 -> state[t] = kWaiting; cas_ok = true
          :: else -> cas_ok = false
          fi
        };
        if
        :: cas_ok -> in_wait[t] = true               /* wait_.Push */
        :: else -> MakeReady(t)                      /* a waker got there first */
        fi;
        cas_ok = false
     fi
  fi
}

/* Sched-role: a task whose deadline passed, taken out of the wait queue. */
inline Expire(t) {
  in_wait[t] = false;
  atomic {                                           /* TryWaitingToReady */
    if
    :: state[t] == kWaiting -> state[t] = kWaiting | kWoken; cas_ok = true
    :: else -> cas_ok = false
    fi
  };
#ifdef BUG_EXPIRY_IGNORES_CAS
  MakeReady(t);
#else
  if
  :: cas_ok -> MakeReady(t)
  :: else                                            /* a waker pushes it instead */
  fi;
#endif
  cas_ok = false
}

inline Schedule() {
  do
  :: d_step { moved = 0; popped = 0 } ->
     /* Front queue -> wait/ready, one Pop at a time, at most BATCH. */
     do
     :: popped < BATCH ->
        atomic {
          if
          :: front?[t] -> front?t; in_front[t] = false; popped++
          :: else -> t = 255
          fi
        };
        if
        :: t == 255 -> break
        :: else -> ReceiveFromFront(t)
        fi
     :: else -> break
     od;
     /* Expired wait queue -> ready: any task with a finite deadline may have expired. */
     if
     :: in_wait[TIMER] && deadline[TIMER] == FUTURE -> Expire(TIMER)
     :: true
     fi;
     atomic {
       backlog = (len(front) > 0);
       timers = in_wait[TIMER]
     };
     if
     :: moved > 0 ->
        atomic {                                     /* FlushPending */
          do
          :: pending?[t] -> pending?t; ready!t
          :: else -> break
          od
        };
        break
     :: else
     fi;
     if
     :: len(ready) > 0 -> break                      /* Count() > 0: go and execute */
     :: else
     fi;
     if
     :: backlog && popped > 0 -> break
     :: backlog -> skip                              /* a push in flight: look again */
     :: else ->
        /* Sleep holding the role until a notify, or the nearest deadline. */
end_role_sleep:
        if
        :: atomic { front_notified -> front_notified = false }
        :: in_wait[TIMER] && deadline[TIMER] == FUTURE   /* the deadline passed */
        fi
     fi
  od;
  t = 0
}

inline Execute(t) {
  /* BeginExecution: a load; only if it finds bits, exchange(0). A waker may act between
   * the two steps (its bits then stay for the next post, as for a wakeup during the run). */
  if
  :: state[t] == 0 -> skip
  :: else -> state[t] = 0
  fi;
  atomic {
    queued[t] = false;
    assert(!running[t]);
    assert(ran[t] < posted[t]);                      /* every run has its post */
    running[t] = true;
    ran[t]++
  };
  if
  :: t == BLOCKER -> ran[TIMER] >= 1                 /* blocks until task 1 has run */
  :: else
  fi;
  if
  :: atomic { t == TIMER && ran[TIMER] == 1 -> running[t] = false };
     Post(TIMER, INFINITE)                           /* re-post from inside: PostWait */
  :: else -> running[t] = false
  fi
}

proctype Worker() {
  byte t, old, moved, popped;
  bool got, backlog, timers, more, sleep, was_empty, cas_ok, executed;
  do
  :: true ->
     /* TryLock */
     atomic {
       if
       :: !role -> role = true; got = true
       :: else -> got = false
       fi
     };
     if
     :: got ->
        Schedule();
        role = false;                                /* Unlock (seq_cst) */
        more = backlog || len(front) > 0;            /* front_.IsEmpty(seq_cst) */
#ifndef BUG_RELEASE_NO_SIGNAL
        if
        :: moved > 1 || more || (moved > 0 && timers) -> WakeOne()
        :: else
        fi;
#endif
        d_step { got = false; more = false; backlog = false; timers = false; moved = 0; popped = 0 }
     :: else
     fi;
     /* ExecuteBatch */
     do
     :: atomic { ready?[t] -> ready?t; in_ready[t] = false };
        /* Chain wake: more seem ready, workers are parked. */
        if
        :: parked > 0 && len(ready) > 0 -> WakeOne()
        :: else
        fi;
        Execute(t);
        d_step { executed = true; t = 0 };
        /* RoleWorkDue: the role is free and the front queue is not empty or the nearest
         * deadline may have passed (the batch bound is never reached with two tasks). */
        if
        :: !role && (len(front) > 0 || in_wait[TIMER]) -> break
        :: else
        fi
     :: empty(ready) -> break
     od;
     if
     :: executed -> executed = false
     :: else ->
        if
        :: !role -> skip                             /* the role is free: take it */
        :: else ->
           /* Park. SpinFor(WorkVisible) may find work and return early. */
           if
           :: len(ready) > 0 || (!role && len(front) > 0) -> skip
           :: true ->
              parked++;
#ifdef BUG_PARK_NO_RECHECK
              sleep = true;
#else
              /* Re-check after registering (seq_cst loads). */
              if
              :: len(ready) > 0 -> sleep = false
              :: else ->
                 if
                 :: role -> sleep = true
                 :: else -> sleep = (len(front) == 0)
                 fi
              fi;
#endif
              if
              :: sleep ->
end_park:        atomic { ready_signal -> ready_signal = false }
              :: else -> skip
              fi;
              parked--;
              sleep = false
           fi
        fi
     fi
  od
}

proctype Client() {
  bool was_empty;
  Post(BLOCKER, DUE);
#ifdef TIMER_DEADLINE
  Post(TIMER, TIMER_DEADLINE)
#else
  if
  :: Post(TIMER, DUE)
  :: Post(TIMER, FUTURE)
  :: Post(TIMER, INFINITE)
  fi
#endif
}

/* Wakes task TIMER once its post number `nth` has begun. */
proctype Waker(byte nth; byte bits) {
  byte old;
  bool was_empty;
  posted[TIMER] >= nth;
  Wake(TIMER, bits)
}

/* When nothing can move any more, every post must have run. */
active proctype Watchdog() {
  timeout ->
    assert(posted[BLOCKER] == 1 && ran[BLOCKER] == 1);
    assert(posted[TIMER] == 2 && ran[TIMER] == 2)
}

init {
  atomic {
    byte w = 0;
    do
    :: w == WORKERS -> break
    :: else -> run Worker(); w++
    od;
    run Client();
    run Waker(1, kWoken | kSignaled);     /* Signal */
    run Waker(2, kWoken | kCancelled)     /* Cancel */
  }
}

ltl all_run { <> (ran[BLOCKER] == 1 && ran[TIMER] == 2) }
