// SocketAddress: an IPv4, IPv6 or (io/unix_stream.h) AF_UNIX socket address, parsed from
// and printed as text ("127.0.0.1:8080", "[::1]:8080"). A value type; its sockaddr is what
// the socket calls take.
#ifndef FAIRSCHED_IO_SOCKET_ADDRESS_H_
#define FAIRSCHED_IO_SOCKET_ADDRESS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "io/io_error.h"
#include "io/socket_platform.h"

namespace fairsched {

// An IPv4 or IPv6 socket address.
class SocketAddress {
 public:
  SocketAddress() = default;
  // "127.0.0.1:8080", "[::1]:8080", "0.0.0.0:0" (port 0: any free port when listening).
  static IoResult<SocketAddress> Parse(std::string_view text);
  // Host without brackets ("127.0.0.1", "::1") and a port.
  static IoResult<SocketAddress> FromHostPort(std::string_view host, std::uint16_t port);
  static SocketAddress FromSockaddr(const sockaddr* address, socklen_t length);

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t length() const { return length_; }
  int family() const { return storage_.ss_family; }
  std::uint16_t port() const;
  std::string ToString() const;  // same format Parse reads

 private:
  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

namespace internal {
// The socket's own address (getsockname) / its peer's (getpeername).
IoResult<SocketAddress> LocalAddressOf(int fd);
IoResult<SocketAddress> PeerAddressOf(int fd);
// getsockname (peer false) / getpeername (peer true) into `*storage`: 0 or -errno.
int SocketName(int fd, bool peer, sockaddr_storage* storage, socklen_t* length);
}  // namespace internal

}  // namespace fairsched

#endif  // FAIRSCHED_IO_SOCKET_ADDRESS_H_
