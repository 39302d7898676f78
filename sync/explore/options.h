// The explorer's public option and result types: how a search runs (strategy, bounds, memory
// model, replay) and what it reports. Included by sync/explore/explorer.h, which documents
// the explorer's contract; see sync/explore/README.md for when to change each option.
#ifndef FAIRSCHED_SYNC_EXPLORE_OPTIONS_H_
#define FAIRSCHED_SYNC_EXPLORE_OPTIONS_H_

#include <cstdint>
#include <string>

namespace fairsched::explore {

struct Options {
  enum class Strategy {
    kDepthFirst,  // every schedule with at most `preemption_bound` preemptions
    kRandom,      // `max_executions` schedules, each choice uniform among runnable threads
  };
  Strategy strategy = Strategy::kDepthFirst;
  // A preemption is a switch away from a thread that could have continued. Switches at a
  // blocking operation, at the end of a thread or at CpuRelax are free.
  int preemption_bound = 2;
  // Depth-first: give up (result.complete == false) after this many schedules.
  // Random: the number of schedules to run.
  std::uint64_t max_executions = 100000;
  std::uint64_t seed = 1;  // random strategy only
  // Steps (instrumented operations) per schedule before it is reported as a livelock.
  std::uint64_t max_steps = 20000;
  // A schedule printed by an earlier failure ("0x3,1,2x4"): run only it, with its trace.
  // If empty, the environment variable FAIRSCHED_EXPLORE_REPLAY is used when set.
  std::string replay;
  // Depth-first only: sleep sets (a partial-order reduction). A step that commutes with the
  // one just taken, and was already explored from the state before, is not explored again
  // from the state after. Cuts the schedule count several-fold; see README for what it
  // costs in coverage when combined with the preemption bound.
  bool sleep_sets = true;
  // Which values loads may return.
  enum class MemoryModel {
    // Every atomic operation is one step of a single total order and a load returns the
    // latest store (memory orders count for happens-before only). Fast; the default.
    kSequentiallyConsistent,
    // C++20: a load may return an older store when nothing orders it after that store's
    // successors (each such candidate is explored); fences are scheduling points.
    kCpp20,
  };
  MemoryModel memory_model = MemoryModel::kSequentiallyConsistent;
  // kCpp20 only: a load reads one of the newest `history_bound` stores of its location in
  // modification order (1..32); older stores are out of reach (a bound, like preemptions).
  int history_bound = 4;
};

struct Result {
  bool failed = false;
  std::string failure;           // what went wrong (check message, deadlock, livelock)
  std::string schedule;          // the failing schedule, replayable through Options::replay
  std::string trace;             // one line per step of the failing schedule
  std::uint64_t executions = 0;  // schedules run, including the failing one
  std::uint64_t pruned = 0;      // of those, cut short as already covered (sleep sets, bound)
  std::uint64_t max_depth = 0;   // most steps seen in one schedule
  bool complete = false;         // depth-first: every schedule within the bound was run
  std::string Report() const {
    std::string out = failed ? "explore: FAILED after " : "explore: passed, ";
    out += std::to_string(executions) + " schedule(s)";
    if (!failed) out += complete ? " (all within the preemption bound)" : " (search cut short)";
    if (failed) {
      out += ": " + failure + "\n  replay with FAIRSCHED_EXPLORE_REPLAY=" + schedule +
             "\n  trace (thread: operation):\n" + trace;
    }
    return out;
  }
};

}  // namespace fairsched::explore

#endif  // FAIRSCHED_SYNC_EXPLORE_OPTIONS_H_
