// One load-generator connection (tools/loadgen/loadgen.cc): its closed loop of frames,
// the send pump and the bounded receive step. In a header of its own so that the receive
// step's bound is unit-tested (tests/tools/loadgen_connection_test.cc).
#ifndef FAIRSCHED_TOOLS_LOADGEN_CONNECTION_H_
#define FAIRSCHED_TOOLS_LOADGEN_CONNECTION_H_

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace fairsched::loadgen {

using Clock = std::chrono::steady_clock;

struct Connection {
  int fd = -1;
  bool flood = false;
  int depth = 1;                       // frames kept in flight
  std::deque<Clock::time_point> sent;  // send times of frames in flight
  std::size_t out_offset = 0;          // bytes of the current outgoing frame already sent
  int out_frames = 0;                  // frames still to send (including the partial one)
  bool want_write = false;
  std::vector<char> in;  // received bytes of the current frame
  std::size_t in_size = 0;
};

inline void SetWrite(int epoll_fd, Connection* c, bool want) {
  if (c->want_write == want) return;
  c->want_write = want;
  epoll_event event{};
  event.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
  event.data.ptr = c;
  epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &event);
}

// Sends queued frames until done or EAGAIN. False on a connection error.
inline bool Pump(int epoll_fd, Connection* c, const std::string& frame) {
  while (c->out_frames > 0) {
    const ssize_t n = ::send(c->fd, frame.data() + c->out_offset, frame.size() - c->out_offset,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        SetWrite(epoll_fd, c, true);
        return true;
      }
      return false;
    }
    if (c->out_offset == 0) c->sent.push_back(Clock::now());
    c->out_offset += static_cast<std::size_t>(n);
    if (c->out_offset == frame.size()) {
      c->out_offset = 0;
      --c->out_frames;
    }
  }
  SetWrite(epoll_fd, c, false);
  return true;
}

// The socket is readable: receives complete echoes of `frame` (each checked byte for byte;
// `on_echo(latency_ns)` is called for it) and sends a new frame for each, but at most
// `depth` echoes per call: a connection whose echoes keep coming (a flooder, served as fast
// as it sends) must not hold the thread while the other connections' echoes wait, or the
// measured latency of the others would be set by the load generator's own service order
// rather than by the server's. Level-triggered epoll reports the socket again in the next
// round. False on a connection error, a wrong echo, or the end of the stream.
template <typename OnEcho>
bool ReceiveEchoes(int epoll_fd, Connection* c, const std::string& frame, OnEcho&& on_echo) {
  for (int echoes = 0; echoes < c->depth;) {
    const ssize_t got =
        ::recv(c->fd, c->in.data() + c->in_size, c->in.size() - c->in_size, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (got <= 0) return false;
    c->in_size += static_cast<std::size_t>(got);
    if (c->in_size < c->in.size()) continue;
    // One complete echo.
    ++echoes;
    c->in_size = 0;
    if (std::memcmp(c->in.data(), frame.data(), frame.size()) != 0 || c->sent.empty()) {
      return false;
    }
    const auto latency =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - c->sent.front())
            .count();
    c->sent.pop_front();
    on_echo(static_cast<std::int64_t>(latency));
    ++c->out_frames;
    if (!Pump(epoll_fd, c, frame)) return false;
  }
  return true;
}

}  // namespace fairsched::loadgen

#endif  // FAIRSCHED_TOOLS_LOADGEN_CONNECTION_H_
