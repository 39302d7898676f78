/* home_queues.pml: the order rule of PostOrder::kHome (sched/internal/home_queues.h), the
 * home queues that are to make the two-worker hot path fast (issue 31), modelled before it
 * was built. The default order, PostOrder::kBatched (one shared ready queue plus local
 * batches), is task_scheduler.pml's.
 *
 * The proposal ("home queues with a skew bound"). Every worker owns a FIFO of ready tasks,
 * its home queue. A run-now post made by a task (a re-post, a coroutine's Yield, a Spawn)
 * goes to the tail of its worker's home queue, so a yielding coroutine stays on the core
 * whose caches hold it, as in Tokio. What Tokio does not have, and this adds, is an order
 * bound that holds whatever the other workers do:
 *   - Stamps. Every post carries a stamp from one global clock. A worker reserves BLOCK
 *     stamps at a time (one read-modify-write of the shared clock per BLOCK posts) and
 *     hands them out in order, so the stamps in one home queue only grow.
 *   - The look. Every E starts (execute_batch_size), a worker compares the heads: every
 *     task at the front of another worker's home queue whose stamp is more than S below
 *     the stamp of its own head (or any, when its own queue is empty) is taken, the whole
 *     prefix at once, and started before its own head, oldest first.
 *   - Published heads. So that a look does not read every other queue's ends (cache lines
 *     their owners write at every start), each worker publishes its head's stamp on a line
 *     of its own: at each of its looks, and when it pushes into a queue that was empty
 *     ("nothing" when it finds its queue empty). A look touches another queue only when
 *     that queue's published stamp is old enough. The published stamp is never newer than
 *     the real head, so it can only cost a look that takes nothing, never hide an old task;
 *     the push into an empty queue is what keeps that true for a worker that posts and
 *     then blocks without looking again.
 * When the workers run at the same pace, the heads stay within S of each other and nothing
 * moves between cores; when one worker runs a long task, blocks or stops, the others take
 * its queue's old prefix within a bounded number of their own starts.
 *
 * The `code:` references point at the scheduler's implementation, sched/internal/home_queues.h
 * (and the look's start in sched/internal/worker_loop.h). Two differences, neither of which
 * changes what is checked: the code's look takes one old task at a time and looks again
 * before any task of its own, where the model takes the whole old prefix in one step (the
 * same tasks start, in the same order, before the looker's own head); and the code publishes
 * on a push into an empty queue, where the model publishes when the published stamp is
 * NOTHING (in this harness the same pushes: a queue's owner publishes NOTHING exactly when it
 * finds its queue empty).
 * An idle worker, the second harness (-DIDLE_HARNESS, three workers). In the first harness
 * the looker's own queue is never empty for long, and its look with an empty queue takes
 * any head. The code's idle worker (own queue empty) instead takes tasks one by one from a
 * queue holding two or more (TakeOneFromOthers; a stuck owner's lone task only when there
 * is nothing else), and looks at each batch start with the skew measured from the newest
 * stamp it took since its last look (taken_stamp_max). Before that measure, an idle worker
 * beside a held sched-role ran a busy worker's posts without ever looking
 * (tests/sched/held_post_test.cc, HomeQueueTest.AnIdleWorkersTakesFromABusyQueueKeepTheBound:
 * 999 of 1,000 later posts before X; first seen under Wine in
 * ThreeWorkersLongTaskAndOutsideFlood). Two workers cannot reach it, so this harness has
 * three.
 *
 * What this model is for: the rule's order bound and liveness, not the lock-free steps.
 * A pop, a push, a reservation and a look are each one atomic step here (d_step); in the
 * code they are CASes on the queue's ends and one fetch_add on the clock, whose races are
 * a separate model (as mcsp_queue.pml is for the ready queue today).
 *
 * Harness (two workers):
 *   RP_W runs RP, a task that re-posts itself to run now every time it runs, for ever (a
 *     coroutine's Yield loop): its worker is never idle and never blocks. RP may also spawn
 *     ONE, a task that posts nothing, when none is queued: so posts and starts on RP_W do
 *     not keep step, and its looks fall at different points of its reserved blocks.
 *   LONG_W, after RP has posted a nondeterministic number of times (at most K; RP_W waits
 *     for it there, which bounds the stamps), runs a task that posts XS tasks to run now
 *     (into LONG_W's home queue) and then does not return until all of them have started:
 *     a coroutine's WaitFor, the worker blocked inside the task. Only RP_W's look can move
 *     them.
 *
 * Idle harness (-DIDLE_HARNESS; RP_W is the flood worker here, K is not used):
 *   LONG_W posts XS tasks and blocks until they have started, as above.
 *   RP_W runs a task that posts F one-shot tasks (they post nothing), at any points among
 *     LONG's posts, and then blocks the same way: F exceeds the bound, so a rule that lets
 *     the idle worker run them all before X fails.
 *   IDLE_W never posts. It runs what a look took, else takes one task from a queue of two
 *     or more (either queue first: the code scans by worker index), else a lone task (its
 *     owner stuck), and looks every E starts, measuring from the newest stamp it took.
 *   The same checks and the same BOUND hold, and it is reached (-DBOUND=3 fails at the
 *     defaults); -DBUG_IDLE_NO_MEASURE (the look measures from the idle worker's own, empty
 *     queue only: the code before the fix) and -DBUG_NO_PUBLISH_ON_PUSH fail the bound.
 *     Measured: E = 1 or 3, S = 2 with BLOCK = 1 or 2, BLOCK = 4 with F = 9, E = 4 with
 *     BLOCK = 1, XS = 1 or 3, F = 10: no violation of the default BOUND formula.
 *
 * Checked:
 *   - the bound (safety, an assertion at each start): while a task X waits, at most BOUND
 *     tasks posted after X start; the real post order is a ghost counter (`seq`), not the
 *     stamps, so the block reservation's coarseness is counted against the rule;
 *   - per-poster order: LONG's tasks start in the order it posted them;
 *   - no deadlock: the model ends once every X has started (valid end states);
 *   - liveness (LTL x_all_start, weak fairness): every X starts.
 * Both ways: -DBOUND=1 must fail (the harness does overtake: the assertion is not vacuous),
 * -DBUG_NO_LOOK (a worker only ever runs its own queue: Tokio's LIFO slot without the
 * steal) must fail the bound, and so must -DBUG_NO_PUBLISH_ON_PUSH (a push into an empty
 * queue leaves its published stamp at "nothing": LONG's tasks stay invisible to looks).
 *
 * Measured with this harness (K = 12 to 48): the most later-posted starts it reaches are 2
 * with the defaults (E = 2, S = 1, BLOCK = 2), 3 with S = 2, 8 with E = 8 and BLOCK = 1,
 * and 7 with E = 1 or 8 and BLOCK = 8: within the BOUND derived below, which also covers the phases of looks and
 * blocks that RP and ONE cannot produce.
 * Why a look takes the whole old prefix and not only the head: a worker holding n old tasks
 * would otherwise hand them over one per look, and the n-th would wait n looks, a bound
 * that grows with the queue. (With two or three X the harness cannot tell the two apart:
 * the extra looks cost one start each; the prefix rule is what the bound's derivation
 * needs.)
 */

#ifndef E
#define E 2 /* starts between two looks */
#endif
#ifndef S
/* The skew a look tolerates, in stamps. The scheduler's SkewOf varies it with the looking
 * worker's own queue, within [home_skew, home_skew_ceiling]; a look with any skew up to S
 * takes X once the looker's head is more than S above X's stamp, so a constant S, the
 * largest skew in effect, is the case that bounds the overtaking. */
#define S 1
#endif
#ifndef BLOCK
#define BLOCK 2 /* stamps reserved per clock update */
#endif
#ifndef K
#define K 12 /* at most this many posts of RP before LONG posts */
#endif
#ifndef XS
#define XS 2 /* tasks LONG posts */
#endif

/* Where the count comes from. Let x be the stamp of the first X; LONG_W reserved the block
 * [x, x + BLOCK). Every later-posted start on RP_W is the start of a distinct post made
 * after X's. (1) Such posts with stamps below x: only what was left of RP_W's block at X's
 * post, at most BLOCK - 1. (2) With stamps from x to x + S: at most S (RP_W's next block
 * starts at x + BLOCK or above). (3) A home queue's stamps only grow, so once RP_W's head
 * is above x + S, the next look takes X, and looks come every E starts: at most E more.
 * So at most (BLOCK - 1) + S + E. */
#ifndef BOUND
#define BOUND (E + S + BLOCK - 1)
#endif

#define LONG_W 0
#define RP_W 1 /* the idle harness: the flood worker */
#define RP 0 /* task ids: RP, the X tasks 1..XS, then ONE (the idle harness: each flood task) */
#define ONE (XS + 1)
#ifdef IDLE_HARNESS
#ifndef F
#define F 7 /* tasks the flood worker posts: more than BOUND, all may come after X */
#endif
#define IDLE_W 2
#define NW 3
#define QN (XS + F)
#else
#define NW 2
#define QN (XS + 2)
#endif

/* The home queues: ring buffers of QN items (task, stamp, ghost post number). */
byte q_task[NW * QN];
byte q_stamp[NW * QN];
byte q_seq[NW * QN];
byte q_head[NW];
byte q_len[NW];
#define AT(w, i) ((w) * QN + ((q_head[w] + (i)) % QN))

/* Each worker's published head stamp (NOTHING: its queue was empty). */
#define NOTHING 255
byte published[NW];

/* The global clock and each worker's reserved block [blk_next, blk_end). */
byte clock = 0;
byte blk_next[NW];
byte blk_end[NW];

/* Tasks the looking worker (RP_W; the idle harness: IDLE_W) took in a look, started before
 * anything else (oldest first). */
byte taken_task[QN];
byte taken_seq[QN];
byte taken_head = 0;
byte taken_len = 0;

/* Ghosts: the real post order and, per X, its post number and how often it was overtaken. */
byte seq = 0;
byte rp_posts = 0;
bool one_queued = false;
byte x_seq[XS + 1];
bool x_posted[XS + 1];
bool x_started[XS + 1];
byte x_started_count = 0;
byte overtaken[XS + 1];

/* The next stamp of worker w's block, reserving a new block when it is used up. */
inline Stamp(w, s) {
  if
  :: blk_next[w] == blk_end[w] ->
    /* code: sched/internal/home_queues.h NextStamp: worker->stamp_next = order_clock_.fetch_add(kStampBlock, std::memory_order_relaxed); */
    blk_next[w] = clock;
    clock = clock + BLOCK;
    blk_end[w] = blk_next[w] + BLOCK
  :: else -> skip
  fi;
  s = blk_next[w];
  blk_next[w]++;
#ifndef BUG_NO_PUBLISH_ON_PUSH
  /* code: sched/internal/home_queues.h HomePush: if (size == 1) worker->published_head.store(stamp, std::memory_order_relaxed); */
  if
  :: published[w] == NOTHING -> published[w] = s
  :: else -> skip
  fi
#endif
}

/* A post to run now by a task on worker w: stamp, ghost number, tail of w's home queue. */
inline Post(w, task, s) {
  Stamp(w, s);
  seq++;
  q_task[AT(w, q_len[w])] = task;
  /* code: sched/internal/home_queues.h HomePush: worker->home->Push(task, stamp); */
  q_stamp[AT(w, q_len[w])] = s;
  q_seq[AT(w, q_len[w])] = seq;
  q_len[w]++
}

/* The start of a task posted as number `posted`: counts the overtaking of every X still
 * waiting, and checks the bound and LONG's post order. */
inline Start(task, posted, i) {
  i = 1;
  do
  :: i > XS -> break
  :: i <= XS ->
    if
    :: x_posted[i] && !x_started[i] && posted > x_seq[i] ->
      overtaken[i]++;
      assert(overtaken[i] <= BOUND);
    :: else -> skip
    fi;
    i++
  od;
  if
  :: task != RP && task != ONE ->
    assert(task == 1 || x_started[task - 1]); /* LONG's posts start in its post order */
    x_started[task] = true;
    x_started_count++
  :: else -> skip
  fi
}

/* The head of worker v's queue into the taken list (run before anything else, oldest
 * first). */
inline TakeHead(v) {
  taken_task[(taken_head + taken_len) % QN] = q_task[AT(v, 0)];
  taken_seq[(taken_head + taken_len) % QN] = q_seq[AT(v, 0)];
  taken_len++;
  q_head[v] = (q_head[v] + 1) % QN;
  q_len[v]--
}

/* RP_W's look: when LONG_W's published stamp is more than S older than RP_W's own head,
 * take the front of LONG_W's queue while it is (every item when RP_W's queue is empty, with
 * no gate: FindWork's take). RP_W's own publication is not modelled: nobody else looks. */
inline Look() {
  if
  /* code: sched/internal/home_queues.h TakeOldTask: if (other->published_head.load(std::memory_order_relaxed) >= below) continue; */
  :: q_len[RP_W] == 0 || (published[LONG_W] != NOTHING &&
                          published[LONG_W] + S < q_stamp[AT(RP_W, 0)]) ->
    do
    /* code: sched/internal/home_queues.h TakeOldTask: const std::uint64_t below = own - skew; */
    /* code: queues/home_ring.h TakeFront: if (stamp >= below) break; */
    :: q_len[LONG_W] > 0 &&
       (q_len[RP_W] == 0 || q_stamp[AT(LONG_W, 0)] + S < q_stamp[AT(RP_W, 0)]) ->
      TakeHead(LONG_W);
    :: else -> break
    od
  :: else -> skip
  fi
}

#ifdef IDLE_HARNESS
/* The idle harness: IDLE_W's own queue stays empty (the flood tasks post nothing), so it
 * runs only what it takes from the others. */
byte idle_taken_max = 0; /* the newest stamp IDLE_W took since its last look */

/* IDLE_W takes the head of worker v's queue (TakeOneFromOthers, or the stuck owner's lone
 * task that ClaimOneFromOthers takes in Park and the idle role holder) and runs it next. */
inline IdleTakeOne(v) {
#ifndef BUG_IDLE_NO_MEASURE
  /* code: sched/internal/home_queues.h TakeOneFromOthers: self->taken_stamp_max = std::max(self->taken_stamp_max, stamp); */
  if
  :: q_stamp[AT(v, 0)] > idle_taken_max -> idle_taken_max = q_stamp[AT(v, 0)]
  :: else -> skip
  fi;
#endif
  TakeHead(v)
}

/* IDLE_W's look: with its own queue empty, it measures the skew from the newest stamp it
 * took since its last look (with BUG_IDLE_NO_MEASURE, from nothing: its look takes nothing,
 * the code before the fix). It takes the old prefix of each other queue whose published
 * stamp is old enough, then forgets what it took. */
inline IdleLook(v) {
  /* code: sched/internal/home_queues.h TakeOldTask: std::max(self->home->HeadStamp().value_or(0), self->taken_stamp_max); */
  if
  :: idle_taken_max > S ->
    v = 0;
    do
    :: v == IDLE_W -> break
    :: v < IDLE_W ->
      if
      :: published[v] != NOTHING && published[v] + S < idle_taken_max ->
        do
        :: q_len[v] > 0 && q_stamp[AT(v, 0)] + S < idle_taken_max -> TakeHead(v)
        :: else -> break
        od
      :: else -> skip
      fi;
      v++
    od
  :: else -> skip
  fi;
  /* code: sched/internal/home_queues.h NextHomeTask: worker->taken_stamp_max = 0; */
  idle_taken_max = 0
}

proctype IdleWorker() {
  byte since_look = 0;
  byte task, posted, i, v;
  do
  :: x_started_count == XS -> break
  :: x_started_count < XS && (taken_len > 0 || q_len[LONG_W] > 0 || q_len[RP_W] > 0) ->
    atomic {
      /* The look at an execution batch's start, every E starts at the latest. */
      if
      :: since_look == E -> since_look = 0; IdleLook(v)
      :: else -> skip
      fi;
      if
      :: taken_len > 0 -> skip
      /* TakeOneFromOthers: from a queue of two or more, in any order (the code scans the
       * workers by index, and either worker may be LONG_W). */
      :: q_len[LONG_W] >= 2 -> IdleTakeOne(LONG_W)
      :: q_len[RP_W] >= 2 -> IdleTakeOne(RP_W)
      /* Nothing of two or more: a lone task, once its owner counts as stuck (Park's and the
       * idle role holder's ClaimOneFromOthers). */
      :: q_len[LONG_W] == 1 && q_len[RP_W] < 2 -> IdleTakeOne(LONG_W)
      :: q_len[RP_W] == 1 && q_len[LONG_W] < 2 -> IdleTakeOne(RP_W)
      fi;
      task = taken_task[taken_head];
      posted = taken_seq[taken_head];
      taken_head = (taken_head + 1) % QN;
      taken_len--;
      Start(task, posted, i);
      since_look++
    }
  od
}

/* The flood worker: a task that posts F one-shot tasks (each posts nothing), at any points
 * among LONG's posts, and then blocks until every X has started, as LONG does. */
proctype FloodWorker() {
  byte k = 0, s;
  do
  :: k == F -> break
  :: k < F -> d_step { Post(RP_W, ONE, s) }; k++
  od;
  (x_started_count == XS)
}
#else
proctype RpWorker() {
  byte since_look = 0;
  byte task, posted, s, i;
  d_step { Post(RP_W, RP, s) }; /* RP's first post, by the client */
  do
  :: x_started_count == XS -> break
  :: x_started_count < XS && (rp_posts < K || x_posted[XS]) ->
    /* (LONG posts by RP's K-th post: RP_W waits for it there, which bounds the stamps.) */
    d_step {
#ifndef BUG_NO_LOOK
      /* code: sched/internal/worker_loop.h ExecuteBatch: worker->look_now = home_queues_; */
      if
      :: since_look == E -> since_look = 0; Look()
      :: else -> skip
      fi;
#endif
      /* code: sched/internal/home_queues.h NextHomeTask: if (Task* old = TakeOldTask(worker)) return old;  // and look again before the next */
      if
      :: taken_len > 0 ->
        task = taken_task[taken_head];
        posted = taken_seq[taken_head];
        taken_head = (taken_head + 1) % QN;
        taken_len--
      :: else ->
        task = q_task[AT(RP_W, 0)];
        posted = q_seq[AT(RP_W, 0)];
        q_head[RP_W] = (q_head[RP_W] + 1) % QN;
        q_len[RP_W]--
      fi;
      Start(task, posted, i);
      since_look++
    };
    /* RP's body ends with its re-post, one step later (LONG's posts may come between).
     * Before it, RP may also spawn ONE (a task that posts nothing), when no ONE is
     * queued: so starts and posts on RP_W do not keep step, and the looks fall at every
     * point of a reserved block. */
    if
    :: task == RP ->
      if
      :: !one_queued -> d_step { Post(RP_W, ONE, s); one_queued = true }
      :: true -> skip
      fi;
      d_step { Post(RP_W, RP, s); rp_posts++ }
    :: task == ONE -> one_queued = false
    :: else -> skip
    fi
  od
}

#endif

proctype LongWorker() {
  byte seen, s, k;
#ifndef IDLE_HARNESS
  /* LONG starts after RP has posted once and at most K times (any point in between). */
  (rp_posts >= 1);
  do
  :: break
  :: atomic { rp_posts < K -> seen = rp_posts }; (rp_posts != seen)
  od;
#endif
  k = 1;
  do
  :: k > XS -> break
  :: k <= XS ->
    d_step { Post(LONG_W, k, s); x_seq[k] = seq; x_posted[k] = true };
    k++
  od;
  (x_started_count == XS) /* WaitFor: blocked inside the task until all have started */
}

init {
  atomic {
    published[0] = NOTHING;
    published[1] = NOTHING;
#ifdef IDLE_HARNESS
    published[IDLE_W] = NOTHING;
    run FloodWorker();
    run IdleWorker();
#else
    run RpWorker();
#endif
    run LongWorker()
  }
}

ltl x_all_start { <> (x_started_count == XS) }
