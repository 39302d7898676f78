// The key-value server (examples/kv_server.h), the line protocol written on the buffered
// stream, over loopback on the platform's backends (IOCP under Wine), against a raw
// client: commands split across packets and pipelined, and misbehaving clients (an
// oversized line, a bad value length, a value without its line end, a command never
// finished, a client that never reads). Each is answered as the protocol says and
// disconnected; the server goes on serving; no fd leaks.
#include "examples/kv_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "io/tcp.h"
#include "tests/io/io_test_util.h"
#include "tests/io/raw_client.h"
#include "tests/io/server_fixture.h"

namespace fairsched {
namespace {

using examples::KvServer;
using examples::KvServerOptions;
using std::chrono::milliseconds;
using testing::RawClient;
using testing::WaitUntilTrue;

template <typename Backend>
class KvServerTest : public testing::ServerFixture<Backend, KvServer, KvServerOptions> {
 protected:
  // Every connection is closed, and a new client is served.
  void ExpectStillServing(const SocketAddress& address) {
    EXPECT_TRUE(this->AllClosed()) << "open: " << this->Stats().open;
    RawClient client(address);
    ASSERT_TRUE(client.SendAll("GET nothing\n"));
    EXPECT_EQ(client.ReceiveLine(), "NOT_FOUND\n");
  }
  // Sends `request`, expects `answer` and then the server's close.
  static void ExpectLastAnswer(const SocketAddress& address, const std::string& request,
                               const std::string& answer) {
    RawClient client(address);
    ASSERT_TRUE(client.SendAll(request));
    EXPECT_EQ(client.Receive(answer.size() + 1), answer) << "no close after the answer";
    EXPECT_TRUE(client.SeesClose());
  }
};

TYPED_TEST_SUITE(KvServerTest, testing::IoBackends);

TYPED_TEST(KvServerTest, CommandsSplitAcrossPackets) {
  const SocketAddress address = this->Start();
  RawClient client(address);
  for (const char* piece : {"SE", "T greeting 5\r", "\nhel", "lo\r\nGET gr", "eeting\n"}) {
    ASSERT_TRUE(client.SendAll(piece));
    std::this_thread::sleep_for(milliseconds(5));  // separate packets
  }
  EXPECT_EQ(client.ReceiveLine(), "STORED\n");
  EXPECT_EQ(client.ReceiveLine(), "VALUE 5\n");
  EXPECT_EQ(client.ReceiveLine(), "hello\n");
  ASSERT_TRUE(client.SendAll("DEL greeting\nDEL greeting\nGET greeting\nPING\n"));
  const std::string answers = "DELETED\nNOT_FOUND\nNOT_FOUND\nERROR unknown command\n";
  EXPECT_EQ(client.Receive(answers.size()), answers);
  ASSERT_TRUE(client.SendAll("QUIT\n"));
  EXPECT_EQ(client.ReceiveLine(), "BYE\n");
  EXPECT_TRUE(client.SeesClose());
  EXPECT_TRUE(this->AllClosed());
  EXPECT_EQ(this->Stats().commands, 7);
  EXPECT_EQ(this->Stats().closed, 1);
}

TYPED_TEST(KvServerTest, PipelinedCommandsAreAllAnswered) {
  const SocketAddress address = this->Start();
  RawClient client(address);
  std::string batch;
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    const std::string value = std::to_string(i * i);
    batch += "SET k" + std::to_string(i) + " " + std::to_string(value.size()) + "\n" + value + "\n";
    batch += "GET k" + std::to_string(i) + "\n";
    expected += "STORED\nVALUE " + std::to_string(value.size()) + "\n" + value + "\n";
  }
  ASSERT_TRUE(client.SendAll(batch));
  EXPECT_EQ(client.Receive(expected.size()), expected);
}

TYPED_TEST(KvServerTest, OversizedLineGetsAnErrorAndIsDisconnected) {
  KvServerOptions options;
  options.max_line = 64;
  const SocketAddress address = this->Start(options);
  // A line at the limit is fine; one of 100 KB is refused once 65 bytes are in.
  {
    RawClient client(address);
    ASSERT_TRUE(client.SendAll("GET " + std::string(60, 'k') + "\n"));
    EXPECT_EQ(client.ReceiveLine(), "NOT_FOUND\n");
  }
  this->ExpectLastAnswer(address, "GET " + std::string(100000, 'x') + "\n",
                         "ERROR line too long\n");
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().dropped_bad_input == 1; }));
  this->ExpectStillServing(address);
}

TYPED_TEST(KvServerTest, BadValuesAreRefused) {
  KvServerOptions options;
  options.max_value = 1000;
  const SocketAddress address = this->Start(options);
  for (const char* request :
       {"SET k 1001\n", "SET k 12x\n", "SET k\n", "SET k 3 4\nabc\n", "SET k 3\nabcd\n"}) {
    SCOPED_TRACE(request);
    this->ExpectLastAnswer(address, request, "ERROR bad value\n");
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().dropped_bad_input == 5; }));
  this->ExpectStillServing(address);
}

TYPED_TEST(KvServerTest, UnfinishedCommandIsClosedAtTheIdleDeadline) {
  KvServerOptions options;
  options.idle_timeout = milliseconds(200);
  const SocketAddress address = this->Start(options);
  RawClient slow_loris(address);
  ASSERT_TRUE(slow_loris.SendAll("GET some"));  // never ends the line
  RawClient half_value(address);
  ASSERT_TRUE(half_value.SendAll("SET k 10\nabc"));  // never sends the rest of the value
  const auto start = TaskClock::now();
  EXPECT_TRUE(slow_loris.SeesClose());
  EXPECT_TRUE(half_value.SeesClose());
  EXPECT_GE(TaskClock::now() - start, milliseconds(150));
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().dropped_idle == 2; }));
  this->ExpectStillServing(address);
}

TYPED_TEST(KvServerTest, ClientThatNeverReadsIsDroppedAtTheWriteDeadline) {
  KvServerOptions options;
  options.write_timeout = milliseconds(200);
  const SocketAddress address = this->Start(options);
  RawClient client(address);
  client.SetReceiveBuffer(4096);
  const std::string value(100000, 'v');
  ASSERT_TRUE(client.SendAll("SET big " + std::to_string(value.size()) + "\n" + value + "\n"));
  EXPECT_EQ(client.ReceiveLine(), "STORED\n");
  // GETs of 100 KB and never a read: the answers fill every buffer, the server's Flush
  // waits, and the write deadline drops the client.
  client.SetSendTimeout(milliseconds(100));
  const std::string gets = [] {
    std::string text;
    for (int i = 0; i < 100; ++i) text += "GET big\n";
    return text;
  }();
  const auto give_up = TaskClock::now() + std::chrono::seconds(20);
  while (this->Stats().dropped_slow_reader == 0 && TaskClock::now() < give_up) {
    if (client.SendOnce(gets) < 0) break;  // reset: the server is gone
  }
  EXPECT_TRUE(WaitUntilTrue([&] { return this->Stats().dropped_slow_reader == 1; }));
  client.Close();
  this->ExpectStillServing(address);
}

}  // namespace
}  // namespace fairsched
