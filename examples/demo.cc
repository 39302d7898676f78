// demo: the README's "main job" for now - the savegame pipeline of the talk (lock profile,
// download with a deadline, CPU work, upload, unlock) over a few thousand simulated jobs.
// Prints throughput and latency percentiles. Flags: --jobs=N --rate=R --workers=W.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "examples/savegame_pipeline.h"

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
  if (r.lock_violation || r.completed + r.timed_out != r.jobs) {
    std::fprintf(stderr, "FAILED: lock violation or lost jobs\n");
    return 1;
  }
  return 0;
}
