// TlsStream (io/tls_stream.h) over real loopback TcpStreams on both backends: a TLS echo
// server coroutine (BufferedStream over TlsStream, so the layers stack) against a TlsStream
// client or a raw socket. Covers a large transfer both ways with close_notify from each
// side, a certificate the client does not trust, garbage instead of a handshake and after
// one, a handshake deadline against a silent peer, and a peer that ends the TCP connection
// without close_notify. The certificates are made here, at test time, with OpenSSL's API
// (self-signed P-256 keys for "localhost", written to TEST_TMPDIR): no key is committed.
#include "io/tls_stream.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

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
#include "tests/io/raw_client.h"

namespace fairsched {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// ---- test certificates ----

struct CertificateFiles {
  std::string certificate;
  std::string key;
};

// Writes a fresh self-signed certificate for "localhost" and its key as PEM files named
// <dir>/<name>.crt and .key. Test-only keys: made per run, never committed.
CertificateFiles MakeSelfSigned(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string base = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* certificate = X509_new();
  if (key == nullptr || certificate == nullptr) ADD_FAILURE() << "OpenSSL allocation failed";
  X509_set_version(certificate, 2);  // v3, for the subjectAltName extension
  ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1);
  X509_gmtime_adj(X509_getm_notBefore(certificate), -3600);
  X509_gmtime_adj(X509_getm_notAfter(certificate), 24 * 3600);
  X509_set_pubkey(certificate, key);
  X509_NAME* subject = X509_get_subject_name(certificate);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(certificate, subject);  // self-signed
  X509V3_CTX extensions;
  X509V3_set_ctx_nodb(&extensions);
  X509V3_set_ctx(&extensions, certificate, certificate, nullptr, nullptr, 0);
  X509_EXTENSION* alt_name =
      X509V3_EXT_conf_nid(nullptr, &extensions, NID_subject_alt_name, "DNS:localhost");
  X509_add_ext(certificate, alt_name, -1);
  X509_EXTENSION_free(alt_name);
  EXPECT_GT(X509_sign(certificate, key, EVP_sha256()), 0);
  CertificateFiles files{base + ".crt", base + ".key"};
  FILE* out = std::fopen(files.certificate.c_str(), "w");
  EXPECT_EQ(PEM_write_X509(out, certificate), 1);
  std::fclose(out);
  out = std::fopen(files.key.c_str(), "w");
  EXPECT_EQ(PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  std::fclose(out);
  X509_free(certificate);
  EVP_PKEY_free(key);
  return files;
}

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

// A reader waits inside the handshake (the peer is silent) when a second operation starts.
void StartTwoOperationsAtOnce() {
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

TEST(TlsStreamDeathTest, TwoOperationsAtOnceAreReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(StartTwoOperationsAtOnce(), "two concurrent operations on a TlsStream");
}
#endif

// ---- over loopback TCP, both backends ----

// How a coroutine's session ended: the error (success: none) and the TLS message.
struct Ending {
  IoError error;
  std::string message;
  bool first_read_timed_out = false;
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
  if (!error.ok() || script == ClientScript::kHandshake)
    co_return Ending{error, tls.ErrorMessage()};
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

  coro::JoinHandle<Ending> StartServer(ServerLimits limits = {}) {
    return coro::Spawn(scheduler_, ServeEcho<Sched>(&listener_, &server_context_, limits));
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

}  // namespace
}  // namespace fairsched
