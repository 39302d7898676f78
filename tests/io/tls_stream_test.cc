// TlsStream (io/tls_stream.h) over real loopback TcpStreams on both backends: a TLS echo
// server coroutine (BufferedStream over TlsStream, so the layers stack) against a TlsStream
// client or a raw socket. Covers a large transfer both ways with close_notify from each
// side, a certificate the client does not trust, garbage instead of a handshake and after
// one, a handshake deadline against a silent peer, and a peer that ends the TCP connection
// without close_notify; full duplex (a reader and a writer coroutine on each end, large
// transfers both ways at once with key updates, small socket buffers); Close while a read
// and a write are pending; ALPN; the alert a failed handshake or read sends, also while
// the other coroutine is sending. The certificates are made here, at test time, with
// OpenSSL's API (self-signed P-256 keys for "localhost", written to TEST_TMPDIR): no key is
// committed.
#include "io/tls_stream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/buffered_stream.h"
#include "io/byte_stream.h"
#include "io/epoll_backend.h"
#include "io/io_uring_backend.h"
#include "io/tcp.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "sync/primitives.h"
#include "tests/io/raw_client.h"
#include "tests/io/test_certificates.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::CertificateFiles;
using testing::MakeSelfSigned;

// The server's certificate, and another one the server does not have the key of.
const CertificateFiles& ServerFiles() {
  static const CertificateFiles files = MakeSelfSigned("server");
  return files;
}
const CertificateFiles& StrangerFiles() {
  static const CertificateFiles files = MakeSelfSigned("stranger");
  return files;
}

TEST(TlsContextTest, ReportsWhyItCannotBeCreated) {
  const TlsContext missing = TlsContext::Server("/nonexistent/cert.pem", ServerFiles().key);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/cert.pem"), std::string::npos) << missing.error();
  const TlsContext mismatched = TlsContext::Server(ServerFiles().certificate, StrangerFiles().key);
  EXPECT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.error().find("mismatch"), std::string::npos) << mismatched.error();
  EXPECT_FALSE(TlsContext::Client("/nonexistent/ca.pem").ok());
  EXPECT_TRUE(TlsContext::Server(ServerFiles().certificate, ServerFiles().key).ok());
}

// A ByteStream for the misuse checks, which fire before any IO.
struct NoStream {
  coro::Lazy<IoResult<std::size_t>> ReadSome(std::span<char>, TaskDeadline) {
    co_return IoError(IoErrorCode::kEndOfStream);
  }
  coro::Lazy<IoResult<std::size_t>> WriteSome(std::span<const char>, TaskDeadline) {
    co_return IoError(IoErrorCode::kEndOfStream);
  }
  void Close() {}
};

TEST(TlsStreamDeathTest, MisuseIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const TlsContext client = TlsContext::Client(ServerFiles().certificate);
  const TlsContext server = TlsContext::Server(ServerFiles().certificate, ServerFiles().key);
  const TlsContext failed = TlsContext::Server("/nonexistent/cert.pem", "/nonexistent/key.pem");
  EXPECT_DEATH(TlsStream<NoStream>::Server(client, NoStream()), "needs a server TlsContext");
  EXPECT_DEATH(TlsStream<NoStream>::Server(failed, NoStream()), "needs a server TlsContext");
  EXPECT_DEATH(TlsStream<NoStream>::Client(server, NoStream(), "localhost"),
               "needs a client TlsContext");
  EXPECT_DEATH(TlsStream<NoStream>::Client(client, NoStream(), ""), "needs the server's name");
  TlsContext alpn = TlsContext::Server(ServerFiles().certificate, ServerFiles().key);
  EXPECT_DEATH(alpn.SetAlpnProtocols({}), "empty list");
  EXPECT_DEATH(alpn.SetAlpnProtocols({"h2", ""}), "1 to 255 bytes");
  EXPECT_DEATH(alpn.SetAlpnProtocols({std::string(256, 'x')}), "1 to 255 bytes");
#ifndef NDEBUG
  TlsStream<NoStream> tls = TlsStream<NoStream>::Server(server, NoStream());
  EXPECT_DEATH((void)tls.ReadSome({}, kTaskDeadlineInfinite), "into an empty buffer");
#endif
}

#ifndef NDEBUG
using EpollSched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, EpollBackend>;

// (Spawned tasks return IoError and TcpStream, not an IoResult: coro/runtime.h's report of a
// detached coroutine's exception does not compile for a [[nodiscard]] result type.)
coro::Lazy<IoError> ReadOnce(TlsStream<TcpStream<EpollSched>>* tls) {
  char byte;
  IoResult<std::size_t> read =
      co_await tls->ReadSome(std::span<char>(&byte, 1), coro::DeadlineAfter(seconds(10)));
  co_return read.ok() ? IoError() : read.error();
}

coro::Lazy<TcpStream<EpollSched>> AcceptOne(TcpListener<EpollSched>* listener) {
  IoResult<TcpStream<EpollSched>> accepted =
      co_await listener->Accept(coro::DeadlineAfter(seconds(10)));
  co_return std::move(accepted).value();
}

// A reader waits inside the handshake (the peer is silent) when a second read starts.
void StartTwoReadsAtOnce() {
  EpollSched scheduler;
  scheduler.Start(2);
  TcpListener<EpollSched> listener =
      TcpListener<EpollSched>::Listen(scheduler, SocketAddress::Parse("127.0.0.1:0").value())
          .value();
  testing::RawClient silent(listener.LocalAddress().value());
  const TlsContext context = TlsContext::Server(ServerFiles().certificate, ServerFiles().key);
  TlsStream<TcpStream<EpollSched>> tls = TlsStream<TcpStream<EpollSched>>::Server(
      context, coro::Spawn(scheduler, AcceptOne(&listener)).Get());
  coro::JoinHandle<IoError> first = coro::Spawn(scheduler, ReadOnce(&tls));
  std::this_thread::sleep_for(milliseconds(200));
  (void)coro::Spawn(scheduler, ReadOnce(&tls)).Get();
}

TEST(TlsStreamDeathTest, TwoReadsAtOnceAreReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(StartTwoReadsAtOnce(), "two concurrent reads on a TlsStream");
}
#endif

// ---- over loopback TCP, both backends ----

// How a coroutine's session ended: the error (success: none) and the TLS message.
struct Ending {
  Ending() = default;
  Ending(IoError error, std::string message) : error(error), message(std::move(message)) {}

  IoError error;
  std::string message;
  bool first_read_timed_out = false;
  std::string alpn;  // the protocol agreed on, after a successful handshake
};

struct ServerLimits {
  milliseconds handshake = seconds(10);
  milliseconds first_read = seconds(10);  // later reads: 10 s
};

template <typename Sched>
using Tls = TlsStream<TcpStream<Sched>>;

// Accepts one connection and echoes over TLS until the client's close_notify, which it
// answers with its own; any failure ends it, except a first read that times out (the session
// survives it).
template <typename Sched>
coro::Lazy<Ending> ServeEcho(TcpListener<Sched>* listener, const TlsContext* context,
                             ServerLimits limits) {
  IoResult<TcpStream<Sched>> accepted = co_await listener->Accept(coro::DeadlineAfter(seconds(10)));
  if (!accepted.ok()) co_return Ending{accepted.error(), "accept"};
  BufferedStream<Tls<Sched>> in_out(
      Tls<Sched>::Server(*context, std::move(accepted).value()));
  Tls<Sched>& tls = in_out.stream();
  Ending ending;
  ending.error = co_await tls.Handshake(coro::DeadlineAfter(limits.handshake));
  ending.alpn = tls.AlpnProtocol();
  char buffer[40000];
  milliseconds read_timeout = limits.first_read;
  while (ending.error.ok()) {
    IoResult<std::size_t> received =
        co_await in_out.ReadSome(buffer, coro::DeadlineAfter(read_timeout));
    read_timeout = seconds(10);
    if (!received.ok() && received.error().code() == IoErrorCode::kTimeout &&
        !ending.first_read_timed_out) {
      ending.first_read_timed_out = true;
      continue;
    }
    if (!received.ok()) {
      ending.error = received.error();
      break;
    }
    const TaskDeadline deadline = coro::DeadlineAfter(seconds(10));
    ending.error = co_await in_out.Write(std::string_view(buffer, received.value()), deadline);
    if (ending.error.ok()) ending.error = co_await in_out.Flush(deadline);
  }
  if (ending.error.code() == IoErrorCode::kEndOfStream) {
    ending.error = co_await tls.Shutdown(coro::DeadlineAfter(seconds(10)));
  } else if (IsTlsError(ending.error)) {
    // A broken session keeps its error: the next call returns it at once.
    IoResult<std::size_t> again = co_await tls.ReadSome(buffer, kTaskDeadlineInfinite);
    EXPECT_TRUE(!again.ok() && IsTlsError(again.error()));
  }
  ending.message = tls.ErrorMessage();
  co_return ending;
}

enum class ClientScript {
  kEchoLarge,              // 2 MiB echoed in 64 KiB rounds, then close_notify both ways
  kHandshake,              // the handshake only
  kGarbageAfterHandshake,  // plaintext bytes on the TCP stream under the session
  kTruncate,               // one echo, then the TCP connection closed without close_notify
  kPauseThenEcho,          // 300 ms of silence after the handshake, then one echo
};

template <typename Sched>
coro::Lazy<Ending> RunClient(Sched* scheduler, SocketAddress address, const TlsContext* context,
                             ClientScript script) {
  const TaskDeadline deadline = coro::DeadlineAfter(seconds(20));
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, deadline);
  if (!connected.ok()) co_return Ending{connected.error(), "connect"};
  Tls<Sched> tls =
      Tls<Sched>::Client(*context, std::move(connected).value(), "localhost");
  IoError error = co_await tls.Handshake(deadline);
  if (!error.ok() || script == ClientScript::kHandshake) {
    Ending ending(error, tls.ErrorMessage());
    ending.alpn = tls.AlpnProtocol();
    co_return ending;
  }
  if (script == ClientScript::kPauseThenEcho) co_await coro::SleepFor(milliseconds(300));
  if (script == ClientScript::kGarbageAfterHandshake) {
    const std::string garbage(64, 'x');
    error = co_await WriteAll(tls.stream(), garbage, deadline);
    if (!error.ok()) co_return Ending{error, "garbage write"};
    char byte;
    IoResult<std::size_t> answer = co_await tls.ReadSome(std::span<char>(&byte, 1), deadline);
    co_return Ending{answer.ok() ? IoError() : answer.error(), tls.ErrorMessage()};
  }
  const std::size_t total = script == ClientScript::kEchoLarge ? 2 << 20 : 100;
  const std::size_t round = std::min<std::size_t>(total, 64 << 10);
  std::string chunk(round, '\0');
  std::string echoed(round, '\0');
  for (std::size_t sent = 0; sent < total; sent += round) {
    for (std::size_t i = 0; i < round; ++i) chunk[i] = static_cast<char>('a' + (sent + i * 7) % 26);
    error = co_await WriteAll(tls, chunk, deadline);
    if (!error.ok()) co_return Ending{error, tls.ErrorMessage()};
    for (std::size_t got = 0; got < round;) {
      IoResult<std::size_t> n =
          co_await tls.ReadSome(std::span<char>(echoed).subspan(got), deadline);
      if (!n.ok()) co_return Ending{n.error(), tls.ErrorMessage()};
      got += n.value();
    }
    if (echoed != chunk) co_return Ending{IoError(IoErrorCode::kSystem, EBADMSG), "echo differs"};
  }
  if (script == ClientScript::kTruncate) {
    tls.Close();
    co_return Ending{};
  }
  error = co_await tls.Shutdown(deadline);
  if (!error.ok()) co_return Ending{error, tls.ErrorMessage()};
  // The server answers our close_notify with its own: a clean end of stream.
  IoResult<std::size_t> end = co_await tls.ReadSome(echoed, deadline);
  co_return Ending{end.ok() ? IoError() : end.error(), tls.ErrorMessage()};
}

template <typename Backend>
class TlsStreamTest : public ::testing::Test {
 protected:
  using Sched = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, Backend>;

  TlsStreamTest() {
    scheduler_.Start(2);
    listener_ = std::move(
        TcpListener<Sched>::Listen(scheduler_, SocketAddress::Parse("127.0.0.1:0").value())
            .value());
    address_ = listener_.LocalAddress().value();
  }

  coro::JoinHandle<Ending> StartServer(ServerLimits limits = {},
                                       const TlsContext* context = nullptr) {
    return coro::Spawn(scheduler_, ServeEcho<Sched>(
                                       &listener_, context != nullptr ? context : &server_context_,
                                       limits));
  }
  Ending Client(const TlsContext& context, ClientScript script) {
    return coro::Spawn(scheduler_, RunClient<Sched>(&scheduler_, address_, &context, script)).Get();
  }

  Sched scheduler_;  // first: destroyed after the sockets
  TcpListener<Sched> listener_;
  SocketAddress address_;
  const TlsContext server_context_ =
      TlsContext::Server(ServerFiles().certificate, ServerFiles().key);
  const TlsContext client_context_ = TlsContext::Client(ServerFiles().certificate);
};

using Backends = ::testing::Types<EpollBackend, IoUringBackend>;
TYPED_TEST_SUITE(TlsStreamTest, Backends);

TYPED_TEST(TlsStreamTest, LargeEchoAndCloseNotifyBothWays) {
  static_assert(ByteStream<Tls<typename TestFixture::Sched>>);
  coro::JoinHandle<Ending> server = this->StartServer();
  const Ending client = this->Client(this->client_context_, ClientScript::kEchoLarge);
  // The client's last read saw the server's close_notify: a clean end of stream.
  EXPECT_EQ(client.error.code(), IoErrorCode::kEndOfStream)
      << client.error.Message() << " " << client.message;
  const Ending served = server.Get();
  EXPECT_TRUE(served.error.ok()) << served.error.Message() << " " << served.message;
}

TYPED_TEST(TlsStreamTest, UntrustedCertificateFailsTheHandshakeWithTheReason) {
  coro::JoinHandle<Ending> server = this->StartServer();
  const TlsContext trusts_other = TlsContext::Client(StrangerFiles().certificate);
  const Ending client = this->Client(trusts_other, ClientScript::kHandshake);
  EXPECT_TRUE(IsTlsError(client.error)) << client.error.Message();
  EXPECT_NE(client.message.find("certificate verify failed"), std::string::npos) << client.message;
  EXPECT_NE(client.message.find("self-signed certificate"), std::string::npos) << client.message;
  // The client's alert reaches the server, whose handshake fails with it.
  const Ending served = server.Get();
  EXPECT_TRUE(IsTlsError(served.error)) << served.error.Message();
  EXPECT_NE(served.message.find("handshake failed"), std::string::npos) << served.message;
}

TYPED_TEST(TlsStreamTest, GarbageInsteadOfAHandshakeIsAnError) {
  coro::JoinHandle<Ending> server = this->StartServer();
  testing::RawClient peer(this->address_);
  ASSERT_TRUE(peer.SendAll("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  const Ending served = server.Get();
  EXPECT_TRUE(IsTlsError(served.error)) << served.error.Message();
  EXPECT_NE(served.message.find("handshake failed"), std::string::npos) << served.message;
}

TYPED_TEST(TlsStreamTest, GarbageAfterTheHandshakeIsAnErrorOnBothSides) {
  coro::JoinHandle<Ending> server = this->StartServer();
  const Ending client = this->Client(this->client_context_, ClientScript::kGarbageAfterHandshake);
  const Ending served = server.Get();
  EXPECT_TRUE(IsTlsError(served.error)) << served.error.Message();
  EXPECT_NE(served.message.find("TLS error"), std::string::npos) << served.message;
  // The server's alert (or its close) ends the client's read with an error too.
  EXPECT_FALSE(client.error.ok());
}

TYPED_TEST(TlsStreamTest, HandshakeDeadlineEndsASilentPeer) {
  const auto start = TaskClock::now();
  coro::JoinHandle<Ending> server = this->StartServer({.handshake = milliseconds(200)});
  testing::RawClient silent(this->address_);  // connects, sends nothing
  const Ending served = server.Get();
  EXPECT_EQ(served.error.code(), IoErrorCode::kTimeout) << served.error.Message();
  const auto waited = TaskClock::now() - start;
  EXPECT_GE(waited, milliseconds(200));
  EXPECT_LT(waited, seconds(10));
}

TYPED_TEST(TlsStreamTest, AReadTimeoutLeavesTheSessionUsable) {
  coro::JoinHandle<Ending> server = this->StartServer({.first_read = milliseconds(50)});
  const Ending client = this->Client(this->client_context_, ClientScript::kPauseThenEcho);
  EXPECT_EQ(client.error.code(), IoErrorCode::kEndOfStream)
      << client.error.Message() << " " << client.message;
  const Ending served = server.Get();
  EXPECT_TRUE(served.first_read_timed_out);
  EXPECT_TRUE(served.error.ok()) << served.error.Message() << " " << served.message;
}

TYPED_TEST(TlsStreamTest, EndWithoutCloseNotifyIsATruncationError) {
  coro::JoinHandle<Ending> server = this->StartServer();
  const Ending client = this->Client(this->client_context_, ClientScript::kTruncate);
  EXPECT_TRUE(client.error.ok()) << client.error.Message() << " " << client.message;
  const Ending served = server.Get();
  EXPECT_TRUE(IsTlsError(served.error)) << served.error.Message();
  EXPECT_NE(served.message.find("without close_notify"), std::string::npos) << served.message;
}

// ---- one reader and one writer at once ----

// Byte `index` of the stream numbered `seed`: no period that lines up with records or chunks.
char PatternByte(std::uint64_t index, std::uint32_t seed) {
  return static_cast<char>(((index * 2654435761u) >> 7) + index / 4099 + seed);
}

// Writes `total` pattern bytes in chunks of varying size (1 byte to 40 KiB), asking for a key
// update every `key_update_every` bytes (0: never), then sends close_notify.
template <typename Sched>
coro::Lazy<IoError> PumpOut(Tls<Sched>* tls, std::size_t total, std::uint32_t seed,
                            std::size_t key_update_every) {
  const TaskDeadline deadline = coro::DeadlineAfter(seconds(60));
  std::string chunk;
  std::size_t next_key_update = key_update_every;
  for (std::size_t sent = 0, round = 0; sent < total; ++round) {
    const std::size_t size = std::min(total - sent, 1 + (round * 7919) % (40 << 10));
    chunk.resize(size);
    for (std::size_t i = 0; i < size; ++i) chunk[i] = PatternByte(sent + i, seed);
    const IoError written = co_await WriteAll(*tls, chunk, deadline);
    if (!written.ok()) co_return written;
    sent += size;
    if (key_update_every != 0 && sent >= next_key_update) {
      // TLS 1.3 (both ends are OpenSSL 3): the peer's reader must answer with its own.
      if (!tls->RequestKeyUpdate()) co_return IoError(IoErrorCode::kSystem, ENOTSUP);
      next_key_update += key_update_every;
    }
  }
  co_return co_await tls->Shutdown(deadline);
}

// Reads until the peer's close_notify and checks that exactly `total` pattern bytes came.
template <typename Sched>
coro::Lazy<IoError> PumpIn(Tls<Sched>* tls, std::size_t total, std::uint32_t seed) {
  const TaskDeadline deadline = coro::DeadlineAfter(seconds(60));
  char buffer[20000];
  std::size_t received = 0;
  while (true) {
    IoResult<std::size_t> n = co_await tls->ReadSome(buffer, deadline);
    if (!n.ok()) {
      if (n.error().code() != IoErrorCode::kEndOfStream) co_return n.error();
      break;
    }
    for (std::size_t i = 0; i < n.value(); ++i) {
      if (buffer[i] != PatternByte(received + i, seed)) {
        co_return IoError(IoErrorCode::kSystem, EBADMSG);
      }
    }
    received += n.value();
  }
  co_return received == total ? IoError() : IoError(IoErrorCode::kSystem, EMSGSIZE);
}

template <typename Sched>
coro::Lazy<TcpStream<Sched>> AcceptStream(TcpListener<Sched>* listener) {
  IoResult<TcpStream<Sched>> accepted = co_await listener->Accept(coro::DeadlineAfter(seconds(10)));
  EXPECT_TRUE(accepted.ok()) << accepted.error().Message();
  co_return std::move(accepted).value();
}

template <typename Sched>
coro::Lazy<TcpStream<Sched>> ConnectStream(Sched* scheduler, SocketAddress address) {
  IoResult<TcpStream<Sched>> connected =
      co_await TcpStream<Sched>::Connect(*scheduler, address, coro::DeadlineAfter(seconds(10)));
  EXPECT_TRUE(connected.ok()) << connected.error().Message();
  co_return std::move(connected).value();
}

// Waits (bounded) for spawned coroutines; if one hangs, `on_hang` is called (it closes the
// streams, so they return) and the test fails.
template <typename OnHang>
std::vector<IoError> JoinAll(std::vector<coro::JoinHandle<IoError>>& handles, OnHang on_hang) {
  const TaskDeadline deadline = coro::DeadlineAfter(seconds(40));
  bool hung = false;
  for (coro::JoinHandle<IoError>& handle : handles) hung = hung || !handle.WaitUntil(deadline);
  if (hung) {
    ADD_FAILURE() << "a TLS coroutine did not finish within 40 s (deadlock?)";
    on_hang();
  }
  std::vector<IoError> results;
  for (coro::JoinHandle<IoError>& handle : handles) results.push_back(handle.Get());
  return results;
}

// A connected pair of TlsStreams (not yet handshaken) with small socket buffers, so that a
// side that writes without reading soon blocks.
template <typename Sched>
struct TlsPair {
  TlsPair(Sched* scheduler, TcpListener<Sched>* listener, const TlsContext& server_context,
          const TlsContext& client_context) {
    coro::JoinHandle<TcpStream<Sched>> accepting = coro::Spawn(*scheduler, AcceptStream(listener));
    TcpStream<Sched> client_tcp =
        coro::Spawn(*scheduler, ConnectStream(scheduler, listener->LocalAddress().value())).Get();
    TcpStream<Sched> server_tcp = accepting.Get();
    for (TcpStream<Sched>* tcp : {&client_tcp, &server_tcp}) {
      EXPECT_TRUE(tcp->SetSendBufferSize(32 << 10).ok());
      EXPECT_TRUE(tcp->SetReceiveBufferSize(32 << 10).ok());
    }
    server.emplace(Tls<Sched>::Server(server_context, std::move(server_tcp)));
    client.emplace(Tls<Sched>::Client(client_context, std::move(client_tcp), "localhost"));
  }
  void CloseBoth() {
    server->Close();
    client->Close();
  }
  std::optional<Tls<Sched>> server;
  std::optional<Tls<Sched>> client;
};

// Each end has a reader and a writer coroutine from the start (they drive the handshake
// together), and 4 MiB go each way at once through 32 KiB socket buffers, with a key update
// requested every 256 KiB from each side: a reader blocked in ReadSome while its writer
// sends, a write that needs the handshake's input while the reader holds the transport, and
// reads whose key-update answer must be sent while the writer sends.
TYPED_TEST(TlsStreamTest, AReaderAndAWriterAtOnceOnEachEnd) {
  using Sched = typename TestFixture::Sched;
  TlsPair<Sched> pair(&this->scheduler_, &this->listener_, this->server_context_,
                      this->client_context_);
  constexpr std::size_t kTotal = 4 << 20;
  std::vector<coro::JoinHandle<IoError>> handles;
  handles.push_back(coro::Spawn(this->scheduler_, PumpIn<Sched>(&*pair.server, kTotal, 1)));
  handles.push_back(coro::Spawn(this->scheduler_, PumpIn<Sched>(&*pair.client, kTotal, 2)));
  handles.push_back(
      coro::Spawn(this->scheduler_, PumpOut<Sched>(&*pair.client, kTotal, 1, 256 << 10)));
  handles.push_back(
      coro::Spawn(this->scheduler_, PumpOut<Sched>(&*pair.server, kTotal, 2, 256 << 10)));
  const std::vector<IoError> results = JoinAll(handles, [&] { pair.CloseBoth(); });
  const char* names[] = {"server reader", "client reader", "client writer", "server writer"};
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].ok()) << names[i] << ": " << results[i].Message() << " / server: "
                                 << pair.server->ErrorMessage()
                                 << " / client: " << pair.client->ErrorMessage();
  }
}

// Reads one byte (a peer that never sends: the read stays pending).
template <typename Sched>
coro::Lazy<IoError> ReadOneByte(Tls<Sched>* tls) {
  char byte;
  IoResult<std::size_t> n =
      co_await tls->ReadSome(std::span<char>(&byte, 1), coro::DeadlineAfter(seconds(60)));
  co_return n.ok() ? IoError() : n.error();
}

// Writes until it fails, counting what was written (a peer that never reads: it blocks).
template <typename Sched>
coro::Lazy<IoError> WriteUntilFailure(Tls<Sched>* tls, Atomic<std::size_t>* written) {
  const std::string chunk(16 << 10, 'w');
  while (true) {
    IoResult<std::size_t> n = co_await tls->WriteSome(chunk, coro::DeadlineAfter(seconds(60)));
    if (!n.ok()) co_return n.error();
    // Relaxed: a progress count the test thread polls; it orders nothing.
    written->fetch_add(n.value(), std::memory_order_relaxed);
  }
}

template <typename Sched>
coro::Lazy<IoError> CloseIt(Tls<Sched>* tls) {
  tls->Close();
  co_return IoError();
}

// The server's reader waits for a record that never comes and its writer is blocked on a
// client that does not read; Close from another coroutine ends both with kClosed.
TYPED_TEST(TlsStreamTest, CloseEndsAPendingReadAndWrite) {
  using Sched = typename TestFixture::Sched;
  TlsPair<Sched> pair(&this->scheduler_, &this->listener_, this->server_context_,
                      this->client_context_);
  coro::JoinHandle<IoError> client_handshake = coro::Spawn(
      this->scheduler_, [](Tls<Sched>* tls) -> coro::Lazy<IoError> {
        co_return co_await tls->Handshake(coro::DeadlineAfter(seconds(10)));
      }(&*pair.client));
  Atomic<std::size_t> written{0};
  std::vector<coro::JoinHandle<IoError>> handles;
  handles.push_back(coro::Spawn(this->scheduler_, ReadOneByte<Sched>(&*pair.server)));
  handles.push_back(
      coro::Spawn(this->scheduler_, WriteUntilFailure<Sched>(&*pair.server, &written)));
  ASSERT_TRUE(client_handshake.Get().ok()) << pair.client->ErrorMessage();
  // The writer is blocked once its count stops growing (bounded: 20 s).
  std::size_t last = 0;
  for (int stable = 0, polls = 0; stable < 3 && polls < 100; ++polls) {
    std::this_thread::sleep_for(milliseconds(200));
    const std::size_t now = written.load(std::memory_order_relaxed);
    stable = now == last && now > 0 ? stable + 1 : 0;
    last = now;
  }
  EXPECT_GT(last, 0u);
  EXPECT_FALSE(handles[0].IsDone());
  EXPECT_FALSE(handles[1].IsDone());
  const auto start = TaskClock::now();
  (void)coro::Spawn(this->scheduler_, CloseIt<Sched>(&*pair.server)).Get();
  const std::vector<IoError> results = JoinAll(handles, [&] { pair.CloseBoth(); });
  EXPECT_LT(TaskClock::now() - start, seconds(30));
  EXPECT_EQ(results[0].code(), IoErrorCode::kClosed) << "read: " << results[0].Message();
  EXPECT_EQ(results[1].code(), IoErrorCode::kClosed) << "write: " << results[1].Message();
  // Later calls, and a second Close, are kClosed / harmless.
  pair.server->Close();
  char byte;
  IoResult<std::size_t> again = coro::RunSync(pair.server->ReadSome(std::span<char>(&byte, 1),
                                                                    kTaskDeadlineInfinite));
  EXPECT_EQ(again.ok() ? IoErrorCode::kOk : again.error().code(), IoErrorCode::kClosed);
}

// Before any handshake, against a client that sends nothing: one side reads the transport
// and the other waits inside the TLS layer for what it receives. Close ends both.
TYPED_TEST(TlsStreamTest, CloseEndsAReadAndAWriteWaitingForTheHandshake) {
  using Sched = typename TestFixture::Sched;
  coro::JoinHandle<TcpStream<Sched>> accepting =
      coro::Spawn(this->scheduler_, AcceptStream(&this->listener_));
  testing::RawClient silent(this->address_);
  Tls<Sched> server = Tls<Sched>::Server(this->server_context_, accepting.Get());
  Atomic<std::size_t> written{0};
  std::vector<coro::JoinHandle<IoError>> handles;
  handles.push_back(coro::Spawn(this->scheduler_, ReadOneByte<Sched>(&server)));
  handles.push_back(coro::Spawn(this->scheduler_, WriteUntilFailure<Sched>(&server, &written)));
  std::this_thread::sleep_for(milliseconds(300));  // both reach their wait (not required)
  EXPECT_FALSE(handles[0].IsDone());
  EXPECT_FALSE(handles[1].IsDone());
  server.Close();  // from a plain thread this time
  const std::vector<IoError> results = JoinAll(handles, [&] { server.Close(); });
  EXPECT_EQ(results[0].code(), IoErrorCode::kClosed) << "read: " << results[0].Message();
  EXPECT_EQ(results[1].code(), IoErrorCode::kClosed) << "write: " << results[1].Message();
  EXPECT_EQ(written.load(std::memory_order_relaxed), 0u);
}

template <typename Sched>
coro::Lazy<IoError> ReadUntilFailure(Tls<Sched>* tls) {
  char buffer[20000];
  while (true) {
    IoResult<std::size_t> n = co_await tls->ReadSome(buffer, coro::DeadlineAfter(seconds(30)));
    if (!n.ok()) co_return n.error();
  }
}

// As a server would: the first failure of the reader closes the connection.
template <typename Sched>
coro::Lazy<IoError> ReadUntilFailureThenClose(Tls<Sched>* tls) {
  const IoError error = co_await ReadUntilFailure(tls);
  tls->Close();
  co_return error;
}

template <typename Sched>
coro::Lazy<IoError> HandshakeOf(Tls<Sched>* tls) {
  co_return co_await tls->Handshake(coro::DeadlineAfter(seconds(10)));
}

template <typename Sched>
coro::Lazy<IoError> WriteGarbage(TcpStream<Sched>* tcp) {
  const std::string garbage(64, 'x');
  co_return co_await WriteAll(*tcp, garbage, coro::DeadlineAfter(seconds(10)));
}

// The server's reader fails on a garbage record while its writer is busy sending, and
// closes the stream at once: the reader's alert still reaches the client (after the
// writer's records: the failed read returns only once the writer has sent them and it).
TYPED_TEST(TlsStreamTest, AFailingReadersAlertGoesOutWhileTheWriterSends) {
  using Sched = typename TestFixture::Sched;
  TlsPair<Sched> pair(&this->scheduler_, &this->listener_, this->server_context_,
                      this->client_context_);
  coro::JoinHandle<IoError> server_handshake =
      coro::Spawn(this->scheduler_, HandshakeOf<Sched>(&*pair.server));
  ASSERT_TRUE(coro::Spawn(this->scheduler_, HandshakeOf<Sched>(&*pair.client)).Get().ok())
      << pair.client->ErrorMessage();
  ASSERT_TRUE(server_handshake.Get().ok()) << pair.server->ErrorMessage();
  Atomic<std::size_t> written{0};
  std::vector<coro::JoinHandle<IoError>> handles;
  handles.push_back(
      coro::Spawn(this->scheduler_, ReadUntilFailureThenClose<Sched>(&*pair.server)));
  handles.push_back(
      coro::Spawn(this->scheduler_, WriteUntilFailure<Sched>(&*pair.server, &written)));
  handles.push_back(coro::Spawn(this->scheduler_, ReadUntilFailure<Sched>(&*pair.client)));
  // Relaxed: a progress count (see WriteUntilFailure). Bounded: 10 s.
  for (int polls = 0; written.load(std::memory_order_relaxed) < (256u << 10) && polls < 1000;
       ++polls) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_GE(written.load(std::memory_order_relaxed), 256u << 10);
  EXPECT_TRUE(
      coro::Spawn(this->scheduler_, WriteGarbage<Sched>(&pair.client->stream())).Get().ok());
  const std::vector<IoError> results = JoinAll(handles, [&] { pair.CloseBoth(); });
  EXPECT_TRUE(IsTlsError(results[0])) << "server reader: " << results[0].Message();
  EXPECT_NE(pair.server->ErrorMessage().find("TLS error"), std::string::npos)
      << pair.server->ErrorMessage();
  EXPECT_TRUE(IsTlsError(results[1]) || results[1].code() == IoErrorCode::kClosed)
      << "server writer: " << results[1].Message();
  EXPECT_TRUE(IsTlsError(results[2])) << "client reader: " << results[2].Message();
  EXPECT_NE(pair.client->ErrorMessage().find("alert"), std::string::npos)
      << pair.client->ErrorMessage();
}


// ---- ALPN ----

TYPED_TEST(TlsStreamTest, AlpnAgreesOnTheServersFirstChoiceTheClientOffers) {
  TlsContext server = TlsContext::Server(ServerFiles().certificate, ServerFiles().key);
  server.SetAlpnProtocols({"h2", "http/1.1"});
  TlsContext client = TlsContext::Client(ServerFiles().certificate);
  client.SetAlpnProtocols({"spdy/3", "http/1.1", "h2"});
  coro::JoinHandle<Ending> served = this->StartServer({}, &server);
  const Ending ending = this->Client(client, ClientScript::kEchoLarge);
  EXPECT_EQ(ending.error.code(), IoErrorCode::kEndOfStream) << ending.message;
  const Ending server_ending = served.Get();
  EXPECT_TRUE(server_ending.error.ok()) << server_ending.message;
  EXPECT_EQ(server_ending.alpn, "h2");
  // The client's view, from a handshake-only session.
  coro::JoinHandle<Ending> served_again = this->StartServer({}, &server);
  const Ending handshake = this->Client(client, ClientScript::kHandshake);
  EXPECT_TRUE(handshake.error.ok()) << handshake.message;
  EXPECT_EQ(handshake.alpn, "h2");
  (void)served_again.Get();
}

TYPED_TEST(TlsStreamTest, AlpnWithNothingInCommonFailsTheHandshakeWithAnAlert) {
  TlsContext server = TlsContext::Server(ServerFiles().certificate, ServerFiles().key);
  server.SetAlpnProtocols({"h2"});
  TlsContext client = TlsContext::Client(ServerFiles().certificate);
  client.SetAlpnProtocols({"http/1.1"});
  coro::JoinHandle<Ending> served = this->StartServer({}, &server);
  const Ending ending = this->Client(client, ClientScript::kHandshake);
  // The client learns why from the server's alert (RFC 7301: no_application_protocol).
  EXPECT_TRUE(IsTlsError(ending.error)) << ending.error.Message();
  EXPECT_NE(ending.message.find("alert no application protocol"), std::string::npos)
      << ending.message;
  EXPECT_EQ(ending.alpn, "");
  const Ending server_ending = served.Get();
  EXPECT_TRUE(IsTlsError(server_ending.error)) << server_ending.error.Message();
  EXPECT_NE(server_ending.message.find("no application protocol"), std::string::npos)
      << server_ending.message;
}

TYPED_TEST(TlsStreamTest, AlpnNotOfferedProceedsWithNone) {
  TlsContext server = TlsContext::Server(ServerFiles().certificate, ServerFiles().key);
  server.SetAlpnProtocols({"h2"});
  coro::JoinHandle<Ending> served = this->StartServer({}, &server);
  const Ending ending = this->Client(this->client_context_, ClientScript::kHandshake);
  EXPECT_TRUE(ending.error.ok()) << ending.message;
  EXPECT_EQ(ending.alpn, "");
  (void)served.Get();
}

// ---- the alert of a failed handshake ----

// A ClientHello record whose body ends after the version: the server answers with a fatal
// alert record (content type 21) before it closes, and says why.
TYPED_TEST(TlsStreamTest, ABrokenClientHelloGetsAFatalAlert) {
  coro::JoinHandle<Ending> served = this->StartServer();
  testing::RawClient peer(this->address_);
  const std::string hello("\x16\x03\x01\x00\x06"  // handshake record, 6 bytes
                          "\x01\x00\x00\x02"      // ClientHello, 2 bytes
                          "\x03\x03",             // legacy_version, then nothing
                          11);
  ASSERT_TRUE(peer.SendAll(hello));
  const Ending server_ending = served.Get();
  EXPECT_TRUE(IsTlsError(server_ending.error)) << server_ending.error.Message();
  EXPECT_NE(server_ending.message.find("handshake failed"), std::string::npos)
      << server_ending.message;
  const std::string answer = peer.Receive(7);  // the alert record (the server closed after)
  ASSERT_EQ(answer.size(), 7u) << "no alert before the close";
  EXPECT_EQ(answer[0], '\x15') << "record type " << static_cast<int>(answer[0]);
  EXPECT_EQ(answer[3], '\x00');
  EXPECT_EQ(answer[4], '\x02');  // an alert is two bytes:
  EXPECT_EQ(answer[5], '\x02');  // fatal
  EXPECT_EQ(answer[6], '\x32');  // decode_error (50)
  EXPECT_TRUE(peer.SeesClose());
}

}  // namespace
}  // namespace fairsched
