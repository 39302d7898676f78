// The savegame server, "Updater" design: the baseline the talk replaced. No coroutines, no
// scheduler, no readiness notification. A fixed set of threads; every client connection and
// every request ("job") is pinned round-robin to one of them for its whole life (no
// migration). Each thread runs a periodic update: every `tick` it accepts new connections
// (thread 0), reads requests from its connections, and walks its job list, advancing each
// job's state machine as far as it can with non-blocking calls (try-lock the profile,
// non-blocking connect/send/recv to the blob store, send the reply). A job that cannot
// progress waits for the next tick. Then the thread sleeps until the next tick.
//
// When a new job starts (UpdaterStart): by default (kSameTick, the fair Updater) a thread
// takes the jobs pinned to it after reading its connections and right before its walk, so
// every job that was read before a walk begins is in that walk: a job read by this thread
// starts in the tick it arrived. kNextTick is the earlier order (take the pinned jobs, then
// read): a job a thread reads for itself waits a whole tick before its first step.
//
// Same protocol, same steps, same per-step deadlines and the same fence as the fairsched
// design (protocol.h, fairsched_server.h), so both answer with the same SaveStatus values
// and the same exactly-once guarantee. Not supported: pipelined requests on one client
// connection (the fleet never pipelines).
//
// The store is the embedded one (blob_store.h, its binary protocol) or Redis (UpdaterRedis):
// the same keys and the same Lua compare-and-set as the fairsched design's RedisStore
// (redis_store.h: RedisStoreCommand, DecodeRedisStoreReply), sent and read with the same
// non-blocking calls (RESP, resp.h), one command per store connection at a time. Redis's
// refusals that ran nothing are answered as RedisStore answers them: NOSCRIPT by sending
// the whole script at once, LOADING (a restarted Redis) by sending again in the next tick,
// within the step deadline. Faults (`fault`) are injected as RedisStore injects them, after
// Redis answered (DrawRedisFault): a dropped answer is kept from the job until its step
// deadline (then the call failed: a download fails, an upload is fenced), a delayed one for
// `fault_delay` (lost the same way if the deadline comes first). The Updater sees a held
// answer at its next tick, as it sees everything.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_UPDATER_SERVER_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_UPDATER_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "examples/savegame/fairsched_server.h"
#include "examples/savegame/protocol.h"
#include "io/tcp.h"
#include "sync/primitives.h"

namespace fairsched::savegame {

enum class UpdaterStart { kSameTick, kNextTick };

struct UpdaterOptions {
  ServerOptions server;
  int threads = 2;
  std::chrono::nanoseconds tick = std::chrono::milliseconds(5);
  UpdaterStart start = UpdaterStart::kSameTick;
};

// The Updater's Redis store: where it is, the run's key prefix (redis_store.h's keys), the
// SHA1 of kCasScript as loaded by RedisStore::Prepare, and the fault injection.
struct UpdaterRedis {
  SocketAddress address;
  std::string key_prefix;
  std::string script_sha;
  double fault = 0;
  std::chrono::nanoseconds fault_delay = std::chrono::milliseconds(300);
  std::uint64_t seed = 1;
};

class UpdaterServer {
 public:
  // On the embedded store at `store`.
  UpdaterServer(UpdaterOptions options, SocketAddress store);
  // On Redis.
  UpdaterServer(UpdaterOptions options, UpdaterRedis redis);
  ~UpdaterServer();
  UpdaterServer(const UpdaterServer&) = delete;
  UpdaterServer& operator=(const UpdaterServer&) = delete;

  // Listens on `address` and starts the threads (named "updater-<i>").
  IoResult<SocketAddress> Start(const SocketAddress& address);
  // Stops the threads and closes every socket. Idempotent.
  void Stop();
  // Uploads whose answer was lost and that a fence settled (or tried to).
  std::int64_t fenced_uploads() const { return fenced_uploads_.load(std::memory_order_relaxed); }
  // Jobs that were read before some walk of their thread began and yet were not in that
  // walk: each of them waited a tick before its first step. With kSameTick only a job
  // pinned by another thread in the instant between TakeJobs and the walk can count; with
  // kNextTick every job a thread reads for itself does.
  std::int64_t jobs_started_late() const {
    return jobs_started_late_.load(std::memory_order_relaxed);
  }
  // On Redis: answers dropped or delayed by the fault injection.
  std::int64_t faults_injected() const { return faults_.load(std::memory_order_relaxed); }

 private:
  struct ClientConnection;
  struct StoreConnection;
  struct Job;
  struct Worker;
  using Clock = std::chrono::steady_clock;

  void WorkerMain(int index);
  // Move the connections / the jobs pinned to `worker` into its own lists.
  void TakeConnections(Worker& worker);
  void TakeJobs(Worker& worker);
  void AcceptAll();
  // Reads requests from `client`; false when the connection ended.
  bool ReadRequests(const std::shared_ptr<ClientConnection>& client);
  void Pin(std::unique_ptr<Job> job);
  // Advances `job` as far as it can without blocking; true when it is finished.
  bool Advance(Worker& worker, Job& job);
  void StartCall(Worker& worker, Job& job, StoreOp op, std::uint64_t version,
                 std::string_view blob);
  void CallFailed(Worker& worker, Job& job, SaveStatus io_status);
  void CallAnswered(Worker& worker, Job& job, const StoreResponse& response);
  // On Redis, in the job's kReceiving step: reads Redis's answer; true when the job moved
  // on, false when it waits for the next tick.
  bool ReceiveFromRedis(Worker& worker, Job& job, Clock::time_point now);
  // The current call's command into job.out (embedded frame or RESP).
  void EncodeCall(Job& job, std::uint64_t version, std::string_view blob);
  void Finish(Job& job, SaveStatus status);

  const UpdaterOptions options_;
  const SocketAddress store_;
  const std::optional<UpdaterRedis> redis_;
  std::vector<Atomic<bool>> profile_locked_;  // index: user; try-locked by jobs
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<Worker>> workers_;
  Atomic<std::uint64_t> next_connection_{0};  // round-robin pinning of connections
  Atomic<std::uint64_t> next_job_{0};         // round-robin pinning of jobs
  Atomic<bool> stopping_{false};
  Atomic<std::int64_t> fenced_uploads_{0};     // relaxed: a statistic
  Atomic<std::int64_t> jobs_started_late_{0};  // relaxed: a statistic
  Atomic<std::uint64_t> fault_draws_{0};       // relaxed: a distinct draw per answer
  Atomic<std::int64_t> faults_{0};             // relaxed: a statistic
};

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_UPDATER_SERVER_H_
