// The plain socket calls of the socket layer, one implementation per platform
// (io/socket_ops_posix.cc, io/socket_ops_windows.cc; io/socket_ops.cc for the shared ones):
// open, listen, close, and the readiness path's non-blocking syscalls. Each returns its
// result or -errno and never waits. Internal: the public classes (io/tcp.h, io/udp.h,
// io/unix_stream.h) call them.
#ifndef FAIRSCHED_IO_INTERNAL_SOCKET_OPS_H_
#define FAIRSCHED_IO_INTERNAL_SOCKET_OPS_H_

#include <cstddef>

#include "io/io_op.h"
#include "io/socket_address.h"
#include "io/socket_options.h"

namespace fairsched::internal {

// A non-blocking, close-on-exec TCP socket of `family`, or -errno.
int OpenTcpSocket(int family);
// socket + the options + bind + listen; a non-blocking fd or -errno. The same on every
// platform (io/socket_ops.cc), built on the calls below.
int OpenListeningSocket(const SocketAddress& address, const ListenOptions& options);
inline int OpenListeningSocket(const SocketAddress& address, int backlog) {
  ListenOptions options;
  options.backlog = backlog;
  return OpenListeningSocket(address, options);
}
// One recv that does not block: bytes (0: end of stream) or -errno (-EWOULDBLOCK: nothing
// buffered; on Windows also at the end of stream: only what FIONREAD reports is received).
std::ptrdiff_t RecvNow(int fd, char* buffer, std::size_t size);
// Readiness (epoll) path only, POSIX: one non-blocking send (MSG_NOSIGNAL) / accept4
// (non-blocking, close-on-exec) / connect. Bytes, an fd or 0; -errno on failure.
std::ptrdiff_t SendNow(int fd, const char* data, std::size_t size);
// Vectored twins (epoll path, POSIX): one non-blocking recvmsg into `count` slices / one
// sendmsg (MSG_NOSIGNAL) of them. Bytes or -errno.
std::ptrdiff_t RecvVNow(int fd, const IoSlice* slices, std::size_t count);
std::ptrdiff_t SendVNow(int fd, const ConstIoSlice* slices, std::size_t count);
int AcceptNow(int listen_fd);
int ConnectNow(int fd, const SocketAddress& address);
// Non-blocking: whether a connect in progress on `fd` has finished; 0 (done, connected),
// -EINPROGRESS (not yet) or -errno (failed).
int ConnectProgress(int fd);
// close(2) / closesocket.
void CloseFd(int fd);
// bind(2) then listen(2) with `backlog`: 0 or -errno.
int BindAndListen(int fd, const SocketAddress& address, int backlog);
// Whether OpenListeningSocket honours ListenOptions::reuse_address (SO_REUSEADDR). Not on
// Windows: there SO_REUSEADDR lets another socket steal a bound port, and a listening port
// in TIME_WAIT can be bound again anyway.
extern const bool kListenSetsReuseAddress;

}  // namespace fairsched::internal

#endif  // FAIRSCHED_IO_INTERNAL_SOCKET_OPS_H_
