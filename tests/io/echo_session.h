// A session handler for the io::TcpServer tests: echoes whatever arrives until the stream
// ends or fails (each step bounded by 30 s), then closes gracefully.
#ifndef FAIRSCHED_TESTS_IO_ECHO_SESSION_H_
#define FAIRSCHED_TESTS_IO_ECHO_SESSION_H_

#include <chrono>
#include <cstddef>
#include <span>

#include "coro/lazy.h"
#include "coro/runtime.h"
#include "io/tcp_server.h"

namespace fairsched::testing {

template <typename Sched>
coro::Lazy<void> EchoSession(TcpStream<Sched> stream) {
  char buffer[256];
  while (true) {
    IoResult<std::size_t> n =
        co_await stream.Read(buffer, coro::DeadlineAfter(std::chrono::seconds(30)));
    if (!n.ok()) break;
    const IoError written = co_await stream.Write(std::span<const char>(buffer, n.value()),
                                                  coro::DeadlineAfter(std::chrono::seconds(30)));
    if (!written.ok()) break;
  }
  CloseGracefully(stream);
}

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_ECHO_SESSION_H_
