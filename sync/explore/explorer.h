// Interleaving explorer: runs a small multi-threaded scenario many times, choosing at every
// atomic or mutex operation which thread goes next, until every schedule within a preemption
// bound has been tried (depth-first) or a number of random schedules has run. A failed
// `explore::Check`, a data race on an explore::Data variable, a deadlock (every thread
// blocked) or a livelock (every thread blocked or spinning) in any schedule stops the search
// and reports the schedule, which can be replayed.
//
// Only builds with FAIRSCHED_EXPLORE defined use this: sync/primitives.h then takes its
// Atomic/Mutex/ConditionVariable/CpuRelax from sync/explore/primitives.h, whose operations
// call into the runtime (internal/runtime.h). See sync/explore/README.md for how to write a
// scenario, how to replay a failure, and exactly which interleavings are (and are not) covered. In
// short:
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
//
// This header is the public entry: Explore, Thread, Data and Check below, with Options and
// Result (options.h). The implementation, one concern per file, under internal/:
//   runtime.h       the model threads, the baton, the instrumented operations' entry points
//   model_thread.h  a model thread's state, and which threads may run (blocking, timeouts)
//   memory_model.h  happens-before, and under kCpp20 the store history and what a load reads
//   search.h        depth-first / random / replayed choice of thread and of stored value
//   trace.h         the trace and the schedule text of a failure, and parsing it to replay
//   ops.h           the operation kinds, vector clocks and per-object model state they share
#ifndef FAIRSCHED_SYNC_EXPLORE_EXPLORER_H_
#define FAIRSCHED_SYNC_EXPLORE_EXPLORER_H_

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <utility>

#include "sync/explore/internal/ops.h"
#include "sync/explore/internal/runtime.h"
#include "sync/explore/options.h"

namespace fairsched::explore {

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

  void Join(internal::SourceLocation where = internal::SourceLocation::current()) {
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

  T Read(internal::SourceLocation where = internal::SourceLocation::current()) {
    if (internal::Runtime* runtime = internal::ActiveRuntime())
      runtime->DataRead(&accesses_, where);
    return value_;
  }
  void Write(T value, internal::SourceLocation where = internal::SourceLocation::current()) {
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
                  internal::SourceLocation where = internal::SourceLocation::current()) {
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
