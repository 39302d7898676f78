/* mpsc_queue.pml: the front queue (an intrusive MPSC linked queue with a stub node, in the
 * style of Vyukov's) together with the protocol that lets its single consumer, the
 * sched-role holder, sleep: a Push that finds the queue empty notifies the holder, and the
 * holder sleeps only when IsEmpty() is true.
 *
 * Checked:
 *   - every pushed item is popped exactly once (assertions at the pop, and the consumer
 *     terminates only after popping all of them);
 *   - FIFO: items come out in the order of the producers' tail exchanges, hence in each
 *     producer's push order and in causal order across producers (an item whose Push
 *     returned before another Push began comes out first);
 *   - no lost wakeup: the consumer never stays asleep while an item is queued; it would be
 *     an invalid end state (the producers have all finished, the consumer blocks forever);
 *   - liveness (LTL all_popped, weak fairness): every item is eventually popped.
 *
 * Atomicity: every access to shared memory (tail, the links) is its own step, so the model
 * explores every sequentially consistent interleaving of them; private computations are
 * merged into the neighbouring step. The notify channel is the AutoResetEvent of sync/auto_reset_event.h,
 * abstracted to its contract (a flag: Notify sets it, the sleep waits for it and clears it),
 * which signal.pml checks on its own.
 *
 * Seeded bugs (each must be rejected):
 *   BUG_NO_NOTIFY              "was empty" tested as prev == null (the old stack's test),
 *                              which never holds here: producers never notify.
 *   BUG_SLEEP_WITHOUT_ISEMPTY  the consumer sleeps whenever Pop returns nothing, without
 *                              checking IsEmpty(): a push between its tail exchange and its
 *                              link is missed.
 */

#ifndef PRODUCERS
#define PRODUCERS 2
#endif
#ifndef PER_PRODUCER
#define PER_PRODUCER 2
#endif
#define ITEMS (PRODUCERS * PER_PRODUCER)
#define NIL 0
#define STUB 1
#define NODES (ITEMS + 2) /* items are nodes 2 .. ITEMS+1 */
#define BIT(n) (1 << (n))

byte next[NODES];  /* the intrusive links; 0 = null */
byte tail = STUB;  /* producers' end: exchanged by every Push */
byte head = STUB;  /* consumer's end: private to the consumer */
bool notified;     /* the role holder's wake-up flag (Notify / WaitUntil) */

/* Ghost state for the properties. */
byte exchanges;        /* items exchanged into tail so far */
byte rank[NODES];      /* an item's position in the tail-exchange order */
int returned;          /* items whose Push has returned */
int before[NODES];     /* items whose Push returned before this item's Push began */
int popped_set;
byte popped;

/* The consumer's internal push of the stub: the same exchange-then-link as Push, without
 * ghost bookkeeping and without a notify (it is the consumer itself). */
inline PushStub() {
  /* code: queues/mpsc_queue.h Pop: Append(Stub()); */
  next[STUB] = NIL;
  atomic { prev = tail; tail = STUB };
  next[prev] = STUB;
}

proctype Producer(byte first) {
  byte item = first;
  byte prev;
  do
  :: item == first + PER_PRODUCER -> break
  :: else ->
     /* Push(item): the item is private until the exchange publishes it. */
     /* code: queues/mpsc_queue.h Append: LinkOf(node).store(nullptr, std::memory_order_relaxed); */
     d_step { next[item] = NIL; before[item] = returned };
     /* code: queues/mpsc_queue.h Append: T* const prev = tail_.exchange(node, std::memory_order_seq_cst); */
     atomic { prev = tail; tail = item; rank[item] = exchanges; exchanges++ };
     /* Between the exchange and this link the consumer cannot reach the item. */
     /* code: queues/mpsc_queue.h Append: LinkOf(prev).store(node, std::memory_order_release); */
     atomic { next[prev] = item; returned = returned | BIT(item) };
#ifdef BUG_NO_NOTIFY
     if
     :: prev == NIL -> notified = true
     :: else
     fi;
#else
     /* Push returned "was empty": the consumer may sleep, wake it. */
     /* code: queues/mpsc_queue.h Push: return Append(item) == Stub(); */
     /* code: sched/internal/idle.h AfterFrontPush: io_.Notify(); */
     if
     :: prev == STUB -> notified = true
     :: else
     fi;
#endif
     d_step { prev = NIL; item++ }
  od
}

proctype Consumer() {
  byte h, nx, t, prev, item;
  do
  :: popped == ITEMS -> break
  :: else ->
     /* item = Pop(): one item, FIFO, or NIL. */
     item = NIL;
     /* code: queues/mpsc_queue.h Pop: T* const first = head_.load(std::memory_order_relaxed); */
     /* code: queues/mpsc_queue.h Pop: T* next = LinkOf(head).load(std::memory_order_acquire); */
     atomic { h = head; nx = next[h] };
     if
     /* code: queues/mpsc_queue.h Pop: if (next == nullptr) return nullptr;  // empty, or the first push is in flight */
     :: h == STUB && nx == NIL -> goto popped_nothing
     /* code: queues/mpsc_queue.h Pop: head = next;                          // the stub leaves the chain */
     :: h == STUB && nx != NIL -> atomic { head = nx; h = nx; nx = next[h] }
     :: else
     fi;
     if
     /* code: queues/mpsc_queue.h Pop: SetHead(first, next); */
     :: nx != NIL -> d_step { head = nx; item = h }; goto popped_one
     :: else
     fi;
     /* h is the last linked item. If the tail moved on, a producer is between its exchange
      * and its link: nothing can be taken now. */
     /* code: queues/mpsc_queue.h Pop: if (tail_.load(std::memory_order_relaxed) != head) { */
     t = tail;
     if
     :: t != h -> goto popped_nothing
     :: else
     fi;
     /* Re-push the stub behind h so that h can be handed out. */
     PushStub();
     /* code: queues/mpsc_queue.h Pop: next = LinkOf(head).load(std::memory_order_acquire);  // the stub, or a racing push */
     nx = next[h];
     if
     :: nx != NIL -> d_step { head = nx; item = h }; goto popped_one
     :: else -> goto popped_nothing
     fi;
popped_one: skip;
     d_step {
       assert(item >= 2 && item < NODES);
       assert((popped_set & BIT(item)) == 0);          /* never twice */
       assert(rank[item] == popped);                   /* tail-exchange (FIFO) order */
       assert((before[item] & ~popped_set) == 0);      /* causal order across producers */
       popped_set = popped_set | BIT(item);
       popped++;
       h = 0; nx = 0; t = 0; prev = 0; item = 0
     };
     goto next_round;
popped_nothing: skip;
     d_step { h = 0; nx = 0; t = 0; prev = 0 };
#ifndef BUG_SLEEP_WITHOUT_ISEMPTY
     /* IsEmpty(), as queues/mpsc_queue.h computes it: head_ is the stub, then tail_ is the
      * stub. (The stub then has no successor: asserted, so the shorter test is proven
      * equivalent to "head is stub, stub.next null, tail is stub".) The role holder must not
      * sleep otherwise: a push is in flight, retry. */
     /* code: queues/mpsc_queue.h IsEmpty: return IsStub(head_.load(std::memory_order_relaxed)) && IsStub(tail_.load(order)); */
     if
     :: head == STUB ->
        if
        :: atomic { tail == STUB -> assert(next[STUB] == NIL) };
           /* code: sched/io_backend.h WaitUntil: void WaitUntil(TaskDeadline deadline, IoReadySink&) { signal_.ReceiveUntil(deadline); } */
           atomic { notified -> notified = false }  /* WaitUntil(no deadline) */
        :: else
        fi
     :: else
     fi;
#else
     atomic { notified -> notified = false };
#endif
next_round:
     skip
  od
}

init {
  byte p = 0;
  atomic {
    do
    :: p == PRODUCERS -> break
    :: else -> run Producer(2 + p * PER_PRODUCER); p++
    od;
    run Consumer()
  }
}

ltl all_popped { <> (popped == ITEMS) }
