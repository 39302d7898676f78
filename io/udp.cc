// The socket calls of io/udp.h on POSIX (Linux): non-blocking, close-on-exec UDP sockets
// and the non-blocking recvfrom/sendto both backends' readiness paths make. Errors as -errno,
// like io/socket_ops_posix.cc for TCP. io/udp_windows.cc is the Windows twin (the IOCP path
// sends and receives with IoOps, so it only opens, binds and connects).
#include <sys/socket.h>

#include <cerrno>

#include "io/udp.h"

namespace fairsched::internal {

int OpenUdpSocket(int family) {
  const int fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
  return fd >= 0 ? fd : -errno;
}

int BindSocket(int fd, const SocketAddress& address) {
  return ::bind(fd, address.get(), address.length()) == 0 ? 0 : -errno;
}

int ConnectDatagramSocket(int fd, const SocketAddress& address) {
  return ConnectNow(fd, address);  // a UDP connect never waits
}

std::ptrdiff_t ReceiveFromNow(int fd, char* buffer, std::size_t size, SocketAddress* from) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  // MSG_TRUNC: return the datagram's real length even when it is longer than `size`
  // (udp(7), Linux 2.6.8+), so the caller can report the truncation.
  const ssize_t n = ::recvfrom(fd, buffer, size, MSG_DONTWAIT | MSG_TRUNC,
                               reinterpret_cast<sockaddr*>(&storage), &length);
  if (n < 0) return -errno;
  *from = SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
  return n;
}

std::ptrdiff_t SendToNow(int fd, const char* data, std::size_t size, const SocketAddress* to) {
  const ssize_t n = ::sendto(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL,
                             to != nullptr ? to->get() : nullptr, to != nullptr ? to->length() : 0);
  return n >= 0 ? n : -errno;
}

}  // namespace fairsched::internal
