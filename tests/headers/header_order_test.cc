// The compile is the test (tests/headers/BUILD): every public header, first in a translation
// unit of its own and followed by all the others, compiled. This checks that each of those
// translation units was really linked in, once.
#include <gtest/gtest.h>

#include "tests/headers/registry.h"

namespace fairsched::testing {
namespace {

TEST(HeaderOrderTest, EveryPublicHeaderWasCompiledFirstOnce) {
  EXPECT_EQ(HeadersCompiledFirst().size(), static_cast<std::size_t>(FAIRSCHED_PUBLIC_HEADER_COUNT));
}

}  // namespace
}  // namespace fairsched::testing
