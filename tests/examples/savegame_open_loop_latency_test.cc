// Tests that the savegame fleet's open loop (examples/savegame/load.h) has no coordinated
// omission: against a fake server that answers one request at a time after 20 ms (50
// requests/s), offering 200 requests/s on one connection must pile arrivals up in the
// backlog and show latencies of hundreds of milliseconds measured from the intended send
// time; arrivals still waiting when the drain ends are "unsent", not unanswered; the closed
// loop on the same server only ever sees the 20 ms service time.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "examples/savegame/load.h"
#include "examples/savegame/protocol.h"
#include "io/tcp.h"

namespace fairsched::savegame {
namespace {

using namespace std::chrono_literals;

// Accepts one connection and answers each save request kOk, `service` after reading it.
class SlowServer {
 public:
  explicit SlowServer(std::chrono::milliseconds service) : service_(service) {
    fd_ = internal::OpenListeningSocket(SocketAddress::FromHostPort("127.0.0.1", 0).value(), 4);
    EXPECT_GE(fd_, 0);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);  // a blocking accept
    address_ = internal::LocalAddressOf(fd_).value();
    thread_ = std::thread([this] { Serve(); });
  }
  ~SlowServer() {
    ::shutdown(fd_, SHUT_RDWR);  // ends a blocked accept if the fleet never connected
    thread_.join();
    ::close(fd_);
  }
  const SocketAddress& address() const { return address_; }

 private:
  void Serve() {
    const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;
    FrameBuffer in;
    while (true) {
      std::optional<std::string_view> body = in.NextFrame();
      if (!body) {
        std::span<char> tail = in.WritableTail();
        const ssize_t n = ::recv(client, tail.data(), tail.size(), 0);
        if (n <= 0) break;
        in.Commit(static_cast<std::size_t>(n));
        continue;
      }
      const std::optional<SaveRequest> request = ParseSaveRequest(*body);
      if (!request) break;
      std::this_thread::sleep_for(service_);
      std::string reply;
      AppendSaveReply({request->request_id, SaveStatus::kOk}, &reply);
      if (::send(client, reply.data(), reply.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(reply.size())) {
        break;
      }
    }
    ::close(client);
  }

  const std::chrono::milliseconds service_;
  int fd_ = -1;
  SocketAddress address_;
  std::thread thread_;
};

FleetOptions OneConnection(double rate) {
  FleetOptions options;
  options.connections = 1;
  options.threads = 1;
  options.users = 10;
  options.duration = 500ms;
  options.drain_timeout = 5s;
  options.rate = rate;
  return options;
}

TEST(SavegameOpenLoopTest, LatencyCountsFromTheIntendedSendTime) {
  SlowServer server(20ms);
  const FleetResult result = RunFleet(server.address(), OneConnection(200));
  ASSERT_TRUE(result.open_loop);
  // ~100 arrivals in 0.5 s; the server needs 20 ms each, so the last waits ~1.5 s.
  EXPECT_GT(result.arrivals, 50);
  EXPECT_EQ(result.sent, result.arrivals);  // the drain sent the whole backlog
  EXPECT_EQ(result.unsent, 0);
  EXPECT_EQ(result.ok(), result.arrivals);
  EXPECT_GT(result.max_backlog, 10);
  EXPECT_GT(QuantileMs(result.ok_latency_us, 0.99), 500.0);
  EXPECT_GT(QuantileMs(result.ok_latency_us, 0.5), 100.0);
}

TEST(SavegameOpenLoopTest, BacklogLeftAfterTheDrainIsUnsentNotUnanswered) {
  SlowServer server(20ms);
  FleetOptions options = OneConnection(200);
  options.drain_timeout = 200ms;  // ~35 of the ~100 arrivals get served by then
  const FleetResult result = RunFleet(server.address(), options);
  EXPECT_GT(result.unsent, 20);
  EXPECT_EQ(result.sent + result.unsent, result.arrivals);
  EXPECT_EQ(result.no_reply, 0);  // the request in flight was still answered
  EXPECT_EQ(result.ok(), result.sent);
  EXPECT_EQ(result.requests.size(), static_cast<std::size_t>(result.sent));
}

TEST(SavegameOpenLoopTest, ClosedLoopSeesOnlyTheServiceTime) {
  SlowServer server(20ms);
  const FleetResult result = RunFleet(server.address(), OneConnection(0));
  ASSERT_FALSE(result.open_loop);
  EXPECT_GT(result.ok(), 10);
  EXPECT_EQ(result.arrivals, result.sent);
  EXPECT_EQ(result.max_backlog, 0);
  EXPECT_GE(QuantileMs(result.ok_latency_us, 0.5), 19.0);
  EXPECT_LT(QuantileMs(result.ok_latency_us, 0.5), 200.0);
}

}  // namespace
}  // namespace fairsched::savegame
