// The savegame job with several server processes (`--server_processes=N`,
// examples/savegame/server_processes.h): short runs with N = 2 children of
// //examples:savegame on the embedded store and on Redis, both designs, with and without
// injected faults. The exactly-once check must pass across the processes, whose profile
// locks are their own: with few users two processes do save one user at once, and the
// store's compare-and-set refuses the second (kConflict, nothing applied). Also a Redis
// restart under two processes, a child that cannot start (reported and reaped), and no
// child outlives a run.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>

#include "examples/redis/redis_server_process.h"
#include "examples/savegame/protocol.h"
#include "examples/savegame/savegame.h"
#include "examples/savegame/server_processes.h"
#include "tests/stress.h"

namespace fairsched::savegame {
namespace {

using namespace std::chrono_literals;

// The savegame binary in the test's runfiles (a data dependency).
std::string SavegameBinary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "";
  return std::string(srcdir) + "/" + workspace + "/examples/savegame";
}

// No child of this process is left (running or unreaped).
bool NoChildren() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

SavegameOptions ProcessesRun(bool faults, bool redis) {
  SavegameOptions o;
  o.server_processes = 2;
  o.server_binary = SavegameBinary();
  o.redis = redis;
  o.workers = 1;  // per process
  o.users = 40;
  o.connections = fairsched::testing::kSanitized ? 8 : 24;
  o.client_threads = 2;
  o.duration = 1200ms;
  o.cpu_cost = 10us;
  if (faults) {
    o.fault = 0.05;
    o.step_timeout = 200ms;
    o.fault_delay = 400ms;
  } else {
    o.step_timeout = 2s;
  }
  return o;
}

std::int64_t Count(const DesignReport& r, SaveStatus s) {
  return r.fleet.replies[static_cast<int>(s)];
}

void ExpectPassedAcrossProcesses(const SavegameOptions& options, const DesignReport& r) {
  EXPECT_TRUE(r.check.passed) << r.check.message;
  EXPECT_EQ(r.check.users_checked, options.users);
  EXPECT_EQ(r.check.acknowledged, r.fleet.ok());
  EXPECT_GT(r.fleet.ok(), 0);
  EXPECT_EQ(r.fleet.connect_failures, 0);
  EXPECT_EQ(r.fleet.no_reply, 0);
  EXPECT_EQ(r.check.conflicts, Count(r, SaveStatus::kConflict));
  // Both processes served: each reported its statistics and spent CPU on requests.
  ASSERT_EQ(r.worker_cpu_seconds.size(), 2u);
  EXPECT_GT(r.worker_cpu_seconds[0], 0);
  EXPECT_GT(r.worker_cpu_seconds[1], 0);
  EXPECT_TRUE(NoChildren()) << "every server process was reaped";
}

class SavegameProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(SavegameBinary().empty()) << "TEST_SRCDIR / TEST_WORKSPACE not set";
  }
};

TEST_F(SavegameProcessesTest, EmbeddedStoreBothDesignsWithoutFaults) {
  const SavegameOptions options = ProcessesRun(false, false);
  for (Design design : {Design::kFairsched, Design::kUpdater}) {
    SCOPED_TRACE(ToString(design));
    const DesignReport r = RunDesign(design, options);
    ExpectPassedAcrossProcesses(options, r);
    EXPECT_EQ(r.check.unknown, 0);
    EXPECT_EQ(r.fenced_uploads, 0);
    const std::string json = RunRecordJson(options, r);
    EXPECT_NE(json.find("\"server_processes\":2"), std::string::npos) << json;
    EXPECT_NE(json.find("\"server_process_cpu_seconds\""), std::string::npos);
  }
}

TEST_F(SavegameProcessesTest, EmbeddedStoreWithFaults) {
  const SavegameOptions options = ProcessesRun(true, false);
  const DesignReport r = RunDesign(Design::kFairsched, options);
  ExpectPassedAcrossProcesses(options, r);
  EXPECT_GT(r.faults_injected, 0);
  EXPECT_GT(r.fenced_uploads, 0) << "the children fenced the uploads whose answers were lost";
}

// Few users, many connections: the two processes' saves of one user overlap, and only the
// store's compare-and-set keeps them apart. The check still proves exactly-once.
TEST_F(SavegameProcessesTest, OverlappingSavesAcrossProcessesAreRefusedByTheStore) {
  SavegameOptions options = ProcessesRun(false, false);
  options.users = 2;
  options.connections = 16;
  const DesignReport r = RunDesign(Design::kFairsched, options);
  ExpectPassedAcrossProcesses(options, r);
  EXPECT_GT(Count(r, SaveStatus::kConflict), 0) << "no cross-process overlap was seen";
}

// What conflicts_allowed changes in the check, on a hand-made run: a refused upload is
// accepted only with several processes, and one that was applied still fails the check.
TEST(SavegameProcessesCheckTest, ConflictsAllowedOnlyWhenNothingWasApplied) {
  CheckInput input;
  input.users = 1;
  const auto status = [](SaveStatus s) { return static_cast<std::uint8_t>(s); };
  input.requests = {{1, 0, status(SaveStatus::kOk)}, {2, 0, status(SaveStatus::kConflict)}};
  input.applied = {{0, 1}};
  input.counters = {1};
  EXPECT_FALSE(CheckSaves(input).passed) << "one process: its lock must exclude";
  input.conflicts_allowed = true;
  EXPECT_TRUE(CheckSaves(input).passed) << CheckSaves(input).message;
  input.applied.push_back({0, 2});
  input.counters = {2};
  const CheckResult applied_conflict = CheckSaves(input);
  EXPECT_FALSE(applied_conflict.passed);
  EXPECT_NE(applied_conflict.message.find("was applied but its reply said"), std::string::npos)
      << applied_conflict.message;
}

TEST_F(SavegameProcessesTest, RedisBothDesignsWithAndWithoutFaults) {
  if (redis::FindRedisServer().empty()) GTEST_SKIP() << redis::MissingMessage();
  for (bool faults : {false, true}) {
    const SavegameOptions options = ProcessesRun(faults, true);
    for (Design design : {Design::kFairsched, Design::kUpdater}) {
      SCOPED_TRACE(std::string(ToString(design)) + (faults ? " with faults" : ""));
      const DesignReport r = RunDesign(design, options);
      ExpectPassedAcrossProcesses(options, r);
      if (faults) {
        EXPECT_GT(r.faults_injected, 0) << "counted by the children's Redis clients";
        EXPECT_GT(r.fenced_uploads, 0);
      } else {
        EXPECT_EQ(r.check.unknown, 0);
        EXPECT_EQ(r.faults_injected, 0);
      }
    }
  }
}

// Redis killed and restarted under two processes (both designs): every acknowledged save
// survives, every unsettled request is accounted for.
TEST_F(SavegameProcessesTest, RedisRestartUnderTwoProcesses) {
  if (redis::FindRedisServer().empty()) GTEST_SKIP() << redis::MissingMessage();
  SavegameOptions options = ProcessesRun(false, true);
  options.duration = 2s;
  options.step_timeout = 200ms;
  options.redis_restart_at = 800ms;
  for (Design design : {Design::kFairsched, Design::kUpdater}) {
    SCOPED_TRACE(ToString(design));
    const DesignReport r = RunDesign(design, options);
    ASSERT_TRUE(r.redis_restarted);
    EXPECT_TRUE(r.check.passed) << r.check.message;
    EXPECT_GT(r.fleet.ok(), 0);
    EXPECT_EQ(r.fleet.connect_failures, 0);
    EXPECT_EQ(r.unsettled_applied + r.unsettled_not_applied, r.check.unknown);
    EXPECT_TRUE(NoChildren());
  }
}

TEST_F(SavegameProcessesTest, AChildThatCannotStartIsReportedAndReaped) {
  ServerProcesses processes;
  std::string error;
  EXPECT_FALSE(processes.Start("/bin/false", {}, 2, 5000ms, &error));
  EXPECT_NE(error.find("did not report its address"), std::string::npos) << error;
  EXPECT_TRUE(NoChildren());
  // A child that never answers is killed at the start timeout.
  EXPECT_FALSE(processes.Start("/bin/sleep", {"30"}, 1, 300ms, &error));
  EXPECT_TRUE(NoChildren());
}

}  // namespace
}  // namespace fairsched::savegame
