// Interleaving exploration of AutoResetEvent's futex path, the one production runs on Linux
// (sync/auto_reset_event.cc compiled here with FAIRSCHED_EXPLORE_FUTEX: its FutexWait/FutexWake are
// the explorer's futex model, sync/explore/futex.h, and its clock the logical one). The
// scenarios of auto_reset_event_scenario.h (two threads ping-pong; two senders, one receiver) and of
// auto_reset_event_futex_scenario.h (two receivers; timed receives racing the wake-up), every
// schedule with up to three preemptions (two for the three-thread timed ones).
#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "sync/auto_reset_event.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/auto_reset_event_futex_scenario.h"
#include "tests/explore/auto_reset_event_scenario.h"

static_assert(FAIRSCHED_AUTO_RESET_EVENT_USES_FUTEX, "this test checks the futex path");

namespace fairsched {
namespace {

using testing::ExpectPass;

TEST(SignalFutexExploreTest, PingPong) {
  ExpectPass(&testing::PingPong<AutoResetEvent>, 3, "futex signal ping-pong x2, bound 3");
}

TEST(SignalFutexExploreTest, TwoSendersOneReceiver) {
  ExpectPass(&testing::TwoSendersOneReceiver<AutoResetEvent>, 3,
             "futex signal 2 senders 1 receiver, bound 3");
}

TEST(SignalFutexExploreTest, TwoReceivers) {
  ExpectPass(&testing::TwoReceivers, 2, "futex signal 2 receivers, 2 sends, bound 2");
}

TEST(SignalFutexExploreTest, TimedAndUntimedReceivers) {
  ExpectPass(&testing::TimedAndUntimedReceivers, 2, "futex signal timed + untimed, bound 2");
}

TEST(SignalFutexExploreTest, TwoTimedReceivers) {
  ExpectPass(&testing::TwoTimedReceivers, 2, "futex signal 2 timed receivers, bound 2");
}

}  // namespace
}  // namespace fairsched
