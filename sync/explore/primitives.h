// The instrumented primitives that sync/primitives.h uses when FAIRSCHED_EXPLORE is defined.
// Same names and the same member functions the library calls as the production aliases;
// every operation first asks the explorer (sync/explore/explorer.h) which thread runs next,
// then executes as one sequentially consistent step (weaker-memory reorderings are NOT
// explored as values), and then records its happens-before effect for its memory order, so
// that explore::Data accesses are checked for data races.
// Outside a model thread the operations simply run (single-threaded set-up and checks).
// Do not include directly: include sync/primitives.h in a target compiled with
// -DFAIRSCHED_EXPLORE (see sync/explore/README.md).
#ifndef FAIRSCHED_SYNC_EXPLORE_PRIMITIVES_H_
#define FAIRSCHED_SYNC_EXPLORE_PRIMITIVES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <source_location>
#include <thread>

#include "sync/explore/explorer.h"

namespace fairsched {

namespace explore::internal {
inline void BeforeAccess(OpKind kind, const void* object, const std::source_location& where) {
  if (Runtime* runtime = ActiveRuntime()) runtime->Step(kind, object, where);
}
inline void AfterAccess(OpKind kind, const void* object, std::memory_order order) {
  if (Runtime* runtime = ActiveRuntime()) runtime->Synchronize(kind, object, order);
}
// The failure order std::atomic uses for a compare-exchange given one order.
constexpr std::memory_order FailureOrder(std::memory_order order) {
  return order == std::memory_order_acq_rel   ? std::memory_order_acquire
         : order == std::memory_order_release ? std::memory_order_relaxed
                                              : order;
}
}  // namespace explore::internal

// std::atomic's interface, each operation one explorer step, followed by its happens-before
// effect for its memory order (Runtime::Synchronize). compare_exchange_weak never fails
// spuriously here (it behaves as the strong one); a failed compare-exchange is a load with
// the failure order.
template <typename T>
class Atomic {
  using Kind = explore::internal::OpKind;
  using Where = std::source_location;

 public:
  constexpr Atomic() noexcept : value_() {}
  constexpr Atomic(T value) noexcept : value_(value) {}  // NOLINT: like std::atomic
  Atomic(const Atomic&) = delete;
  Atomic& operator=(const Atomic&) = delete;

  T load(std::memory_order order = std::memory_order_seq_cst,
         Where where = Where::current()) const {
    Before(Kind::kLoad, where);
    const T value = value_.load();
    After(Kind::kLoad, order);
    return value;
  }
  void store(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) {
    Before(Kind::kStore, where);
    value_.store(value);
    After(Kind::kStore, order);
  }
  T exchange(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) {
    return Rmw([&] { return value_.exchange(value); }, order, where);
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure, Where where = Where::current()) {
    Before(Kind::kReadModifyWrite, where);
    const bool swapped = value_.compare_exchange_strong(expected, desired);
    After(swapped ? Kind::kReadModifyWrite : Kind::kLoad, swapped ? success : failure);
    return swapped;
  }
  bool compare_exchange_strong(T& expected, T desired,
                               std::memory_order order = std::memory_order_seq_cst,
                               Where where = Where::current()) {
    return compare_exchange_strong(expected, desired, order, explore::internal::FailureOrder(order),
                                   where);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order success,
                             std::memory_order failure, Where where = Where::current()) {
    return compare_exchange_strong(expected, desired, success, failure, where);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order order = std::memory_order_seq_cst,
                             Where where = Where::current()) {
    return compare_exchange_strong(expected, desired, order, explore::internal::FailureOrder(order),
                                   where);
  }
  T fetch_add(T value, std::memory_order order = std::memory_order_seq_cst,
              Where where = Where::current()) {
    return Rmw([&] { return value_.fetch_add(value); }, order, where);
  }
  T fetch_sub(T value, std::memory_order order = std::memory_order_seq_cst,
              Where where = Where::current()) {
    return Rmw([&] { return value_.fetch_sub(value); }, order, where);
  }
  T fetch_or(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) {
    return Rmw([&] { return value_.fetch_or(value); }, order, where);
  }
  T fetch_and(T value, std::memory_order order = std::memory_order_seq_cst,
              Where where = Where::current()) {
    return Rmw([&] { return value_.fetch_and(value); }, order, where);
  }

 private:
  void Before(Kind kind, const Where& where) const {
    explore::internal::BeforeAccess(kind, &value_, where);
  }
  void After(Kind kind, std::memory_order order) const {
    explore::internal::AfterAccess(kind, &value_, order);
  }
  template <typename Op>
  T Rmw(Op op, std::memory_order order, const Where& where) {
    Before(Kind::kReadModifyWrite, where);
    const T old = op();
    After(Kind::kReadModifyWrite, order);
    return old;
  }

  // The real value. Only one model thread runs at a time and the explorer's baton hand-off
  // orders them, so a std::atomic is not needed for correctness; it keeps the type's
  // requirements (trivially copyable) and atomicity the same as production.
  std::atomic<T> value_;
};

// std::atomic_ref's interface, each operation one explorer step on the referenced object
// (two AtomicRefs to one object are the same object to the explorer, also for
// happens-before).
template <typename T>
class AtomicRef {
  using Kind = explore::internal::OpKind;
  using Where = std::source_location;

 public:
  explicit AtomicRef(T& object) noexcept : ref_(object), object_(&object) {}

  T load(std::memory_order order = std::memory_order_seq_cst,
         Where where = Where::current()) const {
    Before(Kind::kLoad, where);
    const T value = ref_.load();
    After(Kind::kLoad, order);
    return value;
  }
  void store(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) const {
    Before(Kind::kStore, where);
    ref_.store(value);
    After(Kind::kStore, order);
  }
  T exchange(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) const {
    Before(Kind::kReadModifyWrite, where);
    const T old = ref_.exchange(value);
    After(Kind::kReadModifyWrite, order);
    return old;
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure, Where where = Where::current()) const {
    Before(Kind::kReadModifyWrite, where);
    const bool swapped = ref_.compare_exchange_strong(expected, desired);
    After(swapped ? Kind::kReadModifyWrite : Kind::kLoad, swapped ? success : failure);
    return swapped;
  }
  bool compare_exchange_strong(T& expected, T desired,
                               std::memory_order order = std::memory_order_seq_cst,
                               Where where = Where::current()) const {
    return compare_exchange_strong(expected, desired, order, explore::internal::FailureOrder(order),
                                   where);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order success,
                             std::memory_order failure, Where where = Where::current()) const {
    return compare_exchange_strong(expected, desired, success, failure, where);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order order = std::memory_order_seq_cst,
                             Where where = Where::current()) const {
    return compare_exchange_strong(expected, desired, order, explore::internal::FailureOrder(order),
                                   where);
  }

 private:
  void Before(Kind kind, const Where& where) const {
    explore::internal::BeforeAccess(kind, object_, where);
  }
  void After(Kind kind, std::memory_order order) const {
    explore::internal::AfterAccess(kind, object_, order);
  }

  std::atomic_ref<T> ref_;
  const T* object_;
};

// A mutex in the model: lock is a scheduling point, enabled only while the mutex is free.
class Mutex {
  using Where = std::source_location;

 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock(Where where = Where::current()) {
    if (auto* runtime = explore::internal::ActiveRuntime()) {
      runtime->Lock(&state_, where);
    } else {
      state_.owner = -2;  // outside any scenario: single-threaded use
    }
  }
  bool try_lock(Where where = Where::current()) {
    if (auto* runtime = explore::internal::ActiveRuntime()) return runtime->TryLock(&state_, where);
    if (state_.owner != -1) return false;
    state_.owner = -2;
    return true;
  }
  void unlock(Where where = Where::current()) {
    if (auto* runtime = explore::internal::ActiveRuntime()) {
      runtime->Unlock(&state_, where);
    } else {
      state_.owner = -1;
    }
  }

 private:
  friend class ConditionVariable;
  explore::internal::MutexState state_;
};

using MutexLock = std::unique_lock<Mutex>;

namespace explore::internal {
// A timed wait timed out in the model: make the clock its caller reads agree. The explore
// build's SteadyClock (sync/explore/futex.h) is the logical clock, moved to the deadline;
// any other clock is the real one, slept on.
template <typename Clock, typename Duration>
void ReachDeadline(const std::chrono::time_point<Clock, Duration>& deadline) {
  if constexpr (requires { Clock::kLogical; }) {
    if (Runtime* runtime = ActiveRuntime()) {
      runtime->AdvanceClockTo(
          std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch())
              .count());
    }
  } else {
    std::this_thread::sleep_until(deadline);
  }
}
}  // namespace explore::internal

// A condition variable in the model: waits block until a notify (FIFO) or, for timed waits,
// until no other thread can run. No spurious wakeups are modelled.
class ConditionVariable {
  using Where = std::source_location;

 public:
  ConditionVariable() = default;
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  void wait(MutexLock& lock, Where where = Where::current()) {
    WaitFor(lock, /*timed=*/false, where);
  }
  template <typename Predicate>
  void wait(MutexLock& lock, Predicate ready) {
    while (!ready()) wait(lock);
  }
  template <typename Clock, typename Duration>
  std::cv_status wait_until(MutexLock& lock,
                            const std::chrono::time_point<Clock, Duration>& deadline,
                            Where where = Where::current()) {
    if (WaitFor(lock, /*timed=*/true, where)) return std::cv_status::no_timeout;
    // The model's clock jumped to the deadline; let the one the caller reads agree.
    explore::internal::ReachDeadline(deadline);
    return std::cv_status::timeout;
  }
  template <typename Clock, typename Duration, typename Predicate>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& deadline,
                  Predicate ready) {
    while (!ready()) {
      if (wait_until(lock, deadline) == std::cv_status::timeout) return ready();
    }
    return true;
  }
  void notify_one(Where where = Where::current()) { Notify(false, where); }
  void notify_all(Where where = Where::current()) { Notify(true, where); }

 private:
  bool WaitFor(MutexLock& lock, bool timed, const Where& where) {
    auto* runtime = explore::internal::ActiveRuntime();
    if (runtime == nullptr) {
      std::fprintf(stderr, "explore: condition-variable wait outside a scenario would hang\n");
      std::abort();
    }
    return runtime->Wait(&state_, &lock.mutex()->state_, timed, where);
  }
  void Notify(bool all, const Where& where) {
    if (auto* runtime = explore::internal::ActiveRuntime()) runtime->Notify(&state_, all, where);
  }

  explore::internal::ConditionState state_;
};

inline constexpr std::size_t kCacheLineSize = 64;

// Every explorer step is already sequentially consistent, so a fence changes no value in
// the model and is not a scheduling point; it counts for happens-before (Runtime::Fence).
inline void FenceSeqCst() {
  if (auto* runtime = explore::internal::ActiveRuntime()) runtime->Fence(std::memory_order_seq_cst);
}

// In the model, spinning gives way: the thread is not scheduled again until another thread
// has taken a step (so a spin loop costs no preemption and cannot spin forever unnoticed).

inline void CpuRelax(std::source_location where = std::source_location::current()) {
  if (auto* runtime = explore::internal::ActiveRuntime()) runtime->Relax(where);
}

}  // namespace fairsched

// The futex, the clock and threads (FutexWait, FutexWake, SteadyClock, Thread, YieldThread).
#include "sync/explore/futex.h"

#endif  // FAIRSCHED_SYNC_EXPLORE_PRIMITIVES_H_
