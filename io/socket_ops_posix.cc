// The plain socket calls (io/internal/socket_ops.h, io/socket_options.h,
// io/socket_address.h) on POSIX (Linux): non-blocking, close-on-exec sockets, the
// epoll path's non-blocking syscalls, and errors as -errno. io/socket_ops_windows.cc is the
// Windows twin.
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "io/internal/socket_faults.h"
#include "io/internal/socket_ops.h"

namespace fairsched::internal {

int OpenTcpSocket(int family) {
  // AF_UNIX streams (io/unix_stream.h) share the TCP code path; their protocol is 0.
  const int protocol = family == AF_UNIX ? 0 : IPPROTO_TCP;
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
  return fd >= 0 ? fd : -errno;
}

const bool kListenSetsReuseAddress = true;

int BindAndListen(int fd, const SocketAddress& address, int backlog) {
  if (::bind(fd, address.get(), address.length()) != 0 || ::listen(fd, backlog) != 0) {
    return -errno;
  }
  return 0;
}

namespace {
struct OptionName {
  int level;
  int name;
};
// The level and name of `option` (Linux has them all).
OptionName NameOf(SocketOption option) {
  switch (option) {
    case SocketOption::kNoDelay:
      return {IPPROTO_TCP, TCP_NODELAY};
    case SocketOption::kKeepAlive:
      return {SOL_SOCKET, SO_KEEPALIVE};
    case SocketOption::kKeepIdleSeconds:
      return {IPPROTO_TCP, TCP_KEEPIDLE};
    case SocketOption::kKeepIntervalSeconds:
      return {IPPROTO_TCP, TCP_KEEPINTVL};
    case SocketOption::kKeepProbes:
      return {IPPROTO_TCP, TCP_KEEPCNT};
    case SocketOption::kReceiveBuffer:
      return {SOL_SOCKET, SO_RCVBUF};
    case SocketOption::kSendBuffer:
      return {SOL_SOCKET, SO_SNDBUF};
    case SocketOption::kReuseAddress:
      return {SOL_SOCKET, SO_REUSEADDR};
    case SocketOption::kReusePort:
      return {SOL_SOCKET, SO_REUSEPORT};
    case SocketOption::kV6Only:
      return {IPPROTO_IPV6, IPV6_V6ONLY};
  }
  FAIRSCHED_CHECK(false, "unknown SocketOption");
  return {};
}
}  // namespace

int SetSocketOption(int fd, SocketOption option, int value) {
  const OptionName id = NameOf(option);
  return ::setsockopt(fd, id.level, id.name, &value, sizeof(value)) == 0 ? 0 : -errno;
}

int GetSocketOption(int fd, SocketOption option, int* value) {
  const OptionName id = NameOf(option);
  socklen_t length = sizeof(*value);
  return ::getsockopt(fd, id.level, id.name, value, &length) == 0 ? 0 : -errno;
}


const char* ErrnoText(int sys_errno) { return std::strerror(sys_errno); }

void CloseFd(int fd) { ::close(fd); }

int ShutdownSocket(int fd, ShutdownHow how) {
  const int posix_how = how == ShutdownHow::kRead    ? SHUT_RD
                        : how == ShutdownHow::kWrite ? SHUT_WR
                                                     : SHUT_RDWR;
  return ::shutdown(fd, posix_how) == 0 ? 0 : -errno;
}

int SocketName(int fd, bool peer, sockaddr_storage* storage, socklen_t* length) {
  auto* address = reinterpret_cast<sockaddr*>(storage);
  const int status = peer ? ::getpeername(fd, address, length) : ::getsockname(fd, address, length);
  return status == 0 ? 0 : -errno;
}

// The fault seam (io/internal/socket_faults.h) of the readiness path's calls below: the
// installed faults' answer for a receive / send / accept, 0 when none are installed. A send
// may also be capped (`*limit`).
namespace {
int ReceiveFault(int fd) {
  SocketFaults* faults = InstalledSocketFaults();
  return faults == nullptr ? 0 : faults->BeforeReceive(fd);
}
int SendFault(int fd, std::size_t* limit) {
  SocketFaults* faults = InstalledSocketFaults();
  return faults == nullptr ? 0 : faults->BeforeSend(fd, limit);
}
}  // namespace

std::ptrdiff_t RecvNow(int fd, char* buffer, std::size_t size) {
  if (const int fault = ReceiveFault(fd); fault != 0) return fault;
  const ssize_t n = ::recv(fd, buffer, size, MSG_DONTWAIT);
  return n >= 0 ? n : -errno;
}

std::ptrdiff_t SendNow(int fd, const char* data, std::size_t size) {
  if (const int fault = SendFault(fd, &size); fault != 0) return fault;
  const ssize_t n = ::send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n >= 0 ? n : -errno;
}

// ---- Vectored (TcpStream::ReadSomeV / WriteSomeV / WriteV on epoll) ----
namespace {
msghdr MessageOf(iovec* slices, std::size_t count) {
  msghdr message{};
  message.msg_iov = slices;
  message.msg_iovlen = count;
  return message;
}
}  // namespace

std::ptrdiff_t RecvVNow(int fd, const IoSlice* slices, std::size_t count) {
  if (const int fault = ReceiveFault(fd); fault != 0) return fault;
  msghdr message = MessageOf(IoSlice::Native(slices), count);
  const ssize_t n = ::recvmsg(fd, &message, MSG_DONTWAIT);
  return n >= 0 ? n : -errno;
}

std::ptrdiff_t SendVNow(int fd, const ConstIoSlice* slices, std::size_t count) {
  std::size_t limit = static_cast<std::size_t>(-1);
  if (const int fault = SendFault(fd, &limit); fault != 0) return fault;
  msghdr message = MessageOf(ConstIoSlice::Native(slices), count);
  iovec capped{};
  if (limit != static_cast<std::size_t>(-1)) {
    // A capped send: one slice of at most `limit` bytes (the first non-empty one).
    std::size_t first = 0;
    while (first + 1 < count && message.msg_iov[first].iov_len == 0) ++first;
    capped = message.msg_iov[first];
    capped.iov_len = std::min(capped.iov_len, limit);
    message.msg_iov = &capped;
    message.msg_iovlen = 1;
  }
  const ssize_t n = ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n >= 0 ? n : -errno;
}

int AcceptNow(int listen_fd) {
  if (SocketFaults* faults = InstalledSocketFaults(); faults != nullptr) {
    if (const int fault = faults->BeforeAccept(listen_fd); fault != 0) return fault;
  }
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

int ConnectNow(int fd, const SocketAddress& address) {
  return ::connect(fd, address.get(), address.length()) == 0 ? 0 : -errno;
}

int ConnectProgress(int fd) {
  pollfd entry{fd, POLLOUT, 0};
  if (::poll(&entry, 1, 0) < 0) return -errno;
  if ((entry.revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return -EINPROGRESS;
  int error = 0;
  socklen_t length = sizeof(error);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return -errno;
  return -error;
}

}  // namespace fairsched::internal
