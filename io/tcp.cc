// The non-template parts of the coroutine TCP sockets (io/tcp.h) that every platform
// shares: error messages, address parsing and printing. The socket calls themselves are in
// io/socket_ops_posix.cc and io/socket_ops_windows.cc.
#include "io/tcp.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace fairsched {

const char* ToString(IoErrorCode code) {
  switch (code) {
    case IoErrorCode::kOk:
      return "ok";
    case IoErrorCode::kTimeout:
      return "timed out";
    case IoErrorCode::kEndOfStream:
      return "end of stream (the peer closed the connection)";
    case IoErrorCode::kResetByPeer:
      return "connection reset by peer";
    case IoErrorCode::kRefused:
      return "connection refused";
    case IoErrorCode::kCancelled:
      return "cancelled";
    case IoErrorCode::kShutdown:
      return "the scheduler is shutting down";
    case IoErrorCode::kInvalidAddress:
      return "invalid address";
    case IoErrorCode::kSystem:
      return "system error";
    case IoErrorCode::kClosed:
      return "socket closed (by Close(), maybe while the operation was pending)";
  }
  return "?";
}

IoError IoError::FromErrno(int sys_errno) {
  switch (sys_errno) {
    case 0:
      return IoError();
    case ECONNRESET:
    case EPIPE:
      return IoError(IoErrorCode::kResetByPeer, sys_errno);
    case ECONNREFUSED:
      return IoError(IoErrorCode::kRefused, sys_errno);
    case ETIMEDOUT:
      return IoError(IoErrorCode::kTimeout, sys_errno);
    case ECANCELED:
      return IoError(IoErrorCode::kCancelled, sys_errno);
    default:
      return IoError(IoErrorCode::kSystem, sys_errno);
  }
}

std::string IoError::Message() const {
  std::string message = ToString(code_);
  if (sys_errno_ != 0) {
    message += " (errno " + std::to_string(sys_errno_) + ": " + internal::ErrnoText(sys_errno_) +
               ")";
  }
  return message;
}

IoResult<SocketAddress> SocketAddress::FromHostPort(std::string_view host, std::uint16_t port) {
  const std::string host_text(host);
  SocketAddress address;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage_);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage_);
  if (inet_pton(AF_INET, host_text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    address.length_ = sizeof(sockaddr_in);
    return address;
  }
  if (inet_pton(AF_INET6, host_text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    address.length_ = sizeof(sockaddr_in6);
    return address;
  }
  return IoError(IoErrorCode::kInvalidAddress);
}

IoResult<SocketAddress> SocketAddress::Parse(std::string_view text) {
  std::string_view host;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {  // [v6]:port
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return IoError(IoErrorCode::kInvalidAddress);
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return IoError(IoErrorCode::kInvalidAddress);  // no port, or a bare IPv6 address
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (port_text.empty() || port_text.size() > 5) return IoError(IoErrorCode::kInvalidAddress);
  unsigned port = 0;
  for (const char c : port_text) {
    if (c < '0' || c > '9') return IoError(IoErrorCode::kInvalidAddress);
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port > 65535) return IoError(IoErrorCode::kInvalidAddress);
  return FromHostPort(host, static_cast<std::uint16_t>(port));
}

SocketAddress SocketAddress::FromSockaddr(const sockaddr* address, socklen_t length) {
  SocketAddress result;
  const socklen_t copied = std::min<socklen_t>(length, sizeof(result.storage_));
  std::memcpy(&result.storage_, address, copied);
  result.length_ = copied;
  return result;
}

std::uint16_t SocketAddress::port() const {
  if (family() == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  }
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  }
  return 0;
}

std::string SocketAddress::ToString() const {
  char host[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, host,
              sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, host,
              sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(port());
  }
  return "<no address>";
}

namespace internal {

IoError ErrorOfResult(int result, bool timed_out) {
  if (result == -ECANCELED && timed_out) return IoError(IoErrorCode::kTimeout);
  return IoError::FromErrno(-result);
}

IoError ErrorOfWake(coro::WakeReason reason) {
  switch (reason) {
    case coro::WakeReason::kDeadline:
      return IoError(IoErrorCode::kTimeout);
    case coro::WakeReason::kShutdown:
      return IoError(IoErrorCode::kShutdown);
    case coro::WakeReason::kCancelled:
    case coro::WakeReason::kWakeup:
    case coro::WakeReason::kSignal:
      break;
  }
  return IoError(IoErrorCode::kCancelled);
}

IoError CancellationError() {
  switch (coro::CurrentCancelReason()) {
    case coro::CancelReason::kNone:
      return IoError();
    case coro::CancelReason::kShutdown:
      return IoError(IoErrorCode::kShutdown);
    case coro::CancelReason::kRequested:
    case coro::CancelReason::kDeadline:
      break;
  }
  return IoError(IoErrorCode::kCancelled);
}

namespace {
IoResult<SocketAddress> AddressOf(int fd, bool peer) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  if (const int error = SocketName(fd, peer, &storage, &length); error < 0) {
    return IoError::FromErrno(-error);
  }
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&storage), length);
}
}  // namespace

std::span<const ConstIoSlice> DropSent(std::span<const ConstIoSlice> rest, std::size_t sent,
                                       std::vector<ConstIoSlice>& own) {
  while (!rest.empty() && sent >= rest.front().size()) {
    sent -= rest.front().size();
    rest = rest.subspan(1);
  }
  if (sent == 0) return rest;
  FAIRSCHED_CHECK(!rest.empty(), "WriteV: the kernel reported more bytes sent than given");
  if (own.empty()) {
    own.assign(rest.begin(), rest.end());
    rest = own;
  }
  // `rest` lies in `own` from the first copy on (only ever shortened from the front).
  const std::size_t first = static_cast<std::size_t>(rest.data() - own.data());
  own[first] = ConstIoSlice(own[first].data() + sent, own[first].size() - sent);
  return std::span<const ConstIoSlice>(own).subspan(first);
}

IoResult<SocketAddress> LocalAddressOf(int fd) { return AddressOf(fd, false); }
IoResult<SocketAddress> PeerAddressOf(int fd) { return AddressOf(fd, true); }

}  // namespace internal
}  // namespace fairsched
