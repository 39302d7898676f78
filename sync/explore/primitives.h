// The instrumented primitives that sync/primitives.h uses when FAIRSCHED_EXPLORE is defined.
// Same names and the same member functions the library calls as the production aliases;
// every operation first asks the explorer (sync/explore/explorer.h) which thread runs next,
// then executes as one step and tells the explorer what it read and wrote, with its memory
// order: for happens-before (explore::Data accesses are checked for data races) and, under
// the explorer's kCpp20 memory model, for the value a load returns (possibly an older store
// than the one in memory; memory itself always holds the newest store).
// Outside a model thread the operations simply run (single-threaded set-up and checks).
// Do not include directly: include sync/primitives.h in a target compiled with
// -DFAIRSCHED_EXPLORE (see sync/explore/README.md).
#ifndef FAIRSCHED_SYNC_EXPLORE_PRIMITIVES_H_
#define FAIRSCHED_SYNC_EXPLORE_PRIMITIVES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>

#include "sync/explore/explorer.h"

namespace fairsched {

namespace explore::internal {
inline void BeforeAccess(OpKind kind, const void* object, const SourceLocation& where) {
  if (Runtime* runtime = ActiveRuntime()) runtime->Step(kind, object, where);
}
// An atomic's value as the explorer keeps it in a location's store history, and back.
template <typename T>
std::uint64_t ToBits(T value) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>,
                "the explorer keeps atomic values of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}
template <typename T>
T FromBits(std::uint64_t bits) {
  T value{};
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}
// Loads and stores report their values to the runtime (no-ops outside a model thread).
template <typename T>
T LoadValue(const void* object, T in_memory, std::memory_order order, bool latest_only = false) {
  Runtime* runtime = ActiveRuntime();
  if (runtime == nullptr) return in_memory;
  return FromBits<T>(runtime->Load(object, ToBits(in_memory), order, latest_only));
}
template <typename T>
void StoreValue(const void* object, T before, T stored, std::memory_order order, bool rmw) {
  if (Runtime* runtime = ActiveRuntime()) {
    runtime->Store(object, ToBits(before), ToBits(stored), order, rmw);
  }
}
// The failure order std::atomic uses for a compare-exchange given one order.
constexpr std::memory_order FailureOrder(std::memory_order order) {
  return order == std::memory_order_acq_rel   ? std::memory_order_acquire
         : order == std::memory_order_release ? std::memory_order_relaxed
                                              : order;
}
}  // namespace explore::internal

// std::atomic's interface, each operation one explorer step, then reported to the runtime
// (Runtime::Load/Store: happens-before for its memory order, and under kCpp20 the value a
// load reads). compare_exchange_weak never fails spuriously here (it behaves as the strong
// one); a compare-exchange, successful or not, reads the newest store (a failed one is a
// load with the failure order).
template <typename T>
class Atomic {
  using Kind = explore::internal::OpKind;
  using Where = explore::internal::SourceLocation;

 public:
  // A new object: under kCpp20 its address starts a fresh store history (an earlier object
  // at that address in the same schedule is gone).
  constexpr Atomic() noexcept : value_() { Forget(); }
  constexpr Atomic(T value) noexcept : value_(value) { Forget(); }  // NOLINT: like std::atomic
  Atomic(const Atomic&) = delete;
  Atomic& operator=(const Atomic&) = delete;

  T load(std::memory_order order = std::memory_order_seq_cst,
         Where where = Where::current()) const {
    Before(Kind::kLoad, where);
    return explore::internal::LoadValue(&value_, value_.load(), order);
  }
  void store(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) {
    Before(Kind::kStore, where);
    const T before = value_.exchange(value);
    explore::internal::StoreValue(&value_, before, value, order, /*rmw=*/false);
  }
  T exchange(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) {
    return Rmw([&] { return value_.exchange(value); }, order, where);
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure, Where where = Where::current()) {
    Before(Kind::kReadModifyWrite, where);
    const T before = value_.load();
    const bool swapped = value_.compare_exchange_strong(expected, desired);
    if (swapped) {
      explore::internal::StoreValue(&value_, before, desired, success, /*rmw=*/true);
    } else {
      explore::internal::LoadValue(&value_, before, failure, /*latest_only=*/true);
    }
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
  template <typename Op>
  T Rmw(Op op, std::memory_order order, const Where& where) {
    Before(Kind::kReadModifyWrite, where);
    const T old = op();
    explore::internal::StoreValue(&value_, old, value_.load(), order, /*rmw=*/true);
    return old;
  }
  constexpr void Forget() {
    if (std::is_constant_evaluated()) return;
    if (auto* runtime = explore::internal::ActiveRuntime()) runtime->Forget(&value_);
  }

  // The real value: always the newest store in modification order (a kCpp20 load may
  // return an older one from the runtime's history). Only one model thread runs at a time
  // and the explorer's baton hand-off orders them, so a std::atomic is not needed for
  // correctness; it keeps the type's requirements (trivially copyable) and atomicity the
  // same as production.
  std::atomic<T> value_;
};

// std::atomic_ref's interface, each operation one explorer step on the referenced object
// (two AtomicRefs to one object are the same object to the explorer, also for
// happens-before).
template <typename T>
class AtomicRef {
  using Kind = explore::internal::OpKind;
  using Where = explore::internal::SourceLocation;

 public:
  explicit AtomicRef(T& object) noexcept : ref_(object), object_(&object) {}

  T load(std::memory_order order = std::memory_order_seq_cst,
         Where where = Where::current()) const {
    Before(Kind::kLoad, where);
    return explore::internal::LoadValue(object_, ref_.load(), order);
  }
  void store(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) const {
    Before(Kind::kStore, where);
    const T before = ref_.exchange(value);
    explore::internal::StoreValue(object_, before, value, order, /*rmw=*/false);
  }
  T exchange(T value, std::memory_order order = std::memory_order_seq_cst,
             Where where = Where::current()) const {
    Before(Kind::kReadModifyWrite, where);
    const T old = ref_.exchange(value);
    explore::internal::StoreValue(object_, old, value, order, /*rmw=*/true);
    return old;
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure, Where where = Where::current()) const {
    Before(Kind::kReadModifyWrite, where);
    const T before = ref_.load();
    const bool swapped = ref_.compare_exchange_strong(expected, desired);
    if (swapped) {
      explore::internal::StoreValue(object_, before, desired, success, /*rmw=*/true);
    } else {
      explore::internal::LoadValue(object_, before, failure, /*latest_only=*/true);
    }
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

  std::atomic_ref<T> ref_;
  const T* object_;
};

// A mutex in the model: lock is a scheduling point, enabled only while the mutex is free.
class Mutex {
  using Where = explore::internal::SourceLocation;

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
  using Where = explore::internal::SourceLocation;

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

// atomic_thread_fence(order) in the model (Runtime::ThreadFence): under the default
// sequentially consistent model it changes no value and is not a scheduling point, only
// happens-before; under kCpp20 it is a step with its C++20 meaning (a seq_cst fence takes
// its place in the total order S). Production code calls FenceSeqCst; scenarios may use
// the other orders.
inline void ThreadFence(std::memory_order order, explore::internal::SourceLocation where =
                                                     explore::internal::SourceLocation::current()) {
  if (auto* runtime = explore::internal::ActiveRuntime()) runtime->ThreadFence(order, where);
}

inline void FenceSeqCst(
    explore::internal::SourceLocation where = explore::internal::SourceLocation::current()) {
  ThreadFence(std::memory_order_seq_cst, where);
}

// In the model, spinning gives way: the thread is not scheduled again until another thread
// has taken a step that can change what it sees, i.e. not a load or a CpuRelax (so a spin
// loop costs no preemption and cannot spin forever unnoticed).

inline void CpuRelax(
    explore::internal::SourceLocation where = explore::internal::SourceLocation::current()) {
  if (auto* runtime = explore::internal::ActiveRuntime()) runtime->Relax(where);
}

// The model has no cycles: a time budget (sync/primitives.h) never runs out in it.
inline std::uint64_t CycleCount() { return 0; }

}  // namespace fairsched

// The futex, the clock and threads (FutexWait, FutexWake, SteadyClock, Thread, YieldThread).
#include "sync/explore/futex.h"

#endif  // FAIRSCHED_SYNC_EXPLORE_PRIMITIVES_H_
