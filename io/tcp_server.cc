// io/tcp_server.h's platform part: the second socket handle a TcpServer keeps per session
// to shut its read side down at Shutdown.
#include "io/tcp_server.h"

#ifdef _WIN32
#include <climits>
#include <cstdint>

#include "io/iocp_backend.h"
#else
#include <fcntl.h>
#endif

namespace fairsched::internal {

int DuplicateSocketHandle(int fd) {
#ifdef _WIN32
  WSAPROTOCOL_INFOW info;
  if (WSADuplicateSocketW(SocketOf(fd), GetCurrentProcessId(), &info) != 0) return -1;
  const SOCKET copy = WSASocketW(FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO, FROM_PROTOCOL_INFO,
                                 &info, 0, WSA_FLAG_NO_HANDLE_INHERIT);
  if (copy == INVALID_SOCKET) return -1;
  const auto value = static_cast<std::intptr_t>(copy);
  if (value > INT_MAX) {  // the int fd convention cannot hold it: do without
    ::closesocket(copy);
    return -1;
  }
  return static_cast<int>(value);
#else
  return ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
#endif
}

}  // namespace fairsched::internal
