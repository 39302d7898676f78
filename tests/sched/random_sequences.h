// Randomized API sequences for the scheduler, checked against a reference model of the
// promises in sched/task_scheduler.h (docs/testing.md, "Randomized API sequences").
//
// A scenario is drawn from one 64-bit seed (std::mt19937_64): the options (1-3 workers,
// PostOrder, execute_batch_size, ...), a set of tasks of five kinds (plain tasks that may
// post or wake others, busy re-posters, timers, waiters, blockers), one-shot plans, and
// lists of actions that outside threads perform while the workers run: Post, PostOneShot,
// PostDeadline (past and future), PostDeadlineThroughStop, PostWait, Wakeup, Signal,
// Cancel, each also made from inside tasks; 1-4 Start/Stop cycles, outside threads racing
// with Stop or joined before it. The seed fixes the scenario, not the interleaving: the
// threads run for real. An IO backend (HookedBackend, with Jitter) widens the races around Stop: the
// role holder sleeps at random in Poll and, while Stop drains, in CancelAll, and Stop's own
// Notify calls sometimes post a pair of one-shots from the owner's thread.
//
// Every post and every start is written to a log; after the run the model checks it:
//   - every post ran exactly once, and no task ran twice at the same time;
//   - order: a post P that joined the shared FIFO when it was made (from outside, or under
//     PostOrder::kStrict; a post whose deadline had passed only on request, see CheckLog)
//     is never started after a due post made after P returned; a run-now post made by a
//     task under kBatched may be overtaken only by posts made while fewer than
//     execute_batch_size starts had happened on its poster's worker and fewer than
//     3 * execute_batch_size on each other worker since P (counted in the tasks, so with a
//     slack of kBoundSlack starts); under kHome, at most execute_batch_size + home_skew
//     (or the skew ceiling the seed drew) + (kHomeStampBlock - 1) x (workers - 1) posts
//     made after P start on any one worker before it; two due posts made by one callback
//     start in post order. "Started before"
//     is counted only when it is certain from the log: on one worker, or before the
//     callback that preceded P on P's worker ended (with several workers a worker takes
//     one task at a time, so it took P after that);
//   - a timer (PostDeadline, PostDeadlineThroughStop; nobody wakes these) never starts
//     before its deadline, unless Stop woke it (not the ThroughStop ones);
//   - a PostWait task runs only after a Wakeup/Signal/Cancel or when Stop wakes it;
//     ReceiveSignal()/IsCancelled() only after a Signal/Cancel; a run-now post sees
//     IsExpired(); a waiting task woken by a wakeup starts within kWakeLatencyBound;
//   - Stop returns (no progress for the hang limit fails the run) and IsEmpty() is true
//     after a Stop that no outside thread raced with, and after the last one.
//
// Entry points: RunScenario (one seed) and RunMany (a batch, sized by the environment:
// FAIRSCHED_RANDOM_SEED, FAIRSCHED_RANDOM_RUNS).
#ifndef FAIRSCHED_TESTS_SCHED_RANDOM_SEQUENCES_H_
#define FAIRSCHED_TESTS_SCHED_RANDOM_SEQUENCES_H_

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/io_backend.h"
#include "sched/task.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/sched/hooked_backend.h"
#include "tests/stress.h"

namespace fairsched::testing::random_sequences {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// Starts counted in the tasks lag the scheduler's own count by the task that is starting.
inline constexpr std::int64_t kBoundSlack = 2;
// A wakeup of a waiting task must start it within this (a liveness bound, not a latency
// measurement: generous for sanitizers on a loaded machine; the time the watchdog itself
// was not run is added, so a paused or starved process does not fail it).
inline constexpr nanoseconds kWakeLatencyBound = std::chrono::seconds(5);

// Sleeps for a random while at some of the role holder's calls (Poll, CancelAll) and after a
// poster's Notify, as if the OS descheduled the thread there: the run installs Pause as the
// hooks of tests/sched/hooked_backend.h. The chance is per mille, set by the run before
// Start (one run at a time).
struct Jitter {
  static inline Atomic<std::uint32_t> per_mille{0};
  // CancelAll runs only while Stop drains, at every role take: its own (higher) chance.
  static inline Atomic<std::uint32_t> cancel_all_per_mille{0};
  static inline Atomic<std::uint64_t> seed{1};

  static void Pause(const Atomic<std::uint32_t>& knob, std::uint32_t max_micros = 400) {
    // Relaxed: a knob; a stale value only changes the chance.
    const std::uint32_t chance = knob.load(std::memory_order_relaxed);
    if (chance == 0) return;
    // One generator per thread, seeded once from the shared counter (relaxed: only
    // distinct values matter).
    thread_local std::minstd_rand rng(
        static_cast<std::uint32_t>(seed.fetch_add(1, std::memory_order_relaxed)));
    if (rng() % 1000 >= chance) return;
    std::this_thread::sleep_for(microseconds(rng() % max_micros));
  }
};

using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, HookedBackend>;

// What one run found: empty `failure` when the model accepted the log.
struct Outcome {
  std::uint64_t seed = 0;
  std::string failure;
  bool hung = false;  // Stop (or the run) made no progress for the hang limit
  std::string config;
};

// How many runs, from which seeds, and the bounds of each.
struct Limits {
  std::int64_t runs = 100;
  std::uint64_t first_seed = 1;
  bool one_seed = false;       // every run uses first_seed (FAIRSCHED_RANDOM_SEED)
  double wall_seconds = 15;    // no new run after this (0: none)
  bool stop_at_first_failure = true;
  milliseconds hang_limit{5000};
  // The scenarios that would run under PostOrder::kBatched run under PostOrder::kHome.
  bool home_queues = false;
};

inline std::int64_t EnvInteger(const char* name, std::int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoll(text, nullptr, 10);
}

// CI: `ci_runs` runs from seed 1 for at most `ci_seconds`. FAIRSCHED_RANDOM_SEED=<n>
// repeats scenario n (FAIRSCHED_RANDOM_RUNS times, default 1); FAIRSCHED_RANDOM_RUNS=<n>
// alone runs n scenarios from a seed taken from the clock (printed), with no time limit.
// FAIRSCHED_RANDOM_HANG_MS overrides `hang_limit`.
inline Limits LimitsFromEnvironment(std::int64_t ci_runs, double ci_seconds,
                                    milliseconds hang_limit = milliseconds(5000)) {
  Limits limits;
  limits.runs = ci_runs;
  limits.wall_seconds = ci_seconds;
  limits.hang_limit = milliseconds(EnvInteger("FAIRSCHED_RANDOM_HANG_MS", hang_limit.count()));
  const std::int64_t runs = EnvInteger("FAIRSCHED_RANDOM_RUNS", 0);
  const char* seed = std::getenv("FAIRSCHED_RANDOM_SEED");
  if (seed != nullptr && *seed != '\0') {
    limits.first_seed = std::strtoull(seed, nullptr, 10);
    limits.one_seed = true;
    limits.runs = runs > 0 ? runs : 1;
    limits.wall_seconds = 0;
  } else if (runs > 0) {
    limits.runs = runs;
    limits.first_seed = static_cast<std::uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
    limits.wall_seconds = 0;
  }
  return limits;
}

namespace internal {

enum class NodeKind : std::uint8_t { kPlain, kRePoster, kTimer, kWaiter, kBlocker };
enum class PostKind : std::uint8_t {
  kRunNow,          // Post with no deadline
  kOneShot,         // PostOneShot
  kPastDeadline,    // PostDeadline, already passed when posted
  kFutureDeadline,  // PostDeadline in the future
  kThroughStop,     // PostDeadlineThroughStop in the future
  kWait,            // PostWait
};
enum class ActionKind : std::uint8_t {
  kPostNode, kPostOneShot, kWakeup, kSignal, kCancel, kOpenGate, kPause,
  kPostPair,  // outside only: a one-shot, a spin of 20-400 us, another one-shot
};

struct Action {
  ActionKind kind;
  int target = 0;           // node or one-shot plan
  std::uint32_t variant = 0;  // which post call / how long a pause, drawn at generation
};

// What a callback does: work (a spin or a sleep), then its actions.
struct Behaviour {
  microseconds spin{0};
  microseconds sleep{0};
  std::vector<Action> actions;
};

inline constexpr int kMaxSlots = 16;  // worker threads counted per run (more: not counted)
inline constexpr std::uint32_t kNoPost = ~0u;

struct PostRecord {
  // Written by the poster before its call.
  PostKind kind = PostKind::kRunNow;
  int node = -1;  // -1: a one-shot
  int plan = -1;
  std::uint32_t poster_post = kNoPost;  // the post whose callback made this one
  int poster_slot = -1;                 // the worker it ran on (-1: outside or uncounted)
  std::uint64_t post_begin = 0;         // log tick before the call
  std::int64_t post_begin_ns = 0;
  TaskDeadline deadline = kTaskDeadlineNow;
  std::array<std::uint32_t, kMaxSlots> starts_before{};
  // Written by the poster after its call.
  std::uint64_t post_end = 0;
  std::array<std::uint32_t, kMaxSlots> starts_after{};
  // Written by the callback.
  Atomic<int> runs{0};
  std::uint64_t start_tick = 0;
  std::uint64_t prev_end_tick = 0;  // end of the previous callback on the same worker (0: none)
  int exec_slot = -1;
  std::int64_t start_ns = 0;
  bool expired = false, signaled = false, cancelled = false, stopping = false;
  int wakes_seen = 0, signals_seen = 0, cancels_seen = 0;
  std::int64_t woken_at_ns = 0;
};

struct Node {
  NodeKind kind = NodeKind::kPlain;
  Behaviour behaviour;
  Task task;
  Atomic<bool> reserved{false};  // posted or running: only its holder posts it
  Atomic<bool> running{false};
  std::uint32_t current_post = kNoPost;  // set by the poster before the post
  Atomic<int> wakes{0}, signals{0}, cancels{0};
  Atomic<std::int64_t> pending_wake_ns{0};  // the first wakeup not yet seen by a run
};

inline std::int64_t NowNs() {
  return std::chrono::duration_cast<nanoseconds>(TaskClock::now().time_since_epoch()).count();
}

// Per thread: which run and worker slot it counts for, and the callback it is in.
struct ThreadState {
  std::uint64_t run = 0;
  int slot = -1;
  std::uint64_t prev_end = 0;
  std::uint32_t current_post = kNoPost;
};
inline thread_local ThreadState t_state;
inline Atomic<std::uint64_t> g_run_ids{0};

// PostOrder::kHome's skew for scenario `seed`: 0, 1 or 2 (1, 32 or 256 stamps), from the
// seed itself, so that the scenario's draws are the same with and without home queues.
inline std::uint32_t SkewChoice(std::uint64_t seed) {
  return static_cast<std::uint32_t>((seed * 0x9E3779B97F4A7C15ull) >> 32) % 3;
}

// PostOrder::kHome's skew ceiling for scenario `seed`: none (a constant skew) or eight times
// the skew (SkewOf then follows each worker's own queue), also from the seed itself.
inline std::uint64_t SkewCeilingFactor(std::uint64_t seed) {
  return ((seed * 0xC2B2AE3D27D4EB4Full) >> 40) % 2 == 0 ? 0 : 8;
}

class Scenario {
 public:
  // `home_queues`: PostOrder::kHome where the seed picks kBatched (the same draws).
  Scenario(std::uint64_t seed, bool home_queues)
      : seed_(seed), rng_(seed), home_(home_queues) {
    Generate();
  }

  const std::string& Config() const { return config_; }
  // Ticks of the log so far: the watchdog's progress measure.
  std::uint64_t Ticks() const { return ticks_.load(std::memory_order_relaxed); }
  bool Done() const { return done_.load(std::memory_order_acquire); }
  bool InStop() const { return in_stop_.load(std::memory_order_relaxed); }
  // The owner's part (Start/Stop and its own posts); then the model's verdict, in failure_.
  void RunOwner();
  std::string Failure() const { return failure_; }
  std::string Unstarted() const;
  // The watchdog's oversleep (time it was not run, as in a paused or starved process):
  // added to the wakeup bound.
  void AddStall(nanoseconds stall) { stall_ns_.fetch_add(stall.count(), std::memory_order_relaxed); }

 private:
  void Generate();
  Behaviour RandomBehaviour(int max_actions, bool outside);
  Action RandomAction(bool outside);
  void Perform(const Action& action);
  bool PostNode(int index, std::uint32_t variant, bool reserved_by_caller = false);
  void PostOneShot(int plan);
  void Wake(int index, ActionKind how);
  std::uint32_t BeginPost(PostKind kind, int node, int plan, TaskDeadline deadline);
  void EndPost(std::uint32_t id);
  void RunCallback(std::uint32_t id, Task* self);
  void SnapshotStarts(std::array<std::uint32_t, kMaxSlots>& out) const;
  void Fail(const std::string& what);
  void StopAndCheck(bool expect_empty, const char* when);
  void AfterNotify();
  void CheckLog();
  TaskDeadline DeadlineFor(PostKind kind, std::uint32_t variant) const;

  const std::uint64_t seed_;
  std::mt19937_64 rng_;
  std::string config_;
  TaskSchedulerOptions options_;
  int workers_ = 1;
  int cycles_ = 1;
  bool batched_ = true;  // kBatched, or kHome when home_
  const bool home_ = false;
  std::uint32_t jitter_per_mille_ = 0;
  std::uint32_t cancel_all_per_mille_ = 0;
  // Chance that Stop's own Notify calls post a pair of one-shots from the owner's thread.
  std::uint32_t stop_post_per_mille_ = 0;
  std::thread::id owner_thread_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<int> waiters_;  // node indexes of the waiters (the only wake targets)
  std::vector<Behaviour> plans_;  // one-shot callbacks
  struct Cycle {
    std::vector<Action> before_start;
    std::vector<std::vector<Action>> outside;  // one list per outside thread
    microseconds run_for{0};
    bool stop_reposters = false;
    // Outside threads joined before Stop; else they start their lists when Stop begins
    // (after a pause of up to 300 us each), racing with its drain and the workers' exit.
    bool join_before_stop = true;
    bool open_gate = true;
  };
  std::vector<Cycle> script_;

  std::uint64_t run_id_ = 0;
  std::unique_ptr<Scheduler> scheduler_;
  // Posts per run: the re-posters' and the others' (a chain of posts made by tasks ends
  // when the budget is spent).
  static constexpr std::uint32_t kRePostBudget = 2500;
  static constexpr std::uint32_t kOtherBudget = 700;
  static constexpr std::uint32_t kCapacity = kRePostBudget + kOtherBudget;
  std::unique_ptr<PostRecord[]> posts_{new PostRecord[kCapacity]};
  Atomic<std::uint32_t> next_post_{0};
  Atomic<std::uint32_t> reposts_{0};
  Atomic<std::uint32_t> other_posts_{0};
  // Long tasks (kLongTaskMicros or more of work) share this much work per run.
  static constexpr std::int64_t kLongTaskMicros = 500;
  Atomic<std::int64_t> long_work_left_us_{60000};
  Atomic<std::uint64_t> ticks_{1};
  std::array<Atomic<std::uint32_t>, kMaxSlots> slot_starts_{};
  Atomic<int> next_slot_{0};
  Atomic<bool> stop_reposters_{false};
  Atomic<bool> gate_{false};
  Atomic<bool> in_stop_{false};
  Atomic<bool> done_{false};
  Atomic<std::int64_t> stall_ns_{0};
  Mutex failure_mu_;
  std::string failure_;  // guarded by failure_mu_ while the run goes on
  int failures_ = 0;
};

inline void Scenario::Generate() {
  auto pick = [this](std::uint64_t n) { return static_cast<std::uint32_t>(rng_() % n); };
  workers_ = 1 + static_cast<int>(pick(3));
  cycles_ = 1 + static_cast<int>(pick(4));
  batched_ = pick(5) != 0;
  constexpr std::size_t kBatches[] = {1, 2, 4, 8, 16, 64};
  constexpr std::size_t kBlocks[] = {1, 4, 1024};
  constexpr std::uint32_t kJitter[] = {0, 20, 100};
  constexpr std::uint32_t kCancelAllJitter[] = {0, 300, 700};
  options_.name = "rand";
  options_.post_order =
      batched_ ? (home_ ? PostOrder::kHome : PostOrder::kBatched) : PostOrder::kStrict;
  options_.home_skew = std::array<std::uint64_t, 3>{1, 32, 256}[SkewChoice(seed_)];
  options_.home_skew_ceiling = options_.home_skew * SkewCeilingFactor(seed_);
  options_.execute_batch_size = kBatches[pick(6)];
  options_.batch_size = kBlocks[pick(3)];
  options_.ready_block_size = kBlocks[pick(3)];
  options_.spin_before_park = microseconds(std::array<int, 3>{0, 20, 200}[pick(3)]);
  const std::uint32_t jitter = pick(3);
  jitter_per_mille_ = kJitter[jitter];
  cancel_all_per_mille_ = kCancelAllJitter[jitter];
  stop_post_per_mille_ = std::array<std::uint32_t, 3>{0, 300, 700}[pick(3)];
  auto add_nodes = [&](NodeKind kind, int count) {
    for (int i = 0; i < count; ++i) {
      nodes_.push_back(std::make_unique<Node>());
      nodes_.back()->kind = kind;
      if (kind == NodeKind::kWaiter) waiters_.push_back(static_cast<int>(nodes_.size()) - 1);
    }
  };
  add_nodes(NodeKind::kPlain, 6 + static_cast<int>(pick(7)));
  add_nodes(NodeKind::kRePoster, static_cast<int>(pick(4)));
  add_nodes(NodeKind::kTimer, 2 + static_cast<int>(pick(5)));
  add_nodes(NodeKind::kWaiter, 2 + static_cast<int>(pick(5)));
  add_nodes(NodeKind::kBlocker, static_cast<int>(pick(3)));
  const int plan_count = 3 + static_cast<int>(pick(6));
  // Behaviours after the node list is complete (actions name nodes by index).
  for (auto& node : nodes_) {
    const bool quiet = node->kind == NodeKind::kRePoster || node->kind == NodeKind::kWaiter;
    node->behaviour = RandomBehaviour(quiet ? 0 : 2, false);
    if (node->kind == NodeKind::kRePoster) node->behaviour.spin = microseconds(1 + pick(20));
  }
  for (int i = 0; i < plan_count; ++i) plans_.push_back(RandomBehaviour(2, false));
  for (int c = 0; c < cycles_; ++c) {
    Cycle cycle;
    for (int i = 0, n = static_cast<int>(pick(4)); i < n; ++i) {
      cycle.before_start.push_back(RandomAction(false));
    }
    for (int t = 0, threads = 1 + static_cast<int>(pick(3)); t < threads; ++t) {
      std::vector<Action> list;
      for (int i = 0, n = 8 + static_cast<int>(pick(40)); i < n; ++i) {
        list.push_back(RandomAction(true));
      }
      cycle.outside.push_back(std::move(list));
    }
    cycle.run_for = microseconds(pick(2) == 0 ? pick(1000) : pick(8000));
    cycle.stop_reposters = pick(2) == 0;
    cycle.join_before_stop = pick(3) == 0;
    cycle.open_gate = pick(4) != 0;
    script_.push_back(std::move(cycle));
  }
  for (auto& node : nodes_) {
    Node* const raw = node.get();
    raw->task.SetCallback([this, raw](Task* self) { RunCallback(raw->current_post, self); });
  }
  config_ = std::to_string(workers_) + " worker(s), " +
            (batched_ ? (home_ ? "kHome (skew " + std::to_string(options_.home_skew) +
                                     (options_.home_skew_ceiling > options_.home_skew
                                          ? " up to " + std::to_string(options_.home_skew_ceiling)
                                          : std::string()) +
                                     ")"
                               : std::string("kBatched"))
                      : std::string("kStrict")) +
            ", execute_batch_size " + std::to_string(options_.execute_batch_size) +
            ", batch_size " + std::to_string(options_.batch_size) + ", ready_block_size " +
            std::to_string(options_.ready_block_size) + ", spin " +
            std::to_string(options_.spin_before_park.count() / 1000) + " us, jitter " +
            std::to_string(jitter_per_mille_) + "/1000 (CancelAll " +
            std::to_string(cancel_all_per_mille_) + "/1000), " + std::to_string(cycles_) +
            " cycle(s), " + std::to_string(nodes_.size()) + " tasks, " +
            std::to_string(plans_.size()) + " one-shot plans";
}

inline Behaviour Scenario::RandomBehaviour(int max_actions, bool outside) {
  Behaviour behaviour;
  const std::uint32_t work = static_cast<std::uint32_t>(rng_() % 100);
  if (work < 20) {
    // no work
  } else if (work < 88) {
    behaviour.spin = microseconds(2 + rng_() % 60);
  } else if (work < 96) {
    behaviour.spin = microseconds(500 + rng_() % 2500);  // a long task
  } else {
    behaviour.sleep = microseconds(500 + rng_() % 2000);  // a long task that sleeps
  }
  const int actions = max_actions == 0 ? 0 : static_cast<int>(rng_() % (max_actions + 1));
  for (int i = 0; i < actions; ++i) behaviour.actions.push_back(RandomAction(outside));
  return behaviour;
}

inline Action Scenario::RandomAction(bool outside) {
  Action action;
  action.variant = static_cast<std::uint32_t>(rng_());
  const std::uint32_t roll = static_cast<std::uint32_t>(rng_() % 100);
  if (outside && roll < 20) {
    action.kind = ActionKind::kPause;
  } else if (outside && roll < 30) {
    action.kind = ActionKind::kPostPair;
    action.target = static_cast<int>(rng_() % 8);
  } else if (roll < 55) {
    action.kind = ActionKind::kPostNode;
    action.target = static_cast<int>(rng_() % nodes_.size());
  } else if (roll < 75) {
    action.kind = ActionKind::kPostOneShot;
    // Plans are generated after the nodes; at most 8 of them.
    action.target = static_cast<int>(rng_() % 8);
  } else if (roll < 97) {
    const std::uint32_t how = static_cast<std::uint32_t>(rng_() % 3);
    action.kind = how == 0 ? ActionKind::kWakeup : how == 1 ? ActionKind::kSignal
                                                            : ActionKind::kCancel;
    action.target = static_cast<int>(rng_() % 64);  // a waiter, modulo their count
  } else {
    action.kind = ActionKind::kOpenGate;
  }
  return action;
}

inline void Scenario::SnapshotStarts(std::array<std::uint32_t, kMaxSlots>& out) const {
  for (int i = 0; i < kMaxSlots; ++i) out[i] = slot_starts_[i].load(std::memory_order_seq_cst);
}

inline void Scenario::Fail(const std::string& what) {
  MutexLock lock(failure_mu_);
  if (++failures_ > 6) return;
  failure_ += "  - " + what + "\n";
}

// Reserves a log record and fills the poster's half. kNoPost when the log is full.
inline std::uint32_t Scenario::BeginPost(PostKind kind, int node, int plan,
                                         TaskDeadline deadline) {
  const std::uint32_t id = next_post_.fetch_add(1, std::memory_order_relaxed);
  if (id >= kCapacity) return kNoPost;
  PostRecord& r = posts_[id];
  r.kind = kind;
  r.node = node;
  r.plan = plan;
  r.deadline = deadline;
  const bool inside = t_state.run == run_id_ && t_state.current_post != kNoPost;
  r.poster_post = inside ? t_state.current_post : kNoPost;
  r.poster_slot = inside ? t_state.slot : -1;
  // Counts first, then the tick: the counts are no later than the post (see CheckLog).
  SnapshotStarts(r.starts_before);
  r.post_begin = ticks_.fetch_add(1, std::memory_order_seq_cst);
  r.post_begin_ns = NowNs();
  return id;
}

inline void Scenario::EndPost(std::uint32_t id) {
  PostRecord& r = posts_[id];
  // The tick first, then the counts: the counts are no earlier than the post's end.
  r.post_end = ticks_.fetch_add(1, std::memory_order_seq_cst);
  SnapshotStarts(r.starts_after);
}

inline TaskDeadline Scenario::DeadlineFor(PostKind kind, std::uint32_t variant) const {
  const TaskDeadline now = TaskClock::now();
  switch (kind) {
    case PostKind::kPastDeadline:
      return now - microseconds(1 + variant % 1000);
    case PostKind::kFutureDeadline:
    case PostKind::kThroughStop:
      return now + microseconds(200 + (variant >> 8) % 8000);
    default:
      return kTaskDeadlineNow;
  }
}

// Posts node `index` if nobody holds it (or the caller, its own callback, holds it), with
// the call its kind and `variant` choose.
inline bool Scenario::PostNode(int index, std::uint32_t variant, bool reserved_by_caller) {
  Node& node = *nodes_[index];
  bool expected = false;
  // Acquire: the previous run released the node as its last step (RunCallback).
  if (!reserved_by_caller &&
      !node.reserved.compare_exchange_strong(expected, true, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
    return false;
  }
  const bool repost = node.kind == NodeKind::kRePoster;
  Atomic<std::uint32_t>& spent = repost ? reposts_ : other_posts_;
  if (spent.fetch_add(1, std::memory_order_relaxed) >= (repost ? kRePostBudget : kOtherBudget)) {
    node.reserved.store(false, std::memory_order_release);
    return false;
  }
  PostKind kind = PostKind::kRunNow;
  switch (node.kind) {
    case NodeKind::kPlain:
      kind = variant % 2 == 0 ? PostKind::kRunNow : PostKind::kPastDeadline;
      break;
    case NodeKind::kTimer:
      kind = variant % 4 == 0 ? PostKind::kThroughStop : PostKind::kFutureDeadline;
      break;
    case NodeKind::kWaiter:
      kind = variant % 5 < 3 ? PostKind::kWait : PostKind::kFutureDeadline;
      break;
    default:
      break;
  }
  TaskDeadline deadline = DeadlineFor(kind, variant);
  if (node.kind == NodeKind::kWaiter && kind == PostKind::kFutureDeadline) {
    deadline = TaskClock::now() + milliseconds(50 + (variant >> 8) % 450);  // woken first
  }
  const std::uint32_t id = BeginPost(kind, index, -1, deadline);
  if (id == kNoPost) {
    node.reserved.store(false, std::memory_order_release);
    return false;
  }
  node.current_post = id;  // published to the callback by the post
  Scheduler& s = *scheduler_;
  switch (kind) {
    case PostKind::kRunNow:
      s.Post(&node.task);
      break;
    case PostKind::kPastDeadline:
    case PostKind::kFutureDeadline:
      s.PostDeadline(&node.task, deadline);
      break;
    case PostKind::kThroughStop:
      s.PostDeadlineThroughStop(&node.task, deadline);
      break;
    case PostKind::kWait:
      s.PostWait(&node.task);
      break;
    case PostKind::kOneShot:
      break;
  }
  EndPost(id);
  return true;
}

inline void Scenario::PostOneShot(int plan) {
  plan %= static_cast<int>(plans_.size());
  if (other_posts_.fetch_add(1, std::memory_order_relaxed) >= kOtherBudget) return;
  const std::uint32_t id = BeginPost(PostKind::kOneShot, -1, plan, kTaskDeadlineNow);
  if (id == kNoPost) return;
  scheduler_->PostOneShot([this, id](Task* self) { RunCallback(id, self); });
  EndPost(id);
}

inline void Scenario::Wake(int index, ActionKind how) {
  Node& node = *nodes_[waiters_[index % waiters_.size()]];
  // Counted before the call (seq_cst: a callback that reads a count of 0 after its start
  // knows that no wake call had begun).
  node.wakes.fetch_add(1, std::memory_order_seq_cst);
  if (how == ActionKind::kSignal) node.signals.fetch_add(1, std::memory_order_seq_cst);
  if (how == ActionKind::kCancel) node.cancels.fetch_add(1, std::memory_order_seq_cst);
  std::int64_t none = 0;
  node.pending_wake_ns.compare_exchange_strong(none, NowNs(), std::memory_order_relaxed);
  ticks_.fetch_add(1, std::memory_order_relaxed);
  if (how == ActionKind::kWakeup) scheduler_->Wakeup(&node.task);
  if (how == ActionKind::kSignal) scheduler_->Signal(&node.task);
  if (how == ActionKind::kCancel) scheduler_->Cancel(&node.task);
}

inline void Scenario::Perform(const Action& action) {
  switch (action.kind) {
    case ActionKind::kPostNode:
      PostNode(action.target, action.variant);
      break;
    case ActionKind::kPostOneShot:
      PostOneShot(action.target);
      break;
    case ActionKind::kWakeup:
    case ActionKind::kSignal:
    case ActionKind::kCancel:
      Wake(action.target, action.kind);
      break;
    case ActionKind::kOpenGate:
      gate_.store(true, std::memory_order_relaxed);
      break;
    case ActionKind::kPostPair: {
      PostOneShot(action.target);
      const TaskDeadline until = TaskClock::now() + microseconds(20 + action.variant % 380);
      while (TaskClock::now() < until) {
      }
      PostOneShot(action.target + 1);
      break;
    }
    case ActionKind::kPause: {
      const std::uint32_t micros = action.variant % 1000;
      if (action.variant % 2 == 0) {
        std::this_thread::sleep_for(microseconds(micros));
      } else {
        const TaskDeadline until = TaskClock::now() + microseconds(micros / 4);
        while (TaskClock::now() < until) {
        }
      }
      break;
    }
  }
}

inline void Scenario::RunCallback(std::uint32_t id, Task* self) {
  ThreadState& t = t_state;
  if (t.run != run_id_) t = ThreadState{run_id_, next_slot_.fetch_add(1), 0, kNoPost};
  PostRecord& r = posts_[id];
  if (r.runs.fetch_add(1, std::memory_order_relaxed) != 0) {
    Fail("post " + std::to_string(id) + " ran twice");
  }
  Node* const node = r.node >= 0 ? nodes_[r.node].get() : nullptr;
  if (node != nullptr && node->running.exchange(true, std::memory_order_relaxed)) {
    Fail("task " + std::to_string(r.node) + " ran twice at the same time");
  }
  const bool counted = t.slot >= 0 && t.slot < kMaxSlots;
  if (counted) slot_starts_[t.slot].fetch_add(1, std::memory_order_seq_cst);
  r.start_tick = ticks_.fetch_add(1, std::memory_order_seq_cst);
  r.prev_end_tick = t.prev_end;
  r.exec_slot = counted ? t.slot : -1;
  r.start_ns = NowNs();
  r.stopping = scheduler_->IsStopping();
  r.expired = self->IsExpired();
  r.signaled = self->ReceiveSignal();
  r.cancelled = self->IsCancelled();
  if (node != nullptr) {
    r.wakes_seen = node->wakes.load(std::memory_order_seq_cst);
    r.signals_seen = node->signals.load(std::memory_order_seq_cst);
    r.cancels_seen = node->cancels.load(std::memory_order_seq_cst);
    r.woken_at_ns = node->pending_wake_ns.exchange(0, std::memory_order_relaxed);
  }
  t.current_post = id;
  const Behaviour& behaviour = node != nullptr ? node->behaviour : plans_[r.plan];
  const std::int64_t work_us = (behaviour.spin + behaviour.sleep).count();
  // Long tasks spend the run's allowance; then they return at once.
  const bool long_task = work_us >= kLongTaskMicros;
  if (!long_task || long_work_left_us_.fetch_sub(work_us, std::memory_order_relaxed) > 0) {
    if (behaviour.spin.count() > 0) {
      const TaskDeadline until = TaskClock::now() + behaviour.spin;
      while (TaskClock::now() < until) {
      }
    }
    if (behaviour.sleep.count() > 0) std::this_thread::sleep_for(behaviour.sleep);
  }
  for (const Action& action : behaviour.actions) Perform(action);
  if (node != nullptr && node->kind == NodeKind::kBlocker) {
    // Blocks until another task or thread opens the gate, or 5 ms.
    const TaskDeadline give_up = TaskClock::now() + milliseconds(5);
    while (!gate_.load(std::memory_order_relaxed) && TaskClock::now() < give_up) YieldThread();
  }
  t.prev_end = ticks_.fetch_add(1, std::memory_order_seq_cst);
  if (node == nullptr) {
    t.current_post = kNoPost;
    return;
  }
  node->running.store(false, std::memory_order_relaxed);
  const bool repost = node->kind == NodeKind::kRePoster &&
                      !stop_reposters_.load(std::memory_order_relaxed) &&
                      !scheduler_->IsStopping();
  if (repost) {
    // From its own callback, still holding the node: the last touch of the node (it
    // releases the node itself when the budget is spent).
    PostNode(r.node, 0, /*reserved_by_caller=*/true);
  } else {
    // Release, the last touch: the next poster may post the node from now on.
    node->reserved.store(false, std::memory_order_release);
  }
  t.current_post = kNoPost;
}

// Stop notifies the backend right after it sets its stopping flag and again after its exit
// flag: posts made there race with the drain's last look and the workers' exit. A pair of
// one-shots with a pause between them, so that the second one can arrive while the first
// runs.
inline void Scenario::AfterNotify() {
  thread_local bool inside = false;  // the hook's own posts notify too
  if (inside || stop_post_per_mille_ == 0 || !in_stop_.load(std::memory_order_relaxed) ||
      std::this_thread::get_id() != owner_thread_) {
    return;
  }
  const std::uint32_t roll = static_cast<std::uint32_t>(ticks_.load(std::memory_order_relaxed) * 2654435761u);
  if (roll % 1000 >= stop_post_per_mille_) return;
  inside = true;
  Perform(Action{ActionKind::kPostPair, static_cast<int>(roll % 8), roll >> 10});
  inside = false;
}

inline void Scenario::StopAndCheck(bool expect_empty, const char* when) {
  in_stop_.store(true, std::memory_order_relaxed);
  scheduler_->Stop();
  in_stop_.store(false, std::memory_order_relaxed);
  if (expect_empty && !scheduler_->IsEmpty()) {
    Fail(std::string("IsEmpty() is false after ") + when);
  }
}

inline void Scenario::RunOwner() {
  run_id_ = g_run_ids.fetch_add(1, std::memory_order_relaxed) + 1;
  Jitter::per_mille.store(jitter_per_mille_, std::memory_order_relaxed);
  Jitter::cancel_all_per_mille.store(cancel_all_per_mille_, std::memory_order_relaxed);
  Jitter::seed.store(seed_ * 7919 + 1, std::memory_order_relaxed);
  owner_thread_ = std::this_thread::get_id();
  HookedBackend::before_poll = [] { Jitter::Pause(Jitter::per_mille); };
  HookedBackend::before_cancel_all = [] { Jitter::Pause(Jitter::cancel_all_per_mille, 600); };
  HookedBackend::after_notify = [this] {
    Jitter::Pause(Jitter::per_mille);
    AfterNotify();
  };
  scheduler_ = std::make_unique<Scheduler>(options_);
  for (const Cycle& cycle : script_) {
    stop_reposters_.store(false, std::memory_order_relaxed);
    gate_.store(false, std::memory_order_relaxed);
    for (const Action& action : cycle.before_start) Perform(action);
    scheduler_->Start(workers_);
    std::vector<Thread> outside;
    for (const auto& list : cycle.outside) {
      const bool race_stop = !cycle.join_before_stop;
      outside.emplace_back([this, &list, race_stop] {
        if (race_stop) {
          const TaskDeadline give_up = TaskClock::now() + milliseconds(100);
          while (!in_stop_.load(std::memory_order_relaxed) && TaskClock::now() < give_up) {
            YieldThread();
          }
          const TaskDeadline until = TaskClock::now() + microseconds(list.front().variant % 300);
          while (TaskClock::now() < until) {
          }
        }
        // Racing: again and again while Stop lasts (each of its drain rounds is a new race).
        for (int pass = 0; pass < (race_stop ? 8 : 1); ++pass) {
          if (pass > 0 && !in_stop_.load(std::memory_order_relaxed)) break;
          for (const Action& action : list) Perform(action);
        }
      });
    }
    std::this_thread::sleep_for(cycle.run_for);
    if (cycle.stop_reposters) stop_reposters_.store(true, std::memory_order_relaxed);
    if (cycle.open_gate) gate_.store(true, std::memory_order_relaxed);
    if (cycle.join_before_stop) {
      for (Thread& thread : outside) thread.join();
    }
    StopAndCheck(cycle.join_before_stop, "a Stop that no outside post raced with");
    if (!cycle.join_before_stop) {
      for (Thread& thread : outside) thread.join();
    }
  }
  // Posts that raced with the last Stop wait for this one (it runs them on a temporary worker).
  StopAndCheck(true, "the last Stop");
  // The workers are gone.
  HookedBackend::before_poll = nullptr;
  HookedBackend::before_cancel_all = nullptr;
  HookedBackend::after_notify = nullptr;
  CheckLog();
  done_.store(true, std::memory_order_release);
}

inline void Scenario::CheckLog() {
  const std::uint32_t count = std::min(next_post_.load(), kCapacity);
  // A post whose deadline had passed is checked for order (as the overtaken one) and for
  // IsExpired() unless FAIRSCHED_RANDOM_CHECK_PAST_DEADLINE_ORDER=0 (docs/testing.md, "What
  // it found": the sched-role once judged "passed" by a clock read per pass).
  const bool check_past_deadline =
      EnvInteger("FAIRSCHED_RANDOM_CHECK_PAST_DEADLINE_ORDER", 1) != 0;
  std::vector<std::uint32_t> due;  // posts that join the FIFO as due (the order's subjects)
  for (std::uint32_t id = 0; id < count; ++id) {
    const PostRecord& r = posts_[id];
    const int runs = r.runs.load();
    if (runs != 1) {
      Fail("post " + std::to_string(id) + " ran " + std::to_string(runs) + " times");
      continue;
    }
    const Node* node = r.node >= 0 ? nodes_[r.node].get() : nullptr;
    const std::string what = "post " + std::to_string(id);
    if (r.kind == PostKind::kRunNow || r.kind == PostKind::kOneShot ||
        r.kind == PostKind::kPastDeadline) {
      due.push_back(id);
      if (!r.expired && (r.kind != PostKind::kPastDeadline || check_past_deadline)) {
        Fail(what + (r.kind == PostKind::kPastDeadline ? " (a deadline passed when posted)"
                                                       : " (run-now)") +
             " ran with IsExpired() false" + (r.stopping ? " during Stop" : ""));
      }
    }
    if ((r.kind == PostKind::kFutureDeadline || r.kind == PostKind::kThroughStop) &&
        node->kind == NodeKind::kTimer) {
      const std::int64_t deadline_ns =
          std::chrono::duration_cast<nanoseconds>(r.deadline.time_since_epoch()).count();
      const bool stop_may_wake = r.kind == PostKind::kFutureDeadline && r.stopping;
      if (r.start_ns < deadline_ns && !stop_may_wake) {
        Fail(what + " (a timer nobody wakes) started " +
             std::to_string((deadline_ns - r.start_ns) / 1000) + " us before its deadline" +
             (r.stopping ? " during Stop (PostDeadlineThroughStop)" : ""));
      }
    }
    if (node != nullptr && node->kind == NodeKind::kWaiter) {
      if (r.kind == PostKind::kWait && r.wakes_seen == 0 && !r.stopping) {
        Fail(what + " (PostWait) ran with no Wakeup/Signal/Cancel made and no Stop");
      }
      if (r.woken_at_ns > r.post_begin_ns &&
          r.start_ns - r.woken_at_ns > kWakeLatencyBound.count() + stall_ns_.load()) {
        Fail(what + " started " + std::to_string((r.start_ns - r.woken_at_ns) / 1000000) +
             " ms after a wakeup");
      }
    }
    if (r.signaled && (node == nullptr || r.signals_seen == 0)) {
      Fail(what + " saw ReceiveSignal() with no Signal made");
    }
    if (r.cancelled && (node == nullptr || r.cancels_seen == 0)) {
      Fail(what + " saw IsCancelled() with no Cancel made");
    }
  }
  // Order: Q overtook P if Q was posted after P's post returned and certainly started before
  // P (see the file comment).
  const std::int64_t batch = static_cast<std::int64_t>(options_.execute_batch_size);
  // PostOrder::kHome: a run-now post made by a task is stamped when it is made, and at most
  // execute_batch_size + home_skew + (kHomeStampBlock - 1) x (workers - 1) posts made after
  // it start before it on any one worker (with a skew ceiling: the ceiling in place of
  // home_skew, the worst case; these scenarios' queues are mostly too short to reach it).
  // A post that goes through the sched-role (from outside, or with a deadline) is stamped
  // when the role receives it: its order is not checked here.
  const std::int64_t skew =
      static_cast<std::int64_t>(std::max(options_.home_skew, options_.home_skew_ceiling));
  const std::int64_t home_bound =
      batch + skew +
      static_cast<std::int64_t>(kHomeStampBlock - 1) * (workers_ - 1);
  auto stamped_at_post = [](const PostRecord& r) {
    return r.poster_post != kNoPost &&
           (r.kind == PostKind::kRunNow || r.kind == PostKind::kOneShot);
  };
  for (const std::uint32_t p_id : due) {
    const PostRecord& p = posts_[p_id];
    if (p.kind == PostKind::kPastDeadline && !check_past_deadline) continue;
    if (home_ && !stamped_at_post(p)) continue;
    const bool held = batched_ && p.poster_post != kNoPost;
    for (const std::uint32_t q_id : due) {
      const PostRecord& q = posts_[q_id];
      if (q.post_begin <= p.post_end || q.start_tick >= p.start_tick) continue;
      const bool certain = (q.exec_slot == p.exec_slot && q.exec_slot >= 0) ||
                           q.start_tick < p.prev_end_tick;
      if (!certain) continue;
      std::string pair = "post " + std::to_string(q_id) + " started before post " +
                         std::to_string(p_id) + ", made before it";
      if (p.kind == PostKind::kPastDeadline) {
        const std::int64_t deadline_ns =
            std::chrono::duration_cast<nanoseconds>(p.deadline.time_since_epoch()).count();
        pair += " (" + std::to_string((p.post_begin_ns - deadline_ns) / 1000) +
                " us past its deadline when posted)";
      }
      if (p.poster_post != kNoPost && q.poster_post == p.poster_post &&
          (!home_ || stamped_at_post(q))) {
        Fail(pair + " by the same callback (two posts of one task start in post order)");
        continue;
      }
      if (home_) continue;  // the bound is counted below
      if (!held) {
        Fail(pair + " (which joined the FIFO when it was made)");
        continue;
      }
      for (int w = 0; w < kMaxSlots; ++w) {
        const std::int64_t since = static_cast<std::int64_t>(q.starts_before[w]) -
                                   static_cast<std::int64_t>(p.starts_after[w]);
        const std::int64_t bound =
            (w == p.poster_slot ? batch : 3 * batch) + kBoundSlack;
        if (since >= bound) {
          Fail(pair + " (held in its worker's local batch), " + std::to_string(since) +
               " starts on worker slot " + std::to_string(w) +
               (w == p.poster_slot ? " (its own)" : "") + " after it: the bound is " +
               std::to_string(bound - kBoundSlack) + " (+" + std::to_string(kBoundSlack) +
               " slack)");
          break;
        }
      }
    }
    if (!home_) continue;
    // PostOrder::kHome: the later-posted starts on each worker before P was taken, counted
    // where that is certain from the log, as for the order above: on P's own worker, or
    // before the callback that preceded P on its worker ended (a worker takes one task at a
    // time, after its previous callback). A start merely logged before P's is not enough:
    // P's worker may have taken P and then lost its core before P's callback logged its
    // start (seen under TSan on two cores: 395-477 starts of the other worker in between,
    // P never taken by it because it was already taken).
    const auto overtook_p = [&](const PostRecord& r) {
      return r.exec_slot >= 0 && r.runs.load() == 1 && r.post_begin > p.post_end &&
             r.start_tick < p.start_tick &&
             (r.exec_slot == p.exec_slot || r.start_tick < p.prev_end_tick);
    };
    std::array<std::int64_t, kMaxSlots> later{};
    for (std::uint32_t r_id = 0; r_id < count; ++r_id) {
      if (overtook_p(posts_[r_id])) ++later[posts_[r_id].exec_slot];
    }
    for (int w = 0; w < kMaxSlots; ++w) {
      if (later[w] > home_bound + kBoundSlack) {
        // What passed it, for the diagnosis: the later posts that started first on that
        // slot, by who made them (a task on a slot, or an outside thread).
        std::array<int, kMaxSlots + 1> by_poster{};
        for (std::uint32_t r_id = 0; r_id < count; ++r_id) {
          const PostRecord& r = posts_[r_id];
          if (r.exec_slot == w && overtook_p(r)) {
            ++by_poster[r.poster_slot < 0 ? kMaxSlots : r.poster_slot];
          }
        }
        std::string posters;
        for (int s = 0; s <= kMaxSlots; ++s) {
          if (by_poster[s] == 0) continue;
          posters += (posters.empty() ? "" : ", ") + std::to_string(by_poster[s]) +
                     (s == kMaxSlots ? " from outside" : " from slot " + std::to_string(s));
        }
        Fail("post " + std::to_string(p_id) + " (in a home queue; posted on slot " +
             std::to_string(p.poster_slot) + ", ran on slot " + std::to_string(p.exec_slot) +
             (p.stopping ? ", while stopping" : "") + ") started after " +
             std::to_string(later[w]) + " later-posted starts on worker slot " +
             std::to_string(w) + " (" + posters + "): the bound is " +
             std::to_string(home_bound) + " (+" + std::to_string(kBoundSlack) + " slack)");
        break;
      }
    }
  }
}

inline std::string Scenario::Unstarted() const {
  const std::uint32_t count = std::min(next_post_.load(), kCapacity);
  std::string out;
  int listed = 0;
  for (std::uint32_t id = 0; id < count && listed < 5; ++id) {
    const PostRecord& r = posts_[id];
    if (r.runs.load() != 0) continue;
    out += " " + std::to_string(id) + (r.poster_post == kNoPost ? " (from outside)" : " (from a task)");
    ++listed;
  }
  return out.empty() ? " none" : out;
}

// Failed runs whose threads are stuck (a Stop that never returns): kept alive, and
// reachable, until the process exits.
inline std::vector<std::unique_ptr<Scenario>>* Graveyard() {
  static auto* graveyard = new std::vector<std::unique_ptr<Scenario>>();
  return graveyard;
}

}  // namespace internal

// Runs scenario `seed` with a watchdog: no log progress for `hang_limit` (a Stop that does
// not return, or a run stuck elsewhere) fails the run, and its threads are left behind.
inline Outcome RunScenario(std::uint64_t seed, milliseconds hang_limit, bool home_queues) {
  auto scenario = std::make_unique<internal::Scenario>(seed, home_queues);
  Outcome outcome;
  outcome.seed = seed;
  outcome.config = scenario->Config();
  internal::Scenario* const raw = scenario.get();
  Thread owner([raw] { raw->RunOwner(); });
  std::uint64_t last_ticks = raw->Ticks();
  nanoseconds stalled{0};
  constexpr milliseconds kStep{20};
  while (!raw->Done()) {
    const TaskDeadline before = TaskClock::now();
    std::this_thread::sleep_for(kStep);
    const nanoseconds slept = TaskClock::now() - before;
    const std::uint64_t ticks = raw->Ticks();
    if (slept > 2 * kStep) raw->AddStall(slept - kStep);
    // A step that overslept means this thread was stopped too (a paused process): the
    // stall does not count.
    if (ticks != last_ticks || slept > 10 * kStep) {
      stalled = nanoseconds::zero();
    } else {
      stalled += slept;
    }
    last_ticks = ticks;
    if (stalled >= hang_limit) {
      outcome.hung = true;
      outcome.failure = std::string("  - ") + (raw->InStop() ? "Stop did not return" : "the run stopped") +
                        ": no progress for " + std::to_string(hang_limit.count()) +
                        " ms; posts that never started:" + raw->Unstarted() + "\n";
      owner.detach();
      internal::Graveyard()->push_back(std::move(scenario));
      return outcome;
    }
  }
  owner.join();
  outcome.failure = raw->Failure();
  return outcome;
}

struct Summary {
  std::int64_t runs = 0;
  std::int64_t failed_runs = 0;
  double seconds = 0;
  Outcome first_failure;
  bool hung = false;
};

// Runs scenarios as `limits` say (run_one(seed, hang_limit) -> Outcome runs one); prints
// every failure with its seed and how to rerun it.
template <typename RunOne>
Summary RunMany(const Limits& limits, const char* name, RunOne run_one) {
  Summary summary;
  const TaskDeadline begin = TaskClock::now();
  if (!limits.one_seed && limits.wall_seconds == 0) {
    std::printf("%s: seeds from %llu\n", name, static_cast<unsigned long long>(limits.first_seed));
  }
  for (std::int64_t i = 0; i < limits.runs; ++i) {
    const double elapsed = std::chrono::duration<double>(TaskClock::now() - begin).count();
    if (limits.wall_seconds > 0 && elapsed > limits.wall_seconds) break;
    const std::uint64_t seed =
        limits.one_seed ? limits.first_seed : limits.first_seed + static_cast<std::uint64_t>(i);
    const TaskDeadline run_begin = TaskClock::now();
    const Outcome outcome = run_one(seed, limits.hang_limit, limits.home_queues);
    ++summary.runs;
    const double run_seconds = std::chrono::duration<double>(TaskClock::now() - run_begin).count();
    if (run_seconds > 1) {
      std::printf("%s: seed %llu took %.1f s (%s)\n", name, static_cast<unsigned long long>(seed),
                  run_seconds, outcome.config.c_str());
    }
    if (outcome.failure.empty()) continue;
    ++summary.failed_runs;
    std::printf("%s: seed %llu (%s) failed:\n%s  rerun: FAIRSCHED_RANDOM_SEED=%llu\n", name,
                static_cast<unsigned long long>(seed), outcome.config.c_str(),
                outcome.failure.c_str(), static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    if (summary.failed_runs == 1) summary.first_failure = outcome;
    // Threads of a hung run are still around: start no more runs next to them.
    if (outcome.hung) summary.hung = true;
    if (outcome.hung || limits.stop_at_first_failure) break;
  }
  summary.seconds = std::chrono::duration<double>(TaskClock::now() - begin).count();
  std::printf("%s: %lld run(s) in %.1f s, %lld failed\n", name,
              static_cast<long long>(summary.runs), summary.seconds,
              static_cast<long long>(summary.failed_runs));
  std::fflush(stdout);
  return summary;
}

// The scheduler's scenarios (RunScenario above).
inline Summary RunMany(const Limits& limits, const char* name) {
  return RunMany(limits, name, RunScenario);
}

}  // namespace fairsched::testing::random_sequences

#endif  // FAIRSCHED_TESTS_SCHED_RANDOM_SEQUENCES_H_
