// The OpenSSL side of io/tls_stream.h: TlsContext (an SSL_CTX, its ALPN list), TlsEngine
// (an SSL object between two memory BIOs), the error messages built from OpenSSL's error
// queue, and TlsSession (the two transport roles shared by a stream's reader and writer).
#include "io/tls_stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <climits>
#include <utility>

namespace fairsched {
namespace {

// The reasons OpenSSL queued on this thread (oldest first, "; "-separated), and clears the
// queue. The queue is per thread: callers read it right after the failing call, before the
// coroutine can suspend and move.
std::string DrainErrorQueue() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char reason[256];
    ERR_error_string_n(code, reason, sizeof(reason));
    if (!text.empty()) text += "; ";
    text += reason;
  }
  return text;
}

std::string Failure(std::string_view what) {
  std::string reason = DrainErrorQueue();
  return std::string(what) + (reason.empty() ? "" : ": " + reason);
}

// A new SSL_CTX of `method` that accepts TLS 1.2 at the least, set up by
// `configure(context)` (which returns the failure, or "" on success). On any failure: null,
// the SSL_CTX freed, and the reason in `*error`.
template <typename Configure>
SSL_CTX* NewContext(const SSL_METHOD* method, Configure configure, std::string* error) {
  ERR_clear_error();
  SSL_CTX* context = SSL_CTX_new(method);
  if (context == nullptr) {
    *error = Failure("SSL_CTX_new");
  } else if (SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) != 1) {
    *error = Failure("TLS 1.2 minimum");
  } else {
    // TLS 1.2 renegotiation would make a write wait for a read in an established session.
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION);
    *error = configure(context);
  }
  if (!error->empty()) {
    SSL_CTX_free(context);
    return nullptr;
  }
  return context;
}

// ALPN: a server's list lives in its SSL_CTX's ex_data, freed with the SSL_CTX (sessions
// hold a reference to it and may outlive the TlsContext). The list is in the wire format:
// each name preceded by its length byte.
void FreeAlpnList(void*, void* list, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(list);
}

int AlpnListIndex() {
  static const int index =
      SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, FreeAlpnList);
  return index;
}

// The server's choice: its first protocol the client offered. With none in common the
// handshake fails with the no_application_protocol alert (RFC 7301, section 3.2).
int SelectAlpn(SSL* ssl, const unsigned char** selected, unsigned char* selected_length,
               const unsigned char* offered, unsigned int offered_length, void*) {
  const auto* ours =
      static_cast<const std::string*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), AlpnListIndex()));
  if (ours == nullptr) return SSL_TLSEXT_ERR_NOACK;
  unsigned char* choice = nullptr;
  if (SSL_select_next_proto(&choice, selected_length,
                            reinterpret_cast<const unsigned char*>(ours->data()),
                            static_cast<unsigned int>(ours->size()), offered,
                            offered_length) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *selected = choice;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

TlsContext::TlsContext(ssl_ctx_st* context, bool server, std::string error)
    : context_(context), server_(server), error_(std::move(error)) {}

TlsContext::TlsContext(TlsContext&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      server_(other.server_),
      error_(std::move(other.error_)) {}

TlsContext& TlsContext::operator=(TlsContext&& other) noexcept {
  if (this != &other) {
    SSL_CTX_free(context_);
    context_ = std::exchange(other.context_, nullptr);
    server_ = other.server_;
    error_ = std::move(other.error_);
  }
  return *this;
}

TlsContext::~TlsContext() { SSL_CTX_free(context_); }

TlsContext TlsContext::Server(const std::string& certificate_file, const std::string& key_file) {
  std::string error;
  SSL_CTX* context = NewContext(
      TLS_server_method(),
      [&](SSL_CTX* context) -> std::string {
        if (SSL_CTX_use_certificate_chain_file(context, certificate_file.c_str()) != 1) {
          return Failure("certificate " + certificate_file);
        }
        if (SSL_CTX_use_PrivateKey_file(context, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
          return Failure("private key " + key_file);
        }
        if (SSL_CTX_check_private_key(context) != 1) {
          return Failure("private key " + key_file + " does not match " + certificate_file);
        }
        return {};
      },
      &error);
  return TlsContext(context, true, std::move(error));
}

TlsContext TlsContext::Client(const std::string& ca_file) {
  std::string error;
  SSL_CTX* context = NewContext(
      TLS_client_method(),
      [&](SSL_CTX* context) -> std::string {
        if (ca_file.empty()
                ? SSL_CTX_set_default_verify_paths(context) != 1
                : SSL_CTX_load_verify_locations(context, ca_file.c_str(), nullptr) != 1) {
          return Failure(ca_file.empty() ? std::string("system trust store")
                                         : "CA file " + ca_file);
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
        return {};
      },
      &error);
  return TlsContext(context, false, std::move(error));
}

void TlsContext::SetAlpnProtocols(const std::vector<std::string>& protocols) {
  FAIRSCHED_CHECK(ok(), "TlsContext::SetAlpnProtocols on a context that was not created");
  FAIRSCHED_CHECK(!protocols.empty(), "TlsContext::SetAlpnProtocols of an empty list");
  auto wire = std::make_unique<std::string>();
  for (const std::string& protocol : protocols) {
    FAIRSCHED_CHECK(!protocol.empty() && protocol.size() <= 255,
                    "TlsContext::SetAlpnProtocols: a name must have 1 to 255 bytes");
    wire->push_back(static_cast<char>(protocol.size()));
    *wire += protocol;
  }
  if (server_) {
    const int index = AlpnListIndex();
    delete static_cast<std::string*>(SSL_CTX_get_ex_data(context_, index));
    FAIRSCHED_CHECK(SSL_CTX_set_ex_data(context_, index, wire.get()) == 1,
                    "TlsContext::SetAlpnProtocols: out of memory");
    wire.release();  // the SSL_CTX owns it now (FreeAlpnList)
    SSL_CTX_set_alpn_select_cb(context_, SelectAlpn, nullptr);
  } else {
    // OpenSSL copies the list; this call returns 0 on success.
    FAIRSCHED_CHECK(SSL_CTX_set_alpn_protos(context_,
                                            reinterpret_cast<const unsigned char*>(wire->data()),
                                            static_cast<unsigned int>(wire->size())) == 0,
                    "TlsContext::SetAlpnProtocols: out of memory");
  }
}

namespace internal {

struct TlsEngine::Ssl {
  SSL* ssl = nullptr;
  BIO* input = nullptr;   // ciphertext from the peer (owned by ssl)
  BIO* output = nullptr;  // ciphertext for the peer (owned by ssl)
  ~Ssl() { SSL_free(ssl); }
};

TlsEngine::TlsEngine(const TlsContext& context, std::string_view server_name)
    : ssl_(std::make_unique<Ssl>()) {
  ERR_clear_error();
  // SSL_new takes its own reference to the context.
  ssl_->ssl = SSL_new(context.get());
  ssl_->input = BIO_new(BIO_s_mem());
  ssl_->output = BIO_new(BIO_s_mem());
  FAIRSCHED_CHECK(ssl_->ssl != nullptr && ssl_->input != nullptr && ssl_->output != nullptr,
                  "TlsEngine: OpenSSL could not allocate a session");
  SSL_set_bio(ssl_->ssl, ssl_->input, ssl_->output);  // the SSL owns both from here
  if (context.is_server()) {
    SSL_set_accept_state(ssl_->ssl);
  } else {
    const std::string name(server_name);
    if (SSL_set_tlsext_host_name(ssl_->ssl, name.c_str()) != 1 ||
        SSL_set1_host(ssl_->ssl, name.c_str()) != 1) {
      Fail("server name '" + name + "'");
    }
    SSL_set_connect_state(ssl_->ssl);
  }
}

TlsEngine::~TlsEngine() = default;

TlsEngine::Outcome TlsEngine::Run(Operation operation, std::span<char> into,
                                  std::span<const char> data) {
  if (!message_.empty()) return {Status::kFailed, 0, 0};
  SSL* ssl = ssl_->ssl;
  const std::size_t output_before = PendingOutput();
  // Before the call: a fatal error resets OpenSSL's state, so after a failed call
  // SSL_is_init_finished no longer says whether the handshake had completed.
  established_ = established_ || SSL_is_init_finished(ssl) == 1;
  ERR_clear_error();
  int result = 0;
  switch (operation) {
    case Operation::kHandshake:
      result = SSL_do_handshake(ssl);
      break;
    case Operation::kRead:
      result =
          SSL_read(ssl, into.data(), static_cast<int>(std::min<std::size_t>(into.size(), INT_MAX)));
      break;
    case Operation::kWrite:
      FAIRSCHED_DCHECK(!data.empty() && data.size() <= kMaxRecord, "TlsEngine: bad write size");
      result = SSL_write(ssl, data.data(), static_cast<int>(data.size()));
      break;
    case Operation::kShutdown:
      // Before the handshake completed there is no session to close.
      if (!established_) return {Status::kDone, 0, 0};
      // A post-handshake message still to be written would make SSL_shutdown refuse.
      if (SSL_in_init(ssl) == 1 && (result = SSL_do_handshake(ssl)) != 1) break;
      // 0: our close_notify is queued, the peer's has not come (we do not wait for it).
      result = SSL_shutdown(ssl) >= 0 ? 1 : -1;
      break;
  }
  const std::size_t produced = PendingOutput() - output_before;
  established_ = established_ || SSL_is_init_finished(ssl) == 1;
  if (result > 0) {
    return {Status::kDone,
            operation == Operation::kShutdown ? 0 : static_cast<std::size_t>(result), produced};
  }
  switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ:
      if (!input_ended_) return {Status::kWantInput, 0, produced};
      Fail(established_ ? "the peer ended the connection without close_notify"
                        : "the peer ended the connection during the handshake");
      return {Status::kFailed, 0, produced};
    case SSL_ERROR_ZERO_RETURN:
      return {Status::kEnd, 0, produced};
    default: {
      const long verify = SSL_get_verify_result(ssl);
      std::string what = established_ ? "TLS error" : "TLS handshake failed";
      if (verify != X509_V_OK) {
        what += std::string(" (certificate: ") + X509_verify_cert_error_string(verify) + ")";
      }
      Fail(what);
      return {Status::kFailed, 0, produced};
    }
  }
}

void TlsEngine::Fail(std::string_view what) { message_ = Failure(what); }

std::size_t TlsEngine::TakeOutput(std::span<char> into) {
  const int n = BIO_read(ssl_->output, into.data(),
                         static_cast<int>(std::min<std::size_t>(into.size(), INT_MAX)));
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

std::size_t TlsEngine::PendingOutput() const { return BIO_ctrl_pending(ssl_->output); }

void TlsEngine::PutInput(std::span<const char> data) {
  // A memory BIO grows as needed; a write to it fails only when memory runs out.
  const int n = BIO_write(ssl_->input, data.data(), static_cast<int>(data.size()));
  FAIRSCHED_CHECK(n == static_cast<int>(data.size()), "TlsEngine: out of memory for input");
}

bool TlsEngine::HandshakeDone() const { return established_; }

std::string TlsEngine::AlpnProtocol() const {
  const unsigned char* name = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl_->ssl, &name, &length);
  return name == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(name), length);
}

bool TlsEngine::RequestKeyUpdate() {
  SSL* ssl = ssl_->ssl;
  if (!message_.empty() || SSL_version(ssl) < TLS1_3_VERSION || SSL_is_init_finished(ssl) != 1) {
    return false;
  }
  // SSL_key_update only marks the session as in a handshake again; the SSL_do_handshake
  // queues the KeyUpdate message now, so that the next read does not (a read must not have
  // the write side's output to send) and Shutdown is not refused meanwhile.
  const bool queued = SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) == 1 &&
                      SSL_do_handshake(ssl) == 1;
  ERR_clear_error();  // a refusal is the answer, not a failure of the session
  return queued;
}

// ---- TlsSession ----

TlsSession::TlsSession(const TlsContext& context, std::string_view server_name)
    : engine_(context, server_name),
      input_buffer_(TlsEngine::kMaxRecord + 1024),  // a record and its header, MAC, padding
      output_buffer_(TlsEngine::kMaxRecord + 1024) {}

IoError TlsSession::Begin(Side side) {
  MutexLock lock(mutex_);
  FAIRSCHED_DCHECK(!active_[side], side == kReadSide
                                       ? "two concurrent reads on a TlsStream (ReadSome or "
                                         "Handshake): one reader and one writer at most"
                                       : "two concurrent writes on a TlsStream (WriteSome or "
                                         "Shutdown): one reader and one writer at most");
  active_[side] = true;
  return EndErrorLocked();
}

void TlsSession::End(Side side) {
  MutexLock lock(mutex_);
  active_[side] = false;
}

IoError TlsSession::EndErrorLocked() const {
  if (closed_) return IoError(IoErrorCode::kClosed);
  return broken_;
}

IoError TlsSession::end_error() const {
  MutexLock lock(mutex_);
  return EndErrorLocked();
}

TlsSession::Step TlsSession::Run(Operation operation, std::span<char> into,
                                 std::span<const char> data) {
  coro::Waker wake;
  Step step{Status::kFailed, 0, 0, 0};
  {
    MutexLock lock(mutex_);
    step.input_seen = input_generation_;
    if (!EndErrorLocked().ok()) return step;
    const TlsEngine::Outcome outcome = engine_.Run(operation, into, data);
    step.status = outcome.status;
    step.bytes = outcome.bytes;
    step.produced = outcome.produced;
    if (outcome.status == Status::kFailed) {
      broken_ = TlsError();
      wake = TakeParkedLocked(SideOf(operation) == kReadSide ? kWriteSide : kReadSide);
    }
  }
  if (wake) wake.Wakeup();
  return step;
}

void TlsSession::ParkLocked(Side side) { parked_[side] = coro::PrepareWait(); }

TlsSession::Turn TlsSession::AwaitInput(Side side, std::uint64_t input_seen) {
  MutexLock lock(mutex_);
  if (!EndErrorLocked().ok()) return Turn::kEnded;
  if (input_generation_ != input_seen) return Turn::kRetry;
  if (receiving_) {
    ParkLocked(side);  // the other side reads: it wakes us when it fed or gave up the role
    return Turn::kParked;
  }
  receiving_ = true;
  return Turn::kTransfer;
}

void TlsSession::Received(IoResult<std::size_t> received) {
  {
    MutexLock lock(mutex_);
    if (received.ok()) {
      engine_.PutInput(std::span<const char>(input_buffer_.data(), received.value()));
    } else if (received.error().code() == IoErrorCode::kEndOfStream) {
      engine_.EndInput();  // the next step fails (no close_notify), naming the cause
    }
    receiving_ = false;
    ++input_generation_;
  }
  WakeBoth();  // whoever is parked waits for input, or for this role: it looks again
}

TlsSession::Turn TlsSession::AwaitSend(Side side, bool drain, std::size_t produced) {
  // Not draining (a read), only a step's own output is sent: the write side's records, or
  // a key update it queued, are the write side's to send.
  if (!drain && produced == 0) return Turn::kDone;
  coro::Waker wake;
  Turn turn;
  {
    MutexLock lock(mutex_);
    if (closed_ || write_failed_) return Turn::kEnded;
    if (sending_) {
      if (!drain) return Turn::kDone;  // the sender sends what is queued before it lets go
      ParkLocked(side);
      return Turn::kParked;
    }
    const std::size_t queued = engine_.PendingOutput();
    if (queued == 0) return Turn::kDone;
    sending_ = true;
    sender_ = side;
    // Draining, the budget grows with what the engine queues meanwhile (NextChunkLocked).
    send_budget_ = drain ? SIZE_MAX : queued;
    turn = NextChunkLocked(&wake);
  }
  if (wake) wake.Wakeup();
  return turn;
}

TlsSession::Turn TlsSession::Sent(const IoError& written) {
  coro::Waker wake;
  Turn turn;
  {
    MutexLock lock(mutex_);
    if (written.ok()) {
      turn = NextChunkLocked(&wake);
    } else {
      // Part of a record may have reached the peer: nothing can be sent after it.
      write_failed_ = true;
      if (broken_.ok()) broken_ = written;
      sending_ = false;
      wake = TakeParkedLocked(sender_ == kReadSide ? kWriteSide : kReadSide);
      turn = Turn::kEnded;
    }
  }
  if (wake) wake.Wakeup();
  return turn;
}

TlsSession::Turn TlsSession::NextChunkLocked(coro::Waker* wake) {
  const std::size_t n =
      std::min({send_budget_, engine_.PendingOutput(), output_buffer_.size()});
  if (n == 0) {
    sending_ = false;
    // The other side may be parked for this role (or for output it left to us, now sent).
    *wake = TakeParkedLocked(sender_ == kReadSide ? kWriteSide : kReadSide);
    return Turn::kDone;
  }
  output_chunk_ = engine_.TakeOutput(std::span<char>(output_buffer_.data(), n));
  send_budget_ -= output_chunk_;
  return Turn::kTransfer;
}

IoError TlsSession::Unpark(Side side, coro::WakeReason why) {
  MutexLock lock(mutex_);
  parked_[side] = coro::Waker();
  if (closed_) return IoError(IoErrorCode::kClosed);
  switch (why) {
    case coro::WakeReason::kWakeup:
    case coro::WakeReason::kSignal:
      return IoError();
    case coro::WakeReason::kDeadline:
      return IoError(IoErrorCode::kTimeout);
    case coro::WakeReason::kCancelled:
      return IoError(IoErrorCode::kCancelled);
    case coro::WakeReason::kShutdown:
      return IoError(IoErrorCode::kShutdown);
  }
  return IoError(IoErrorCode::kCancelled);
}

void TlsSession::Break(const IoError& error) {
  {
    MutexLock lock(mutex_);
    if (broken_.ok()) broken_ = error;
  }
  WakeBoth();
}

void TlsSession::Close() {
  {
    MutexLock lock(mutex_);
    closed_ = true;
  }
  WakeBoth();
}

void TlsSession::WakeBoth() {
  coro::Waker wake[2];
  {
    MutexLock lock(mutex_);
    wake[0] = TakeParkedLocked(kReadSide);
    wake[1] = TakeParkedLocked(kWriteSide);
  }
  // Outside the mutex: a woken coroutine may run at once on another worker and lock it.
  for (const coro::Waker& waker : wake) {
    if (waker) waker.Wakeup();
  }
}

std::string TlsSession::Message() const {
  MutexLock lock(mutex_);
  return engine_.Message();
}

bool TlsSession::HandshakeDone() const {
  MutexLock lock(mutex_);
  return engine_.HandshakeDone();
}

std::string TlsSession::AlpnProtocol() const {
  MutexLock lock(mutex_);
  return engine_.AlpnProtocol();
}

bool TlsSession::RequestKeyUpdate() {
  MutexLock lock(mutex_);
  return EndErrorLocked().ok() && engine_.RequestKeyUpdate();
}

}  // namespace internal
}  // namespace fairsched
