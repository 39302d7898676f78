// The explorer's runtime (implementation only): the model threads and the baton that lets
// one of them run at a time, the entry points of the instrumented operations (atomics,
// mutexes, condition variables, futexes, CpuRelax, explore::Data), blocking and the model's
// logical time, deadlock and livelock detection, and the loop that runs schedule after
// schedule. What a load may read is the memory model's (sync/explore/internal/memory_model.h);
// which thread or store is chosen is the search's (sync/explore/internal/search.h). The
// public entry points are in sync/explore/explorer.h.
#ifndef FAIRSCHED_SYNC_EXPLORE_INTERNAL_RUNTIME_H_
#define FAIRSCHED_SYNC_EXPLORE_INTERNAL_RUNTIME_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sync/explore/internal/memory_model.h"
#include "sync/explore/internal/model_thread.h"
#include "sync/explore/internal/ops.h"
#include "sync/explore/internal/search.h"
#include "sync/explore/internal/trace.h"
#include "sync/explore/options.h"

namespace fairsched::explore::internal {

class Runtime;
// The runtime of the running exploration (one at a time per process).
inline Runtime* g_runtime = nullptr;

class Runtime {
 public:
  static constexpr int kMaxThreads = kMaxModelThreads;

  explicit Runtime(const Options& options) : options_(options), search_(options) {}
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
  void Step(OpKind kind, const void* object, const SourceLocation& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(kind, object, where);
    SwitchLocked(lock);
  }

  void Lock(MutexState* mutex, const SourceLocation& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kLock, mutex, where);
    current().mutex = mutex;
    SwitchLocked(lock);
    // Resumed: only enabled while the mutex is free.
    mutex->owner = t_model_thread;
    JoinClock(current().clock, mutex->released);
  }

  bool TryLock(MutexState* mutex, const SourceLocation& where) {
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
  void Unlock(MutexState* mutex, const SourceLocation& where) {
    std::unique_lock<std::mutex> lock(mu_);
    if (mutex->owner != t_model_thread) {
      FailAndParkLocked(lock, "unlock of a mutex the thread does not hold", where);
    }
    mutex->owner = -1;
    ReleaseInto(mutex->released);
  }

  // --- Atomic accesses (both models). `object` names the location, `in_memory` is the
  // value in memory now (its bits), which under kCpp20 is always the newest store in
  // modification order unless plain code wrote the object meanwhile. Happens-before and
  // the stores a load may read: MemoryModel. ---

  bool WeakMemory() const { return options_.memory_model == Options::MemoryModel::kCpp20; }

  // A load (also a failed compare-exchange when `latest_only`): returns the bits it reads.
  // Sequentially consistent model: `in_memory`. kCpp20: one of the stores the memory model
  // allows (MemoryModel::ReadableStores), chosen by the search.
  std::uint64_t Load(const void* object, std::uint64_t in_memory, std::memory_order order,
                     bool latest_only = false) {
    if (!WeakMemory()) {
      memory_.Synchronize(OpKind::kLoad, object, order, current());
      return in_memory;
    }
    std::unique_lock<std::mutex> lock(mu_);
    ModelThread& self = current();
    const int readable =
        memory_.ReadableStores(object, in_memory, order, latest_only, HistoryBound(), self);
    const int behind = ChooseValueLocked(readable, lock);
    if (behind > 0 && !trace_.empty()) trace_.back().read_behind = behind;
    return memory_.ReadStore(object, order, behind, self);
  }

  // A store (`rmw`: the write of a successful read-modify-write, which read `in_memory`) of
  // the bits `value`. Sequentially consistent model: only happens-before.
  void Store(const void* object, std::uint64_t in_memory, std::uint64_t value,
             std::memory_order order, bool rmw) {
    const OpKind kind = rmw ? OpKind::kReadModifyWrite : OpKind::kStore;
    if (!WeakMemory()) {
      memory_.Synchronize(kind, object, order, current());
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    memory_.Store(object, in_memory, value, order, rmw, current());
  }

  // A new atomic object at `object` (its constructor): forget any history a destroyed
  // object at the same address left in this schedule.
  void Forget(const void* object) {
    if (!WeakMemory()) return;
    memory_.Forget(object);
  }

  // atomic_thread_fence(order). Under kCpp20 a scheduling point (a seq_cst fence takes a
  // place in the total order S, which restricts what later loads may read).
  void ThreadFence(std::memory_order order, const SourceLocation& where) {
    if (!WeakMemory()) {
      memory_.Fence(order, current());
      return;
    }
    Step(OpKind::kFence, nullptr, where);
    std::unique_lock<std::mutex> lock(mu_);
    if (IsSeqCst(order)) memory_.SeqCstFence(current());
    memory_.Fence(order, current());
  }

  // An explore::Data access: fails the schedule on a data race (see explorer.h).
  void DataRead(DataAccesses* data, const SourceLocation& where) {
    const std::string race = DataReadRace(data, current().clock);
    if (!race.empty()) CheckFailed(race, where);
  }
  void DataWrite(DataAccesses* data, const SourceLocation& where) {
    const std::string race = DataWriteRace(data, current().clock, count_);
    if (!race.empty()) CheckFailed(race, where);
  }

  // Releases `mutex`, waits for a notification (or, when `timed`, for every other thread to
  // be blocked: the model's time only passes when nothing else can run), retakes `mutex`.
  // Returns false on a timeout. No spurious wakeups are modelled.
  bool Wait(ConditionState* condition, MutexState* mutex, bool timed, const SourceLocation& where) {
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

  void Notify(ConditionState* condition, bool all, const SourceLocation& where) {
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

  void Relax(const SourceLocation& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kRelax, nullptr, where);
    // Spinning: not runnable again until some other thread has taken a step other than a
    // load or a CpuRelax (see TakeStepLocked). (If nothing else can run, it may still go
    // round once more if others moved since its previous CpuRelax: it may not have looked
    // at their latest changes yet. See RunnableMask.)
    ModelThread& self = current();
    // kCpp20: the locations loaded in this round of the spin are re-read fresh (see
    // MemoryModel::ReadableStores).
    self.spin_locations = std::move(self.loaded_since_relax);
    self.loaded_since_relax.clear();
    self.yielding = true;
    // A round that read a stale value may see newer ones next time even if nobody moves
    // (kCpp20): like a round after others moved, it gets one more look (see RunnableMask).
    self.moved_before_relax = self.others_moved || self.read_stale;
    self.others_moved = false;
    self.read_stale = false;
    SwitchLocked(lock);
  }

  int Spawn(std::function<void()> body) {
    std::unique_lock<std::mutex> lock(mu_);
    return SpawnLocked(std::move(body));
  }

  void Join(int thread, const SourceLocation& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Prepare(OpKind::kJoin, nullptr, where);
    current().join_target = thread;
    SwitchLocked(lock);
    JoinClock(current().clock, slots_[thread].clock);  // everything it did happens-before
  }

  void CheckFailed(const std::string& message, const SourceLocation& where) {
    std::unique_lock<std::mutex> lock(mu_);
    Record(t_model_thread, OpKind::kCheckFailed, nullptr, where);
    FailAndParkLocked(lock, "check failed: " + message, where);
  }

  // --- Futex and clock model (used by sync/explore/futex.h; see README "Futex"). ---

  // A scheduling point before FutexWait's compare-and-enqueue, and before FutexWake.
  void FutexStep(OpKind kind, const void* word, const SourceLocation& where) {
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
                  const SourceLocation& where) {
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
    if (!search_.StartReplay(replay)) {
      result.failed = true;
      result.failure = "cannot parse replay schedule '" + replay + "'";
      return result;
    }
    while (true) {
      RunOnce(body);
      ++result.executions;
      if (search_.redundant()) ++result.pruned;
      if (search_.schedule().size() > result.max_depth) {
        result.max_depth = search_.schedule().size();
      }
      if (search_.replaying()) {
        std::fprintf(stderr, "explore: replayed schedule %s\n%s", replay.c_str(),
                     TraceText(trace_).c_str());
      }
      if (failed_) {
        result.failed = true;
        result.failure = failure_;
        result.schedule = failed_schedule_;
        result.trace = failed_trace_;
        return result;
      }
      if (search_.replaying()) return result;
      if (options_.strategy == Options::Strategy::kRandom) {
        if (result.executions >= options_.max_executions) return result;
        continue;
      }
      if (!search_.Backtrack()) {
        result.complete = true;
        return result;
      }
      if (result.executions >= options_.max_executions) return result;
    }
  }

 private:
  int HistoryBound() const {
    return options_.history_bound < 1    ? 1
           : options_.history_bound > 32 ? 32
                                         : options_.history_bound;
  }

  // A kCpp20 value choice among `count` readable stores (Search::ChooseValue).
  int ChooseValueLocked(int count, std::unique_lock<std::mutex>& lock) {
    std::string error;
    const int behind = search_.ChooseValue(count, &error);
    if (!error.empty()) FailAndParkLocked(lock, error, {});
    return behind;
  }

  // The calling model thread publishes its clock (into a mutex's or an atomic's released
  // clock) and moves on: its later accesses are not covered by what it published.
  void ReleaseInto(VectorClock& released) {
    released = current().clock;
    ++current().clock[t_model_thread];
  }

  ModelThread& current() { return slots_[t_model_thread]; }

  void Prepare(OpKind kind, const void* object, const SourceLocation& where) {
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
                                      const std::string& message, const SourceLocation& where) {
    if (!failed_) {
      failed_ = true;
      failure_ = message;
      if (where.line() != 0) {
        failure_ +=
            std::string(" (") + where.file_name() + ":" + std::to_string(where.line()) + ")";
      }
      failed_schedule_ = ScheduleText(search_.schedule());
      failed_trace_ = TraceText(trace_);
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

  void Record(int thread, OpKind kind, const void* object, const SourceLocation& where) {
    trace_.push_back(TraceStep{thread, kind, object, where});
  }

  // Picks the next thread to run. If none can, or the scenario turns out not to be
  // deterministic, the calling thread reports the failure and parks.
  int ChooseLocked(int me, std::unique_lock<std::mutex>& lock) {
    const std::uint32_t enabled = RunnableMask(slots_.data(), count_);
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
    PendingOp pending[kMaxThreads];
    for (int t = 0; t < count_; ++t) pending[t] = {slots_[t].op, slots_[t].object};
    std::string error;
    const int chosen = search_.ChooseThread(me, enabled, count_, pending, WeakMemory(), &error);
    if (!error.empty()) FailAndParkLocked(lock, error, {});
    return chosen;
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
    search_.StartSchedule();
    trace_.clear();
    steps_ = 0;
    wait_counter_ = 0;
    done_ = false;
    active_ = -1;
    memory_.Reset();
    clock_ = 0;
    SpawnLocked(body);
    HandOverLocked(0);
    done_cv_.wait(lock, [&] { return done_; });
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
  std::uint64_t steps_ = 0;
  std::uint64_t wait_counter_ = 0;
  std::int64_t clock_ = 0;  // the logical clock of this schedule (Now), nanoseconds
  std::vector<TraceStep> trace_;
  MemoryModel memory_;  // atomic locations and clocks of this schedule
  Search search_;
  bool failed_ = false;
  std::string failure_;
  std::string failed_schedule_;
  std::string failed_trace_;
};

inline Runtime* ActiveRuntime() { return t_model_thread >= 0 ? g_runtime : nullptr; }

}  // namespace fairsched::explore::internal

#endif  // FAIRSCHED_SYNC_EXPLORE_INTERNAL_RUNTIME_H_
