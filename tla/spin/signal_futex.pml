/* signal_futex.pml: AutoResetEvent's Linux path (sync/auto_reset_event.h, sync/auto_reset_event.cc with
 * FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX), the one production builds use: no mutex and no condition
 * variable; a receiver sleeps on the flag word itself with futex(2).
 *
 *   Send:        exchange(1); if it was 0 and waiters_ != 0: FUTEX_WAKE(&flag_, 1).
 *   ReceiveUntil: TryClear (a relaxed load, then exchange(0) if it looked set); else
 *                waiters_++ and loop { exchange(0) (the re-check; done if it was 1);
 *                deadline passed? done; FUTEX_WAIT_BITSET(&flag_, 0, deadline) }; waiters_--.
 *
 * The kernel, as the model has it (futex(2)): FUTEX_WAIT compares the word with the
 * expected value and queues the caller in one step (the futex's hash-bucket lock makes it
 * atomic with respect to FUTEX_WAKE), or returns at once (EAGAIN) if they differ; a queued
 * caller stays blocked until a FUTEX_WAKE dequeues it, its absolute deadline passes
 * (ETIMEDOUT; any moment for a timed wait, since time is not modelled), or a signal
 * interrupts it (EINTR: at most SPURIOUS times in a run, so that a receiver nobody wakes
 * still shows up as blocked). FUTEX_WAKE(n) dequeues up to n queued callers, any of them,
 * and wakes nobody if none is queued (a wake is not remembered: the word is the memory).
 * The word takes the values 0 and 1 only.
 *
 * Harness (as signal.pml): SENDERS senders each publish one unit of work (work++) and then
 * Send; RECEIVERS (two) receivers Receive until they see all the work; the first one to
 * see it passes the exit on with one more Send (as the scheduler's exiting workers do), so
 * every receiver must return. With TIMED_RECEIVER, receiver 1 uses a deadline: its clock
 * check may find the deadline passed at any look, and its futex wait may time out.
 *
 * Checked: no lost wakeup (every receiver returns: a receiver asleep while the flag is set,
 * or a Send whose bit nobody sees, leaves it blocked: an invalid end state); each set bit
 * is consumed by at most one receiver (bits consumed <= bits set); liveness under weak
 * fairness (LTL all_done). Sequentially consistent interleaving: the code's seq_cst
 * exchange / waiters_ accesses are what make that hold for the Dekker pair; the weaker
 * orders are the interleaving explorer's to check (sync/explore/).
 *
 * Seeded bugs:
 *   BUG_RECHECK_LOAD_STORE  the slow path's re-check is a load and, if it saw the bit, a
 *                           store of 0, instead of the exchange: two receivers can both
 *                           see one bit and both return with it.
 *   BUG_WAIT_NOT_ATOMIC     the "sleep while the word is 0" is a user-space test of the word
 *                           followed by an unconditional sleep (what FUTEX_WAIT's compare
 *                           is there to prevent): a Send between the test and the sleep
 *                           finds nobody queued, and the receiver sleeps with the bit set.
 */

#ifndef SENDERS
#define SENDERS 2
#endif
#define RECEIVERS 2
#ifndef SPURIOUS
#define SPURIOUS 1
#endif
/* FUTEX_WAKE's count in AutoResetEvent::WakeOne. */
#define WAKE_N 1

byte flag;                     /* flag_: the futex word, 0 or 1 */
byte waiters;                  /* waiters_: receivers inside the slow path */
bool fx_queued[RECEIVERS];     /* the kernel's wait queue of the futex at &flag_ */
byte spurious_left = SPURIOUS; /* EINTR returns still allowed */

byte work;                     /* units of work published before the Sends */
byte bits_set;                 /* ghost: Sends that turned the flag on */
byte bits_taken;               /* ghost: receives that turned it off */
byte finished;                 /* receivers that returned for good */

/* FUTEX_WAKE(&flag_, n): dequeues up to n sleepers, whichever the kernel picks. */
inline FutexWake(n) {
  atomic {
    woken = 0;
    do
    :: woken < n && fx_queued[0] -> fx_queued[0] = false; woken++
    :: woken < n && fx_queued[1] -> fx_queued[1] = false; woken++
    :: else -> break
    od;
    woken = 0
  }
}

inline Send() {
  /* code: sync/auto_reset_event.cc Send: if (flag_.exchange(1, std::memory_order_seq_cst) != 0) { */
  atomic {
    old = flag; flag = 1;
    if
    :: old == 0 -> bits_set++
    :: else
    fi
  };
  if
  :: old != 0 -> skip                 /* already set: its receiver will see our writes */
  :: else ->
     if
     /* code: sync/auto_reset_event.cc Send: if (waiters_.load(std::memory_order_seq_cst) == 0) return; */
     :: waiters == 0 -> skip
     :: else ->
        /* code: sync/auto_reset_event.cc WakeOne: FutexWake(&flag_, 1); */
        /* code: sync/primitives.h FutexWake: syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, */
        FutexWake(WAKE_N)
     fi
  fi;
  old = 0
}

/* ReceiveUntil (a deadline when `timed`, else time_point::max()): sets `got`. */
inline Receive(timed) {
  got = false;
  /* TryClear. */
  if
  /* code: sync/auto_reset_event.h TryClear: if (flag_.load(std::memory_order_relaxed) == 0) return false; */
  :: flag != 0 ->
     /* code: sync/auto_reset_event.h TryClear: return flag_.exchange(0, std::memory_order_acquire) != 0; */
     atomic { got = (flag != 0); flag = 0; if :: got -> bits_taken++ :: else fi }
  :: else
  fi;
  if
  :: got
  :: else ->
     /* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_add(1, std::memory_order_seq_cst); */
     waiters++;
     assert(waiters <= RECEIVERS);
     passed = false;
     do
     ::
#ifdef BUG_RECHECK_LOAD_STORE
        got = (flag != 0);
        if
        :: got -> atomic { flag = 0; bits_taken++ }
        :: else
        fi;
#else
        /* code: sync/auto_reset_event.cc ReceiveUntil: if (flag_.exchange(0, std::memory_order_seq_cst) != 0) { */
        atomic { got = (flag != 0); flag = 0; if :: got -> bits_taken++ :: else fi };
#endif
        if
        :: got -> break
        :: else
        fi;
        /* The clock may have passed a finite deadline at any look; once passed, it stays. */
        if
        :: timed -> passed = true
        :: true
        fi;
        if
        /* code: sync/auto_reset_event.cc ReceiveUntil: if (deadline != Clock::time_point::max() && Clock::now() >= deadline) break; */
        :: passed -> break
        :: else
        fi;
        /* SleepWhileClear: FUTEX_WAIT_BITSET(&flag_, 0, deadline). */
#ifdef BUG_WAIT_NOT_ATOMIC
        if
        :: flag == 0 -> fx_queued[me] = true
        :: else
        fi;
#else
        /* code: sync/auto_reset_event.cc SleepWhileClear: FutexWait(&flag_, 0u, deadline); */
        /* code: sync/primitives.h FutexWait: syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_BITSET_PRIVATE, expected, */
        atomic {
          if
          :: flag == 0 -> fx_queued[me] = true   /* the word is 0: queue us, in one step */
          :: else                                /* EAGAIN */
          fi
        };
#endif
        if
        :: atomic { !fx_queued[me] -> skip }     /* woken by FUTEX_WAKE, or never queued */
        :: atomic { fx_queued[me] && timed -> fx_queued[me] = false; passed = true }   /* ETIMEDOUT */
        :: atomic { fx_queued[me] && spurious_left > 0 -> fx_queued[me] = false; spurious_left-- }  /* EINTR */
        fi
     od;
     /* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_sub(1, std::memory_order_relaxed); */
     waiters--;
     passed = false
  fi;
  assert(bits_taken <= bits_set)
}

proctype Sender() {
  byte old, woken;
  work++;
  Send()
}

proctype Receiver(byte me; bool timed) {
  bool got, passed;
  byte old, woken;
  do
  :: work == SENDERS -> break
  :: else -> Receive(timed)
  od;
  /* Pass the exit on: one Send wakes one receiver, which exits and passes it on. */
  Send();
  finished++
}

init {
  atomic {
    byte i = 0;
    do
    :: i == SENDERS -> break
    :: else -> run Sender(); i++
    od;
    run Receiver(0, false);
#ifdef TIMED_RECEIVER
    run Receiver(1, true)
#else
    run Receiver(1, false)
#endif
  }
}

ltl all_done { <> (finished == RECEIVERS) }
