// Tests for //examples:readme_examples: the four README examples, each with 1, 2 and 4
// workers, checking the order of steps, signal versus expiry, and that every request
// was processed.
#include "examples/readme_examples.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/fake_async_client.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::examples {
namespace {

using namespace std::chrono_literals;

class ReadmeExamplesTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { sched_.Start(GetParam()); }
  void TearDown() override {
    sched_.Stop();
    EXPECT_TRUE(sched_.IsEmpty());
  }
  TaskScheduler sched_;
  FakeAsyncClient client_;
};

TEST_P(ReadmeExamplesTest, OneShotTasksAllRunOnce) {
  const int count = static_cast<int>(testing::StressIterations(5000));
  EXPECT_EQ(RunOneShot(sched_, count), count);
}

TEST_P(ReadmeExamplesTest, MultiStepRunsStepsInOrder) {
  const std::vector<std::string> expected = {"step1: GET sent", "step2: GET done, HEAD sent",
                                             "step3: HEAD done, finished"};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(RunMultiStep(sched_, client_), expected);
}

TEST_P(ReadmeExamplesTest, DeadlineFastRequestEndsBySignal) {
  const DeadlineOutcome outcome = RunAsyncWithDeadline(sched_, client_, 1ms, 10s);
  EXPECT_TRUE(outcome.signaled);
  EXPECT_EQ(outcome.expirations, 0);
  EXPECT_FALSE(outcome.cancelled);
  EXPECT_EQ(outcome.result, "https://example.com/save: ok");
}

TEST_P(ReadmeExamplesTest, DeadlineSlowRequestExpiresThenCancelSignals) {
  const DeadlineOutcome outcome = RunAsyncWithDeadline(sched_, client_, 60s, 20ms);
  EXPECT_TRUE(outcome.signaled);
  EXPECT_EQ(outcome.expirations, 1);
  EXPECT_TRUE(outcome.cancelled);
  EXPECT_EQ(outcome.result, "cancelled");
}

// Why Signal exists (docs/semantics.md, "Why Signal exists"): the request completes at about
// the moment the deadline fires. Whichever wins, the task must end exactly once, by a
// signal, after at most one expiry, and never touch freed memory (asan/tsan builds check
// the latter).
TEST_P(ReadmeExamplesTest, DeadlineRacingCompletionIsSafe) {
  const int rounds = static_cast<int>(testing::StressIterations(300));
  int expired = 0;
  for (int i = 0; i < rounds; ++i) {
    const auto latency = std::chrono::microseconds(100 + (i % 7) * 50);
    const DeadlineOutcome outcome = RunAsyncWithDeadline(sched_, client_, latency, 250us);
    ASSERT_TRUE(outcome.signaled);
    ASSERT_LE(outcome.expirations, 1);
    if (outcome.expirations == 0) {
      ASSERT_FALSE(outcome.cancelled);
      ASSERT_EQ(outcome.result, "https://example.com/save: ok");
    } else {
      // Expired: either the cancellation or the completion (if it won the race with the
      // Cancel) delivered the signal.
      ASSERT_TRUE(outcome.result == "cancelled" ||
                  outcome.result == "https://example.com/save: ok");
      ++expired;
    }
  }
  RecordProperty("expired_rounds", expired);
}

TEST_P(ReadmeExamplesTest, ExecutorProcessesEveryRequestInOrder) {
  const int count = static_cast<int>(testing::StressIterations(2000));
  const ExecutorOutcome outcome = RunLongLivedExecutor(sched_, client_, count);
  ASSERT_EQ(outcome.processed.size(), static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) EXPECT_EQ(outcome.processed[i], "data" + std::to_string(i));
  // Woken once per batch of requests, never more than once per request (plus the first
  // run and the close). A single run is possible: if the worker gets no CPU until after
  // Close, the first execution drains everything and sees the close.
  EXPECT_GE(outcome.executions, 1);
  EXPECT_LE(outcome.executions, count + 2);
}

TEST_P(ReadmeExamplesTest, ExecutorWithNoRequestsStillCloses) {
  const ExecutorOutcome outcome = RunLongLivedExecutor(sched_, client_, 0);
  EXPECT_TRUE(outcome.processed.empty());
  EXPECT_GE(outcome.executions, 1);
}

INSTANTIATE_TEST_SUITE_P(Workers, ReadmeExamplesTest, ::testing::Values(1, 2, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "w" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace fairsched::examples
