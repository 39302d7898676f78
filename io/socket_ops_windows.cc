// The plain socket calls (io/internal/socket_ops.h, io/socket_options.h,
// io/socket_address.h) on Windows (Winsock 2): overlapped, non-inheritable sockets
// for IocpBackend, with Winsock errors mapped to -errno (internal::ErrnoOfWinsockError).
// Only the completion path exists here: the epoll path's non-blocking syscalls (SendNow,
// AcceptNow, ConnectNow, ConnectProgress) are POSIX-only and not defined.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "io/iocp_backend.h"
#include "io/internal/socket_ops.h"

namespace fairsched::internal {

namespace {
// Winsock is started before main, so that address parsing (inet_pton), which a program may
// do before it creates a scheduler or a socket, never meets an uninitialised Winsock.
const bool winsock_started = (EnsureWinsock(), true);
}  // namespace

// mingw-w64 defines the POSIX socket errnos (numbers above 100, which ErrnoOfWinsockError
// maps Winsock errors to), but msvcrt's strerror calls every one of them "Unknown error".
const char* ErrnoText(int sys_errno) {
  switch (sys_errno) {
    case EMSGSIZE: return "Message too long";
    case ECONNRESET: return "Connection reset by peer";
    case ECONNREFUSED: return "Connection refused";
    case ECONNABORTED: return "Software caused connection abort";
    case ETIMEDOUT: return "Connection timed out";
    case ECANCELED: return "Operation canceled";
    case ENOTCONN: return "Transport endpoint is not connected";
    case EADDRINUSE: return "Address already in use";
    case EADDRNOTAVAIL: return "Cannot assign requested address";
    case EAFNOSUPPORT: return "Address family not supported by protocol";
    case EOPNOTSUPP: return "Operation not supported";
    case ENETUNREACH: return "Network is unreachable";
    case EHOSTUNREACH: return "No route to host";
    case EINPROGRESS: return "Operation now in progress";
    case ENOPROTOOPT: return "Protocol not available";
    case EPROTO: return "Protocol error";
    case ENOBUFS: return "No buffer space available";
    default: return std::strerror(sys_errno);
  }
}

int OpenOverlappedSocket(int family, int type, int protocol) {
  EnsureWinsock();
  const SOCKET socket = WSASocketW(family, type, protocol, nullptr, 0,
                                   WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
  if (socket == INVALID_SOCKET) return LastSocketError();
  FAIRSCHED_CHECK(socket <= static_cast<SOCKET>(INT_MAX),
                  "a Winsock socket handle does not fit in an int");
  return static_cast<int>(socket);
}

int OpenTcpSocket(int family) { return OpenOverlappedSocket(family, SOCK_STREAM, IPPROTO_TCP); }

// (Why not: see io/internal/socket_ops.h.)
const bool kListenSetsReuseAddress = false;

int BindAndListen(int fd, const SocketAddress& address, int backlog) {
  if (::bind(SocketOf(fd), address.get(), address.length()) != 0 ||
      ::listen(SocketOf(fd), backlog) != 0) {
    return LastSocketError();
  }
  return 0;
}

namespace {
struct OptionName {
  int level;
  int name;
};
// The level and name of `option`, or nullopt where Winsock has none: SO_REUSEPORT, and the
// keepalive timers (mingw-w64's headers do not declare them).
std::optional<OptionName> NameOf(SocketOption option) {
  switch (option) {
    case SocketOption::kNoDelay:
      return OptionName{IPPROTO_TCP, TCP_NODELAY};
    case SocketOption::kKeepAlive:
      return OptionName{SOL_SOCKET, SO_KEEPALIVE};
    case SocketOption::kReceiveBuffer:
      return OptionName{SOL_SOCKET, SO_RCVBUF};
    case SocketOption::kSendBuffer:
      return OptionName{SOL_SOCKET, SO_SNDBUF};
    case SocketOption::kReuseAddress:
      return OptionName{SOL_SOCKET, SO_REUSEADDR};
    case SocketOption::kV6Only:
      return OptionName{IPPROTO_IPV6, IPV6_V6ONLY};
    case SocketOption::kKeepIdleSeconds:
    case SocketOption::kKeepIntervalSeconds:
    case SocketOption::kKeepProbes:
    case SocketOption::kReusePort:
      break;
  }
  return std::nullopt;
}
}  // namespace

int SetSocketOption(int fd, SocketOption option, int value) {
  const std::optional<OptionName> id = NameOf(option);
  if (!id.has_value()) return -ENOPROTOOPT;
  return ::setsockopt(SocketOf(fd), id->level, id->name, reinterpret_cast<const char*>(&value),
                      sizeof(value)) == 0
             ? 0
             : LastSocketError();
}

int GetSocketOption(int fd, SocketOption option, int* value) {
  const std::optional<OptionName> id = NameOf(option);
  if (!id.has_value()) return -ENOPROTOOPT;
  // Winsock may store a yes/no option (SO_KEEPALIVE, TCP_NODELAY) as a one-byte BOOLEAN and
  // report a length of 1 (Wine does): read into a zeroed int, so the bytes it did not write
  // are 0 rather than whatever *value held, and accept only the two lengths it can mean.
  int whole = 0;
  int length = sizeof(whole);
  if (::getsockopt(SocketOf(fd), id->level, id->name, reinterpret_cast<char*>(&whole),
                   &length) != 0) {
    return LastSocketError();
  }
  if (length != 1 && length != static_cast<int>(sizeof(whole))) return -EINVAL;
  *value = whole;
  return 0;
}

void CloseFd(int fd) { ::closesocket(SocketOf(fd)); }

int ShutdownSocket(int fd, ShutdownHow how) {
  const int windows_how = how == ShutdownHow::kRead    ? SD_RECEIVE
                          : how == ShutdownHow::kWrite ? SD_SEND
                                                       : SD_BOTH;
  return ::shutdown(SocketOf(fd), windows_how) == 0 ? 0 : LastSocketError();
}

int SocketName(int fd, bool peer, sockaddr_storage* storage, socklen_t* length) {
  auto* address = reinterpret_cast<sockaddr*>(storage);
  const int status = peer ? ::getpeername(SocketOf(fd), address, length)
                          : ::getsockname(SocketOf(fd), address, length);
  return status == 0 ? 0 : LastSocketError();
}

std::ptrdiff_t RecvNow(int fd, char* buffer, std::size_t size) {
  // The sockets are blocking for plain calls (overlapped calls never block); a recv of no
  // more than what is buffered returns at once.
  u_long buffered = 0;
  if (::ioctlsocket(SocketOf(fd), FIONREAD, &buffered) != 0) return LastSocketError();
  if (buffered == 0) return -EWOULDBLOCK;
  const int length = static_cast<int>(std::min<std::size_t>({size, buffered, INT_MAX}));
  const int n = ::recv(SocketOf(fd), buffer, length, 0);
  return n >= 0 ? n : LastSocketError();
}

}  // namespace fairsched::internal
