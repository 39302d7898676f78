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
 * Not modelled: a third worker, idle. The model's look with an empty own queue takes any
 * head; the code's idle worker instead takes tasks one by one from a queue holding two or
 * more (or a lone task the role made ready, or a stuck owner's), and looks at each batch
 * start with the skew measured from the newest stamp it took since its last look. Before
 * that measure, an idle worker beside a held sched-role ran a busy worker's posts without
 * ever looking (tests/sched/held_post_test.cc,
 * HomeQueueTest.AnIdleWorkersTakesFromABusyQueueKeepTheBound: 999 of 1,000 later posts
 * before X; first seen under Wine in ThreeWorkersLongTaskAndOutsideFlood). Two workers
 * cannot reach it; that test checks it.
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
#define RP_W 1
#define RP 0 /* task ids: RP, the X tasks 1..XS, then ONE */
#define ONE (XS + 1)
#define QN (XS + 2)

/* The home queues: ring buffers of QN items (task, stamp, ghost post number). */
byte q_task[2 * QN];
byte q_stamp[2 * QN];
byte q_seq[2 * QN];
byte q_head[2];
byte q_len[2];
#define AT(w, i) ((w) * QN + ((q_head[w] + (i)) % QN))

/* Each worker's published head stamp (NOTHING: its queue was empty). */
#define NOTHING 255
byte published[2];

/* The global clock and each worker's reserved block [blk_next, blk_end). */
byte clock = 0;
byte blk_next[2];
byte blk_end[2];

/* Tasks RP_W took in a look, started before its own head (oldest first). */
byte taken_task[XS];
byte taken_seq[XS];
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
      taken_task[(taken_head + taken_len) % XS] = q_task[AT(LONG_W, 0)];
      taken_seq[(taken_head + taken_len) % XS] = q_seq[AT(LONG_W, 0)];
      taken_len++;
      q_head[LONG_W] = (q_head[LONG_W] + 1) % QN;
      q_len[LONG_W]--;
    :: else -> break
    od
  :: else -> skip
  fi
}

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
        taken_head = (taken_head + 1) % XS;
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

proctype LongWorker() {
  byte seen, s, k;
  /* LONG starts after RP has posted once and at most K times (any point in between). */
  (rp_posts >= 1);
  do
  :: break
  :: atomic { rp_posts < K -> seen = rp_posts }; (rp_posts != seen)
  od;
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
    run RpWorker();
    run LongWorker()
  }
}

ltl x_all_start { <> (x_started_count == XS) }
