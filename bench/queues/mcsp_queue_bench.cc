// Ready-queue benchmark for McspQueue: 1 producer, N consumers (see ready_queue_bench.h).
// Same run: the trivial LockedReadyQueue and moodycamel::ConcurrentQueue, each once with
// per-item publishing (Push / enqueue) and once with batches of 32 (PushPending +
// FlushPending / enqueue_bulk), which is how the scheduler moves tasks to the ready queue.
#include "bench/queues/ready_queue_bench.h"
#include "queues/locked_queue.h"
#include "queues/mcsp_queue.h"

namespace fairsched::bench {
namespace {

using Mcsp = ReadyQueueAdapter<McspQueue<Item>>;
using McspBatch32 = ReadyQueueAdapter<McspQueue<Item>, 32>;
using Locked = ReadyQueueAdapter<LockedReadyQueue<Item>>;
using LockedBatch32 = ReadyQueueAdapter<LockedReadyQueue<Item>, 32>;
using Moodycamel = MoodycamelReadyAdapter<>;
using MoodycamelBatch32 = MoodycamelReadyAdapter<32>;

FAIRSCHED_READY_BENCH(Mcsp);
FAIRSCHED_READY_BENCH(Locked);
FAIRSCHED_READY_BENCH(Moodycamel);
FAIRSCHED_READY_BENCH(McspBatch32);
FAIRSCHED_READY_BENCH(LockedBatch32);
FAIRSCHED_READY_BENCH(MoodycamelBatch32);

}  // namespace
}  // namespace fairsched::bench
