// Tests for //examples:savegame_lib: short runs of the whole savegame service (blob store,
// server, client fleet over loopback TCP) for both designs, with and without injected store
// faults, closed and open loop. Each asserts the exactly-once check (check.h: the set of
// saves the store applied is the acknowledged set), that saves completed, that every
// request got an answer, and that the per-thread times cover server, store and clients.
#include "examples/savegame/savegame.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "examples/savegame/protocol.h"
#include "tests/stress.h"

namespace fairsched::savegame {
namespace {

using namespace std::chrono_literals;

struct Case {
  Design design;
  BackendKind backend;
  bool faults;
  double rate = 0;  // open loop when > 0
};

SavegameOptions ShortRun(const Case& c) {
  SavegameOptions o;
  o.workers = 2;
  o.users = 40;  // few users: the profile locks are contended
  o.connections = fairsched::testing::kSanitized ? 8 : 24;
  o.client_threads = 2;
  o.duration = 1500ms;
  o.blob_latency = 200us;
  o.cpu_cost = 10us;
  o.updater_tick = 2ms;
  o.rate = c.rate;
  if (c.faults) {
    o.fault = 0.05;
    o.step_timeout = 200ms;
    o.fault_delay = 400ms;  // longer than a step: a delayed answer is a timeout
  } else {
    o.step_timeout = 2s;  // generous: without faults nothing may fail, even under TSan
  }
  return o;
}

class SavegameTest : public ::testing::TestWithParam<Case> {};

TEST_P(SavegameTest, EveryAcknowledgedSaveAppliedExactlyOnce) {
  const Case c = GetParam();
  const SavegameOptions options = ShortRun(c);
  const DesignReport r = RunDesign(c.design, options);
  EXPECT_TRUE(r.check.passed) << r.check.message;
  EXPECT_EQ(r.check.users_checked, options.users);
  EXPECT_EQ(r.check.acknowledged, r.fleet.ok());
  EXPECT_GE(r.check.applied, r.fleet.ok());
  EXPECT_GT(r.fleet.ok(), 0);
  EXPECT_EQ(r.fleet.connect_failures, 0);
  EXPECT_EQ(r.fleet.no_reply, 0);  // every request was answered
  const auto count = [&](SaveStatus s) { return r.fleet.replies[static_cast<int>(s)]; };
  EXPECT_EQ(count(SaveStatus::kUnknown), 0);   // every unknown upload was settled by a fence
  EXPECT_EQ(count(SaveStatus::kConflict), 0);  // the profile lock serialises each user
  EXPECT_EQ(count(SaveStatus::kBadRequest), 0);
  std::int64_t answered = r.fleet.no_reply;
  for (std::int64_t n : r.fleet.replies) answered += n;
  EXPECT_EQ(answered, r.fleet.sent);
  EXPECT_EQ(r.worker_cpu_seconds.size(), 2u);
  for (const char* role : {"server", "store", "client"}) {
    double cpu = 0;
    for (const ThreadUsage& t : r.threads) cpu += t.role == role ? t.times.cpu_seconds : 0;
    EXPECT_GT(cpu, 0) << role;
  }
  EXPECT_EQ(r.fleet.open_loop, c.rate > 0);
  EXPECT_EQ(r.fleet.unsent, 0);
  if (c.rate > 0) {
    // Poisson arrivals: the count is within 5 standard deviations of rate * duration.
    const double expected = c.rate * 1.5;
    EXPECT_NEAR(static_cast<double>(r.fleet.arrivals), expected, 5 * std::sqrt(expected));
    EXPECT_EQ(r.fleet.sent, r.fleet.arrivals);
  }
  if (c.faults) {
    EXPECT_GT(r.faults_injected, 0);
    // Faults turn into clean failures (and some into saves settled by the fence).
    EXPECT_GT(count(SaveStatus::kDownloadFailed) + count(SaveStatus::kUploadNotApplied), 0);
    EXPECT_GT(r.fenced_uploads, 0);  // lost upload answers were settled, not guessed
  } else {
    EXPECT_EQ(r.faults_injected, 0);
    EXPECT_EQ(r.fenced_uploads, 0);
    EXPECT_EQ(r.fleet.ok(), r.fleet.sent) << "a save failed without faults";
  }
}

INSTANTIATE_TEST_SUITE_P(Designs, SavegameTest,
                         ::testing::Values(Case{Design::kFairsched, BackendKind::kEpoll, false},
                                           Case{Design::kFairsched, BackendKind::kEpoll, true},
                                           Case{Design::kFairsched, BackendKind::kIoUring, true},
                                           Case{Design::kUpdater, BackendKind::kEpoll, false},
                                           Case{Design::kUpdater, BackendKind::kEpoll, true},
                                           Case{Design::kFairsched, BackendKind::kEpoll, false, 400},
                                           Case{Design::kUpdater, BackendKind::kEpoll, false, 400}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(ToString(info.param.design)) +
                                  (info.param.backend == BackendKind::kIoUring ? "_io_uring"
                                                                               : "_epoll") +
                                  (info.param.faults ? "_faults" : "_clean") +
                                  (info.param.rate > 0 ? "_open_loop" : "");
                         });

}  // namespace
}  // namespace fairsched::savegame
