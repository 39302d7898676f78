// The fuzz targets' registry and FuzzCheck (fuzz_target.h).
#include "tests/fuzz/fuzz_target.h"

#include <cstdio>
#include <cstdlib>

namespace fairsched::fuzz {
namespace {
// A function-local static: the targets register during static initialisation, in any
// order relative to this file's.
std::map<std::string, FuzzFunction>& Registry() {
  static auto* registry = new std::map<std::string, FuzzFunction>();
  return *registry;
}
}  // namespace

bool RegisterFuzzTarget(const char* name, FuzzFunction function) {
  const bool inserted = Registry().emplace(name, function).second;
  FuzzCheck(inserted, "two fuzz targets with the same name");
  return true;
}

const std::map<std::string, FuzzFunction>& FuzzTargets() { return Registry(); }

void FuzzCheck(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

}  // namespace fairsched::fuzz
