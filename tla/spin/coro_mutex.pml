/* coro_mutex.pml: coro::Mutex (coro/mutex.h) on the FIFO wait list (coro/wait_list.h) and
 * the epoch-checked wait of coro/internal/wait_word.h (PrepareWait / Waker::Wakeup / FinishWait).
 *
 * The mutex word `state_` is modelled as two fields changed together by every CAS: `owner`
 * (0 = unlocked, c+1 = coroutine c) and `hasw` (kHasWaiters). The wait list is a FIFO of
 * coroutine ids behind `listlock` (WaitList::lock()). Each coroutine has a wait word: `open`
 * (kOpen), `why` (the reason of the last closed wait) and `epoch`; a node holds the epoch of
 * the waker PrepareWait gave it (`node_epoch`).
 *
 * Harness: COROS coroutines, each doing ROUNDS times: lock, critical section, unlock.
 * Coroutine 0 uses Lock() (uncancellable, waits whatever happens); the others use
 * TryLockUntil(deadline), whose wait may end at any moment by the deadline, a Cancel or the
 * scheduler's shutdown. Those three are the same step here: a CAS that closes the open wait
 * (FinishWait's CAS, or RequestCancel's), racing with the granter's Wakeup CAS; the reason
 * is recorded as LEFT. A TryLockUntil may also find its deadline already passed (no wait).
 *
 * Steps, with the code's names:
 *   TryAcquireFast     CAS state 0 -> owner                                 (no lock)
 *   TryAcquireLocked   load, then CAS 0 -> owner or CAS s -> s|kHasWaiters  (list lock held)
 *   PrepareWait + PushBack   bump the epoch, open the wait, link the node    (list lock held)
 *   WaitWoken          resume once the wait is closed (by Wakeup or by leaving)
 *   Leave              the deadline/cancel/shutdown CAS: closes the wait if still open
 *   Finish             not woken: under the list lock, Remove the node if still linked and
 *                      WaiterLeftLocked (clear kHasWaiters if the list is now empty)
 *   Unlock             load; if kHasWaiters is clear, CAS owner -> 0; else HandOff
 *   HandOff            under the list lock: PopFront, store the popped waiter as owner
 *                      (kHasWaiters kept if others remain), WakePopped (Waker::Wakeup: one
 *                      CAS that succeeds only on the open wait of the node's epoch); on
 *                      false try the next node; an empty list stores 0.
 * Every access to `state_` outside the list lock is its own step; code under the list lock
 * is split at each access of `state_` or of a wait word (the ones other coroutines race
 * with), and list manipulations are single steps (only lock holders touch the list).
 *
 * Checked (assertions, invalid end states, LTL all_done under weak fairness):
 *   - mutual exclusion: at most one coroutine in the critical section, and it is the owner;
 *   - the lock is never lost: whenever the list lock is released, a non-empty wait list
 *     means the mutex is owned and has kHasWaiters set; after the last coroutine is done
 *     the mutex is free with an empty list; a Lock() waiter left waiting for good is an
 *     invalid end state;
 *   - FIFO: a coroutine that takes the lock without a hand-off finds no waiter whose wait
 *     is still open (no barging), and a hand-off goes to the waiter that queued first among
 *     those still waiting (ghost tickets);
 *   - no stale grant: a waiter whose wait ended by deadline/cancel does not own the mutex
 *     when it returns (its Waker's Wakeup came too late and was a no-op);
 *   - no granter touches a node whose waiter has left its awaiter (frame gone);
 *   - liveness: every coroutine eventually finishes, i.e. every waiter gets the mutex or
 *     leaves by deadline/cancel.
 *
 * Memory orders: the model is sequentially consistent. coro/mutex.h says at each access
 * which order makes that hold (acquire CAS on taking, release on giving, the hand-off's
 * data published by the wakeup's release CAS on the wait word).
 *
 * What the epoch adds here: WakePopped runs under the list lock and a waiter needs that
 * lock both to finish a wait that ended otherwise and to open its next one, so a granter's
 * waker never meets a later wait of its waiter. The "wait still open" half of WakeEpoch's
 * CAS is what the mutex relies on; with the epoch comparison alone removed (the open check
 * kept) every check here still passes at 3 coroutines x 2 rounds. The epoch comparison
 * matters for wakers used outside such a lock (coro/wait.h).
 *
 * Seeded bugs:
 *   BUG_IGNORE_EPOCH       the granter's wakeup does not check the wait word (neither open
 *                          nor epoch: a plain store of "closed by wakeup") and HandOff
 *                          assumes it landed: a waiter that already left by deadline/cancel
 *                          is made owner and returns without the lock, which is then lost.
 *   BUG_CLEAR_BEFORE_HANDOFF  Unlock with waiters stores 0 before it takes the list lock to
 *                          hand off: a running coroutine's fast path barges in ahead of the
 *                          oldest waiter, and two coroutines can end up owning the lock.
 *   BUG_HANDOFF_NEWEST     HandOff pops the newest waiter instead of the oldest (FIFO).
 *   BUG_NO_UNLINK          a waiter that leaves does not unlink its node: a granter later
 *                          pops a node whose frame is gone.
 * Switches that turn one check off, to show what a bug does next: NO_STALE_GRANT_CHECK,
 * NO_LOCK_LOST_CHECK, NO_MUTEX_CHECK.
 */

#ifndef COROS
#define COROS 3
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif

#define NONE 255
#define WAKEUP 1 /* the wait was closed by the granter's Waker::Wakeup */
#define LEFT 2   /* by the deadline, a cancel or the shutdown */

/* state_ */
byte owner;          /* 0 = unlocked, c + 1 = coroutine c */
bool hasw;           /* kHasWaiters */

/* WaitList: mu_ and the FIFO */
bool listlock;
byte list[COROS];
byte qlen;
bool linked[COROS];

/* Each coroutine's wait word and its node's waker epoch */
bool open[COROS];
byte why[COROS];
byte epoch[COROS];
byte node_epoch[COROS];

/* Ghosts */
byte in_cs;                  /* coroutines in the critical section */
byte ticket[COROS];          /* queueing order of the current wait */
byte next_ticket = 1;
bool in_awaiter[COROS];      /* the node (in the coroutine's frame) exists */
byte finished;

inline list_lock() { atomic { !listlock -> listlock = true } }

/* Released with the "never lost" invariant: waiters imply an owner that knows of them. */
inline list_unlock() {
  atomic {
#ifndef NO_LOCK_LOST_CHECK
    assert(qlen == 0 || (owner != 0 && hasw));
#endif
    listlock = false
  }
}

inline push_back(c) {
  list[qlen] = c; qlen++; linked[c] = true
}

/* WaitList::Remove of node c (any position). */
inline remove(c) {
  i = 0;
  do
  :: list[i] == c -> break
  :: else -> i++
  od;
  do
  :: i + 1 < qlen -> list[i] = list[i + 1]; i++
  :: else -> break
  od;
  qlen--; list[qlen] = 0; linked[c] = false
}

/* Ghost FIFO check at a hand-off to c: nobody still waiting queued before c. */
inline assert_oldest(c) {
  j = 0;
  do
  :: j == COROS -> break
  :: else ->
     assert(!(open[j] && j != c && ticket[j] < ticket[c]));
     j++
  od
}

/* Ghost no-barging check: taking the lock without a hand-off while someone waits. */
inline assert_nobody_waits() {
  j = 0;
  do
  :: j == COROS -> break
  :: else -> assert(!open[j]); j++
  od
}

/* Mutex::HandOff (list lock taken here). */
inline HandOff() {
  /* code: coro/mutex.h HandOff: MutexLock lock(wait_list_.lock()); */
  list_lock();
  do
  :: qlen == 0 ->
     /* code: coro/mutex.h HandOff: state_.store(0, std::memory_order_release); */
     owner = 0; hasw = false;                    /* nobody waits any more: store 0 */
     break
  :: qlen > 0 ->
     /* code: coro/mutex.h HandOff: while (internal::WaitNode* node = wait_list_.PopFront()) { */
     atomic {                                    /* PopFront */
#ifdef BUG_HANDOFF_NEWEST
       n = list[qlen - 1];                       /* the newest waiter instead */
#else
       n = list[0];
#endif
       assert(in_awaiter[n]);                    /* the node's frame still exists */
       remove(n)
     };
     /* code: coro/mutex.h HandOff: state_.store(node->request | (wait_list_.empty() ? 0 : kHasWaiters), */
     owner = n + 1; hasw = (qlen > 0);            /* the waiter owns it from here on */
     /* WakePopped -> Waker::Wakeup -> WakeEpoch -> WaitWord::CloseEpoch: one CAS on n's wait word. */
     /* code: coro/mutex.h HandOff: if (internal::WaitList::WakePopped(node)) return; */
     /* code: coro/internal/wait_word.h CloseEpoch: } while (!word_.compare_exchange_weak(old, Closed(old, reason), std::memory_order_release, */
     atomic {
#ifdef BUG_IGNORE_EPOCH
       open[n] = false; why[n] = WAKEUP; ok = true;
#else
       if
       :: open[n] && epoch[n] == node_epoch[n] -> open[n] = false; why[n] = WAKEUP; ok = true
       :: else -> ok = false                     /* it already left: stale, a no-op */
       fi;
#endif
       if
       :: ok -> assert_oldest(n)
       :: else
       fi
     };
     if
     :: ok -> break
     :: else                                     /* try the next waiter */
     fi
  od;
  n = NONE; ok = false;
  list_unlock()
}

/* Mutex::Unlock. */
inline Unlock() {
  /* code: coro/mutex.h Unlock: std::uint64_t state = state_.load(std::memory_order_relaxed); */
  s_hasw = hasw;                                 /* relaxed load */
  /* code: coro/mutex.h Unlock: state_.compare_exchange_strong(state, 0, std::memory_order_release, */
  atomic {
    if
    :: !s_hasw && owner == me + 1 && !hasw -> owner = 0; ok = true   /* fast CAS owner -> 0 */
    :: else -> ok = false
    fi
  };
  if
  :: ok -> ok = false
  :: else ->
#ifdef BUG_CLEAR_BEFORE_HANDOFF
     atomic { owner = 0; hasw = false };
#endif
     /* code: coro/mutex.h Unlock: HandOff(); */
     HandOff()
  fi;
  s_hasw = false
}

/* ListWaitAwaiter: the whole Lock / TryLockUntil; sets `got`. */
inline LockOrTryLockUntil() {
  got = false;
  /* await_ready: TryAcquireFast */
  /* code: coro/mutex.h TryAcquireFast: return state_.compare_exchange_strong(expected, owner, std::memory_order_acquire, */
  atomic {
    if
    :: owner == 0 -> assert(!hasw); owner = me + 1; got = true; assert_nobody_waits()
    :: else
    fi
  };
  if
  :: got
  /* code: coro/wait_list.h await_ready: if (deadline_ != kTaskDeadlineInfinite && deadline_ <= TaskClock::now()) { */
  :: !got && timed -> skip                       /* deadline already passed: a try */
  :: !got ->
     /* code: coro/wait_list.h await_ready: MutexLock lock(primitive_->wait_list_.lock()); */
     list_lock();
     /* TryAcquireLocked */
     /* code: coro/mutex.h TryAcquireLocked: std::uint64_t state = state_.load(std::memory_order_relaxed); */
     s_owner = owner; s_hasw = hasw;             /* relaxed load */
     do
     :: s_owner == 0 ->
        /* code: coro/mutex.h TryAcquireLocked: if (state_.compare_exchange_weak(state, owner, std::memory_order_acquire, */
        atomic {
          if
          :: owner == 0 && !hasw -> owner = me + 1; got = true; assert_nobody_waits()
          :: else -> s_owner = owner; s_hasw = hasw   /* failed CAS reloads */
          fi
        };
        if
        :: got -> break
        :: else
        fi
     :: s_owner != 0 && s_hasw -> break          /* already announced: queue */
     :: s_owner != 0 && !s_hasw ->
        /* code: coro/mutex.h TryAcquireLocked: if (state_.compare_exchange_weak(state, state | kHasWaiters, std::memory_order_relaxed, */
        atomic {
          if
          :: owner == s_owner && !hasw -> hasw = true; ok = true
          :: else -> s_owner = owner; s_hasw = hasw
          fi
        };
        if
        :: ok -> ok = false; break               /* our CAS set the bit: queue */
        :: else
        fi
     od;
     s_owner = 0; s_hasw = false;
     if
     :: got -> list_unlock()
     :: else ->
        /* PrepareWait: a new epoch, an open wait; PushBack; both under the list lock. */
        /* code: coro/internal/wait_word.h Open: } while (!word_.compare_exchange_weak(old, desired, std::memory_order_acquire, */
        /* code: coro/wait_list.h await_ready: primitive_->wait_list_.PushBack(&node_); */
        atomic {
          epoch[me]++; open[me] = true; node_epoch[me] = epoch[me];
          in_awaiter[me] = true; ticket[me] = next_ticket; next_ticket++;
          push_back(me)
        };
        list_unlock();
        /* WaitWoken: resumes once the wait is closed; or Leave: the deadline/cancel CAS. */
        if
        /* code: coro/internal/wait_word.h TakeClosed: const std::uint64_t word = word_.load(std::memory_order_acquire); */
        :: atomic { !open[me] -> reason = why[me] }
        /* code: coro/internal/wait_word.h CloseOwn: while (!word_.compare_exchange_weak(word, Closed(word, reason), std::memory_order_acquire, */
        :: atomic { timed && open[me] -> open[me] = false; why[me] = LEFT; reason = LEFT }
        fi;
        /* Finish */
        if
        :: reason == WAKEUP -> got = true
        :: else ->
           /* code: coro/wait_list.h Finish: MutexLock lock(primitive_->wait_list_.lock()); */
           list_lock();
#ifndef BUG_NO_UNLINK
           atomic {
             if
             /* code: coro/wait_list.h Finish: primitive_->wait_list_.Remove(&node_); */
             :: linked[me] ->
                remove(me);
                /* code: coro/mutex.h WaiterLeftLocked: if (wait_list_.empty()) state_.fetch_and(~kHasWaiters, std::memory_order_relaxed); */
                if                               /* WaiterLeftLocked */
                :: qlen == 0 -> hasw = false
                :: else
                fi
             :: else
             fi
           };
#endif
#ifndef NO_STALE_GRANT_CHECK
           assert(owner != me + 1);              /* not granted after it left */
#endif
           list_unlock()
        fi;
        atomic { in_awaiter[me] = false; reason = 0; ticket[me] = 0 }
     fi
  fi
}

proctype Coro(byte me; bool timed) {
  bool got, ok, s_hasw;
  byte s_owner, reason, n = NONE, i, j, round;
  do
  :: round == ROUNDS -> break
  :: else ->
     LockOrTryLockUntil();
     if
     :: got ->
        atomic {                                 /* critical section */
          in_cs++;
#ifndef NO_MUTEX_CHECK
          assert(in_cs == 1 && owner == me + 1)
#endif
        };
        in_cs--;
        got = false;
        Unlock()
     :: else
     fi;
     round++
  od;
  atomic {
    finished++;
    if
    :: finished == COROS -> assert(owner == 0 && !hasw && qlen == 0)
    :: else
    fi
  }
}

init {
  atomic {
    byte c = 1;
    run Coro(0, false);                          /* Lock() */
    do
    :: c == COROS -> break
    :: else -> run Coro(c, true); c++            /* TryLockUntil(deadline) */
    od
  }
}

ltl all_done { <> (finished == COROS) }
