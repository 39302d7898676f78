// Tests for the savegame job's sweep options: the Updater starts
// a job in the tick it arrives (UpdaterStart::kSameTick, the default) where the earlier
// order (kNextTick) left it waiting a tick; the skewed workload really skews (heavy users
// are picked heavy_factor times as often and their saves are heavy_factor times larger);
// the job raises its open-file limit for many connections; and the fleet can run in a
// child process (its result crosses a pipe intact; the run passes its check).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "examples/savegame/fleet_process.h"
#include "examples/savegame/load.h"
#include "examples/savegame/protocol.h"
#include "examples/savegame/savegame.h"
#include "tests/stress.h"

namespace fairsched::savegame {
namespace {

using namespace std::chrono_literals;

// One Updater thread, one closed-loop connection, a slow tick: each save spans a few ticks.
SavegameOptions SlowTickRun(UpdaterStart start) {
  SavegameOptions o;
  o.workers = 1;  // every job is read and pinned by the one thread: the start order decides
  o.users = 8;
  o.connections = 1;
  o.client_threads = 1;
  o.duration = 1500ms;
  o.blob_latency = 0ns;
  o.cpu_cost = 0ns;
  o.updater_tick = 30ms;
  o.step_timeout = 5s;
  o.updater_start = start;
  return o;
}

TEST(UpdaterStartTest, ANewJobStartsInTheTickItArrives) {
  const DesignReport same = RunDesign(Design::kUpdater, SlowTickRun(UpdaterStart::kSameTick));
  const DesignReport next = RunDesign(Design::kUpdater, SlowTickRun(UpdaterStart::kNextTick));
  for (const DesignReport* r : {&same, &next}) {
    ASSERT_TRUE(r->check.passed) << r->check.message;
    ASSERT_GT(r->fleet.ok(), 3);
  }
  // With one thread every job is read by the thread that runs it: in the default order it
  // is in the walk that follows the read; in the old order it misses that walk.
  EXPECT_EQ(same.jobs_started_late, 0);
  EXPECT_EQ(next.jobs_started_late, next.fleet.sent);
  // And the client sees it: waiting a tick before the first step costs about a tick.
  const double tick_ms = 30;
  const double same_p50 = QuantileMs(same.fleet.ok_latency_us, 0.5);
  const double next_p50 = QuantileMs(next.fleet.ok_latency_us, 0.5);
  EXPECT_GT(next_p50 - same_p50, tick_ms / 2) << same_p50 << " ms vs " << next_p50 << " ms";
}

TEST(SkewedWorkloadTest, HeavyUsersArePickedHeavyFactorTimesAsOften) {
  UserPicker picker(/*users=*/100, /*heavy_users=*/3, /*heavy_factor=*/10);
  std::mt19937_64 random(7);
  std::vector<int> picks(100, 0);
  const int draws = 254'000;  // 127 slots: 2,000 expected per light user, 20,000 per heavy
  for (int i = 0; i < draws; ++i) ++picks[picker.Pick(random)];
  for (int user = 0; user < 100; ++user) {
    const double expected = user < 3 ? 20'000 : 2'000;
    // Well within 6 standard deviations (sqrt(20,000) ~ 141, sqrt(2,000) ~ 45).
    EXPECT_NEAR(picks[user], expected, expected < 10'000 ? 270 : 850) << "user " << user;
  }
}

TEST(SkewedWorkloadTest, WithoutHeavyUsersThePickIsUniformOverAllUsers) {
  UserPicker picker(/*users=*/5, /*heavy_users=*/0, /*heavy_factor=*/10);
  std::mt19937_64 random(3);
  std::vector<int> picks(5, 0);
  for (int i = 0; i < 50'000; ++i) ++picks[picker.Pick(random)];
  for (int count : picks) EXPECT_NEAR(count, 10'000, 600);
}

TEST(SkewedWorkloadTest, AHeavySaveIsHeavyFactorTimesLarger) {
  ServerOptions options;
  options.cpu_cost = 2ms;
  options.blob_payload = 1000;
  options.heavy_users = 2;
  options.heavy_factor = 5;
  EXPECT_EQ(options.PayloadOf(1), 5000u);
  EXPECT_EQ(options.PayloadOf(2), 1000u);
  // The CPU work of a save spins until its cost has passed: a heavy one takes >= 5x.
  const auto timed = [&](std::uint32_t user) {
    const auto began = std::chrono::steady_clock::now();
    const std::string blob = ChangeBlob({}, 1, options.PayloadOf(user), options.CpuCostOf(user));
    EXPECT_GT(blob.size(), options.PayloadOf(user));
    return std::chrono::steady_clock::now() - began;
  };
  EXPECT_GE(timed(0), 10ms);
  EXPECT_GE(timed(5), 2ms);
  EXPECT_LT(ChangeBlob({}, 1, options.PayloadOf(5), 0ns).size(),
            ChangeBlob({}, 1, options.PayloadOf(0), 0ns).size());
}

TEST(SkewedWorkloadTest, TheRunSavesHeavyUsersMoreOften) {
  SavegameOptions o;
  o.users = 40;
  o.connections = 8;
  o.duration = 1s;
  o.step_timeout = 5s;
  o.heavy_users = 2;
  o.heavy_factor = 10;
  const DesignReport r = RunDesign(Design::kFairsched, o);
  ASSERT_TRUE(r.check.passed) << r.check.message;
  double heavy = 0, light = 0;
  for (int user = 0; user < o.users; ++user) {
    (user < o.heavy_users ? heavy : light) += static_cast<double>(r.fleet.acked[user]);
  }
  heavy /= o.heavy_users;
  light /= o.users - o.heavy_users;
  ASSERT_GT(light, 0);
  // 10x expected; a heavy user's saves also queue on its profile lock, so allow slack.
  EXPECT_GT(heavy / light, 4) << heavy << " vs " << light;
}

// The measured window opens once every connection is connected: a fleet thread whose
// connect is late (here 600 ms, like a SYN retransmit after a listen-queue overflow) still
// runs its closed loop for the whole duration. Before, the window was counted from the
// fleet's start, so that thread found it over and sent one request per connection.
TEST(FleetWindowTest, ConnectingDoesNotEatTheMeasuredWindow) {
  SavegameOptions o;
  o.users = 16;
  o.connections = 4;
  o.client_threads = 2;  // connections 0-1 on the delayed thread, 2-3 on the other
  o.duration = 400ms;
  o.blob_latency = 0ns;
  o.cpu_cost = 0ns;
  o.step_timeout = 5s;
  o.first_connect_delay = 600ms;
  const DesignReport r = RunDesign(Design::kFairsched, o);
  ASSERT_TRUE(r.check.passed) << r.check.message;
  std::vector<int> sent_per_connection(o.connections, 0);
  for (const RequestOutcome& request : r.fleet.requests) {
    const std::uint64_t connection = (request.request_id >> 32) - 1;
    ASSERT_LT(connection, sent_per_connection.size());
    ++sent_per_connection[connection];
  }
  for (int c = 0; c < o.connections; ++c) {
    EXPECT_GT(sent_per_connection[c], 10) << "connection " << c;
  }
}

TEST(FileLimitTest, RaisesTheSoftLimitToTheHardOne) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < 64) GTEST_SKIP() << "hard limit < 64";
  const rlimit lowered{std::min<rlim_t>(limit.rlim_max, 64), limit.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const FileLimit raised = RaiseFileLimit(32);
  EXPECT_EQ(raised.soft_before, lowered.rlim_cur);
  EXPECT_EQ(raised.hard_before, limit.rlim_max);
  EXPECT_EQ(raised.needed, 32u);
  EXPECT_EQ(raised.soft, raised.hard);
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, raised.soft);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);  // as it was
}

TEST(FleetProcessTest, AResultCrossesThePipeIntact) {
  FleetResult r;
  r.seconds = 1.5;
  r.open_loop = true;
  r.offered_rate = 400;
  r.arrivals = 601;
  r.unsent = 2;
  r.max_backlog = 9;
  r.sent = 599;
  r.replies[0] = 590;
  r.replies[3] = 4;
  r.no_reply = 5;
  r.connect_failures = 1;
  r.acked = {3, 0, 7};
  r.unknown = {0, 5, 0};
  r.ok_latency_us = {10, 20, 4'000'000'000u};
  r.reply_latency_us = {11};
  r.requests = {{0xabcdef0123ull, 2, 0}, {7, 1, kNoReplyOutcome}};
  r.client_threads = {{41, "client-0", {0.25, 0.5, true}}, {42, "", {1.0, 0, false}}};
  const std::string bytes = SerializeFleetResult(r);
  const std::optional<FleetResult> back = ParseFleetResult(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->seconds, 1.5);
  EXPECT_TRUE(back->open_loop);
  EXPECT_EQ(back->offered_rate, 400);
  EXPECT_EQ(back->arrivals, 601);
  EXPECT_EQ(back->unsent, 2);
  EXPECT_EQ(back->max_backlog, 9);
  EXPECT_EQ(back->sent, 599);
  EXPECT_EQ(back->replies, r.replies);
  EXPECT_EQ(back->no_reply, 5);
  EXPECT_EQ(back->connect_failures, 1);
  EXPECT_EQ(back->acked, r.acked);
  EXPECT_EQ(back->unknown, r.unknown);
  EXPECT_EQ(back->ok_latency_us, r.ok_latency_us);
  EXPECT_EQ(back->reply_latency_us, r.reply_latency_us);
  ASSERT_EQ(back->requests.size(), 2u);
  EXPECT_EQ(back->requests[0].request_id, 0xabcdef0123ull);
  EXPECT_EQ(back->requests[0].user, 2u);
  EXPECT_EQ(back->requests[1].outcome, kNoReplyOutcome);
  ASSERT_EQ(back->client_threads.size(), 2u);
  EXPECT_EQ(back->client_threads[0].tid, 41);
  EXPECT_EQ(back->client_threads[0].name, "client-0");
  EXPECT_EQ(back->client_threads[0].times.runqueue_wait_seconds, 0.5);
  EXPECT_EQ(back->client_threads[1].name, "");
  EXPECT_FALSE(back->client_threads[1].times.runqueue_wait_known);
  // A cut or padded message is refused, not half read.
  EXPECT_FALSE(ParseFleetResult(bytes.substr(0, bytes.size() - 1)).has_value());
  EXPECT_FALSE(ParseFleetResult(bytes + "x").has_value());
  EXPECT_FALSE(ParseFleetResult("").has_value());
}

TEST(FleetProcessTest, TheRunPassesWithTheFleetInAChild) {
  if (fairsched::testing::kSanitized) {
    // fleet_process.h: the sanitizers' allocators are not fork-safe in a multi-threaded
    // process (GCC 12's ASan child can deadlock; TSan refuses threads after such a fork).
    GTEST_SKIP() << "the fleet process needs a plain build";
  }
  SavegameOptions o;
  o.users = 40;
  o.connections = 8;
  o.duration = 1s;
  o.step_timeout = 5s;
  o.fleet_in_child = true;
  for (Design design : {Design::kFairsched, Design::kUpdater}) {
    const DesignReport r = RunDesign(design, o);
    EXPECT_TRUE(r.check.passed) << ToString(design) << ": " << r.check.message;
    EXPECT_GT(r.fleet.ok(), 0);
    EXPECT_EQ(r.fleet.ok(), r.fleet.sent);
    EXPECT_EQ(r.fleet.client_threads.size(), 2u);
    // The job's process holds one end of each connection.
    EXPECT_EQ(r.file_limit.needed, 8u + 2 * 8 + 256);
    double client_cpu = 0;
    for (const ThreadUsage& t : r.threads) {
      if (t.role == "client") client_cpu += t.times.cpu_seconds;
    }
    EXPECT_GT(client_cpu, 0) << ToString(design);
  }
}

}  // namespace
}  // namespace fairsched::savegame
