// TlsStream: TLS (1.2 and 1.3, OpenSSL from Debian) over any ByteStream (io/byte_stream.h),
// itself a ByteStream, so BufferedStream<TlsStream<TcpStream<...>>> stacks:
//
//   TlsContext context = TlsContext::Server("cert.pem", "key.pem");   // once per program
//   if (!context.ok()) Fail(context.error());
//   context.SetAlpnProtocols({"h2", "http/1.1"});                      // optional
//   auto tls = TlsStream<TcpStream<Sched>>::Server(context, std::move(tcp));
//   if (IoError e = co_await tls.Handshake(deadline); !e.ok()) Log(tls.ErrorMessage());
//   co_await tls.ReadSome(buffer, deadline);          // a reader coroutine and
//   co_await WriteAll(tls, answer, deadline);         // a writer coroutine, at once
//   co_await tls.Shutdown(deadline);                                   // close_notify
//
// How: OpenSSL never sees a socket. The SSL object reads ciphertext from one memory BIO and
// writes ciphertext to another; an operation runs OpenSSL until it is done or needs more
// input, hands the ciphertext OpenSSL produced to the underlying stream, and reads more from
// it when OpenSSL asked for input. So TLS works over any ByteStream on any backend, with the
// underlying stream's deadlines and cancellation.
//
// Contract:
//   - Errors are IoError values. The underlying stream's errors pass through unchanged
//     (kTimeout, kCancelled, ...). A TLS failure (handshake failure, a certificate that does
//     not verify, no common ALPN protocol, garbage or a tampered record from the peer, the
//     transport ending without close_notify) is kSystem/EPROTO (IsTlsError); ErrorMessage()
//     then says why, with OpenSSL's reason ("certificate verify failed: self-signed
//     certificate", "wrong version number", "tlsv1 alert no application protocol", ...). A
//     read or handshake that timed out waiting for the peer leaves the session usable (call
//     again, or Shutdown). After any other failure the session is broken: every later call
//     returns the same error at once; close the stream. A misbehaving peer never crashes or
//     hangs it: every wait has the caller's deadline, and the memory held is bounded (about
//     one TLS record in each direction plus OpenSSL's own state).
//   - A handshake that fails here sends the peer its TLS alert (a fatal alert saying why:
//     decode_error, handshake_failure, no_application_protocol, ...) before the call returns,
//     so closing the stream afterwards does not lose it. Exception: OpenSSL sends none when
//     the peer does not speak TLS at all (an HTTP request, say).
//   - Handshake(deadline) runs the handshake (server or client, chosen at construction).
//     ReadSome/WriteSome run it implicitly if it has not completed, under their deadline;
//     calling it first gives the handshake a deadline of its own.
//   - ReadSome: at least one byte of plaintext (at most one TLS record per call), or
//     kEndOfStream once the peer sent close_notify (a clean end; nothing lost).
//   - WriteSome: encrypts at most 16 KiB (one record) of `data` per call and returns how
//     many bytes once they were handed to the underlying stream; WriteAll
//     (io/byte_stream.h) loops it.
//   - Shutdown(deadline): sends close_notify (does not wait for the peer's); a pending or
//     later ReadSome still reads until the peer's close_notify (kEndOfStream), but no more
//     writes. Close(): closes the underlying stream without close_notify (the peer sees a
//     truncated session: call Shutdown first). The destructor frees the TLS state only; the
//     underlying stream is destroyed as a member (closing it, if it closes on destruction,
//     as TcpStream does).
//   - ONE READER AND ONE WRITER AT ONCE, like TcpStream: one coroutine may be in ReadSome
//     or Handshake (the read side) while another is in WriteSome or Shutdown (the write
//     side), on any workers. Two concurrent reads (or two writes; Handshake counts as a read,
//     Shutdown as a write) are misuse, reported in debug builds. The underlying stream must
//     allow one reader and one writer at once too (ByteStream says it does).
//     How it stays safe: OpenSSL's SSL object is not thread-safe, so every call into it
//     (and into its BIOs) happens under one short std::mutex that is never held across a
//     suspension; reading the transport and writing it are two roles, each held by at most
//     one of the two coroutines at a time. A step that needs input takes the read role, or,
//     if the other side holds it, waits until that side has fed what it received into the
//     SSL object (or let go). A write side's step sends what is queued (taking the write
//     role, or waiting while the read side holds it) and returns once its record was handed
//     to the transport. A read side's step sends only when it produced output itself
//     (handshake messages, an alert), and leaves it to the write side when that one is
//     sending (the sender sends everything queued before it lets go). So a write that needs
//     a read (before the handshake completed) never waits for a write, and an established
//     session's reader writes the transport only to send an alert: it is not stuck behind
//     a peer that does not read. TLS 1.3 post-handshake messages this side sends (a key update, and
//     the answer to the peer's) go with the next write, as RFC 8446 allows; TLS 1.2
//     renegotiation is refused (it would make a write wait for a read). ThreadSanitizer
//     cannot see inside OpenSSL (not instrumented); the mutex is what keeps it race-free.
//   - Close() may come from any thread or coroutine, also while a read and a write are
//     pending: both return kClosed (a wait inside the TLS layer at once; a wait inside the
//     underlying stream when that stream's Close ends it, as TcpStream's does), and every
//     later call returns kClosed. Close is idempotent. Moving a TlsStream, or destroying it,
//     while an operation is pending is misuse.
//   - ALPN (RFC 7301): a context's SetAlpnProtocols list is what a client offers and what
//     a server accepts, in its order of preference (the server picks its first protocol the
//     client offered). A client that offers none of the server's protocols fails the
//     handshake on both sides (the server sends no_application_protocol, as RFC 7301
//     requires); a client that offers no ALPN at all, or a server without a list, proceeds
//     with none. AlpnProtocol() names the protocol agreed on ("" for none).
//   - TLS 1.2 is the minimum version; OpenSSL's default cipher suites.
//   - Windows: not built. Debian has no OpenSSL for mingw-w64 (its only mingw crypto
//     package is libgcrypt), so `--config=mingw` has no //io:tls and IOCP runs no TLS test.
#ifndef FAIRSCHED_IO_TLS_STREAM_H_
#define FAIRSCHED_IO_TLS_STREAM_H_

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coro/budget.h"
#include "coro/lazy.h"
#include "coro/wait.h"
#include "io/byte_stream.h"
#include "io/io_error.h"
#include "sched/task.h"
#include "sync/primitives.h"

// OpenSSL's types, declared so that users of this header do not include OpenSSL's.
struct ssl_ctx_st;

namespace fairsched {

// The error of every TLS failure; ErrorMessage() of the stream says which.
inline IoError TlsError() { return IoError(IoErrorCode::kSystem, EPROTO); }
inline bool IsTlsError(const IoError& error) {
  return error.code() == IoErrorCode::kSystem && error.sys_errno() == EPROTO;
}

// The configuration TLS sessions are created from: OpenSSL's SSL_CTX (certificates, trust,
// versions, ALPN). Create one per program (or per configuration), configure it, then share
// it: a const TlsContext may be used by many streams on many threads at once. Streams keep
// what they need of it, so it may be destroyed before them.
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

  // The ALPN protocols ("h2", "http/1.1", ...), most preferred first: a client offers them,
  // a server selects from them (see the file comment). Call before creating streams from
  // the context, not concurrently with that. Misuse (checked): a failed context, an empty
  // list, a name that is empty or longer than 255 bytes.
  void SetAlpnProtocols(const std::vector<std::string>& protocols);

  ssl_ctx_st* get() const { return context_; }  // for the stream

 private:
  TlsContext(ssl_ctx_st* context, bool server, std::string error);
  ssl_ctx_st* context_ = nullptr;
  bool server_ = false;
  std::string error_;
};

namespace internal {

// The OpenSSL side of a TlsStream (io/tls_stream.cc): the SSL object and its two memory BIOs.
// Every call runs to completion without waiting and is not thread-safe: TlsSession calls it
// under its mutex.
class TlsEngine {
 public:
  enum class Operation { kHandshake, kRead, kWrite, kShutdown };
  // kDone: finished (`bytes` moved); kWantInput: feed ciphertext (PutInput) and repeat;
  // kEnd: the peer sent close_notify; kFailed: see Message().
  enum class Status { kDone, kWantInput, kEnd, kFailed };
  struct Outcome {
    Status status;
    std::size_t bytes;
    std::size_t produced;  // ciphertext this run queued for the peer
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
  std::size_t PendingOutput() const;
  // Ciphertext received from the peer.
  void PutInput(std::span<const char> data);
  // The transport ended: a Run that then wants input fails (no close_notify came).
  void EndInput() { input_ended_ = true; }

  // TLS 1.3: queues a KeyUpdate that also asks the peer to update (sent with the next
  // write). False when the session cannot (TLS 1.2, the handshake not done).
  bool RequestKeyUpdate();

  bool HandshakeDone() const;
  std::string AlpnProtocol() const;
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

// The shared state of a TlsStream's read side and write side: the engine, the two transport
// roles, the session's end (broken or closed) and the coroutine parked on each side. Every
// method takes the mutex for a few OpenSSL calls at most and never suspends; the waits
// themselves are the template's `co_await coro::WaitWoken`, after a method here parked the
// side (coro::PrepareWait under the mutex, so no wakeup is lost).
class TlsSession {
 public:
  using Operation = TlsEngine::Operation;
  using Status = TlsEngine::Status;
  enum Side { kReadSide = 0, kWriteSide = 1 };
  static Side SideOf(Operation operation) {
    return operation == Operation::kRead || operation == Operation::kHandshake ? kReadSide
                                                                               : kWriteSide;
  }

  TlsSession(const TlsContext& context, std::string_view server_name);

  // An operation of `side` starts (reports a second one on the same side: misuse) / ends.
  // Begin returns the session's end (kClosed, or the error that broke it) if it ended.
  IoError Begin(Side side);
  void End(Side side);

  // One OpenSSL step of `operation`. `input_seen` is the input generation the step saw
  // (for AwaitInput). A failure breaks the session.
  struct Step {
    Status status;
    std::size_t bytes;
    std::uint64_t input_seen;
    std::size_t produced;  // ciphertext the step queued
  };
  Step Run(Operation operation, std::span<char> into, std::span<const char> data);

  // What a side does next about the transport (see the two roles in io/tls_stream.h).
  enum class Turn {
    kDone,      // nothing to do (send: nothing queued, or the other side sends it)
    kRetry,     // input arrived since the step: run it again
    kParked,    // wait (co_await coro::WaitWoken), then Unpark and ask again
    kTransfer,  // this side holds the role: move the bytes, then report (Sent / Received)
    kEnded,     // the session ended: end_error()
  };
  // Input for a step that saw `input_seen`: kRetry, kParked, or kTransfer (read the
  // transport into input_buffer(), then Received).
  Turn AwaitInput(Side side, std::uint64_t input_seen);
  void Received(IoResult<std::size_t> received);
  // Sending what is queued after a step that queued `produced` bytes: kDone, kParked, or
  // kTransfer (write output_chunk()). `drain`: wait for the other side's sending and send
  // all that is queued (the write side; any side after a failure, for the alert).
  // Otherwise (a read) nothing unless the step produced output, and then what is queued
  // now, or nothing if the other side is sending (it sends what is queued before it lets
  // go).
  Turn AwaitSend(Side side, bool drain, std::size_t produced);
  // After output_chunk() was written (or failed: that breaks the session): kTransfer with
  // the next chunk, kDone, or kEnded.
  Turn Sent(const IoError& written);
  // After a parked wait ended with `why`: success to go on (woken), else the error.
  IoError Unpark(Side side, coro::WakeReason why);
  // Records an error that breaks the session (the underlying stream failed).
  void Break(const IoError& error);

  // kClosed, or the error that broke the session (success while it has not ended).
  IoError end_error() const;
  // Ends the session for every later call and wakes both parked sides.
  void Close();

  std::span<char> input_buffer() { return input_buffer_; }
  std::span<const char> output_chunk() const {
    return std::span<const char>(output_buffer_.data(), output_chunk_);
  }

  std::string Message() const;
  bool HandshakeDone() const;
  std::string AlpnProtocol() const;
  bool RequestKeyUpdate();

 private:
  IoError EndErrorLocked() const;
  // Takes the next chunk of queued output (up to the send budget) into output_buffer_, or
  // releases the write role when there is none; returns which.
  Turn NextChunkLocked(coro::Waker* wake);
  void ParkLocked(Side side);
  coro::Waker TakeParkedLocked(Side side) { return std::exchange(parked_[side], coro::Waker()); }
  // Ends both parked waits: they look at the session again (it ended, or a role freed).
  void WakeBoth();

  mutable Mutex mutex_;
  TlsEngine engine_;
  bool active_[2] = {false, false};  // an operation of each side runs (misuse check)
  bool receiving_ = false;           // the read role: someone reads the transport
  bool sending_ = false;             // the write role: someone writes the transport
  Side sender_ = kReadSide;          // who holds the write role
  std::size_t send_budget_ = 0;      // what the sender may still take from the engine
  std::uint64_t input_generation_ = 0;  // +1 whenever input arrives or the read role frees
  coro::Waker parked_[2];               // a coroutine waiting on each side
  IoError broken_;
  bool write_failed_ = false;  // a transport write failed: nothing more can be sent
  bool closed_ = false;
  std::vector<char> input_buffer_;   // used by the read role's holder only
  std::vector<char> output_buffer_;  // used by the write role's holder only
  std::size_t output_chunk_ = 0;
};

}  // namespace internal

template <ByteStream Stream>
class TlsStream {
  using Session = internal::TlsSession;
  using Operation = Session::Operation;
  using Status = Session::Status;
  using Turn = Session::Turn;

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
    if (data.size() > internal::TlsEngine::kMaxRecord) {
      data = data.first(internal::TlsEngine::kMaxRecord);
    }
    return Drive(Operation::kWrite, {}, data, deadline);
  }

  coro::Lazy<IoError> Shutdown(TaskDeadline deadline) {
    IoResult<std::size_t> done = co_await Drive(Operation::kShutdown, {}, {}, deadline);
    co_return done.ok() ? IoError() : done.error();
  }

  // Any thread, idempotent, also while operations are pending (see the file comment).
  void Close() {
    Live().Close();
    stream_.Close();
  }

  // Why the session failed (empty while it has not).
  std::string ErrorMessage() const { return Live().Message(); }
  bool HandshakeDone() const { return Live().HandshakeDone(); }
  // The ALPN protocol agreed on in the handshake; "" for none (or before the handshake).
  std::string AlpnProtocol() const { return Live().AlpnProtocol(); }
  // TLS 1.3: renews this side's keys and asks the peer to renew its own, with the next
  // write (a long-lived session's key rotation). False on TLS 1.2 or before the handshake.
  bool RequestKeyUpdate() { return Live().RequestKeyUpdate(); }
  Stream& stream() { return stream_; }

 private:
  TlsStream(const TlsContext& context, Stream stream, std::string_view server_name)
      : stream_(std::move(stream)), session_(std::make_unique<Session>(context, server_name)) {}

  Session& Live() const {
    FAIRSCHED_CHECK(session_ != nullptr, "use of a moved-from TlsStream");
    return *session_;
  }

  // Marks one side busy for the misuse check, for the life of an operation's frame.
  class SideGuard {
   public:
    SideGuard(Session* session, Session::Side side) : session_(session), side_(side) {}
    ~SideGuard() { session_->End(side_); }
    SideGuard(const SideGuard&) = delete;
    SideGuard& operator=(const SideGuard&) = delete;

   private:
    Session* session_;
    Session::Side side_;
  };

  // Runs `operation` until it is done: after each step, hands the ciphertext OpenSSL
  // produced (handshake messages, records, alerts, close_notify) to the transport, and when
  // OpenSSL wants input, gets more from the transport.
  coro::Lazy<IoResult<std::size_t>> Drive(Operation operation, std::span<char> into,
                                          std::span<const char> data, TaskDeadline deadline) {
    // One unit of the cooperative budget (coro/budget.h) per read or write: records OpenSSL
    // already decrypted are served without a socket operation, so a flood would otherwise
    // never suspend.
    co_await coro::ConsumeBudget();
    Session& session = Live();
    const Session::Side side = Session::SideOf(operation);
    const IoError ended = session.Begin(side);
    SideGuard guard(&session, side);
    if (!ended.ok()) co_return ended;
    while (true) {
      const Session::Step step = session.Run(operation, into, data);
      // Sent even after a failure: the alert tells the peer why.
      const bool drain = side == Session::kWriteSide || step.status == Status::kFailed;
      const IoError sent = co_await Send(side, drain, step.produced, deadline);
      switch (step.status) {
        case Status::kDone:
          if (!sent.ok()) co_return Failed(operation, sent);
          co_return step.bytes;
        case Status::kEnd:
          co_return IoError(IoErrorCode::kEndOfStream);
        case Status::kFailed:
          co_return session.end_error();
        case Status::kWantInput:
          break;
      }
      if (!sent.ok()) co_return Failed(operation, sent);
      const IoError received = co_await Receive(side, step.input_seen, deadline);
      if (!received.ok()) co_return Failed(operation, received);
    }
  }

  // The error an operation returns for `error`, which breaks the session unless it is a
  // read's timeout (nothing was lost: OpenSSL keeps what arrived and resumes at the next
  // call; a write must be retried with the same bytes, which WriteSome cannot promise).
  IoError Failed(Operation operation, const IoError& error) {
    const IoError ended = session_->end_error();
    if (!ended.ok()) return ended;  // closed (or broken) meanwhile: that is the cause
    const bool keeps_session = error.code() == IoErrorCode::kTimeout &&
                               Session::SideOf(operation) == Session::kReadSide;
    if (!keeps_session) session_->Break(error);
    return error;
  }

  // Hands queued ciphertext to the transport (see TlsSession::AwaitSend).
  coro::Lazy<IoError> Send(Session::Side side, bool drain, std::size_t produced,
                           TaskDeadline deadline) {
    Session& session = *session_;
    while (true) {
      Turn turn = session.AwaitSend(side, drain, produced);
      if (turn == Turn::kParked) {
        const IoError woken = session.Unpark(side, co_await coro::WaitWoken(deadline));
        if (!woken.ok()) co_return woken;
        continue;
      }
      while (turn == Turn::kTransfer) {
        turn = session.Sent(co_await WriteAll(stream_, session.output_chunk(), deadline));
      }
      co_return turn == Turn::kEnded ? session.end_error() : IoError();
    }
  }

  // Gets more ciphertext for a step that saw `input_seen` (see TlsSession::AwaitInput).
  coro::Lazy<IoError> Receive(Session::Side side, std::uint64_t input_seen,
                              TaskDeadline deadline) {
    Session& session = *session_;
    switch (session.AwaitInput(side, input_seen)) {
      case Turn::kParked:
        co_return session.Unpark(side, co_await coro::WaitWoken(deadline));
      case Turn::kTransfer: {
        const IoResult<std::size_t> received =
            co_await stream_.ReadSome(session.input_buffer(), deadline);
        session.Received(received);
        // The end of the transport is not an error here: the next step says what it means.
        if (received.ok() || received.error().code() == IoErrorCode::kEndOfStream) {
          co_return IoError();
        }
        co_return received.error();
      }
      case Turn::kEnded:
        co_return session.end_error();
      case Turn::kDone:
      case Turn::kRetry:
        break;
    }
    co_return IoError();
  }

  Stream stream_;
  std::unique_ptr<Session> session_;
};

}  // namespace fairsched

#endif  // FAIRSCHED_IO_TLS_STREAM_H_
