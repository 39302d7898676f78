// The explore build's futex, clock and thread names (the model side of the block "Futex,
// clock, threads" in sync/primitives.h). Included at the end of sync/explore/primitives.h;
// do not include directly.
//
//   - FutexWait(word, expected, deadline): one scheduling point, then, as one atomic step
//     with no scheduling point in between, compares *word with `expected` (returning at once
//     if they differ, like EAGAIN) and puts the thread to sleep on the word. A sleeper is not
//     runnable until a FutexWake picks it. With a finite deadline it may also time out: the
//     explorer may choose it at any point after another thread has taken a step (so a
//     timeout races everything), and chooses the earliest deadline when nothing else can
//     run; a timeout moves the logical clock to the deadline. No spurious wakeups (the
//     callers' loops treat one like a timeout before the deadline, which the clock check
//     turns into another wait).
//   - FutexWake(word, count): one scheduling point, then wakes up to `count` sleepers of
//     the word, the longest sleeper first (FIFO; the kernel promises no order).
//   - SteadyClock: a logical clock, 0 at the start of every schedule, moved only by
//     timeouts (futex, and timed condition-variable waits, which time out only when nothing
//     else can run). Reading it is not a scheduling point.
//   - Thread: a movable handle on an explore::Thread, with std::thread's join/joinable.
//   - YieldThread: CpuRelax (a yield loop is a spin loop to the explorer).
// Neither the futex nor the clock orders memory: the code around them must (as in the
// kernel's futex, which promises no ordering either).
#ifndef FAIRSCHED_SYNC_EXPLORE_FUTEX_H_
#define FAIRSCHED_SYNC_EXPLORE_FUTEX_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <utility>

#include "sync/explore/explorer.h"
#include "sync/explore/internal/ops.h"

namespace fairsched {

struct SteadyClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<SteadyClock>;
  static constexpr bool is_steady = true;
  static constexpr bool kLogical = true;  // see explore::internal::ReachDeadline

  // The schedule's logical time; 0 outside a model thread.
  static time_point now() {
    explore::internal::Runtime* runtime = explore::internal::ActiveRuntime();
    return time_point(duration(runtime != nullptr ? runtime->Now() : 0));
  }
};

class Thread {
 public:
  template <typename F>
  explicit Thread(F&& body)
      : thread_(std::make_unique<explore::Thread>(std::function<void()>(std::forward<F>(body)))) {}
  Thread(Thread&&) noexcept = default;
  Thread& operator=(Thread&&) noexcept = default;

  bool joinable() const { return thread_ != nullptr; }
  void join(
      explore::internal::SourceLocation where = explore::internal::SourceLocation::current()) {
    thread_->Join(where);
    thread_.reset();
  }

 private:
  std::unique_ptr<explore::Thread> thread_;
};

inline void YieldThread(
    explore::internal::SourceLocation where = explore::internal::SourceLocation::current()) {
  CpuRelax(where);
}

inline void FutexWait(
    Atomic<std::uint32_t>* word, std::uint32_t expected, SteadyClock::time_point deadline,
    explore::internal::SourceLocation where = explore::internal::SourceLocation::current()) {
  explore::internal::Runtime* runtime = explore::internal::ActiveRuntime();
  if (runtime == nullptr) {
    std::fprintf(stderr, "explore: FutexWait outside a scenario would hang\n");
    std::abort();
  }
  runtime->FutexStep(explore::internal::OpKind::kFutexCompare, word, where);
  // The compare is part of the step just taken: read the word as code outside the model
  // does (no scheduling point, no happens-before: the kernel's compare orders nothing).
  const int me = explore::internal::t_model_thread;
  explore::internal::t_model_thread = -1;
  const std::uint32_t value = word->load(std::memory_order_seq_cst);
  explore::internal::t_model_thread = me;
  if (value != expected) return;
  const bool timed = deadline != SteadyClock::time_point::max();
  runtime->FutexSleep(word, timed, deadline.time_since_epoch().count(), where);
}

inline void FutexWake(
    Atomic<std::uint32_t>* word, int count,
    explore::internal::SourceLocation where = explore::internal::SourceLocation::current()) {
  if (explore::internal::Runtime* runtime = explore::internal::ActiveRuntime()) {
    runtime->FutexStep(explore::internal::OpKind::kFutexWake, word, where);
    runtime->FutexWakeSleepers(word, count);
  }
}

}  // namespace fairsched

#endif  // FAIRSCHED_SYNC_EXPLORE_FUTEX_H_
