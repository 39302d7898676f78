// The savegame pipeline from the talk, as a self-contained simulation: every job locks a
// user's profile, downloads the save blob (with a deadline), changes it (CPU work),
// uploads it and unlocks the profile. Network calls go to a FakeAsyncClient; the profile
// lock is asynchronous (a job that finds the profile locked waits in PostWait and the
// unlocker hands the lock over with Wakeup). Jobs arrive open-loop at a fixed rate.
//
// RunSavegamePipeline is what the `demo` binary prints and what tests/examples checks.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_PIPELINE_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_PIPELINE_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "sched/latency_histogram.h"
#include "sched/task_scheduler.h"

namespace fairsched::examples {

struct PipelineOptions {
  int jobs = 5000;
  int users = 100;              // jobs pick a user at random: same-user jobs contend
  int workers = 2;              // scheduler threads
  double arrival_rate = 10000;  // jobs posted per second
  std::chrono::microseconds download_min{200};
  std::chrono::microseconds download_max{2000};
  double slow_download_fraction = 0.01;  // downloads that take slow_download_latency
  std::chrono::microseconds slow_download_latency{120'000};
  std::chrono::microseconds download_timeout{30'000};
  std::chrono::microseconds cpu_work{20};  // busy CPU time per job ("change the blob")
  std::chrono::microseconds upload_min{200};
  std::chrono::microseconds upload_max{1000};
  std::uint64_t seed = 1;
};

struct PipelineReport {
  int jobs = 0;
  int completed = 0;            // went through every step
  int timed_out = 0;            // download deadline passed: cancelled, profile unlocked
  int slow_downloads = 0;       // downloads that were set up to exceed the deadline
  int lock_waits = 0;           // times a job found its profile locked and waited
  bool lock_violation = false;  // two jobs held one profile at once (must never happen)
  double seconds = 0;           // first post to last unlock
  double throughput = 0;        // jobs per second over `seconds`
  // Job latency, post to unlock, in microseconds.
  double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  // The scheduler's own view, read after Stop: per-worker statistics and the sampled
  // post-to-start latency of its tasks (each step of a job is a post).
  std::vector<WorkerStats> worker_stats;
  LatencyHistogram post_to_start;
};

PipelineReport RunSavegamePipeline(const PipelineOptions& options);

}  // namespace fairsched::examples

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_PIPELINE_H_
