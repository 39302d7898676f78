// The socket options of the socket layer: ListenOptions (how TcpListener::Listen sets up its
// socket), KeepAlive (TcpStream::EnableKeepAlive), ShutdownHow (TcpStream::Shutdown), and
// the internal int-valued option calls that io/socket_ops_posix.cc and
// io/socket_ops_windows.cc map to each platform's level and name.
#ifndef FAIRSCHED_IO_SOCKET_OPTIONS_H_
#define FAIRSCHED_IO_SOCKET_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>

namespace fairsched {

// How TcpListener::Listen sets up its socket (options set before bind).
struct ListenOptions {
  int backlog = 1024;
  // SO_REUSEADDR: bind a port whose old connections are still in TIME_WAIT (a restarted
  // server). POSIX only; Windows ignores it (there SO_REUSEADDR would let another socket
  // take the port, and a TIME_WAIT port can be bound anyway).
  bool reuse_address = true;
  // SO_REUSEPORT (Linux): several listeners on one port, the kernel spreading connections
  // among them; each must set it. Windows has none: Listen fails with kSystem
  // (ENOPROTOOPT).
  bool reuse_port = false;
  // IPV6_V6ONLY for an IPv6 address: true accepts IPv6 only, false IPv4 (mapped) too;
  // unset keeps the system default (Linux: net.ipv6.bindv6only, usually false). Set on an
  // IPv4 address it is an error (Listen fails).
  std::optional<bool> v6_only;
};

// TCP keepalive (SO_KEEPALIVE and its timers): probes an idle connection, so a peer that
// vanished without a FIN or reset ends it with an error instead of a silent forever. Zero
// fields keep the system's default (Linux: 7200 s idle, 75 s interval, 9 probes).
struct KeepAlive {
  std::chrono::seconds idle{0};      // TCP_KEEPIDLE: silence before the first probe
  std::chrono::seconds interval{0};  // TCP_KEEPINTVL: between unanswered probes
  int probes = 0;                    // TCP_KEEPCNT: unanswered probes that end the connection
};

// How Shutdown ends a direction.
enum class ShutdownHow { kRead, kWrite, kBoth };

namespace internal {

// The socket options TcpStream and TcpListener set; io/socket_ops_*.cc map each to its
// platform's level and name.
enum class SocketOption : std::uint8_t {
  kNoDelay,           // IPPROTO_TCP TCP_NODELAY (0/1)
  kKeepAlive,         // SOL_SOCKET SO_KEEPALIVE (0/1)
  kKeepIdleSeconds,   // IPPROTO_TCP TCP_KEEPIDLE
  kKeepIntervalSeconds,  // IPPROTO_TCP TCP_KEEPINTVL
  kKeepProbes,        // IPPROTO_TCP TCP_KEEPCNT
  kReceiveBuffer,     // SOL_SOCKET SO_RCVBUF (bytes)
  kSendBuffer,        // SOL_SOCKET SO_SNDBUF (bytes)
  kReuseAddress,      // SOL_SOCKET SO_REUSEADDR (0/1)
  kReusePort,         // SOL_SOCKET SO_REUSEPORT (0/1), Linux only
  kV6Only,            // IPPROTO_IPV6 IPV6_V6ONLY (0/1)
};
// setsockopt / getsockopt of an int-valued option: 0 or -errno (-ENOPROTOOPT: the platform
// has no such option).
int SetSocketOption(int fd, SocketOption option, int value);
int GetSocketOption(int fd, SocketOption option, int* value);
// shutdown(2) / Winsock shutdown: 0 or -errno.
int ShutdownSocket(int fd, ShutdownHow how);

}  // namespace internal
}  // namespace fairsched

#endif  // FAIRSCHED_IO_SOCKET_OPTIONS_H_
