// SocketAddress parsing and printing (io/socket_address.h), and the addresses of an open
// socket, on every platform (the getsockname / getpeername call itself is
// internal::SocketName, per platform).
#include "io/socket_address.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fairsched {

IoResult<SocketAddress> SocketAddress::FromHostPort(std::string_view host, std::uint16_t port) {
  // inet_pton reads a C string: a NUL inside `host` would end it early, and "1.2.3.4\0junk"
  // would parse as 1.2.3.4.
  if (host.find('\0') != std::string_view::npos) return IoError(IoErrorCode::kInvalidAddress);
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

IoResult<SocketAddress> LocalAddressOf(int fd) { return AddressOf(fd, false); }
IoResult<SocketAddress> PeerAddressOf(int fd) { return AddressOf(fd, true); }


}  // namespace internal
}  // namespace fairsched
