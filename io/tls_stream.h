// TlsStream: TLS (1.2 and 1.3, OpenSSL from Debian) over any ByteStream (io/byte_stream.h),
// itself a ByteStream, so BufferedStream<TlsStream<TcpStream<...>>> stacks:
//
//   TlsContext context = TlsContext::Server("cert.pem", "key.pem");   // once per program
//   if (!context.ok()) Fail(context.error());
//   auto tls = TlsStream<TcpStream<Sched>>::Server(context, std::move(tcp));
//   if (IoError e = co_await tls.Handshake(deadline); !e.ok()) Log(tls.ErrorMessage());
//   co_await tls.ReadSome(buffer, deadline);
//   co_await WriteAll(tls, answer, deadline);
//   co_await tls.Shutdown(deadline);                                   // close_notify
//
// How: OpenSSL never sees a socket. The SSL object reads ciphertext from one memory BIO and
// writes ciphertext to another; each operation runs OpenSSL until it is done or needs more
// input, writes whatever ciphertext OpenSSL produced to the underlying stream, and reads
// more from it when OpenSSL asked for input. So TLS works over any ByteStream on any
// backend, with the underlying stream's deadlines and cancellation.
//
// Contract:
//   - Errors are IoError values. The underlying stream's errors pass through unchanged
//     (kTimeout, kCancelled, ...). A TLS failure (handshake failure, a certificate that does
//     not verify, garbage or a tampered record from the peer, the transport ending without
//     close_notify) is kSystem/EPROTO (IsTlsError); ErrorMessage() then says why, with
//     OpenSSL's reason ("certificate verify failed: self-signed certificate", "wrong version
//     number", ...). A read or handshake that timed out waiting for the peer leaves the
//     session usable (call again, or Shutdown). After any other failure the session is
//     broken: every later call returns the same error at once; close the stream. A misbehaving peer
//     never crashes or hangs it: every wait has the caller's deadline, and the memory held is
//     bounded (one TLS record in each direction plus OpenSSL's own state).
//   - Handshake(deadline) runs the handshake (server or client, chosen at construction).
//     ReadSome/WriteSome run it implicitly if it has not completed, under their deadline;
//     calling it first gives the handshake a deadline of its own.
//   - ReadSome: at least one byte of plaintext (at most one TLS record per call), or
//     kEndOfStream once the peer sent close_notify (a clean end; nothing lost).
//   - WriteSome: encrypts and sends at most 16 KiB (one record) of `data` per call and
//     returns how many bytes; WriteAll (io/byte_stream.h) loops it.
//   - Shutdown(deadline): sends close_notify (does not wait for the peer's); then only
//     Close or destruction. Close(): closes the underlying stream without close_notify (the
//     peer sees a truncated session: call Shutdown first). The destructor frees the TLS
//     state only; the underlying stream is destroyed as a member (closing it, if it closes on
//     destruction, as TcpStream does).
//   - ONE operation at a time: unlike TcpStream, a TlsStream must not have a reader and a
//     writer coroutine at once (an SSL object is not thread-safe, and TLS 1.3 reads may
//     write: key updates, alerts). Checked in debug builds. Between calls the stream may
//     move between worker threads (the coroutine's suspensions order its calls). ThreadSanitizer
//     cannot see inside OpenSSL (not instrumented); this rule is what keeps it race-free.
//   - TLS 1.2 is the minimum version; OpenSSL's default cipher suites.
#ifndef FAIRSCHED_IO_TLS_STREAM_H_
#define FAIRSCHED_IO_TLS_STREAM_H_

#include <cerrno>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coro/lazy.h"
#include "io/byte_stream.h"
#include "io/io_error.h"
#include "sched/task.h"

// OpenSSL's types, declared so that users of this header do not include OpenSSL's.
struct ssl_ctx_st;

namespace fairsched {

// The error of every TLS failure; ErrorMessage() of the stream says which.
inline IoError TlsError() { return IoError(IoErrorCode::kSystem, EPROTO); }
inline bool IsTlsError(const IoError& error) {
  return error.code() == IoErrorCode::kSystem && error.sys_errno() == EPROTO;
}

// The configuration TLS sessions are created from: OpenSSL's SSL_CTX (certificates, trust,
// versions). Create one per program (or per configuration) and share it: a const TlsContext
// may be used by many streams on many threads at once. Streams keep what they need of it,
// so it may be destroyed before them.
class TlsContext {
 public:
  // A server context: the certificate chain and its private key, PEM files.
  static TlsContext Server(const std::string& certificate_file, const std::string& key_file);
  // A client context that verifies the server's certificate against the CA certificates in
  // `ca_file` (PEM), or against the system's trust store when `ca_file` is empty.
  static TlsContext Client(const std::string& ca_file);

  TlsContext(TlsContext&& other) noexcept;
  TlsContext& operator=(TlsContext&& other) noexcept;
  ~TlsContext();

  // Whether the context was created; if not, error() says why (a missing file, a key that
  // does not match the certificate, ...), and streams must not be created from it.
  bool ok() const { return context_ != nullptr; }
  const std::string& error() const { return error_; }
  bool is_server() const { return server_; }

  ssl_ctx_st* get() const { return context_; }  // for the stream

 private:
  TlsContext(ssl_ctx_st* context, bool server, std::string error);
  ssl_ctx_st* context_ = nullptr;
  bool server_ = false;
  std::string error_;
};

namespace internal {

// The OpenSSL side of a TlsStream (io/tls_stream.cc): the SSL object and its two memory BIOs.
// Every call runs to completion without waiting; the template below moves the bytes.
class TlsEngine {
 public:
  enum class Operation { kHandshake, kRead, kWrite, kShutdown };
  // kDone: finished (`bytes` moved); kWantInput: feed ciphertext (PutInput) and repeat;
  // kEnd: the peer sent close_notify; kFailed: see Message().
  enum class Status { kDone, kWantInput, kEnd, kFailed };
  struct Outcome {
    Status status;
    std::size_t bytes;
  };

  // `server_name` (client only): sent as SNI and checked against the server's certificate.
  TlsEngine(const TlsContext& context, std::string_view server_name);
  ~TlsEngine();
  TlsEngine(const TlsEngine&) = delete;
  TlsEngine& operator=(const TlsEngine&) = delete;

  // Runs `operation` once: kRead into `into`, kWrite from `data` (non-empty, at most
  // kMaxRecord bytes; all are taken on kDone).
  Outcome Run(Operation operation, std::span<char> into, std::span<const char> data);

  // Ciphertext OpenSSL produced for the peer: moves up to into.size() bytes into `into`.
  std::size_t TakeOutput(std::span<char> into);
  bool HasOutput() const;
  // Ciphertext received from the peer.
  void PutInput(std::span<const char> data);
  // The transport ended: a Run that then wants input fails (no close_notify came).
  void EndInput() { input_ended_ = true; }

  bool HandshakeDone() const;
  const std::string& Message() const { return message_; }

  // One TLS record's plaintext.
  static constexpr std::size_t kMaxRecord = 16 * 1024;

 private:
  void Fail(std::string_view what);

  struct Ssl;
  std::unique_ptr<Ssl> ssl_;
  bool input_ended_ = false;
  bool established_ = false;  // the handshake completed (at some point)
  std::string message_;
};

}  // namespace internal

template <ByteStream Stream>
class TlsStream {
  using Engine = internal::TlsEngine;
  using Operation = Engine::Operation;
  using Status = Engine::Status;

 public:
  // The server side of a session on `stream`; `context` must be a server context.
  static TlsStream Server(const TlsContext& context, Stream stream) {
    FAIRSCHED_CHECK(context.ok() && context.is_server(),
                    "TlsStream::Server needs a server TlsContext");
    return TlsStream(context, std::move(stream), {});
  }
  // The client side; `server_name` is sent as SNI and the certificate must be valid for it.
  static TlsStream Client(const TlsContext& context, Stream stream, std::string_view server_name) {
    FAIRSCHED_CHECK(context.ok() && !context.is_server(),
                    "TlsStream::Client needs a client TlsContext");
    FAIRSCHED_CHECK(!server_name.empty(), "TlsStream::Client needs the server's name");
    return TlsStream(context, std::move(stream), server_name);
  }

  TlsStream(TlsStream&&) noexcept = default;
  TlsStream& operator=(TlsStream&&) noexcept = default;

  coro::Lazy<IoError> Handshake(TaskDeadline deadline) {
    IoResult<std::size_t> done = co_await Drive(Operation::kHandshake, {}, {}, deadline);
    co_return done.ok() ? IoError() : done.error();
  }

  coro::Lazy<IoResult<std::size_t>> ReadSome(std::span<char> into, TaskDeadline deadline) {
    FAIRSCHED_DCHECK(!into.empty(), "TlsStream::ReadSome into an empty buffer");
    return Drive(Operation::kRead, into, {}, deadline);
  }

  coro::Lazy<IoResult<std::size_t>> WriteSome(std::span<const char> data, TaskDeadline deadline) {
    FAIRSCHED_DCHECK(!data.empty(), "TlsStream::WriteSome of nothing");
    if (data.size() > Engine::kMaxRecord) data = data.first(Engine::kMaxRecord);
    return Drive(Operation::kWrite, {}, data, deadline);
  }

  coro::Lazy<IoError> Shutdown(TaskDeadline deadline) {
    IoResult<std::size_t> done = co_await Drive(Operation::kShutdown, {}, {}, deadline);
    co_return done.ok() ? IoError() : done.error();
  }

  void Close() {
    FAIRSCHED_DCHECK(!busy_, "TlsStream closed while an operation is in progress");
    stream_.Close();
  }

  // Why the session failed (empty while it has not).
  const std::string& ErrorMessage() const { return Checked().Message(); }
  bool HandshakeDone() const { return Checked().HandshakeDone(); }
  Stream& stream() { return stream_; }

 private:
  TlsStream(const TlsContext& context, Stream stream, std::string_view server_name)
      : stream_(std::move(stream)),
        engine_(std::make_unique<Engine>(context, server_name)),
        buffer_(Engine::kMaxRecord + 1024) {}  // a record and its header, MAC and padding

  // Runs `operation` until it is done: after each step, sends the ciphertext OpenSSL
  // produced (handshake messages, records, alerts, close_notify), and when OpenSSL wants
  // input, receives more from the stream.
  coro::Lazy<IoResult<std::size_t>> Drive(Operation operation, std::span<char> into,
                                          std::span<const char> data, TaskDeadline deadline) {
    FAIRSCHED_DCHECK(!busy_, "two concurrent operations on a TlsStream (one at a time)");
    (void)Checked();
    if (!broken_.ok()) co_return broken_;
    busy_ = true;
    IoResult<std::size_t> result = co_await DriveSteps(operation, into, data, deadline);
    busy_ = false;
    co_return result;
  }

  const Engine& Checked() const {
    FAIRSCHED_CHECK(engine_ != nullptr, "use of a moved-from TlsStream");
    return *engine_;
  }

  // Records a failure that breaks the session and returns it.
  IoError Break(IoError error) {
    broken_ = error;
    return error;
  }

  coro::Lazy<IoResult<std::size_t>> DriveSteps(Operation operation, std::span<char> into,
                                               std::span<const char> data, TaskDeadline deadline) {
    while (true) {
      const Engine::Outcome outcome = engine_->Run(operation, into, data);
      // Sent even after a failure: the alert tells the peer why (best effort).
      const IoError sent = co_await SendOutput(deadline);
      switch (outcome.status) {
        case Status::kDone:
          if (!sent.ok()) co_return Break(sent);
          co_return outcome.bytes;
        case Status::kEnd:
          co_return IoError(IoErrorCode::kEndOfStream);
        case Status::kFailed:
          co_return Break(TlsError());
        case Status::kWantInput:
          break;
      }
      if (!sent.ok()) co_return Break(sent);
      IoResult<std::size_t> received = co_await stream_.ReadSome(buffer_, deadline);
      if (received.ok()) {
        engine_->PutInput(std::span<const char>(buffer_.data(), received.value()));
      } else if (received.error().code() == IoErrorCode::kEndOfStream) {
        engine_->EndInput();  // the next step fails (no close_notify), naming the cause
      } else if (received.error().code() == IoErrorCode::kTimeout &&
                 operation != Operation::kWrite) {
        // Nothing was lost: OpenSSL keeps what arrived and resumes at the next call. (A
        // write must be retried with the same bytes, which WriteSome cannot promise.)
        co_return received.error();
      } else {
        co_return Break(received.error());
      }
    }
  }

  coro::Lazy<IoError> SendOutput(TaskDeadline deadline) {
    while (engine_->HasOutput()) {
      const std::size_t n = engine_->TakeOutput(buffer_);
      const IoError written =
          co_await WriteAll(stream_, std::span<const char>(buffer_.data(), n), deadline);
      if (!written.ok()) co_return written;
    }
    co_return IoError();
  }

  Stream stream_;
  std::unique_ptr<Engine> engine_;
  std::vector<char> buffer_;  // ciphertext on its way in or out (one operation at a time)
  IoError broken_;            // the failure that broke the session, if one did
  bool busy_ = false;         // an operation is running (debug check of one at a time)
};

}  // namespace fairsched

#endif  // FAIRSCHED_IO_TLS_STREAM_H_
