// Adversarial multi-worker tests of the local-batch promises (sched/task_scheduler.h,
// "Order"): a run-now post that a task makes while every worker executes is held in its
// worker's local batch only for a bounded number of task starts, whatever the other
// workers do (a long task, a busy re-poster); two posts of one task start in post order;
// Stop drains what an exiting worker holds; every post runs once while take-overs race the
// owner's own publication. Each scenario keeps the other workers busy
// on purpose: an idle worker would take a held post over and hide a missing bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/sched/hooked_backend.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::size_t kExecuteBatch = 16;
// PostOrder::kHome runs: a small skew, so that its bound is close to the batched one.
constexpr std::uint64_t kHomeSkew = 32;

// The options of a scenario under `order`.
TaskSchedulerOptions OptionsFor(PostOrder order, std::uint64_t home_skew_ceiling = 0) {
  return TaskSchedulerOptions{.execute_batch_size = kExecuteBatch,
                              .post_order = order,
                              .home_skew = kHomeSkew,
                              .home_skew_ceiling = home_skew_ceiling};
}

// The stated bound (sched/task_scheduler.h, "Order") on the later-posted starts one other
// worker may make while a held post waits: 3 * execute_batch_size for the local batches,
// execute_batch_size + home_skew + (kHomeStampBlock - 1) x (workers - 1) for the home
// queues.
std::int64_t OvertakeBound(PostOrder order, int workers = 2) {
  return order == PostOrder::kHome
             ? static_cast<std::int64_t>(kExecuteBatch + kHomeSkew +
                                         (kHomeStampBlock - 1) * (workers - 1))
             : 3 * static_cast<std::int64_t>(kExecuteBatch);
}

// Spins until `done()` or `timeout`; returns done().
template <typename Done>
bool SpinUntil(Done done, std::chrono::nanoseconds timeout) {
  const auto give_up = TaskClock::now() + timeout;
  while (!done()) {
    if (TaskClock::now() >= give_up) return done();
    std::this_thread::yield();
  }
  return true;
}

// A ready queue for the tests that need to see or steer the workers' takes (pops):
//  - The pop log: with g_logged_tasks set (before Start, unchanged until the workers are
//    gone), every pop of one of those tasks is appended to g_pop_log, under a mutex that
//    also covers the pop itself, so the log holds the exact start order, also when two
//    workers take adjacent tasks at once (their callbacks may then begin in either order,
//    so a counter inside the callbacks cannot tell).
//  - The gate: while g_gate_armed, the first g_gate_capacity pops that find nothing keep
//    looking until a task arrives (the worker stays inside an execution batch).
const std::unordered_set<const Task*>* g_logged_tasks = nullptr;
std::mutex g_pop_log_mu;
std::vector<const Task*> g_pop_log;  // guarded by g_pop_log_mu
std::atomic<bool> g_gate_armed{false};
std::atomic<int> g_gate_capacity{0};
std::atomic<int> g_gate_captured{0};

class InstrumentedReadyQueue {
 public:
  explicit InstrumentedReadyQueue(std::size_t block_size) : inner_(block_size) {}
  class Consumer {
   public:
    explicit Consumer(InstrumentedReadyQueue& queue) : inner_(queue.inner_) {}
    Task* Pop() {
      Task* task = LoggedPop();
      if (task != nullptr || !g_gate_armed.load()) return task;
      int captured = g_gate_captured.load();
      do {
        if (captured >= g_gate_capacity.load()) return nullptr;
      } while (!g_gate_captured.compare_exchange_weak(captured, captured + 1));
      SpinUntil([&] { return (task = LoggedPop()) != nullptr; }, seconds(10));
      return task;
    }

   private:
    Task* LoggedPop() {
      if (g_logged_tasks == nullptr) return inner_.Pop();
      std::lock_guard<std::mutex> lock(g_pop_log_mu);
      Task* task = inner_.Pop();
      if (task != nullptr && g_logged_tasks->contains(task)) g_pop_log.push_back(task);
      return task;
    }
    McspQueue<Task>::Consumer inner_;
  };
  void Push(Task* task) { inner_.Push(task); }
  void PushPending(Task* task) { inner_.PushPending(task); }
  void FlushPending() { inner_.FlushPending(); }
  std::size_t Count() const { return inner_.Count(); }

 private:
  McspQueue<Task> inner_;
};

// `count` tasks that re-post themselves until Stop() (a coroutine's Yield loop, in task
// form); each run is counted, then works for `work`.
template <typename Scheduler>
class RePosters {
 public:
  // `at_end`, if given, runs at the end of every run, before the re-post.
  RePosters(int count, std::chrono::nanoseconds work, void (*at_end)() = nullptr) {
    for (int i = 0; i < count; ++i) {
      tasks_.push_back(std::make_unique<Task>([this, work, at_end](Task* self) {
        runs_.fetch_add(1, std::memory_order_relaxed);
        const auto until = TaskClock::now() + work;
        while (TaskClock::now() < until) {
        }
        if (at_end != nullptr) at_end();
        if (!stop_.load(std::memory_order_relaxed)) Scheduler::Current()->Post(self);
      }));
    }
  }
  void PostTo(Scheduler& sched) {
    for (auto& task : tasks_) sched.Post(task.get());
  }
  void Stop() { stop_ = true; }
  std::int64_t Runs() const { return runs_.load(std::memory_order_seq_cst); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> runs_{0};
  std::vector<std::unique_ptr<Task>> tasks_;
};

// One worker runs `long_task`, every other worker a task that re-posts itself (a
// coroutine's Yield loop, in task form). The long task posts a one-shot while both kinds
// run and then waits for it without returning. The one-shot must start while the long
// task still runs, after at most the stated number of re-poster starts: each other worker
// takes over a batch that stayed unpublished while it started execute_batch_size tasks,
// and looks at the end of each of its execution batches (see "Order" in the header).
// `blockers` further workers run a task that spins until the long task is done (a
// blocking wait inside a task).
void HeldPostStartsWhileOtherWorkersRePost(int reposters, int blockers,
                                           PostOrder order = PostOrder::kBatched,
                                           std::uint64_t home_skew_ceiling = 0) {
  TaskScheduler sched(OptionsFor(order, home_skew_ceiling));
  const int workers = 1 + reposters + blockers;
  RePosters<TaskScheduler> loops(reposters, std::chrono::nanoseconds::zero());
  constexpr int kRounds = 5;
  std::atomic<int> rounds_held{0};
  std::atomic<std::int64_t> worst_lead{0};
  std::atomic<bool> long_task_done{false};
  Task long_task([&](Task*) {
    struct Done {
      std::atomic<bool>& flag;
      ~Done() { flag = true; }
    } done{long_task_done};
    for (int round = 0; round < kRounds; ++round) {
      // The re-posters keep every other worker inside an execution batch.
      const std::int64_t warm = loops.Runs() + 1000;
      SpinUntil([&] { return loops.Runs() >= warm; }, seconds(10));
      std::atomic<bool> ran{false};
      std::atomic<std::int64_t> runs_at_start{-1};
      TaskScheduler::Current()->PostOneShot([&] {
        runs_at_start = loops.Runs();
        ran = true;
      });
      // Read after the post returned: a preemption between a read before it and the post
      // would count re-poster runs made before the post existed.
      const std::int64_t runs_at_post = loops.Runs();
      // Held here, in a task that does not return: only another worker can publish it.
      if (!SpinUntil([&] { return ran.load(); }, seconds(2))) return;
      rounds_held.fetch_add(1);
      const std::int64_t lead = runs_at_start.load() - runs_at_post;
      if (lead > worst_lead.load()) worst_lead = lead;
    }
  });
  std::atomic<int> blockers_running{0};
  std::vector<std::unique_ptr<Task>> blocker_tasks;
  for (int i = 0; i < blockers; ++i) {
    blocker_tasks.push_back(std::make_unique<Task>([&](Task*) {
      blockers_running.fetch_add(1);
      SpinUntil([&] { return long_task_done.load(); }, seconds(60));
    }));
  }
  sched.Start(workers);
  for (auto& task : blocker_tasks) sched.Post(task.get());
  SpinUntil([&] { return blockers_running.load() == blockers; }, seconds(10));
  loops.PostTo(sched);
  SpinUntil([&] { return loops.Runs() > 100; }, seconds(10));
  sched.Post(&long_task);
  ASSERT_TRUE(SpinUntil([&] { return long_task_done.load(); }, seconds(60)));
  loops.Stop();
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  sched.Stop();
  EXPECT_EQ(rounds_held.load(), kRounds)
      << "a post waited 2 s for its worker's long task while " << reposters
      << " worker(s) re-posted (" << loops.Runs() << " re-poster starts in all)";
  // Each other worker: at most execute_batch_size starts to its next batch end, where it
  // first sees the batch, then execute_batch_size more plus the rest of the batch in which it
  // reaches them (the take-over bound in the header), so 3 * execute_batch_size. Home
  // queues: the bound in the header, plus the one re-poster run posted before the post.
  const std::int64_t bound =
      (OvertakeBound(order) + (order == PostOrder::kHome ? 1 : 0)) * reposters;
  std::printf("%d workers: worst %lld re-poster starts between the post and its start (bound %lld)\n",
              workers, static_cast<long long>(worst_lead.load()), static_cast<long long>(bound));
  EXPECT_LE(worst_lead.load(), bound);
}

TEST(HeldPostTest, TwoWorkersLongTaskAndRePoster) { HeldPostStartsWhileOtherWorkersRePost(1, 0); }
TEST(HeldPostTest, ThreeWorkersLongTaskRePosterAndBlocker) {
  HeldPostStartsWhileOtherWorkersRePost(1, 1);
}
TEST(HeldPostTest, ThreeWorkersLongTaskAndTwoRePosters) {
  HeldPostStartsWhileOtherWorkersRePost(2, 0);
}
TEST(HomeQueueTest, TwoWorkersLongTaskAndRePoster) {
  HeldPostStartsWhileOtherWorkersRePost(1, 0, PostOrder::kHome);
}
TEST(HomeQueueTest, ThreeWorkersLongTaskRePosterAndBlocker) {
  HeldPostStartsWhileOtherWorkersRePost(1, 1, PostOrder::kHome);
}
TEST(HomeQueueTest, ThreeWorkersLongTaskAndTwoRePosters) {
  HeldPostStartsWhileOtherWorkersRePost(2, 0, PostOrder::kHome);
}
// With a skew ceiling far above home_skew: a re-poster's queue holds one task, so its
// worker keeps the floor's skew, and the floor's bound must hold (on three workers beside
// a blocked one). With the ceiling always in effect both fail (3,018 and 2,027 against 112);
// the variant with two re-posters did not, so it is not here.
TEST(HomeQueueTest, TwoWorkersLongTaskAndRePosterKeepTheFloorUnderACeiling) {
  HeldPostStartsWhileOtherWorkersRePost(1, 0, PostOrder::kHome, 4096);
}
TEST(HomeQueueTest, ThreeWorkersLongTaskRePosterAndBlockerKeepTheFloorUnderACeiling) {
  HeldPostStartsWhileOtherWorkersRePost(1, 1, PostOrder::kHome, 4096);
}

// PostOrder::kHome with a skew ceiling: the skew follows the looking worker's own queue
// (its length x workers / kHomeBacklogDivisor), from home_skew up to home_skew_ceiling.
// W1 runs a long task L and nothing else; then a seeder on W2 posts `backlog` re-posters,
// which all stay in W2's queue (W1 is blocked in L) and keep W2 busy. In each round L posts
// kHomeStampBlock fillers and X into W1's otherwise empty queue and waits for X without
// returning. W2 runs its own older tasks first, then its later posts until its head is
// more than its skew above X's stamp, and then takes X. So X must be overtaken by at most
// execute_batch_size + `skew_bound` + kHomeStampBlock - 1 later posts in every round, and
// in most rounds by more than the floor's execute_batch_size + home_skew +
// kHomeStampBlock - 1 (only the floor: 0 to a few dozen in every round).
void SkewFollowsTheBacklog(std::uint64_t ceiling, int backlog, std::int64_t skew_bound) {
  constexpr int kRounds = 3;
  TaskScheduler sched(OptionsFor(PostOrder::kHome, ceiling));
  // Post order by a shared sequence, taken just before each re-post. X's place in it is
  // read twice, just before and just after its post: a re-post between the two may join
  // its queue on either side of X. So the ceiling is checked against the re-posts counted
  // from the later reading (never too many), and the growth against those counted from the
  // earlier one (never too few).
  constexpr std::uint64_t kNone = ~std::uint64_t{0};
  std::atomic<std::uint64_t> sequence{0};
  std::atomic<std::uint64_t> x_before{kNone}, x_after{kNone};
  std::atomic<bool> x_started{false};
  std::atomic<std::int64_t> overtakers_after{0}, overtakers_before{0};
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> runs{0};
  struct Looper {
    std::uint64_t posted_as = 0;
    Task task;
  };
  std::vector<std::unique_ptr<Looper>> loopers;
  for (int i = 0; i < backlog; ++i) {
    auto looper = std::make_unique<Looper>();
    Looper* const me = looper.get();
    looper->task.SetCallback([&, me](Task* self) {
      runs.fetch_add(1, std::memory_order_relaxed);
      if (!x_started.load(std::memory_order_seq_cst)) {
        if (me->posted_as > x_before.load(std::memory_order_seq_cst)) {
          overtakers_before.fetch_add(1, std::memory_order_relaxed);
        }
        if (me->posted_as > x_after.load(std::memory_order_seq_cst)) {
          overtakers_after.fetch_add(1, std::memory_order_relaxed);
        }
      }
      if (stop.load(std::memory_order_relaxed)) return;
      me->posted_as = sequence.fetch_add(1, std::memory_order_seq_cst);
      TaskScheduler::Current()->Post(self);
    });
    loopers.push_back(std::move(looper));
  }
  struct Round {
    std::int64_t after, before;
    std::uint64_t stale_takes, idle_takes, parks;  // during the round, by every worker
  };
  auto totals = [&sched] {
    std::array<std::uint64_t, 3> sum{};
    for (const WorkerStats& stats : sched.Stats()) {
      sum[0] += stats.stale_take_overs;
      sum[1] += stats.idle_take_overs;
      sum[2] += stats.parks;
    }
    return sum;
  };
  std::vector<Round> rounds;
  std::atomic<bool> l_started{false}, l_done{false};
  Task seeder([&](Task*) {
    for (auto& looper : loopers) {
      looper->posted_as = sequence.fetch_add(1, std::memory_order_seq_cst);
      TaskScheduler::Current()->Post(&looper->task);
    }
  });
  Task long_task([&](Task*) {
    l_started = true;
    for (int round = 0; round < kRounds; ++round) {
      // The first round also waits for the seeder's re-posters to run.
      const std::int64_t warm = runs.load() + 2 * backlog;
      SpinUntil([&] { return runs.load() >= warm; }, seconds(30));
      x_before = kNone;
      x_after = kNone;
      x_started = false;
      overtakers_after = 0;
      overtakers_before = 0;
      const std::array<std::uint64_t, 3> at_start = totals();
      // Fillers first, so that X's stamp comes from a block W1 reserves now: a stamp left
      // in a block reserved before L started would make X look old at once.
      for (std::uint64_t i = 0; i < kHomeStampBlock; ++i) {
        TaskScheduler::Current()->PostOneShot([] {});
      }
      x_before = sequence.fetch_add(1, std::memory_order_seq_cst);
      TaskScheduler::Current()->PostOneShot([&] { x_started = true; });
      x_after = sequence.fetch_add(1, std::memory_order_seq_cst);
      if (!SpinUntil([&] { return x_started.load(); }, seconds(10))) break;
      const std::array<std::uint64_t, 3> at_end = totals();
      rounds.push_back({overtakers_after.load(), overtakers_before.load(),
                        at_end[0] - at_start[0], at_end[1] - at_start[1],
                        at_end[2] - at_start[2]});
    }
    l_done = true;
  });
  sched.Start(2);
  sched.Post(&long_task);
  ASSERT_TRUE(SpinUntil([&] { return l_started.load(); }, seconds(30)));
  sched.Post(&seeder);  // runs on the other worker: L's is blocked
  ASSERT_TRUE(SpinUntil([&] { return l_done.load(); }, seconds(120)));
  stop = true;
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  sched.Stop();
  ASSERT_EQ(rounds.size(), static_cast<std::size_t>(kRounds)) << "X waited 10 s";
  const std::int64_t floor_bound = kExecuteBatch + kHomeSkew + kHomeStampBlock - 1;
  const std::int64_t bound = kExecuteBatch + skew_bound + kHomeStampBlock - 1;
  int grown = 0;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    std::printf("round %zu: %lld-%lld later posts started before X (floor bound %lld, "
                "bound %lld; %llu look takes, %llu idle takes, %llu parks)\n",
                i, static_cast<long long>(rounds[i].after),
                static_cast<long long>(rounds[i].before), static_cast<long long>(floor_bound),
                static_cast<long long>(bound),
                static_cast<unsigned long long>(rounds[i].stale_takes),
                static_cast<unsigned long long>(rounds[i].idle_takes),
                static_cast<unsigned long long>(rounds[i].parks));
    EXPECT_LE(rounds[i].after, bound) << "round " << i;
    if (rounds[i].before > floor_bound) ++grown;
  }
  // The growth in most rounds, not all: under TSan about one round in 450 saw X taken by a
  // look before W2's head was the ceiling above X's stamp (0 and 357 later posts started
  // before it; not explained yet). Taking it sooner never breaks the bound; the floor alone
  // keeps every round at a few dozen.
  EXPECT_GE(grown, kRounds - 1) << "the skew did not grow with the queue";
}

// A backlog that scales to four times the ceiling: the skew is the ceiling, never more (about
// four times as many later posts with the ceiling ignored).
TEST(HomeQueueTest, TheSkewFollowsTheBacklogUpToItsCeiling) {
  constexpr std::uint64_t kCeiling = 1024;
  SkewFollowsTheBacklog(kCeiling, static_cast<int>(4 * kCeiling * kHomeBacklogDivisor / 2),
                        static_cast<std::int64_t>(kCeiling));
}

// A backlog between the floor and the ceiling: the skew is the backlog x workers /
// kHomeBacklogDivisor (W2's queue holds at most the backlog), the bound the options header
// states for a queue of that length, not the ceiling's.
TEST(HomeQueueTest, TheSkewBetweenFloorAndCeilingIsAShareOfTheBacklog) {
  constexpr int kBacklog = 2048;
  SkewFollowsTheBacklog(16384, kBacklog,
                        static_cast<std::int64_t>(kBacklog * 2 / kHomeBacklogDivisor));
}

// PostOrder::kHome: the role holder receives front posts only while its own queue has room
// for them (up to batch_size tasks), and at least execute_batch_size per pass (FrontPopLimit
// in sched/internal/sched_role.h). With a queue far longer than batch_size, held by tasks
// that re-post for ever, outside posts must still be received and start, in post order.
// (With no minimum, the lone worker's long queue would keep every outside post in the front
// queue for as long as the re-posters run: seen failing that way.)
TEST(HomeQueueTest, OutsidePostsKeepFlowingBesideALongQueue) {
  TaskSchedulerOptions options = OptionsFor(PostOrder::kHome);
  options.batch_size = 64;
  TaskScheduler sched(options);
  constexpr int kRePosters = 1000;  // the worker's queue: about 1000 > batch_size
  constexpr int kOutside = 200;
  RePosters<TaskScheduler> loops(kRePosters, std::chrono::nanoseconds::zero());
  Task seeder([&](Task*) { loops.PostTo(*TaskScheduler::Current()); });
  std::mutex mu;
  std::vector<int> started;  // guarded by mu
  sched.Start(1);
  sched.Post(&seeder);
  ASSERT_TRUE(SpinUntil([&] { return loops.Runs() > 10 * kRePosters; }, seconds(30)));
  for (int i = 0; i < kOutside; ++i) {
    sched.PostOneShot([&, i] {
      MutexLock lock(mu);
      started.push_back(i);
    });
  }
  SpinUntil(
      [&] {
        MutexLock lock(mu);
        return started.size() == static_cast<std::size_t>(kOutside);
      },
      seconds(10));
  const std::int64_t runs = loops.Runs();
  std::size_t started_in_time = 0;
  {
    MutexLock lock(mu);
    started_in_time = started.size();
  }
  const std::uint64_t role_takes = sched.Stats()[0].sched_role_taken;
  loops.Stop();
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  sched.Stop();
  EXPECT_EQ(started_in_time, static_cast<std::size_t>(kOutside))
      << "outside posts started in 10 s beside a long queue (" << runs << " re-poster runs, "
      << role_takes << " role takes)";
  for (std::size_t i = 0; i < started.size(); ++i) {
    EXPECT_EQ(started[i], static_cast<int>(i)) << "outside posts out of post order";
  }
}

// PostOrder::kHome: a post into an empty queue must be visible to the other workers' looks
// even when its worker then blocks. W2 runs a re-poster R; after a warm-up R posts L into
// its own queue and keeps its worker until L has started, so idle W1 takes L (a lone task
// whose owner is stuck, at its timed re-check). W1's queue was empty when it looked last
// (its published head says "nothing"); L posts X into it and waits for X without
// returning. Only W2's looks can move X, and W2 re-posts for ever: without the publication
// on a push into an empty queue, X stays hidden (tla/spin/home_queues.pml,
// home_queues_bug_no_publish_on_push).
TEST(HomeQueueTest, APostIntoAnEmptyQueueIsSeenWhileItsWorkerBlocks) {
  TaskScheduler sched(OptionsFor(PostOrder::kHome));
  std::atomic<bool> l_started{false}, x_ran{false}, x_ran_in_time{false}, l_done{false};
  std::atomic<bool> stop{false}, l_taken_in_time{false};
  std::atomic<int> r_runs{0};
  Task l([&](Task*) {
    l_started = true;
    TaskScheduler::Current()->PostOneShot([&] { x_ran = true; });
    x_ran_in_time = SpinUntil([&] { return x_ran.load(); }, seconds(2));
    l_done = true;
  });
  Task r([&](Task* self) {
    if (r_runs.fetch_add(1) == 1000) {
      TaskScheduler::Current()->Post(&l);
      l_taken_in_time = SpinUntil([&] { return l_started.load(); }, seconds(2));
    }
    if (!stop.load()) TaskScheduler::Current()->Post(self);
  });
  sched.Start(2);
  sched.Post(&r);
  ASSERT_TRUE(SpinUntil([&] { return l_done.load(); }, seconds(30)));
  stop = true;
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  sched.Stop();
  EXPECT_TRUE(l_taken_in_time.load()) << "the idle worker did not take L in 2 s";
  EXPECT_TRUE(x_ran_in_time.load()) << "X waited 2 s in its blocked worker's queue while the "
                                       "other worker re-posted ("
                                    << r_runs.load() << " re-poster runs)";
}

// PostOrder::kHome: a worker that sleeps with no timeout (it parked while no worker
// executed) must hear of a post a task makes into its own worker's queue, since that worker
// may then block in the task. Idle workers (parked, or asleep in the role); an
// outside post A reaches the role holder alone (a lone task wakes nobody), A posts X into
// its own queue and waits for X without returning. Nothing else wakes the parked worker: X
// starts only if the post woke it (it then sleeps timed and takes X, a lone task whose
// owner is stuck, at its second look). Five rounds, each from an idle scheduler; on three
// workers the wake reaches one of the two sleepers. (Without the wake after the post, X
// waited the full 2 s in 4 of the 5 rounds on two workers, in all 5 on three.)
void APostFromATaskWakesAWorkerThatSleepsWithNoTimeout(int workers) {
  TaskScheduler sched(OptionsFor(PostOrder::kHome));
  sched.Start(workers);
  constexpr int kRounds = 5;
  int in_time = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::this_thread::sleep_for(milliseconds(20));  // both workers asleep, untimed
    std::atomic<bool> x_ran{false}, a_done{false};
    bool x_ran_in_time = false;
    sched.PostOneShot([&] {
      TaskScheduler::Current()->PostOneShot([&] { x_ran = true; });
      x_ran_in_time = SpinUntil([&] { return x_ran.load(); }, seconds(2));
      a_done = true;
    });
    ASSERT_TRUE(SpinUntil([&] { return a_done.load() && x_ran.load(); }, seconds(30)));
    ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
    if (x_ran_in_time) ++in_time;
  }
  sched.Stop();
  EXPECT_EQ(in_time, kRounds) << "X waited 2 s behind its blocked poster while the other "
                                 "workers slept ("
                              << workers << " workers)";
}

TEST(HomeQueueTest, APostFromATaskWakesAWorkerThatSleepsWithNoTimeoutOnTwoWorkers) {
  APostFromATaskWakesAWorkerThatSleepsWithNoTimeout(2);
}
TEST(HomeQueueTest, APostFromATaskWakesAWorkerThatSleepsWithNoTimeoutOnThreeWorkers) {
  APostFromATaskWakesAWorkerThatSleepsWithNoTimeout(3);
}

// The same with a flood of outside posts keeping the other worker(s) busy instead of a
// re-poster (each flood task works for a few microseconds, so the poster stays ahead and
// the other worker never idles): the held post starts before the long task ends, and the
// flood posts made after it that start before it stay within the bound, measured as each
// order states it. kBatched: no such post was made more than the bound's task starts
// after the held post (a distance: a taken-over batch joins the shared queue behind every
// post received until then, and the flood may have made many of those at once). kHome: at
// most the bound's number of them start before it (a count: the other worker may first
// run up to kLead flood posts made before the held post and stamped older, while the flood
// goes on, so an overtaker can be made many starts after the held post and still be one
// of few; the Windows run saw a distance of 147 against the bound of 111). On three
// workers the flood keeps both others busy, each within the bound, so the held post may be
// overtaken twice the bound in all; under kHome the flood's posts reach whichever worker
// holds the role, so a lone one received into the long task's queue may be taken by a busy
// worker whose own queue ran empty, racing the third worker's takes.
void HeldPostStartsBesideAnOutsideFlood(PostOrder order, int workers = 2) {
  TaskScheduler sched(OptionsFor(order));
  constexpr std::int64_t kLead = 1024;  // at most this many flood posts waiting
  constexpr int kRounds = 8;
  std::atomic<std::int64_t> starts{0};  // every start of a flood post
  std::atomic<bool> flood_on{true};
  // The round's held post: its round in the high bits, the flood starts when it had been
  // made (read after its Post returned) in the low ones; -1 before the first. One word, so
  // that a flood task reads both at once. And the last round whose held post started.
  constexpr int kRoundShift = 40;
  std::atomic<std::int64_t> round_post{-1};
  std::atomic<int> started_round{-1};
  std::atomic<int> rounds_held{0};
  std::atomic<std::int64_t> worst_lead{0};
  // The flood's posts each remember the start count when they were made; those made after
  // the round's held post that start before it are counted, by round, and the latest one
  // gives the overtaking distance.
  std::array<std::atomic<std::int64_t>, kRounds> overtakers{};
  std::atomic<std::int64_t> worst_distance{0};
  std::atomic<bool> long_task_done{false};
  Task long_task([&](Task*) {
    for (int round = 0; round < kRounds; ++round) {
      const std::int64_t warm = starts.load() + 2000;
      SpinUntil([&] { return starts.load() >= warm; }, seconds(10));
      std::atomic<bool> ran{false};
      std::atomic<std::int64_t> starts_at_start{-1};
      TaskScheduler::Current()->PostOneShot([&, round] {
        started_round = round;
        starts_at_start = starts.load(std::memory_order_seq_cst);
        ran = true;
      });
      const std::int64_t post = starts.load(std::memory_order_seq_cst);
      round_post = (static_cast<std::int64_t>(round) << kRoundShift) | post;
      if (!SpinUntil([&] { return ran.load(); }, seconds(2))) break;
      rounds_held.fetch_add(1);
      worst_lead = std::max(worst_lead.load(), starts_at_start.load() - post);
    }
    long_task_done = true;
  });
  sched.Start(workers);
  std::thread flood([&] {
    std::int64_t made = 0;
    while (flood_on.load()) {
      if (made - starts.load(std::memory_order_relaxed) > kLead) {
        std::this_thread::yield();
        continue;
      }
      const std::int64_t made_at = starts.load(std::memory_order_seq_cst);
      ++made;
      sched.PostOneShot([&, made_at] {
        // Read the round first, then whether its held post started: if not, this task
        // started before it.
        const std::int64_t packed = round_post.load();
        const std::int64_t post = packed & ((std::int64_t{1} << kRoundShift) - 1);
        const auto round = static_cast<int>(packed >> kRoundShift);
        if (packed >= 0 && started_round.load() < round && made_at > post) {
          overtakers[round].fetch_add(1);
          std::int64_t worst = worst_distance.load();
          while (made_at - post > worst &&
                 !worst_distance.compare_exchange_weak(worst, made_at - post)) {
          }
        }
        const auto until = TaskClock::now() + std::chrono::microseconds(2);
        while (TaskClock::now() < until) {
        }
        starts.fetch_add(1, std::memory_order_seq_cst);
      });
    }
  });
  SpinUntil([&] { return starts.load() > 100; }, seconds(10));
  sched.Post(&long_task);
  const bool done = SpinUntil([&] { return long_task_done.load(); }, seconds(60));
  flood_on = false;
  flood.join();
  ASSERT_TRUE(done);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  sched.Stop();
  std::int64_t worst_overtakers = 0;
  for (const auto& count : overtakers) worst_overtakers = std::max(worst_overtakers, count.load());
  const std::int64_t bound = OvertakeBound(order, workers) * (workers - 1);
  std::printf("flood, %d workers: worst %lld flood starts between a held post and its start; at "
              "most %lld flood posts made after it started before it, the latest made %lld "
              "starts after it (bound %lld)\n",
              workers, static_cast<long long>(worst_lead.load()),
              static_cast<long long>(worst_overtakers),
              static_cast<long long>(worst_distance.load()), static_cast<long long>(bound));
  EXPECT_EQ(rounds_held.load(), kRounds) << "a post waited 2 s for its worker's long task while "
                                            "the flood ran on the other worker(s)";
  EXPECT_LE(order == PostOrder::kHome ? worst_overtakers : worst_distance.load(), bound);
}

TEST(HeldPostTest, TwoWorkersLongTaskAndOutsideFlood) {
  HeldPostStartsBesideAnOutsideFlood(PostOrder::kBatched);
}
TEST(HomeQueueTest, TwoWorkersLongTaskAndOutsideFlood) {
  HeldPostStartsBesideAnOutsideFlood(PostOrder::kHome);
}
TEST(HeldPostTest, ThreeWorkersLongTaskAndOutsideFlood) {
  HeldPostStartsBesideAnOutsideFlood(PostOrder::kBatched, 3);
}
TEST(HomeQueueTest, ThreeWorkersLongTaskAndOutsideFlood) {
  HeldPostStartsBesideAnOutsideFlood(PostOrder::kHome, 3);
}

// Home queues: an idle worker's takes count against the bound too. Four workers: A runs a
// long task that posts X (a lone run-now post in A's queue) and waits for it; B runs a long
// task that then posts kLater tasks into its own queue and waits too; of the other two, the
// first to take the sched-role is held inside the backend, in its poll or its sleep (as a
// role holder that the OS deschedules: the failure was first seen under Wine), and the last
// one is idle, so it runs B's posts one by one (an idle take from a queue of two or more)
// and cannot take the role, where its park-time look would find X's owner stuck. Before the
// fix an idle worker never looked at the other queues' heads while it had such takes to
// make, and started every one of B's posts but the last before X; it must take X once the
// tasks it took are more than the skew newer, as a worker with a queue of its own does.
std::atomic<bool> g_hold_role{false};
std::atomic<bool> g_role_held{false};
std::atomic<bool> g_release_role{false};

TEST(HomeQueueTest, AnIdleWorkersTakesFromABusyQueueKeepTheBound) {
  using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, testing::HookedBackend>;
  constexpr int kWorkers = 4;
  constexpr int kLater = 1000;
  constexpr int kRounds = 3;
  struct HoldRoleHooks {  // installed for the test's schedulers, cleared however it ends
    HoldRoleHooks() {
      const auto hold = [] {
        if (!g_hold_role.exchange(false)) return;
        g_role_held = true;
        SpinUntil([] { return g_release_role.load(); }, seconds(3));
      };
      testing::HookedBackend::before_poll = hold;
      testing::HookedBackend::before_wait = hold;
    }
    ~HoldRoleHooks() {
      testing::HookedBackend::before_poll = nullptr;
      testing::HookedBackend::before_wait = nullptr;
    }
  } hooks;
  std::int64_t worst = 0;
  for (int round = 0; round < kRounds; ++round) {
    g_hold_role = false;
    g_role_held = false;
    g_release_role = false;
    Scheduler sched(OptionsFor(PostOrder::kHome));
    std::atomic<bool> a_started{false}, b_ready{false}, x_posted{false}, x_ran{false};
    std::atomic<bool> x_in_time{false};
    std::atomic<std::int64_t> overtakers{0}, later_ran{0};
    sched.Start(kWorkers);
    sched.PostOneShot([&] {  // A
      a_started = true;
      SpinUntil([&] { return b_ready.load(); }, seconds(10));
      Scheduler::Current()->PostOneShot([&] { x_ran = true; });
      x_posted = true;
      x_in_time = SpinUntil([&] { return x_ran.load(); }, seconds(2));
      g_release_role = true;
    });
    sched.PostOneShot([&] {  // B
      // Two tasks wake a parked worker, which takes the role after running one and is
      // held there; then A posts X, and B the later posts at once.
      g_hold_role = true;
      Scheduler::Current()->PostOneShot([] {});
      Scheduler::Current()->PostOneShot([] {});
      SpinUntil([&] { return g_role_held.load(); }, seconds(2));
      b_ready = true;
      SpinUntil([&] { return x_posted.load(); }, seconds(10));
      for (int i = 0; i < kLater; ++i) {
        Scheduler::Current()->PostOneShot([&] {
          if (!x_ran.load()) overtakers.fetch_add(1);
          later_ran.fetch_add(1);
        });
      }
      SpinUntil([&] { return x_ran.load(); }, seconds(2));
    });
    ASSERT_TRUE(SpinUntil([&] { return later_ran.load() == kLater && x_ran.load(); }, seconds(30)));
    ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
    sched.Stop();
    ASSERT_TRUE(a_started.load() && b_ready.load());
    EXPECT_TRUE(g_role_held.load()) << "no role holder was held (round " << round << ")";
    EXPECT_TRUE(x_in_time.load()) << "X waited 2 s behind its blocked poster (round " << round << ")";
    worst = std::max(worst, overtakers.load());
  }
  const std::int64_t bound = OvertakeBound(PostOrder::kHome, kWorkers);
  std::printf("%d workers, the role held, one idle: at most %lld of %d later posts started "
              "before X (bound %lld)\n",
              kWorkers, static_cast<long long>(worst), kLater, static_cast<long long>(bound));
  EXPECT_LE(worst, bound);
}

// Per-poster order: a task posts X1 while every worker executes (held in its local batch),
// lets another worker go idle, and posts X2 (which then goes to the shared queue at once).
// X1 must start before X2: the ready queue logs the order in which the workers take them.
// With `reposters`, further workers run a self-re-posting task: busy at every batch end,
// they take X1 over (after 3 * execute_batch_size starts) at about the time the poster
// publishes it itself, so the take-over races with the owner's publication. The gap
// between the two posts varies by round to meet that race at different points.
using PopLoggingScheduler =
    BasicTaskScheduler<InstrumentedReadyQueue, BinaryHeap<Task>, NoIoBackend>;

void TwoPostsOfOneTaskStartInPostOrder(int reposters) {
  // More rounds next to the re-poster: fewer of them meet the race (the old rule failed
  // 10-22 of 160 there, and 3-5 of 40 without it).
  const int rounds = reposters > 0 ? 160 : 40;
  constexpr int kGapsMicros[] = {300, 0, 5, 20, 60};
  std::atomic<int> x_runs{0};
  std::vector<std::unique_ptr<Task>> x1s, x2s;
  std::unordered_set<const Task*> logged;
  for (int round = 0; round < rounds; ++round) {
    x1s.push_back(std::make_unique<Task>([&](Task*) { x_runs.fetch_add(1); }));
    x2s.push_back(std::make_unique<Task>([&](Task*) { x_runs.fetch_add(1); }));
    logged.insert(x1s.back().get());
    logged.insert(x2s.back().get());
  }
  g_pop_log.clear();
  g_logged_tasks = &logged;
  TaskSchedulerOptions options;
  options.spin_before_park = milliseconds(1);  // the idle worker spins while X2 is posted
  options.execute_batch_size = kExecuteBatch;
  PopLoggingScheduler sched(options);
  sched.Start(2 + reposters);
  // A few microseconds of work per run: the re-posters' workers are inside an execution
  // batch nearly all the time, so X1 is held (a post made while a worker is between
  // batches is not).
  RePosters<PopLoggingScheduler> loops(reposters, std::chrono::microseconds(2));
  loops.PostTo(sched);
  if (reposters > 0) SpinUntil([&] { return loops.Runs() > 100 * reposters; }, seconds(10));
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> gate_open{false}, gate_running{false};
    std::atomic<int> callbacks_done{0};
    // One-shots (the re-posters keep the scheduler from ever being empty, so the round
    // waits for the callbacks' last statements instead of WaitEmpty).
    sched.PostOneShot([&] {
      gate_running = true;
      SpinUntil([&] { return gate_open.load(); }, seconds(10));
      callbacks_done.fetch_add(1);
    });
    const auto gap = std::chrono::microseconds(kGapsMicros[round % 5]);
    const int runs_before = x_runs.load();
    sched.PostOneShot([&, round] {
      SpinUntil([&] { return gate_running.load(); }, seconds(10));
      PopLoggingScheduler::Current()->Post(x1s[round].get());
      gate_open = true;  // the gate's worker goes idle: a post now goes to the shared queue
      const auto until = TaskClock::now() + gap;
      while (TaskClock::now() < until) {
      }
      PopLoggingScheduler::Current()->Post(x2s[round].get());
      SpinUntil([&] { return x_runs.load() == runs_before + 2; }, milliseconds(20));
      callbacks_done.fetch_add(1);
    });
    ASSERT_TRUE(SpinUntil(
        [&] { return x_runs.load() == runs_before + 2 && callbacks_done.load() == 2; },
        seconds(30)));
  }
  loops.Stop();
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  sched.Stop();  // the workers are gone: the log and the tasks are ours again
  g_logged_tasks = nullptr;
  ASSERT_EQ(g_pop_log.size(), logged.size());
  std::unordered_map<const Task*, std::size_t> position;  // in the take order
  for (std::size_t i = 0; i < g_pop_log.size(); ++i) position[g_pop_log[i]] = i;
  int out_of_order = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::size_t x1 = position.at(x1s[round].get());
    const std::size_t x2 = position.at(x2s[round].get());
    if (x1 > x2) ++out_of_order;
    EXPECT_LT(x1, x2)
        << "round " << round << " (gap " << kGapsMicros[round % 5] << " us): X2 started before X1";
  }
  std::printf("%d worker(s): %d of %d rounds out of order\n", 2 + reposters, out_of_order, rounds);
}

TEST(HeldPostTest, TwoPostsOfOneTaskStartInPostOrder) { TwoPostsOfOneTaskStartInPostOrder(0); }
TEST(HeldPostTest, TwoPostsOfOneTaskStartInPostOrderNextToARePoster) {
  TwoPostsOfOneTaskStartInPostOrder(1);
}

// Per-poster order under PostOrder::kHome, on 2 and 3 workers next to re-posters: in each
// round a one-shot P posts X1 (into its worker's queue), keeps its worker until a busy
// worker's look takes a task (X1, the oldest, as a rule) or for a gap that varies by round,
// posts X2 and returns. X1 must be taken before X2, whoever takes them. The home
// queues are not a template parameter, so no queue logs the takes; the check reads the
// callbacks' own ticks instead, counted only where the order is certain: each callback
// records, on its thread, the tick at which it ended, and X1 reads at its start the tick at
// which the callback before it on its thread ended. A worker takes one task at a time
// after its previous callback ended, so X2 having started before that tick proves X2 was
// taken first. (A taker that queued X1 behind its own tasks, instead of running it at
// once, lets X2 start first: seen failing that way.)
std::atomic<std::uint64_t> g_ticks{0};
thread_local std::uint64_t t_last_callback_end = 0;

std::uint64_t Tick() { return g_ticks.fetch_add(1, std::memory_order_seq_cst); }

// The tasks taken by busy workers so far: by looks under kHome, by take-overs of stale
// local batches under kBatched (WorkerStats::stale_take_overs).
std::uint64_t LookTakes(const TaskScheduler& sched) {
  std::uint64_t takes = 0;
  for (const WorkerStats& stats : sched.Stats()) takes += stats.stale_take_overs;
  return takes;
}

void TwoPostsOfOneTaskAreTakenInPostOrderUnderHomeQueues(int workers) {
  constexpr int kRounds = 500;
  constexpr int kGapsMicros[] = {0, 20, 100, 400, 1500};
  struct Probe {
    std::unique_ptr<Task> x1, x2;
    std::atomic<std::uint64_t> x1_previous_end{0}, x2_start{0};
    std::atomic<int> runs{0};
  };
  std::vector<std::unique_ptr<Probe>> probes;
  for (int i = 0; i < kRounds; ++i) {
    auto probe = std::make_unique<Probe>();
    Probe* const raw = probe.get();
    probe->x1 = std::make_unique<Task>([raw](Task*) {
      raw->x1_previous_end = t_last_callback_end;
      raw->runs.fetch_add(1);
      t_last_callback_end = Tick();
    });
    probe->x2 = std::make_unique<Task>([raw](Task*) {
      raw->x2_start = Tick();
      raw->runs.fetch_add(1);
      t_last_callback_end = Tick();
    });
    probes.push_back(std::move(probe));
  }
  RePosters<TaskScheduler> loops(3 * (workers - 1), std::chrono::microseconds(5),
                                 [] { t_last_callback_end = Tick(); });
  TaskScheduler sched(OptionsFor(PostOrder::kHome));
  sched.Start(workers);
  loops.PostTo(sched);
  ASSERT_TRUE(SpinUntil([&] { return loops.Runs() > 100 * (workers - 1); }, seconds(10)));
  for (int round = 0; round < kRounds; ++round) {
    Probe* const probe = probes[round].get();
    const auto gap = std::chrono::microseconds(kGapsMicros[round % 5]);
    sched.PostOneShot([&sched, probe, gap] {
      const std::uint64_t takes_before = LookTakes(sched);
      TaskScheduler::Current()->Post(probe->x1.get());
      // Until a look took a task (most likely X1, the oldest), or the gap: X2 then comes
      // right after the take, where a taker that queued X1 would still hold it.
      const auto until = TaskClock::now() + gap;
      while (TaskClock::now() < until && LookTakes(sched) == takes_before) {
      }
      TaskScheduler::Current()->Post(probe->x2.get());
      t_last_callback_end = Tick();
    });
    ASSERT_TRUE(SpinUntil([&] { return probe->runs.load() == 2; }, seconds(30)))
        << "round " << round << ": X1 and X2 did not both run";
  }
  loops.Stop();
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  const std::uint64_t takes = LookTakes(sched);
  sched.Stop();
  int out_of_order = 0;
  for (int round = 0; round < kRounds; ++round) {
    const Probe& probe = *probes[round];
    if (probe.x2_start.load() < probe.x1_previous_end.load()) {
      ++out_of_order;
      ADD_FAILURE() << "round " << round << " (gap " << kGapsMicros[round % 5]
                    << " us): X2 started before X1 was taken";
    }
  }
  std::printf("%d workers: %d of %d rounds out of order, %llu looks took an old task\n",
              workers, out_of_order, kRounds, static_cast<unsigned long long>(takes));
}

TEST(HomeQueueTest, TwoPostsOfOneTaskAreTakenInPostOrderOnTwoWorkers) {
  TwoPostsOfOneTaskAreTakenInPostOrderUnderHomeQueues(2);
}
TEST(HomeQueueTest, TwoPostsOfOneTaskAreTakenInPostOrderOnThreeWorkers) {
  TwoPostsOfOneTaskAreTakenInPostOrderUnderHomeQueues(3);
}

// Stop with a post racing the workers' exit from inside a task. An outside post A lands
// after the drain saw the scheduler empty, and the lone worker runs it after Stop told the
// workers to exit; A posts more work to run at once. That work must run before Stop
// returns, and Stop must return. The backend makes the race deterministic: while Stop
// drains, the role holder calls CancelAll on every pass; the backend holds it there until
// Stop's exit notification (its second Notify from the owner's thread, made after the exit
// flag is set), and the owner posts A from inside that Notify. The worker then receives A
// and runs it without looking at the exit flag again. A Stop that does not return within
// 10 s fails the test (the process exits: the stuck Stop cannot be joined).
std::atomic<int> g_owner_notifies{0};
std::atomic<bool> g_armed{false};
std::atomic<bool> g_a_posted{false};
std::atomic<bool> g_worker_held{false};
std::thread::id g_owner;
std::function<void()> g_post_a;  // called on the owner's thread only

// The backend hooks of the Stop race, installed for the life of one test's scheduler
// (declare before it).
struct StopRaceHooks {
  StopRaceHooks() {
    testing::HookedBackend::before_cancel_all = [] {
      if (!g_armed.load()) return;
      g_worker_held = true;
      SpinUntil([] { return g_a_posted.load(); }, seconds(5));
    };
    testing::HookedBackend::after_notify = [] {
      if (!g_armed.load() || std::this_thread::get_id() != g_owner) return;
      const int notify = g_owner_notifies.fetch_add(1);
      if (notify == 0) {
        // Stop's first Notify (stopping is set): the woken role holder reaches CancelAll
        // and is held there before the drain can see the scheduler empty.
        SpinUntil([] { return g_worker_held.load(); }, seconds(5));
      } else if (notify == 1) {
        g_post_a();  // posts A, which notifies again (a third Notify, passed through)
        g_armed = false;
        g_a_posted = true;
      }
    };
  }
  ~StopRaceHooks() {
    testing::HookedBackend::before_cancel_all = nullptr;
    testing::HookedBackend::after_notify = nullptr;
  }
};

using PostAtExitScheduler =
    BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, testing::HookedBackend>;

// Runs sched.Stop() with the hooks armed; `post_a` makes the posts A. Fails the process if
// Stop does not return.
template <typename Scheduler>
void StopWithPostsAcrossTheExit(Scheduler& sched, std::function<void()> post_a) {
  g_owner = std::this_thread::get_id();
  g_owner_notifies = 0;
  g_a_posted = false;
  g_worker_held = false;
  g_post_a = std::move(post_a);
  g_armed = true;
  std::atomic<bool> stopped{false};
  std::thread watchdog([&] {
    if (!SpinUntil([&] { return stopped.load(); }, seconds(10))) {
      std::fprintf(stderr, "Stop did not return within 10 s: a post made across the exit was "
                           "lost\n");
      std::fflush(stderr);
      std::_Exit(1);
    }
  });
  sched.Stop();
  stopped = true;
  watchdog.join();
  g_post_a = nullptr;
}

// The one worker's local batch: A's run-now post goes there (every worker executes); with
// `workers` > 1, see the two-worker test below. Under PostOrder::kHome the worker would run B in the execution batch that ran A (its own
// queue is where it takes its next task), so execute_batch_size 1 ends that batch after A
// and B is still queued when the worker sees the exit flag.
void StopDrainsAPostAcrossTheExit(PostOrder order, int workers = 1) {
  StopRaceHooks hooks;
  PostAtExitScheduler sched(TaskSchedulerOptions{
      .execute_batch_size = order == PostOrder::kHome ? 1u : 64u, .post_order = order});
  sched.Start(workers);
  std::atomic<int> a_runs{0}, b_runs{0};
  StopWithPostsAcrossTheExit(sched, [&] {
    sched.PostOneShot([&] {
      a_runs.fetch_add(1);
      PostAtExitScheduler::Current()->PostOneShot([&] { b_runs.fetch_add(1); });
    });
  });
  EXPECT_EQ(a_runs.load(), 1);
  EXPECT_EQ(b_runs.load(), 1) << "the post made from a task across the exit did not run";
  EXPECT_TRUE(sched.IsEmpty());
}

TEST(HeldPostTest, StopDrainsTheLocalBatchOfAnExitingWorker) {
  StopDrainsAPostAcrossTheExit(PostOrder::kBatched);
}
TEST(HomeQueueTest, StopDrainsTheHomeQueueOfAnExitingWorker) {
  StopDrainsAPostAcrossTheExit(PostOrder::kHome);
}

// The same on two and three workers under PostOrder::kHome, in fresh schedulers: A goes
// to the queue of whichever worker held the sched-role when the drain's last pass received
// it, so B is left in that worker's queue (or taken by another worker, which then runs it
// before it leaves). Stop must drain every worker's queue, not only the first one's: over
// the rounds, each worker is the role holder in some. (With the first queue's drain alone,
// 8 of 8 two-worker runs failed: a debug build stops at the check that a retired worker's
// queue is empty, a release build would lose B and hang in Stop.)
void StopDrainsTheHomeQueueOfAnyExitingWorker(int workers) {
  constexpr int kRounds = 100;
  for (int round = 0; round < kRounds; ++round) {
    StopDrainsAPostAcrossTheExit(PostOrder::kHome, workers);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "in round " << round;
      return;
    }
  }
}

TEST(HomeQueueTest, StopDrainsTheHomeQueueOfAnyExitingWorkerOnTwoWorkers) {
  StopDrainsTheHomeQueueOfAnyExitingWorker(2);
}
TEST(HomeQueueTest, StopDrainsTheHomeQueueOfAnyExitingWorkerOnThreeWorkers) {
  StopDrainsTheHomeQueueOfAnyExitingWorker(3);
}

// A post left in a home queue at the exit keeps its place (its stamp) ahead of the outside
// posts made after it. A (posted across the exit, as above) posts B into its worker's queue
// and then has another thread post kLater tasks from outside, into the front queue, while
// B waits; A returns, its worker leaves with B queued, and Stop's drain runs all of them.
// B is overtaken by at most execute_batch_size + home_skew of those later posts (1 + 1
// here). Found by tests/sched:random_sequences_test (seed 70: 37 later outside posts ran
// first against a bound of 17) when Stop sent what the home queues held to the back of the
// front queue, behind the outside posts that had arrived since.
void APostLeftInAHomeQueueKeepsItsPlaceAtStop(int workers) {
  constexpr int kLater = 64;
  constexpr std::int64_t kBound = 1 + 1;  // execute_batch_size + home_skew
  StopRaceHooks hooks;
  PostAtExitScheduler sched(TaskSchedulerOptions{
      .execute_batch_size = 1, .post_order = PostOrder::kHome, .home_skew = 1});
  sched.Start(workers);
  std::atomic<int> later_started{0};
  std::atomic<int> later_before_b{-1};
  StopWithPostsAcrossTheExit(sched, [&] {
    sched.PostOneShot([&] {
      PostAtExitScheduler::Current()->PostOneShot(
          [&] { later_before_b.store(later_started.load()); });
      // From another thread: outside posts, which go through the front queue.
      std::thread outside([&] {
        for (int i = 0; i < kLater; ++i) sched.PostOneShot([&] { later_started.fetch_add(1); });
      });
      outside.join();
    });
  });
  EXPECT_EQ(later_started.load(), kLater);
  ASSERT_GE(later_before_b.load(), 0) << "B did not run";
  EXPECT_LE(later_before_b.load(), kBound)
      << "the post left in a home queue at the exit was overtaken by " << later_before_b.load()
      << " of the " << kLater << " outside posts made after it";
  EXPECT_TRUE(sched.IsEmpty());
}

TEST(HomeQueueTest, APostLeftInAHomeQueueKeepsItsPlaceAtStop) {
  APostLeftInAHomeQueueKeepsItsPlaceAtStop(1);
}
TEST(HomeQueueTest, APostLeftInAHomeQueueKeepsItsPlaceAtStopOnTwoWorkers) {
  APostLeftInAHomeQueueKeepsItsPlaceAtStop(2);
}

// The one worker's claimed tasks: it takes several ready tasks at once and, with
// execute_batch_size 1, ends its execution batch after the first of them.
void StopDrainsTheClaimedTasksOfAnExitingWorker(PostOrder order) {
  StopRaceHooks hooks;
  PostAtExitScheduler sched(TaskSchedulerOptions{.execute_batch_size = 1, .post_order = order});
  sched.Start(1);
  constexpr int kPosts = 4;
  std::atomic<int> runs{0};
  StopWithPostsAcrossTheExit(sched, [&] {
    for (int i = 0; i < kPosts; ++i) sched.PostOneShot([&] { runs.fetch_add(1); });
  });
  EXPECT_EQ(runs.load(), kPosts) << "tasks the exiting worker had claimed did not run";
  EXPECT_TRUE(sched.IsEmpty());
}

TEST(HeldPostTest, StopDrainsTheClaimedTasksOfAnExitingWorker) {
  StopDrainsTheClaimedTasksOfAnExitingWorker(PostOrder::kBatched);
}
TEST(HomeQueueTest, StopDrainsTheClaimedTasksOfAnExitingWorker) {
  StopDrainsTheClaimedTasksOfAnExitingWorker(PostOrder::kHome);
}

// Stop racing posts on 2 and 3 workers, with the other workers busy across the exit.
// The posts A land after the drain saw the scheduler empty, as above; this time every
// worker runs one: the poster P, whose run-now post B goes to its worker's local batch
// (every worker executes), and long tasks L on the other workers, which run on until B
// starts (or 300 ms pass). P's worker must not leave with B held. The workers that are
// not the role holder must already be inside an execution batch when the exit flag is
// set (a worker at its loop top leaves at once), so the ready queue holds them there: at
// Start every worker but the role holder looks into the empty ready queue, and the test
// queue keeps that look going until the posts A arrive. (Claimed tasks exist with one
// worker only: the test above.)
using BusyAtExitScheduler =
    BasicTaskScheduler<InstrumentedReadyQueue, BinaryHeap<Task>, testing::HookedBackend>;

void StopDrainsAHeldPostWhileTheOtherWorkersRunOn(int workers) {
  g_gate_captured = 0;
  g_gate_capacity = workers - 1;
  g_gate_armed = true;
  StopRaceHooks hooks;
  BusyAtExitScheduler sched;
  sched.Start(workers);
  ASSERT_TRUE(SpinUntil([&] { return g_gate_captured.load() == workers - 1; }, seconds(10)))
      << "the workers did not all look into the ready queue";
  g_gate_armed = false;  // later looks (the fresh worker Stop may start) pass through
  std::atomic<int> long_running{0}, p_runs{0}, b_runs{0};
  StopWithPostsAcrossTheExit(sched, [&] {
    for (int i = 0; i < workers - 1; ++i) {
      sched.PostOneShot([&] {
        long_running.fetch_add(1);
        // Busy until B has started: the old exit left it behind, and it never would.
        SpinUntil([&] { return b_runs.load() > 0; }, milliseconds(300));
      });
    }
    sched.PostOneShot([&] {
      SpinUntil([&] { return long_running.load() == workers - 1; }, seconds(5));
      p_runs.fetch_add(1);
      BusyAtExitScheduler::Current()->PostOneShot([&] { b_runs.fetch_add(1); });
    });
  });
  EXPECT_EQ(long_running.load(), workers - 1) << "the other workers did not all run on";
  EXPECT_EQ(p_runs.load(), 1);
  EXPECT_EQ(b_runs.load(), 1) << "the post held across the exit did not run";
  EXPECT_TRUE(sched.IsEmpty());
}

TEST(HeldPostTest, StopDrainsAHeldPostOnTwoWorkers) { StopDrainsAHeldPostWhileTheOtherWorkersRunOn(2); }
TEST(HeldPostTest, StopDrainsAHeldPostOnThreeWorkers) {
  StopDrainsAHeldPostWhileTheOtherWorkersRunOn(3);
}

// Exactly once while take-overs race the owners' own publications (2 and 3 workers). In
// each round one worker runs a long task L that posts kBurst counted tasks (held in its
// local batch: every worker executes) and then keeps its worker for a gap that varies by
// round before it returns, when its worker publishes what is still held. Each counted task
// re-posts itself kRepeats times, into the local batch of whichever worker runs it. The
// other workers run re-posters: busy at every batch end, they take a batch over once it
// has stayed held while they started execute_batch_size tasks, which the gaps place
// before, at and after L's return, so take-overs meet the owner's own publication. Every
// counted task must run exactly 1 + kRepeats times, never twice at once; the stale
// take-overs are counted (WorkerStats) to show the race was there. Where the workers' own
// timing gave none in kRounds rounds (which worker the role hands L and the re-posters to
// varies: CI once saw 0 busy takes in 120 rounds on two workers), rounds go on, up to
// kMaxRounds, until one happens.
void ExactlyOnceWhileTakeOversRaceTheOwner(int workers, PostOrder order = PostOrder::kBatched) {
  constexpr int kRounds = 120;
  constexpr int kMaxRounds = 2000;
  constexpr int kBurst = 24;
  constexpr int kRepeats = 4;
  constexpr int kGapsMicros[] = {0, 30, 100, 300, 1000};
  struct Counted {
    std::unique_ptr<Task> task;
    std::atomic<int> runs{0};
    std::atomic<bool> running{false};
  };
  std::atomic<int> overlaps{0};
  std::atomic<int> counted_runs{0};
  std::vector<std::unique_ptr<Counted>> counted;
  for (int i = 0; i < kMaxRounds * kBurst; ++i) {
    auto c = std::make_unique<Counted>();
    Counted* const raw = c.get();
    c->task = std::make_unique<Task>([raw, &overlaps, &counted_runs](Task* self) {
      if (raw->running.exchange(true)) overlaps.fetch_add(1);
      const int runs = raw->runs.fetch_add(1) + 1;
      raw->running = false;
      counted_runs.fetch_add(1);
      if (runs <= kRepeats) TaskScheduler::Current()->Post(self);
    });
    counted.push_back(std::move(c));
  }
  TaskScheduler sched(OptionsFor(order));
  sched.Start(workers);
  // Two re-posters per other worker: the ready queue is rarely empty, so their execution
  // batches run long and L's posts are held (a worker between batches sends them on).
  RePosters<TaskScheduler> loops(2 * (workers - 1), std::chrono::microseconds(2));
  loops.PostTo(sched);
  ASSERT_TRUE(SpinUntil([&] { return loops.Runs() > 100 * (workers - 1); }, seconds(10)));
  int rounds = 0;
  for (; rounds < kMaxRounds; ++rounds) {
    if (rounds >= kRounds && LookTakes(sched) > 0) break;
    const int round = rounds;
    const int runs_before = counted_runs.load();
    const auto gap = std::chrono::microseconds(kGapsMicros[round % 5]);
    sched.PostOneShot([&, round, gap] {
      for (int i = 0; i < kBurst; ++i) {
        TaskScheduler::Current()->Post(counted[round * kBurst + i]->task.get());
      }
      const auto until = TaskClock::now() + gap;
      while (TaskClock::now() < until) {
      }
    });
    ASSERT_TRUE(SpinUntil(
        [&] { return counted_runs.load() >= runs_before + kBurst * (1 + kRepeats); }, seconds(30)))
        << "round " << round << ": the counted tasks did not all run";
  }
  loops.Stop();
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  sched.Stop();
  std::uint64_t stale_take_overs = 0, idle_take_overs = 0;
  for (const WorkerStats& stats : sched.Stats()) {
    stale_take_overs += stats.stale_take_overs;
    idle_take_overs += stats.idle_take_overs;
  }
  std::printf("%d workers: %llu stale and %llu idle take-overs in %d rounds\n", workers,
              static_cast<unsigned long long>(stale_take_overs),
              static_cast<unsigned long long>(idle_take_overs), rounds);
  EXPECT_EQ(overlaps.load(), 0) << "a task ran twice at the same time";
  int wrong = 0;
  for (int i = 0; i < rounds * kBurst; ++i) {
    const int runs = counted[i]->runs.load();
    if (runs != 1 + kRepeats && ++wrong <= 5) {
      ADD_FAILURE() << "counted task " << i << " ran " << runs << " times, posted " << 1 + kRepeats;
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(stale_take_overs, 0u) << "no busy take-over happened: the race was not exercised";
}

TEST(HeldPostTest, ExactlyOnceWhileTakeOversRaceTheOwnerOnTwoWorkers) {
  ExactlyOnceWhileTakeOversRaceTheOwner(2);
}
TEST(HeldPostTest, ExactlyOnceWhileTakeOversRaceTheOwnerOnThreeWorkers) {
  ExactlyOnceWhileTakeOversRaceTheOwner(3);
}
TEST(HomeQueueTest, ExactlyOnceWhileTakesRaceTheOwnerOnTwoWorkers) {
  ExactlyOnceWhileTakeOversRaceTheOwner(2, PostOrder::kHome);
}
TEST(HomeQueueTest, ExactlyOnceWhileTakesRaceTheOwnerOnThreeWorkers) {
  ExactlyOnceWhileTakeOversRaceTheOwner(3, PostOrder::kHome);
}

}  // namespace
}  // namespace fairsched
