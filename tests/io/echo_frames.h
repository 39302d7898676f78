// The framed echo protocol of examples/echo_server.h (kFramed) from the tests' side
// (tests/io): a payload as one frame, a 4-byte little-endian length and the bytes.
#ifndef FAIRSCHED_TESTS_IO_ECHO_FRAMES_H_
#define FAIRSCHED_TESTS_IO_ECHO_FRAMES_H_

#include <cstdint>
#include <string>

#include "examples/echo_server.h"

namespace fairsched::testing {

inline std::string Frame(const std::string& payload) {
  std::string frame(examples::kEchoHeaderSize, '\0');
  examples::EncodeFrameLength(static_cast<std::uint32_t>(payload.size()), frame.data());
  return frame + payload;
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_ECHO_FRAMES_H_
