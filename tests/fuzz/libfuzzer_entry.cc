// libFuzzer's entry point for the fuzz build's executables (tests/fuzz/BUILD): each links
// exactly one target library, and every input goes to that target.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& targets = fairsched::fuzz::FuzzTargets();
  fairsched::fuzz::FuzzCheck(targets.size() == 1, "a fuzzer executable links one target");
  targets.begin()->second(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
