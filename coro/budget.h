// The cooperative budget: a spawned coroutine may complete a bounded number of operations
// without suspending; the next one yields to the scheduler once. Without it, a coroutine
// whose reads are always served at once (lines already in a BufferedStream, a socket that
// always has data, a channel that is never empty) would hold its worker for as long as the
// data lasts, and every other coroutine ready on that worker would wait.
//
// Contract:
//   - Budget: each step of a spawned coroutine (from a resume until it next suspends) may
//     spend ReadyBudget() units (kDefaultReadyBudget = 128 unless SetReadyBudget changed
//     it). Every real suspension (a wait that suspended, a Yield) starts a new step with a
//     full budget.
//   - `co_await ConsumeBudget()` spends one unit. While units are left it does not suspend;
//     when the step's units are spent it yields once, exactly as `co_await Yield()` would
//     (the coroutine is re-posted behind the tasks already ready, under the scheduler's
//     usual fairness bound), and continues with a full budget. Outside a spawned coroutine
//     (RunSync, a plain thread) it never suspends.
//   - What spends it: every socket operation of io/ (Read, Write, their vectored forms,
//     Accept, UDP transfers) once when it starts, every BufferedStream read call once
//     (ReadUntil, ReadLine, ReadExactly, ReadSome; so a read that also reads from the
//     socket spends two), every TlsStream read, write and handshake call once, and every
//     co_await of Channel::Send / Channel::Receive that completes without waiting
//     (coro/channel.h). TrySend/TryReceive, mutexes, semaphores and events do not spend it.
//   - SetReadyBudget(n) (any thread) changes the budget of every step that starts
//     afterwards, process-wide; n <= 0 turns it off (nothing ever yields for the budget).
//   - Cost: spending a unit is one call that decrements a thread-local counter.
#ifndef FAIRSCHED_CORO_BUDGET_H_
#define FAIRSCHED_CORO_BUDGET_H_

#include <coroutine>

#include "coro/internal/coroutine_state.h"
#include "coro/internal/ready_budget.h"

namespace fairsched::coro {

inline constexpr int kDefaultReadyBudget = internal::kDefaultReadyBudgetCount;

inline void SetReadyBudget(int operations) {
  internal::g_ready_budget.store(operations > 0 ? operations : internal::kNoReadyBudget,
                                 std::memory_order_relaxed);  // see ready_budget.h
}
// The current setting; 0 when the budget is off.
inline int ReadyBudget() {
  const int operations = internal::FullReadyBudget();
  return operations == internal::kNoReadyBudget ? 0 : operations;
}

namespace internal {

// Spends one unit of the running step's budget. True: go on without suspending; false: the
// budget is spent and the caller must yield (YieldForBudget), which starts a new step.
// Outside a spawned coroutine the count is refilled instead and the answer is true. Not
// inlined into coroutine bodies (as TransferTo in coro/lazy.h): a thread-local address
// must not be reused across a suspension.
[[gnu::noinline]] inline bool SpendReadyBudget() {
  if (--t_ready_budget_left >= 0) return true;
  if (CurrentState() != nullptr) return false;
  t_ready_budget_left = FullReadyBudget();
  return true;
}

// From an awaiter's await_suspend after SpendReadyBudget() returned false: re-posts the
// coroutine as Yield does.
inline void YieldForBudget(std::coroutine_handle<> handle) {
  RequireCurrentState("a budget yield outside a spawned coroutine")->SuspendForYield(handle);
}

}  // namespace internal

// co_await -> void. Spends one unit; yields when the step's budget is spent.
inline auto ConsumeBudget() {
  struct Awaiter {
    bool await_ready() { return internal::SpendReadyBudget(); }
    void await_suspend(std::coroutine_handle<> handle) { internal::YieldForBudget(handle); }
    void await_resume() noexcept {}
  };
  return Awaiter{};
}

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_BUDGET_H_
