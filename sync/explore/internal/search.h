// The search over schedules (implementation only): which thread runs at each scheduling
// point and which store a kCpp20 load reads. Depth-first with a preemption bound and sleep
// sets (a partial-order reduction), uniform random choices, or the replay of a schedule
// given as text. The runtime (sync/explore/internal/runtime.h) asks it for each choice and,
// after each schedule, for the next one to run.
#ifndef FAIRSCHED_SYNC_EXPLORE_INTERNAL_SEARCH_H_
#define FAIRSCHED_SYNC_EXPLORE_INTERNAL_SEARCH_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sync/explore/internal/ops.h"
#include "sync/explore/internal/trace.h"
#include "sync/explore/options.h"

namespace fairsched::explore::internal {

// A thread's next operation, as the partial-order reduction sees it.
struct PendingOp {
  OpKind kind = OpKind::kStart;
  const void* object = nullptr;
};

// One scheduling choice of the depth-first search, kept across schedules.
struct Choice {
  // kCpp20: a choice of the store a load reads (`count` candidates, `tried` and `chosen`
  // count back from the newest) instead of a thread; no sleep set, no preemption cost.
  bool value_choice = false;
  int count = 0;
  std::uint32_t enabled = 0;  // threads that could run
  std::uint32_t tried = 0;    // threads already chosen here in some schedule
  std::uint32_t asleep = 0;   // sleep set: threads whose step here is already covered
  int chosen = -1;
  int current = -1;  // thread that was running
  bool current_enabled = false;
  int preemptions_before = 0;
  PendingOp pending[kMaxModelThreads];
};

// The choices of one exploration. A choice that cannot be made (a replayed schedule that
// does not fit the scenario, or a re-run that differs from the run it repeats: the
// scenario is not deterministic) sets *error and returns -1; the caller fails the schedule.
class Search {
 public:
  explicit Search(const Options& options) : options_(options), random_(options.seed) {}

  // Before the first schedule: when `replay` (ScheduleText's form) is not empty, run only
  // that schedule. False when it does not parse.
  bool StartReplay(const std::string& replay) {
    if (!replay.empty() && !ParseSchedule(replay, &forced_)) return false;
    replaying_ = !replay.empty();
    return true;
  }

  // A new schedule starts (its first choices are the forced ones, if any).
  void StartSchedule() {
    schedule_.clear();
    preemptions_ = 0;
    redundant_ = false;
  }

  const std::vector<int>& schedule() const { return schedule_; }  // choices made so far
  bool redundant() const { return redundant_; }
  bool replaying() const { return replaying_; }

  // Picks the next thread to run among `enabled` (a bit per thread, not empty), `me` being
  // the thread that ran last (-1: none). `pending[t]` is thread t's next operation for the
  // first `threads` threads; `weak`: the kCpp20 model.
  int ChooseThread(int me, std::uint32_t enabled, int threads, const PendingOp* pending, bool weak,
                   std::string* error) {
    const bool me_enabled = me >= 0 && (enabled >> me & 1u) != 0;
    const std::size_t depth = schedule_.size();
    const bool depth_first = options_.strategy == Options::Strategy::kDepthFirst;
    // Sleep set at this point: inherited from the previous choice, minus the threads whose
    // step conflicts with the step taken there.
    std::uint32_t asleep = 0;
    std::size_t previous = depth;  // the latest thread choice (value choices sit between)
    while (previous > 0 && previous <= path_.size() && path_[previous - 1].value_choice) {
      --previous;
    }
    if (depth_first && options_.sleep_sets && !replaying_ && !redundant_ && previous > 0) {
      const Choice& before = path_[previous - 1];
      const std::uint32_t candidates = (before.asleep | before.tried) & ~(1u << before.chosen);
      for (int t = 0; t < threads; ++t) {
        if ((candidates >> t & 1u) != 0 &&
            !Dependent(before.pending[t], before.pending[before.chosen], weak)) {
          asleep |= 1u << t;
        }
      }
    }
    int chosen;
    if (depth < forced_.size()) {
      chosen = forced_[depth];
      if (chosen < 0 || chosen >= threads || (enabled >> chosen & 1u) == 0) {
        *error = "the replayed schedule does not fit the scenario (thread " +
                 std::to_string(chosen) + " cannot run at step " + std::to_string(depth) +
                 "): the scenario is not deterministic";
        return -1;
      }
    } else if (!depth_first) {
      int count = __builtin_popcount(enabled);
      int pick = static_cast<int>(random_() % static_cast<std::uint64_t>(count));
      chosen = 0;
      while ((enabled >> chosen & 1u) == 0 || pick-- != 0) ++chosen;
    } else {
      // Default: keep running the current thread (no preemption), else the lowest id; among
      // the threads not asleep, unless the schedule is already known to be redundant.
      std::uint32_t candidates = redundant_ ? enabled : enabled & ~asleep;
      const bool me_candidate = me >= 0 && (candidates >> me & 1u) != 0;
      if (candidates == 0 ||
          (!me_candidate && me_enabled && preemptions_ >= options_.preemption_bound)) {
        // Every continuation from here is covered by an earlier schedule (all runnable
        // threads asleep, or only a preemption beyond the bound would avoid them). Finish
        // the schedule without preemptions and without recording more choices, so the
        // search never comes back below this point.
        redundant_ = true;
        candidates = enabled;
      }
      chosen = me >= 0 && (candidates >> me & 1u) != 0 ? me : __builtin_ctz(candidates);
    }
    if (depth_first && !replaying_) {
      if (depth < path_.size()) {
        if (path_[depth].value_choice || path_[depth].enabled != enabled) {
          *error = "the scenario is not deterministic (different runnable threads at step " +
                   std::to_string(depth) + " of a re-run)";
          return -1;
        }
      } else if (!redundant_) {
        Choice choice;
        choice.enabled = enabled;
        choice.tried = 1u << chosen;
        choice.asleep = asleep;
        choice.chosen = chosen;
        choice.current = me;
        choice.current_enabled = me_enabled;
        choice.preemptions_before = preemptions_;
        for (int t = 0; t < threads; ++t) choice.pending[t] = pending[t];
        path_.push_back(choice);
      }
    }
    if (chosen != me && me_enabled) ++preemptions_;
    schedule_.push_back(chosen);
    return chosen;
  }

  // A kCpp20 value choice among `count` readable stores (0: the newest; k: k older).
  // Recorded in the search like a thread choice, so depth-first tries every candidate.
  int ChooseValue(int count, std::string* error) {
    if (count <= 1) return 0;
    const std::size_t depth = schedule_.size();
    const bool depth_first = options_.strategy == Options::Strategy::kDepthFirst;
    int behind = 0;
    if (depth < forced_.size()) {
      behind = -1 - forced_[depth];
      if (behind < 0 || behind >= count) {
        *error = "the replayed schedule does not fit the scenario (no value choice " +
                 std::to_string(behind) + " at step " + std::to_string(depth) +
                 "): the scenario is not deterministic";
        return -1;
      }
    } else if (!depth_first) {
      behind = static_cast<int>(random_() % static_cast<std::uint64_t>(count));
    }
    if (depth_first && !replaying_) {
      if (depth < path_.size()) {
        if (!path_[depth].value_choice || path_[depth].count != count) {
          *error = "the scenario is not deterministic (different readable stores at step " +
                   std::to_string(depth) + " of a re-run)";
          return -1;
        }
      } else if (!redundant_) {
        Choice choice;
        choice.value_choice = true;
        choice.count = count;
        choice.tried = 1u << behind;
        choice.chosen = behind;
        path_.push_back(choice);
      }
    }
    schedule_.push_back(-1 - behind);
    return behind;
  }

  // Depth-first: move to the next untried choice within the preemption bound.
  bool Backtrack() {
    while (!path_.empty()) {
      Choice& choice = path_.back();
      if (choice.value_choice) {
        for (int behind = 0; behind < choice.count; ++behind) {
          if ((choice.tried >> behind & 1u) != 0) continue;
          choice.tried |= 1u << behind;
          choice.chosen = behind;
          ForceCurrentPath();
          return true;
        }
        path_.pop_back();
        continue;
      }
      const std::uint32_t untried = choice.enabled & ~choice.tried & ~choice.asleep;
      for (int thread = 0; thread < kMaxModelThreads; ++thread) {
        if ((untried >> thread & 1u) == 0) continue;
        const int cost = (thread != choice.current && choice.current_enabled) ? 1 : 0;
        if (choice.preemptions_before + cost > options_.preemption_bound) continue;
        choice.tried |= 1u << thread;
        choice.chosen = thread;
        ForceCurrentPath();
        return true;
      }
      path_.pop_back();
    }
    return false;
  }

 private:
  // The next schedule replays the search stack's choices (value choices as -1 - behind).
  void ForceCurrentPath() {
    forced_.clear();
    for (const Choice& step : path_) {
      forced_.push_back(step.value_choice ? -1 - step.chosen : step.chosen);
    }
  }

  // Whether two threads' next steps may not commute. A step is the operation plus the
  // uninstrumented code up to the thread's next operation; plain memory is assumed free of
  // data races (synchronised through the instrumented operations), so only the operations
  // matter. Atomics conflict on one object unless both only load; every mutex, condition
  // variable, join and spin operation conservatively conflicts with every other one.
  //
  // kCpp20: a fence (a seq_cst one changes what later loads may read anywhere) conflicts
  // with every atomic operation and fence, and two loads of one object conflict too (two
  // seq_cst loads restrict each other through S; the orders are not tracked here).
  static bool Dependent(const PendingOp& a, const PendingOp& b, bool weak) {
    if (a.kind == OpKind::kStart || b.kind == OpKind::kStart) return false;
    // A futex compare or wake acts on its word like a read-modify-write; a futex sleeper's
    // step (woken, or timing out and moving the clock) conflicts with everything.
    const auto is_atomic = [weak](OpKind kind) {
      return kind == OpKind::kLoad || kind == OpKind::kStore || kind == OpKind::kReadModifyWrite ||
             kind == OpKind::kFutexCompare || kind == OpKind::kFutexWake ||
             (weak && kind == OpKind::kFence);
    };
    if (a.kind == OpKind::kRelax || b.kind == OpKind::kRelax) return true;
    if (a.kind == OpKind::kFutexWait || b.kind == OpKind::kFutexWait) return true;
    if (is_atomic(a.kind) && is_atomic(b.kind)) {
      if (a.kind == OpKind::kFence || b.kind == OpKind::kFence) return true;
      return a.object == b.object &&
             (weak || !(a.kind == OpKind::kLoad && b.kind == OpKind::kLoad));
    }
    return is_atomic(a.kind) == is_atomic(b.kind);
  }

  const Options options_;
  std::mt19937_64 random_;     // random strategy only
  std::vector<int> schedule_;  // choices made in this schedule
  std::vector<int> forced_;    // choices to replay at the start of the next schedule
  std::vector<Choice> path_;   // depth-first search stack
  bool redundant_ = false;     // the rest of this schedule is covered by earlier ones
  bool replaying_ = false;
  int preemptions_ = 0;
};

}  // namespace fairsched::explore::internal

#endif  // FAIRSCHED_SYNC_EXPLORE_INTERNAL_SEARCH_H_
