// Records which generated "header first" translation units were linked into
// //tests/headers:header_order_test (see tests/headers/BUILD).
#ifndef FAIRSCHED_TESTS_HEADERS_REGISTRY_H_
#define FAIRSCHED_TESTS_HEADERS_REGISTRY_H_

#include <set>
#include <string>

namespace fairsched::testing {

inline std::set<std::string>& HeadersCompiledFirst() {
  static std::set<std::string> headers;
  return headers;
}

// Called by a static initializer of each generated translation unit.
inline bool RegisterHeaderFirst(const char* header) {
  return HeadersCompiledFirst().insert(header).second;
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_HEADERS_REGISTRY_H_
