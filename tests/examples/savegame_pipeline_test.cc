// Tests for //examples:savegame_pipeline (the `demo` binary's code path): every job ends
// exactly once, as completed or timed out as set up, and no two jobs of one user ever hold
// the profile lock together.
#include "examples/savegame_pipeline.h"

#include <gtest/gtest.h>

namespace fairsched::examples {
namespace {

using namespace std::chrono_literals;

PipelineOptions SmallRun(int workers) {
  PipelineOptions o;
  o.jobs = 400;
  o.users = 10;  // about 40 jobs per user: the profile lock is contended
  o.workers = workers;
  o.arrival_rate = 20000;
  o.slow_download_fraction = 0.05;
  // Generous margins, so a slow (sanitizer) build cannot turn a fast download into a
  // timeout: fast downloads take <= 2 ms, the deadline is 300 ms, slow ones take 30 s
  // (and are cancelled at the deadline).
  o.download_timeout = 300ms;
  o.slow_download_latency = 30s;
  return o;
}

class SavegamePipelineTest : public ::testing::TestWithParam<int> {};

TEST_P(SavegamePipelineTest, EveryJobEndsOnceAndLocksAreExclusive) {
  const PipelineReport r = RunSavegamePipeline(SmallRun(GetParam()));
  EXPECT_EQ(r.jobs, 400);
  EXPECT_FALSE(r.lock_violation);
  EXPECT_EQ(r.completed + r.timed_out, r.jobs);
  EXPECT_GT(r.slow_downloads, 0);
  EXPECT_EQ(r.timed_out, r.slow_downloads);
  EXPECT_GT(r.lock_waits, 0);
  EXPECT_GT(r.throughput, 0);
  EXPECT_LE(r.p50_us, r.p99_us);
  EXPECT_LE(r.p99_us, r.max_us);
}

INSTANTIATE_TEST_SUITE_P(Workers, SavegamePipelineTest, ::testing::Values(1, 2, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "w" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace fairsched::examples
