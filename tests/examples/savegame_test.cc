// Tests for //examples:savegame_lib: short runs of the whole savegame service (blob store,
// server, client fleet over loopback TCP) for both designs, with and without injected store
// faults. Each asserts the exactly-once check (every user's counter in the store equals its
// acknowledged saves), that saves completed, and that every request got an answer.
#include "examples/savegame/savegame.h"

#include <gtest/gtest.h>

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
  EXPECT_TRUE(r.check_passed) << r.check_message;
  EXPECT_EQ(r.users_checked, options.users);
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
                                           Case{Design::kUpdater, BackendKind::kEpoll, true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(ToString(info.param.design)) +
                                  (info.param.backend == BackendKind::kIoUring ? "_io_uring"
                                                                               : "_epoll") +
                                  (info.param.faults ? "_faults" : "_clean");
                         });

}  // namespace
}  // namespace fairsched::savegame
