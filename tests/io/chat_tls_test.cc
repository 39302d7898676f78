// The chat example over TLS (examples/chat_tls.h) on epoll and io_uring: clients that are
// TlsStream coroutines exchange lines through the room while the server's reader and writer
// coroutines share each TlsStream; a client that does not speak TLS is turned away without
// disturbing the room. Certificates are made at test time (test_certificates.h).
#include "examples/chat_tls.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "coro/lazy.h"
#include "coro/runtime.h"
#include "io/buffered_stream.h"
#include "io/byte_stream.h"
#include "io/tcp.h"
#include "io/tls_stream.h"
#include "tests/io/io_test_util.h"
#include "tests/io/raw_client.h"
#include "tests/io/socket_test.h"
#include "tests/io/test_certificates.h"

namespace fairsched {
namespace {

using std::chrono::seconds;

const testing::CertificateFiles& Certificates() {
  static const testing::CertificateFiles files = testing::MakeSelfSigned("chat");
  return files;
}

TaskDeadline Soon() { return coro::DeadlineAfter(seconds(10)); }

template <typename Backend>
class ChatTlsTest : public testing::SocketTest<Backend> {
 protected:
  using Sched = typename testing::SocketTest<Backend>::Sched;

  // Starts the TLS chat server on a free loopback port; returns its address.
  SocketAddress Start() {
    server_context_ = std::make_unique<TlsContext>(
        TlsContext::Server(Certificates().certificate, Certificates().key));
    EXPECT_TRUE(server_context_->ok()) << server_context_->error();
    client_context_ = std::make_unique<TlsContext>(TlsContext::Client(Certificates().certificate));
    EXPECT_TRUE(client_context_->ok()) << client_context_->error();
    server_ = std::make_unique<ChatServer<Sched>>(this->scheduler(), ChatOptions{},
                                                  TcpServerOptions{},
                                                  TlsChatSession<Sched>(server_context_.get()));
    IoResult<SocketAddress> bound = server_->Start(SocketAddress::Parse("127.0.0.1:0").value());
    EXPECT_TRUE(bound.ok()) << bound.error().Message();
    return bound.value();
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(seconds(2));
    server_.reset();
    testing::SocketTest<Backend>::TearDown();
  }

  std::unique_ptr<TlsContext> server_context_;
  std::unique_ptr<TlsContext> client_context_;
  std::unique_ptr<ChatServer<Sched>> server_;
};

TYPED_TEST_SUITE(ChatTlsTest, testing::IoBackends);

template <typename Sched>
using TlsClient = BufferedStream<TlsStream<TcpStream<Sched>>>;

// Connects, runs the handshake and takes the name `name`; nullptr (and a test failure) if
// any step fails.
template <typename Sched>
coro::Lazy<std::unique_ptr<TlsClient<Sched>>> Join(Sched* scheduler, SocketAddress address,
                                                   const TlsContext* context, std::string name) {
  IoResult<TcpStream<Sched>> tcp = co_await TcpStream<Sched>::Connect(*scheduler, address, Soon());
  if (!tcp.ok()) {
    ADD_FAILURE() << "connect: " << tcp.error().Message();
    co_return nullptr;
  }
  auto client = std::make_unique<TlsClient<Sched>>(
      TlsStream<TcpStream<Sched>>::Client(*context, std::move(tcp).value(), "localhost"));
  const IoError handshake = co_await client->stream().Handshake(Soon());
  if (!handshake.ok()) {
    ADD_FAILURE() << "handshake: " << handshake.Message();
    co_return nullptr;
  }
  const std::string nick = "/nick " + name + "\n";
  const IoError sent = co_await WriteAll(client->stream(), std::span<const char>(nick), Soon());
  IoResult<std::string_view> answer = co_await client->ReadLine(1024, Soon());
  if (!sent.ok() || !answer.ok() || answer.value() != "* you are " + name) {
    ADD_FAILURE() << "nick " << name << " not confirmed";
    co_return nullptr;
  }
  co_return client;
}

// Alice and Bob join over TLS; Alice says `count` lines, Bob reads them; then Bob answers.
// Returns what each read, one string per line.
template <typename Sched>
coro::Lazy<std::vector<std::string>> Conversation(Sched* scheduler, SocketAddress address,
                                                  const TlsContext* context, int count) {
  std::vector<std::string> seen;
  std::unique_ptr<TlsClient<Sched>> alice = co_await Join(scheduler, address, context, "alice");
  std::unique_ptr<TlsClient<Sched>> bob = co_await Join(scheduler, address, context, "bob");
  if (alice == nullptr || bob == nullptr) co_return seen;
  std::string said;
  for (int i = 0; i < count; ++i) said += "line " + std::to_string(i) + "\n";
  const IoError sent = co_await WriteAll(alice->stream(), std::span<const char>(said), Soon());
  if (!sent.ok()) co_return seen;
  for (int i = 0; i < count; ++i) {
    IoResult<std::string_view> line = co_await bob->ReadLine(1024, Soon());
    if (!line.ok()) co_return seen;
    seen.emplace_back(line.value());
  }
  const std::string answer = "thanks\n";
  const IoError answered = co_await WriteAll(bob->stream(), std::span<const char>(answer), Soon());
  if (!answered.ok()) co_return seen;
  IoResult<std::string_view> back = co_await alice->ReadLine(1024, Soon());
  if (back.ok()) seen.emplace_back(back.value());
  co_await alice->stream().Shutdown(Soon());
  co_await bob->stream().Shutdown(Soon());
  co_return seen;
}

TYPED_TEST(ChatTlsTest, LinesCrossTheRoomOverTls) {
  const SocketAddress address = this->Start();
  constexpr int kLines = 2000;  // many records while the server's writer and reader share
  const std::vector<std::string> seen = this->Run(
      Conversation(&this->scheduler(), address, this->client_context_.get(), kLines));
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kLines + 1));
  for (int i = 0; i < kLines; ++i) {
    ASSERT_EQ(seen[i], "alice: line " + std::to_string(i)) << i;
  }
  EXPECT_EQ(seen.back(), "bob: thanks");
}

TYPED_TEST(ChatTlsTest, AClientThatDoesNotSpeakTlsIsTurnedAway) {
  const SocketAddress address = this->Start();
  {
    testing::RawClient plain(address);
    ASSERT_TRUE(plain.SendAll("/nick mallory\nhello in clear text\n"));
    EXPECT_TRUE(plain.SeesClose());
  }
  EXPECT_TRUE(testing::WaitUntilTrue([&] { return this->server_->Stats().joined == 0; }));
  // The room still works for TLS clients.
  const std::vector<std::string> seen =
      this->Run(Conversation(&this->scheduler(), address, this->client_context_.get(), 3));
  EXPECT_EQ(seen.size(), 4u);
}

}  // namespace
}  // namespace fairsched
