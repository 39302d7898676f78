// The old name of coro/lazy.h. `coro::Task<T>` is coro::Lazy<T> under its old name, kept so
// that code written against //coro:task still builds (with a deprecation warning that names
// the new one). New code includes coro/lazy.h. (fairsched::Task, the scheduler's unit of
// work, is in sched/task.h.)
#ifndef FAIRSCHED_CORO_TASK_H_
#define FAIRSCHED_CORO_TASK_H_

#include "coro/lazy.h"

namespace fairsched::coro {

template <typename T = void>
using Task [[deprecated("renamed fairsched::coro::Lazy (coro/lazy.h)")]] = Lazy<T>;

}  // namespace fairsched::coro

#endif  // FAIRSCHED_CORO_TASK_H_
