------------------------------ MODULE McspQueue ------------------------------
(***************************************************************************)
(* McspQueue (queues/mcsp_queue.h), the ready queue: one producer, several *)
(* consumers, a chain of blocks of BlockSize slots. Inside a block the     *)
(* producer writes a slot and publishes it by storing `end`; a consumer    *)
(* reads slot `begin` and claims it with a CAS of `begin`. Linking a new   *)
(* block, stepping to the next block and recycling exhausted blocks happen *)
(* under the mutex: each critical section is one action here (they only    *)
(* read `begin`/`end`, which grow during a block's life, and write fields  *)
(* of blocks no consumer is attached to, or a `next` that stays non-null). *)
(* Lock-free accesses are one action each. The free list is a sequence.    *)
(*                                                                         *)
(* Action names follow the code: PushPending, StartNewBlockPublish,        *)
(* StartNewBlockLink, Publish, FlushPending; Attach, PopLoadBegin,         *)
(* PopLoadEnd, PopReadSlot, PopCasBegin, PopLoadNext, PopReloadEnd,        *)
(* PopRecheckBegin, StepForward (with RecycleLocked), Detach.              *)
(* The Spin model tla/spin/mcsp_queue.pml checks the same properties.      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Consumers,   \* model values, e.g. {c1, c2}
          BlockSize,   \* slots per block, e.g. 2
          NumItems,    \* items pushed, 1..NumItems, e.g. 5
          NumBlocks,   \* block pool 1..NumBlocks (0 is null), e.g. 4
          BugRecycleAttached  \* BOOLEAN: seeded bug (Spin's BUG_RECYCLE_ATTACHED):
                              \*   recycling ignores the attached-consumer counts

ASSUME BugRecycleAttached \in BOOLEAN

Nil == 0
Blocks == 1..NumBlocks
Slots == 0..(BlockSize - 1)

VARIABLES
  bBegin, bEnd, bNext,   \* [Blocks -> Nat]: the block fields
  bConsumers,            \* [Blocks -> Nat]: attached consumers (under the mutex)
  slots,                 \* [Blocks -> [Slots -> 0..NumItems]]
  life,                  \* ghost: [Blocks -> Nat], bumped when a block is freed
  qHead, qTail, free, allocated,
  ppc, item, wb, writeEnd, publishedEnd,   \* the producer
  cpc, blk, begin, cend, citem, mylife,    \* [Consumers -> ...]: the consumers
  claimed,               \* ghost: items in claim (successful CAS) order
  badRead                \* ghost: a consumer read a slot of a block recycled under it

vars == <<bBegin, bEnd, bNext, bConsumers, slots, life, qHead, qTail, free, allocated,
          ppc, item, wb, writeEnd, publishedEnd, cpc, blk, begin, cend, citem, mylife,
          claimed, badRead>>
producerVars == <<ppc, item, wb, writeEnd, publishedEnd>>
consumerVars == <<cpc, blk, begin, cend, citem, mylife>>

Init ==
  /\ bBegin = [b \in Blocks |-> 0] /\ bEnd = [b \in Blocks |-> 0]
  /\ bNext = [b \in Blocks |-> Nil] /\ bConsumers = [b \in Blocks |-> 0]
  /\ slots = [b \in Blocks |-> [s \in Slots |-> 0]]
  /\ life = [b \in Blocks |-> 0]
  /\ qHead = 1 /\ qTail = 1 /\ free = <<>> /\ allocated = 1
  /\ ppc = "push" /\ item = 1 /\ wb = 1 /\ writeEnd = 0 /\ publishedEnd = 0
  /\ cpc = [c \in Consumers |-> "attach"]
  /\ blk = [c \in Consumers |-> 1] /\ begin = [c \in Consumers |-> 0]
  /\ cend = [c \in Consumers |-> 0] /\ citem = [c \in Consumers |-> 0]
  /\ mylife = [c \in Consumers |-> 0]
  /\ claimed = <<>> /\ badRead = FALSE

----------------------------------------------------------------------------
(* Helpers for the critical sections. *)

Exhausted(b) == bBegin[b] = bEnd[b]

RECURSIVE SkipExhausted(_)
SkipExhausted(b) == IF b # qTail /\ Exhausted(b) THEN SkipExhausted(bNext[b]) ELSE b

RECURSIVE ExhaustedPrefix(_)
ExhaustedPrefix(b) ==
  IF b # qTail /\ Exhausted(b) THEN <<b>> \o ExhaustedPrefix(bNext[b]) ELSE <<>>

Range(s) == {s[i] : i \in DOMAIN s}

\* RecycleLocked with the attached-consumer counts `cnt`: unlink every block of the
\* exhausted prefix that has no consumer, re-link the others around them, free them.
Recycle(cnt) ==
  LET P == ExhaustedPrefix(qHead)
      E == SkipExhausted(qHead)
      Kept == SelectSeq(P, LAMBDA b : cnt[b] > 0 /\ ~BugRecycleAttached)
      FreedSeq == SelectSeq(P, LAMBDA b : cnt[b] = 0 \/ BugRecycleAttached)
      Freed == Range(FreedSeq)
      Succ(b) == LET i == CHOOSE j \in DOMAIN Kept : Kept[j] = b
                 IN IF i < Len(Kept) THEN Kept[i + 1] ELSE E
  IN /\ qHead' = IF Kept # <<>> THEN Kept[1] ELSE E
     /\ bNext' = [b \in Blocks |-> IF b \in Freed THEN Nil
                                   ELSE IF b \in Range(Kept) THEN Succ(b)
                                   ELSE bNext[b]]
     /\ bBegin' = [b \in Blocks |-> IF b \in Freed THEN 0 ELSE bBegin[b]]
     /\ bEnd' = [b \in Blocks |-> IF b \in Freed THEN 0 ELSE bEnd[b]]
     /\ life' = [b \in Blocks |-> IF b \in Freed THEN life[b] + 1 ELSE life[b]]
     /\ free' = FreedSeq \o free
     /\ bConsumers' = cnt

----------------------------------------------------------------------------
(* The producer. *)

\* code: queues/mcsp_queue.h PushPending: write_block_->slots[write_end_++] = item;
PushPending ==                 \* slots[write_end++] = item (a full block first links a new one)
  /\ ppc = "push" /\ item <= NumItems
  /\ IF writeEnd = BlockSize
       THEN /\ ppc' = "new_block_publish"
            /\ UNCHANGED <<slots, item, writeEnd>>
       ELSE /\ slots' = [slots EXCEPT ![wb][writeEnd] = item]
            /\ writeEnd' = writeEnd + 1
            /\ item' = item + 1
            /\ ppc' = "maybe_publish"
  /\ UNCHANGED <<bBegin, bEnd, bNext, bConsumers, life, qHead, qTail, free, allocated,
                 wb, publishedEnd, claimed, badRead>> /\ UNCHANGED consumerVars

\* code: queues/mcsp_queue.h StartNewBlock: if (write_end_ != published_end_) Publish();
StartNewBlockPublish ==        \* publish the old block's pending slots before the link
  /\ ppc = "new_block_publish"
  /\ bEnd' = [bEnd EXCEPT ![wb] = writeEnd]
  /\ publishedEnd' = writeEnd
  /\ ppc' = "new_block_link"
  /\ UNCHANGED <<bBegin, bNext, bConsumers, slots, life, qHead, qTail, free, allocated,
                 item, wb, writeEnd, claimed, badRead>> /\ UNCHANGED consumerVars

\* code: queues/mcsp_queue.h StartNewBlock: write_block_->next.store(fresh, std::memory_order_release);
StartNewBlockLink ==           \* under the mutex: take a free block (or a new one), link it
  /\ ppc = "new_block_link"
  /\ LET fresh == IF free # <<>> THEN Head(free) ELSE allocated + 1
     IN /\ fresh \in Blocks   \* the pool is large enough for the configured sizes
        /\ free' = IF free # <<>> THEN Tail(free) ELSE free
        /\ allocated' = IF free # <<>> THEN allocated ELSE allocated + 1
        /\ bNext' = [bNext EXCEPT ![wb] = fresh]
        /\ qTail' = fresh
        /\ wb' = fresh
  /\ writeEnd' = 0 /\ publishedEnd' = 0
  /\ ppc' = "push"
  /\ UNCHANGED <<bBegin, bEnd, bConsumers, slots, life, qHead, item, claimed, badRead>>
  /\ UNCHANGED consumerVars

\* code: queues/mcsp_queue.h Publish: write_block_->end.store(write_end_, std::memory_order_release);
Publish ==                     \* Push: end.store(write_end, release); or leave it pending
  /\ ppc = "maybe_publish"
  /\ \/ /\ bEnd' = [bEnd EXCEPT ![wb] = writeEnd] /\ publishedEnd' = writeEnd
     \/ UNCHANGED <<bEnd, publishedEnd>>
  /\ ppc' = "push"
  /\ UNCHANGED <<bBegin, bNext, bConsumers, slots, life, qHead, qTail, free, allocated,
                 item, wb, writeEnd, claimed, badRead>> /\ UNCHANGED consumerVars

\* code: queues/mcsp_queue.h FlushPending: if (write_end_ != published_end_) Publish();
FlushPending ==
  /\ ppc = "push" /\ item > NumItems
  /\ bEnd' = [bEnd EXCEPT ![wb] = writeEnd] /\ publishedEnd' = writeEnd
  /\ ppc' = "done"
  /\ UNCHANGED <<bBegin, bNext, bConsumers, slots, life, qHead, qTail, free, allocated,
                 item, wb, writeEnd, claimed, badRead>> /\ UNCHANGED consumerVars

Producer == PushPending \/ StartNewBlockPublish \/ StartNewBlockLink \/ Publish \/ FlushPending

----------------------------------------------------------------------------
(* The consumers. *)

Set(f, c, v) == [f EXCEPT ![c] = v]
KeepQueue == UNCHANGED <<bBegin, bEnd, bNext, bConsumers, slots, life, qHead, qTail, free,
                         allocated>> /\ UNCHANGED producerVars

\* code: queues/mcsp_queue.h Attach: Block* block = SkipExhaustedLocked(head_);
Attach(c) ==                   \* under the mutex: the oldest block that may hold items
  /\ cpc[c] = "attach"
  /\ LET b == SkipExhausted(qHead)
     IN /\ blk' = Set(blk, c, b)
        /\ bConsumers' = [bConsumers EXCEPT ![b] = @ + 1]
        /\ mylife' = Set(mylife, c, life[b])
  /\ cpc' = Set(cpc, c, "load_begin")
  /\ UNCHANGED <<bBegin, bEnd, bNext, slots, life, qHead, qTail, free, allocated, begin, cend,
                 citem, claimed, badRead>> /\ UNCHANGED producerVars

\* code: queues/mcsp_queue.h PopUpTo: std::uint32_t begin = block->begin.load(std::memory_order_relaxed);
PopLoadBegin(c) ==             \* begin = block->begin (relaxed); the harness stops when all are taken
  /\ cpc[c] = "load_begin"
  /\ IF Len(claimed) = NumItems
       THEN cpc' = Set(cpc, c, "detach") /\ UNCHANGED begin
       ELSE /\ begin' = Set(begin, c, bBegin[blk[c]])
            /\ cpc' = Set(cpc, c, "check_end")
  /\ UNCHANGED <<blk, cend, citem, mylife, claimed, badRead>> /\ KeepQueue

\* code: queues/mcsp_queue.h PopUpTo: cached_end_ = block->end.load(std::memory_order_acquire);
PopLoadEnd(c) ==               \* if begin >= cached_end: cached_end = end (acquire)
  /\ cpc[c] = "check_end"
  /\ IF begin[c] >= cend[c]
       THEN /\ cend' = Set(cend, c, bEnd[blk[c]])
            /\ cpc' = Set(cpc, c, IF begin[c] >= bEnd[blk[c]] THEN "looks_empty" ELSE "read_slot")
       ELSE /\ cpc' = Set(cpc, c, "read_slot") /\ UNCHANGED cend
  /\ UNCHANGED <<blk, begin, citem, mylife, claimed, badRead>> /\ KeepQueue

\* code: queues/mcsp_queue.h PopUpTo: for (std::uint32_t i = 0; i < count; ++i) out[i] = block->slots[begin + i];
PopReadSlot(c) ==              \* item = slots[begin]: a plain read of a slot not owned yet
  /\ cpc[c] = "read_slot"
  /\ citem' = Set(citem, c, slots[blk[c]][begin[c]])
  /\ badRead' = (badRead \/ life[blk[c]] # mylife[c])
  /\ cpc' = Set(cpc, c, "cas")
  /\ UNCHANGED <<blk, begin, cend, mylife, claimed>> /\ KeepQueue

\* code: queues/mcsp_queue.h PopUpTo: if (block->begin.compare_exchange_weak(begin, begin + count, std::memory_order_relaxed,
PopCasBegin(c) ==              \* begin.compare_exchange(begin, begin + 1)
  /\ cpc[c] = "cas"
  /\ IF bBegin[blk[c]] = begin[c]
       THEN /\ bBegin' = [bBegin EXCEPT ![blk[c]] = begin[c] + 1]
            /\ claimed' = Append(claimed, citem[c])
            /\ cpc' = Set(cpc, c, "load_begin")
            /\ UNCHANGED begin
       ELSE /\ begin' = Set(begin, c, bBegin[blk[c]])
            /\ cpc' = Set(cpc, c, "check_end")
            /\ UNCHANGED <<bBegin, claimed>>
  /\ UNCHANGED <<bEnd, bNext, bConsumers, slots, life, qHead, qTail, free, allocated,
                 blk, cend, citem, mylife, badRead>> /\ UNCHANGED producerVars

\* code: queues/mcsp_queue.h PopUpTo: if (block->next.load(std::memory_order_acquire) == nullptr) return 0;
PopLoadNext(c) ==              \* not full: nothing; full: a successor means `end` is final
  /\ cpc[c] = "looks_empty"
  /\ cpc' = Set(cpc, c, IF cend[c] < BlockSize \/ bNext[blk[c]] = Nil THEN "load_begin"
                        ELSE "reload_end")
  /\ UNCHANGED <<blk, begin, cend, citem, mylife, claimed, badRead>> /\ KeepQueue

\* code: queues/mcsp_queue.h PopUpTo: cached_end_ = block->end.load(std::memory_order_relaxed);
PopReloadEnd(c) ==
  /\ cpc[c] = "reload_end"
  /\ cend' = Set(cend, c, bEnd[blk[c]])
  /\ cpc' = Set(cpc, c, "recheck_begin")
  /\ UNCHANGED <<blk, begin, citem, mylife, claimed, badRead>> /\ KeepQueue

\* code: queues/mcsp_queue.h PopUpTo: if (block->begin.load(std::memory_order_relaxed) < cached_end_) continue;
PopRecheckBegin(c) ==          \* items published before the link are still to be popped
  /\ cpc[c] = "recheck_begin"
  /\ cpc' = Set(cpc, c, IF bBegin[blk[c]] < cend[c] THEN "load_begin" ELSE "step_forward")
  /\ UNCHANGED <<blk, begin, cend, citem, mylife, claimed, badRead>> /\ KeepQueue

\* code: queues/mcsp_queue.h StepForward: Block* target = SkipExhaustedLocked(block->next.load(std::memory_order_relaxed));
\* code: queues/mcsp_queue.h StepForward: RecycleLocked();
StepForward(c) ==              \* under the mutex: move past exhausted blocks, recycle
  /\ cpc[c] = "step_forward"
  /\ LET target == SkipExhausted(bNext[blk[c]])
         cnt == [bConsumers EXCEPT ![blk[c]] = @ - 1, ![target] = @ + 1]
     IN /\ Recycle(cnt)
        /\ blk' = Set(blk, c, target)
        /\ mylife' = Set(mylife, c, life[target])
  /\ cend' = Set(cend, c, 0)
  /\ cpc' = Set(cpc, c, "load_begin")
  /\ UNCHANGED <<slots, qTail, allocated, begin, citem, claimed, badRead>>
  /\ UNCHANGED producerVars

\* code: queues/mcsp_queue.h Detach: RecycleLocked();
Detach(c) ==
  /\ cpc[c] = "detach"
  /\ Recycle([bConsumers EXCEPT ![blk[c]] = @ - 1])
  /\ cpc' = Set(cpc, c, "done")
  /\ UNCHANGED <<slots, qTail, allocated, blk, begin, cend, citem, mylife, claimed, badRead>>
  /\ UNCHANGED producerVars

Consumer(c) ==
  \/ Attach(c) \/ PopLoadBegin(c) \/ PopLoadEnd(c) \/ PopReadSlot(c) \/ PopCasBegin(c)
  \/ PopLoadNext(c) \/ PopReloadEnd(c) \/ PopRecheckBegin(c) \/ StepForward(c) \/ Detach(c)

AllDone == ppc = "done" /\ \A c \in Consumers : cpc[c] = "done"

Next == Producer \/ (\E c \in Consumers : Consumer(c)) \/ (AllDone /\ UNCHANGED vars)

Spec == Init /\ [][Next]_vars /\ WF_vars(Producer) /\ \A c \in Consumers : WF_vars(Consumer(c))

----------------------------------------------------------------------------
(* Properties. *)

\* Every claim takes the next item: each item exactly once, in push order.
ClaimsInPushOrder == \A i \in 1..Len(claimed) : claimed[i] = i

\* No consumer reads a slot of a block that was recycled after it attached.
NoRecycledRead == ~badRead

\* The chain never loses its tail, and a freed block is never in use.
FreeBlocksUnused == \A i \in DOMAIN free : free[i] # qTail /\ bConsumers[free[i]] = 0

TypeOK ==
  /\ qHead \in Blocks /\ qTail \in Blocks
  /\ bConsumers \in [Blocks -> Nat]
  /\ claimed \in Seq(1..NumItems)

\* Liveness: every item is eventually taken.
AllTaken == <>(Len(claimed) = NumItems)
=============================================================================
