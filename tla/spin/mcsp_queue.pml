/* mcsp_queue.pml: McspQueue (queues/mcsp_queue.h), the ready queue: one producer, several
 * consumers, a chain of fixed-size blocks. Inside a block the producer writes a slot and
 * publishes it by storing `end`; consumers read slot `begin` and claim it with a CAS of
 * `begin`. Stepping to the next block, linking a new block and recycling exhausted blocks
 * happen under the mutex; a block is recycled only when exhausted, not the tail, and no
 * consumer is attached to it.
 *
 * Harness: the producer pushes items 1..ITEMS, after each one choosing nondeterministically
 * whether to publish (Push) or to keep it pending for a later FlushPending (a batch);
 * CONSUMERS consumers attach, pop until every item has been taken, and detach.
 *
 * Checked (assertions, invalid end states, LTL all_taken under weak fairness):
 *   - every item is taken exactly once, and in push order (a claim is the successful CAS;
 *     claims are numbered 1, 2, 3, ... in the order they happen);
 *   - a consumer never reads a slot of a block that was recycled after it attached (a ghost
 *     "life" number per block, bumped when the block is freed; -DNO_LIFE_CHECK drops this
 *     check, to show what the bug below does to the items themselves);
 *   - a consumer that steps forward always finds a successor;
 *   - no deadlock, and every item is eventually taken.
 *
 * Atomicity: each lock-free access (slot, begin, end, next) is its own step. Code that runs
 * under the mutex is one atomic step (taking the mutex is the step's guard). That hides the
 * interleaving of lock-free consumer steps inside a critical section; it is sound here
 * because the critical sections only read `begin`/`end` (which only grow during a block's
 * life) and write fields of blocks no consumer is attached to, or a `next` that stays
 * non-null (the re-link around a recycled block). The seeded bug below breaks exactly that
 * premise and is caught anyway.
 *
 * Seeded bugs:
 *   BUG_RECYCLE_ATTACHED     recycling ignores the attached-consumer count: a consumer
 *                            that read a slot can win its CAS against the block's next life
 *                            (ABA on `begin`) and hand out an old item twice.
 *   BUG_LINK_BEFORE_PUBLISH  the producer links the successor before publishing the old
 *                            block's pending `end`: consumers take "has a successor" as
 *                            "end is final" and skip the unpublished items.
 */

#ifndef SLOTS
#define SLOTS 2 /* block size */
#endif
#ifndef ITEMS
#define ITEMS 5
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#define BLOCKS 4 /* block pool: blocks 1..BLOCKS, 0 = null */
#define NIL 0

byte b_begin[BLOCKS + 1];
byte b_end[BLOCKS + 1];
byte b_next[BLOCKS + 1];
byte b_consumers[BLOCKS + 1];  /* guarded by the mutex */
byte b_free_next[BLOCKS + 1];  /* guarded by the mutex */
byte slots[(BLOCKS + 1) * SLOTS];
byte life[BLOCKS + 1];         /* ghost: bumped each time the block is freed */

bool mutex;
byte q_head = 1;
byte q_tail = 1;
byte q_free = NIL;
byte allocated = 1;            /* block 1 is allocated by the constructor */

byte claims;                   /* ghost: items taken so far */

inline Lock() { !mutex -> mutex = true }  /* first statement of an atomic block */
inline Unlock() { mutex = false }

/* Under the mutex: `b` may still hold items unless it is a non-tail exhausted block. */
inline SkipExhaustedLocked(b) {
  do
  :: b != q_tail && b_begin[b] == b_end[b] -> b = b_next[b]
  :: else -> break
  od
}

inline FreeBlockLocked(b) {
  /* code: queues/mcsp_queue.h FreeBlockLocked: block->begin.store(0, std::memory_order_relaxed); */
  b_begin[b] = 0; b_end[b] = 0; b_next[b] = NIL;
  b_free_next[b] = q_free; q_free = b;
  life[b]++
}

inline RecycleLocked() {
  prev = NIL;
  rb = q_head;
  do
  :: rb != q_tail && b_begin[rb] == b_end[rb] ->
     rnext = b_next[rb];
#ifdef BUG_RECYCLE_ATTACHED
     if
     :: true ->
#else
     if
     :: b_consumers[rb] == 0 ->
#endif
        if
        :: prev == NIL -> q_head = rnext
        /* code: queues/mcsp_queue.h RecycleLocked: prev->next.store(next, std::memory_order_release); */
        :: else -> b_next[prev] = rnext
        fi;
        FreeBlockLocked(rb)
     :: else -> prev = rb
     fi;
     rb = rnext
  :: else -> break
  od;
  prev = NIL; rb = NIL; rnext = NIL
}

inline Publish() {
  /* code: queues/mcsp_queue.h Publish: write_block_->end.store(write_end_, std::memory_order_release); */
  b_end[wb] = write_end;
  published_end = write_end
}

proctype Producer() {
  byte item = 1;
  byte wb = 1, write_end, published_end, fresh;
  do
  :: item > ITEMS -> break
  :: else ->
     if
     :: write_end == SLOTS ->
        /* StartNewBlock */
#ifndef BUG_LINK_BEFORE_PUBLISH
        if
        :: write_end != published_end -> Publish()
        :: else
        fi;
#endif
        /* code: queues/mcsp_queue.h StartNewBlock: if (write_end_ != published_end_) Publish(); */
        atomic {
          /* code: queues/mcsp_queue.h StartNewBlock: MutexLock lock = lock_counter_.Lock(mutex_); */
          Lock();
          if
          :: q_free != NIL -> fresh = q_free; q_free = b_free_next[fresh]
          :: else -> assert(allocated < BLOCKS); allocated++; fresh = allocated
          fi;
          /* code: queues/mcsp_queue.h StartNewBlock: write_block_->next.store(fresh, std::memory_order_release); */
          b_next[wb] = fresh;
          q_tail = fresh;
          Unlock()
        };
#ifdef BUG_LINK_BEFORE_PUBLISH
        if
        :: write_end != published_end -> Publish()
        :: else
        fi;
#endif
        d_step { wb = fresh; write_end = 0; published_end = 0; fresh = NIL }
     :: else
     fi;
     /* PushPending: a plain slot write (nobody reads at or above `end`). */
     /* code: queues/mcsp_queue.h PushPending: write_block_->slots[write_end_++] = item; */
     slots[wb * SLOTS + write_end] = item;
     d_step { write_end++; item++ };
     /* Push publishes at once; PushPending leaves it for a later FlushPending. */
     if
     :: Publish()
     :: skip
     fi
  od;
  /* FlushPending */
  /* code: queues/mcsp_queue.h FlushPending: if (write_end_ != published_end_) Publish(); */
  if
  :: write_end != published_end -> Publish()
  :: else
  fi
}

proctype Consumer() {
  byte blk, begin, cend, item, mylife;
  byte prev, rb, rnext, target;
  bool won;
  /* Attach */
  atomic {
    /* code: queues/mcsp_queue.h Attach: Block* block = SkipExhaustedLocked(head_); */
    Lock();
    blk = q_head;
    SkipExhaustedLocked(blk);
    b_consumers[blk]++;
    mylife = life[blk];
    Unlock()
  };
  do
  :: claims == ITEMS -> break
  :: else ->
     /* Pop */
     /* code: queues/mcsp_queue.h PopUpTo: std::uint32_t begin = block->begin.load(std::memory_order_relaxed); */
     begin = b_begin[blk];
inner:
     if
     :: begin >= cend ->
        /* code: queues/mcsp_queue.h PopUpTo: cached_end_ = block->end.load(std::memory_order_acquire); */
        cend = b_end[blk];
        if
        :: begin >= cend -> goto looks_empty
        :: else
        fi
     :: else
     fi;
     /* Plain read of a slot not owned yet: the block must be in the life we attached to. */
     /* code: queues/mcsp_queue.h PopUpTo: for (std::uint32_t i = 0; i < count; ++i) out[i] = block->slots[begin + i]; */
#ifdef NO_LIFE_CHECK
     item = slots[blk * SLOTS + begin];
#else
     atomic { item = slots[blk * SLOTS + begin]; assert(life[blk] == mylife) };
#endif
     /* code: queues/mcsp_queue.h PopUpTo: if (block->begin.compare_exchange_weak(begin, begin + count, std::memory_order_relaxed, */
     atomic {
       if
       :: b_begin[blk] == begin ->
          b_begin[blk] = begin + 1;
          claims++;
          assert(item == claims);   /* each item once, in push order */
          won = true
       :: else -> begin = b_begin[blk]
       fi
     };
     if
     :: won -> d_step { won = false; item = 0; begin = 0 }; goto popped
     :: else -> goto inner
     fi;
looks_empty:
     if
     :: cend < SLOTS -> goto popped   /* not full: no successor, nothing visible */
     :: else
     fi;
     if
     /* code: queues/mcsp_queue.h PopUpTo: if (block->next.load(std::memory_order_acquire) == nullptr) return 0; */
     :: b_next[blk] == NIL -> goto popped
     :: else
     fi;
     /* code: queues/mcsp_queue.h PopUpTo: cached_end_ = block->end.load(std::memory_order_relaxed); */
     cend = b_end[blk];
     if
     /* code: queues/mcsp_queue.h PopUpTo: if (block->begin.load(std::memory_order_relaxed) < cached_end_) continue; */
     :: b_begin[blk] < cend -> goto popped   /* items published before the link: retry */
     :: else
     fi;
     /* StepForward */
     /* code: queues/mcsp_queue.h StepForward: Block* target = SkipExhaustedLocked(block->next.load(std::memory_order_relaxed)); */
     atomic {
       Lock();
       target = b_next[blk];
       assert(target != NIL);
       SkipExhaustedLocked(target);
       b_consumers[blk]--;
       b_consumers[target]++;
       RecycleLocked();
       Unlock();
       blk = target; target = NIL; mylife = life[blk]; cend = 0
     };
popped: skip;
     d_step { begin = 0; item = 0 }
  od;
  /* Detach */
  /* code: queues/mcsp_queue.h Detach: void Detach(Block* block, LockCounter* consumer_counter) { */
  atomic {
    Lock();
    b_consumers[blk]--;
    RecycleLocked();
    Unlock()
  }
}

init {
  atomic {
    byte c = 0;
    run Producer();
    do
    :: c == CONSUMERS -> break
    :: else -> run Consumer(); c++
    od
  }
}

ltl all_taken { <> (claims == ITEMS) }
