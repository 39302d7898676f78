// The order promise (sched/task_scheduler.h, "Order"): posts from outside start in post
// order; a run-now post made by a task (a re-post, a Yield, a one-shot) starts behind
// everything posted before it, and may be overtaken only by posts made while it was held
// in its worker's local batch (on one worker: at most execute_batch_size task starts
// later), and by none under PostOrder::kStrict. Checked on one worker (where start order
// is observable exactly) under tasks that re-post forever and a flood of outside posts, and
// on two workers for the progress half: nothing starves. The multi-worker bound, with the
// other workers kept busy, is tests/sched/held_post_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::seconds;

// One post: its place in post order, how many tasks had started when it was made, whether
// a task made it, and (filled in when it runs) its place in start order.
struct PostRecord {
  std::int64_t seq = -1;
  std::int64_t started_before = 0;
  bool by_task = false;
  std::int64_t start = -1;
};

class Recorder {
 public:
  explicit Recorder(std::size_t capacity) : records_(capacity) {}
  // Before a post: a record (its index, or -1 when full: the run is over), with the starts
  // so far. A task's post also takes its place in post order here: nothing else can post
  // between this and its Post call that Post would order before it... except posts from
  // other threads, whose place is taken after their Post returned (TakePlace), so that a
  // place always follows the push it stands for.
  std::int64_t RecordPost(bool by_task) {
    const std::int64_t index = next_.fetch_add(1, std::memory_order_relaxed);
    if (index >= static_cast<std::int64_t>(records_.size())) return -1;
    PostRecord& record = records_[index];
    record.started_before = starts_.load(std::memory_order_seq_cst);
    record.by_task = by_task;
    if (by_task) TakePlace(index);
    return index;
  }
  void TakePlace(std::int64_t index) {
    records_[index].seq = seq_.fetch_add(1, std::memory_order_seq_cst);
  }
  void RecordStart(std::int64_t index) {
    records_[index].start = starts_.fetch_add(1, std::memory_order_seq_cst);
  }
  // Posts recorded but not started yet (the queue length the flood has built up).
  std::int64_t InFlight() const {
    return next_.load(std::memory_order_relaxed) - starts_.load(std::memory_order_relaxed);
  }
  bool Full() const {
    return next_.load(std::memory_order_relaxed) >= static_cast<std::int64_t>(records_.size());
  }
  std::vector<PostRecord>& records() { return records_; }

 private:
  std::vector<PostRecord> records_;
  std::atomic<std::int64_t> next_{0};
  std::atomic<std::int64_t> seq_{0};
  std::atomic<std::int64_t> starts_{0};
};

// Max over prefixes of start order (a Fenwick tree of maxima).
class PrefixMax {
 public:
  explicit PrefixMax(std::size_t n) : tree_(n + 1, INT64_MIN) {}
  void Set(std::size_t position, std::int64_t value) {
    for (std::size_t i = position + 1; i < tree_.size(); i += i & (~i + 1)) {
      tree_[i] = std::max(tree_[i], value);
    }
  }
  std::int64_t Below(std::size_t position) const {  // max over positions < position
    std::int64_t best = INT64_MIN;
    for (std::size_t i = position; i > 0; i -= i & (~i + 1)) best = std::max(best, tree_[i]);
    return best;
  }

 private:
  std::vector<std::int64_t> tree_;
};

// Runs eight re-posting tasks and a flood of outside posts on one worker, records post and
// start order, and counts the posts that were overtaken in `*overtaken_out`; fails if an
// outside post was overtaken, or if an overtaker was made more than `bound` task starts
// after the post it overtook.
void RepostersAndFloodOnOneWorker(PostOrder order, std::int64_t bound,
                                  std::size_t* overtaken_out) {
  constexpr std::size_t kBatch = 16;
  TaskScheduler sched(TaskSchedulerOptions{.execute_batch_size = kBatch, .post_order = order});
  const std::size_t posts = static_cast<std::size_t>(testing::StressIterations(200000, 4));
  Recorder recorder(posts);
  std::atomic<bool> stop{false};
  // Eight tasks that re-post themselves, half of the posts between them, so that the share
  // of the flood below does not depend on which side the machine happens to favour.
  std::atomic<std::int64_t> task_posts_left{static_cast<std::int64_t>(posts / 2)};
  struct Reposter {
    Task task;
    std::int64_t record = -1;
    std::atomic<std::int64_t> runs{0};
  };
  std::vector<std::unique_ptr<Reposter>> reposters;
  for (int i = 0; i < 8; ++i) {
    reposters.push_back(std::make_unique<Reposter>());
    Reposter* self = reposters.back().get();
    self->task.SetCallback([&, self](Task* task) {
      if (self->record >= 0) recorder.RecordStart(self->record);
      self->runs.fetch_add(1, std::memory_order_relaxed);
      if (stop.load(std::memory_order_relaxed)) return;
      if (task_posts_left.fetch_sub(1, std::memory_order_relaxed) <= 0) return;
      self->record = recorder.RecordPost(/*by_task=*/true);
      if (self->record < 0) return;
      TaskScheduler::Current()->Post(task);
    });
  }
  for (auto& r : reposters) {
    r->record = recorder.RecordPost(/*by_task=*/false);
    sched.Post(&r->task);
    recorder.TakePlace(r->record);
  }
  sched.Start(1);
  // The flood: one-shots from outside, as fast as they can be posted while fewer than
  // kFloodLead of them wait. Without the bound a slow worker (ASan) lets the queue grow to
  // hundreds of thousands and each re-post, rightly behind all of them, runs a few times;
  // with it, each re-poster must run about once per kFloodLead starts while the flood lasts.
  constexpr std::int64_t kFloodLead = 256;
  std::thread flood([&] {
    while (!recorder.Full()) {
      if (recorder.InFlight() > kFloodLead) {
        std::this_thread::yield();
        continue;
      }
      const std::int64_t record = recorder.RecordPost(/*by_task=*/false);
      if (record < 0) break;
      sched.PostOneShot([&recorder, record] { recorder.RecordStart(record); });
      recorder.TakePlace(record);
    }
  });
  flood.join();
  // Runs while the flood lasted: a re-post goes behind the flood's waiting posts but never
  // further, so every re-poster kept running (or used up the shared budget early).
  std::vector<std::int64_t> runs_during_flood;
  for (auto& r : reposters) runs_during_flood.push_back(r->runs.load(std::memory_order_relaxed));
  ASSERT_TRUE(sched.WaitEmpty(seconds(120)));
  stop = true;
  sched.Stop();

  std::vector<PostRecord>& records = recorder.records();
  std::size_t by_task = 0, outside = 0;
  for (const PostRecord& r : records) {
    ASSERT_GE(r.start, 0) << "a post never ran";
    (r.by_task ? by_task : outside) += 1;
  }
  for (std::int64_t runs : runs_during_flood) {
    EXPECT_GT(runs, 10) << "a re-posting task starved during the flood";
  }
  ASSERT_GE(outside, records.size() / 2 - 8) << "the flood's posts were not all recorded";
  // In post order: a post overtaken by a later one must be a task's post, and the later one
  // must have been made before that task's batch ended (within kBatch starts).
  std::vector<const PostRecord*> by_seq(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) by_seq[records[i].seq] = &records[i];
  PrefixMax later_posts(records.size());  // over start order: max started_before
  std::int64_t worst = INT64_MIN;
  std::size_t overtaken = 0;
  for (std::size_t i = records.size(); i-- > 0;) {
    const PostRecord& a = *by_seq[i];
    const std::int64_t latest = later_posts.Below(static_cast<std::size_t>(a.start));
    if (latest != INT64_MIN) {
      ++overtaken;
      ASSERT_TRUE(a.by_task) << "an outside post (seq " << a.seq << ") was overtaken";
      worst = std::max(worst, latest - a.started_before);
    }
    later_posts.Set(static_cast<std::size_t>(a.start), a.started_before);
  }
  std::printf("%zu posts (%zu by tasks), %zu overtaken, worst overtaker made %lld starts later\n",
              records.size(), by_task, overtaken, static_cast<long long>(worst));
  EXPECT_LE(worst, bound);
  *overtaken_out = overtaken;
}

TEST(FairnessTest, LocalBatchesReorderOnlyWithinOneBatch) {
  std::size_t overtaken = 0;
  RepostersAndFloodOnOneWorker(PostOrder::kBatched, 16 + 1, &overtaken);
}

// PostOrder::kStrict: the same load, and no post is overtaken by one made after any further
// task start (bound 0). The record can still show a task's post "overtaken" by an outside
// post made at the same moment: a task's post takes its place in post order just before
// its Post call, an outside post just after its Post returns, so two concurrent posts can
// be recorded in either order; none of them is made a task start later.
TEST(FairnessTest, StrictOrderOvertakesNothing) {
  std::size_t overtaken = 0;
  RepostersAndFloodOnOneWorker(PostOrder::kStrict, 0, &overtaken);
}

// A post made while every worker is busy goes into the poster's local batch; if the
// poster then runs on (here: blocks until the post has run), the worker that frees up
// next takes the batch over before it parks, so the light task is not held behind the
// heavy one while a worker is free.
TEST(FairnessTest, AnIdleWorkerTakesOverALocalBatchHeldByALongTask) {
  TaskScheduler sched;
  sched.Start(2);
  std::atomic<bool> hog_started{false}, child_ran{false}, child_seen{false};
  std::atomic<bool> hog_done{false};
  Task child([&](Task*) { child_ran = true; });
  Task hog([&](Task*) {
    hog_started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    hog_done = true;
  });
  Task parent([&](Task*) {
    while (!hog_started.load()) std::this_thread::yield();  // both workers are busy now
    TaskScheduler::Current()->Post(&child);
    const auto give_up = TaskClock::now() + seconds(10);
    while (!child_ran.load() && TaskClock::now() < give_up) std::this_thread::yield();
    child_seen = child_ran.load();
  });
  sched.Post(&parent);
  sched.Post(&hog);
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_TRUE(hog_done.load());
  EXPECT_TRUE(child_seen.load()) << "the child waited for its poster's task to end";
}

// Posts from outside are never overtaken by later ones while a worker is free, also when a
// worker that takes a task runs it for long while the other works through the queue. Here
// the first small task blocks until the last one has started; the other worker must start
// every task in between, in post order, meanwhile (a worker that took several ready tasks
// at once would hold the ones behind its long task while later posts start elsewhere).
TEST(FairnessTest, TasksBehindALongTaskAreNotHeldByItsWorker) {
  TaskScheduler sched;
  sched.Start(2);
  constexpr int kSmall = 64;
  std::atomic<bool> gate_open{false};
  std::atomic<int> starts{0};
  std::vector<std::atomic<int>> start_of(kSmall);
  for (auto& start : start_of) start = -1;
  std::vector<std::unique_ptr<Task>> small;
  // The gate keeps one worker busy until the long task has started; the other runs the
  // warm-up task first, so that it takes the long task in the middle of an execution batch
  // while every worker executes (where taking several at once would pay most).
  Task gate([&](Task*) {
    const auto give_up = TaskClock::now() + seconds(10);
    while (!gate_open.load() && TaskClock::now() < give_up) std::this_thread::yield();
  });
  Task warm_up([](Task*) {});
  for (int i = 0; i < kSmall; ++i) {
    small.push_back(std::make_unique<Task>([&, i](Task*) {
      start_of[i] = starts.fetch_add(1);
      if (i == 0) {
        gate_open = true;
        // The long task: runs until the last small task has started (or gives up).
        const auto give_up = TaskClock::now() + seconds(10);
        while (start_of[kSmall - 1] < 0 && TaskClock::now() < give_up) {
          std::this_thread::yield();
        }
      }
    }));
  }
  sched.Post(&gate);
  sched.Post(&warm_up);
  for (auto& task : small) sched.Post(task.get());
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  for (int i = 1; i + 1 < kSmall; ++i) {
    EXPECT_LT(start_of[i].load(), start_of[kSmall - 1].load())
        << "task " << i << " started after the last task, posted later, while a worker was free";
  }
}

// Two workers, the same load: every re-posting task keeps running and every outside post
// runs, also when the re-posters would fill every batch.
TEST(FairnessTest, RepostersAndAFloodShareTwoWorkers) {
  TaskScheduler sched;
  sched.Start(2);
  constexpr int kReposters = 8;
  std::atomic<bool> stop{false};
  std::vector<std::atomic<std::int64_t>> runs(kReposters);
  std::vector<std::unique_ptr<Task>> tasks;
  for (int i = 0; i < kReposters; ++i) {
    tasks.push_back(std::make_unique<Task>([&, i](Task* self) {
      runs[i].fetch_add(1, std::memory_order_relaxed);
      if (!stop.load(std::memory_order_relaxed)) TaskScheduler::Current()->Post(self);
    }));
    sched.Post(tasks.back().get());
  }
  std::atomic<std::int64_t> flood_runs{0};
  const std::int64_t flood_posts = testing::StressIterations(100000, 4);
  for (std::int64_t i = 0; i < flood_posts; ++i) {
    sched.PostOneShot([&] { flood_runs.fetch_add(1, std::memory_order_relaxed); });
  }
  const auto give_up = TaskClock::now() + seconds(60);
  while (flood_runs.load() < flood_posts && TaskClock::now() < give_up) {
    std::this_thread::yield();
  }
  const std::vector<std::int64_t> snapshot = [&] {
    std::vector<std::int64_t> out;
    for (auto& r : runs) out.push_back(r.load());
    return out;
  }();
  stop = true;
  ASSERT_TRUE(sched.WaitEmpty(seconds(30)));
  EXPECT_EQ(flood_runs.load(), flood_posts);
  for (int i = 0; i < kReposters; ++i) EXPECT_GT(snapshot[i], 0) << "re-poster " << i;
}

}  // namespace
}  // namespace fairsched
