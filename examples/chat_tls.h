// The chat room over TLS (Linux: OpenSSL): a ChatServer session that runs the TLS handshake
// on each connection and then serves the room over the TlsStream, whose reader and writer
// coroutines share it (TlsStream allows one reader and one writer at once). The socket
// settings (ChatRoom::PrepareTcp) go on the TCP stream underneath, so TLS records in either
// direction refresh the idle timeout.
#ifndef FAIRSCHED_EXAMPLES_CHAT_TLS_H_
#define FAIRSCHED_EXAMPLES_CHAT_TLS_H_

#include <chrono>
#include <utility>

#include "examples/chat_server.h"
#include "io/tls_stream.h"

namespace fairsched {

// One connection: handshake, then the room. (A coroutine of its own, not a coroutine
// lambda: its parameters live in its frame, whatever happens to the caller's closure.)
template <typename Scheduler>
coro::Lazy<void> ServeChatOverTls(ChatRoom& room, TcpStream<Scheduler> stream,
                                  const TlsContext* context,
                                  std::chrono::nanoseconds handshake_timeout) {
  room.PrepareTcp(stream);
  auto tls = TlsStream<TcpStream<Scheduler>>::Server(*context, std::move(stream));
  const IoError handshake = co_await tls.Handshake(coro::DeadlineAfter(handshake_timeout));
  if (!handshake.ok()) co_return;  // the alert went out; `tls` closes the connection
  co_await room.Serve(std::move(tls));
}

// The session for ChatServer's constructor. `context` is a server TlsContext that was
// created (checked) and outlives the server; a handshake that fails or takes longer than
// `handshake_timeout` ends the connection (the client gets the alert OpenSSL chose).
template <typename Scheduler>
typename ChatServer<Scheduler>::Session TlsChatSession(
    const TlsContext* context,
    std::chrono::nanoseconds handshake_timeout = std::chrono::seconds(10)) {
  FAIRSCHED_CHECK(context != nullptr && context->ok() && context->is_server(),
                  "TlsChatSession needs a server TlsContext that was created");
  return [=](ChatRoom& room, TcpStream<Scheduler> stream) {
    return ServeChatOverTls(room, std::move(stream), context, handshake_timeout);
  };
}

}  // namespace fairsched

#endif  // FAIRSCHED_EXAMPLES_CHAT_TLS_H_
