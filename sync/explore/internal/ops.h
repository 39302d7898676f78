// The explorer's shared vocabulary (implementation only): the kinds of instrumented
// operation, call sites, vector clocks for happens-before, the model state kept inside an
// instrumented mutex, condition variable or explore::Data, and the calling OS thread's model
// thread id.
#ifndef FAIRSCHED_SYNC_EXPLORE_INTERNAL_OPS_H_
#define FAIRSCHED_SYNC_EXPLORE_INTERNAL_OPS_H_

#include <array>
#include <cstdint>

namespace fairsched::explore::internal {

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

// Where an instrumented operation was called, for traces and failure messages: the default
// argument `SourceLocation::current()` fills it in at the call site. std::source_location
// would do, but libstdc++ 12 builds it on a builtin clang 14 lacks; __builtin_FILE and
// __builtin_LINE exist in both compilers. Default-constructed: no location (line 0).
class SourceLocation {
 public:
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          int line = __builtin_LINE()) {
    return SourceLocation(file, line);
  }
  constexpr SourceLocation() = default;
  constexpr const char* file_name() const { return file_; }
  constexpr int line() const { return line_; }

 private:
  constexpr SourceLocation(const char* file, int line) : file_(file), line_(line) {}
  const char* file_ = "";
  int line_ = 0;
};

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

// The model thread id of the calling OS thread (-1 outside any model thread).
inline thread_local int t_model_thread = -1;

}  // namespace fairsched::explore::internal

#endif  // FAIRSCHED_SYNC_EXPLORE_INTERNAL_OPS_H_
