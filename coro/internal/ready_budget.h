// The counter behind the cooperative budget (coro/budget.h): how many more operations the
// running coroutine step may complete without suspending before one of them yields.
// Internal: CoroutineState refills it at every step; coro/budget.h spends it.
//
// Contract:
//   - t_ready_budget_left is per thread and belongs to the step running on it: every step
//     of a spawned coroutine (CoroutineState::Step) sets it to the process-wide setting
//     before it resumes the coroutine, and puts back the value it found when the step ends
//     (a step nested in another one on the same thread leaves the outer one's count as it
//     was). A step begins after every real suspension (a wait or a Yield), so "left in
//     this step" is "left since the coroutine last suspended".
//   - g_ready_budget is the setting (coro::SetReadyBudget); kNoReadyBudget stands for "no
//     budget" (a count that never runs out in practice).
#ifndef FAIRSCHED_CORO_INTERNAL_READY_BUDGET_H_
#define FAIRSCHED_CORO_INTERNAL_READY_BUDGET_H_

#include <limits>

#include "sync/primitives.h"

namespace fairsched::coro::internal {

inline constexpr int kDefaultReadyBudgetCount = 128;
inline constexpr int kNoReadyBudget = std::numeric_limits<int>::max();

// Relaxed everywhere: a setting read once per step; it publishes no other data, and a step
// that starts with the old value a moment after a change only yields at the old count.
inline Atomic<int> g_ready_budget{kDefaultReadyBudgetCount};

inline thread_local int t_ready_budget_left = kDefaultReadyBudgetCount;

// The count a new step starts with.
inline int FullReadyBudget() { return g_ready_budget.load(std::memory_order_relaxed); }

}  // namespace fairsched::coro::internal

#endif  // FAIRSCHED_CORO_INTERNAL_READY_BUDGET_H_
