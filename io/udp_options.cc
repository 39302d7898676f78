// io/udp.h's option table, the same on every platform: the level and name of each
// internal::UdpOption (the option calls are in io/udp.cc and io/udp_windows.cc).
#include "io/udp.h"

#ifdef _WIN32
#include "io/iocp_backend.h"  // <winsock2.h>

#include <ws2tcpip.h>
#else
#include <netinet/in.h>
#include <sys/socket.h>
#endif

namespace fairsched::internal {

bool UdpOptionId(int family, UdpOption option, int* level, int* name) {
  const bool v6 = family == AF_INET6;
  *level = v6 ? IPPROTO_IPV6 : IPPROTO_IP;
  switch (option) {
    case UdpOption::kBroadcast:
      *level = SOL_SOCKET;
      *name = SO_BROADCAST;
      return true;
    case UdpOption::kReceiveBuffer:
      *level = SOL_SOCKET;
      *name = SO_RCVBUF;
      return true;
    case UdpOption::kSendBuffer:
      *level = SOL_SOCKET;
      *name = SO_SNDBUF;
      return true;
    case UdpOption::kMulticastInterface:
      *name = v6 ? IPV6_MULTICAST_IF : IP_MULTICAST_IF;
      return true;
    case UdpOption::kMulticastHops:
      *name = v6 ? IPV6_MULTICAST_HOPS : IP_MULTICAST_TTL;
      return true;
    case UdpOption::kMulticastLoop:
      *name = v6 ? IPV6_MULTICAST_LOOP : IP_MULTICAST_LOOP;
      return true;
  }
  return false;
}

}  // namespace fairsched::internal
