// The non-template part of the coroutine TCP sockets (io/tcp.h): WriteV's progress over
// the caller's slices.
#include "io/tcp.h"

#include <vector>

namespace fairsched::internal {

std::span<const ConstIoSlice> DropSent(std::span<const ConstIoSlice> rest, std::size_t sent,
                                       std::vector<ConstIoSlice>& own) {
  while (!rest.empty() && sent >= rest.front().size()) {
    sent -= rest.front().size();
    rest = rest.subspan(1);
  }
  if (sent == 0) return rest;
  FAIRSCHED_CHECK(!rest.empty(), "WriteV: the kernel reported more bytes sent than given");
  if (own.empty()) {
    own.assign(rest.begin(), rest.end());
    rest = own;
  }
  // `rest` lies in `own` from the first copy on (only ever shortened from the front).
  const std::size_t first = static_cast<std::size_t>(rest.data() - own.data());
  own[first] = ConstIoSlice(own[first].data() + sent, own[first].size() - sent);
  return std::span<const ConstIoSlice>(own).subspan(first);
}

}  // namespace fairsched::internal
