// The savegame service end to end, on loopback, in one process: the blob store (fairsched
// coroutines, blob_store.h), one savegame server design (fairsched coroutines,
// fairsched_server.h, or the "Updater" baseline, updater_server.h), and the client fleet
// (load.h, closed or open loop) for `duration`; then the correctness check (check.h): the
// set of requests the store applied must be the set acknowledged to the clients (protocol.h
// explains why it can be exact). `//examples:savegame` prints the reports as a table and
// can write each run as a JSON record (RunRecordJson); tests/examples runs short
// configurations and asserts on them.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_SAVEGAME_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_SAVEGAME_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "examples/savegame/check.h"
#include "examples/savegame/fairsched_server.h"
#include "examples/savegame/load.h"
#include "examples/savegame/updater_server.h"
#include "sched/latency_histogram.h"
#include "sched/task_scheduler.h"

namespace fairsched::savegame {

enum class Design { kFairsched, kUpdater };
enum class BackendKind { kEpoll, kIoUring };
const char* ToString(Design design);

struct SavegameOptions {
  int workers = 2;  // server threads, the same number for both designs
  int users = 1000;
  int connections = 128;  // client connections (the most requests in flight)
  double rate = 0;        // open loop: offered requests per second (load.h); 0: closed loop
  std::uint64_t seed = 1;  // the fleet's RNG (users picked, open-loop arrivals)
  int client_threads = 2;
  // The fleet in a child process (fleet_process.h): one end of each connection per
  // process, for more connections than half the open-file limit. Plain builds only.
  bool fleet_in_child = false;
  int store_workers = 1;
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  std::chrono::nanoseconds blob_latency = std::chrono::microseconds(500);
  std::chrono::nanoseconds cpu_cost = std::chrono::microseconds(20);
  double fault = 0;  // fraction of store answers dropped or delayed
  std::chrono::nanoseconds fault_delay = std::chrono::milliseconds(300);
  std::chrono::nanoseconds step_timeout = std::chrono::milliseconds(100);
  std::chrono::nanoseconds updater_tick = std::chrono::milliseconds(5);
  // When the Updater starts a job (updater_server.h): in the tick it arrives (the fair
  // Updater, default) or in the next one (kNextTick).
  UpdaterStart updater_start = UpdaterStart::kSameTick;
  // A skewed workload: users 0 .. heavy_users-1 save heavy_factor times as often
  // (load.h, UserPicker) and each of their saves is heavy_factor times larger
  // (fairsched_server.h, ServerOptions).
  int heavy_users = 0;
  int heavy_factor = 1;
  // Tests only: FleetOptions::first_connect_delay.
  std::chrono::nanoseconds first_connect_delay{0};
  std::chrono::nanoseconds drain_timeout = std::chrono::seconds(10);
  std::size_t blob_payload = 1024;
  // TaskSchedulerOptions::spin_before_park of the server's and the store's schedulers.
  std::chrono::nanoseconds spin_before_park = TaskSchedulerOptions().spin_before_park;
  BackendKind backend = BackendKind::kEpoll;
  // The blob store: the embedded one (blob_store.h, default) or Redis (redis_store.h). With
  // Redis, `redis_address` is its "127.0.0.1:PORT", or "" to start a private redis-server
  // for the run (examples/redis/redis_server_process.h); both designs (the Updater through
  // UpdaterRedis, updater_server.h), and blob_latency does not apply
  // (Redis's own round trip is the latency); `fault` is injected by our Redis client.
  bool redis = false;
  std::string redis_address;
  // With a private redis-server only: SIGKILL it this long into the load and start it again
  // at once on the same port and AOF (acknowledged saves must survive); 0: never.
  std::chrono::nanoseconds redis_restart_at{0};
  // Several server processes (server_processes.h): 0, the server runs in this process;
  // N >= 1, in N child processes of `server_binary` ("": this binary, which must be
  // //examples:savegame) on the same store, the fleet's connections spread over them.
  int server_processes = 0;
  std::string server_binary;
  std::FILE* progress = nullptr;  // live progress line, see FleetOptions
  SeededBug seeded_bug = SeededBug::kNone;  // fairsched design only; tests only
};

// The process's open-file limit (RLIMIT_NOFILE) before and after RunDesign raised it for
// the run: ~2 descriptors per client connection (client and server side), 2 per store
// connection, and a few more.
struct FileLimit {
  std::uint64_t soft_before = 0;
  std::uint64_t hard_before = 0;
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
  std::uint64_t needed = 0;  // the estimate the run asked for
};

// Raises the soft open-file limit to the hard one, and the hard one too (when the process
// may: root or CAP_SYS_RESOURCE, up to /proc/sys/fs/nr_open) if `needed` is above it.
// Prints to stderr what it changed, and a warning if the limit stays below `needed`.
FileLimit RaiseFileLimit(std::uint64_t needed);

// A thread's CPU time and run-queue wait over a run, with its role: "server" (the design's
// workers), "store" (the blob store's workers), "client" (the fleet) or "other".
struct ThreadUsage {
  std::string name;
  std::string role;
  int tid = 0;
  ThreadTimes times;
};

struct DesignReport {
  Design design = Design::kFairsched;
  FleetResult fleet;
  double requests_per_second = 0;          // kOk replies per second of the sending phase
  std::vector<double> worker_cpu_seconds;  // per server thread, over the run
  double worker_wait_seconds = 0;          // all server threads: runnable, waiting for a CPU
  std::int64_t faults_injected = 0;
  std::int64_t fenced_uploads = 0;  // uploads whose answer was lost, settled by a fence
  // updater only: jobs that waited a tick before their first step (updater_server.h).
  std::int64_t jobs_started_late = 0;
  FileLimit file_limit;
  std::vector<ThreadUsage> threads;  // every thread that ran during the load, server first
  std::string loadavg_before;        // /proc/loadavg before the run and after the check
  std::string loadavg_after;
  std::string started_utc;           // ISO 8601
  double wall_seconds = 0;           // the whole run, setup and check included
  // Redis with --redis_restart_at: whether the restart happened, how long Redis was gone
  // (SIGKILL to its first PING), and what became of the requests whose outcome the client
  // could not know (kUnknown or no reply): applied (in Redis's log) or not.
  bool redis_restarted = false;
  bool redis_restart_after_load = false;  // the load ended first; the check waited for it
  double redis_down_ms = 0;
  std::int64_t unsettled_applied = 0;
  std::int64_t unsettled_not_applied = 0;
  // The check (check.h); check.message also says why the store could not be read.
  CheckResult check;
  // fairsched only: the server scheduler's per-worker counters and its sampled
  // post-to-start latency, taken before it stops.
  std::vector<WorkerStats> scheduler_stats;
  LatencyHistogram post_to_start;
};

// Runs one design on a fresh blob store. Aborts with a message if a socket cannot listen.
DesignReport RunDesign(Design design, const SavegameOptions& options);

// The child side of --server_processes (server_processes.h): serves `design` on the store
// `store` ("embedded://ADDR", or "redis://ADDR" under `key_prefix`, redis_store.h), with the
// server options of `options`; prints "listening ADDR" on stdout, serves until stdin ends,
// stops, prints "stats FENCED FAULTS CPU_SECONDS" and returns the exit code (epoll only).
// `index` (0 .. N-1) gives each process its own fault-injection stream on Redis.
int ServeAsServerProcess(Design design, const SavegameOptions& options, const std::string& store,
                         const std::string& key_prefix, int index);

// The final table (and the errors by kind, and the throughput ratio when both ran).
void PrintReports(std::FILE* out, const SavegameOptions& options,
                  const std::vector<DesignReport>& reports);

// One run as a JSON object: the configuration, the machine load before and after, req/s,
// latency percentiles, every thread's CPU time and run-queue wait, and the check. The
// fields are described in bench/results/savegame.md; tools/savegame/ reads them.
std::string RunRecordJson(const SavegameOptions& options, const DesignReport& report);

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_SAVEGAME_H_
