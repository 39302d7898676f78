// Interleaving explorer: runs a small multi-threaded scenario many times, choosing at every
// atomic or mutex operation which thread goes next, until every schedule within a preemption
// bound has been tried (depth-first) or a number of random schedules has run. A failed
// `explore::Check`, a data race on an explore::Data variable, a deadlock (every thread
// blocked) or a livelock (every thread blocked or spinning) in any schedule stops the search
// and reports the schedule, which can be replayed.
//
// Only builds with FAIRSCHED_EXPLORE defined use this: sync/primitives.h then takes its
// Atomic/Mutex/ConditionVariable/CpuRelax from sync/explore/primitives.h, whose operations
// call into the runtime below. See sync/explore/README.md for how to write a scenario, how to
// replay a failure, and exactly which interleavings are (and are not) covered. In short:
//   - by default (Options::memory_model == kSequentiallyConsistent) every atomic operation
//     is executed as one sequentially consistent step: reorderings allowed by weaker orders
//     are NOT explored as values. The memory orders do count for happens-before: each model
//     thread carries a vector clock, and release/acquire operations, release sequences
//     (through read-modify-writes), fences, mutexes and thread start/join update it as the
//     C++ memory model says;
//   - with Options::memory_model == kCpp20 the values follow the C++20 memory model as well
//     (CDSChecker/loom style): every atomic location keeps its stores in modification order,
//     and a load may read any of the newest `history_bound` stores that happens-before,
//     coherence and the seq_cst rules (a total order S of seq_cst operations and fences)
//     do not rule out. Which store a load reads is an exploration choice like the choice of
//     thread. See sync/explore/README.md for what is modelled and what is approximated;
//   - plain (non-atomic) memory accesses are not scheduling points. Those a scenario wraps
//     in explore::Data are checked against the vector clocks: a read or write not ordered by
//     happens-before after a conflicting access of another thread is reported as a data
//     race, in the schedule where it occurs. So an order that is too weak to publish data
//     is caught (for example a wakeup that is absorbed after a relaxed load: its writes do
//     not happen-before the run that absorbed it), although the explorer never shows the
//     stale value such an order would allow. Other plain memory is not checked (TSan);
//   - model threads are real std::threads, but only the one holding the "baton" runs; every
//     instrumented operation is a point where the baton may move.
//
// Header-only on purpose: the explore build compiles everything it checks from headers (or
// lists a .cc in its own target), so no object compiled with the production primitives is
// linked into it (that would be an ODR violation: two layouts of one class).
#ifndef FAIRSCHED_SYNC_EXPLORE_EXPLORER_H_
#define FAIRSCHED_SYNC_EXPLORE_EXPLORER_H_

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <random>
#include <source_location>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fairsched::explore {

struct Options {
  enum class Strategy {
    kDepthFirst,  // every schedule with at most `preemption_bound` preemptions
    kRandom,      // `max_executions` schedules, each choice uniform among runnable threads
  };
  Strategy strategy = Strategy::kDepthFirst;
  // A preemption is a switch away from a thread that could have continued. Switches at a
  // blocking operation, at the end of a thread or at CpuRelax are free.
  int preemption_bound = 2;
  // Depth-first: give up (result.complete == false) after this many schedules.
  // Random: the number of schedules to run.
  std::uint64_t max_executions = 100000;
  std::uint64_t seed = 1;  // random strategy only
  // Steps (instrumented operations) per schedule before it is reported as a livelock.
  std::uint64_t max_steps = 20000;
  // A schedule printed by an earlier failure ("0x3,1,2x4"): run only it, with its trace.
  // If empty, the environment variable FAIRSCHED_EXPLORE_REPLAY is used when set.
  std::string replay;
  // Depth-first only: sleep sets (a partial-order reduction). A step that commutes with the
  // one just taken, and was already explored from the state before, is not explored again
  // from the state after. Cuts the schedule count several-fold; see README for what it
  // costs in coverage when combined with the preemption bound.
  bool sleep_sets = true;
  // Which values loads may return.
  enum class MemoryModel {
    // Every atomic operation is one step of a single total order and a load returns the
    // latest store (memory orders count for happens-before only). Fast; the default.
    kSequentiallyConsistent,
    // C++20: a load may return an older store when nothing orders it after that store's
    // successors (each such candidate is explored); fences are scheduling points.
    kCpp20,
  };
  MemoryModel memory_model = MemoryModel::kSequentiallyConsistent;
  // kCpp20 only: a load reads one of the newest `history_bound` stores of its location in
  // modification order (1..32); older stores are out of reach (a bound, like preemptions).
  int history_bound = 4;
};

struct Result {
  bool failed = false;
  std::string failure;           // what went wrong (check message, deadlock, livelock)
  std::string schedule;          // the failing schedule, replayable through Options::replay
  std::string trace;             // one line per step of the failing schedule
  std::uint64_t executions = 0;  // schedules run, including the failing one
  std::uint64_t pruned = 0;      // of those, cut short as already covered (sleep sets, bound)
  std::uint64_t max_depth = 0;   // most steps seen in one schedule
  bool complete = false;         // depth-first: every schedule within the bound was run
  std::string Report() const {
    std::string out = failed ? "explore: FAILED after " : "explore: passed, ";
    out += std::to_string(executions) + " schedule(s)";
    if (!failed) out += complete ? " (all within the preemption bound)" : " (search cut short)";
    if (failed) {
      out += ": " + failure + "\n  replay with FAIRSCHED_EXPLORE_REPLAY=" + schedule +
             "\n  trace (thread: operation):\n" + trace;
    }
    return out;
  }
};

namespace internal {

enum class OpKind : std::uint8_t {
  kStart,
  kLoad,
  kStore,
  kReadModifyWrite,
  kLock,
  kTryLock,
  kWaitBegin,  // condition-variable wait: about to release the mutex
  kWait,       // condition-variable wait: waiting for a notification
  kReacquire,  // condition-variable wait: notified (or timed out), retaking the mutex
  kNotify,
  kJoin,
  kRelax,
  kFence,  // an atomic_thread_fence (a scheduling point only under the kCpp20 model)
  kCheckFailed,
  kFinish,
  // Futex model (sync/explore/futex.h).
  kFutexCompare,  // FutexWait: compare the word with the expected value, enqueue if equal
  kFutexWait,     // FutexWait: asleep until woken or (if timed) timed out
  kFutexWake,     // FutexWake: wake up to N sleepers of the word
};

inline const char* OpName(OpKind kind) {
  switch (kind) {
    case OpKind::kStart:
      return "start";
    case OpKind::kLoad:
      return "load";
    case OpKind::kStore:
      return "store";
    case OpKind::kReadModifyWrite:
      return "read-modify-write";
    case OpKind::kLock:
      return "mutex lock";
    case OpKind::kTryLock:
      return "mutex try_lock";
    case OpKind::kWaitBegin:
      return "condvar wait, unlock";
    case OpKind::kWait:
      return "condvar wait";
    case OpKind::kReacquire:
      return "condvar wake, relock";
    case OpKind::kNotify:
      return "condvar notify";
    case OpKind::kJoin:
      return "join";
    case OpKind::kRelax:
      return "CpuRelax (spin)";
    case OpKind::kFence:
      return "fence";
    case OpKind::kCheckFailed:
      return "CHECK FAILED";
    case OpKind::kFinish:
      return "finish";
    case OpKind::kFutexCompare:
      return "futex wait, compare";
    case OpKind::kFutexWait:
      return "futex wait, sleep";
    case OpKind::kFutexWake:
      return "futex wake";
  }
  return "?";
}

// A vector clock: one logical time per model thread (happens-before bookkeeping).
inline constexpr int kMaxModelThreads = 8;
using VectorClock = std::array<std::uint32_t, kMaxModelThreads>;
inline void JoinClock(VectorClock& into, const VectorClock& from) {
  for (int i = 0; i < kMaxModelThreads; ++i) into[i] = into[i] > from[i] ? into[i] : from[i];
}

// Model state of one mutex (the owning thread, and the clock its last unlock released),
// kept inside the instrumented Mutex.
struct MutexState {
  int owner = -1;
  VectorClock released{};
};

// The accesses to one explore::Data variable in the current schedule: the last write (its
// thread and that thread's clock then) and, per thread, its last read since that write.
struct DataAccesses {
  int writer = -1;
  std::uint32_t write_time = 0;
  VectorClock read_times{};  // 0: no read since the last write
};

struct ConditionState {};  // identity only: waiters point at it

class Runtime;
// The runtime of the running exploration (one at a time per process) and the model
// thread id of the calling OS thread (-1 outside any model thread).
inline Runtime* g_runtime = nullptr;
inline thread_local int t_model_thread = -1;

class Runtime {
 public:
  static constexpr int kMaxThreads = kMaxModelThreads;

  explicit Runtime(const Options& options) : options_(options) {}
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutting_down_ = true;
      for (ModelThread& slot : slots_) slot.wake.notify_one();
    }
    for (std::thread& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
  }

  // --- Called by instrumented operations on a model thread (t_model_thread >= 0). ---

  // Before an atomic access: a point where another thread may run first.
  void Step(OpKind kind, const void* object, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(kind, object, where);
    SwitchLocked(lock);
  }

  void Lock(MutexState* mutex, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kLock, mutex, where);
    current().mutex = mutex;
    SwitchLocked(lock);
    // Resumed: only enabled while the mutex is free.
    mutex->owner = t_model_thread;
    JoinClock(current().clock, mutex->released);
  }

  bool TryLock(MutexState* mutex, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kTryLock, mutex, where);
    SwitchLocked(lock);
    if (mutex->owner >= 0) return false;
    mutex->owner = t_model_thread;
    JoinClock(current().clock, mutex->released);
    return true;
  }

  // Not a scheduling point: releasing only enables other threads' locks, which are ordered
  // after it either way, and commutes with everything else.
  void Unlock(MutexState* mutex, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    if (mutex->owner != t_model_thread) {
      FailAndParkLocked(lock, "unlock of a mutex the thread does not hold", where);
    }
    mutex->owner = -1;
    ReleaseInto(mutex->released);
  }

  // --- Happens-before (the baton holder only: no other model thread runs meanwhile). ---

  // After an atomic access to `object` (its address names it) with `order`: a load (also a
  // failed compare-exchange) acquires, a store releases, a read-modify-write does both and
  // continues the release sequence it reads from. Relaxed accesses acquire only at a later
  // acquire fence, and release only what an earlier release fence covered. Sequentially
  // consistent model only (every load reads the latest store, whose released clock is the
  // object's); kCpp20 keeps a clock per store instead (Load, Store).
  void Synchronize(OpKind kind, const void* object, std::memory_order order) {
    ModelThread& self = current();
    VectorClock& released = sync_[object];
    const bool acquire = IsAcquire(order);
    const bool release = IsRelease(order);
    if (kind == OpKind::kLoad || kind == OpKind::kReadModifyWrite) {
      JoinClock(acquire ? self.clock : self.acquired_relaxed, released);
    }
    if (kind == OpKind::kStore || kind == OpKind::kReadModifyWrite) {
      // A plain store heads a new release sequence (or none); an RMW extends the one it
      // read from (C++20: only RMWs continue a release sequence).
      VectorClock published{};
      if (release) {
        published = self.clock;
      } else if (self.release_fenced) {
        published = self.release_fence;
      }
      if (kind == OpKind::kReadModifyWrite) JoinClock(published, released);
      released = published;
      if (release) ++self.clock[t_model_thread];
    }
  }

  // --- Atomic accesses with their values (both models). `object` names the location,
  // `in_memory` is the value in memory now (its bits), which under kCpp20 is always the
  // newest store in modification order unless plain code wrote the object meanwhile. ---

  bool WeakMemory() const { return options_.memory_model == Options::MemoryModel::kCpp20; }

  // A load (also a failed compare-exchange when `latest_only`): returns the bits it reads.
  // Sequentially consistent model: `in_memory`. kCpp20: one of the stores the memory model
  // allows, chosen by the search (see CoherenceFloor).
  std::uint64_t Load(const void* object, std::uint64_t in_memory, std::memory_order order,
                     bool latest_only = false) {
    if (!WeakMemory()) {
      Synchronize(OpKind::kLoad, object, order);
      return in_memory;
    }
    std::unique_lock<std::mutex> lock(mu_);
    Location& location = LocationOf(object, in_memory);
    ModelThread& self = current();
    const std::uint32_t latest = static_cast<std::uint32_t>(location.stores.size() - 1);
    std::uint32_t oldest = CoherenceFloor(location, object, IsSeqCst(order));
    // A spin loop's re-read (the first load of a location the thread loaded before its
    // CpuRelax) reads the newest store: stores become visible in finite time, and a spin
    // that kept reading one stale value would only delay, never change, what follows.
    for (std::size_t i = 0; i < self.spin_locations.size(); ++i) {
      if (self.spin_locations[i] == object) {
        oldest = latest;
        self.spin_locations.erase(self.spin_locations.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
    if (latest_only) oldest = latest;
    const std::uint32_t bound = static_cast<std::uint32_t>(HistoryBound());
    if (latest + 1 > bound && oldest < latest + 1 - bound) oldest = latest + 1 - bound;
    const int behind = ChooseValueLocked(static_cast<int>(latest - oldest + 1), lock);
    const std::uint32_t index = latest - static_cast<std::uint32_t>(behind);
    if (behind > 0) {
      if (!trace_.empty()) trace_.back().read_behind = behind;
      self.read_stale = true;
    }
    const StoreEvent& store = location.stores[index];
    JoinClock(IsAcquire(order) ? self.clock : self.acquired_relaxed, store.released);
    location.accesses.push_back({t_model_thread, self.clock[t_model_thread], index});
    if (IsSeqCst(order) && index > location.sc_floor) location.sc_floor = index;
    self.loaded_since_relax.push_back(object);
    return store.value;
  }

  // A store (`rmw`: the write of a successful read-modify-write, which read `in_memory`) of
  // the bits `value`. Sequentially consistent model: only happens-before.
  void Store(const void* object, std::uint64_t in_memory, std::uint64_t value,
             std::memory_order order, bool rmw) {
    const OpKind kind = rmw ? OpKind::kReadModifyWrite : OpKind::kStore;
    if (!WeakMemory()) {
      Synchronize(kind, object, order);
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    Location& location = LocationOf(object, in_memory);
    ModelThread& self = current();
    const int me = t_model_thread;
    // A read-modify-write reads the newest store (atomicity: the one just before its own
    // write in modification order) and continues its release sequence.
    const StoreEvent& previous = location.stores.back();
    if (rmw) JoinClock(IsAcquire(order) ? self.clock : self.acquired_relaxed, previous.released);
    VectorClock published{};
    if (IsRelease(order)) {
      published = self.clock;
    } else if (self.release_fenced) {
      published = self.release_fence;
    }
    if (rmw) JoinClock(published, previous.released);
    const std::uint32_t index = static_cast<std::uint32_t>(location.stores.size());
    location.stores.push_back({value, published});
    location.accesses.push_back({me, self.clock[me], index});
    if (IsSeqCst(order)) location.sc_floor = index;
    if (IsRelease(order)) ++self.clock[me];
  }

  // A new atomic object at `object` (its constructor): forget any history a destroyed
  // object at the same address left in this schedule.
  void Forget(const void* object) {
    if (!WeakMemory()) return;
    locations_.erase(object);
    ForgetFenceFloors(object);
  }

  // atomic_thread_fence(order). Under kCpp20 a scheduling point (a seq_cst fence takes a
  // place in the total order S, which restricts what later loads may read).
  void ThreadFence(std::memory_order order, const std::source_location& where) {
    if (!WeakMemory()) {
      Fence(order);
      return;
    }
    Step(OpKind::kFence, nullptr, where);
    std::unique_lock<std::mutex> lock(mu_);
    const int me = t_model_thread;
    if (IsSeqCst(order)) {
      // C++20 [atomics.order] p4, with S the order in which the steps run. The fence X
      // records, per location, the newest store that a load after X (in happens-before)
      // must not read below: what seq_cst operations before X read or wrote (4.3), and what
      // happened before earlier seq_cst fences (4.4). Then what happens-before X itself
      // becomes a floor for later seq_cst loads (4.2) and fences (4.4).
      ScFence fence;
      fence.thread = me;
      fence.time = current().clock[me];
      for (auto& [address, location] : locations_) {
        fence.floors[address] =
            location.sc_floor > location.fence_floor ? location.sc_floor : location.fence_floor;
      }
      for (auto& [address, location] : locations_) {
        const std::uint32_t seen = HappensBeforeFloor(location);
        if (seen > location.fence_floor) location.fence_floor = seen;
      }
      sc_fences_.push_back(std::move(fence));
    }
    Fence(order);
  }

  // A fence with `order` (FenceSeqCst: seq_cst, both halves): its happens-before effect.
  void Fence(std::memory_order order) {
    ModelThread& self = current();
    if (order != std::memory_order_release) JoinClock(self.clock, self.acquired_relaxed);
    if (order != std::memory_order_acquire && order != std::memory_order_consume) {
      self.release_fence = self.clock;
      self.release_fenced = true;
      ++self.clock[t_model_thread];
    }
  }

  // An explore::Data access: fails the schedule on a data race (see the file comment).
  void DataRead(DataAccesses* data, const std::source_location& where) {
    const int me = t_model_thread;
    const VectorClock& clock = current().clock;
    if (data->writer >= 0 && data->writer != me && data->write_time > clock[data->writer]) {
      CheckFailed("data race: a read is not ordered after thread " +
                      std::to_string(data->writer) + "'s write (happens-before)",
                  where);
    }
    data->read_times[me] = clock[me];
  }
  void DataWrite(DataAccesses* data, const std::source_location& where) {
    const int me = t_model_thread;
    const VectorClock& clock = current().clock;
    if (data->writer >= 0 && data->writer != me && data->write_time > clock[data->writer]) {
      CheckFailed("data race: a write is not ordered after thread " +
                      std::to_string(data->writer) + "'s write (happens-before)",
                  where);
    }
    for (int t = 0; t < count_; ++t) {
      if (t != me && data->read_times[t] != 0 && data->read_times[t] > clock[t]) {
        CheckFailed("data race: a write is not ordered after thread " + std::to_string(t) +
                        "'s read (happens-before)",
                    where);
      }
    }
    data->writer = me;
    data->write_time = clock[me];
    data->read_times = {};
  }

  // Releases `mutex`, waits for a notification (or, when `timed`, for every other thread to
  // be blocked: the model's time only passes when nothing else can run), retakes `mutex`.
  // Returns false on a timeout. No spurious wakeups are modelled.
  bool Wait(ConditionState* condition, MutexState* mutex, bool timed,
            const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    if (mutex->owner != t_model_thread) {
      FailAndParkLocked(lock, "condition-variable wait without holding the mutex", where);
    }
    // A scheduling point before the wait: other threads may act between the caller's last
    // check and the moment it releases the mutex and starts waiting (the lost-wakeup window).
    Prepare(OpKind::kWaitBegin, condition, where);
    SwitchLocked(lock);
    mutex->owner = -1;
    ReleaseInto(mutex->released);
    Prepare(OpKind::kWait, condition, where);
    ModelThread& self = current();
    self.mutex = mutex;
    self.timed = timed;
    self.timed_out = false;
    self.wait_order = ++wait_counter_;
    SwitchLocked(lock);
    mutex->owner = t_model_thread;
    JoinClock(current().clock, mutex->released);
    return !current().timed_out;
  }

  void Notify(ConditionState* condition, bool all, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kNotify, condition, where);
    SwitchLocked(lock);
    // Wakes the longest waiter (or all of them); FIFO is one of the orders the standard
    // allows, and the only one modelled.
    while (true) {
      ModelThread* oldest = nullptr;
      for (int i = 0; i < count_; ++i) {
        ModelThread& thread = slots_[i];
        if (thread.op == OpKind::kWait && thread.object == condition &&
            (oldest == nullptr || thread.wait_order < oldest->wait_order)) {
          oldest = &thread;
        }
      }
      if (oldest == nullptr) break;
      oldest->op = OpKind::kReacquire;
      oldest->object = oldest->mutex;
      if (!all) break;
    }
  }

  void Relax(const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kRelax, nullptr, where);
    // Spinning: not runnable again until some other thread has taken a step other than a
    // load or a CpuRelax (see TakeStepLocked). (If nothing
    // else can run, it may still go round once more if others moved since its previous
    // CpuRelax: it may not have looked at their latest changes yet. See ChooseLocked.)
    ModelThread& self = current();
    // kCpp20: the locations loaded in this round of the spin are re-read fresh (see Load).
    self.spin_locations = std::move(self.loaded_since_relax);
    self.loaded_since_relax.clear();
    self.yielding = true;
    // A round that read a stale value may see newer ones next time even if nobody moves
    // (kCpp20): like a round after others moved, it gets one more look (see ChooseLocked).
    self.moved_before_relax = self.others_moved || self.read_stale;
    self.others_moved = false;
    self.read_stale = false;
    SwitchLocked(lock);
  }

  int Spawn(std::function<void()> body) {
    std::unique_lock<std::mutex> lock(mu_);
    return SpawnLocked(std::move(body));
  }

  void Join(int thread, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kJoin, nullptr, where);
    current().join_target = thread;
    SwitchLocked(lock);
    JoinClock(current().clock, slots_[thread].clock);  // everything it did happens-before
  }

  void CheckFailed(const std::string& message, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Record(t_model_thread, OpKind::kCheckFailed, nullptr, where);
    FailAndParkLocked(lock, "check failed: " + message, where);
  }

  // --- Futex and clock model (used by sync/explore/futex.h; see README "Futex"). ---

  // A scheduling point before FutexWait's compare-and-enqueue, and before FutexWake.
  void FutexStep(OpKind kind, const void* word, const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(kind, word, where);
    SwitchLocked(lock);
  }

  // FutexWait after its compare found the expected value, with no scheduling point in
  // between (the caller still holds the baton): the thread sleeps on `word` until a
  // FutexWake picks it (FIFO) or, when `timed`, it times out: the explorer may pick it at
  // any point after another thread has taken a step (the timeout racing everything), and
  // must when nothing else can run (the earliest deadline first). A timeout moves the
  // logical clock to `deadline`. Returns false on a timeout.
  bool FutexSleep(const void* word, bool timed, std::int64_t deadline,
                  const std::source_location& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kFutexWait, word, where);
    ModelThread& self = current();
    self.timed = timed;
    self.futex_woken = false;
    self.futex_deadline = deadline;
    self.wait_order = ++wait_counter_;
    self.yielding = timed;  // no timeout before another thread has moved
    SwitchLocked(lock);
    if (current().futex_woken) return true;
    if (clock_ < deadline) clock_ = deadline;
    return false;
  }

  // Wakes up to `count` threads asleep on `word`, the longest sleepers first; returns how
  // many. Call after FutexStep(kFutexWake, ...).
  int FutexWakeSleepers(const void* word, int count) {
    std::unique_lock<std::mutex> lock(mu_);
    int woken = 0;
    while (woken < count) {
      ModelThread* oldest = nullptr;
      for (int i = 0; i < count_; ++i) {
        ModelThread& thread = slots_[i];
        if (thread.op == OpKind::kFutexWait && thread.object == word && !thread.futex_woken &&
            (oldest == nullptr || thread.wait_order < oldest->wait_order)) {
          oldest = &thread;
        }
      }
      if (oldest == nullptr) break;
      oldest->futex_woken = true;
      ++woken;
    }
    return woken;
  }

  // The logical clock (nanoseconds), 0 at the start of every schedule. Only timeouts move it.
  std::int64_t Now() {
    std::unique_lock<std::mutex> lock(mu_);
    return clock_;
  }
  void AdvanceClockTo(std::int64_t time) {
    std::unique_lock<std::mutex> lock(mu_);
    if (clock_ < time) clock_ = time;
  }

  // --- Called by Explore on the controlling (non-model) thread. ---

  void DetachWorkers() {
    for (std::thread& worker : workers_) {
      if (worker.joinable()) worker.detach();
    }
  }

  Result Run(const std::function<void()>& body) {
    Result result;
    const char* env = std::getenv("FAIRSCHED_EXPLORE_REPLAY");
    std::string replay = options_.replay;
    if (replay.empty() && env != nullptr) replay = env;
    if (!replay.empty() && !ParseSchedule(replay, &forced_)) {
      result.failed = true;
      result.failure = "cannot parse replay schedule '" + replay + "'";
      return result;
    }
    replaying_ = !replay.empty();
    std::mt19937_64 random(options_.seed);
    random_ = &random;
    while (true) {
      RunOnce(body);
      ++result.executions;
      if (redundant_) ++result.pruned;
      if (schedule_.size() > result.max_depth) result.max_depth = schedule_.size();
      if (replaying_) {
        std::fprintf(stderr, "explore: replayed schedule %s\n%s", replay.c_str(),
                     TraceText().c_str());
      }
      if (failed_) {
        result.failed = true;
        result.failure = failure_;
        result.schedule = failed_schedule_;
        result.trace = failed_trace_;
        return result;
      }
      if (replaying_) return result;
      if (options_.strategy == Options::Strategy::kRandom) {
        if (result.executions >= options_.max_executions) return result;
        continue;
      }
      if (!Backtrack()) {
        result.complete = true;
        return result;
      }
      if (result.executions >= options_.max_executions) return result;
    }
  }

 private:
  struct ModelThread {
    std::condition_variable wake;  // signalled when this thread gets the baton
    bool assigned = false;         // has a body in the current schedule
    std::function<void()> body;
    OpKind op = OpKind::kStart;  // the operation it will do when it runs next
    const void* object = nullptr;
    MutexState* mutex = nullptr;      // kLock / kWait / kReacquire
    int join_target = -1;             // kJoin
    bool yielding = false;            // kRelax, until another thread steps
    bool others_moved = false;        // another thread stepped since this one's last CpuRelax
    bool moved_before_relax = false;  // others_moved as of the current CpuRelax
    bool timed = false;               // kWait with a deadline
    bool timed_out = false;
    std::uint64_t wait_order = 0;
    bool futex_woken = false;          // kFutexWait: picked by a FutexWake
    std::int64_t futex_deadline = 0;   // kFutexWait with `timed`: logical clock
    std::source_location where;
    // Happens-before (see Synchronize).
    VectorClock clock{};
    VectorClock acquired_relaxed{};  // released clocks read by relaxed loads: an acquire
                                     // fence joins them
    VectorClock release_fence{};     // the clock at the last release fence
    bool release_fenced = false;
    // kCpp20: locations loaded since the last CpuRelax, and those loaded in the round
    // before it (their next load reads the newest store; see Load).
    std::vector<const void*> loaded_since_relax;
    std::vector<const void*> spin_locations;
    bool read_stale = false;  // a load since the last CpuRelax read an older store
  };

  // --- kCpp20 state of the current schedule. ---
  // One store of a location, in modification order: its value and the clock an acquire
  // that reads it synchronises with (its release sequence's, empty when none).
  struct StoreEvent {
    std::uint64_t value;
    VectorClock released;
  };
  // One load or store of a location: by `thread` (-1: the initial value) when its clock
  // entry was `time`, reading or writing the store at `index` of the modification order.
  struct AccessEvent {
    int thread;
    std::uint32_t time;
    std::uint32_t index;
  };
  struct Location {
    std::vector<StoreEvent> stores;  // modification order; [0] is the value found first
    std::vector<AccessEvent> accesses;
    // Newest store a seq_cst operation on it read or wrote (a seq_cst load may not read
    // older: [atomics.order] p4.1).
    std::uint32_t sc_floor = 0;
    // Newest store that happened before some seq_cst fence so far (p4.2).
    std::uint32_t fence_floor = 0;
  };
  // A seq_cst fence: its thread and clock entry, and per location the oldest store a load
  // after it in happens-before may read.
  struct ScFence {
    int thread = -1;
    std::uint32_t time = 0;
    std::unordered_map<const void*, std::uint32_t> floors;
  };

  static bool IsAcquire(std::memory_order order) {
    return order == std::memory_order_acquire || order == std::memory_order_acq_rel ||
           order == std::memory_order_seq_cst || order == std::memory_order_consume;
  }
  static bool IsRelease(std::memory_order order) {
    return order == std::memory_order_release || order == std::memory_order_acq_rel ||
           order == std::memory_order_seq_cst;
  }
  static bool IsSeqCst(std::memory_order order) { return order == std::memory_order_seq_cst; }

  int HistoryBound() const {
    return options_.history_bound < 1 ? 1 : options_.history_bound > 32 ? 32 : options_.history_bound;
  }

  // Whether an event of `thread` at clock entry `time` happens before the calling thread's
  // next step (its own events are sequenced before it; the initial value precedes all).
  bool HappensBefore(int thread, std::uint32_t time) {
    return thread < 0 || thread == t_model_thread || time <= current().clock[thread];
  }

  // The newest store of `location` that the calling thread has seen through happens-before:
  // one it wrote or read itself, or one written or read by an access that happens before
  // (write-read and read-read coherence forbid reading older).
  std::uint32_t HappensBeforeFloor(const Location& location) {
    std::uint32_t floor = 0;
    for (const AccessEvent& event : location.accesses) {
      if (event.index > floor && HappensBefore(event.thread, event.time)) floor = event.index;
    }
    return floor;
  }

  // The oldest store a load by the calling thread may read: coherence, plus for a seq_cst
  // load the seq_cst floors, plus the floors of every seq_cst fence that happens before.
  std::uint32_t CoherenceFloor(const Location& location, const void* object, bool seq_cst) {
    std::uint32_t floor = HappensBeforeFloor(location);
    if (seq_cst) {
      if (location.sc_floor > floor) floor = location.sc_floor;
      if (location.fence_floor > floor) floor = location.fence_floor;
    }
    for (const ScFence& fence : sc_fences_) {
      if (!HappensBefore(fence.thread, fence.time)) continue;
      const auto found = fence.floors.find(object);
      if (found != fence.floors.end() && found->second > floor) floor = found->second;
    }
    return floor;
  }

  // The location at `object`, created (or restarted) with `in_memory` as its one store when
  // unknown or when memory no longer holds its newest store (plain code wrote the object,
  // as an intrusive link between its atomic uses may be): that write is taken to happen
  // before everything, like an initial value.
  Location& LocationOf(const void* object, std::uint64_t in_memory) {
    Location& location = locations_[object];
    if (location.stores.empty() || location.stores.back().value != in_memory) {
      location = Location{};
      location.stores.push_back({in_memory, VectorClock{}});
      location.accesses.push_back({-1, 0, 0});
      ForgetFenceFloors(object);
    }
    return location;
  }

  // The fences' floors name stores of a location's previous history: drop them with it.
  void ForgetFenceFloors(const void* object) {
    for (ScFence& fence : sc_fences_) fence.floors.erase(object);
  }

  // A kCpp20 value choice among `count` readable stores (0: the newest; k: k older).
  // Recorded in the search like a thread choice, so depth-first tries every candidate.
  int ChooseValueLocked(int count, std::unique_lock<std::mutex>& lock) {
    if (count <= 1) return 0;
    const std::size_t depth = schedule_.size();
    const bool depth_first = options_.strategy == Options::Strategy::kDepthFirst;
    int behind = 0;
    if (depth < forced_.size()) {
      behind = -1 - forced_[depth];
      if (behind < 0 || behind >= count) {
        FailAndParkLocked(lock,
                          "the replayed schedule does not fit the scenario (no value choice " +
                              std::to_string(behind) + " at step " + std::to_string(depth) +
                              "): the scenario is not deterministic",
                          {});
      }
    } else if (!depth_first) {
      behind = static_cast<int>((*random_)() % static_cast<std::uint64_t>(count));
    }
    if (depth_first && !replaying_) {
      if (depth < path_.size()) {
        if (!path_[depth].value_choice || path_[depth].count != count) {
          FailAndParkLocked(lock,
                            "the scenario is not deterministic (different readable stores at "
                            "step " + std::to_string(depth) + " of a re-run)",
                            {});
        }
      } else if (!redundant_) {
        Choice choice;
        choice.value_choice = true;
        choice.count = count;
        choice.tried = 1u << behind;
        choice.chosen = behind;
        path_.push_back(choice);
      }
    }
    schedule_.push_back(-1 - behind);
    return behind;
  }

  // The calling model thread publishes its clock (into a mutex's or an atomic's released
  // clock) and moves on: its later accesses are not covered by what it published.
  void ReleaseInto(VectorClock& released) {
    released = current().clock;
    ++current().clock[t_model_thread];
  }

  // A thread's next operation, as the partial-order reduction sees it.
  struct PendingOp {
    OpKind kind = OpKind::kStart;
    const void* object = nullptr;
  };

  // One scheduling choice of the depth-first search, kept across schedules.
  struct Choice {
    // kCpp20: a choice of the store a load reads (`count` candidates, `tried` and `chosen`
    // count back from the newest) instead of a thread; no sleep set, no preemption cost.
    bool value_choice = false;
    int count = 0;
    std::uint32_t enabled = 0;  // threads that could run
    std::uint32_t tried = 0;    // threads already chosen here in some schedule
    std::uint32_t asleep = 0;   // sleep set: threads whose step here is already covered
    int chosen = -1;
    int current = -1;  // thread that was running
    bool current_enabled = false;
    int preemptions_before = 0;
    PendingOp pending[kMaxThreads];
  };

  struct TraceStep {
    int thread;
    OpKind kind;
    const void* object;
    std::source_location where;
    int read_behind = 0;  // kCpp20 load: how many stores older than the newest it read
  };

  ModelThread& current() { return slots_[t_model_thread]; }

  bool Enabled(const ModelThread& thread) const {
    switch (thread.op) {
      case OpKind::kFinish:
        return false;
      case OpKind::kLock:
      case OpKind::kReacquire:
        return thread.mutex->owner < 0;
      case OpKind::kWait:
        return false;
      case OpKind::kJoin:
        return slots_[thread.join_target].op == OpKind::kFinish;
      case OpKind::kRelax:
        return !thread.yielding;
      case OpKind::kFutexWait:  // woken, or a timed sleeper free to time out
        return thread.futex_woken || (thread.timed && !thread.yielding);
      default:
        return true;
    }
  }

  std::uint32_t EnabledMask() const {
    std::uint32_t mask = 0;
    for (int i = 0; i < count_; ++i) {
      if (Enabled(slots_[i])) mask |= 1u << i;
    }
    return mask;
  }

  // Whether two threads' next steps may not commute. A step is the operation plus the
  // uninstrumented code up to the thread's next operation; plain memory is assumed free of
  // data races (synchronised through the instrumented operations), so only the operations
  // matter. Atomics conflict on one object unless both only load; every mutex, condition
  // variable, join and spin operation conservatively conflicts with every other one.
  //
  // kCpp20: a fence (a seq_cst one changes what later loads may read anywhere) conflicts
  // with every atomic operation and fence, and two loads of one object conflict too (two
  // seq_cst loads restrict each other through S; the orders are not tracked here).
  bool Dependent(const PendingOp& a, const PendingOp& b) const {
    if (a.kind == OpKind::kStart || b.kind == OpKind::kStart) return false;
    // A futex compare or wake acts on its word like a read-modify-write; a futex sleeper's
    // step (woken, or timing out and moving the clock) conflicts with everything.
    const bool weak = WeakMemory();
    const auto is_atomic = [weak](OpKind kind) {
      return kind == OpKind::kLoad || kind == OpKind::kStore ||
             kind == OpKind::kReadModifyWrite || kind == OpKind::kFutexCompare ||
             kind == OpKind::kFutexWake || (weak && kind == OpKind::kFence);
    };
    if (a.kind == OpKind::kRelax || b.kind == OpKind::kRelax) return true;
    if (a.kind == OpKind::kFutexWait || b.kind == OpKind::kFutexWait) return true;
    if (is_atomic(a.kind) && is_atomic(b.kind)) {
      if (a.kind == OpKind::kFence || b.kind == OpKind::kFence) return true;
      return a.object == b.object &&
             (weak || !(a.kind == OpKind::kLoad && b.kind == OpKind::kLoad));
    }
    return is_atomic(a.kind) == is_atomic(b.kind);
  }

  void Prepare(OpKind kind, const void* object, const std::source_location& where) {
    ModelThread& self = current();
    self.op = kind;
    self.object = object;
    self.where = where;
  }

  // A failure ends the exploration. The threads of the failing schedule are not unwound
  // (unwinding would run the scenario's destructors, and any instrumented operation in a
  // noexcept destructor, through an exception): they stay parked on their hand-off forever,
  // and Explore leaves the runtime and their OS threads alone (see Explore). The controller
  // is told at once. `where` is shown for misuse and failed checks.
  [[noreturn]] void FailAndParkLocked(std::unique_lock<std::mutex>& lock,
                                      const std::string& message,
                                      const std::source_location& where) {
    if (!failed_) {
      failed_ = true;
      failure_ = message;
      if (where.line() != 0) {
        failure_ +=
            std::string(" (") + where.file_name() + ":" + std::to_string(where.line()) + ")";
      }
      failed_schedule_ = ScheduleText(schedule_);
      failed_trace_ = TraceText();
    }
    active_ = -1;
    done_ = true;
    done_cv_.notify_one();
    while (true) slots_[t_model_thread].wake.wait(lock);
  }

  // The calling thread has prepared its next operation: choose who runs, hand over the
  // baton and wait to get it back, then account the step.
  void SwitchLocked(std::unique_lock<std::mutex>& lock) {
    const int me = t_model_thread;
    const int next = ChooseLocked(me, lock);
    if (next != me) {
      HandOverLocked(next);
      slots_[me].wake.wait(lock, [&] { return active_ == me; });
    }
    TakeStepLocked(me);
  }

  void HandOverLocked(int next) {
    active_ = next;
    if (next >= 0) slots_[next].wake.notify_one();
  }

  void TakeStepLocked(int me) {
    ModelThread& self = slots_[me];
    Record(me, self.op, self.object, self.where);
    ++steps_;
    // A spinner waits for a change: a load or another spinner's CpuRelax changes nothing it
    // could see, so they leave it yielding. (Otherwise two threads spinning on a flag that
    // a third, preempted thread holds would hand the core to each other for ever, each
    // look of one counting as a move for the other.)
    if (self.op == OpKind::kLoad || self.op == OpKind::kRelax) {
      self.op = OpKind::kStart;
      return;
    }
    for (int i = 0; i < count_; ++i) {
      if (i != me) {
        slots_[i].yielding = false;
        slots_[i].others_moved = true;
      }
    }
    self.op = OpKind::kStart;  // "running"; any value that is always enabled
  }

  void Record(int thread, OpKind kind, const void* object, const std::source_location& where) {
    trace_.push_back(TraceStep{thread, kind, object, where});
  }

  // Picks the next thread to run. If none can, or the scenario turns out not to be
  // deterministic, the calling thread reports the failure and parks.
  int ChooseLocked(int me, std::unique_lock<std::mutex>& lock) {
    std::uint32_t enabled = EnabledMask();
    if (enabled == 0) {
      // Nothing else can run: before time passes (the timeouts below), a spinner that has
      // not looked since others last moved gets one more round (its loop may have decided
      // to spin on a value that has since changed).
      for (int i = 0; i < count_; ++i) {
        ModelThread& thread = slots_[i];
        if (thread.op == OpKind::kRelax && thread.yielding && thread.moved_before_relax) {
          thread.yielding = false;
          thread.moved_before_relax = false;
          enabled = EnabledMask();
          break;
        }
      }
    }
    if (enabled == 0) {
      // Nothing can run: time passes to the earliest futex deadline (before any timed
      // condition-variable wait, whose deadline the model does not know).
      ModelThread* earliest = nullptr;
      for (int i = 0; i < count_; ++i) {
        ModelThread& thread = slots_[i];
        if (thread.op == OpKind::kFutexWait && thread.timed && !thread.futex_woken &&
            (earliest == nullptr || thread.futex_deadline < earliest->futex_deadline ||
             (thread.futex_deadline == earliest->futex_deadline &&
              thread.wait_order < earliest->wait_order))) {
          earliest = &thread;
        }
      }
      if (earliest != nullptr) {
        earliest->yielding = false;
        enabled = EnabledMask();
      }
    }
    if (enabled == 0) {
      // Nothing can run: time passes, and the earliest timed waiter times out.
      ModelThread* oldest = nullptr;
      for (int i = 0; i < count_; ++i) {
        ModelThread& thread = slots_[i];
        if (thread.op == OpKind::kWait && thread.timed &&
            (oldest == nullptr || thread.wait_order < oldest->wait_order)) {
          oldest = &thread;
        }
      }
      if (oldest != nullptr) {
        oldest->op = OpKind::kReacquire;
        oldest->object = oldest->mutex;
        oldest->timed_out = true;
        enabled = EnabledMask();
      }
    }
    if (enabled == 0) {
      bool spinning = false;
      for (int i = 0; i < count_; ++i) spinning |= slots_[i].op == OpKind::kRelax;
      FailAndParkLocked(lock,
                        spinning ? "livelock: every thread is blocked or spinning in CpuRelax"
                                 : "deadlock: every thread is blocked",
                        {});
    }
    if (steps_ >= options_.max_steps) {
      FailAndParkLocked(lock,
                        "livelock: more than max_steps steps in one schedule (an endless loop: a "
                        "spin loop without CpuRelax, a corrupted (cyclic) structure, or threads "
                        "waiting for each other forever)",
                        {});
    }
    const bool me_enabled = me >= 0 && (enabled >> me & 1u) != 0;
    const std::size_t depth = schedule_.size();
    const bool depth_first = options_.strategy == Options::Strategy::kDepthFirst;
    // Sleep set at this point: inherited from the previous choice, minus the threads whose
    // step conflicts with the step taken there.
    std::uint32_t asleep = 0;
    std::size_t previous = depth;  // the latest thread choice (value choices sit between)
    while (previous > 0 && previous <= path_.size() && path_[previous - 1].value_choice) {
      --previous;
    }
    if (depth_first && options_.sleep_sets && !replaying_ && !redundant_ && previous > 0) {
      const Choice& before = path_[previous - 1];
      const std::uint32_t candidates = (before.asleep | before.tried) & ~(1u << before.chosen);
      for (int t = 0; t < count_; ++t) {
        if ((candidates >> t & 1u) != 0 &&
            !Dependent(before.pending[t], before.pending[before.chosen])) {
          asleep |= 1u << t;
        }
      }
    }
    int chosen;
    if (depth < forced_.size()) {
      chosen = forced_[depth];
      if (chosen < 0 || chosen >= count_ || (enabled >> chosen & 1u) == 0) {
        FailAndParkLocked(lock,
                          "the replayed schedule does not fit the scenario (thread " +
                              std::to_string(chosen) + " cannot run at step " +
                              std::to_string(depth) + "): the scenario is not deterministic",
                          {});
      }
    } else if (!depth_first) {
      int count = __builtin_popcount(enabled);
      int pick = static_cast<int>((*random_)() % static_cast<std::uint64_t>(count));
      chosen = 0;
      while ((enabled >> chosen & 1u) == 0 || pick-- != 0) ++chosen;
    } else {
      // Default: keep running the current thread (no preemption), else the lowest id; among
      // the threads not asleep, unless the schedule is already known to be redundant.
      std::uint32_t candidates = redundant_ ? enabled : enabled & ~asleep;
      const bool me_candidate = me >= 0 && (candidates >> me & 1u) != 0;
      if (candidates == 0 ||
          (!me_candidate && me_enabled && preemptions_ >= options_.preemption_bound)) {
        // Every continuation from here is covered by an earlier schedule (all runnable
        // threads asleep, or only a preemption beyond the bound would avoid them). Finish
        // the schedule without preemptions and without recording more choices, so the
        // search never comes back below this point.
        redundant_ = true;
        candidates = enabled;
      }
      chosen = me >= 0 && (candidates >> me & 1u) != 0 ? me : __builtin_ctz(candidates);
    }
    if (depth_first && !replaying_) {
      if (depth < path_.size()) {
        if (path_[depth].value_choice || path_[depth].enabled != enabled) {
          FailAndParkLocked(
              lock,
              "the scenario is not deterministic (different runnable threads at step " +
                  std::to_string(depth) + " of a re-run)",
              {});
        }
      } else if (!redundant_) {
        Choice choice;
        choice.enabled = enabled;
        choice.tried = 1u << chosen;
        choice.asleep = asleep;
        choice.chosen = chosen;
        choice.current = me;
        choice.current_enabled = me_enabled;
        choice.preemptions_before = preemptions_;
        for (int t = 0; t < count_; ++t) choice.pending[t] = {slots_[t].op, slots_[t].object};
        path_.push_back(choice);
      }
    }
    if (chosen != me && me_enabled) ++preemptions_;
    schedule_.push_back(chosen);
    return chosen;
  }

  // Depth-first: move to the next untried choice within the preemption bound.
  bool Backtrack() {
    while (!path_.empty()) {
      Choice& choice = path_.back();
      if (choice.value_choice) {
        for (int behind = 0; behind < choice.count; ++behind) {
          if ((choice.tried >> behind & 1u) != 0) continue;
          choice.tried |= 1u << behind;
          choice.chosen = behind;
          ForceCurrentPath();
          return true;
        }
        path_.pop_back();
        continue;
      }
      const std::uint32_t untried = choice.enabled & ~choice.tried & ~choice.asleep;
      for (int thread = 0; thread < kMaxThreads; ++thread) {
        if ((untried >> thread & 1u) == 0) continue;
        const int cost = (thread != choice.current && choice.current_enabled) ? 1 : 0;
        if (choice.preemptions_before + cost > options_.preemption_bound) continue;
        choice.tried |= 1u << thread;
        choice.chosen = thread;
        ForceCurrentPath();
        return true;
      }
      path_.pop_back();
    }
    return false;
  }

  // The next schedule replays the search stack's choices (value choices as -1 - behind).
  void ForceCurrentPath() {
    forced_.clear();
    for (const Choice& step : path_) {
      forced_.push_back(step.value_choice ? -1 - step.chosen : step.chosen);
    }
  }

  int SpawnLocked(std::function<void()> body) {
    if (count_ >= kMaxThreads) {
      std::fprintf(stderr, "explore: more than %d threads in a scenario\n", kMaxThreads);
      std::abort();
    }
    const int id = count_++;
    ModelThread& slot = slots_[id];
    slot.assigned = true;
    slot.body = std::move(body);
    slot.op = OpKind::kStart;
    slot.object = nullptr;
    slot.mutex = nullptr;
    slot.join_target = -1;
    slot.yielding = false;
    slot.others_moved = false;
    slot.moved_before_relax = false;
    slot.timed = false;
    slot.timed_out = false;
    slot.futex_woken = false;
    // Happens-before: the child starts after everything its parent did so far.
    slot.clock = {};
    if (t_model_thread >= 0 && t_model_thread < count_ - 1) {
      slot.clock = slots_[t_model_thread].clock;
      ++slots_[t_model_thread].clock[t_model_thread];
    }
    slot.clock[id] = 1;
    slot.acquired_relaxed = {};
    slot.release_fence = {};
    slot.release_fenced = false;
    slot.loaded_since_relax.clear();
    slot.spin_locations.clear();
    slot.read_stale = false;
    // OS threads are reused from schedule to schedule; one is started per slot on first use.
    if (!workers_[id].joinable()) workers_[id] = std::thread([this, id] { WorkerMain(id); });
    return id;
  }

  void WorkerMain(int id) {
    t_model_thread = id;
    ModelThread& slot = slots_[id];
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      slot.wake.wait(lock, [&] { return shutting_down_ || (slot.assigned && active_ == id); });
      if (shutting_down_) return;
      RunModelThreadLocked(id, lock);
    }
  }

  void RunModelThreadLocked(int id, std::unique_lock<std::mutex>& lock) {
    ModelThread& self = slots_[id];
    TakeStepLocked(id);
    {
      std::function<void()> body = std::move(self.body);
      lock.unlock();
      try {
        body();
      } catch (const std::exception& error) {
        lock.lock();
        FailAndParkLocked(lock, std::string("uncaught exception: ") + error.what(), {});
      }
    }  // the body's captures are destroyed here, still as this model thread
    lock.lock();
    self.op = OpKind::kFinish;
    self.assigned = false;
    Record(id, OpKind::kFinish, nullptr, {});
    bool any_left = false;
    for (int i = 0; i < count_; ++i) any_left |= slots_[i].op != OpKind::kFinish;
    if (any_left) {
      HandOverLocked(ChooseLocked(id, lock));
    } else {
      active_ = -1;
      done_ = true;
      done_cv_.notify_one();
    }
  }

  void RunOnce(const std::function<void()>& body) {
    std::unique_lock<std::mutex> lock(mu_);
    count_ = 0;
    schedule_.clear();
    trace_.clear();
    steps_ = 0;
    preemptions_ = 0;
    wait_counter_ = 0;
    redundant_ = false;
    done_ = false;
    active_ = -1;
    sync_.clear();
    locations_.clear();
    sc_fences_.clear();
    clock_ = 0;
    SpawnLocked(body);
    HandOverLocked(0);
    done_cv_.wait(lock, [&] { return done_; });
  }

  // Objects are numbered by first use in the schedule (addresses differ between runs).
  std::string TraceText() const {
    std::string out;
    std::vector<const void*> objects;
    char line[512];
    for (std::size_t i = 0; i < trace_.size(); ++i) {
      const TraceStep& step = trace_[i];
      std::string object;
      if (step.object != nullptr) {
        std::size_t n = 0;
        while (n < objects.size() && objects[n] != step.object) ++n;
        if (n == objects.size()) objects.push_back(step.object);
        object = "#" + std::to_string(n);
      }
      std::string where;
      if (step.kind != OpKind::kStart && step.kind != OpKind::kFinish) {
        where = std::string(step.where.file_name()) + ":" + std::to_string(step.where.line());
      }
      if (step.read_behind > 0) {
        where += " (reads the store " + std::to_string(step.read_behind) +
                 " before the newest)";
      }
      std::snprintf(line, sizeof line, "    %4zu  t%d: %-22s %-4s %s\n", i, step.thread,
                    OpName(step.kind), object.c_str(), where.c_str());
      out += line;
    }
    return out;
  }

  // "0x3,1,2x4" = thread 0 for three choices, then 1, then 2 for four. kCpp20 value
  // choices read "v1" (the load reads the store one before the newest).
  static std::string ScheduleText(const std::vector<int>& schedule) {
    std::string out;
    for (std::size_t i = 0; i < schedule.size();) {
      std::size_t run = 1;
      while (i + run < schedule.size() && schedule[i + run] == schedule[i]) ++run;
      if (!out.empty()) out += ',';
      out += schedule[i] >= 0 ? std::to_string(schedule[i]) : "v" + std::to_string(-1 - schedule[i]);
      if (run > 1) out += 'x' + std::to_string(run);
      i += run;
    }
    return out;
  }

  static bool ParseSchedule(const std::string& text, std::vector<int>* schedule) {
    schedule->clear();
    std::size_t i = 0;
    while (i < text.size()) {
      std::size_t used = 0;
      int thread = 0;
      long long run = 1;
      const bool value = text[i] == 'v';
      if (value) ++i;
      try {
        thread = std::stoi(text.substr(i), &used);
        if (thread < 0) return false;
        if (value) thread = -1 - thread;
        i += used;
        if (i < text.size() && text[i] == 'x') {
          ++i;
          run = std::stoll(text.substr(i), &used);
          i += used;
        }
      } catch (const std::exception&) {
        return false;
      }
      if (run < 1) return false;
      schedule->insert(schedule->end(), static_cast<std::size_t>(run), thread);
      if (i < text.size() && text[i] != ',') return false;
      ++i;
    }
    return true;
  }

  const Options options_;
  std::mutex mu_;  // guards everything below; held while choosing and handing over
  std::condition_variable done_cv_;
  std::array<ModelThread, kMaxThreads> slots_;
  std::array<std::thread, kMaxThreads> workers_;
  int count_ = 0;    // model threads in this schedule
  int active_ = -1;  // the thread holding the baton
  bool done_ = false;
  bool shutting_down_ = false;
  bool redundant_ = false;  // the rest of this schedule is covered by earlier ones
  bool replaying_ = false;
  std::uint64_t steps_ = 0;
  int preemptions_ = 0;
  std::uint64_t wait_counter_ = 0;
  std::int64_t clock_ = 0;  // the logical clock of this schedule (Now), nanoseconds
  std::vector<int> schedule_;  // choices made in this schedule
  std::vector<TraceStep> trace_;
  // Released clock of every atomic object touched in this schedule, by address.
  std::unordered_map<const void*, VectorClock> sync_;
  // kCpp20: every atomic location touched in this schedule, and its seq_cst fences in S.
  std::unordered_map<const void*, Location> locations_;
  std::vector<ScFence> sc_fences_;
  std::vector<int> forced_;   // choices to replay at the start of the next schedule
  std::vector<Choice> path_;  // depth-first search stack
  std::mt19937_64* random_ = nullptr;
  bool failed_ = false;
  std::string failure_;
  std::string failed_schedule_;
  std::string failed_trace_;
};

inline Runtime* ActiveRuntime() { return t_model_thread >= 0 ? g_runtime : nullptr; }

}  // namespace internal

// Runs `body` as model thread 0 under every schedule the options ask for. Not reentrant.
inline Result Explore(const Options& options, const std::function<void()>& body) {
  auto* runtime = new internal::Runtime(options);
  internal::g_runtime = runtime;
  Result result = runtime->Run(body);
  internal::g_runtime = nullptr;
  if (result.failed) {
    // The failing schedule's threads stay parked inside the runtime (see FailAndParkLocked):
    // it must outlive them, so it stays allocated and its OS threads are detached. A few
    // idle threads per failing exploration; a failure ends the test anyway.
    runtime->DetachWorkers();
  } else {
    delete runtime;
  }
  return result;
}

// A model thread: created by a model thread, joined (Join) by it before the handle goes.
class Thread {
 public:
  explicit Thread(std::function<void()> body) {
    internal::Runtime* runtime = internal::ActiveRuntime();
    if (runtime == nullptr) {
      std::fprintf(stderr, "explore::Thread outside explore::Explore\n");
      std::abort();
    }
    id_ = runtime->Spawn(std::move(body));
  }
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  // Like std::thread, a model thread must be joined before its handle goes (explicitly:
  // joining is a scheduling point, which a destructor is a poor place for).
  ~Thread() {
    if (id_ >= 0 && std::uncaught_exceptions() == 0) {
      std::fprintf(stderr, "explore::Thread destroyed without Join\n");
      std::abort();
    }
  }

  void Join(std::source_location where = std::source_location::current()) {
    internal::Runtime* runtime = internal::ActiveRuntime();
    const int id = id_;
    id_ = -1;
    if (runtime != nullptr && id >= 0) runtime->Join(id, where);
  }

 private:
  int id_ = -1;
};

// A plain (non-atomic) variable shared by model threads, whose accesses the explorer checks
// for data races by happens-before (see the file comment). Not a scheduling point. Outside
// a scenario's threads it is a plain variable.
template <typename T>
class Data {
 public:
  explicit Data(T value = T()) : value_(value) {}
  Data(const Data&) = delete;
  Data& operator=(const Data&) = delete;

  T Read(std::source_location where = std::source_location::current()) {
    if (internal::Runtime* runtime = internal::ActiveRuntime()) runtime->DataRead(&accesses_, where);
    return value_;
  }
  void Write(T value, std::source_location where = std::source_location::current()) {
    if (internal::Runtime* runtime = internal::ActiveRuntime()) {
      runtime->DataWrite(&accesses_, where);
    }
    value_ = value;
  }

 private:
  T value_;
  internal::DataAccesses accesses_;
};

// Fails the schedule (and the exploration) when `condition` is false.
inline void Check(bool condition, const std::string& message,
                  std::source_location where = std::source_location::current()) {
  if (condition) return;
  internal::Runtime* runtime = internal::ActiveRuntime();
  if (runtime == nullptr) {
    std::fprintf(stderr, "explore::Check failed outside a scenario: %s\n", message.c_str());
    std::abort();
  }
  runtime->CheckFailed(message, where);
}

}  // namespace fairsched::explore

#endif  // FAIRSCHED_SYNC_EXPLORE_EXPLORER_H_
