/* task_scheduler.pml: BasicTaskScheduler (sched/task_scheduler.h) with the task state
 * machine of sched/task.h: the front/wait/ready pipeline, the sched-role that migrates
 * between workers, deadlines that expire nondeterministically, Wakeup/Signal/Cancel racing
 * with expiry and with execution, and the two wake-up channels: the ready event to parked
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
 *   -DENDLESS_REPOSTER (needs -DEXEC_BATCH=E): two workers and three tasks instead. The
 *   client posts LONG_T and RP_T (run now). RP_T re-posts itself to run now every time it
 *   runs, for ever (so its post goes into its worker's local batch whenever the other
 *   worker executes too). LONG_T posts X_T to run now (held in its worker's local batch
 *   while both execute) and then does not return until X_T has run: a coroutine's
 *   WaitFor, modelled as the worker blocked inside the task. Its worker's batch never ends,
 *   and the re-poster's worker is never idle, so only the busy take-over
 *   (TakeOverStaleBatches) can move X_T. See "The bound" below.
 *   -DSECOND_POST (with ENDLESS_REPOSTER): LONG_T posts a second task X2_T to run now
 *   right after X_T, and waits for both. X2_T is held behind X_T or, when the re-poster's
 *   worker is between batches (executing < 2), goes to the front queue after LONG_T's
 *   worker publishes what it holds; the re-poster's take-over of X_T may run meanwhile.
 *
 *   -DSTOP: the lifecycle instead (see "Stop" below).
 *
 * Checked:
 *   - exactly once: every post runs once (no run without a post; all posts have run when
 *     the system comes to rest), never two runs of one task at the same time;
 *   - never in two queues: a task entering the front or the ready queue is in neither
 *     already, and a task entering the ready queue is not in the wait queue;
 *   - local batches publish exactly once: every item a publication pushes is still in the
 *     batch, published by nobody before;
 *   - post order: two tasks due at once (BLOCKER, then TIMER with deadline DUE; with
 *     LOCAL_REPOST, TIMER then BLOCKER) enter the ready queue in post order;
 *   - no lost wakeup / no deadlock: when nothing can move any more (Spin's `timeout`), every
 *     post has run; workers may only rest parked on the ready event or in WaitUntil;
 *   - liveness (LTL all_run, weak fairness): every post eventually runs.
 *   With ENDLESS_REPOSTER (which never comes to rest: the Watchdog asserts it never does):
 *   - liveness (LTL every_post_starts, weak fairness): X_T starts (so LONG_T did), and every
 *     post of RP_T starts ([] (queued -> <> !queued)); x_starts is X_T's part alone;
 *   - the bound (safety, an assertion at each start): RP_T starts at most RP_BOUND =
 *     EXEC_BATCH + 1 times between X_T's post and X_T's start;
 *   - with SECOND_POST, per-poster order (an assertion at the ready queue's pop, which is
 *     the start order): X2_T is taken from the ready queue only after X_T; and the bound
 *     as above, which holds for threads stopped anywhere: LONG_T's post of X2_T may
 *     publish X_T itself (PublishOwnLocalToFront), and its thread may stop in the middle
 *     of that publication for any number of RP_T's steps. A publication never hides its
 *     items (a taker's neither): they stay in the batch until it has pushed them, so the
 *     re-poster's worker sees the batch held at an unchanged head, and its busy take-over,
 *     once due, waits for the claim instead of starting RP_T again. The rule before (the
 *     items leave the batch when read, then are pushed: -DBUG_HEAD_BEFORE_PUBLISH) fails
 *     the bound.
 *
 * The bound (ENDLESS_REPOSTER). Let W be the re-poster's worker, E = EXEC_BATCH. While X_T
 * waits, LONG_T's worker is inside one execution batch (executing counts it), so every
 * re-post of RP_T on W sees every worker executing and is held in W's local batch; at the
 * task boundary the ready queue is empty, so W's execution batch ends after every start
 * of RP_T (ExecuteBatch publishes a held batch early when the ready queue looks empty).
 * After each such batch W looks at the other batch (TakeOverStaleBatches), then takes the
 * role and moves its own batch (RP_T) to the ready queue (MoveLocalToReady). X_T leaves
 * the other batch only by a publication that has pushed it into the front queue (W's
 * take-over, or with SECOND_POST LONG_T's own when it posts X2_T), and the batch's head
 * moves only then: until then W's looks find the batch held at the same head.
 *   1. W's first look after X_T's append records the held batch (seen_since = 0). Before
 *      it, W starts RP_T at most once: the start of the batch in progress at the append if
 *      it comes after the append (RP_T popped before, started after), or, if W was between
 *      batches (its look came before the append), the start of its next batch.
 *   2. Each later batch of W adds its one start to seen_since; the look at the end of the
 *      E-th takes X_T over, or, if LONG_T's thread is in the middle of publishing it,
 *      waits for that publication to end: E starts.
 *   3. That publication pushes X_T into the front queue while RP_T's re-post is held in
 *      W's batch; W's next Schedule makes X_T ready from the front queue before it moves
 *      its own batch behind it: no more start of RP_T before X_T. (A publication by
 *      LONG_T's thread that ends earlier does the same sooner: at most the start of W's
 *      batch in progress comes after it, within the count above.)
 * So at most 1 + E = RP_BOUND. Both ways checked: rp_starts <= E + 1 holds for E = 1, 2
 * (3 by hand), with and without SECOND_POST, and rp_starts < E + 1 fails
 * (-DASSERT_BELOW_BOUND): the bound is reached.
 * It is within the code's general bound of 3 * E starts of another worker (docs/design.md,
 * "The hot path every resume takes": up to E to the first look, E
 * more, plus the rest of the batch that gets there), here 1 + E + 0 since W's batches
 * have one start each.
 *
 * Local batches (sched/internal/held_posts.h; docs/design.md, "The hot path every resume
 * takes"; sched/internal/local_batch.h; PostOrder::kBatched: kStrict, no local batches, is not
 * modelled): a run-now post made by a task while every worker executes (executing ==
 * WORKERS, read before the append, as SomeWorkerMayBeIdle does) goes into the worker's
 * local batch; the batch is published when the execution batch ends (a worker is idle or
 * the ready queue looks empty at a task boundary, or the ready queue ran dry): by the role
 * holder straight into the ready queue when the front queue is empty, else as one chain
 * into the front queue (also when the role is held elsewhere). Any other post by a task
 * (a deadline, or a run-now post while a worker may be idle) first publishes the poster's
 * held batch into the front queue (per-poster order). Other workers take a batch over
 * (one chain into the front queue): an idle one before it parks or sleeps in the role
 * (LocalBatch::TryTakeOver; and, while a worker executes, it sleeps with a timeout: it may
 * wake at any moment to look again); a busy one at the end of each of its execution
 * batches that executed tasks (TakeOverStaleBatches, LocalBatch::TakeOver), when the batch
 * has stayed held at the same head while the looker started EXEC_BATCH tasks (heads and
 * start counts are kept as described at seen_held). Only with -DEXEC_BATCH (without it
 * the threshold is never reached). Every publication, the owner's too, holds the batch's
 * claim (`taking`) from before it reads the items to after it has published them, and
 * the items leave the batch (the head moves) only when they are published (see
 * ReadBatch). So an item is always in the batch or published: a publisher stopped in the
 * middle leaves its items visible as held, and whoever needs them waits for it (the
 * owner, for per-poster order: what it publishes next lands behind a taker's chain; the
 * busy looker, for the bound), while an idle looker gives up (the publisher pushes and
 * wakes). Claimed tasks exist only with one worker (worker_count
 * 1, only in the Stop harness: WORKERS=1, or Stop's fresh worker; CLAIMS): it takes every
 * ready task at once (PopUpTo) and runs them first, and, out of ready tasks with a held
 * batch, claims the batch and runs it in place unless the front queue holds posts or a
 * timer is due (ClaimLocalInPlace). With STOP, a worker leaving at exit_ first publishes
 * its batch and runs its claimed tasks (a worker's batch and claims are destroyed with
 * it).
 *
 * Timers: the role holder publishes the wait queue's nearest deadline (`nearest`, i.e.
 * nearest_deadline_ is finite) once per pass and wakes a parked worker when it published a
 * new finite one (`retime`, PublishNearestDeadline). A parking worker reads `nearest` after
 * registering and parks with a timeout only if it read a finite one (it may wake at any
 * moment then); an executing worker ends its batch early when TimerDue (it read a finite
 * `nearest` and the clock says due: any look may) and the role is free. Both read the
 * published value, not the wait queue: a parker that read "no deadline" before the holder
 * published one sleeps without a timeout until the retime wake. The execution batch ends
 * after EXEC_BATCH tasks (default: never reached); the role is tried only after a batch
 * that ended early or with a local batch to publish (batch_ended_early, WorkerMain).
 *
 * Stop (-DSTOP; sched/task_scheduler.h Stop, WaitEmpty, CountFinished, sched/post_counters.h):
 * the owner starts WORKERS workers, posts TIMER with PostWait (nobody else wakes it), and
 * calls Stop: stop_generation_ and stopping_, Notify and Send; then the drain loop:
 * WaitEmpty, exit_ with Notify and Send, join, IsEmpty, and a fresh single worker if a post
 * landed after WaitEmpty returned. With RESTART, then Start(1) again and a second Stop.
 * WORKERS=1: a poster thread posts LATE (run now) once, at any moment up to the first Stop's
 * join (it may race with WaitEmpty and the exit) or, with RESTART, before the second Stop;
 * TIMER's run re-posts it once to run at once (a post by a task, counted in its worker's
 * slot; held in the local batch, since the one worker executes, and run in place).
 * -DLATE_REPOSTS: the poster posts LATE, then LATE2, and LATE's first run re-posts it once,
 * so posts made after WaitEmpty returned can be held when the worker sees exit_: the
 * re-post in the local batch (LATE2 in the front queue keeps ClaimLocalInPlace from running
 * it in place; the exit publishes it and Stop's drain loop runs it on a fresh worker), or,
 * with -DEXEC_BATCH=1, claimed (the batch ends at one start with the re-post claimed; the
 * exit runs it). WORKERS=2 (the exit passed on between workers): the owner
 * posts LATE before Start and TIMER does not re-post (the full harness with two workers
 * exceeds 14 M states).
 * AllFinished's two sums are one step each (the order between them is what the code relies
 * on). PostCounters: one slot per worker index (kept across restarts) and the shared slot
 * of outside posters; AllFinished sums every `finished`, then every `posted`. WaitEmpty: register in empty_waiters_, then
 * under empty_mu_ check AllFinished and wait on empty_cv_; CountFinished: store the slot's
 * count, then read empty_waiters_, and if someone waits and AllFinished, pass through
 * empty_mu_ and notify_all. The roles and stops: Stop wakes the waiting TIMER
 * (WakeWaitingForStop, or ReceiveFromFront while stopping); workers leave at exit_ (loop
 * top, Schedule, Park's re-check) and pass the exit on. Checked: each Stop returns, with
 * every worker joined and every post made before it (and the posts those tasks made) run;
 * after the last Stop every post has run exactly once; the system always ends (no
 * process is left blocked). Not modelled: Stop before Start and Stop's early return
 * (threads_.empty()), CancelAll (no IO backend), PostDeadlineThroughStop, spurious
 * condition-variable wakeups in WaitEmpty (they only add re-checks), WaitEmpty's timeout.
 *
 * Abstractions: the front and ready queues are atomic FIFOs (their algorithms are checked in
 * mpsc_queue.pml and mcsp_queue.pml; the front queue's in-flight push only makes IsEmpty
 * answer "not empty" longer, which makes nobody sleep); the ready queue keeps the role
 * holder's pending items invisible until FlushPending. The two Signals are flags (Send sets,
 * Receive waits and clears; checked in signal.pml and signal_futex.pml). Time is not
 * modelled: a finite deadline may be found due or not due at every look, and WaitUntil with
 * a finite deadline may time out at any moment. A post's CountPost is folded into its push
 * (it comes before it in the code; AllFinished only relies on that order). Statistics and
 * the spin-before-park loops are left out (spinning
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
 *   BUG_NO_BUSY_TAKEOVER    (with ENDLESS_REPOSTER) the earlier take-over rule:
 *                           only an idle worker takes batches over, a busy one never
 *                           (no TakeOverStaleBatches). X_T waits behind LONG_T for as long
 *                           as RP_T keeps its worker busy: for ever (an acceptance cycle of
 *                           every_post_starts), and RP_T starts more than RP_BOUND times
 *                           meanwhile (the bound's assertion).
 *   BUG_OWNER_NO_WAIT       (with ENDLESS_REPOSTER, SECOND_POST) the owner publishes
 *                           without the claim (PublishAsOwner skips Claim, so it neither
 *                           waits for a take-over in progress nor keeps takers out): it
 *                           and the taker read X_T and both push it (publication exactly
 *                           once).
 *   BUG_HEAD_BEFORE_PUBLISH (with ENDLESS_REPOSTER, SECOND_POST) the publication rule
 *                           before this model's: the items leave the batch when they are
 *                           read, before the push. LONG_T's thread stopped between the two
 *                           holds X_T in no queue while its batch looks empty, and RP_T
 *                           starts past the bound.
 *   BUG_BUSY_TAKEOVER_GIVES_UP  (with ENDLESS_REPOSTER, SECOND_POST) the busy take-over
 *                           gives up when the claim is held, as an idle one does
 *                           (TryTakeOver): while LONG_T's thread is stopped in the middle
 *                           of publishing X_T, RP_T starts past the bound.
 *   BUG_FRONT_POST_SKIPS_HELD  (with ENDLESS_REPOSTER, SECOND_POST) the rule before issue
 *                           31: a run-now post that goes to the front queue (a worker may
 *                           be idle) does not first publish the poster's held posts.
 *   BUG_EXIT_DROPS_LOCAL    (with STOP, LATE_REPOSTS) the earlier exit: a worker
 *                           leaves at exit_ (at the loop top or from Schedule's exit) at
 *                           once, and the post held in its local batch (or, with
 *                           EXEC_BATCH=1, claimed) is destroyed with it: Stop's drain never
 *                           sees it run and waits for ever.
 *   BUG_WAITEMPTY_READ_BEFORE_FINISH  (with STOP) CountFinished reads empty_waiters_ before
 *                           it stores the finished count (the Dekker pair with WaitEmpty
 *                           turned around): WaitEmpty registers and checks in between, finds
 *                           the last task unfinished and sleeps; the finisher saw no waiter
 *                           and notifies nobody. Stop never returns.
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
#if defined(EXEC_BATCH) || defined(STOP)
#define COUNT_EXECUTED           /* the batch bound or CountFinished needs the count */
#endif
#ifdef EXEC_BATCH
/* The busy take-over (TakeOverStaleBatches) fires only after execute_batch_size starts of
 * the looking worker: its records are kept only when that bound can be reached. Without
 * EXEC_BATCH (255, more starts than any finite harness has) they could never have an
 * effect, so they are left out of the state. */
#define STALE_TAKEOVER
#endif
#ifndef EXEC_BATCH
#define EXEC_BATCH 255           /* execute_batch_size: never reached by these harnesses */
#endif
#define BLOCKER 0
#define TIMER 1
#ifdef STOP
#if WORKERS > 2
#error "the Stop harness reads one or two workers' counter slots (AllFinished)"
#endif
#if WORKERS == 2
#define TIMER_POSTS 1            /* two workers: the smaller harness, TIMER does not re-post */
#else
#define TIMER_POSTS 2
#define STOP_POSTER              /* one worker: LATE comes from a poster thread */
#endif
#define LATE 0                   /* in the Stop harness, task 0 is the poster's task */
#ifdef LATE_REPOSTS
#if WORKERS != 1
#error "LATE_REPOSTS is a variant of the one-worker Stop harness"
#endif
#define TASKS 3
#define LATE2 2                  /* the poster's second task (runs once) */
#define LATE_POSTS 2             /* LATE's first run re-posts it to run now */
#else
#define TASKS 2
#define LATE_POSTS 1
#endif
#define SHARED WORKERS           /* PostCounters' shared slot, after the workers' slots */
#define WORKER_COUNT worker_count
#ifdef RESTART
#define STOPS 2
#else
#define STOPS 1
#endif
#elif defined(LOCAL_REPOST)
#define TASKS 3
#define SHORT 2
/* The client posts TIMER (due) before BLOCKER. */
#define FIRST_DUE TIMER
#define SECOND_DUE BLOCKER
#elif defined(ENDLESS_REPOSTER)
#if WORKERS != 2
#error "the endless re-poster harness has two workers"
#endif
#ifndef STALE_TAKEOVER
#error "the endless re-poster harness needs -DEXEC_BATCH=N (the busy take-over's threshold)"
#endif
#ifdef SECOND_POST
#define TASKS 4
#define X2_T 3                   /* LONG_T's second post, made after X_T */
#else
#define TASKS 3
#endif
#define LONG_T 0                 /* the long task: posts X_T, then waits until it has run */
#define RP_T 1                   /* the endless re-poster */
#define X_T 2                    /* the post held in the long task's local batch */
/* The client posts LONG_T, then RP_T (both run now). */
#define FIRST_DUE LONG_T
#define SECOND_DUE RP_T
/* The bound on RP_T's starts between X_T's post and X_T's start (derivation at the
 * harness, "The bound"): the looker's first look records the held batch at most one start
 * after the post, and EXEC_BATCH starts later it takes the batch over. */
#define RP_BOUND (EXEC_BATCH + 1)
#else
#define TASKS 2
#define FIRST_DUE BLOCKER
#define SECOND_DUE TIMER
#endif
#ifndef WORKER_COUNT
#define WORKER_COUNT WORKERS
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
chan batch_q[WORKERS] = [2] of { byte };  /* each worker's LocalBatch: appended, not yet
                                           * published (head to tail) */
chan hold[WORKERS] = [2] of { byte };     /* the items a worker's publication read (its
                                           * own batch or another's), not yet pushed */
bool taking[WORKERS];            /* LocalBatch::taking_: the claim, a publication runs */
#ifdef STOP
/* Only the Stop harness runs one worker (worker_count 1: WORKERS=1, or Stop's fresh
 * worker), the only case where the code claims tasks. */
#define CLAIMS
chan claimed_q[WORKERS] = [2] of { byte };  /* Worker::claimed: taken, not yet started */
#endif
#ifdef STALE_TAKEOVER
/* TakeOverStaleBatches' records (Worker::seen), index looker * WORKERS + owner. The head
 * is kept as "unchanged since the record": the end of each publication of the batch (its
 * head store, HeadMoved) clears seen_same in every record of it, exactly what comparing
 * its increasing head with the recorded one tells (under these sequentially consistent
 * steps; a publication that finds nothing stores no head). `started - seen.started` is
 * kept as seen_since, saturated at EXEC_BATCH (only `< EXEC_BATCH` is asked). A record
 * that is not held is (false, false, 0). */
bool seen_held[WORKERS * WORKERS];
bool seen_same[WORKERS * WORKERS];
byte seen_since[WORKERS * WORKERS];
#endif
chan front = [4] of { byte };    /* MpscQueue front_ */
chan ready = [4] of { byte };    /* McspQueue ready_: published items */
chan pending = [4] of { byte };  /* ... and the role holder's unpublished ones */
bool front_notified;             /* the IoBackend's Signal (Notify / WaitUntil) */
bool ready_event;               /* ready_event_ */
byte parked;                     /* parked_ */
bool nearest;                    /* nearest_deadline_ is finite (TIMER waits, FUTURE) */

#ifdef STOP
bool stopping;                   /* stopping_ */
bool exit_;                      /* exit_ */
byte stop_gen;                   /* stop_generation_ */
byte swept_gen;                  /* swept_generation_ (sched-role state) */
byte worker_count = WORKERS;     /* worker_count_ */
byte alive;                      /* worker threads not yet joined */
byte cnt_posted[WORKERS + 1];    /* PostCounters: slots_[i].posted, shared_.posted last */
byte cnt_finished[WORKERS];      /* slots_[i].finished (the shared one stays 0: every
                                  * worker has a slot) */
byte empty_waiters;              /* empty_waiters_ */
bool empty_mu;                   /* empty_mu_ */
bool empty_cv_waiting;           /* the owner waits in empty_cv_, not yet notified */
byte stops_done;                 /* ghost: Stop calls that returned */
bool late_before_stop;           /* ghost: LATE was posted before the current Stop began */
#ifdef LATE_REPOSTS
bool late2_before_stop;          /* ghost: the same for LATE2 */
#endif
#endif

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
#ifdef ENDLESS_REPOSTER
bool x_window;                   /* X_T is posted and has not started */
byte rp_starts;                  /* RP_T's starts in that window (saturated at RP_BOUND + 1) */
bool x_taken;                    /* X_T has been taken from the ready queue (SECOND_POST) */
#endif

/* Reads parked_ and sends the ready event if someone is parked. The load and the Send's
 * set are one step: the flag stays set until a receiver takes it, so a later set could only
 * wake a parker later, never one that this order would have missed. */
inline WakeOne() {
  atomic {
    if
    /* code: sched/internal/idle.h WakeOne: if (parked_.load(std::memory_order_seq_cst) == 0) return; */
    :: parked > 0 -> ready_event = true
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
  /* code: sched/task_scheduler.h PushFront: void PushFront(Task* task) { AfterFrontPush(front_.Push(task)); } */
  was_empty = (len(front) == 0);
  front!t;
  in_front[t] = true;
#ifndef BUG_NO_FRONT_NOTIFY
  if
  /* code: sched/internal/idle.h AfterFrontPush: io_.Notify(); */
  :: was_empty -> front_notified = true
  :: else
  fi
#endif
}
inline AfterFrontPush() {
  if
  :: was_empty ->
     if
     /* code: sched/internal/idle.h AfterFrontPush: if (!role_.IsLocked(std::memory_order_seq_cst) && parked_.load(std::memory_order_seq_cst) > 0) { */
     :: !role -> WakeOne()
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

/* The ghost and bookkeeping part of a post of t by worker w (w == 255: from outside):
 * MarkQueued and CountPost, folded into the step that publishes or holds the task. */
inline MarkPosted(t, kind, w) {
  /* code: sched/task.h MarkQueued: bool MarkQueued() { return queued_.exchange(1, std::memory_order_relaxed) == 0; } */
  assert(!queued[t]);            /* no double post */
  queued[t] = true;
  deadline[t] = kind;
#ifdef ENDLESS_REPOSTER
  if                             /* RP_T posts forever: its count saturates (see Execute) */
  :: posted[t] < 2 -> posted[t]++
  :: else
  fi;
  if
  :: t == X_T -> x_window = true
  :: else
  fi;
#else
  posted[t]++;
#endif
#ifdef STOP
  if
  /* code: sched/task_scheduler.h PostMarked: counters_.CountPost(worker != nullptr ? worker->counter : nullptr); */
  :: w == 255 -> cnt_posted[SHARED]++
  :: else -> cnt_posted[w]++
  fi;
#endif
  skip
}

/* Post from outside the scheduler: MarkQueued, the setters and CountPost touch only the task
 * and the poster's counter, which nobody else may touch before the push (a waker that races
 * with the post lands before or after the push, and "before" is indistinguishable from "just
 * after, before the sched-role pops it"): one step with the push. */
inline Post(t, kind) {
  atomic {
    MarkPosted(t, kind, 255);
    FrontPush(t)
  };
  AfterFrontPush()
}

/* A publication of batch `o` by worker `w` (its owner, or a taker) follows LocalBatch's
 * PublishClaimed: with the batch's claim (taking[o]) held, it reads the items, publishes
 * them, and only then moves the head past them; so an item is in the batch until it is
 * published. Modelled as: the claim with the read (ReadBatch: the items copied into
 * hold[w], the publisher's `items`; they stay in batch_q[o]), one step; the publication,
 * which also removes them from the batch (the head store, PublicationEnds), one step; the
 * release; the wake (AfterFrontPush, after the release in the code). The read is folded
 * into the claim: in between, only the owner's appends act on the batch (the owner's own
 * publication waits for the claim), and they commute with the claim. The head store is
 * folded into the publication: between the two the items are published and still in the
 * batch with the claim held, so a thread that looks at the batch then (LooksEmpty, Head,
 * IsEmptyForOwner, a claim) finds it not empty, its head unchanged and the claim held,
 * exactly as just before the publication, and acts the same (the owner and a busy looker
 * wait for the claim, an idle looker gives up): its look can be moved before the step. */

/* The read (inside the claim's step): every waiting item of batch `o`, oldest first, into
 * hold[w]. */
inline ReadBatch(o, w) {
  /* code: sched/internal/local_batch.h PublishClaimed: items[i] = slots_[(head + i) % Capacity].load(std::memory_order_relaxed); */
  k = len(batch_q[o]);
  do
  :: k > 0 ->
     batch_q[o]?u; hold[w]!u;
#ifndef BUG_HEAD_BEFORE_PUBLISH
     batch_q[o]!u;                   /* back at the end: the batch keeps it, in order */
#endif
     k--
  :: else -> break
  od;
  u = 0
#ifdef BUG_HEAD_BEFORE_PUBLISH
  ;
  /* The rule before the fix: the items leave the batch when they are read (the take's
   * CAS), before they are published. */
  HeadMoved(o)
#endif
}

/* The head store: every looker's record of batch `o` now differs from its head
 * (TakeOverStaleBatches: seen.head != head). Inside a step. */
inline HeadMoved(o) {
#ifdef STALE_TAKEOVER
  k = 0;
  do
  :: k == WORKERS -> break
  :: else -> seen_same[k * WORKERS + o] = false; k++
  od;
  k = 0
#else
  skip
#endif
}

/* Read item u of batch `o` is published (inside the publication's step): it must still be
 * in the batch, published by nobody before (every item appended is published exactly
 * once), and it leaves the batch now. */
inline Published(o, u) {
  assert(in_batch_q[u]);
  in_batch_q[u] = false;
#ifndef BUG_HEAD_BEFORE_PUBLISH
  batch_q[o]?eval(u)                 /* the oldest item of the batch */
#endif
}

/* The publication ends (inside its step): the head moves past the items. */
inline PublicationEnds(o) {
#ifndef BUG_HEAD_BEFORE_PUBLISH
  /* code: sched/internal/local_batch.h PublishClaimed: head_.store(head + count, std::memory_order_release); */
  HeadMoved(o)
#else
  skip
#endif
}

/* The items worker `w` read from batch `o`, oldest first, into the front queue as one
 * chain (used inside a step). */
inline ChainToFront(o, w) {
  do
  :: hold[w]?[u] -> hold[w]?u; Published(o, u);
     assert(!in_front[u] && !in_ready[u]);
     front!u; in_front[u] = true
  :: else -> break
  od;
  u = 0;
  PublicationEnds(o)
}

/* PushChain of what worker `w` read from batch `o`: one exchange for the chain, and the
 * head store. The Notify is folded into it as in FrontPush (in the code it comes after the
 * release, in AfterFrontPush: later only delays the wake of a holder that sleeps; the
 * holder does not go to sleep while the front queue is not empty). */
inline PushRead(o, w) {
  atomic {
    /* code: sched/internal/held_posts.h PushChain: return front_.PushChain(tasks[0], tasks[count - 1]); */
    was_empty = (len(front) == 0);
    ChainToFront(o, w);
#ifndef BUG_NO_FRONT_NOTIFY
    if
    :: was_empty -> front_notified = true
    :: else
    fi
#endif
  }
}

/* The owner's claim and read of its batch `w` (LocalBatch::PublishAsOwner), one step. With
 * nothing of its own waiting it takes no claim (IsEmptyForOwner, claim_lost). Else it waits
 * while another publication holds the claim (a taker may hold earlier posts of ours, not
 * yet pushed), then claims and reads. A batch that a taker emptied meanwhile is left
 * unclaimed: the owner alone appends, so its claim of an empty batch would publish
 * nothing and only make others wait. */
inline OwnerClaimRead(w) {
  /* code: sched/internal/local_batch.h PublishAsOwner: if (IsEmptyForOwner()) return 0;  // nothing of ours waits, nothing is being published */
  /* code: sched/internal/local_batch.h Claim: while (taking_.exchange(true, std::memory_order_acquire)) { */
  atomic {
#ifndef BUG_OWNER_NO_WAIT
    len(batch_q[w]) == 0 || !taking[w] ->
#endif
    if
    :: len(batch_q[w]) == 0 -> claim_lost = true
    :: else ->
#ifndef BUG_OWNER_NO_WAIT
       taking[w] = true;
#endif
       ReadBatch(w, w)
    fi
  }
}

inline OwnerRelease(w) {
#ifndef BUG_OWNER_NO_WAIT
  /* code: sched/internal/local_batch.h Release: void Release() { taking_.store(false, std::memory_order_release); } */
  taking[w] = false
#else
  skip                               /* it took no claim */
#endif
}

/* PublishOwnLocalToFront on worker `w` (the owner): PublishAsOwner with PushChain, then the
 * wake. */
inline PublishOwnLocal(w) {
  OwnerClaimRead(w);
  if
  :: claim_lost -> claim_lost = false
  :: else ->
     /* code: sched/internal/held_posts.h PublishOwnLocalToFront: [&](Task** tasks, std::uint32_t count) { was_empty = PushChain(tasks, count); }); */
     PushRead(w, w);
     OwnerRelease(w);
     /* code: sched/internal/held_posts.h PublishOwnLocalToFront: AfterFrontPush(was_empty); */
     AfterFrontPush()
  fi
}

/* A post from inside a task running on worker `w`. Run now: into the local batch when no
 * worker may be idle (the test and the append are separate steps, as in AppendLocal), else
 * behind the worker's held posts (PublishOwnLocalToFront first) into the front queue. Any
 * other post (a deadline, a wait) also publishes the held posts first (PostMarked).
 * Counted in the worker's own slot. */
inline PostFromTask(t, kind, w) {
  if
  /* code: sched/internal/held_posts.h AppendLocal: if (SomeWorkerMayBeIdle()) { */
  :: kind == DUE && executing == WORKER_COUNT ->
     atomic {
       /* code: sched/task.h MarkQueuedExclusive: queued_.store(1, std::memory_order_relaxed); */
       MarkPosted(t, kind, w);
       assert(!in_front[t] && !in_ready[t] && !in_batch_q[t]);
       /* code: sched/internal/local_batch.h Append: tail_.store(end + 1, std::memory_order_release); */
       batch_q[w]!t;
       in_batch_q[t] = true
     }
  :: else ->
     /* code: sched/internal/held_posts.h AppendLocal: PublishOwnLocalToFront(worker); */
     /* code: sched/task_scheduler.h PostMarked: if (local_batches_) PublishOwnLocalToFront(worker); */
#ifndef BUG_FRONT_POST_SKIPS_HELD
     PublishOwnLocal(w);
#endif
     atomic {
       MarkPosted(t, kind, w);
       FrontPush(t)
     };
     AfterFrontPush()
  fi
}

/* TakeOverLocalBatch(o, wait) by worker `me`: LocalBatch::TryTakeOver (an idle worker: it
 * gives up while another publication holds the claim; that publisher pushes and wakes) or,
 * with `wait`, TakeOver (a busy one: it waits for that publication to end, then publishes
 * what is left). Claim and read, one step; the push with the head store; the release; the
 * wake (see ReadBatch). `published`: it pushed something (the caller clears it). A
 * take-over that finds the batch empty when it claims it takes no claim (one step): its
 * claim could only make the owner's publication wait, and in a model without time an idle
 * worker, whose re-checks (kLocalBatchRecheck, 1 ms in the code) come at any moment, could
 * otherwise claim the empty batch every time the owner looks, a starvation of the owner's
 * wait that weak fairness does not exclude and that no scheduler with real time produces. */
inline TakeOverLocal(me, o, wait) {
  if
  /* code: sched/internal/held_posts.h TakeOverLocalBatch: const bool published = wait ? owner->local.TakeOver(publish) : owner->local.TryTakeOver(publish); */
  /* code: sched/internal/local_batch.h Claim: while (taking_.exchange(true, std::memory_order_acquire)) { */
  :: atomic { wait && !taking[o] -> ClaimRead(o, me) }
  /* code: sched/internal/local_batch.h TryTakeOver: if (taking_.exchange(true, std::memory_order_acquire)) return false; */
  :: atomic { !wait ->
       if
       :: taking[o] -> claim_lost = true          /* the owner publishes, or a third worker */
       :: else -> ClaimRead(o, me)
       fi }
  fi;
  if
  :: claim_lost -> claim_lost = false
  :: else ->
     /* code: sched/internal/held_posts.h TakeOverLocalBatch: was_empty = PushChain(tasks, count) || was_empty; */
     PushRead(o, me);
     /* code: sched/internal/local_batch.h Release: void Release() { taking_.store(false, std::memory_order_release); } */
     atomic { taking[o] = false; published = true };
     /* code: sched/internal/held_posts.h TakeOverLocalBatch: AfterFrontPush(was_empty); */
     AfterFrontPush()
  fi
}

/* A take-over's claim and read of batch `o` (inside a step), unless it is empty. */
inline ClaimRead(o, me) {
  if
  :: len(batch_q[o]) == 0 -> claim_lost = true             /* found nothing: done */
  :: else -> taking[o] = true; ReadBatch(o, me)
  fi
}

/* An idle worker `me` takes over (publishes) the other workers' local batches:
 * TakeOverLocalBatches, from Park and from the role holder's sleep. */
inline TakeOver(me) {
  took = false;
#ifndef BUG_NO_TAKEOVER
  o = 0;
  do
  :: o == WORKER_COUNT -> break
  :: else ->
     if
     /* code: sched/internal/held_posts.h TakeOverLocalBatches: if (other.get() != self && TakeOverLocalBatch(other.get(), */
     :: o != me -> TakeOverLocal(me, o, false); d_step { took = took || published; published = false }
     :: else
     fi;
     o++
  od;
  o = 0
#endif
}

#ifdef STALE_TAKEOVER
/* The end of an execution batch of worker `me` that executed `n` > 0 tasks (ExecuteBatch):
 * its own start count grows by n (seen_since of its records, saturated). One step with
 * leaving the batch (executing_). */
inline AddStarts(me, n) {
  /* code: sched/internal/worker_loop.h ExecuteBatch: worker->started += executed; */
  o = 0;
  do
  :: o == WORKERS -> break
  :: else ->
     if
     :: seen_held[me * WORKERS + o] ->
        if
        :: seen_since[me * WORKERS + o] + n >= EXEC_BATCH -> seen_since[me * WORKERS + o] = EXEC_BATCH
        :: else -> seen_since[me * WORKERS + o] = seen_since[me * WORKERS + o] + n
        fi
     :: else
     fi;
     o++
  od;
  o = 0
}

/* TakeOverStaleBatches: worker `me`, after an execution batch that executed tasks, looks at
 * every other worker's batch: forget it if empty, record it if new (or its head moved: a
 * publication of it ended), and take it over if it has stayed held, at the same head,
 * while `me` started EXEC_BATCH tasks. The look (LooksEmpty, Head, the comparison: relaxed
 * loads of hints) is one step: an owner's append or a publication's end between the loads
 * gives an outcome that a look just before or just after it also gives. The take-over that
 * follows is a separate step, so the owner may publish (or its batch end) in between; it
 * waits for a publication under way (whose publisher may be stopped in the middle: the
 * batch still counts as held) instead of starting more tasks. */
inline TakeOverStale(me) {
#ifndef BUG_NO_BUSY_TAKEOVER
  o = 0;
  do
  :: o == WORKER_COUNT -> break
  :: o == me -> o++
  :: else ->
     atomic {
       if
       /* code: sched/internal/held_posts.h TakeOverStaleBatches: if (other->local.LooksEmpty()) { */
       :: len(batch_q[o]) == 0 ->
          seen_held[me * WORKERS + o] = false; seen_same[me * WORKERS + o] = false;
          seen_since[me * WORKERS + o] = 0; stale = false
       /* code: sched/internal/held_posts.h TakeOverStaleBatches: if (!seen.held || seen.head != head) { */
       :: else ->
          if
          :: !seen_held[me * WORKERS + o] || !seen_same[me * WORKERS + o] ->
             /* code: sched/internal/held_posts.h TakeOverStaleBatches: seen = {true, head, self->started};  // a batch we had not seen: its clock starts */
             seen_held[me * WORKERS + o] = true; seen_same[me * WORKERS + o] = true;
             seen_since[me * WORKERS + o] = 0; stale = false
          /* code: sched/internal/held_posts.h TakeOverStaleBatches: if (self->started - seen.started < options_.execute_batch_size) continue; */
          :: else -> stale = (seen_since[me * WORKERS + o] >= EXEC_BATCH)
          fi
       fi
     };
     if
     :: stale ->
        stale = false;
        /* code: sched/internal/held_posts.h TakeOverStaleBatches: TakeOverLocalBatch(other, */
#ifdef BUG_BUSY_TAKEOVER_GIVES_UP
        TakeOverLocal(me, o, false);
#else
        TakeOverLocal(me, o, true);
#endif
        /* code: sched/internal/held_posts.h TakeOverStaleBatches: seen.held = false; */
        d_step {
          published = false;
          seen_held[me * WORKERS + o] = false; seen_same[me * WORKERS + o] = false;
          seen_since[me * WORKERS + o] = 0
        }
     :: else
     fi;
     o++
  od;
  o = 0
#else
  skip                           /* today's rule: only an idle worker takes batches over */
#endif
}
#endif

/* Wakeup / Signal / Cancel. */
inline Wake(t, bits) {
#ifdef BUG_WAKE_PLAIN_STORE
  old = state[t];
  state[t] = old | bits;
#else
  /* code: sched/task.h TryWake: const std::uint8_t old = state_.fetch_or(bits, std::memory_order_acq_rel); */
  atomic { old = state[t]; state[t] = old | bits };
#endif
  if
  /* code: sched/task_scheduler.h Wake: if (!task->TryWake(bits)) return; */
  :: (old & (kWaiting | kWoken)) == kWaiting -> PushFront(t)
  :: else
  fi;
  old = 0
}

/* Sched-role: MakeReady = ready_.PushPending. */
inline MakeReady(t) {
  assert(!in_ready[t] && !in_front[t] && !in_wait[t]);
#ifndef STOP
  /* Post order for tasks due at once: the client posted FIRST_DUE first. */
  assert(!(t == SECOND_DUE && deadline[t] == DUE && posted[t] == 1 &&
           deadline[FIRST_DUE] == DUE && posted[FIRST_DUE] == 1) || first_due_readied);
  if
  :: t == FIRST_DUE -> first_due_readied = true
  :: else
  fi;
#endif
  /* code: sched/internal/sched_role.h MakeReady: ready_.PushPending(task); */
  pending!t;
  in_ready[t] = true;
  moved++
}

/* Sched-role: a task popped from the front queue. */
inline ReceiveFromFront(t) {
  if
  /* code: sched/internal/sched_role.h ReceiveFromFront: if (task->IsWoken()) { */
  :: (state[t] & kWoken) != 0 ->
     /* code: sched/internal/sched_role.h ReceiveFromFront: if (wait_.Contains(task)) wait_.Remove(task); */
     atomic { in_wait[t] = false; MakeReady(t) }
  :: else ->
     assert((state[t] & kWaiting) == 0);
     if
     /* code: sched/internal/sched_role.h ReceiveFromFront: if (now.IsDueNow(deadline)) { */
     :: deadline[t] == DUE -> MakeReady(t)
     :: deadline[t] == FUTURE -> MakeReady(t)        /* the deadline has passed by now */
#ifdef STOP
     /* code: sched/internal/sched_role.h ReceiveFromFront: if (stopping && !task->WaitsThroughStop()) { */
     :: deadline[t] != DUE && stopping_l -> MakeReady(t)
     :: deadline[t] != DUE && !stopping_l ->
#else
     :: deadline[t] != DUE ->
#endif
        atomic {
          /* code: sched/task.h TryPendingToWaiting: return state_.compare_exchange_strong(expected, kWaiting, std::memory_order_release, */
          if
          :: state[t] == 0 -> state[t] = kWaiting; cas_ok = true
          :: else -> cas_ok = false
          fi
        };
        if
        /* code: sched/internal/sched_role.h ReceiveFromFront: wait_.Push(task, deadline); */
        :: cas_ok -> in_wait[t] = true
        :: else -> MakeReady(t)                      /* a waker got there first */
        fi;
        cas_ok = false
     fi
  fi
}

/* Sched-role: a task taken out of the wait queue, its deadline passed (or Stop). */
inline Expire(t) {
  in_wait[t] = false;
  atomic {
    /* code: sched/task.h TryWaitingToReady: return state_.compare_exchange_strong(expected, kWaiting | kWoken, std::memory_order_relaxed, */
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
  /* code: sched/internal/sched_role.h Schedule: if (!task->TryWaitingToReady()) continue; */
  :: else                                            /* a waker pushes it instead */
  fi;
#endif
  cas_ok = false
}

#ifdef STOP
/* PostCounters::AllFinished into `res`: every `finished`, then every `posted`, one load at a
 * time (the shared slot's `finished` is never written: every worker has a slot). */
inline AllFinished(res) {
  /* code: sched/post_counters.h AllFinished: for (const Slot& slot : slots_) finished += slot.finished.load(std::memory_order_seq_cst); */
#if WORKERS == 2
  sum_f = cnt_finished[0] + cnt_finished[1];
#else
  sum_f = cnt_finished[0];
#endif
  /* code: sched/post_counters.h AllFinished: std::uint64_t posted = shared_.posted.load(std::memory_order_seq_cst); */
  /* code: sched/post_counters.h AllFinished: for (const Slot& slot : slots_) posted += slot.posted.load(std::memory_order_seq_cst); */
  atomic {
#if WORKERS == 2
    sum_p = cnt_posted[SHARED] + cnt_posted[0] + cnt_posted[1];
#else
    sum_p = cnt_posted[SHARED] + cnt_posted[0];
#endif
    res = (sum_p == sum_f);
    assert(sum_p >= sum_f);                          /* posted >= finished, always */
    sum_p = 0;
    sum_f = 0
  }
}

inline LockEmptyMu() { atomic { !empty_mu -> empty_mu = true } }

/* Worker `w` finished `n` callbacks: BasicTaskScheduler::CountFinished. */
inline CountFinished(w, n) {
#ifdef BUG_WAITEMPTY_READ_BEFORE_FINISH
  waiting = (empty_waiters > 0);
  cnt_finished[w] = cnt_finished[w] + n;
#else
  /* code: sched/post_counters.h CountFinished: slot->finished.store(slot->finished.load(std::memory_order_relaxed) + n, */
  cnt_finished[w] = cnt_finished[w] + n;
  /* code: sched/task_scheduler.h CountFinished: if (empty_waiters_.load(std::memory_order_seq_cst) > 0 && IsEmpty()) { */
  waiting = (empty_waiters > 0);
#endif
  if
  :: waiting ->
     AllFinished(emp);
     if
     :: emp ->
        /* code: sched/task_scheduler.h CountFinished: { MutexLock lock(empty_mu_); } */
        LockEmptyMu();
        empty_mu = false;
        /* code: sched/task_scheduler.h CountFinished: empty_cv_.notify_all(); */
        empty_cv_waiting = false
     :: else
     fi
  :: else
  fi;
  d_step { waiting = false; emp = false }
}

/* Sched-role, while stopping: WakeWaitingForStop (the first role take of each Stop). */
inline WakeWaitingForStop() {
  if
  /* code: sched/internal/sched_role.h WakeWaitingForStop: if (generation == swept_generation_) return 0; */
  :: stop_gen != swept_gen ->
     swept_gen = stop_gen;
     if
     /* code: sched/internal/sched_role.h WakeWaitingForStop: while (Task* task = wait_.PopAny()) { */
     :: in_wait[TIMER] -> Expire(TIMER)
     :: else
     fi
  :: else
  fi
}
#endif

/* Runs with the role held; `retime` (result.retime_parkers) starts false and, like the
 * code's result, keeps its value across the passes of one call while a finite deadline
 * waits. */
inline Schedule() {
  do
  :: d_step { moved = 0; popped = 0 } ->
#ifdef STOP
     /* code: sched/internal/sched_role.h Schedule: if (exit_.load(std::memory_order_acquire)) { */
     if
     :: exit_ -> sched_exit = true; break
     :: else
     fi;
     /* code: sched/internal/sched_role.h Schedule: const bool stopping = stopping_.load(std::memory_order_acquire); */
     stopping_l = stopping;
     if
     /* code: sched/internal/sched_role.h Schedule: if (stopping) moved += WakeWaitingForStop(now); */
     :: stopping_l -> WakeWaitingForStop()
     :: else
     fi;
#endif
     /* Front queue -> wait/ready, one Pop at a time, at most BATCH. */
     do
     :: popped < BATCH ->
        atomic {
          /* code: sched/internal/sched_role.h Schedule: Task* task = front_.Pop(); */
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
     /* code: sched/internal/sched_role.h Schedule: moved += MoveLocalToReady(worker); */
     :: len(batch_q[me]) > 0 && len(front) == 0 ->
        /* MoveLocalToReady: PublishAsOwner (it waits for a take-over in progress), into
         * the ready queue's pending part, or the front queue if the take-over pushed
         * earlier posts of ours there meanwhile; the head store in the same step. */
        /* code: sched/internal/held_posts.h MoveLocalToReady: worker->local.PublishAsOwner([&](Task** tasks, std::uint32_t count) { */
        OwnerClaimRead(me);
        if
        :: claim_lost -> claim_lost = false
        :: else ->
           atomic {
             if
             /* code: sched/internal/held_posts.h MoveLocalToReady: if (!front_.IsEmpty()) { */
             :: len(front) > 0 -> ChainToFront(me, me)   /* (not empty: no notify, no wake) */
             :: else ->
                do
                /* code: sched/internal/held_posts.h MoveLocalToReady: for (std::uint32_t i = 0; i < count; ++i) ready_.PushPending(tasks[i]); */
                :: hold[me]?[u] -> hold[me]?u; Published(me, u); MakeReady(u)
                :: else -> break
                od;
                u = 0;
                PublicationEnds(me)
             fi
           };
           OwnerRelease(me)
        fi
     /* code: sched/internal/sched_role.h Schedule: PublishOwnLocalToFront(worker); */
     :: len(batch_q[me]) > 0 && len(front) > 0 -> PublishOwnLocal(me)
     :: else
     fi;
     /* Expired wait queue -> ready: any task with a finite deadline may have expired. */
     if
     /* code: sched/internal/sched_role.h Schedule: wait_.NextDeadline() == kNoDeadline ? nullptr : wait_.PopExpired(now.Get()); */
     :: in_wait[TIMER] && deadline[TIMER] == FUTURE -> Expire(TIMER)
     :: true
     fi;
     atomic {
       /* PublishNearestDeadline: a new finite nearest deadline asks for a retime wake. */
       /* code: sched/internal/sched_role.h PublishNearestDeadline: nearest_deadline_.store(next, std::memory_order_seq_cst); */
       /* A retime asked for earlier in this call is dropped once no finite deadline
        * waits any more (its task was woken or expired): nobody can sleep past it. */
       /* code: sched/internal/sched_role.h Schedule: } else if (wait_.NextDeadline() == kNoDeadline) { */
       retime = in_wait[TIMER] && deadline[TIMER] == FUTURE && (retime || !nearest);
       nearest = in_wait[TIMER] && deadline[TIMER] == FUTURE;
       /* code: sched/internal/sched_role.h Schedule: result.backlog = !front_.IsEmpty(); */
       backlog = (len(front) > 0)
     };
     if
     :: moved > 0 ->
        atomic {
          /* code: sched/internal/sched_role.h Schedule: ready_.FlushPending(); */
          do
          :: pending?[t] -> pending?t; ready!t
          :: else -> break
          od
        };
        break
     :: else
     fi;
     if
     /* code: sched/internal/sched_role.h Schedule: : ready_.Count() > 0)) { */
     :: len(ready) > 0 -> break
     :: else
     fi;
     if
     /* code: sched/internal/sched_role.h Schedule: if (popped > 0) return result; */
     :: backlog && popped > 0 -> break
     :: backlog -> skip                              /* a push in flight: look again */
     :: else ->
        /* Take over the other workers' local batches; else sleep holding the role until a
         * notify, the nearest deadline, or (while a worker executes) the re-check. */
        /* code: sched/internal/sched_role.h Schedule: } else if (TakeOverLocalBatches(worker)) { */
        TakeOver(me);
        if
        :: took -> took = false
        :: else ->
end_role_sleep:
           /* code: sched/internal/sched_role.h Schedule: io_.WaitUntil(until, io_sink); */
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
  /* code: sched/task.h BeginExecution: std::uint8_t old = state_.load(std::memory_order_relaxed); */
  :: state[t] == 0 -> skip
  /* code: sched/task.h BeginExecution: if (old != 0) old = state_.exchange(0, std::memory_order_acquire); */
  :: else -> state[t] = 0
  fi;
  atomic {
    /* code: sched/task.h BeginExecution: queued_.store(0, std::memory_order_relaxed); */
    queued[t] = false;
    assert(!running[t]);
#ifdef ENDLESS_REPOSTER
    if                                               /* RP_T's count saturates */
    :: ran[t] < 2 -> ran[t]++
    :: else
    fi;
    /* The bound: RP_T's starts between X_T's post and X_T's start. */
    if
    :: t == RP_T && x_window ->
       if
       :: rp_starts <= RP_BOUND -> rp_starts++
       :: else
       fi;
#ifdef ASSERT_BELOW_BOUND
       assert(rp_starts < RP_BOUND)                  /* must fail: the bound is reached */
#else
       assert(rp_starts <= RP_BOUND)
#endif
    :: t == X_T -> x_window = false; rp_starts = 0
    :: else
    fi;
#else
    assert(ran[t] < posted[t]);                      /* every run has its post */
    ran[t]++;
#endif
    running[t] = true
  };
#ifdef STOP
  /* TIMER's first run re-posts it to run at once (one worker); LATE just runs, or with
   * LATE_REPOSTS re-posts itself once too. */
  if
  :: atomic { t == TIMER && ran[TIMER] < TIMER_POSTS -> running[t] = false };
     PostFromTask(TIMER, DUE, w)
#ifdef LATE_REPOSTS
  :: atomic { t == LATE && ran[LATE] < LATE_POSTS -> running[t] = false };
     PostFromTask(LATE, DUE, w)
#endif
  :: else -> running[t] = false
  fi
#elif defined(LOCAL_REPOST)
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
#elif defined(ENDLESS_REPOSTER)
  if
  :: t == LONG_T ->
     PostFromTask(X_T, DUE, w);                      /* held while both workers execute */
#ifdef SECOND_POST
     PostFromTask(X2_T, DUE, w);
     ran[X2_T] == 1 && !running[X2_T];
#endif
     ran[X_T] == 1 && !running[X_T];                 /* does not return until X_T has run
                                                      * (a coroutine's WaitFor, blocking) */
     running[t] = false
  :: atomic { t == RP_T -> running[t] = false };
     PostFromTask(RP_T, DUE, w)                      /* re-posts itself to run now: forever */
  :: t == X_T -> running[t] = false
#ifdef SECOND_POST
  :: t == X2_T -> running[t] = false
#endif
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
  byte t, u, old, moved, popped, o, k, executed;
  bool got, backlog, more, sleep, was_empty, cas_ok, retime, published, took;
  bool in_batch, nd, rl, due, claim_lost, stale;
  bool ended_early = true;
#ifdef STOP
  bool sched_exit, stopping_l, waiting, emp;
  byte sum_p, sum_f;
#endif
  do
  :: true ->
#ifdef STOP
     /* Leave with nothing held: the local batch goes to the front queue (Stop drains it on
      * a fresh worker). Claimed tasks are not modelled (see "Local batches"). */
worker_top:
     if
     /* code: sched/internal/worker_loop.h WorkerMain: if (exit_.load(std::memory_order_acquire)) { */
     :: exit_ ->
#ifdef BUG_EXIT_DROPS_LOCAL
        break
#else
        /* code: sched/internal/worker_loop.h WorkerMain: PublishOwnLocalToFront(worker); */
        PublishOwnLocal(me);
        if
        /* code: sched/internal/worker_loop.h WorkerMain: if (!worker->HasClaimed()) break; */
        :: len(claimed_q[me]) == 0 -> break
        /* code: sched/internal/worker_loop.h WorkerMain: ExecuteBatch(worker); */
        :: else -> goto execute_batch            /* then `continue`: back here */
        fi
#endif
     :: else
     fi;
#endif
     /* The role only after a batch that ended early, or with a local batch to publish. */
     /* code: sched/internal/worker_loop.h WorkerMain: : batch_ended_early || has_local; */
     atomic {
       if
       /* code: sync/role_lock.h TryLock: return !held_.exchange(true, std::memory_order_acquire); */
       :: (ended_early || len(batch_q[me]) > 0) && !role -> role = true; got = true
       :: else -> got = false
       fi
     };
     if
     :: got ->
        Schedule();
        /* code: sync/role_lock.h Unlock: held_.store(false, std::memory_order_seq_cst); */
        role = false;
#ifdef STOP
        if
        /* code: sched/internal/worker_loop.h WorkerMain: if (result.exit) continue;  // leave at the loop top, with nothing held */
        :: sched_exit ->
           sched_exit = false;
#ifdef BUG_EXIT_DROPS_LOCAL
           break
#else
           goto worker_top           /* exit_ is still set: Stop clears it after the join */
#endif
        :: else
        fi;
#endif
        /* code: sched/internal/worker_loop.h WorkerMain: const bool more_to_schedule = result.backlog || !front_.IsEmpty(std::memory_order_seq_cst); */
        more = backlog || len(front) > 0;
#ifndef BUG_RELEASE_NO_SIGNAL
        if
        /* code: sched/internal/worker_loop.h WorkerMain: if (result.ready > 1 || more_to_schedule || result.retime_parkers) WakeOne(worker); */
        :: moved > 1 || more || retime -> WakeOne()
        :: else
        fi;
#endif
        d_step { got = false; more = false; backlog = false; moved = 0; popped = 0; retime = false }
     /* code: sched/internal/worker_loop.h WorkerMain: } else if (has_local) { */
     :: !got && len(batch_q[me]) > 0 -> PublishOwnLocal(me)   /* the role is held elsewhere */
     :: else
     fi;
     /* ExecuteBatch */
execute_batch:
     do
#ifdef CLAIMS
     /* Claimed tasks first; alone, the worker takes every ready task at once (PopUpTo). */
     :: atomic { executed < EXEC_BATCH && (len(claimed_q[me]) > 0 || len(ready) > 0) ->
                 if
                 /* code: sched/internal/worker_loop.h NextReadyTask: if (worker->HasClaimed()) { */
                 :: claimed_q[me]?[t] -> claimed_q[me]?t
                 :: else ->
                    ready?t;
                    if
                    /* code: sched/internal/worker_loop.h NextReadyTask: const std::uint32_t count = worker->consumer.PopUpTo(batch, kClaimCapacity); */
                    :: WORKER_COUNT == 1 ->
                       do
                       :: ready?[u] -> ready?u; claimed_q[me]!u
                       :: else -> break
                       od;
                       u = 0
                    :: else
                    fi
                 fi;
                 in_ready[t] = false;
                 if
                 :: !in_batch -> in_batch = true; executing++
                 :: else
                 fi };
#else
     /* code: sched/internal/worker_loop.h NextReadyTask: Task* const task = worker->consumer.Pop(); */
     :: atomic { executed < EXEC_BATCH && ready?[t] -> ready?t; in_ready[t] = false;
#ifdef SECOND_POST
                 /* Per-poster order: the pops are the start order. */
                 if
                 :: t == X_T -> x_taken = true
                 :: t == X2_T -> assert(x_taken)
                 :: else
                 fi;
#endif
                 if
                 /* code: sched/internal/worker_loop.h ExecuteBatch: executing_.fetch_add(1, std::memory_order_relaxed); */
                 :: !in_batch -> in_batch = true; executing++
                 :: else
                 fi };
#endif
        /* Chain wake: more seem ready, workers are parked. */
        if
        /* code: sched/internal/worker_loop.h ExecuteBatch: if (parked_.load(std::memory_order_relaxed) > 0 && ReadySeemsNonEmpty(worker)) { */
        :: parked > 0 && len(ready) > 0 -> WakeOne()
        :: else
        fi;
        Execute(t, me);
#ifdef COUNT_EXECUTED
        d_step { executed++; t = 0 };
#else
        d_step { executed = 1; t = 0 };              /* only "some" matters without a bound */
#endif
        /* The task boundary, one step (relaxed looks at hints): publish the local batch
         * early when a worker may be idle or the ready queue looks empty; else end the batch
         * when TimerDue (a finite nearest_deadline_ and the clock: any look may find it due)
         * and the role is free. */
        if
#ifdef CLAIMS
        /* out_of_ready: nothing claimed and the ready queue looks empty. Alone, the worker
         * then claims its local batch and runs it in place, unless the front queue holds
         * posts or a timer is due (ClaimLocalInPlace; nobody else can take the batch over,
         * so TakeAlone, without the claim, is one step). */
        /* code: sched/internal/worker_loop.h ExecuteBatch: if (SomeWorkerMayBeIdle() || */
        :: len(batch_q[me]) > 0 && executing < WORKER_COUNT -> break
        /* code: sched/internal/worker_loop.h ExecuteBatch: (out_of_ready && !(worker_count_ == 1 && ClaimLocalInPlace(worker)))) { */
        :: len(batch_q[me]) > 0 && len(claimed_q[me]) == 0 && len(ready) == 0 &&
           (WORKER_COUNT != 1 || len(front) > 0 || nearest) -> break
        :: len(batch_q[me]) > 0 && len(claimed_q[me]) == 0 && len(ready) == 0 &&
           WORKER_COUNT == 1 && len(front) == 0 ->
           atomic {
             /* code: sched/internal/held_posts.h ClaimLocalInPlace: const std::uint32_t count = worker->local.TakeAlone(worker->claimed); */
             assert(!taking[me]);
             do
             :: batch_q[me]?[u] -> batch_q[me]?u; in_batch_q[u] = false; in_ready[u] = true;
                claimed_q[me]!u
             :: else -> break
             od;
             u = 0
           };
           if
           /* code: sched/internal/worker_loop.h ExecuteBatch: if (TimerDue() && !role_.IsLocked()) break; */
           :: nearest && !role -> break
           :: true
           fi
        :: nearest && !role -> break
        :: len(batch_q[me]) > 0 && executing < WORKER_COUNT &&
           (len(ready) > 0 || len(claimed_q[me]) > 0) -> skip
#else
        /* code: sched/internal/worker_loop.h ExecuteBatch: if (SomeWorkerMayBeIdle() || */
        :: len(batch_q[me]) > 0 && (executing < WORKER_COUNT || len(ready) == 0) -> break
        /* code: sched/internal/worker_loop.h ExecuteBatch: if (TimerDue() && !role_.IsLocked()) break; */
        :: nearest && !role -> break
        /* SomeWorkerMayBeIdle is a relaxed load: it may miss a worker that just left its
         * batch, and the worker goes on with the next ready task. */
        :: len(batch_q[me]) > 0 && executing < WORKER_COUNT && len(ready) > 0 -> skip
#endif
        :: nearest -> skip                           /* not due yet */
        :: else
        fi
     /* code: sched/internal/worker_loop.h ExecuteBatch: while (executed < options_.execute_batch_size) { */
#ifdef CLAIMS
     :: executed >= EXEC_BATCH || (len(ready) == 0 && len(claimed_q[me]) == 0) -> break
#else
     :: executed >= EXEC_BATCH || len(ready) == 0 -> break
#endif
     od;
     atomic {
       if
       /* code: sched/internal/worker_loop.h ExecuteBatch: executing_.fetch_sub(1, std::memory_order_relaxed); */
       :: in_batch -> in_batch = false; executing--;
#ifdef STALE_TAKEOVER
          AddStarts(me, executed)
#else
          skip
#endif
       :: else
       fi
     };
#ifdef STOP
     if
     /* code: sched/internal/worker_loop.h ExecuteBatch: CountFinished(worker, executed); */
     :: executed > 0 -> CountFinished(me, executed)
     :: else
     fi;
#endif
     /* code: sched/internal/worker_loop.h WorkerMain: batch_ended_early = executed < options_.execute_batch_size; */
     ended_early = (executed < EXEC_BATCH);
     if
     :: executed > 0 ->
        executed = 0;
#ifdef STALE_TAKEOVER
        /* code: sched/internal/worker_loop.h WorkerMain: if (local_batches_ && worker_count_ > 1) TakeOverStaleBatches(worker); */
        if
        :: WORKER_COUNT > 1 -> TakeOverStale(me)
        :: else
        fi
#else
        skip
#endif
     :: else ->
        if
        /* code: sched/internal/worker_loop.h WorkerMain: if (!role_.IsLocked()) continue;  // the role is free: go and take it */
        :: !role -> skip
        :: else ->
           /* Park. SpinFor(WorkVisible) may find work and return early. */
           if
           :: len(ready) > 0 || (!role && len(front) > 0) -> skip
           :: true ->
              /* code: sched/internal/idle.h Park: parked_.fetch_add(1, std::memory_order_seq_cst); */
              parked++;
#ifdef BUG_PARK_NO_RECHECK
              sleep = true;
              nd = nearest;
              due = false;
#else
              /* Re-check after registering (seq_cst loads), in the code's order. */
              /* code: sched/internal/idle.h Park: const std::int64_t next_deadline = nearest_deadline_.load(std::memory_order_seq_cst); */
              nd = nearest;
              /* code: sched/internal/idle.h Park: const bool role_locked = role_.IsLocked(std::memory_order_seq_cst); */
              atomic {
                rl = role;
                if                                   /* timer_due: the clock, if finite */
                :: nd -> due = true
                :: true -> due = false
                fi
              };
              /* code: sched/internal/idle.h Park: const bool sleep = !exit_.load(std::memory_order_seq_cst) && !ReadySeemsNonEmpty(worker) && */
#ifdef STOP
              if
              :: exit_ -> sleep = false
              :: else ->
#endif
              if
              :: len(ready) > 0 -> sleep = false
              :: else ->
                 if
                 :: rl -> sleep = true
                 /* code: sched/internal/idle.h Park: (role_locked || front_.IsEmpty(std::memory_order_seq_cst)) && */
                 :: else -> sleep = (len(front) == 0)
                 fi
              fi;
#ifdef STOP
              fi;
#endif
              /* code: sched/internal/idle.h Park: : TakeOverLocalBatches(worker)); */
              /* From here on nd means "a timed park" (a finite deadline, not yet due). */
              d_step { sleep = sleep && !(due && !rl); nd = nd && !due; rl = false; due = false };
#endif
              if
              :: sleep -> TakeOver(me); sleep = !took; took = false
              :: else
              fi;
              if
              :: sleep ->
                 /* Timed to the deadline it read, if finite and not due; while a worker
                  * executes, at most kLocalBatchRecheck. */
end_park:        if
                 /* code: sched/internal/idle.h Park: ready_event_.ReceiveUntil(until); */
                 :: atomic { ready_event -> ready_event = false }
                 :: nd                                            /* its timeout passed */
#ifndef NO_BATCH_RECHECK
                 :: executing > 0                                 /* kLocalBatchRecheck */
#endif
                 fi
              :: else -> skip
              fi;
              /* code: sched/internal/idle.h Park: parked_.fetch_sub(1, std::memory_order_relaxed); */
              d_step { parked--; sleep = false; nd = false; rl = false; due = false }
           fi
        fi
     fi
  od;
#ifdef STOP
  /* Pass the exit on: one Send wakes one sleeper, which exits and wakes the next. */
  /* code: sched/internal/worker_loop.h WorkerMain: ready_event_.Send(); */
  atomic { ready_event = true; front_notified = true };
  /* The thread ends; Stop destroys its Worker after the joins, and with it whatever its
   * local batch still holds (nothing, since the publication above): such tasks would never
   * run, and Stop would wait for them for ever. */
  d_step {
    do
    :: batch_q[me]?[u] -> batch_q[me]?u
    :: else -> break
    od;
    do
    :: claimed_q[me]?[u] -> claimed_q[me]?u
    :: else -> break
    od;
    u = 0;
    alive--
  }
#endif
}

#ifdef STOP
/* The owner's WaitEmpty(nanoseconds::max()). */
inline WaitEmpty() {
  /* code: sched/task_scheduler.h WaitEmpty: empty_waiters_.fetch_add(1, std::memory_order_seq_cst); */
  empty_waiters++;
  /* code: sched/task_scheduler.h WaitEmpty: MutexLock lock(empty_mu_); */
  LockEmptyMu();
  /* code: sched/task_scheduler.h WaitEmpty: empty_cv_.wait(lock, is_empty); */
  do
  :: AllFinished(emp);
     if
     :: emp -> break
     :: else ->
        atomic { empty_cv_waiting = true; empty_mu = false };   /* wait: unlock and block */
        atomic { !empty_cv_waiting -> skip };
        LockEmptyMu()
     fi
  od;
  empty_mu = false;
  /* code: sched/task_scheduler.h WaitEmpty: empty_waiters_.fetch_sub(1, std::memory_order_relaxed); */
  empty_waiters--;
  emp = false
}

/* The owner's Start(n) / StartWorkers(n). */
inline StartWorkers(n) {
  atomic {
    worker_count = n;
    alive = n;
    i = 0;
    do
    :: i == n -> break
    :: else -> run Worker(i); i++
    od;
    i = 0
  }
}

inline Stop() {
#ifdef LATE_REPOSTS
  atomic { late_before_stop = (posted[LATE] > 0); late2_before_stop = (posted[LATE2] > 0) };
#else
  late_before_stop = (posted[LATE] > 0);
#endif
  atomic {
    /* code: sched/task_scheduler.h Stop: stop_generation_.store(stop_generation_.load(std::memory_order_relaxed) + 1, */
    stop_gen++;
    /* code: sched/task_scheduler.h Stop: stopping_.store(true, std::memory_order_release); */
    stopping = true
  };
  /* code: sched/task_scheduler.h Stop: io_.Notify(); */
  /* code: sched/task_scheduler.h Stop: ready_event_.Send(); */
  atomic { front_notified = true; ready_event = true };
  do
  :: WaitEmpty();
     /* code: sched/task_scheduler.h Stop: exit_.store(true, std::memory_order_release); */
     exit_ = true;
     atomic { front_notified = true; ready_event = true };
     /* code: sched/task_scheduler.h Stop: for (Thread& thread : threads_) thread.join(); */
     alive == 0;
#ifndef RESTART
     posted[LATE] >= 1;               /* ghost: LATE is posted by the join at the latest */
#ifdef LATE_REPOSTS
     posted[LATE2] == 1;
#endif
#endif
     /* code: sched/task_scheduler.h Stop: exit_.store(false, std::memory_order_relaxed); */
     exit_ = false;
     /* code: sched/task_scheduler.h Stop: if (IsEmpty()) break; */
     AllFinished(emp);
     if
     :: emp -> break
     /* code: sched/task_scheduler.h Stop: StartWorkers(1); */
     :: else -> StartWorkers(1)
     fi
  od;
  /* code: sched/task_scheduler.h Stop: stopping_.store(false, std::memory_order_relaxed);  // not started again: restartable */
  stopping = false;
  /* Stop's promise: the workers are gone, and every post made before the call (and the
   * posts its tasks made) has run. */
  assert(alive == 0 && posted[TIMER] == TIMER_POSTS && ran[TIMER] == TIMER_POSTS);
  assert(!late_before_stop || ran[LATE] == LATE_POSTS);
#ifdef LATE_REPOSTS
  assert(!late2_before_stop || ran[LATE2] == 1);
#endif
  emp = false;
  stops_done++
}

/* The owner: Start(WORKERS), PostWait(TIMER), Stop; with RESTART then Start(1), Stop. */
proctype Owner() {
  bool was_empty, emp;
  byte i, sum_p, sum_f;
#ifndef STOP_POSTER
  Post(LATE, DUE);
#endif
  StartWorkers(WORKERS);
  Post(TIMER, INFINITE);
  Stop()
#ifdef RESTART
  ;
  StartWorkers(1);
  posted[LATE] >= 1;                 /* the poster posts before the last Stop */
#ifdef LATE_REPOSTS
  posted[LATE2] == 1;
#endif
  Stop()
#endif
}

#ifdef STOP_POSTER
/* An outside thread posting LATE once: at any moment before the first Stop's join (it may
 * race with the workers' exit), or with RESTART before the second Stop. */
proctype Poster() {
  bool was_empty;
  Post(LATE, DUE)
#ifdef LATE_REPOSTS
  ;
  Post(LATE2, DUE)                   /* may be in the front queue when LATE re-posts */
#endif
}
#endif

active proctype Watchdog() {
  timeout ->
    assert(stops_done == STOPS);
    assert(posted[LATE] == LATE_POSTS && ran[LATE] == LATE_POSTS && posted[TIMER] == TIMER_POSTS && ran[TIMER] == TIMER_POSTS)
#ifdef LATE_REPOSTS
    ;
    assert(posted[LATE2] == 1 && ran[LATE2] == 1)
#endif
}

init {
  atomic {
    run Owner();
#ifdef STOP_POSTER
    run Poster()
#endif
  }
}

ltl all_run { <> (stops_done == STOPS) }

#else
proctype Client() {
  bool was_empty;
#ifdef LOCAL_REPOST
  Post(SHORT, DUE);
  Post(TIMER, DUE);
  Post(BLOCKER, DUE)
#elif defined(ENDLESS_REPOSTER)
  Post(LONG_T, DUE);
  Post(RP_T, DUE)
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
#ifdef ENDLESS_REPOSTER
    /* The re-poster never stops: nothing may ever come to rest (a rest leaves a post of
     * RP_T unstarted, or RP_T blocked in its re-post). */
    assert(false)
#else
    assert(posted[BLOCKER] == 1 && ran[BLOCKER] == 1);
    assert(posted[TIMER] == 2 && ran[TIMER] == 2);
#ifdef LOCAL_REPOST
    assert(posted[SHORT] == 1 && ran[SHORT] == 1)
#endif
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
#if !defined(LOCAL_REPOST) && !defined(ENDLESS_REPOSTER)
    /* (With LOCAL_REPOST or ENDLESS_REPOSTER every post is due at once: a wakeup only adds
     * bits that BeginExecution clears, checked without it.) */
    run Waker(1, kWoken | kSignaled);     /* Signal */
    run Waker(2, kWoken | kCancelled)     /* Cancel */
#endif
  }
}

#ifdef ENDLESS_REPOSTER
/* Every post starts: the finite ones (LONG_T, X_T: X_T starts after LONG_T posted it) and
 * each of RP_T's endless posts (queued[RP_T]: posted and not yet started). */
ltl every_post_starts { <> (ran[X_T] == 1) && [] (queued[RP_T] -> <> !queued[RP_T]) }
ltl x_starts { <> (ran[X_T] == 1) }
#else
ltl all_run { <> (ran[BLOCKER] == 1 && ran[TIMER] == 2) }
#endif
#endif
