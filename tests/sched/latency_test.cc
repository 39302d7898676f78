// Tests for the post-to-start latency histogram (//sched:latency_histogram and
// BasicTaskScheduler::LatencyHistogram) and wake-up sanity: every sampled post is counted
// exactly once, deadline and wait posts are not, the samples are plausible (none longer
// than the test ran), the stamp does not change what the task sees (IsExpired, order), and
// every task woken from another thread runs exactly once. No timing claims.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "sched/latency_histogram.h"
#include "sched/task.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LatencyHistogramTest, Buckets) {
  EXPECT_EQ(LatencyHistogram::BucketOf(0), 0u);
  EXPECT_EQ(LatencyHistogram::BucketOf(1), 1u);
  EXPECT_EQ(LatencyHistogram::BucketOf(2), 2u);
  EXPECT_EQ(LatencyHistogram::BucketOf(3), 2u);
  EXPECT_EQ(LatencyHistogram::BucketOf(1024), 11u);
  EXPECT_EQ(LatencyHistogram::BucketOf(UINT64_MAX), LatencyHistogram::kBuckets - 1);
  for (std::size_t b = 1; b + 1 < LatencyHistogram::kBuckets; ++b) {
    EXPECT_EQ(LatencyHistogram::BucketOf(LatencyHistogram::BucketLowerBound(b)), b);
    EXPECT_EQ(LatencyHistogram::BucketOf(LatencyHistogram::BucketUpperBound(b)), b);
  }
}

TEST(LatencyHistogramTest, QuantilesAndMerge) {
  LatencyHistogram h;
  EXPECT_EQ(h.QuantileBucket(0.5), 0u);
  h.counts[LatencyHistogram::BucketOf(1000)] = 90;     // 90 samples of ~1 us
  h.counts[LatencyHistogram::BucketOf(100'000)] = 10;  // 10 of ~100 us
  EXPECT_EQ(h.Total(), 100u);
  EXPECT_EQ(h.QuantileBucket(0.5), LatencyHistogram::BucketOf(1000));
  EXPECT_EQ(h.QuantileBucket(0.9), LatencyHistogram::BucketOf(1000));
  EXPECT_EQ(h.QuantileBucket(0.99), LatencyHistogram::BucketOf(100'000));
  LatencyHistogram other;
  other.counts[3] = 5;
  h.Add(other);
  EXPECT_EQ(h.Total(), 105u);
  EXPECT_EQ(h.counts[3], 5u);
}

std::uint64_t MaxSampleLowerBound(const LatencyHistogram& h) {
  std::uint64_t max = 0;
  for (std::size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
    if (h.counts[b] > 0) max = LatencyHistogram::BucketLowerBound(b);
  }
  return max;
}

template <typename Scheduler>
class LatencyTest : public ::testing::Test {};
using Schedulers = ::testing::Types<TaskScheduler, TrivialPolicyTaskScheduler>;
TYPED_TEST_SUITE(LatencyTest, Schedulers);

TYPED_TEST(LatencyTest, EveryImmediatePostIsCountedOnce) {
  const auto started = TaskClock::now();
  TypeParam sched(TaskSchedulerOptions{.latency_sample_period = 1});
  sched.Start(2);
  constexpr int kTasks = 1000;
  std::atomic<int> expired{0};
  std::vector<std::unique_ptr<Task>> tasks;
  for (int i = 0; i < kTasks; ++i) {
    tasks.push_back(std::make_unique<Task>([&expired](Task* self) {
      if (self->IsExpired()) expired.fetch_add(1);
    }));
    sched.Post(tasks.back().get());
    sched.PostOneShot([&expired](Task* self) {
      if (self->IsExpired()) expired.fetch_add(1);
    });
  }
  // Deadline and wait posts are not sampled.
  Task later([](Task*) {});
  sched.PostDelay(&later, milliseconds(1));
  Task waiting([](Task*) {});
  sched.PostWait(&waiting);
  sched.Wakeup(&waiting);
  ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  const LatencyHistogram h = sched.LatencyHistogram();
  EXPECT_EQ(h.Total(), 2u * kTasks);
  // An immediate post still counts as expired (the stamp lives in its deadline).
  EXPECT_EQ(expired.load(), 2 * kTasks);
  const auto elapsed = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(TaskClock::now() - started).count());
  EXPECT_LE(MaxSampleLowerBound(h), elapsed);
}

TYPED_TEST(LatencyTest, SamplingPeriodAndOff) {
  {
    // Rounded up to 4: one post in four of this thread is stamped.
    TypeParam sched(TaskSchedulerOptions{.latency_sample_period = 3});
    sched.Start(1);
    for (int i = 0; i < 400; ++i) sched.PostOneShot([] {});
    ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
    EXPECT_EQ(sched.LatencyHistogram().Total(), 100u);
  }
  {
    TypeParam sched(TaskSchedulerOptions{.latency_sample_period = 0});
    sched.Start(1);
    for (int i = 0; i < 400; ++i) sched.PostOneShot([] {});
    ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
    EXPECT_EQ(sched.LatencyHistogram().Total(), 0u);
  }
}

// Re-posts from inside are sampled like any post; with one worker the stamped tasks still
// start in post order.
TYPED_TEST(LatencyTest, RepostsAreCountedAndKeepOrder) {
  TypeParam sched(TaskSchedulerOptions{.latency_sample_period = 1});
  constexpr int kJobs = 50, kRuns = 10;
  std::vector<int> order;  // only touched by the single worker
  struct Job {
    TypeParam* sched;
    std::vector<int>* order;
    int id = 0;
    int runs = 0;
    Task task;
  };
  std::vector<std::unique_ptr<Job>> jobs;
  for (int i = 0; i < kJobs; ++i) {
    auto job = std::make_unique<Job>();
    job->sched = &sched;
    job->order = &order;
    job->id = i;
    Job* j = job.get();
    j->task.SetCallback([j](Task* self) {
      j->order->push_back(j->id);
      if (++j->runs < kRuns) j->sched->Post(self);
    });
    jobs.push_back(std::move(job));
  }
  for (auto& job : jobs) sched.Post(&job->task);
  sched.Start(1);
  ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  EXPECT_EQ(sched.LatencyHistogram().Total(), static_cast<std::uint64_t>(kJobs * kRuns));
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kJobs * kRuns));
  for (int i = 0; i < kJobs * kRuns; ++i) EXPECT_EQ(order[i], i % kJobs);
}

// Wake-up sanity: tasks parked with PostWait, woken one by one from another thread while the
// workers are mostly idle (each wake-up may find the scheduler asleep): every one runs
// exactly once, not expired.
TYPED_TEST(LatencyTest, EveryWokenTaskRunsOnce) {
  TypeParam sched;
  sched.Start(2);
  const int n = static_cast<int>(testing::StressIterations(300, 3));
  std::vector<std::atomic<int>> runs(n);
  std::vector<std::unique_ptr<Task>> tasks;
  std::atomic<int> not_expired{0};
  for (int i = 0; i < n; ++i) {
    tasks.push_back(std::make_unique<Task>([&, i](Task* self) {
      runs[i].fetch_add(1);
      if (!self->IsExpired()) not_expired.fetch_add(1);
    }));
    sched.PostWait(tasks.back().get());
  }
  std::thread waker([&] {
    for (int i = 0; i < n; ++i) {
      sched.Wakeup(tasks[i].get());
      // Every few wake-ups, give the workers time to fall asleep again.
      if (i % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  waker.join();
  ASSERT_TRUE(sched.WaitEmpty(seconds(60)));
  for (int i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  EXPECT_EQ(not_expired.load(), n);
  EXPECT_EQ(sched.LatencyHistogram().Total(), 0u);  // wait posts are never stamped
}

}  // namespace
}  // namespace fairsched
