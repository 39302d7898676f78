// demo: the README's "main job" for now - the savegame pipeline of the talk (lock profile,
// download with a deadline, CPU work, upload, unlock) over a few thousand simulated jobs.
// Prints throughput and latency percentiles, then the scheduler's per-worker statistics and
// its post-to-start latency histogram. Flags: --jobs=N --rate=R --workers=W.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "examples/savegame_pipeline.h"
#include "sched/latency_histogram.h"

namespace {

// "4-8 us": a log2 bucket's range in readable units.
void PrintBucketRange(std::size_t bucket) {
  const auto print = [](std::uint64_t ns) {
    if (ns < 1000) {
      std::printf("%llu ns", static_cast<unsigned long long>(ns));
    } else if (ns < 1'000'000) {
      std::printf("%.1f us", static_cast<double>(ns) / 1e3);
    } else {
      std::printf("%.1f ms", static_cast<double>(ns) / 1e6);
    }
  };
  print(fairsched::LatencyHistogram::BucketLowerBound(bucket));
  std::printf(" - ");
  print(fairsched::LatencyHistogram::BucketUpperBound(bucket) + 1);
}

}  // namespace

int main(int argc, char** argv) {
  fairsched::examples::PipelineOptions options;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--jobs=", 7) == 0) {
      options.jobs = std::atoi(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--rate=", 7) == 0) {
      options.arrival_rate = std::atof(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--workers=", 10) == 0) {
      options.workers = std::atoi(argv[i] + 10);
    } else {
      std::fprintf(stderr, "usage: %s [--jobs=N] [--rate=JOBS_PER_S] [--workers=W]\n", argv[0]);
      return 2;
    }
  }
  if (options.jobs <= 0 || options.arrival_rate <= 0 || options.workers <= 0) {
    std::fprintf(stderr, "jobs, rate and workers must be positive\n");
    return 2;
  }
  const auto r = fairsched::examples::RunSavegamePipeline(options);
  std::printf("savegame pipeline: %d jobs (%d users, %d workers, offered %.0f jobs/s)\n", r.jobs,
              options.users, options.workers, options.arrival_rate);
  std::printf("  completed %d, timed out %d (slow downloads set up: %d), lock waits %d\n",
              r.completed, r.timed_out, r.slow_downloads, r.lock_waits);
  std::printf("  throughput %.0f jobs/s over %.3f s\n", r.throughput, r.seconds);
  std::printf("  latency post->unlock: p50 %.0f us, p90 %.0f us, p99 %.0f us, max %.0f us\n",
              r.p50_us, r.p90_us, r.p99_us, r.max_us);
  std::printf("scheduler, per worker:\n");
  for (std::size_t i = 0; i < r.worker_stats.size(); ++i) {
    const fairsched::WorkerStats& w = r.worker_stats[i];
    std::printf(
        "  worker %zu: %llu tasks, sched-role %llu times, parked %llu, role sleeps %llu, "
        "wakes sent %llu, idle wake-ups %llu\n",
        i, static_cast<unsigned long long>(w.tasks_executed),
        static_cast<unsigned long long>(w.sched_role_taken),
        static_cast<unsigned long long>(w.parks), static_cast<unsigned long long>(w.role_sleeps),
        static_cast<unsigned long long>(w.wakes_sent),
        static_cast<unsigned long long>(w.idle_wakeups));
  }
  const fairsched::LatencyHistogram& h = r.post_to_start;
  std::printf("scheduler post-to-start latency (%llu sampled posts):\n",
              static_cast<unsigned long long>(h.Total()));
  for (std::size_t b = 0; b < fairsched::LatencyHistogram::kBuckets; ++b) {
    if (h.counts[b] == 0) continue;
    std::printf("  ");
    PrintBucketRange(b);
    std::printf(": %llu\n", static_cast<unsigned long long>(h.counts[b]));
  }
  if (h.Total() > 0) {
    std::printf("  p50 in ");
    PrintBucketRange(h.QuantileBucket(0.50));
    std::printf(", p99 in ");
    PrintBucketRange(h.QuantileBucket(0.99));
    std::printf("\n");
  }
  if (r.lock_violation || r.completed + r.timed_out != r.jobs) {
    std::fprintf(stderr, "FAILED: lock violation or lost jobs\n");
    return 1;
  }
  return 0;
}
