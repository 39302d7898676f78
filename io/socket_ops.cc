// The socket calls of io/internal/socket_ops.h that are the same on every platform, built
// on the per-platform ones (io/socket_ops_posix.cc, io/socket_ops_windows.cc).
#include "io/internal/socket_ops.h"

#include <cerrno>

#include "io/socket_platform.h"

namespace fairsched::internal {

int OpenListeningSocket(const SocketAddress& address, const ListenOptions& options) {
  // IPV6_V6ONLY means nothing for an IPv4 address. Linux refuses the option there and
  // Winsock (Wine at least) accepts it: refuse it here, the same on every platform.
  if (options.v6_only.has_value() && address.family() != AF_INET6) return -EINVAL;
  const int fd = OpenTcpSocket(address.family());
  if (fd < 0) return fd;
  int status = 0;
  if (options.reuse_address && kListenSetsReuseAddress) {
    status = SetSocketOption(fd, SocketOption::kReuseAddress, 1);
  }
  if (status == 0 && options.reuse_port) status = SetSocketOption(fd, SocketOption::kReusePort, 1);
  if (status == 0 && options.v6_only.has_value()) {
    status = SetSocketOption(fd, SocketOption::kV6Only, *options.v6_only ? 1 : 0);
  }
  if (status == 0) status = BindAndListen(fd, address, options.backlog);
  if (status != 0) {
    CloseFd(fd);
    return status;
  }
  return fd;
}

}  // namespace fairsched::internal
