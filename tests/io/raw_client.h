// A blocking client socket for the IO tests (tests/io): the peer that connects like nc
// would, independent of the code under test, and can misbehave on purpose (send part of a
// message, never read, disconnect). Every receive has a timeout, so a broken server fails a
// test instead of hanging it. POSIX sockets, or Winsock under `--config=mingw` (the calls
// differ only in their types, timeouts and error codes: the #ifdefs below).
#ifndef FAIRSCHED_TESTS_IO_RAW_CLIENT_H_
#define FAIRSCHED_TESTS_IO_RAW_CLIENT_H_

#include <gtest/gtest.h>
#ifndef _WIN32
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "io/socket_platform.h"
#include "io/tcp.h"

namespace fairsched::testing {

// A blocking client socket on the test thread (the misbehaving peer). Every receive has a
// timeout, so a broken server fails the test instead of hanging it. Syscalls retry on
// EINTR: io_uring runs a request's completion work on the thread that submitted it, and the
// IoUringBackend constructor (on this thread) submits its first wake read, so that
// completion can interrupt a blocking call of the test thread (seen: recv -> EINTR).
class RawClient {
 public:
#ifdef _WIN32
  using Fd = SOCKET;
  static constexpr Fd kNoFd = INVALID_SOCKET;
#else
  using Fd = int;
  static constexpr Fd kNoFd = -1;
#endif

  explicit RawClient(const SocketAddress& address) {
#ifdef _WIN32
    fd_ = ::socket(address.family(), SOCK_STREAM, 0);
    EXPECT_NE(fd_, kNoFd);
    const DWORD timeout_ms = 10000;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, reinterpret_cast<const char*>(&timeout_ms),
                 sizeof(timeout_ms));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, reinterpret_cast<const char*>(&timeout_ms),
                 sizeof(timeout_ms));
    connected_ = ::connect(fd_, address.get(), address.length()) == 0;
    EXPECT_TRUE(connected_) << "connect: WSA error " << ::WSAGetLastError();
#else
    fd_ = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd_, 0);
    timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    connected_ = ::connect(fd_, address.get(), address.length()) == 0;
    if (!connected_ && errno == EINTR) {  // the connect goes on: wait for its outcome
      pollfd entry{fd_, POLLOUT, 0};
      while (::poll(&entry, 1, 10000) < 0 && errno == EINTR) {
      }
      int error = 0;
      socklen_t length = sizeof(error);
      ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length);
      connected_ = (entry.revents & POLLOUT) != 0 && error == 0;
      errno = error;
    }
    EXPECT_TRUE(connected_) << std::strerror(errno);
#endif
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  Fd fd() const { return fd_; }
  bool SendAll(const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
      const long n = SendSome(data.data() + done, data.size() - done);
      if (n < 0 && Interrupted()) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Reads exactly `size` bytes; shorter if the stream ends, fails or times out.
  std::string Receive(std::size_t size) {
    std::string data(size, '\0');
    std::size_t done = 0;
    while (done < size) {
      const long n = ReceiveSome(data.data() + done, size - done);
      if (n < 0 && Interrupted()) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    data.resize(done);
    return data;
  }
  // One receive: up to `max` bytes, whatever has arrived (waits for at least one); empty at
  // the end of the stream, on an error or at the timeout.
  std::string ReceiveAvailable(std::size_t max) {
    std::string data(max, '\0');
    long n;
    do {
      n = ReceiveSome(data.data(), max);
    } while (n < 0 && Interrupted());
    data.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return data;
  }
  // True if the server closed the connection (end of stream or reset) within the timeout.
  bool SeesClose() {
    char byte;
    while (true) {
      const long n = ReceiveSome(&byte, 1);
      if (n < 0 && Interrupted()) continue;
      if (n == 0) return true;
      if (n < 0) {
        EXPECT_TRUE(WasReset()) << "recv failed without a reset";
        return WasReset();
      }
    }
  }
  // Sends `bytes` and reads as many back: whether they came back unchanged (an echo).
  bool RoundTrip(const std::string& bytes) {
    return SendAll(bytes) && Receive(bytes.size()) == bytes;
  }
  // Reads up to and including the next '\n' (one byte at a time: tests only); shorter if
  // the stream ends, fails or times out first.
  std::string ReceiveLine() {
    std::string line;
    while (line.empty() || line.back() != '\n') {
      const std::string byte = Receive(1);
      if (byte.empty()) break;
      line += byte;
    }
    return line;
  }
  // One send call: the bytes it took; 0 if it timed out (the send timeout) or was
  // interrupted; -1 if the connection failed (reset: the server is gone).
  long SendOnce(const std::string& data) {
    const long n = SendSome(data.data(), data.size());
    if (n >= 0) return n;
    return TimedOutOrInterrupted() ? 0 : -1;
  }
  // True if a byte (or the end of the stream) is ready to read within `wait`; the byte is
  // left in place.
  bool Readable(std::chrono::milliseconds wait) const { return Readable(fd_, wait); }
  // The same for any socket (one the caller made without a RawClient).
  static bool Readable(Fd fd, std::chrono::milliseconds wait) {
#ifdef _WIN32
    WSAPOLLFD entry{fd, POLLRDNORM, 0};
    return ::WSAPoll(&entry, 1, static_cast<int>(wait.count())) > 0;
#else
    pollfd entry{fd, POLLIN, 0};
    while (true) {
      const int ready = ::poll(&entry, 1, static_cast<int>(wait.count()));
      if (ready < 0 && errno == EINTR) continue;
      return ready > 0;
    }
#endif
  }
  // Half-close: no more bytes from this side (FIN); reading goes on.
  bool ShutdownWrite() {
#ifdef _WIN32
    return ::shutdown(fd_, SD_SEND) == 0;
#else
    return ::shutdown(fd_, SHUT_WR) == 0;
#endif
  }
  // A small receive buffer, so a server's writes to a peer that does not read block soon.
  void SetReceiveBuffer(int bytes) {
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, reinterpret_cast<const char*>(&bytes),
                 sizeof(bytes));
  }
  // How long one send may block before SendOnce returns 0.
  void SetSendTimeout(std::chrono::milliseconds timeout) {
#ifdef _WIN32
    const DWORD ms = static_cast<DWORD>(timeout.count());
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, reinterpret_cast<const char*>(&ms), sizeof(ms));
#else
    const timeval value{static_cast<time_t>(timeout.count() / 1000),
                        static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &value, sizeof(value));
#endif
  }
  void Close() {
#ifdef _WIN32
    if (fd_ != kNoFd) ::closesocket(fd_);
#else
    if (fd_ != kNoFd) ::close(fd_);
#endif
    fd_ = kNoFd;
  }

 private:
  // One send/recv call: bytes moved, 0 at the end of the stream, < 0 on an error.
#ifdef _WIN32
  long SendSome(const char* data, std::size_t size) {
    return ::send(fd_, data, static_cast<int>(size), 0);
  }
  long ReceiveSome(char* data, std::size_t size) {
    return ::recv(fd_, data, static_cast<int>(size), 0);
  }
  static bool Interrupted() { return false; }  // Winsock calls are not interrupted
  static bool WasReset() { return ::WSAGetLastError() == WSAECONNRESET; }
  static bool TimedOutOrInterrupted() { return ::WSAGetLastError() == WSAETIMEDOUT; }
#else
  long SendSome(const char* data, std::size_t size) {
    return ::send(fd_, data, size, MSG_NOSIGNAL);
  }
  long ReceiveSome(char* data, std::size_t size) { return ::recv(fd_, data, size, 0); }
  static bool Interrupted() { return errno == EINTR; }
  static bool WasReset() { return errno == ECONNRESET; }
  static bool TimedOutOrInterrupted() { return errno == EAGAIN || errno == EINTR; }
#endif

  Fd fd_ = kNoFd;
  bool connected_ = false;
};

// Whether a connection to `address` fails now (nothing listens there any more). One
// blocking connect from a fresh socket, closed again at once.
inline bool ConnectionRefused(const SocketAddress& address) {
#ifdef _WIN32
  const SOCKET fd = ::socket(address.family(), SOCK_STREAM, 0);
  const bool refused = ::connect(fd, address.get(), address.length()) != 0;
  ::closesocket(fd);
#else
  const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  int result;
  do {
    result = ::connect(fd, address.get(), address.length());
  } while (result != 0 && errno == EINTR);
  ::close(fd);
  const bool refused = result != 0;
#endif
  return refused;
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_RAW_CLIENT_H_
