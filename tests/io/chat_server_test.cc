// The chat example (examples/chat_server.h) over loopback on the platform's backends,
// driven by raw clients: lines reach every other client, /nick, a line too long, and the
// three clients a real room meets: one that floods (40,000 pipelined lines), one that never
// reads (dropped as a slow reader while everyone else is served in full), and one that only
// listens (kept past the idle timeout while the room talks). Every wait is bounded; no fd
// leaks (server_fixture.h).
#include "examples/chat_server.h"

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

using std::chrono::milliseconds;
using testing::RawClient;
using testing::WaitUntilTrue;

template <typename Sched>
using Chat = ChatServer<Sched>;

template <typename Backend>
class ChatServerTest : public testing::ServerFixture<Backend, Chat, ChatOptions> {};
TYPED_TEST_SUITE(ChatServerTest, testing::IoBackends);

// Reads whole lines from a raw client with large receives (a flood is read in time even
// under a sanitizer). Empty: the stream ended or nothing came within the client's timeout.
class LineReader {
 public:
  explicit LineReader(RawClient* client) : client_(client) {}
  std::string Next() {
    std::size_t end;
    while ((end = pending_.find('\n')) == std::string::npos) {
      const std::string more = client_->ReceiveAvailable(64 * 1024);
      if (more.empty()) return "";
      pending_ += more;
    }
    std::string line = pending_.substr(0, end + 1);
    pending_.erase(0, end + 1);
    return line;
  }

 private:
  RawClient* client_;
  std::string pending_;
};

// Names the client and checks the answer.
void Nick(RawClient& client, const std::string& name) {
  ASSERT_TRUE(client.SendAll("/nick " + name + "\n"));
  LineReader reader(&client);
  ASSERT_EQ(reader.Next(), "* you are " + name + "\n");
}

TYPED_TEST(ChatServerTest, LinesGoToEveryOtherClient) {
  const SocketAddress address = this->Start();
  RawClient alice(address), bob(address), carol(address);
  Nick(alice, "alice");
  Nick(bob, "bob");
  Nick(carol, "carol");
  ASSERT_TRUE(alice.SendAll("hello\r\n"));
  LineReader at_bob(&bob), at_carol(&carol), at_alice(&alice);
  EXPECT_EQ(at_bob.Next(), "alice: hello\n");
  EXPECT_EQ(at_carol.Next(), "alice: hello\n");
  ASSERT_TRUE(bob.SendAll("hi alice\n"));
  EXPECT_EQ(at_alice.Next(), "bob: hi alice\n");  // and not her own line first
  EXPECT_EQ(at_carol.Next(), "bob: hi alice\n");
  ASSERT_TRUE(carol.SendAll("/nick bad name!\n"));
  EXPECT_EQ(at_carol.Next(), "* bad name\n");
  ASSERT_TRUE(carol.SendAll("/quit\n"));
  EXPECT_TRUE(carol.SeesClose());
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().open == 2; }));
}

TYPED_TEST(ChatServerTest, ALineTooLongIsAnsweredAndDisconnected) {
  ChatOptions options;
  options.max_line = 64;
  const SocketAddress address = this->Start(options);
  RawClient client(address), other(address);
  Nick(other, "other");
  ASSERT_TRUE(client.SendAll(std::string(65, 'x') + "\n"));
  LineReader reader(&client);
  EXPECT_EQ(reader.Next(), "* line too long\n");
  EXPECT_TRUE(client.SeesClose());
  EXPECT_EQ(this->Stats().dropped_long_line, 1);
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().open == 1; }));
  // The other client is still served.
  RawClient third(address);
  Nick(third, "third");
  ASSERT_TRUE(third.SendAll("still here\n"));
  LineReader at_other(&other);
  EXPECT_EQ(at_other.Next(), "third: still here\n");
}

constexpr int kFloodLines = 40'000;

std::string FloodText() {
  std::string text;
  for (int i = 0; i < kFloodLines; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

// Reads `count` lines "flood: line <i>" in order; returns how many arrived in order.
int ReadFlood(RawClient* client, int count) {
  LineReader reader(client);
  for (int i = 0; i < count; ++i) {
    if (reader.Next() != "flood: line " + std::to_string(i) + "\n") return i;
  }
  return count;
}

// The flood from the issue: one client pipelines 40,000 lines; a client that reads gets
// every one of them, in order, and is never dropped (the flooder is slowed down instead).
TYPED_TEST(ChatServerTest, AFloodLeavesAReadingClientServedInFull) {
  const SocketAddress address = this->Start();
  RawClient flooder(address), listener(address);
  Nick(flooder, "flood");
  Nick(listener, "listener");
  std::atomic<int> received{-1};
  std::thread reading([&] { received = ReadFlood(&listener, kFloodLines); });
  ASSERT_TRUE(flooder.SendAll(FloodText()));
  reading.join();
  EXPECT_EQ(received.load(), kFloodLines);
  EXPECT_EQ(this->Stats().dropped_slow_reader, 0);
  EXPECT_EQ(this->Stats().lines_in, kFloodLines);
}

// A client that never reads fills its outbox and is dropped; the reading client still gets
// the whole flood, and the room goes on.
TYPED_TEST(ChatServerTest, ASlowReaderIsDroppedAndTheOthersAreServedInFull) {
  ChatOptions options;
  options.client_queue = 256;
  const SocketAddress address = this->Start(options);
  RawClient flooder(address), listener(address), sleeper(address);
  sleeper.SetReceiveBuffer(4096);
  Nick(flooder, "flood");
  Nick(listener, "listener");
  Nick(sleeper, "sleeper");
  std::atomic<int> received{-1};
  std::thread reading([&] { received = ReadFlood(&listener, kFloodLines); });
  ASSERT_TRUE(flooder.SendAll(FloodText()));
  reading.join();
  EXPECT_EQ(received.load(), kFloodLines);
  EXPECT_EQ(this->Stats().dropped_slow_reader, 1);
  EXPECT_TRUE(sleeper.SeesClose());  // after what its buffers held
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().open == 2; }));
}

// Idle timeout 600 ms: a client that only listens stays for 2 s while another talks every
// 100 ms (bytes to it refresh its idle deadline); a client that neither talks nor is
// talked to is dropped.
TYPED_TEST(ChatServerTest, AListenOnlyClientOutlivesTheIdleTimeoutWhileTheRoomTalks) {
  ChatOptions options;
  options.idle_timeout = milliseconds(600);
  const SocketAddress address = this->Start(options);
  RawClient talker(address), listener(address);
  Nick(talker, "talker");
  Nick(listener, "listener");
  LineReader at_listener(&listener);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(talker.SendAll("tick " + std::to_string(i) + "\n"));
    ASSERT_EQ(at_listener.Next(), "talker: tick " + std::to_string(i) + "\n") << "round " << i;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(this->Stats().open, 2);  // nobody was dropped in 2 s
  // Now silence: both are dropped at the idle deadline.
  EXPECT_TRUE(listener.SeesClose());
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().open == 0; }));
}

// Shutdown with clients connected (one of them mid-flood) ends every session within the
// grace period, and the clients see their connections end.
TYPED_TEST(ChatServerTest, ShutdownEndsEverySession) {
  const SocketAddress address = this->Start();
  RawClient a(address), b(address);
  Nick(a, "a");
  Nick(b, "b");
  ASSERT_TRUE(a.SendAll("bye soon\n"));
  LineReader at_b(&b);
  EXPECT_EQ(at_b.Next(), "a: bye soon\n");
  const auto start = std::chrono::steady_clock::now();
  this->server_->Shutdown(std::chrono::seconds(2));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(this->Stats().open, 0);
  EXPECT_TRUE(a.SeesClose());
  EXPECT_TRUE(b.SeesClose());
}

}  // namespace
}  // namespace fairsched
