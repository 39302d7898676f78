----------------------------- MODULE MpscQueue -----------------------------
(***************************************************************************)
(* The front queue (queues/mpsc_queue.h): an intrusive multi-producer,     *)
(* single-consumer linked queue with a stub node, and the protocol that    *)
(* lets its consumer (the sched-role holder) sleep: a Push that returns    *)
(* "was empty" (its previous tail was the stub) notifies the consumer, and *)
(* the consumer sleeps only when IsEmpty() holds.                          *)
(*                                                                         *)
(* Every shared access is its own step (sequentially consistent            *)
(* interleaving). Action names follow the code: Push's steps P1-P3 are     *)
(* PushClearLink, PushExchange, PushLink, then PushNotify; Pop's steps     *)
(* C1-C6 are PopReadHead, PopSkipStub, PopTake, PopCheckTail,              *)
(* PopAppendStub{Clear,Exchange,Link}, PopReread; IsEmpty is IsEmptyHead / *)
(* IsEmptyTail; the sleep is WaitUntil.                                    *)
(* The Spin model tla/spin/mpsc_queue.pml checks the same properties.      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Producers,        \* e.g. {p1, p2} (model values)
          PerProducer,      \* items each producer pushes, e.g. 2
          Stub, Null,       \* model values: the stub node and the null link
          BugNoNotify       \* BOOLEAN: seeded bug (Spin's BUG_NO_NOTIFY): a producer tests
                            \*   "was empty" as prev = null, the old stack's test, which is
                            \*   never true here, so it never notifies

ASSUME Stub # Null /\ BugNoNotify \in BOOLEAN
Items == Producers \X (1..PerProducer)   \* item <<p, i>>: the i-th push of p
Nodes == Items \cup {Stub}

VARIABLES
  next,       \* [Nodes -> Nodes \cup {Null}]: the intrusive links
  tail,       \* producers' end (exchanged by every push)
  head,       \* consumer's end
  notified,   \* the consumer's wake-up flag (Notify sets, WaitUntil clears)
  ppc,        \* [Producers -> program counter]
  pushed,     \* [Producers -> 0..PerProducer]: pushes begun
  prev,       \* [Producers -> Nodes]: the value the exchange returned
  cpc,        \* consumer program counter
  h, nx,      \* Pop's locals
  cprev,      \* the stub append's exchange result
  exchanged,  \* ghost: items in tail-exchange order
  popped,     \* ghost: items in pop order
  returned,   \* ghost: items whose Push has returned
  before      \* ghost: [Items -> SUBSET Items], pushes returned before this one began

vars == <<next, tail, head, notified, ppc, pushed, prev, cpc, h, nx, cprev,
          exchanged, popped, returned, before>>

Item(p) == <<p, pushed[p]>>   \* the item p is pushing

Init ==
  /\ next = [n \in Nodes |-> Null]
  /\ tail = Stub
  /\ head = Stub
  /\ notified = FALSE
  /\ ppc = [p \in Producers |-> "start"]
  /\ pushed = [p \in Producers |-> 0]
  /\ prev = [p \in Producers |-> Stub]
  /\ cpc = "read_head"
  /\ h = Stub /\ nx = Null /\ cprev = Stub
  /\ exchanged = <<>> /\ popped = <<>>
  /\ returned = {}
  /\ before = [i \in Items |-> {}]

----------------------------------------------------------------------------
(* Producers: Push(item). *)

\* code: queues/mpsc_queue.h Append: LinkOf(node).store(nullptr, std::memory_order_relaxed);
PushClearLink(p) ==            \* P1: item.next = null (the item is still private)
  /\ ppc[p] = "start" /\ pushed[p] < PerProducer
  /\ pushed' = [pushed EXCEPT ![p] = @ + 1]
  /\ next' = [next EXCEPT ![<<p, pushed[p] + 1>>] = Null]
  /\ before' = [before EXCEPT ![<<p, pushed[p] + 1>>] = returned]
  /\ ppc' = [ppc EXCEPT ![p] = "exchange"]
  /\ UNCHANGED <<tail, head, notified, prev, cpc, h, nx, cprev, exchanged, popped, returned>>

\* code: queues/mpsc_queue.h Append: T* const prev = tail_.exchange(node, std::memory_order_seq_cst);
PushExchange(p) ==             \* P2: prev = tail.exchange(item)
  /\ ppc[p] = "exchange"
  /\ prev' = [prev EXCEPT ![p] = tail]
  /\ tail' = Item(p)
  /\ exchanged' = Append(exchanged, Item(p))
  /\ ppc' = [ppc EXCEPT ![p] = "link"]
  /\ UNCHANGED <<next, head, notified, pushed, cpc, h, nx, cprev, popped, returned, before>>

\* code: queues/mpsc_queue.h Append: LinkOf(prev).store(node, std::memory_order_release);
PushLink(p) ==                 \* P3: prev.next = item (release)
  /\ ppc[p] = "link"
  /\ next' = [next EXCEPT ![prev[p]] = Item(p)]
  /\ returned' = returned \cup {Item(p)}
  /\ ppc' = [ppc EXCEPT ![p] = "notify"]
  /\ UNCHANGED <<tail, head, notified, pushed, prev, cpc, h, nx, cprev, exchanged, popped, before>>

\* code: sched/internal/idle.h AfterFrontPush: io_.Notify();
PushNotify(p) ==               \* Push returned prev == stub: io_.Notify()
  /\ ppc[p] = "notify"
  /\ notified' = (notified \/ (IF BugNoNotify THEN prev[p] = Null ELSE prev[p] = Stub))
  /\ ppc' = [ppc EXCEPT ![p] = "start"]
  /\ UNCHANGED <<next, tail, head, pushed, prev, cpc, h, nx, cprev, exchanged, popped, returned, before>>

----------------------------------------------------------------------------
(* The consumer: Pop() one item at a time; on nullptr, IsEmpty(); sleep only if empty. *)

AllPopped == Len(popped) = Cardinality(Items)

Hand(item, newHead) ==         \* Pop returns `item`
  /\ head' = newHead
  /\ popped' = Append(popped, item)
  /\ cpc' = IF Len(popped) + 1 = Cardinality(Items) THEN "done" ELSE "read_head"

Keep == UNCHANGED <<ppc, pushed, prev, exchanged, returned, before>>

\* code: queues/mpsc_queue.h Pop: T* const first = head_.load(std::memory_order_relaxed);
\* code: queues/mpsc_queue.h Pop: T* next = LinkOf(head).load(std::memory_order_acquire);
PopReadHead ==                 \* C1
  /\ cpc = "read_head"
  /\ h' = head
  /\ nx' = next[head]
  /\ cpc' = IF head = Stub /\ next[head] = Null THEN "is_empty_head"   \* nothing
            ELSE IF head = Stub THEN "skip_stub"
            ELSE "take"
  /\ UNCHANGED <<next, tail, head, notified, cprev, popped>> /\ Keep

\* code: queues/mpsc_queue.h Pop: head = next; // the stub leaves the chain
PopSkipStub ==                 \* C2: the stub leaves the chain
  /\ cpc = "skip_stub"
  /\ h' = nx
  /\ nx' = next[nx]
  /\ head' = nx
  /\ cpc' = "take"
  /\ UNCHANGED <<next, tail, notified, cprev, popped>> /\ Keep

PopTake ==                     \* C3: h has a successor: hand h out
  /\ cpc = "take"
  /\ IF nx # Null
       THEN Hand(h, nx)
       ELSE /\ cpc' = "check_tail" /\ UNCHANGED <<head, popped>>
  /\ UNCHANGED <<next, tail, notified, h, nx, cprev>> /\ Keep

\* code: queues/mpsc_queue.h Pop: if (tail_.load(std::memory_order_relaxed) != head) {
PopCheckTail ==                \* C4: a push in flight behind h?
  /\ cpc = "check_tail"
  /\ IF tail # h
       THEN /\ head' = h /\ cpc' = "is_empty_head"
       ELSE /\ cpc' = "stub_clear" /\ UNCHANGED head
  /\ UNCHANGED <<next, tail, notified, h, nx, cprev, popped>> /\ Keep

\* code: queues/mpsc_queue.h Pop: Append(Stub());
PopAppendStubClear ==          \* C5: Append(stub), P1
  /\ cpc = "stub_clear"
  /\ next' = [next EXCEPT ![Stub] = Null]
  /\ cpc' = "stub_exchange"
  /\ UNCHANGED <<tail, head, notified, h, nx, cprev, popped>> /\ Keep

PopAppendStubExchange ==       \* C5: Append(stub), P2
  /\ cpc = "stub_exchange"
  /\ cprev' = tail
  /\ tail' = Stub
  /\ cpc' = "stub_link"
  /\ UNCHANGED <<next, head, notified, h, nx, popped>> /\ Keep

PopAppendStubLink ==           \* C5: Append(stub), P3
  /\ cpc = "stub_link"
  /\ next' = [next EXCEPT ![cprev] = Stub]
  /\ cpc' = "reread"
  /\ UNCHANGED <<tail, head, notified, h, nx, cprev, popped>> /\ Keep

\* code: queues/mpsc_queue.h Pop: next = LinkOf(head).load(std::memory_order_acquire); // the stub, or a racing push
PopReread ==                   \* C6
  /\ cpc = "reread"
  /\ nx' = next[h]
  /\ IF next[h] # Null
       THEN Hand(h, next[h])
       ELSE /\ head' = h /\ cpc' = "is_empty_head" /\ UNCHANGED popped
  /\ UNCHANGED <<next, tail, notified, h, cprev>> /\ Keep

\* code: queues/mpsc_queue.h IsEmpty: return IsStub(head_.load(std::memory_order_relaxed)) && IsStub(tail_.load(order));
IsEmptyHead ==                 \* Pop returned nullptr: IsEmpty(), first head_ ...
  /\ cpc = "is_empty_head"
  /\ cpc' = IF head = Stub THEN "is_empty_tail" ELSE "read_head"
  /\ UNCHANGED <<next, tail, head, notified, h, nx, cprev, popped>> /\ Keep

IsEmptyTail ==                 \* ... then tail_
  /\ cpc = "is_empty_tail"
  /\ cpc' = IF tail = Stub THEN "sleep" ELSE "read_head"
  /\ UNCHANGED <<next, tail, head, notified, h, nx, cprev, popped>> /\ Keep

\* code: sched/internal/sched_role.h Schedule: io_.WaitUntil(until, io_sink);
WaitUntil ==                   \* sleeps until notified, consumes the flag
  /\ cpc = "sleep"
  /\ notified
  /\ notified' = FALSE
  /\ cpc' = "read_head"
  /\ UNCHANGED <<next, tail, head, h, nx, cprev, popped>> /\ Keep

----------------------------------------------------------------------------
Producer(p) == PushClearLink(p) \/ PushExchange(p) \/ PushLink(p) \/ PushNotify(p)
Consumer == PopReadHead \/ PopSkipStub \/ PopTake \/ PopCheckTail \/ PopAppendStubClear
            \/ PopAppendStubExchange \/ PopAppendStubLink \/ PopReread \/ IsEmptyHead
            \/ IsEmptyTail \/ WaitUntil

Done == AllPopped /\ cpc = "done" /\ UNCHANGED vars   \* terminal stuttering

Next == (\E p \in Producers : Producer(p)) \/ Consumer \/ Done

Spec == Init /\ [][Next]_vars /\ \A p \in Producers : WF_vars(Producer(p)) /\ WF_vars(Consumer)

----------------------------------------------------------------------------
(* Properties. *)

Range(s) == {s[i] : i \in DOMAIN s}

\* No item lost or duplicated, FIFO: items come out in tail-exchange order.
FifoExactlyOnce == popped = SubSeq(exchanged, 1, Len(popped))

\* Causal order across producers: a push that returned before another began pops first.
CausalOrder ==
  \A k \in 1..Len(popped) : before[popped[k]] \subseteq Range(SubSeq(popped, 1, k - 1))

\* No lost wakeup: asleep with no notify pending means nothing is queued, or a push that
\* found the queue empty is still on its way to notify.
NoLostWakeup ==
  (cpc = "sleep" /\ ~notified) =>
     \/ Len(popped) = Len(exchanged)
     \/ \E p \in Producers : ppc[p] \in {"link", "notify"} /\ prev[p] = Stub

\* IsEmpty (head_ and tail_ are the stub) implies the stub has no successor.
EmptyMeansNoSuccessor == (head = Stub /\ tail = Stub) => next[Stub] = Null

TypeOK ==
  /\ tail \in Nodes /\ head \in Nodes
  /\ next \in [Nodes -> Nodes \cup {Null}]
  /\ notified \in BOOLEAN

\* Liveness: every item is eventually popped.
AllEventuallyPopped == <>AllPopped
=============================================================================
