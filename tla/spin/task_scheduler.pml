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
 *   -DLOCAL_REPOST: task 1's first run re-posts it to run at once instead (a coroutine's
 *   Yield), task 0 blocks until task 1 has run twice, and a third task, SHORT, posted
 *   first, blocks until task 1 has run once. The client posts SHORT, TIMER (due), BLOCKER.
 *   While one worker runs SHORT, the other runs TIMER, whose re-post goes into that
 *   worker's local batch (no worker is idle); at the task boundary the ready queue may
 *   hold BLOCKER, so the worker goes on with it and blocks. Only the first worker, once
 *   SHORT ends, can move the re-post: by taking the batch over before it parks or sleeps.
 *   Run it with -DBATCH=3, so that one Schedule moves all three tasks to the ready queue.
 *
 * Checked:
 *   - exactly once: every post runs once (no run without a post; all posts have run when
 *     the system comes to rest), never two runs of one task at the same time;
 *   - never in two queues: a task entering the front or the ready queue is in neither
 *     already, and a task entering the ready queue is not in the wait queue;
 *   - post order: two tasks due at once (BLOCKER, then TIMER with deadline DUE; with
 *     LOCAL_REPOST, TIMER then BLOCKER) enter the ready queue in post order;
 *   - no lost wakeup / no deadlock: when nothing can move any more (Spin's `timeout`), every
 *     post has run; workers may only rest parked on the ready signal or in WaitUntil;
 *   - liveness (LTL all_run, weak fairness): every post eventually runs.
 *
 * Local batches (sched/task_scheduler.h, "Local batches and claimed tasks"): a run-now post
 * made by a task while every worker executes (executing == WORKERS, read before the
 * append, as SomeWorkerMayBeIdle does) goes into the worker's local batch; the batch is
 * published when the execution batch ends (a worker is idle or the ready queue looks empty
 * at a task boundary, or the ready queue ran dry): by the role holder straight into the
 * ready queue when the front queue is empty, else as one chain into the front queue (also
 * when the role is held elsewhere). An idle worker takes the other workers' batches over
 * (publishes them) before it parks or sleeps in the role, and, while a worker executes,
 * sleeps with a timeout (it may wake at any moment to look again). Claimed tasks (several
 * ready tasks taken at once) exist only with one worker, where they are plain FIFO order;
 * they are not modelled.
 *
 * Timers (issue 17): a role holder that published tasks wakes a parked worker only when the
 * nearest finite deadline was newly published (`retime`), and a parked worker parks with
 * a timeout at a finite deadline (it may wake when the deadline passes). Executing workers
 * end their batch early when the role is free and a deadline may be due (TimerDue).
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
 *   BUG_NO_TAKEOVER         (with LOCAL_REPOST) an idle worker does not take over the
 *                           other workers' local batches: a re-post waits behind a task
 *                           that waits for it.
 *
 * NO_BATCH_RECHECK (with LOCAL_REPOST) drops the periodic re-check of an idle worker while
 * others execute, and still passes: under sequentially consistent interleaving the take-over
 * comes after the parker's re-check of the ready queue, so a batch appended before the owner
 * took its next ready task is seen. The re-check in the code covers what only weaker orders
 * open (the relaxed `executing_` hint; the interleavings here are sequentially consistent).
 */

#ifndef WORKERS
#define WORKERS 2
#endif
#ifndef BATCH
#define BATCH 1
#endif
#define BLOCKER 0
#define TIMER 1
#ifdef LOCAL_REPOST
#define TASKS 3
#define SHORT 2
/* The client posts TIMER (due) before BLOCKER. */
#define FIRST_DUE TIMER
#define SECOND_DUE BLOCKER
#else
#define TASKS 2
#define FIRST_DUE BLOCKER
#define SECOND_DUE TIMER
#endif

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
byte executing;                  /* executing_: workers inside an execution batch */
chan batch_q[WORKERS] = [2] of { byte };  /* each worker's local batch */
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
bool in_batch_q[TASKS];
bool in_ready[TASKS];
byte posted[TASKS];
byte ran[TASKS];
bool running[TASKS];
bool first_due_readied;         /* FIRST_DUE has entered the ready queue */

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
  assert(!in_front[t] && !in_ready[t] && !in_batch_q[t]);
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

/* A post from inside a task running on worker `w` that runs at once: into the local batch
 * when no worker may be idle (the test and the append are separate steps, as in
 * AppendLocal), else the usual post. */
inline PostFromTask(t, kind, w) {
  if
  :: kind == DUE && executing == WORKERS ->
     atomic {
       assert(!queued[t]);
       queued[t] = true;
       deadline[t] = kind;
       posted[t]++;
       assert(!in_front[t] && !in_ready[t] && !in_batch_q[t]);
       batch_q[w]!t;
       in_batch_q[t] = true
     }
  :: else -> Post(t, kind)
  fi
}

/* PublishLocalToFront: the whole batch of worker `w`, as one chain (one exchange). Taking
 * the batch and pushing it are one step (the batch's head CAS and the chain push). */
inline PublishLocal(w) {
  atomic {
    if
    :: len(batch_q[w]) > 0 ->
       was_empty = (len(front) == 0);
       do
       :: batch_q[w]?[t] -> batch_q[w]?t; in_batch_q[t] = false;
          assert(!in_front[t] && !in_ready[t]);
          front!t; in_front[t] = true
       :: else -> break
       od;
       published = true
    :: else -> published = false
    fi;
    t = 0
  };
  if
  :: published ->
#ifndef BUG_NO_FRONT_NOTIFY
     if
     :: was_empty -> front_notified = true
     :: else
     fi;
#endif
     AfterFrontPush()
  :: else
  fi
}

/* An idle worker `me` takes over (publishes) the other workers' local batches. */
inline TakeOver(me) {
  took = false;
#ifndef BUG_NO_TAKEOVER
  o = 0;
  do
  :: o == WORKERS -> break
  :: else ->
     if
     :: o != me -> PublishLocal(o); took = took || published
     :: else
     fi;
     o++
  od;
  o = 0;
#endif
  published = false
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
  /* Post order for tasks due at once: the client posted FIRST_DUE first. */
  assert(!(t == SECOND_DUE && deadline[t] == DUE && posted[t] == 1 &&
           deadline[FIRST_DUE] == DUE && posted[FIRST_DUE] == 1) || first_due_readied);
  if
  :: t == FIRST_DUE -> first_due_readied = true
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
        :: cas_ok -> in_wait[t] = true;              /* wait_.Push */
           if
           :: deadline[t] == FUTURE -> retime = true /* a new nearest finite deadline */
           :: else
           fi
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
  :: d_step { moved = 0; popped = 0; retime = false } ->
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
     /* This worker's local batch: straight into the ready queue behind an empty front
      * queue, else behind the front queue's posts. */
     if
     :: len(batch_q[me]) > 0 && len(front) == 0 ->
        atomic {
          do
          :: batch_q[me]?[t] -> batch_q[me]?t; in_batch_q[t] = false; MakeReady(t)
          :: else -> break
          od
        }
     :: len(batch_q[me]) > 0 && len(front) > 0 -> PublishLocal(me)
     :: else
     fi;
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
        /* Take over the other workers' local batches; else sleep holding the role until a
         * notify, the nearest deadline, or (while a worker executes) the re-check. */
        TakeOver(me);
        if
        :: took -> took = false
        :: else ->
end_role_sleep:
           if
           :: atomic { front_notified -> front_notified = false }
           :: in_wait[TIMER] && deadline[TIMER] == FUTURE   /* the deadline passed */
#ifndef NO_BATCH_RECHECK
           :: executing > 0                                 /* kLocalBatchRecheck */
#endif
           fi
        fi
     fi
  od;
  t = 0
}

inline Execute(t, w) {
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
#ifdef LOCAL_REPOST
  if
  :: t == BLOCKER -> ran[TIMER] >= 2                 /* blocks until task 1 ran twice */
  :: t == SHORT -> ran[TIMER] >= 1                   /* blocks until task 1 has run */
  :: else
  fi;
  if
  :: atomic { t == TIMER && ran[TIMER] == 1 -> running[t] = false };
     PostFromTask(TIMER, DUE, w)                     /* re-post from inside: Yield */
  :: else -> running[t] = false
  fi
#else
  if
  :: t == BLOCKER -> ran[TIMER] >= 1                 /* blocks until task 1 has run */
  :: else
  fi;
  if
  :: atomic { t == TIMER && ran[TIMER] == 1 -> running[t] = false };
     PostFromTask(TIMER, INFINITE, w)                /* re-post from inside: PostWait */
  :: else -> running[t] = false
  fi
#endif
}

proctype Worker(byte me) {
  byte t, old, moved, popped, o;
  bool got, backlog, timers, more, sleep, was_empty, cas_ok, executed, retime, published, took;
  bool in_batch;
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
        :: moved > 1 || more || retime -> WakeOne()
        :: else
        fi;
#endif
        d_step { got = false; more = false; backlog = false; timers = false; moved = 0; popped = 0; retime = false }
     :: !got && len(batch_q[me]) > 0 -> PublishLocal(me)   /* the role is held elsewhere */
     :: else
     fi;
     /* ExecuteBatch */
     do
     :: atomic { ready?[t] -> ready?t; in_ready[t] = false;
                 if
                 :: !in_batch -> in_batch = true; executing++
                 :: else
                 fi };
        /* Chain wake: more seem ready, workers are parked. */
        if
        :: parked > 0 && len(ready) > 0 -> WakeOne()
        :: else
        fi;
        Execute(t, me);
        d_step { executed = true; t = 0 };
        /* Publish the local batch early when a worker may be idle or the ready queue looks
         * empty; serve a due timer when the role is free (TimerDue). (The batch bound is
         * never reached with two tasks.) */
        if
        :: len(batch_q[me]) > 0 && (executing < WORKERS || len(ready) == 0) -> break
        /* SomeWorkerMayBeIdle is a relaxed load: it may miss a worker that just left its
         * batch, and the worker goes on with the next ready task. */
        :: len(batch_q[me]) > 0 && executing < WORKERS && len(ready) > 0 -> skip
        :: !role && in_wait[TIMER] && deadline[TIMER] == FUTURE -> break
        :: else
        fi
     :: empty(ready) -> break
     od;
     atomic {
       if
       :: in_batch -> in_batch = false; executing--
       :: else
       fi
     };
     if
     :: executed -> executed = false
     :: len(batch_q[me]) > 0 -> skip                   /* publish it at the top */
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
              :: sleep -> TakeOver(me); sleep = !took; took = false
              :: else
              fi;
              if
              :: sleep ->
end_park:        if
                 :: atomic { ready_signal -> ready_signal = false }
                 :: in_wait[TIMER] && deadline[TIMER] == FUTURE   /* timed to the deadline */
#ifndef NO_BATCH_RECHECK
                 :: executing > 0                                 /* kLocalBatchRecheck */
#endif
                 fi
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
#ifdef LOCAL_REPOST
  Post(SHORT, DUE);
  Post(TIMER, DUE);
  Post(BLOCKER, DUE)
#else
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
    assert(posted[TIMER] == 2 && ran[TIMER] == 2);
#ifdef LOCAL_REPOST
    assert(posted[SHORT] == 1 && ran[SHORT] == 1)
#endif
}

init {
  atomic {
    byte w = 0;
    do
    :: w == WORKERS -> break
    :: else -> run Worker(w); w++
    od;
    run Client();
#ifndef LOCAL_REPOST
    /* (With LOCAL_REPOST every post is due at once: a wakeup only adds bits that
     * BeginExecution clears, checked without it.) */
    run Waker(1, kWoken | kSignaled);     /* Signal */
    run Waker(2, kWoken | kCancelled)     /* Cancel */
#endif
  }
}

ltl all_run { <> (ran[BLOCKER] == 1 && ran[TIMER] == 2) }
