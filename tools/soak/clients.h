// Soak clients: plain blocking loopback sockets (not fairsched: they are the load, and a
// bug in the library must not hide itself in them) that drive the echo and kv servers.
//
// Contract:
//   - Every socket has 10-second send and receive timeouts, so no call here blocks longer;
//     a timeout or an unexpected end of stream is reported as a failure (false), never
//     retried silently.
//   - Connect only to 127.0.0.1.
#ifndef FAIRSCHED_TOOLS_SOAK_CLIENTS_H_
#define FAIRSCHED_TOOLS_SOAK_CLIENTS_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fairsched::soak {

// One blocking client socket, closed on destruction.
class ClientSocket {
 public:
  // Connects to 127.0.0.1:port; `receive_buffer` > 0 shrinks SO_RCVBUF first (slow reader).
  explicit ClientSocket(std::uint16_t port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    const timeval timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) Close();
  }
  ~ClientSocket() { Close(); }
  ClientSocket(const ClientSocket&) = delete;
  ClientSocket& operator=(const ClientSocket&) = delete;

  bool ok() const { return fd_ >= 0; }

  bool SendAll(const std::string& bytes) {
    std::size_t sent = 0;
    while (ok() && sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return ok();
  }
  // Sends without waiting until the socket buffer is full or `limit` bytes went; the count.
  std::size_t SendUntilFull(const std::string& chunk, std::size_t limit) {
    std::size_t sent = 0;
    while (ok() && sent < limit) {
      const ssize_t n = ::send(fd_, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      sent += static_cast<std::size_t>(n);
    }
    return sent;
  }
  // Exactly `size` bytes appended to *out (buffered), or false.
  bool ReceiveExactly(std::size_t size, std::string* out) {
    while (buffered_.size() < size) {
      if (!Fill()) return false;
    }
    out->append(buffered_, 0, size);
    buffered_.erase(0, size);
    return true;
  }
  // One line including its '\n' into *line, or false.
  bool ReceiveLine(std::string* line) {
    std::size_t end;
    while ((end = buffered_.find('\n')) == std::string::npos) {
      if (!Fill()) return false;
    }
    line->assign(buffered_, 0, end + 1);
    buffered_.erase(0, end + 1);
    return true;
  }
  // True if the peer ends the stream (reads and drops what comes first) within the timeout.
  bool SeesEnd() {
    char scratch[4096];
    while (ok()) {
      const ssize_t n = ::recv(fd_, scratch, sizeof(scratch), 0);
      if (n == 0) return true;
      if (n < 0 && errno == ECONNRESET) return true;
      if (n < 0 && errno != EINTR) return false;
    }
    return false;
  }
  void ShutdownWrite() {
    if (ok()) ::shutdown(fd_, SHUT_WR);
  }
  // Closes with a reset (RST) instead of a FIN.
  void Reset() {
    if (!ok()) return;
    const linger abort_on_close{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof(abort_on_close));
    Close();
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  bool Fill() {
    char chunk[4096];
    while (ok()) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffered_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    return false;
  }

  int fd_ = -1;
  std::string buffered_;
};

}  // namespace fairsched::soak

#endif  // FAIRSCHED_TOOLS_SOAK_CLIENTS_H_
