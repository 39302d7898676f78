// Interleaving exploration of AutoResetEvent (sync/auto_reset_event.h, sync/auto_reset_event.cc): its lost-wakeup
// protocol (waiter count + re-check under the mutex on the receiving side, set then read the
// count on the sending side), every schedule with up to three preemptions (also without
// sleep sets with FAIRSCHED_EXPLORE_DEEP=1). signal.cc is compiled into this test with the
// instrumented primitives (see BUILD). Timed receives are not explored: their deadline is
// read from the real clock, which would make schedules irreproducible.
#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "sync/auto_reset_event.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/auto_reset_event_scenario.h"

namespace fairsched {
namespace {

void ExpectPass(void (*scenario)(), int bound, const char* name, bool sleep_sets = true) {
  explore::Options options;
  options.preemption_bound = bound;
  options.sleep_sets = sleep_sets;
  const explore::Result result = explore::Explore(options, scenario);
  testing::PrintCounts(name, result);
  EXPECT_FALSE(result.failed) << result.Report();
  EXPECT_TRUE(result.complete) << result.Report();
}

TEST(SignalExploreTest, PingPong) {
  ExpectPass(&testing::PingPong<AutoResetEvent>, 3, "signal ping-pong x2, bound 3");
}

TEST(SignalExploreTest, TwoSendersOneReceiver) {
  ExpectPass(&testing::TwoSendersOneReceiver<AutoResetEvent>, 3, "signal 2 senders 1 receiver, bound 3");
}

TEST(SignalExploreTest, DeepWithoutSleepSets) {
  if (!testing::DeepExploration()) GTEST_SKIP() << "set FAIRSCHED_EXPLORE_DEEP=1";
  ExpectPass(&testing::PingPong<AutoResetEvent>, 3, "signal ping-pong x2, bound 3, no sleep sets",
             /*sleep_sets=*/false);
  ExpectPass(&testing::TwoSendersOneReceiver<AutoResetEvent>, 3,
             "signal 2 senders 1 receiver, bound 3, no sleep sets", /*sleep_sets=*/false);
}

}  // namespace
}  // namespace fairsched
