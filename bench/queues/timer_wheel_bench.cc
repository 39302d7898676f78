// Wait-queue benchmark for TimerWheel (4 levels x 64 slots, 1 ms tick) against BinaryHeap
// in the same run (see wait_queue_bench.h for the three operations).
#include "bench/queues/wait_queue_bench.h"
#include "queues/binary_heap.h"
#include "queues/timer_wheel.h"

namespace fairsched::bench {
namespace {

using Wheel = TimerWheel<Item>;
using Heap = BinaryHeap<Item>;

FAIRSCHED_WAIT_BENCH(Insert, Wheel);
FAIRSCHED_WAIT_BENCH(Insert, Heap);
FAIRSCHED_WAIT_BENCH(Cancel, Wheel);
FAIRSCHED_WAIT_BENCH(Cancel, Heap);
FAIRSCHED_WAIT_BENCH(Expire, Wheel);
FAIRSCHED_WAIT_BENCH(Expire, Heap);

}  // namespace
}  // namespace fairsched::bench
