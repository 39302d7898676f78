// Tests for the load generator's connection step (tools/loadgen/connection.h): a readable
// socket yields at most `depth` echoes per call, so a flooder's stream of echoes cannot hold
// the load generator's thread while other connections wait; each echo is checked and
// answered with a new frame; a wrong echo is an error.
#include "tools/loadgen/connection.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fairsched::loadgen {
namespace {

class LoadgenConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    connection_.fd = fds[0];
    server_ = fds[1];
    ::fcntl(connection_.fd, F_SETFL, ::fcntl(connection_.fd, F_GETFL) | O_NONBLOCK);
    ::fcntl(server_, F_SETFL, ::fcntl(server_, F_GETFL) | O_NONBLOCK);
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    ASSERT_GE(epoll_fd_, 0);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = &connection_;
    ASSERT_EQ(::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, connection_.fd, &event), 0);
    connection_.in.assign(frame_.size(), 0);
  }
  void TearDown() override {
    ::close(connection_.fd);
    ::close(server_);
    ::close(epoll_fd_);
  }
  // `frames` frames in flight, and the server's echoes of all of them already sent.
  void EchoesWaiting(int frames, const std::string& echo) {
    for (int i = 0; i < frames; ++i) {
      connection_.sent.push_back(Clock::now());
      ASSERT_EQ(::write(server_, echo.data(), echo.size()), static_cast<ssize_t>(echo.size()));
    }
  }
  // Bytes readable on `fd` (reads them all).
  static std::size_t Drain(int fd) {
    std::vector<char> buffer(1 << 16);
    std::size_t total = 0;
    while (true) {
      const ssize_t got = ::read(fd, buffer.data(), buffer.size());
      if (got <= 0) return total;
      total += static_cast<std::size_t>(got);
    }
  }

  const std::string frame_ = std::string("\x05\0\0\0hello", 9);
  Connection connection_;
  int server_ = -1;
  int epoll_fd_ = -1;
};

TEST_F(LoadgenConnectionTest, ACallTakesAtMostDepthEchoesAndAnswersEach) {
  connection_.depth = 3;
  EchoesWaiting(10, frame_);
  int echoes = 0;
  ASSERT_TRUE(ReceiveEchoes(epoll_fd_, &connection_, frame_, [&](std::int64_t latency) {
    EXPECT_GE(latency, 0);
    ++echoes;
  }));
  EXPECT_EQ(echoes, 3);
  EXPECT_EQ(connection_.sent.size(), 10u) << "3 taken, 3 new frames sent";
  EXPECT_EQ(Drain(server_), 3 * frame_.size()) << "one new frame per echo";
  EXPECT_EQ(Drain(connection_.fd), 7 * frame_.size()) << "the rest waits for the next round";
}

TEST_F(LoadgenConnectionTest, AClosedLoopConnectionTakesOneEchoPerCall) {
  connection_.depth = 1;
  EchoesWaiting(2, frame_);
  int echoes = 0;
  ASSERT_TRUE(ReceiveEchoes(epoll_fd_, &connection_, frame_, [&](std::int64_t) { ++echoes; }));
  EXPECT_EQ(echoes, 1);
  ASSERT_TRUE(ReceiveEchoes(epoll_fd_, &connection_, frame_, [&](std::int64_t) { ++echoes; }));
  EXPECT_EQ(echoes, 2);
  ASSERT_TRUE(ReceiveEchoes(epoll_fd_, &connection_, frame_, [&](std::int64_t) { ++echoes; }))
      << "nothing readable is not an error";
  EXPECT_EQ(echoes, 2);
}

TEST_F(LoadgenConnectionTest, AWrongEchoOrTheEndIsAnError) {
  connection_.depth = 4;
  std::string wrong = frame_;
  wrong.back() = '!';
  EchoesWaiting(1, wrong);
  EXPECT_FALSE(ReceiveEchoes(epoll_fd_, &connection_, frame_, [](std::int64_t) {}));
  connection_.in_size = 0;
  ::shutdown(server_, SHUT_WR);
  EXPECT_FALSE(ReceiveEchoes(epoll_fd_, &connection_, frame_, [](std::int64_t) {}));
}

}  // namespace
}  // namespace fairsched::loadgen
