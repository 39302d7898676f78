// The echo server's default protocol, plain byte echo (examples/echo_server.h,
// EchoProtocol::kPlain), against a client that connects as nc would: raw bytes, no framing,
// partial writes, half-close, one that never reads and one that never sends. Over the
// platform's backends. The framed protocol's peers are in tcp_test.cc.
//
// Every scenario checks the limits the framed mode has too: the idle deadline, the write
// deadline for a peer that does not read, and the bounded per-connection buffer
// (backpressure: the server stops reading while its answer waits). After each, the server
// must still serve a new client and, once the scheduler is gone, no fd is left open.
// (Linux: epoll and io_uring; `--config=mingw`: IOCP under Wine.)
// Loopback only; every wait is bounded.
#include "examples/echo_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "io/tcp.h"
#include "tests/io/io_test_util.h"
#include "tests/io/raw_client.h"
#include "tests/io/server_fixture.h"

namespace fairsched {
namespace {

using examples::EchoServer;
using examples::EchoServerOptions;
using std::chrono::milliseconds;
using testing::RawClient;
using testing::WaitUntilTrue;

template <typename Backend>
class PlainEchoTest : public testing::ServerFixture<Backend, EchoServer, EchoServerOptions> {
 protected:
  // Every connection is closed, and a new client is served.
  void ExpectStillServing(const SocketAddress& address) {
    EXPECT_TRUE(this->AllClosed()) << "open: " << this->Stats().open;
    RawClient client(address);
    EXPECT_TRUE(client.RoundTrip("still serving\n"));
  }
};

TYPED_TEST_SUITE(PlainEchoTest, testing::IoBackends);

TYPED_TEST(PlainEchoTest, EchoesWhateverBytesArriveAsTheyCome) {
  EXPECT_EQ(EchoServerOptions().protocol, examples::EchoProtocol::kPlain) << "the default";
  const SocketAddress address = this->Start();
  RawClient client(address);
  EXPECT_TRUE(client.RoundTrip("hello\n"));
  // Bytes the framed protocol would reject: a header announcing a 4 GiB frame, NULs.
  EXPECT_TRUE(client.RoundTrip(std::string("\xff\xff\xff\xff\0\0abc", 9)));
  // A message written one byte at a time comes back whole (whatever the server's reads cut).
  const std::string message = "partial writes, byte by byte";
  for (char byte : message) {
    ASSERT_TRUE(client.SendAll(std::string(1, byte)));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_EQ(client.Receive(message.size()), message);
  client.Close();
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().closed_by_peer == 1; }));
  EXPECT_EQ(this->Stats().bytes_echoed, static_cast<std::int64_t>(6 + 9 + message.size()));
  EXPECT_EQ(this->Stats().dropped_oversized, 0);
  this->ExpectStillServing(address);
}

// A stream far larger than the server's buffer, sent and read concurrently: every byte comes
// back in order, through a buffer of 1 KiB (many partial reads and writes).
TYPED_TEST(PlainEchoTest, LargeStreamPassesThroughASmallBuffer) {
  EchoServerOptions options;
  options.plain_buffer = 1024;
  const SocketAddress address = this->Start(options);
  RawClient client(address);
  std::string data(1 << 20, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) >> 3);
  std::atomic<bool> sent{false};
  std::thread sender([&] { sent = client.SendAll(data); });
  const std::string back = client.Receive(data.size());
  sender.join();
  EXPECT_TRUE(sent.load());
  EXPECT_EQ(back.size(), data.size());
  EXPECT_TRUE(back == data) << "the echo differs from what was sent";
  ASSERT_TRUE(client.ShutdownWrite());
  EXPECT_TRUE(client.SeesClose());  // half-close: every byte answered, then FIN
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().closed_by_peer == 1; }));
  EXPECT_EQ(this->Stats().bytes_echoed, static_cast<std::int64_t>(data.size()));
  this->ExpectStillServing(address);
}

TYPED_TEST(PlainEchoTest, PeerThatNeverReadsIsDroppedAfterTheWriteDeadline) {
  EchoServerOptions options;
  options.write_timeout = milliseconds(200);
  const SocketAddress address = this->Start(options);
  RawClient client(address);
  client.SetReceiveBuffer(4096);
  client.SetSendTimeout(milliseconds(100));
  // Send and never read. The echo fills our receive buffer, then the server's send buffer;
  // its Write waits, it stops reading, and our sends block: backpressure. The write
  // deadline then drops us.
  const std::string chunk(64 * 1024, 'w');
  std::int64_t sent = 0;
  const auto give_up = TaskClock::now() + std::chrono::seconds(20);
  while (this->Stats().dropped_slow_reader == 0 && TaskClock::now() < give_up) {
    const long n = client.SendOnce(chunk);
    if (n < 0) break;  // reset: the server is gone
    sent += n;
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().dropped_slow_reader == 1; }));
  // Bounded: the server held at most one buffer of our bytes; the rest stayed in kernel
  // buffers, and what it echoed is what it read.
  EXPECT_LT(this->Stats().bytes_echoed, sent);
  client.Close();
  this->ExpectStillServing(address);
}

TYPED_TEST(PlainEchoTest, IdlePeerIsClosedAtTheIdleDeadline) {
  EchoServerOptions options;
  options.idle_timeout = milliseconds(200);
  const SocketAddress address = this->Start(options);
  RawClient silent(address);
  RawClient talked_once(address);
  EXPECT_TRUE(talked_once.RoundTrip("once"));
  const auto start = TaskClock::now();
  EXPECT_TRUE(silent.SeesClose());
  EXPECT_TRUE(talked_once.SeesClose());
  EXPECT_GE(TaskClock::now() - start, milliseconds(150));
  this->ExpectStillServing(address);
  EXPECT_EQ(this->Stats().dropped_idle, 2);
}

TYPED_TEST(PlainEchoTest, StopLosesNoEchoedByte) {
  const SocketAddress address = this->Start();
  constexpr int kClients = 4;
  std::vector<std::atomic<std::int64_t>> received(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      RawClient client(address);
      const std::string line = "client " + std::to_string(c) + " says hello\n";
      while (client.SendAll(line)) {
        const std::string back = client.Receive(line.size());
        received[c].fetch_add(static_cast<std::int64_t>(back.size()));
        if (back != line) break;
      }
    });
  }
  EXPECT_TRUE(WaitUntilTrue([&] {
    for (const auto& bytes : received) {
      if (bytes.load() < 1000) return false;
    }
    return true;
  }));
  this->server_->Stop();
  for (auto& thread : threads) thread.join();
  std::int64_t total = 0;
  for (const auto& bytes : received) total += bytes.load();
  EXPECT_EQ(this->Stats().open, 0);
  EXPECT_EQ(this->Stats().closed_by_stop, kClients);
  // Every byte the server counted as echoed reached its client; beyond them at most the
  // part of one answer per client that Stop cut mid-write.
  EXPECT_GE(total, this->Stats().bytes_echoed);
  EXPECT_LE(total, this->Stats().bytes_echoed + kClients * 32);
}

}  // namespace
}  // namespace fairsched
