// The socket calls of io/udp.h on Windows (Winsock 2): overlapped, non-inheritable UDP
// sockets for IocpBackend, bind and connect. Sending and receiving are IoOps (WSASendTo /
// WSARecvFrom in io/iocp_backend.cc), so the POSIX file's non-blocking calls have no twin
// here. Errors as -errno, mapped by internal::ErrnoOfWinsockError.
#include "io/iocp_backend.h"
#include "io/udp.h"

#include <ws2tcpip.h>

namespace fairsched::internal {

int OpenUdpSocket(int family) { return OpenOverlappedSocket(family, SOCK_DGRAM, IPPROTO_UDP); }

int BindSocket(int fd, const SocketAddress& address) {
  if (::bind(SocketOf(fd), address.get(), address.length()) != 0) return LastSocketError();
  // An unconnected socket must not hear of the ICMP "port unreachable" its datagrams to
  // some other peer caused: Windows would fail its next receive with WSAECONNRESET; Linux
  // reports nothing (io/udp.h).
  BOOL report = FALSE;
  DWORD bytes = 0;
  if (WSAIoctl(SocketOf(fd), SIO_UDP_CONNRESET, &report, sizeof(report), nullptr, 0, &bytes,
               nullptr, nullptr) != 0) {
    return LastSocketError();
  }
  return 0;
}

int ConnectDatagramSocket(int fd, const SocketAddress& address) {
  return ::connect(SocketOf(fd), address.get(), address.length()) == 0 ? 0 : LastSocketError();
}

// --- UdpSocket's options ---

int SetUdpOption(int fd, int family, UdpOption option, int value) {
  int level = 0;
  int name = 0;
  if (!UdpOptionId(family, option, &level, &name)) return -ENOPROTOOPT;
  DWORD word = static_cast<DWORD>(value);
  if (option == UdpOption::kMulticastInterface && family != AF_INET6) {
    // IPv4: an interface index is given as an address in 0.0.0.0/8, in network order.
    word = htonl(word);
  }
  if (::setsockopt(SocketOf(fd), level, name, reinterpret_cast<const char*>(&word),
                   sizeof(word)) != 0) {
    return LastSocketError();
  }
  return 0;
}

int GetUdpOption(int fd, int family, UdpOption option, int* value) {
  int level = 0;
  int name = 0;
  if (!UdpOptionId(family, option, &level, &name)) return -ENOPROTOOPT;
  DWORD word = 0;
  int length = sizeof(word);
  if (::getsockopt(SocketOf(fd), level, name, reinterpret_cast<char*>(&word), &length) != 0) {
    return LastSocketError();
  }
  *value = static_cast<int>(word);
  return 0;
}

int ChangeMulticastMembership(int fd, int family, const SocketAddress& group,
                              unsigned interface_index, bool join) {
  if (group.family() != family) return -EAFNOSUPPORT;
  int result;
  if (family == AF_INET6) {
    ipv6_mreq request{};
    request.ipv6mr_multiaddr = reinterpret_cast<const sockaddr_in6*>(group.get())->sin6_addr;
    request.ipv6mr_interface = interface_index;
    result = ::setsockopt(SocketOf(fd), IPPROTO_IPV6, join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP,
                          reinterpret_cast<const char*>(&request), sizeof(request));
  } else {
    ip_mreq request{};
    request.imr_multiaddr = reinterpret_cast<const sockaddr_in*>(group.get())->sin_addr;
    request.imr_interface.s_addr = htonl(interface_index);  // an index, as above
    result = ::setsockopt(SocketOf(fd), IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
                          reinterpret_cast<const char*>(&request), sizeof(request));
  }
  return result == 0 ? 0 : LastSocketError();
}

}  // namespace fairsched::internal
