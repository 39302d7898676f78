// The socket calls of io/udp.h on Windows (Winsock 2): overlapped, non-inheritable UDP
// sockets for IocpBackend, bind and connect. Sending and receiving are IoOps (WSASendTo /
// WSARecvFrom in io/iocp_backend.cc), so the POSIX file's non-blocking calls have no twin
// here. Errors as -errno, mapped by internal::ErrnoOfWinsockError.
#include "io/iocp_backend.h"
#include "io/udp.h"

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

}  // namespace fairsched::internal
