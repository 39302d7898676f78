// A connected pair of loopback TCP sockets for the Task-level IO backend tests (tests/io),
// made only through the plain socket calls (io/internal/socket_ops.h: internal::OpenListeningSocket,
// OpenTcpSocket, RecvNow, CloseFd; io/socket_ops_posix.cc, io/socket_ops_windows.cc) and the
// BSD calls Winsock shares (connect, accept, send), so the same test code runs on Linux and
// Windows. Plus the one operation every backend can wait for data with.
#ifndef FAIRSCHED_TESTS_IO_LOOPBACK_PAIR_H_
#define FAIRSCHED_TESTS_IO_LOOPBACK_PAIR_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "io/io_op.h"
#include "io/socket_platform.h"
#include "io/tcp.h"
#include "sched/task.h"
#include "tests/io/io_test_util.h"

namespace fairsched::testing {

// fd() is for the backend under test (attached to it where the backend wants that); the
// other end is the test's peer. Both are closed by the destructor. (Not "near"/"far":
// <windows.h> defines those as macros.)
class LoopbackPair {
 public:
  template <typename Backend>
  explicit LoopbackPair(Backend& backend) {
    IoResult<SocketAddress> loopback = SocketAddress::Parse("127.0.0.1:0");
    const int listener = internal::OpenListeningSocket(loopback.value(), 1);
    EXPECT_GE(listener, 0) << "listen: errno " << -listener;
    IoResult<SocketAddress> address = internal::LocalAddressOf(listener);
    EXPECT_TRUE(address.ok());
    peer_fd_ = internal::OpenTcpSocket(AF_INET);
    EXPECT_GE(peer_fd_, 0) << "socket: errno " << -peer_fd_;
    if (listener < 0 || !address.ok() || peer_fd_ < 0) return;
    // POSIX: the seam's sockets are non-blocking, so connect returns EINPROGRESS and the
    // accept is polled. Windows: both block (plain calls on overlapped sockets block), and
    // the loopback connect is done before accept is called.
    ::connect(peer_fd_, address.value().get(), address.value().length());
    EXPECT_TRUE(WaitUntilTrue(
        [&] {
          fd_ = static_cast<int>(::accept(listener, nullptr, nullptr));
          return fd_ >= 0;
        },
        std::chrono::seconds(10)))
        << "the loopback connection was not accepted";
    internal::CloseFd(listener);
    if (fd_ >= 0) {
      EXPECT_EQ(internal::AttachSocket(backend, fd_), 0);
    }
  }
  ~LoopbackPair() {
    if (fd_ >= 0) internal::CloseFd(fd_);
    if (peer_fd_ >= 0) internal::CloseFd(peer_fd_);
  }
  LoopbackPair(const LoopbackPair&) = delete;
  LoopbackPair& operator=(const LoopbackPair&) = delete;

  int fd() const { return fd_; }
  // The peer sends one byte (the loopback send buffer always has room for it).
  void SendByte(char byte) const { ASSERT_EQ(::send(peer_fd_, &byte, 1, 0), 1); }
  // Receives one byte that is (or within `timeout` will be) buffered at fd(); false if
  // none comes.
  bool ReceiveByte(char* byte,
                       std::chrono::nanoseconds timeout = std::chrono::seconds(5)) const {
    return WaitUntilTrue([&] { return internal::RecvNow(fd_, byte, 1) == 1; }, timeout);
  }
  // Whether nothing is buffered at fd() right now.
  bool IsDrained() const {
    char byte;
    return internal::RecvNow(fd_, &byte, 1) < 0;
  }
  // The peer closes abortively (linger 0: a reset).
  void ResetPeer() {
    const linger abort_close{1, 0};
    ::setsockopt(peer_fd_, SOL_SOCKET, SO_LINGER, reinterpret_cast<const char*>(&abort_close),
                 sizeof(abort_close));
    internal::CloseFd(peer_fd_);
    peer_fd_ = -1;
  }

 private:
  int fd_ = -1;
  int peer_fd_ = -1;
};

// The operation that waits for data on a socket with `Backend`: a Read of one byte into
// `byte` where the backend runs operations (io_uring, IOCP), a one-shot readability Poll
// where it reports readiness (epoll, which has no Read). kDataResult is its result once the
// data is there; kDataWaitConsumes says whether that took the byte out of the socket.
template <typename Backend>
inline constexpr bool kDataWaitConsumes = internal::IsCompletionBased<Backend>();
template <typename Backend>
inline constexpr std::int32_t kDataResult =
    kDataWaitConsumes<Backend> ? 1 : static_cast<std::int32_t>(kIoReadable);
template <typename Backend>
void PrepareDataWait(IoOp& op, int fd, char* byte, IoTarget target) {
  if constexpr (kDataWaitConsumes<Backend>) {
    op.PrepareRead(fd, byte, 1, target);
  } else {
    op.PreparePoll(fd, kIoReadable, target);
  }
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_LOOPBACK_PAIR_H_
