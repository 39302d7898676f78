// AutoResetEvent's futex path with a seeded bug (tests/explore/seed_bug.py
// event_recheck_load_store: the receiver's re-check consumes the bit with a load and a
// store instead of one exchange; this target compiles that scratch copy of sync/auto_reset_event.cc
// instead of the shipped one). Two receivers can then both take one Send's bit; the explorer
// must report it with this exact message. (An earlier review found that the portable path's
// scenario passed 743 schedules with this bug: there the re-check runs under the mutex.)
#include <string>

#include "gtest/gtest.h"
#include "sync/primitives.h"
#include "sync/auto_reset_event.h"
#include "tests/explore/explore_test_util.h"
#include "tests/explore/seeded_bug_util.h"
#include "tests/explore/auto_reset_event_futex_scenario.h"

namespace fairsched {
namespace {

TEST(SignalFutexSeededTest, RecheckAsLoadAndStore) {
  testing::ExpectSeededBugFound(&testing::TwoReceivers, "signal: re-check as load + store",
                                "check failed: more receives returned than Sends started (one bit "
                                "consumed twice)");
}

}  // namespace
}  // namespace fairsched
