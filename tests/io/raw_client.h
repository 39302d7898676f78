// A blocking client socket for the IO tests (tests/io): the peer that connects like nc
// would, independent of the code under test, and can misbehave on purpose (send part of a
// message, never read, disconnect). Every receive has a timeout, so a broken server fails a
// test instead of hanging it.
#ifndef FAIRSCHED_TESTS_IO_RAW_CLIENT_H_
#define FAIRSCHED_TESTS_IO_RAW_CLIENT_H_

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "io/tcp.h"

namespace fairsched::testing {

// A blocking client socket on the test thread (the misbehaving peer). Every receive has a
// timeout, so a broken server fails the test instead of hanging it. Syscalls retry on
// EINTR: io_uring runs a request's completion work on the thread that submitted it, and the
// IoUringBackend constructor (on this thread) submits its first wake read, so that
// completion can interrupt a blocking call of the test thread (seen: recv -> EINTR).
class RawClient {
 public:
  explicit RawClient(const SocketAddress& address) {
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
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  int fd() const { return fd_; }
  bool SendAll(const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
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
      const ssize_t n = ::recv(fd_, data.data() + done, size - done, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    data.resize(done);
    return data;
  }
  // True if the server closed the connection (end of stream or reset) within the timeout.
  bool SeesClose() {
    char byte;
    while (true) {
      const ssize_t n = ::recv(fd_, &byte, 1, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) return true;
      if (n < 0) {
        EXPECT_EQ(errno, ECONNRESET) << std::strerror(errno);
        return errno == ECONNRESET;
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
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_RAW_CLIENT_H_
