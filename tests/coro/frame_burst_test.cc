// A burst of a million coroutines, spawned on one thread and finished on two workers, gives
// its frames back when it ends: once every coroutine has finished and the workers have
// exited, the frame allocator's global pool holds at most FrameAllocator::kMaxPooledBytes,
// and (in builds without a sanitizer, whose allocators keep freed memory on purpose) the
// process's resident memory is within 16 MiB of what it was before the burst. The burst
// does not scale with FAIRSCHED_STRESS_SCALE: its size is the point.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#if defined(__linux__)
#include <unistd.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "coro/frame_allocator.h"
#include "coro/runtime.h"
#include "sched/task_scheduler.h"
#include "tests/stress.h"

namespace fairsched::coro {
namespace {

using fairsched::testing::kSanitized;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// This process's resident set, in bytes, with malloc's free pages given back first; -1
// where /proc is not there (Windows).
std::int64_t ResidentBytes() {
#if !defined(__linux__)
  return -1;
#else
#if defined(__GLIBC__)
  // glibc's malloc keeps freed memory in its arenas (it gives back only the top of a heap,
  // and only past M_TRIM_THRESHOLD), so without this the resident set would show what
  // malloc caches rather than what the frame allocator still holds. malloc_trim(0) returns
  // every whole free page of every arena to the system.
  malloc_trim(0);
#endif
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  long total_pages = 0;
  long resident_pages = 0;
  const int fields = std::fscanf(statm, "%ld %ld", &total_pages, &resident_pages);
  std::fclose(statm);
  if (fields != 2) return -1;
  return static_cast<std::int64_t>(resident_pages) * sysconf(_SC_PAGESIZE);
#endif
}

Lazy<> Finish(std::atomic<std::int64_t>* finished) {
  finished->fetch_add(1, std::memory_order_relaxed);
  co_return;
}

TEST(FrameBurstTest, MillionCoroutineBurstGivesItsFramesBack) {
  constexpr std::int64_t kCoroutines = 1'000'000;
  const std::int64_t resident_before = ResidentBytes();
  const FrameAllocatorStats stats_before = FrameAllocator::ThisThreadFrameStats();
  std::atomic<std::int64_t> finished{0};
  {
    TaskScheduler sched;
    // Spawned before the workers start, so every frame of the burst is live at once; each
    // is freed by the worker that finishes its coroutine.
    for (std::int64_t i = 0; i < kCoroutines; ++i) Spawn(sched, Finish(&finished)).Detach();
    sched.Start(2);
    sched.Stop();  // returns once every coroutine has run and both workers have exited
  }
  ASSERT_EQ(finished.load(), kCoroutines);
  const FrameAllocatorStats stats_after = FrameAllocator::ThisThreadFrameStats();
  const std::int64_t burst_bytes =
      static_cast<std::int64_t>(stats_after.bytes_rounded - stats_before.bytes_rounded);
  const std::int64_t pooled = static_cast<std::int64_t>(FrameAllocator::PooledBytes());
  const std::int64_t resident_after = ResidentBytes();
  std::printf("burst: %lld coroutines, %.1f MiB of frames; pooled after: %.2f MiB (cap %.2f)\n",
              static_cast<long long>(kCoroutines), static_cast<double>(burst_bytes) / kMiB,
              static_cast<double>(pooled) / kMiB,
              static_cast<double>(FrameAllocator::kMaxPooledBytes) / kMiB);
  std::printf("resident: %.1f MiB before, %.1f MiB after\n",
              static_cast<double>(resident_before) / kMiB,
              static_cast<double>(resident_after) / kMiB);
  EXPECT_GT(burst_bytes, 100 * kMiB);  // the burst is far larger than the cap
  EXPECT_LE(pooled, static_cast<std::int64_t>(FrameAllocator::kMaxPooledBytes));
  if (kSanitized) {
    std::printf("resident set not checked: the sanitizer's allocator keeps freed memory\n");
    return;
  }
#if !defined(__linux__)
  std::printf("resident set not checked: no /proc/self/statm on this platform\n");
  return;
#endif
  ASSERT_GT(resident_before, 0);
  ASSERT_GT(resident_after, 0);
  EXPECT_LE(resident_after - resident_before, 16 * kMiB);
}

}  // namespace
}  // namespace fairsched::coro
