/* signal.pml: AutoResetEvent (sync/auto_reset_event.h, sync/auto_reset_event.cc) on its portable path (mutex and
 * condition variable: builds without futex, and the interleaving explorer's; the Linux futex
 * path is signal_futex.pml), a one-bit event with lock-free fast paths: Send exchanges the flag and takes the mutex only when it set the flag and sees a
 * registered receiver; Receive clears a set flag without the mutex and otherwise registers
 * in `waiters` and re-checks the flag under the mutex before waiting on the condition
 * variable.
 *
 * Harness: SENDERS senders each publish one unit of work (work++) and then Send.
 * RECEIVERS receivers loop on Receive until they see all the work; the first one to see it
 * passes the exit on with one more Send (as the scheduler's exiting workers do), so every
 * receiver must terminate. A receiver asleep while the flag is set, or a Send whose bit
 * nobody ever sees, leaves a receiver blocked forever: an invalid end state.
 *
 * Also checked: each set bit is consumed at most once (bits consumed <= bits set), and
 * liveness under weak fairness (LTL all_done: every receiver eventually returns for good).
 *
 * The condition variable: wait releases the mutex and blocks atomically, until a
 * notify_one picks this waiter or a spurious wakeup happens (at most SPURIOUS of them in a
 * run, so that a receiver that is never notified still shows up as blocked), then
 * re-acquires the mutex. ReceiveUntil's timeout is modelled as a nondeterministic early return (false)
 * for receivers that use a deadline. Memory orders: the model is sequentially consistent;
 * the code's seq_cst exchange / waiters accesses are what make that assumption hold for the
 * Dekker pair (see tla/README.md).
 *
 * Seeded bugs:
 *   BUG_NO_RECHECK        the receiver registers and waits without re-checking the flag
 *                         first (a Send between its fast path and its registration is lost).
 *   BUG_NOTIFY_NO_MUTEX   Send notifies without passing through the mutex, so a notify can
 *                         fall between the receiver's re-check and its wait.
 */

#ifndef SENDERS
#define SENDERS 2
#endif
#ifndef RECEIVERS
#define RECEIVERS 2
#endif
#ifndef SPURIOUS
#define SPURIOUS 1
#endif

bool flag;
byte waiters;
bool mu;                   /* the mutex: true while held */
bool cv_waiting[RECEIVERS];/* receivers inside cv.wait, not yet notified */
byte spurious_left = SPURIOUS; /* spurious condition-variable wakeups still allowed */

byte work;                 /* units of work published before the Sends */
byte bits_set;             /* ghost: Sends that turned the flag on */
byte bits_taken;           /* ghost: receives that turned it off */
byte finished;             /* receivers that returned for good */

inline lock() { atomic { !mu -> mu = true } }
inline unlock() { mu = false }

inline Send() {
  /* code: sync/auto_reset_event.cc Send: if (flag_.exchange(1, std::memory_order_seq_cst) != 0) { */
  atomic {
    old = flag; flag = true;
    if
    :: !old -> bits_set++
    :: else
    fi
  };
  if
  :: old -> skip                              /* already set: its receiver will see us */
  :: else ->
     if
     /* code: sync/auto_reset_event.cc Send: if (waiters_.load(std::memory_order_seq_cst) == 0) return; */
     :: waiters == 0 -> skip                  /* nobody can be asleep */
     :: else ->
#ifndef BUG_NOTIFY_NO_MUTEX
        /* code: sync/auto_reset_event.cc WakeOne: MutexLock lock(mu_); */
        lock(); unlock();                     /* wait for a registered receiver to be in cv.wait */
#endif
        /* code: sync/auto_reset_event.cc WakeOne: cv_.notify_one(); */
        atomic {
          if
          :: cv_waiting[0] -> cv_waiting[0] = false
          :: RECEIVERS > 1 && cv_waiting[1] -> cv_waiting[1] = false
          :: RECEIVERS > 2 && cv_waiting[2] -> cv_waiting[2] = false
          :: else
          fi
        }
     fi
  fi;
  old = false
}

/* Receive (or ReceiveUntil when `timed`): sets `got`. */
inline Receive(timed) {
  got = false;
  /* TryClear fast path: a load, then an exchange if it looked set. */
  if
  /* code: sync/auto_reset_event.h TryClear: if (flag_.load(std::memory_order_relaxed) == 0) return false; */
  /* code: sync/auto_reset_event.h TryClear: return flag_.exchange(0, std::memory_order_acquire) != 0; */
  :: flag -> atomic { got = flag; flag = false; if :: got -> bits_taken++ :: else fi }
  :: else
  fi;
  if
  :: got
  :: else ->
     /* code: sync/auto_reset_event.cc ReceiveUntil: MutexLock lock(mu_);  // held from registration into the wait (see signal.h) */
     lock();
     /* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_add(1, std::memory_order_seq_cst); */
     waiters++;
     do
     ::
#ifdef BUG_NO_RECHECK
        if
        :: first_round -> first_round = false
        :: else ->
#endif
        /* code: sync/auto_reset_event.cc ReceiveUntil: if (flag_.exchange(0, std::memory_order_seq_cst) != 0) { */
        atomic { got = flag; flag = false; if :: got -> bits_taken++ :: else fi };
        if
        :: got -> break
        :: else
        fi;
#ifdef BUG_NO_RECHECK
        fi;
#endif
        if
        /* code: sync/auto_reset_event.cc ReceiveUntil: if (deadline != Clock::time_point::max() && Clock::now() >= deadline) break; */
        :: timed -> break                     /* the deadline passed */
        :: true ->
           /* cv.wait: release the mutex and block atomically; re-acquire when woken. */
           /* code: sync/auto_reset_event.cc ReceiveUntil: cv_.wait(lock); */
           atomic { cv_waiting[me] = true; mu = false };
           if
           :: atomic { !cv_waiting[me] -> skip }
           :: atomic { cv_waiting[me] && spurious_left > 0 -> cv_waiting[me] = false; spurious_left-- }
           fi;
           lock()
        fi
     od;
     /* code: sync/auto_reset_event.cc ReceiveUntil: waiters_.fetch_sub(1, std::memory_order_relaxed); */
     waiters--;
     unlock()
  fi;
  assert(bits_taken <= bits_set)
}

proctype Sender() {
  bool old;
  work++;
  Send()
}

proctype Receiver(byte me; bool timed) {
  bool got, old;
#ifdef BUG_NO_RECHECK
  bool first_round;
#endif
  do
  :: work == SENDERS -> break
  :: else ->
#ifdef BUG_NO_RECHECK
     first_round = true;
#endif
     Receive(timed)
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
#if RECEIVERS > 1
#ifdef TIMED_RECEIVER
    run Receiver(1, true);
#else
    run Receiver(1, false);
#endif
#endif
#if RECEIVERS > 2
    run Receiver(2, false);
#endif
  }
}

ltl all_done { <> (finished == RECEIVERS) }
