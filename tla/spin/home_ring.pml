/* home_ring.pml: the lock-free steps of the proposed home queues (issue 31) and their
 * parking protocol, modelled before they go into sched/. home_queues.pml checks the rule
 * (which task a look takes, the order bound) with every queue step atomic; this model
 * splits those steps into the reads and writes the code makes, to check that the ring
 * hands every task out exactly once, intact, also while it grows, and that no task is
 * stranded on a worker that runs a long task while the other worker parks.
 *
 * The ring (one worker's home queue). head and tail only grow; slot i lives at index
 * i mod size of the current ring.
 *   - Push (owner only): read tail (its own) and head; if the ring is full, grow: copy the
 *     unclaimed slots [head, tail) into a ring twice the size (here: CAP0 -> CAP1) and swap
 *     the ring pointer; the old ring is never written again and stays allocated, so a taker
 *     still reading it reads what it held. Write the slot, then store tail + 1.
 *   - Take (the owner pops one, another worker takes half): read head, then tail, then the
 *     ring pointer, then the slots one by one, then CAS head from what it read to head + n.
 *     Any of those reads may be stale; the CAS decides: it fails if anyone claimed in
 *     between, and the values read are dropped.
 * Parking. A worker with nothing to take registers (parked++), looks at the ring again,
 * and sleeps on an event unless it saw a task. A pusher reads parked after its push and
 * sets the event if someone is parked. The code puts no fence between the pusher's tail
 * store and its read of parked (it would cost every yield), so the read can be satisfied
 * before the store is visible (x86's store buffer; C++ relaxed). Spin's interleavings are
 * sequentially consistent, so the model makes that outcome explicit: the pusher reads
 * parked BEFORE it stores tail. Then the two can miss each other, and what keeps a task
 * from being stranded is that the sleep is timed (kParkRecheck in the code): a parked
 * worker looks again while another worker executes.
 *
 * The `code:` references point at the ring, queues/home_ring.h (HomeRing), and at the
 * prototype scheduler whose parking this is (`HomeQueuePool` in bench/coro/yield_bench.cc).
 * The weak-memory side of the ring (which orders make these steps safe in C++) is checked
 * on the real header by the explorer (tests/explore/home_ring_*).
 *
 * Harness (two workers, one ring):
 *   OWNER runs a task that pushes up to N items into its ring (items 1..N, in order, so
 *     item v sits at index v - 1), popping and running its own head in between in any
 *     interleaving; when its pop finds the ring empty, or at any point it chooses, it
 *     starts a long task that never ends (it never touches the ring again).
 *   THIEF takes half of the ring (at least one) whenever it can, runs what it took, and
 *     parks when it finds nothing.
 * Checked:
 *   - exactly once: no item runs twice (assertion at each run);
 *   - intact: a claimed index holds the item pushed there (no slot overwritten before it
 *     was claimed, no slot read from a ring that never held it);
 *   - liveness (LTL all_run, weak fairness): once the owner is in its long task, every
 *     item it pushed runs (on the thief);
 *   - nothing stranded: if every process is blocked (the thief asleep for good), every
 *     item pushed has run (assertion in Watch).
 * Seeded bugs (each must fail):
 *   -DBUG_TAKER_STORE        the thief claims with a plain store instead of the CAS: an
 *                            item runs twice;
 *   -DBUG_NO_ROOM_CHECK      the owner pushes into a full ring without growing: a slot is
 *                            overwritten before it was claimed;
 *   -DBUG_RING_BEFORE_TAIL   a taker reads the ring pointer before the tail: it can read a
 *                            slot pushed into a newer ring from the old one;
 *   -DBUG_UNTIMED_PARK       the parked worker sleeps until woken, with no timed re-check:
 *                            a push that missed its registration strands the item.
 */

#ifndef N
#define N 3 /* items the owner pushes */
#endif
/* The timed re-check may fire whenever the owner still executes something (here always:
 * a task or its long task); it is what the code's kParkRecheck does. */
#define timeout_allowed true

#define CAP0 1 /* the first ring's size: full at once, so pushes grow it and reuse slots */
#define CAP1 4 /* the grown ring: room for every item */

byte ring0[CAP0];
byte ring1[CAP1];
bit current = 0; /* the ring pointer: 0 -> ring0, 1 -> ring1 */
byte head = 0;
byte tail = 0;

byte parked = 0;
bit event = 0; /* the wake event: a flag the sleeper consumes */

/* Ghosts. */
byte pushed = 0;
byte ran[N + 1];
byte ran_count = 0;
bit owner_in_long_task = 0;

inline ReadSlot(r, i, v) {
  if
  :: r == 0 -> v = ring0[(i) % CAP0]
  :: else -> v = ring1[(i) % CAP1]
  fi
}

inline Run(v) {
  d_step {
    ran[v]++;
    assert(ran[v] == 1); /* exactly once */
    ran_count++
  }
}

/* Take: up to half (`half`) or one item from the front; sets n to how many were claimed
 * into got[0..n), or 0 if the ring looked empty. Uses the caller's locals h, t, r, k, n,
 * got. */
inline Take(half) {
  do
  :: true ->
    h = head;
#ifdef BUG_RING_BEFORE_TAIL
    r = current;
#endif
    /* code: queues/home_ring.h TakeFront: const std::uint64_t tail = tail_.load(std::memory_order_acquire); */
    t = tail;
    if
    :: h >= t -> n = 0; break
    :: else -> skip
    fi;
#ifndef BUG_RING_BEFORE_TAIL
    /* code: queues/home_ring.h TakeFront: const Ring& ring = *ring_.load(std::memory_order_acquire); */
    r = current;
#endif
    n = t - h;
    if
    :: half -> n = (n + 1) / 2
    :: else -> n = 1
    fi;
    k = 0;
    do
    :: k < n -> ReadSlot(r, h + k, got[k]); k++
    :: else -> break
    od;
    /* code: queues/home_ring.h TakeFront: if (head_.compare_exchange_weak(head, head + n, std::memory_order_release, */
#ifdef BUG_TAKER_STORE
    if
    :: half -> head = h + n; break /* the thief: a plain store */
    :: else -> skip
    fi;
#endif
    atomic {
      if
      :: head == h -> head = h + n; break
      :: else -> skip /* someone claimed in between: drop what was read, retry */
      fi
    }
  od;
  /* What was claimed must be what was pushed there: item v at index v - 1. */
  k = 0;
  do
  :: k < n -> assert(got[k] == h + k + 1); k++
  :: else -> break
  od
}

proctype Owner() {
  byte h, t, r, k, n, i, seen;
  byte got[N];
  do
  :: pushed < N -> /* a push by a task running on this worker */
    t = tail; /* its own */
    /* code: queues/home_ring.h Push: if (tail - head_.load(std::memory_order_acquire) > ring->mask) ring = Grow(tail); */
    h = head;
#ifndef BUG_NO_ROOM_CHECK
    if
    :: current == 0 && t - h >= CAP0 ->
      /* Grow: copy the unclaimed slots (reads of its own writes), then swap the pointer. */
      d_step {
        i = h;
        do
        :: i < t -> ring1[i % CAP1] = ring0[i % CAP0]; i++
        :: else -> break
        od;
        i = 0
      };
      /* code: queues/home_ring.h Grow: ring_.store(now, std::memory_order_release); */
      current = 1
    :: else -> skip
    fi;
#endif
    if
    :: current == 0 -> ring0[t % CAP0] = t + 1
    :: else -> ring1[t % CAP1] = t + 1
    fi;
    /* The read of parked with no fence before it: satisfied before the tail store below
     * is visible (see the header). */
    /* code: bench/coro/yield_bench.cc PushOwn: if (parked_.load(std::memory_order_relaxed) > 0) WakeParked(); */
    seen = parked;
    /* code: queues/home_ring.h Push: tail_.store(tail + 1, std::memory_order_release); */
    d_step { tail = t + 1; pushed++ };
    if
    :: seen > 0 -> event = 1
    :: else -> skip
    fi
  :: pushed > 0 -> /* pop its own head and run it */
    Take(0);
    if
    :: n == 0 -> break /* empty: the next thing it runs is the long task */
    :: else -> Run(got[0])
    fi
  :: break /* a long task now */
  od;
  owner_in_long_task = 1;
end_long_task:
  false
}

proctype Thief() {
  byte h, t, r, k, n, i;
  byte got[N];
  do
  :: true ->
    Take(1);
    if
    :: n > 0 ->
      i = 0;
      do
      :: i < n -> Run(got[i]); i++
      :: else -> break
      od
    :: else ->
      /* Park: register, look again, sleep unless there is something. */
      /* code: bench/coro/yield_bench.cc FindWork: parked_.fetch_add(1, std::memory_order_seq_cst); */
      parked++;
      if
      :: tail > head -> skip /* the re-check saw a task */
      :: else ->
end_asleep: /* a valid end only if nothing is stranded: Watch checks that */
        if
        :: event -> event = 0
#ifndef BUG_UNTIMED_PARK
        /* code: bench/coro/yield_bench.cc FindWork: park_cv_.wait_for(lock, kParkRecheck); */
        :: timeout_allowed -> skip /* the timed re-check */
#endif
        fi
      fi;
      parked--
    fi
  od
}

/* Fires only when no process can move (with the timed re-check, never): then every item
 * pushed must have run. */
proctype Watch() {
  timeout -> assert(ran_count == pushed)
}

init {
  atomic {
    run Owner();
    run Thief();
    run Watch()
  }
}

ltl all_run { <> (owner_in_long_task && ran_count == pushed) }
