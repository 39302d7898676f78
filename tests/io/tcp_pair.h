// A connected TCP pair on loopback for the coroutine socket tests (io/tcp.h): the listener,
// the client end, and the accepted end with the peer address AcceptWithPeer reported.
#ifndef FAIRSCHED_TESTS_IO_TCP_PAIR_H_
#define FAIRSCHED_TESTS_IO_TCP_PAIR_H_

#include <utility>

#include "coro/task.h"
#include "io/tcp.h"

namespace fairsched::testing {

template <typename Sched>
struct TcpPair {
  TcpListener<Sched> listener;
  TcpStream<Sched> client;
  AcceptedConnection<Sched> server;  // .stream, .peer
};

// Listens on 127.0.0.1 (a free port), connects and accepts; every wait ends by `deadline`.
// The kernel completes the handshake from the backlog, so connect comes first.
template <typename Sched>
coro::Task<IoResult<TcpPair<Sched>>> ConnectTcpPair(Sched* scheduler, TaskDeadline deadline) {
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(*scheduler, SocketAddress::Parse("127.0.0.1:0").value());
  if (!listener.ok()) co_return listener.error();
  IoResult<SocketAddress> bound = listener.value().LocalAddress();
  if (!bound.ok()) co_return bound.error();
  IoResult<TcpStream<Sched>> client =
      co_await TcpStream<Sched>::Connect(*scheduler, bound.value(), deadline);
  if (!client.ok()) co_return client.error();
  IoResult<AcceptedConnection<Sched>> server = co_await listener.value().AcceptWithPeer(deadline);
  if (!server.ok()) co_return server.error();
  co_return TcpPair<Sched>{std::move(listener).value(), std::move(client).value(),
                           std::move(server).value()};
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_TCP_PAIR_H_
