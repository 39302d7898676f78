// Unix-domain stream sockets (AF_UNIX, SOCK_STREAM) for coroutines on an epoll or io_uring
// scheduler (Linux). A Unix connection is the TCP layer's stream class itself:
// UnixStream<S> is TcpStream<S> (io/tcp.h), with the same operations, deadlines,
// cancellation, errors and backends; only the address family and the address differ. So
// everything written for TcpStream or for a ByteStream (BufferedStream, TlsStream, the
// example servers' handlers) runs over a Unix socket unchanged.
//
//   IoResult<SocketAddress> address = UnixPathAddress("/run/app/app.sock");
//   IoResult<UnixListener<S>> listener = UnixListener<S>::Listen(scheduler, address.value());
//   ... co_await listener.value().Accept(deadline)                    // a UnixStream<S>
//   ... co_await UnixStream<S>::Connect(scheduler, address.value(), deadline)
//
// Contract, for users (what differs from TCP; the rest is io/tcp.h's):
//   - Addresses are SocketAddress values of family AF_UNIX, built by UnixPathAddress (a
//     file system path) or UnixAbstractAddress (Linux's abstract namespace: no file, gone
//     with the last socket). A path or name that does not fit sun_path (107 bytes plus the
//     terminating or leading NUL) is refused there with kInvalidAddress / ENAMETOOLONG, an
//     empty one or one with a NUL byte with kInvalidAddress / EINVAL: nothing is truncated.
//     SocketAddress::ToString does not know AF_UNIX; print with UnixAddressText.
//   - Listening on a path that exists fails with kSystem / EADDRINUSE: Listen never removes
//     a file by default, because it cannot tell a stale socket file from one a live server
//     (or another program) owns. UnixListenOptions::remove_stale opts in to removing a
//     STALE one: the path is a socket and a connect to it is refused (nobody listens); a
//     live listener's path or a non-socket file still fails with EADDRINUSE. (The test and
//     the removal are two steps: two processes that start on one path at the same moment
//     must not both opt in.) Close (and the destructor) removes the socket file the
//     listener created, unless the path no longer names that file (removed, or replaced by
//     someone else meanwhile).
//   - Connect to a path with no socket file fails with kSystem / ENOENT, to a socket file
//     nobody listens on with kRefused. On epoll a connect to a listener whose backlog is full
//     fails at once with kSystem / EAGAIN (Unix connects do not wait for room in the kernel).
//   - TCP-only options (SetNoDelay, the keepalive timers) fail with kSystem (EOPNOTSUPP);
//     the buffer sizes work.
//   - PeerCredentialsOf(stream): the connecting process's pid, uid and gid as the kernel saw
//     them at connect time (SO_PEERCRED).
//   - Windows has AF_UNIX since Windows 10 1803, but Wine 8 (where the Windows build is
//     tested) refuses AF_UNIX sockets, so the IOCP path is not wired for it:
//     //io:unix_stream is Linux-only (see docs/io.md).
#ifndef FAIRSCHED_IO_UNIX_STREAM_H_
#define FAIRSCHED_IO_UNIX_STREAM_H_

#include <sys/types.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>

#include "coro/lazy.h"
#include "io/tcp.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched {

// A file system path address ("/run/app.sock", relative paths too).
IoResult<SocketAddress> UnixPathAddress(std::string_view path);
// A Linux abstract address: `name` without the leading NUL (any bytes, NULs included).
IoResult<SocketAddress> UnixAbstractAddress(std::string_view name);
// The path, "@name" for an abstract address (its NUL bytes as "@" too, as ss(8) prints
// them), "(unnamed)" for an unbound socket (a connecting client's usual local address);
// other families: SocketAddress::ToString.
std::string UnixAddressText(const SocketAddress& address);

template <typename Scheduler>
using UnixStream = TcpStream<Scheduler>;

struct UnixListenOptions {
  int backlog = 1024;
  // Remove a stale socket file at the path (a socket nobody listens on) and bind again; see
  // the file comment. Off by default: an existing path fails with EADDRINUSE.
  bool remove_stale = false;
};

// What the kernel recorded about the connecting process (SO_PEERCRED).
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

namespace internal {
// remove_stale's test and removal: if `address` is a path whose file is a socket that
// refuses a connect (nobody listens), unlinks it and returns true.
bool RemoveStaleSocketFile(const SocketAddress& address);
// The file a path address names, recorded after bind so that Close removes only that file.
struct BoundFile {
  std::string path;  // empty: nothing to remove (abstract address)
  dev_t device = 0;
  ino_t inode = 0;
};
BoundFile FileOf(const SocketAddress& address);
void RemoveIfSame(const BoundFile& file);
IoResult<PeerCredentials> PeerCredentialsOf(int fd);
}  // namespace internal

// kClosed on a closed stream (also one that races with Close).
template <typename Scheduler>
IoResult<PeerCredentials> PeerCredentialsOf(const UnixStream<Scheduler>& stream) {
  return stream.WithFd([](int fd) { return internal::PeerCredentialsOf(fd); });
}

// A listening Unix stream socket: TcpListener's accept path, plus the socket file's
// lifetime. Move-only; the destructor closes it (and removes its file).
template <typename Scheduler>
class UnixListener {
 public:
  UnixListener() = default;
  UnixListener(UnixListener&& other) noexcept
      : listener_(std::move(other.listener_)), file_(std::exchange(other.file_, {})) {
    file_claimed_.store(other.file_claimed_.load(std::memory_order_relaxed),
                        std::memory_order_relaxed);
  }
  UnixListener& operator=(UnixListener&& other) noexcept {
    if (this != &other) {
      Close();
      listener_ = std::move(other.listener_);
      file_ = std::exchange(other.file_, {});
      // Relaxed: a move is not concurrent with anything on either object.
      file_claimed_.store(other.file_claimed_.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
    }
    return *this;
  }
  ~UnixListener() { Close(); }

  // Binds and listens (any thread). `address`: UnixPathAddress or UnixAbstractAddress.
  static IoResult<UnixListener> Listen(Scheduler& scheduler, const SocketAddress& address,
                                       const UnixListenOptions& options = {}) {
    if (address.family() != AF_UNIX) return IoError(IoErrorCode::kInvalidAddress, EAFNOSUPPORT);
    ListenOptions socket_options;
    socket_options.backlog = options.backlog;
    socket_options.reuse_address = false;  // no meaning for AF_UNIX
    IoResult<TcpListener<Scheduler>> listener =
        TcpListener<Scheduler>::Listen(scheduler, address, socket_options);
    if (!listener.ok() && listener.error().sys_errno() == EADDRINUSE && options.remove_stale &&
        internal::RemoveStaleSocketFile(address)) {
      listener = TcpListener<Scheduler>::Listen(scheduler, address, socket_options);
    }
    if (!listener.ok()) return listener.error();
    return UnixListener(std::move(listener).value(), internal::FileOf(address));
  }

  // Waits for the next connection (inside a coroutine on the listener's scheduler); as
  // TcpListener::Accept.
  coro::Lazy<IoResult<UnixStream<Scheduler>>> Accept(TaskDeadline deadline) {
    return listener_.Accept(deadline);
  }

  // As TcpListener's (kClosed on a closed listener; fd() aborts there).
  IoResult<SocketAddress> LocalAddress() const { return listener_.LocalAddress(); }
  bool IsOpen() const { return listener_.IsOpen(); }
  int fd() const { return listener_.fd(); }
  // Closes the socket and removes its file: any thread, idempotent, also while another
  // coroutine's Accept is pending (it returns kClosed) or another thread closes it too (one
  // of the calls removes the file).
  void Close() {
    listener_.Close();
    // Acq_rel: the one call that claims the file is the only one that reads file_ after
    // the claim; the other calls only see the flag. (The path string is written only by the
    // constructors and the moves, which no Close runs concurrently with.)
    if (file_.path.empty() || file_claimed_.exchange(true, std::memory_order_acq_rel)) return;
    internal::RemoveIfSame(file_);
  }

 private:
  UnixListener(TcpListener<Scheduler> listener, internal::BoundFile file)
      : listener_(std::move(listener)), file_(std::move(file)) {}

  TcpListener<Scheduler> listener_;
  internal::BoundFile file_;
  Atomic<bool> file_claimed_{false};  // a Close has removed (or is removing) file_
};

}  // namespace fairsched

#endif  // FAIRSCHED_IO_UNIX_STREAM_H_
