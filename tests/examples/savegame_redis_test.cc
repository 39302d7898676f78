// The savegame job on Redis (examples/savegame/redis_store.h; `--store=redis`): short runs of
// the fairsched design, and of the Updater baseline on the same keys and Lua compare-and-set,
// against a private redis-server (examples/redis/redis_server_process.h), without and with
// injected faults (our Redis client drops or delays answers after Redis applied them), and
// with a planted bug. The exactly-once check reads the counters and the applied-request log
// back from Redis: it must pass on the honest runs (with faults: uploads fenced, none
// unknown) and fail, with the bug's own message, on the planted one. Also a run on a Redis
// given by address, whose keys are then inspected directly. Skips with the line that says
// what to install only when redis-server is not installed.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include "coro/runtime.h"
#include "examples/redis/redis_client.h"
#include "examples/redis/redis_server_process.h"
#include "examples/savegame/protocol.h"
#include "examples/savegame/redis_store.h"
#include "examples/savegame/savegame.h"
#include "examples/savegame/updater_server.h"
#include "io/epoll_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::savegame {
namespace {

using namespace std::chrono_literals;

SavegameOptions RedisRun(bool faults) {
  SavegameOptions o;
  o.redis = true;
  o.workers = 2;
  o.users = 40;  // few users: the profile locks are contended
  o.connections = fairsched::testing::kSanitized ? 8 : 24;
  o.client_threads = 2;
  o.duration = 1500ms;
  o.cpu_cost = 10us;
  if (faults) {
    o.fault = 0.05;
    o.step_timeout = 200ms;
    o.fault_delay = 400ms;  // longer than a step: a delayed answer is a timeout
  } else {
    o.step_timeout = 2s;  // generous: without faults nothing may fail, even under TSan
  }
  return o;
}

class SavegameRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (redis::FindRedisServer().empty()) GTEST_SKIP() << redis::MissingMessage();
  }
};

std::int64_t Count(const DesignReport& r, SaveStatus s) {
  return r.fleet.replies[static_cast<int>(s)];
}

void ExpectHonestRun(const SavegameOptions& options, const DesignReport& r) {
  EXPECT_TRUE(r.check.passed) << r.check.message;
  EXPECT_EQ(r.check.users_checked, options.users);
  EXPECT_EQ(r.check.acknowledged, r.fleet.ok());
  EXPECT_GE(r.check.applied, r.fleet.ok());
  EXPECT_GT(r.fleet.ok(), 0);
  EXPECT_EQ(r.fleet.connect_failures, 0);
  EXPECT_EQ(r.fleet.no_reply, 0);
  EXPECT_EQ(Count(r, SaveStatus::kUnknown), 0) << "every unknown upload was settled by a fence";
  EXPECT_EQ(Count(r, SaveStatus::kConflict), 0);
  EXPECT_EQ(Count(r, SaveStatus::kStoreUnavailable), 0);
}

// A run of `design` with no fault: every save acknowledged and applied, none fenced.
DesignReport ExpectFaultFreeRun(Design design) {
  const SavegameOptions options = RedisRun(false);
  const DesignReport r = RunDesign(design, options);
  ExpectHonestRun(options, r);
  EXPECT_EQ(r.check.applied, r.fleet.ok()) << "no fault: every applied save was acknowledged";
  EXPECT_EQ(r.faults_injected, 0);
  EXPECT_EQ(r.fenced_uploads, 0);
  std::int64_t failed = 0;
  for (int s = 1; s < kSaveStatusCount; ++s) failed += r.fleet.replies[s];
  EXPECT_EQ(failed, 0);
  return r;
}

TEST_F(SavegameRedisTest, ExactlyOnceWithoutFaults) { ExpectFaultFreeRun(Design::kFairsched); }

TEST_F(SavegameRedisTest, ExactlyOnceWithDroppedAndDelayedAnswers) {
  const SavegameOptions options = RedisRun(true);
  const DesignReport r = RunDesign(Design::kFairsched, options);
  ExpectHonestRun(options, r);
  EXPECT_GT(r.faults_injected, 0);
  EXPECT_GT(r.fenced_uploads, 0) << "some upload answers were lost and fenced";
  EXPECT_GT(Count(r, SaveStatus::kUploadNotApplied) + Count(r, SaveStatus::kDownloadFailed), 0);
}

TEST_F(SavegameRedisTest, PlantedBugIsCaughtFromRedisLog) {
  SavegameOptions options = RedisRun(false);
  options.duration = 800ms;
  options.seeded_bug = SeededBug::kUploadTwice;
  const DesignReport r = RunDesign(Design::kFairsched, options);
  EXPECT_FALSE(r.check.passed);
  EXPECT_NE(r.check.message.find("was applied twice"), std::string::npos) << r.check.message;
}

// The options of a run of `design` in which Redis is killed (SIGKILL) 800 ms in and restarted
// on the same AOF, and its report, checked: every acknowledged save is in Redis's log after
// the restart (else "acknowledged but never applied"), none twice, every counter matches
// the log, and the requests the restart left unsettled were each found applied or not.
std::pair<SavegameOptions, DesignReport> ExpectSavesSurviveARestart(Design design) {
  SavegameOptions options = RedisRun(false);
  options.duration = 2s;
  options.step_timeout = 200ms;
  options.redis_restart_at = 800ms;
  DesignReport r = RunDesign(design, options);
  EXPECT_TRUE(r.redis_restarted);
  EXPECT_TRUE(r.check.passed) << r.check.message;
  EXPECT_GT(r.fleet.ok(), 0);
  EXPECT_EQ(r.fleet.connect_failures, 0);
  EXPECT_EQ(Count(r, SaveStatus::kConflict), 0);
  EXPECT_EQ(r.unsettled_applied + r.unsettled_not_applied, r.check.unknown);
  return {options, std::move(r)};
}

TEST_F(SavegameRedisTest, AcknowledgedSavesSurviveAKillAndRestartOfRedis) {
  const auto [options, r] = ExpectSavesSurviveARestart(Design::kFairsched);
  // The run record says so too.
  const std::string json = RunRecordJson(options, r);
  EXPECT_NE(json.find("\"redis_restart\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"unsettled_not_applied\""), std::string::npos);
  EXPECT_NE(json.find("\"redis\""), std::string::npos) << "store: redis";
}

// A restart due after the load is over (here: a run shorter than redis_restart_at; in CI a
// restarter thread not scheduled for a second on a loaded machine did the same) still comes
// before the check, which then reads the restarted Redis, and the report says it came late.
TEST_F(SavegameRedisTest, ARestartDueAfterTheLoadStillComesBeforeTheCheck) {
  SavegameOptions options = RedisRun(false);
  options.duration = 300ms;
  options.redis_restart_at = 900ms;
  const DesignReport r = RunDesign(Design::kFairsched, options);
  EXPECT_TRUE(r.redis_restarted);
  EXPECT_TRUE(r.redis_restart_after_load);
  EXPECT_TRUE(r.check.passed) << r.check.message;
  EXPECT_GT(r.fleet.ok(), 0);
  EXPECT_NE(RunRecordJson(options, r).find("\"after_load\":1"), std::string::npos);
}

// The Updater baseline on the same Redis (updater_server.h, UpdaterRedis): the same keys,
// the same Lua compare-and-set and applied log, the same fence, so the same check.
TEST_F(SavegameRedisTest, UpdaterExactlyOnceWithoutFaults) {
  const DesignReport r = ExpectFaultFreeRun(Design::kUpdater);
  EXPECT_NE(RunRecordJson(RedisRun(false), r).find("\"design\":\"updater\""),
            std::string::npos);
}

TEST_F(SavegameRedisTest, UpdaterExactlyOnceWithDroppedAndDelayedAnswers) {
  const SavegameOptions options = RedisRun(true);  // a delayed answer is lost too
  const DesignReport r = RunDesign(Design::kUpdater, options);
  ExpectHonestRun(options, r);
  EXPECT_GT(r.faults_injected, 0);
  EXPECT_GT(r.fenced_uploads, 0) << "some upload answers were lost and fenced";
  EXPECT_GT(Count(r, SaveStatus::kUploadNotApplied) + Count(r, SaveStatus::kDownloadFailed), 0);
}

TEST_F(SavegameRedisTest, UpdaterDelayedAnswersWithinTheDeadlineAreUsed) {
  SavegameOptions options = RedisRun(true);
  options.fault = 0.2;
  options.fault_delay = 10ms;  // well within the step deadline: held, then used
  options.step_timeout = 2s;
  const DesignReport r = RunDesign(Design::kUpdater, options);
  ExpectHonestRun(options, r);
  EXPECT_GT(r.faults_injected, 0);
  // Half the faults drop the answer: the call waits for its (long) deadline, so some still
  // fail; the delayed half arrives and is used.
  EXPECT_GT(r.fleet.ok(), r.faults_injected);
}

TEST_F(SavegameRedisTest, UpdaterAcknowledgedSavesSurviveAKillAndRestartOfRedis) {
  ExpectSavesSurviveARestart(Design::kUpdater);
}

using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, EpollBackend>;

coro::Lazy<IoResult<redis::Reply>> Keys(Sched* sched, SocketAddress address, std::string pattern) {
  IoResult<redis::RedisConnection<Sched>> c = co_await redis::RedisConnection<Sched>::Connect(
      *sched, address, coro::DeadlineAfter(std::chrono::seconds(2)));
  if (!c.ok()) co_return c.error();
  redis::Command keys = {"KEYS", std::move(pattern)};
  co_return co_await c.value().Call(std::move(keys), coro::DeadlineAfter(std::chrono::seconds(2)));
}

// One save through the Updater on Redis with every answer faulted (fault 1.0), the kind of
// each fault fixed by the seed: the download's, the upload's and the fence's answers are
// the server's draws 0, 1, 2 (DrawRedisFault). Returns the reply (kNoReplyOutcome as
// kUnknown if none came in 10 s) and the server's counters. `unknown_script`: the Updater
// is given a SHA1 Redis does not know, as after a restart emptied its script cache.
struct OneSave {
  SaveStatus status = SaveStatus::kUnknown;
  std::int64_t fenced = 0;
  std::int64_t faults = 0;
  std::chrono::nanoseconds took{0};
};

std::uint64_t SeedWhoseDrawsAre(std::vector<RedisFault> kinds) {
  for (std::uint64_t seed = 1;; ++seed) {
    bool all = true;
    for (std::size_t n = 0; n < kinds.size() && all; ++n) {
      all = DrawRedisFault(1.0, seed, n) == kinds[n];
    }
    if (all) return seed;
  }
}

OneSave OneUpdaterSave(const SocketAddress& redis_address, std::uint64_t seed,
                       std::chrono::nanoseconds step_timeout, bool unknown_script = false) {
  RedisStoreOptions store_options;
  store_options.key_prefix = "onesave:" + std::to_string(seed) + ":";
  UpdaterRedis redis;
  redis.address = redis_address;
  redis.key_prefix = store_options.key_prefix;
  redis.fault = 1.0;
  redis.fault_delay = 20ms;
  redis.seed = seed;
  {
    Sched sched;
    sched.Start(1);
    RedisStore<Sched> loader(sched, redis_address, store_options);
    EXPECT_TRUE(coro::Spawn(sched, loader.Prepare(coro::DeadlineAfter(2s))).Get().ok());
    redis.script_sha = unknown_script ? std::string(40, '0') : loader.script_sha();
    loader.Stop();
    sched.Stop();
  }
  UpdaterOptions options;
  options.threads = 1;
  options.tick = 1ms;
  options.server.users = 4;
  options.server.step_timeout = step_timeout;
  UpdaterServer server(options, redis);
  IoResult<SocketAddress> address =
      server.Start(SocketAddress::FromHostPort("127.0.0.1", 0).value());
  EXPECT_TRUE(address.ok());
  OneSave result;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval ten_seconds{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten_seconds, sizeof(ten_seconds));
  EXPECT_EQ(::connect(fd, address.value().get(), address.value().length()), 0);
  std::string request;
  AppendSaveRequest({(std::uint64_t{1} << 32) | 1, 0}, &request);
  const auto began = std::chrono::steady_clock::now();
  EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  FrameBuffer in;
  while (true) {
    if (std::optional<std::string_view> body = in.NextFrame()) {
      std::optional<SaveReply> reply = ParseSaveReply(*body);
      if (reply) result.status = reply->status;
      break;
    }
    std::span<char> tail = in.WritableTail();
    const ssize_t n = ::recv(fd, tail.data(), tail.size(), 0);
    if (n <= 0) break;
    in.Commit(static_cast<std::size_t>(n));
  }
  result.took = std::chrono::steady_clock::now() - began;
  ::close(fd);
  server.Stop();
  result.fenced = server.fenced_uploads();
  result.faults = server.faults_injected();
  return result;
}

class UpdaterOnRedisFaultTest : public SavegameRedisTest {
 protected:
  void SetUp() override {
    SavegameRedisTest::SetUp();
    if (IsSkipped()) return;
    const char* base = std::getenv("TEST_TMPDIR");
    dir_ = std::string(base != nullptr ? base : "/tmp") + "/redis.XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    std::string error;
    ASSERT_TRUE(server_.Start(dir_, &error)) << error;
  }
  void TearDown() override { server_.Stop(); }
  std::string dir_;
  redis::RedisServerProcess server_;
};

TEST_F(UpdaterOnRedisFaultTest, DelayedAnswersWithinTheStepAreUsed) {
  const OneSave save = OneUpdaterSave(
      server_.address(), SeedWhoseDrawsAre({RedisFault::kDelay, RedisFault::kDelay}), 2s);
  EXPECT_EQ(save.status, SaveStatus::kOk) << ToString(save.status);
  EXPECT_EQ(save.faults, 2);
  EXPECT_EQ(save.fenced, 0) << "the delayed upload answer was used, not fenced";
  EXPECT_LT(save.took, 1s) << "held for the delay, not until the step deadline";
}

TEST_F(UpdaterOnRedisFaultTest, ADroppedDownloadAnswerFailsTheSaveAtTheDeadline) {
  const OneSave save =
      OneUpdaterSave(server_.address(), SeedWhoseDrawsAre({RedisFault::kDrop}), 150ms);
  EXPECT_EQ(save.status, SaveStatus::kDownloadFailed) << ToString(save.status);
  EXPECT_EQ(save.faults, 1);
  EXPECT_GE(save.took, 150ms);
}

TEST_F(UpdaterOnRedisFaultTest, ADroppedUploadAnswerIsFencedAndFoundApplied) {
  const OneSave save = OneUpdaterSave(
      server_.address(),
      SeedWhoseDrawsAre({RedisFault::kDelay, RedisFault::kDrop, RedisFault::kDelay}), 300ms);
  // The fence (draw 2, delayed within its step) is refused: the version moved on, and the
  // blob names this request, so the upload applied.
  EXPECT_EQ(save.status, SaveStatus::kOk) << ToString(save.status);
  EXPECT_EQ(save.fenced, 1);
  EXPECT_EQ(save.faults, 3);
}

TEST_F(UpdaterOnRedisFaultTest, NoScriptSendsTheWholeScriptOnce) {
  const OneSave save = OneUpdaterSave(
      server_.address(), SeedWhoseDrawsAre({RedisFault::kDelay, RedisFault::kDelay}), 2s,
      /*unknown_script=*/true);
  EXPECT_EQ(save.status, SaveStatus::kOk) << ToString(save.status);
  EXPECT_EQ(save.fenced, 0) << "NOSCRIPT ran nothing: the EVAL is the upload, not a fence";
  EXPECT_EQ(save.faults, 2) << "the NOSCRIPT refusal is not an answer the faults draw on";
}

TEST_F(SavegameRedisTest, RunsOnARedisGivenByAddressUnderItsOwnKeys) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(base != nullptr ? base : "/tmp") + "/redis.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  redis::RedisServerProcess server;
  std::string error;
  ASSERT_TRUE(server.Start(dir, &error)) << error;
  SavegameOptions options = RedisRun(false);
  options.duration = 800ms;
  options.redis_address = server.address().ToString();
  const DesignReport r = RunDesign(Design::kFairsched, options);
  ExpectHonestRun(options, r);
  // The run's keys: a blob hash and an applied list per user that saved, under one prefix.
  Sched sched;
  sched.Start(1);
  IoResult<redis::Reply> blobs =
      coro::Spawn(sched, Keys(&sched, server.address(), "savegame:*:blob")).Get();
  IoResult<redis::Reply> logs =
      coro::Spawn(sched, Keys(&sched, server.address(), "savegame:*:applied")).Get();
  sched.Stop();
  ASSERT_TRUE(blobs.ok() && logs.ok());
  EXPECT_EQ(blobs.value().elements.size(), static_cast<std::size_t>(options.users));
  EXPECT_EQ(logs.value().elements.size(), static_cast<std::size_t>(options.users));
  ASSERT_FALSE(blobs.value().elements.empty());
  EXPECT_EQ(blobs.value().elements[0].text.rfind("savegame:", 0), 0u);
  server.Stop();
}

}  // namespace
}  // namespace fairsched::savegame
