// The step rules of trace_checker.h. Each rule names the action of tla/TaskScheduler.tla
// it follows and quotes the spec's text in a `code:` comment (checked by
// //tools/model_refs:model_refs_test against the spec).
#include "tests/sched/trace_checker.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "sched/task.h"

namespace fairsched::testing {
namespace {

// Where a task's current post is.
enum class Where {
  kNone,      // not queued (never posted, or started)
  kFront,     // posted: in the front queue or its poster's local batch
  kReceived,  // popped from the front queue by the role holder, in its pass
  kWait,      // in the wait queue
  kPending,   // made ready, not yet flushed
  kReady,     // in the ready queue (or claimed by its lone worker)
};

const char* WhereName(Where where) {
  switch (where) {
    case Where::kNone: return "in no queue";
    case Where::kFront: return "posted, not received";
    case Where::kReceived: return "received by the role holder";
    case Where::kWait: return "waiting";
    case Where::kPending: return "pending (made ready, not flushed)";
    case Where::kReady: return "ready";
  }
  return "?";
}

struct TaskState {
  int name = 0;  // t<name> in messages
  bool queued = false;
  Where where = Where::kNone;
  int wake_copies = 0;  // pushed into the front queue by a waker that won it
  bool running = false;
  int runner = 0;
  int poster = 0;   // the thread that made the current post
  int claimer = 0;  // kClaimLocal: only this thread may start it
  std::int64_t deadline = 0;
  bool stop_woken = false;            // a Stop ran while this post was queued
  std::uint64_t last_wake = 0;        // 1 + seq of its last kWakeCall (0: none)
  std::uint64_t last_start = 0;       // 1 + seq of its last kStart (0: none)
  std::uint64_t start_before_post = 0;  // last_start when the current post was made
  // The order of the current post (trace_checker.h, "Order"):
  std::uint64_t post_seq = 0;       // seq of its kPost
  bool may_be_held = false;         // it may wait in its poster's local batch
  bool made = false;                // its poster has recorded a step since: pushed or held
  std::map<int, std::uint64_t> starts_when_made;  // each thread's starts then
  std::uint64_t poster_starts = 0;  // its poster's starts at the post
  std::uint64_t joined_by = 0;      // 1 + seq of a step before which it joined (0: unknown)
  std::uint64_t ready_index = 0;    // its place in the ready queue's push order (1, 2, ...)
};

class Checker {
 public:
  explicit Checker(const TaskSchedulerOptions& options)
      : batched_(options.post_order == PostOrder::kBatched),
        execute_batch_(std::max<std::uint64_t>(options.execute_batch_size, 1)) {}

  // An empty string if `event` is allowed (and then applied), else what is wrong.
  std::string Step(const SchedEvent& e) {
    if (parked_.count(e.thread) != 0 && e.step != SchedStep::kUnpark) {
      /* code: tla/TaskScheduler.tla ParkReceive: \/ readySignal /\ readySignal' = FALSE */
      return "the thread is parked: it sleeps until the ready event wakes it [ParkReceive]";
    }
    MarkMade(e);
    const std::string problem = Apply(e);
    floor_[e.thread] = max_started_;
    return problem;
  }

  std::string Describe(const SchedEvent& e) {
    std::string out = "step " + std::to_string(e.seq) + ": thread " + Num(e.thread) + " " +
                      StepName(e.step);
    if (e.task != 0) out += " " + Name(StateOf(e.task));
    return out;
  }

 private:
  std::string Apply(const SchedEvent& e) {
    const int a = e.thread;
    TaskState* t = e.task != 0 ? &StateOf(e.task) : nullptr;
    switch (e.step) {
      case SchedStep::kPost:
        /* code: tla/TaskScheduler.tla RunsMatchPosts: RunsMatchPosts == \A t \in Tasks : ran[t] <= posted[t] /\ running[t] <= 1 */
        if (t->queued) return Name(*t) + " is posted again before it started [RunsMatchPosts]";
        /* code: tla/TaskScheduler.tla PostPushOnly: /\ queued' = Set(queued, t, TRUE) */
        /* code: tla/TaskScheduler.tla PostPushOnly: /\ front' = Append(front, t) */
        // A task that posts itself from its callback has ended its run for the spec (the
        // callback returns, then the post: nothing may touch the task after its post).
        /* code: tla/TaskScheduler.tla Callback: THEN /\ PostPushFrom(w, Timer, "infinite") */
        if (t->running && t->runner == a) t->running = false;
        t->queued = true;
        t->where = Where::kFront;
        t->poster = a;
        t->claimer = 0;
        t->deadline = e.deadline;
        t->stop_woken = stopping_;
        t->start_before_post = t->last_start;
        /* code: sched/task_scheduler.h Order: when it is made, except a run-now post made by a task under PostOrder::kBatched */
        t->post_seq = e.seq;
        t->may_be_held = batched_ && e.deadline < 0 && started_[a] != 0;
        t->made = false;
        t->poster_starts = starts_[a];
        t->joined_by = 0;
        unmade_[a].emplace_back(e.task, e.seq);
        return "";
      case SchedStep::kWakeCall:
        t->last_wake = e.seq + 1;
        return "";
      case SchedStep::kWakePush:
        /* code: tla/TaskScheduler.tla TryWake: /\ kpc' = Set(kpc, k, IF state[Timer] \cap {"waiting", "woken"} = {"waiting"} */
        if (t->where != Where::kWait || t->wake_copies != 0) {
          return "a waker won " + Name(*t) + ", which is " + WhereName(t->where) +
                 (t->wake_copies != 0 ? " and already woken" : "") + " [TryWake]";
        }
        /* code: tla/TaskScheduler.tla WakerPushFront: /\ \E e \in BOOLEAN : FrontPush(Timer, e) /\ kWasEmpty' = Set(kWasEmpty, k, e) */
        t->wake_copies = 1;
        return "";
      case SchedStep::kRoleTake:
        /* code: tla/TaskScheduler.tla TryLock: ELSE IF (early[w] \/ hasLocal) /\ ~role THEN role' = TRUE /\ Goto(w, "sched_start") */
        if (holder_ != 0) return "the role is taken while thread " + Num(holder_) + " holds it [TryLock]";
        holder_ = a;
        return "";
      case SchedStep::kRoleRelease:
        if (holder_ != a) return "the role is released by a thread that does not hold it [Unlock]";
        /* code: tla/TaskScheduler.tla ScheduleDecide: THEN /\ ready' = ready \o pending /\ pending' = <<>> /\ Goto(w, "unlock") */
        if (!pending_.empty()) {
          return "the role is released with " + Name(StateOf(pending_.front())) +
                 " pending, not flushed [ScheduleDecide]";
        }
        /* code: tla/TaskScheduler.tla Unlock: /\ role' = FALSE */
        holder_ = 0;
        return "";
      case SchedStep::kReceive:
        if (holder_ != a) return RoleOnly("SchedulePop");
        if (t->wake_copies > 0) {
          /* code: tla/TaskScheduler.tla ReceiveFromFront: /\ inWait' = Set(inWait, t, FALSE) /\ MakeReady(w, t) /\ Goto(w, "sched_pop") */
          if (t->where != Where::kWait) {
            return "a woken copy of " + Name(*t) + " is received while it is " +
                   WhereName(t->where) + ", not waiting [ReceiveFromFront]";
          }
          --t->wake_copies;
          t->where = Where::kReceived;
          return "";
        }
        /* code: tla/TaskScheduler.tla SchedulePop: THEN /\ wt' = Set(wt, w, Head(front)) /\ front' = Tail(front) */
        if (t->where != Where::kFront) {
          return "received " + Name(*t) + ", which is " + WhereName(t->where) +
                 ", not in the front queue [SchedulePop]";
        }
        if (std::string problem = Join(*t); !problem.empty()) return problem;
        t->where = Where::kReceived;
        return "";
      case SchedStep::kWait:
        if (holder_ != a) return RoleOnly("TryPendingToWaiting");
        /* code: tla/TaskScheduler.tla TryPendingToWaiting: THEN state' = Set(state, t, {"waiting"}) /\ Goto(w, "wait_queue_push") */
        /* code: tla/TaskScheduler.tla WaitQueuePush: /\ inWait' = Set(inWait, wt[w], TRUE) */
        if (t->where != Where::kReceived) {
          return Name(*t) + " goes into the wait queue while it is " + WhereName(t->where) +
                 " [TryPendingToWaiting]";
        }
        t->where = Where::kWait;
        return "";
      case SchedStep::kReady:
        if (holder_ != a) return RoleOnly("MakeReady");
        if (t->where == Where::kWait && t->wake_copies != 0) {
          /* code: tla/TaskScheduler.tla TryWaitingToReady: IF state[Timer] = {"waiting"} */
          return Name(*t) + " is made ready from the wait queue although a waker won it (its "
                 "copy is in the front queue) [TryWaitingToReady]";
        }
        /* code: tla/TaskScheduler.tla TryPendingToWaiting: ELSE MakeReady(w, t) /\ Goto(w, "sched_pop") /\ UNCHANGED state */
        /* code: tla/TaskScheduler.tla TryWaitingToReady: THEN state' = Set(state, Timer, {"waiting", "woken"}) /\ MakeReady(w, Timer) */
        if (t->where != Where::kReceived && t->where != Where::kWait) {
          return Name(*t) + " is made ready while it is " + WhereName(t->where) + " [MakeReady]";
        }
        if (t->where == Where::kWait) {
          if (std::string problem = LeaveWait(*t); !problem.empty()) return problem;
        }
        return MakePending(*t, e.task);
      case SchedStep::kReadyLocal:
        if (holder_ != a) return RoleOnly("PubPush");
        /* code: tla/TaskScheduler.tla PubPush: THEN /\ pending' = pending \o b */
        if (t->where != Where::kFront || t->poster != a) {
          return Name(*t) + " is moved from the holder's local batch but is not its post "
                 "waiting there (it is " + WhereName(t->where) + ") [PubPush]";
        }
        if (std::string problem = Join(*t); !problem.empty()) return problem;
        return MakePending(*t, e.task);
      case SchedStep::kClaimLocal:  // ClaimLocalInPlace: no step of the spec
        if (t->where != Where::kFront || t->poster != a) {
          return Name(*t) + " is claimed in place but is not this worker's post waiting in "
                 "its local batch (it is " + WhereName(t->where) + ")";
        }
        if (std::string problem = Join(*t); !problem.empty()) return problem;
        t->where = Where::kReady;
        t->claimer = a;
        return "";
      case SchedStep::kFlush:
        if (holder_ != a) return RoleOnly("ScheduleDecide");
        for (std::uintptr_t key : pending_) StateOf(key).where = Where::kReady;
        pending_.clear();
        return "";
      case SchedStep::kStart:
        return Start(e, *t);
      case SchedStep::kFinish:
        /* code: tla/TaskScheduler.tla Callback: /\ running' = [running EXCEPT ![t] = @ - 1] */
        if (started_[a] != e.task) {
          return Name(*t) + "'s callback returns on a thread that did not start it [Callback]";
        }
        started_[a] = 0;
        if (t->running && t->runner == a) t->running = false;
        return "";
      case SchedStep::kPark:
        /* code: tla/TaskScheduler.tla AfterBatch: ELSE IF ran1 \/ ~role \/ batch[w] # <<>> THEN "top" ELSE "park_spin") */
        if (holder_ == a) return "the role holder parks [AfterBatch]";
        parked_.insert(a);
        return "";
      case SchedStep::kUnpark:
        if (parked_.erase(a) == 0) return "a thread that is not parked wakes [ParkDone]";
        return "";
      case SchedStep::kStopBegin:
        stopping_ = true;
        for (auto& [key, task] : tasks_) task.stop_woken = task.stop_woken || task.queued;
        return "";
      case SchedStep::kStopReturn:
        return StopReturn();
    }
    return "unknown step";
  }

  TaskState& StateOf(std::uintptr_t key) {
    auto [it, inserted] = tasks_.try_emplace(key);
    if (inserted) it->second.name = static_cast<int>(tasks_.size());
    return it->second;
  }
  static std::string Num(int n) { return std::to_string(n); }
  static std::string Name(const TaskState& t) { return "t" + std::to_string(t.name); }
  static std::string RoleOnly(const char* action) {
    return std::string("a step of the sched-role by a thread that does not hold it [") +
           action + "]";
  }

  std::string MakePending(TaskState& t, std::uintptr_t key) {
    /* code: tla/TaskScheduler.tla MakeReady: /\ pending' = Append(pending, t) */
    t.where = Where::kPending;
    pending_.push_back(key);
    // One producer at a time, and the flush appends in this order: the ready queue's order.
    t.ready_index = ++readied_;
    ready_names_.push_back(t.name);
    return "";
  }

  // Thread `e.thread` records a step: the posts it recorded before are pushed into the front
  // queue or held in its local batch by now (the hook comes before the push: sched_trace.cc).
  // One that is not held has joined the shared FIFO.
  void MarkMade(const SchedEvent& e) {
    for (const auto& [key, seq] : std::exchange(unmade_[e.thread], {})) {
      TaskState& t = StateOf(key);
      if (t.post_seq != seq || t.where != Where::kFront) continue;  // received already
      t.made = true;
      t.starts_when_made = starts_;
      if (!t.may_be_held) t.joined_by = e.seq + 1;
    }
  }

  // A start on thread `a` (step `seq`): a held post has joined within a bound of starts.
  void CountStart(int a, std::uint64_t seq) {
    const std::uint64_t starts = ++starts_[a];
    for (auto& [key, t] : tasks_) {
      if (t.where != Where::kFront || !t.may_be_held || t.joined_by != 0) continue;
      /* code: sched/task_scheduler.h Order: batch): it can be overtaken only by posts made before it joined, i.e. while fewer */
      /* code: sched/task_scheduler.h Order: than execute_batch_size task starts happened on its own worker and fewer than */
      /* code: sched/task_scheduler.h Order: 3 * execute_batch_size on each other worker, whatever the other workers run, and */
      /* code: tla/TaskScheduler.tla OvertakeBound: OvertakeBound == 3 * ExecBatch */
      const bool own = t.poster == a && starts - t.poster_starts >= execute_batch_;
      const bool other =
          t.poster != a && t.made && starts - t.starts_when_made[a] >= 3 * execute_batch_;
      if (own || other) t.joined_by = seq + 1;
    }
  }

  // `t` leaves the wait queue without a waker's copy. Outside a Stop (whose sweep takes the
  // wait queue apart in any order) and unless a Wakeup/Signal/Cancel was called for it (a
  // waker that won between the role's kWait and its CAS), that is an expiry, and the wait
  // queue gives out the earliest deadline first: no task that waits unwoken may have an
  // earlier one.
  std::string LeaveWait(const TaskState& t) const {
    if (stopping_ || Woken(t)) return "";
    for (const auto& [key, other] : tasks_) {
      if (&other == &t || other.where != Where::kWait || other.wake_copies != 0 ||
          Woken(other)) {
        continue;
      }
      /* code: sched/task_scheduler.h Order: queue become ready in deadline order; a task whose deadline has already */
      if (other.deadline < t.deadline) {
        return Name(t) + " leaves the wait queue before " + Name(other) +
               ", which waits with an earlier deadline and was not woken [Order]";
      }
    }
    return "";
  }

  // A Wakeup/Signal/Cancel was called for `t` since its last start.
  static bool Woken(const TaskState& t) { return t.last_wake > t.start_before_post; }

  // `t`'s post joins the shared FIFO (its receipt from the front queue, its move from a
  // local batch to the ready queue, or its claim in place): no post it must follow may be
  // left behind.
  std::string Join(const TaskState& t) {
    for (const auto& [key, other] : tasks_) {
      if (&other == &t || other.where != Where::kFront) continue;
      /* code: tla/TaskScheduler.tla PerPosterOrder: PerPosterOrder == EndlessRepost => (ran[X2] >= 1 => ran[X] >= 1) */
      /* code: sched/internal/held_posts.h PublishOwnLocalToFront: of this worker's tasks is in the front queue (see LocalBatch's per-owner order), so a */
      if (other.poster == t.poster && other.post_seq < t.post_seq) {
        return Name(t) + " joins the shared FIFO before " + Name(other) +
               ", which the same thread posted before it [PerPosterOrder]";
      }
      /* code: sched/task_scheduler.h Order: one task join in the order they were made. PostOrder::kStrict: every post joins when */
      if (other.joined_by != 0 && other.joined_by <= t.post_seq) {
        return Name(t) + " joins the shared FIFO before " + Name(other) +
               ", which had joined it (by step " + std::to_string(other.joined_by - 1) +
               ") before " + Name(t) + " was posted [Order]";
      }
    }
    return "";
  }

  std::string Start(const SchedEvent& e, TaskState& t) {
    /* code: tla/TaskScheduler.tla ExecuteBatchPop: THEN /\ wt' = Set(wt, w, Head(ready)) /\ ready' = Tail(ready) /\ Goto(w, "chain_wake") */
    if (t.where != Where::kReady || (t.claimer != 0 && t.claimer != e.thread)) {
      return Name(t) + " starts while it is " + WhereName(t.where) + ", not ready [ExecuteBatchPop]";
    }
    /* code: tla/TaskScheduler.tla StartCallback: /\ running' = [running EXCEPT ![t] = @ + 1] */
    if (t.running) return Name(t) + " starts while it runs [RunsMatchPosts]";
    // From the ready queue (not claimed in place): this thread popped it after its previous
    // step, so after the pops of every start recorded before that step.
    /* code: sched/task_scheduler.h Order: tasks with equal deadlines start in the order they joined the shared FIFO (the */
    /* code: sched/task_scheduler.h Order: several, each worker starts its tasks in FIFO order. */
    if (t.claimer == 0 && t.ready_index < floor_[e.thread]) {
      return Name(t) + " starts after t" + std::to_string(ready_names_[floor_[e.thread] - 1]) +
             ", which was made ready after it and started before this thread's previous step: "
             "the ready queue is FIFO [Order]";
    }
    /* code: sched/task_scheduler.h Timers: a task never runs before its deadline unless woken */
    const bool finite = t.deadline >= 0 && t.deadline != kNoDeadline.time_since_epoch().count();
    const bool woken = Woken(t) || t.stop_woken;
    if (finite && !woken && e.time < t.deadline) {
      return Name(t) + " starts " + std::to_string(t.deadline - e.time) +
             " ticks before its deadline, not woken [Timers]";
    }
    t.where = Where::kNone;
    t.queued = false;
    t.running = true;
    t.runner = e.thread;
    t.last_start = e.seq + 1;
    started_[e.thread] = e.task;
    if (t.claimer == 0) max_started_ = std::max(max_started_, t.ready_index);
    CountStart(e.thread, e.seq);
    return "";
  }

  std::string StopReturn() {
    /* code: tla/TaskScheduler.tla StopDrains: /\ Finished /\ AllWorkersOff /\ ~role /\ parked = 0 */
    /* code: tla/TaskScheduler.tla StopDrains: /\ front = <<>> /\ ready = <<>> /\ pending = <<>> */
    for (const auto& [key, t] : tasks_) {
      if (t.queued || t.running || t.wake_copies != 0) {
        return "Stop returns while " + Name(t) + " is " +
               (t.running ? std::string("running") : WhereName(t.where)) + " [StopDrains]";
      }
    }
    if (holder_ != 0) return "Stop returns while the role is held [StopDrains]";
    if (!parked_.empty()) return "Stop returns while a worker is parked [StopDrains]";
    stopping_ = false;
    return "";
  }

  std::map<std::uintptr_t, TaskState> tasks_;
  std::vector<std::uintptr_t> pending_;  // the role holder's pending tasks
  std::set<int> parked_;
  std::map<int, std::uintptr_t> started_;  // each thread's callback running now (0: none)
  int holder_ = 0;  // the thread holding the sched-role (0: free)
  bool stopping_ = false;
  // The order checks.
  const bool batched_;                 // PostOrder::kBatched: run-now posts may be held
  const std::uint64_t execute_batch_;  // execute_batch_size
  // Each thread's posts (task, seq of the kPost) since its last step.
  std::map<int, std::vector<std::pair<std::uintptr_t, std::uint64_t>>> unmade_;
  std::map<int, std::uint64_t> starts_;  // each thread's starts so far
  std::uint64_t readied_ = 0;            // ready-queue pushes so far
  std::vector<int> ready_names_;         // the task name of each, by ready index - 1
  std::uint64_t max_started_ = 0;        // the highest ready index started so far
  std::map<int, std::uint64_t> floor_;   // max_started_ at each thread's latest step
};

}  // namespace

TraceVerdict CheckTrace(const std::vector<SchedEvent>& trace,
                        const TaskSchedulerOptions& options) {
  Checker checker(options);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const std::string problem = checker.Step(trace[i]);
    if (!problem.empty()) return {false, i, checker.Describe(trace[i]) + ": " + problem};
  }
  return {};
}

}  // namespace fairsched::testing
