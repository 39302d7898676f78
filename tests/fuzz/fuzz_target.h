// The fuzz targets' registry and the helpers every target shares (tests/fuzz).
//
// A target is a function that takes one input (any bytes), drives product code with it,
// and aborts (FuzzCheck) when a property the code promises does not hold. Each target's
// library registers it under its name at static initialisation (alwayslink); two programs
// run the registered targets:
//   - libfuzzer_entry.cc: LLVMFuzzerTestOneInput, for the libFuzzer executables of the fuzz
//     build (`--config=fuzz`), each linking exactly one target;
//   - replay_test.cc: the normal build's test that feeds every committed corpus and
//     regression file to every target.
#ifndef FAIRSCHED_TESTS_FUZZ_FUZZ_TARGET_H_
#define FAIRSCHED_TESTS_FUZZ_FUZZ_TARGET_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fairsched::fuzz {

using FuzzFunction = void (*)(std::string_view input);

// Registers `function` under `name` (the folder name of its corpus); returns true, so a
// target registers with `const bool kRegistered = RegisterFuzzTarget(...)`. Names are unique.
bool RegisterFuzzTarget(const char* name, FuzzFunction function);
// Every registered target by name.
const std::map<std::string, FuzzFunction>& FuzzTargets();

// Prints "fuzz property violated: <what>" and aborts when `holds` is false (libFuzzer then
// saves the input as a crash; the replay test dies).
void FuzzCheck(bool holds, const char* what);

// Reads an input as a script: control bytes from the front, the rest as data. Every read
// past the end yields zeros, so any input is a valid script.
class FuzzInput {
 public:
  explicit FuzzInput(std::string_view input) : rest_(input) {}
  std::uint8_t Byte() {
    if (rest_.empty()) return 0;
    const auto byte = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return byte;
  }
  // Up to `n` bytes from the front.
  std::string_view Take(std::size_t n) {
    const std::string_view taken = rest_.substr(0, n);
    rest_.remove_prefix(taken.size());
    return taken;
  }
  std::string_view Rest() const { return rest_; }

  // A script of read sizes (testing::ScriptedStream's `read_sizes`) from the front: a count
  // byte (0-15 sizes), then one byte per size; size byte b allows b + 1 bytes, or
  // (b - 191)^2 for b >= 192 (large reads too).
  std::vector<std::size_t> ReadSizes() {
    std::vector<std::size_t> sizes(Byte() % 16);
    for (std::size_t& size : sizes) {
      const std::size_t b = Byte();
      size = b < 192 ? b + 1 : (b - 191) * (b - 191);
    }
    return sizes;
  }

 private:
  std::string_view rest_;
};

}  // namespace fairsched::fuzz

#endif  // FAIRSCHED_TESTS_FUZZ_FUZZ_TARGET_H_
