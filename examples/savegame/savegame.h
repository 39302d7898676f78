// The savegame service end to end, on loopback, in one process: the blob store (fairsched
// coroutines, blob_store.h), one savegame server design (fairsched coroutines,
// fairsched_server.h, or the "Updater" baseline, updater_server.h), and the client fleet
// (load.h) for `duration`; then the correctness check: every user's counter in the store
// must equal the number of kOk replies for that user (protocol.h explains why it can be
// exact). `//examples:savegame` prints the reports as a table; tests/examples runs short
// configurations and asserts on them.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_SAVEGAME_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_SAVEGAME_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "examples/savegame/load.h"
#include "sched/latency_histogram.h"
#include "sched/task_scheduler.h"

namespace fairsched::savegame {

enum class Design { kFairsched, kUpdater };
enum class BackendKind { kEpoll, kIoUring };
const char* ToString(Design design);

struct SavegameOptions {
  int workers = 2;  // server threads, the same number for both designs
  int users = 1000;
  int connections = 128;  // client connections (closed loop: requests in flight)
  int client_threads = 2;
  int store_workers = 1;
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  std::chrono::nanoseconds blob_latency = std::chrono::microseconds(500);
  std::chrono::nanoseconds cpu_cost = std::chrono::microseconds(20);
  double fault = 0;  // fraction of store answers dropped or delayed
  std::chrono::nanoseconds fault_delay = std::chrono::milliseconds(300);
  std::chrono::nanoseconds step_timeout = std::chrono::milliseconds(100);
  std::chrono::nanoseconds updater_tick = std::chrono::milliseconds(5);
  std::chrono::nanoseconds drain_timeout = std::chrono::seconds(10);
  std::size_t blob_payload = 1024;
  // TaskSchedulerOptions::spin_before_park of the server's and the store's schedulers.
  std::chrono::nanoseconds spin_before_park = TaskSchedulerOptions().spin_before_park;
  BackendKind backend = BackendKind::kEpoll;
  std::FILE* progress = nullptr;  // live progress line, see FleetOptions
};

struct DesignReport {
  Design design = Design::kFairsched;
  FleetResult fleet;
  double requests_per_second = 0;          // kOk replies per second of the sending phase
  std::vector<double> worker_cpu_seconds;  // per server thread, over the run
  double worker_wait_seconds = 0;          // all server threads: runnable, waiting for a CPU
  std::int64_t faults_injected = 0;
  std::int64_t fenced_uploads = 0;  // uploads whose answer was lost, settled by a fence
  // The check.
  bool check_passed = false;
  std::int64_t users_checked = 0;
  std::int64_t mismatched_users = 0;
  std::string check_message;  // first mismatch or why the store could not be read
  // fairsched only: the server scheduler's per-worker counters and its sampled
  // post-to-start latency, taken before it stops.
  std::vector<WorkerStats> scheduler_stats;
  LatencyHistogram post_to_start;
};

// Runs one design on a fresh blob store. Aborts with a message if a socket cannot listen.
DesignReport RunDesign(Design design, const SavegameOptions& options);

// The final table (and the errors by kind, and the throughput ratio when both ran).
void PrintReports(std::FILE* out, const SavegameOptions& options,
                  const std::vector<DesignReport>& reports);

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_SAVEGAME_H_
