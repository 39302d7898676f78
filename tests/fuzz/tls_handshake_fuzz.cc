// Fuzz target "tls_handshake": a server TlsStream (io/tls_stream.h) over a ScriptedStream
// (tests/io/scripted_stream.h)
// that carries a client's handshake bytes, in the chunks the input chooses. The server has
// a self-signed certificate (tests/io/test_certificates.h) and ALPN "fuzz/1". No input can
// complete a handshake (that would take the session's keys), so checked:
//   - the handshake fails, with a TLS error (kSystem/EPROTO) and a reason in ErrorMessage(),
//     also when the bytes end early (the transport ended without close_notify);
//   - afterwards the session is broken: ReadSome and WriteSome return the same error;
//   - what the server wrote back (its flight, an alert) stays within a few records.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <unistd.h>

#include "coro/lazy.h"
#include "io/tls_stream.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/io/scripted_stream.h"
#include "tests/io/test_certificates.h"

namespace fairsched::fuzz {
namespace {

using testing::ScriptedStream;

const TlsContext& ServerContext() {
  static const TlsContext* const context = [] {
    // One certificate per process (parallel fuzzing jobs run several).
    const testing::CertificateFiles files =
        testing::MakeSelfSigned("fuzz_tls_" + std::to_string(getpid()));
    auto* made = new TlsContext(TlsContext::Server(files.certificate, files.key));
    FuzzCheck(made->ok(), "tls_handshake: the server context could not be created");
    made->SetAlpnProtocols({"fuzz/1"});
    std::remove(files.certificate.c_str());
    std::remove(files.key.c_str());
    return made;
  }();
  return *context;
}

bool SameError(const IoError& a, const IoError& b) {
  return a.code() == b.code() && a.sys_errno() == b.sys_errno();
}

void FuzzTlsHandshake(std::string_view input) {
  FuzzInput script(input);
  std::vector<std::size_t> chunks = script.ReadSizes();
  const std::string_view client_bytes = script.Rest();
  auto tls = TlsStream<ScriptedStream>::Server(
      ServerContext(), ScriptedStream(std::string(client_bytes), std::move(chunks)));
  const IoError handshake = coro::RunSync(tls.Handshake(kTaskDeadlineInfinite));
  FuzzCheck(!handshake.ok(), "tls_handshake: a handshake completed with made-up bytes");
  FuzzCheck(IsTlsError(handshake), "tls_handshake: failed with another error than a TLS one");
  FuzzCheck(!tls.ErrorMessage().empty(), "tls_handshake: a TLS error without a reason");
  FuzzCheck(!tls.HandshakeDone(), "tls_handshake: failed, but HandshakeDone()");

  char buffer[64];
  IoResult<std::size_t> read = coro::RunSync(tls.ReadSome(buffer, kTaskDeadlineInfinite));
  FuzzCheck(!read.ok() && SameError(read.error(), handshake), "tls_handshake: a read after the failure");
  const std::string_view data = "after";
  IoResult<std::size_t> written =
      coro::RunSync(tls.WriteSome(std::span<const char>(data.data(), data.size()),
                                  kTaskDeadlineInfinite));
  FuzzCheck(!written.ok() && SameError(written.error(), handshake),
            "tls_handshake: a write after the failure");
  FuzzCheck(tls.stream().written.size() <= 4 * (16 * 1024 + 256),
            "tls_handshake: the server wrote more than a few records");
}

[[maybe_unused]] const bool kRegistered = RegisterFuzzTarget("tls_handshake", &FuzzTlsHandshake);

}  // namespace
}  // namespace fairsched::fuzz
