// The wake scenarios of scheduler_wake_scenarios.h under PostOrder::kHome on the real
// TaskScheduler (its own target, so that it runs beside scheduler_wake_explore_test): a
// task that must start at logical time 0 while the only worker that can run it is idle. A
// lone task the sched-role made ready must be taken at once (the pair, also under the C++20
// model); two tasks behind a blocked holder are taken by the parker (the trio).
#include "gtest/gtest.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/scheduler_wake_scenarios.h"

static_assert(FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX,
              "the scheduler is checked on AutoResetEvent's futex path");

namespace fairsched {
namespace {

using testing::ExpectPass;
using testing::ExpectPassUnderCpp20;

TEST(SchedulerWakeHomeExploreTest, ReadiedPairNeedsTheParkerUnderHomeQueues) {
  ExpectPass(&testing::ReadiedPairNeedsTheParkerUnderHomeQueues, 1,
             "scheduler, home queues: 2 workers, A waits for B, B alone behind A in the "
             "holder's queue");
}

// The pair under kHome and the C++20 model (3,000 random schedules): the holder's relaxed
// store of received_stamp_end, like its release push into its queue, comes before its
// seq_cst Unlock, and the parker's relaxed loads of both come after its seq_cst look at the
// role, so a parker that misses the holder's WakeOne sees B as a received task.
TEST(SchedulerWakeHomeExploreTest, ReadiedPairNeedsTheParkerUnderHomeQueuesUnderCpp20) {
  ExpectPassUnderCpp20(&testing::ReadiedPairNeedsTheParkerUnderHomeQueues,
                       "scheduler, home queues, C++20 model: 2 workers, B alone behind A");
}

TEST(SchedulerWakeHomeExploreTest, ReadiedTrioNeedsTheParkerUnderHomeQueues) {
  ExpectPass(&testing::ReadiedTrioNeedsTheParkerUnderHomeQueues, 1,
             "scheduler, home queues: 2 workers, A waits for B, B needs the parked worker");
}

}  // namespace
}  // namespace fairsched
