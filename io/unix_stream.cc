// The non-template parts of the Unix-domain stream sockets (io/unix_stream.h), Linux:
// building and printing AF_UNIX addresses, the stale-socket test of UnixListenOptions,
// removing a listener's socket file, and SO_PEERCRED.
#include "io/unix_stream.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace fairsched {

namespace {
// Bytes of sun_path: a path needs one more for its terminating NUL, an abstract name one
// more for its leading NUL.
constexpr std::size_t kSunPathSize = sizeof(sockaddr_un{}.sun_path);
constexpr socklen_t kPathOffset = offsetof(sockaddr_un, sun_path);

const sockaddr_un* UnixOf(const SocketAddress& address) {
  return reinterpret_cast<const sockaddr_un*>(address.get());
}

// Length-checked: `name` fits in sun_path after `prefix` leading NULs plus `suffix`
// trailing ones.
IoResult<SocketAddress> Build(std::string_view name, std::size_t prefix, std::size_t suffix) {
  if (prefix + name.size() + suffix > kSunPathSize) {
    return IoError(IoErrorCode::kInvalidAddress, ENAMETOOLONG);
  }
  sockaddr_un unix_address{};
  unix_address.sun_family = AF_UNIX;
  std::memcpy(unix_address.sun_path + prefix, name.data(), name.size());
  const auto length = static_cast<socklen_t>(kPathOffset + prefix + name.size() + suffix);
  return SocketAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&unix_address), length);
}

// The path of a path address, or empty (another family, abstract, unnamed).
std::string PathOf(const SocketAddress& address) {
  if (address.family() != AF_UNIX || address.length() <= kPathOffset) return {};
  const sockaddr_un* unix_address = UnixOf(address);
  if (unix_address->sun_path[0] == '\0') return {};
  const std::size_t room = static_cast<std::size_t>(address.length() - kPathOffset);
  return std::string(unix_address->sun_path, strnlen(unix_address->sun_path, room));
}
}  // namespace

IoResult<SocketAddress> UnixPathAddress(std::string_view path) {
  if (path.empty() || path.find('\0') != std::string_view::npos) {
    return IoError(IoErrorCode::kInvalidAddress, EINVAL);
  }
  return Build(path, 0, 1);
}

IoResult<SocketAddress> UnixAbstractAddress(std::string_view name) { return Build(name, 1, 0); }

std::string UnixAddressText(const SocketAddress& address) {
  if (address.family() != AF_UNIX) return address.ToString();
  if (address.length() <= kPathOffset) return "(unnamed)";
  const sockaddr_un* unix_address = UnixOf(address);
  if (unix_address->sun_path[0] != '\0') return PathOf(address);
  std::string text(unix_address->sun_path,
                   static_cast<std::size_t>(address.length() - kPathOffset));
  for (char& c : text) {
    if (c == '\0') c = '@';
  }
  return text;
}

namespace internal {

bool RemoveStaleSocketFile(const SocketAddress& address) {
  const std::string path = PathOf(address);
  struct stat status {};
  if (path.empty() || ::lstat(path.c_str(), &status) != 0 || !S_ISSOCK(status.st_mode)) {
    return false;
  }
  // A non-blocking connect: refused at once when nobody listens; a live listener takes it
  // (or answers EAGAIN when its backlog is full): not stale either way.
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool refused =
      ::connect(probe, address.get(), address.length()) != 0 && errno == ECONNREFUSED;
  ::close(probe);
  return refused && ::unlink(path.c_str()) == 0;
}

BoundFile FileOf(const SocketAddress& address) {
  BoundFile file;
  file.path = PathOf(address);
  struct stat status {};
  if (file.path.empty() || ::stat(file.path.c_str(), &status) != 0) return {};
  file.device = status.st_dev;
  file.inode = status.st_ino;
  return file;
}

void RemoveIfSame(const BoundFile& file) {
  struct stat status {};
  if (file.path.empty() || ::lstat(file.path.c_str(), &status) != 0) return;
  if (status.st_dev == file.device && status.st_ino == file.inode) ::unlink(file.path.c_str());
}

IoResult<PeerCredentials> PeerCredentialsOf(int fd) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return IoError::FromErrno(errno);
  }
  return PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
}

}  // namespace internal
}  // namespace fairsched
