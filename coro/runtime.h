// coro runtime: coroutines running as fairsched tasks. An umbrella header: it only includes
// the runtime's parts, so that code written against coro/runtime.h (and the //coro:runtime
// target) keeps working. New code may include the part it uses:
//   coro/runtime_types.h  WakeReason, CancelReason, WaitMode, SpawnOptions, DeadlineAfter
//   coro/spawn.h          Spawn, SpawnHere, JoinHandle, CoroutineRef, ThisCoroutine
//   coro/wait.h           the wait primitive (PrepareWait, Waker, WaitWoken), Yield,
//                         SleepFor/SleepUntil, WaitSignal
//   coro/cancel.h         IsCancelled, CurrentCancelReason, CancelCallback; Stop
// Each header's comment is its contract. The mechanism behind them is internal:
// coro/internal/coroutine_state.h (the spawned coroutine's state and its task callback),
// coro/internal/wait_word.h (the wait word's bit table and transitions),
// coro/internal/state_extension.h (cancel callbacks, joiner, continuation helper),
// coro/internal/state_ops.h (the type-erased scheduler and root-frame tables).
#ifndef FAIRSCHED_CORO_RUNTIME_H_
#define FAIRSCHED_CORO_RUNTIME_H_

#include "coro/cancel.h"         // IWYU pragma: export
#include "coro/runtime_types.h"  // IWYU pragma: export
#include "coro/spawn.h"          // IWYU pragma: export
#include "coro/wait.h"           // IWYU pragma: export

#endif  // FAIRSCHED_CORO_RUNTIME_H_
