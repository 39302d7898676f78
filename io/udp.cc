// The socket calls of io/udp.h on POSIX (Linux): non-blocking, close-on-exec UDP sockets
// and the non-blocking recvfrom/sendto both backends' readiness paths make. Errors as -errno,
// like io/socket_ops_posix.cc for TCP. io/udp_windows.cc is the Windows twin (the IOCP path
// sends and receives with IoOps, so it only opens, binds and connects).
#include <netinet/in.h>
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

// --- UdpSocket's options ---

int SetUdpOption(int fd, int family, UdpOption option, int value) {
  int level = 0;
  int name = 0;
  if (!UdpOptionId(family, option, &level, &name)) return -ENOPROTOOPT;
  if (option == UdpOption::kMulticastInterface && family != AF_INET6) {
    // IPv4 takes the interface as an ip_mreqn (by index) rather than an int.
    ip_mreqn request{};
    request.imr_ifindex = value;
    return ::setsockopt(fd, level, name, &request, sizeof(request)) == 0 ? 0 : -errno;
  }
  return ::setsockopt(fd, level, name, &value, sizeof(value)) == 0 ? 0 : -errno;
}

int GetUdpOption(int fd, int family, UdpOption option, int* value) {
  int level = 0;
  int name = 0;
  if (!UdpOptionId(family, option, &level, &name)) return -ENOPROTOOPT;
  socklen_t length = sizeof(*value);
  *value = 0;
  return ::getsockopt(fd, level, name, value, &length) == 0 ? 0 : -errno;
}

int ChangeMulticastMembership(int fd, int family, const SocketAddress& group,
                              unsigned interface_index, bool join) {
  if (group.family() != family) return -EAFNOSUPPORT;
  if (family == AF_INET6) {
    ipv6_mreq request{};
    request.ipv6mr_multiaddr = reinterpret_cast<const sockaddr_in6*>(group.get())->sin6_addr;
    request.ipv6mr_interface = interface_index;
    const int name = join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP;
    return ::setsockopt(fd, IPPROTO_IPV6, name, &request, sizeof(request)) == 0 ? 0 : -errno;
  }
  ip_mreqn request{};
  request.imr_multiaddr = reinterpret_cast<const sockaddr_in*>(group.get())->sin_addr;
  request.imr_ifindex = static_cast<int>(interface_index);
  const int name = join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP;
  return ::setsockopt(fd, IPPROTO_IP, name, &request, sizeof(request)) == 0 ? 0 : -errno;
}

}  // namespace fairsched::internal
