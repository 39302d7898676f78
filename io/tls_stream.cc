// The OpenSSL side of io/tls_stream.h: TlsContext (an SSL_CTX) and TlsEngine (an SSL object
// between two memory BIOs), and the error messages built from OpenSSL's error queue.
#include "io/tls_stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

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
    *error = configure(context);
  }
  if (!error->empty()) {
    SSL_CTX_free(context);
    return nullptr;
  }
  return context;
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
  if (!message_.empty()) return {Status::kFailed, 0};
  SSL* ssl = ssl_->ssl;
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
      if (!established_) return {Status::kDone, 0};
      // 0: our close_notify is queued, the peer's has not come (we do not wait for it).
      result = SSL_shutdown(ssl) >= 0 ? 1 : -1;
      break;
  }
  established_ = established_ || SSL_is_init_finished(ssl) == 1;
  if (result > 0)
    return {Status::kDone,
            operation == Operation::kShutdown ? 0 : static_cast<std::size_t>(result)};
  switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ:
      if (!input_ended_) return {Status::kWantInput, 0};
      Fail(established_ ? "the peer ended the connection without close_notify"
                        : "the peer ended the connection during the handshake");
      return {Status::kFailed, 0};
    case SSL_ERROR_ZERO_RETURN:
      return {Status::kEnd, 0};
    default: {
      const long verify = SSL_get_verify_result(ssl);
      std::string what = established_ ? "TLS error" : "TLS handshake failed";
      if (verify != X509_V_OK) {
        what += std::string(" (certificate: ") + X509_verify_cert_error_string(verify) + ")";
      }
      Fail(what);
      return {Status::kFailed, 0};
    }
  }
}

void TlsEngine::Fail(std::string_view what) { message_ = Failure(what); }

std::size_t TlsEngine::TakeOutput(std::span<char> into) {
  const int n = BIO_read(ssl_->output, into.data(),
                         static_cast<int>(std::min<std::size_t>(into.size(), INT_MAX)));
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

bool TlsEngine::HasOutput() const { return BIO_ctrl_pending(ssl_->output) > 0; }

void TlsEngine::PutInput(std::span<const char> data) {
  // A memory BIO grows as needed; a write to it fails only when memory runs out.
  const int n = BIO_write(ssl_->input, data.data(), static_cast<int>(data.size()));
  FAIRSCHED_CHECK(n == static_cast<int>(data.size()), "TlsEngine: out of memory for input");
}

bool TlsEngine::HandshakeDone() const { return established_; }

}  // namespace internal
}  // namespace fairsched
