// LatencyHistogram: counts of durations in power-of-two buckets, the shape of the
// scheduler's post-to-start statistics (BasicTaskScheduler::LatencyHistogram()).
//
// Bucket 0 counts durations of 0 ns; bucket i >= 1 counts durations in [2^(i-1), 2^i) ns;
// the last bucket also takes everything longer (2^46 ns is about 20 hours). A log2 bucket
// needs one bit-width instruction to find, so a worker can count every sample it takes;
// the price is resolution: a quantile is known only up to a factor of two (the bucket
// bounds), which is what a "p50 is 4-8 us, p99 is 16-32 us" kind of answer needs.
//
// Plain value type: the scheduler keeps one array of relaxed counters per worker and
// builds this snapshot on read.
#ifndef FAIRSCHED_SCHED_LATENCY_HISTOGRAM_H_
#define FAIRSCHED_SCHED_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace fairsched {

struct LatencyHistogram {
  static constexpr std::size_t kBuckets = 48;

  static std::size_t BucketOf(std::uint64_t ns) {
    return std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(ns)), kBuckets - 1);
  }
  // Smallest duration counted in `bucket` (ns).
  static std::uint64_t BucketLowerBound(std::size_t bucket) {
    return bucket == 0 ? 0 : std::uint64_t{1} << (bucket - 1);
  }
  // Largest duration counted in `bucket` (ns); the last bucket has no upper bound.
  static std::uint64_t BucketUpperBound(std::size_t bucket) {
    if (bucket + 1 >= kBuckets) return UINT64_MAX;
    return bucket == 0 ? 0 : (std::uint64_t{1} << bucket) - 1;
  }

  std::uint64_t Total() const {
    std::uint64_t total = 0;
    for (std::uint64_t c : counts) total += c;
    return total;
  }

  // The bucket holding the q-quantile (0 <= q <= 1) of the counted durations: the smallest
  // bucket such that at least q of all samples are in it or below. 0 if nothing was counted.
  std::size_t QuantileBucket(double q) const {
    const std::uint64_t total = Total();
    if (total == 0) return 0;
    const double wanted = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts[i];
      if (seen > 0 && static_cast<double>(seen) >= wanted) return i;
    }
    return kBuckets - 1;
  }

  void Add(const LatencyHistogram& other) {
    for (std::size_t i = 0; i < kBuckets; ++i) counts[i] += other.counts[i];
  }

  std::array<std::uint64_t, kBuckets> counts{};
};

}  // namespace fairsched

#endif  // FAIRSCHED_SCHED_LATENCY_HISTOGRAM_H_
