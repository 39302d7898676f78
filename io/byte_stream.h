// ByteStream: the interface a protocol layer is written against, so that it runs over a TCP
// socket, a TLS session on top of one (memory BIOs), an in-memory fake in tests, or a
// buffered stream (io/buffered_stream.h), which is a ByteStream itself.
//
// Contract of a type S that models ByteStream (inside a coroutine spawned on the stream's
// scheduler, or driven by coro::RunSync for streams that never suspend):
//   - `co_await s.ReadSome(buffer, deadline)` -> IoResult<std::size_t>: reads at least one
//     byte and at most buffer.size() (returns how many), or fails: kEndOfStream when the
//     peer ended the stream (no data lost), kTimeout, kCancelled, kShutdown, kResetByPeer,
//     kSystem. An empty buffer is misuse.
//   - `co_await s.WriteSome(data, deadline)` -> IoResult<std::size_t>: writes at least one
//     byte of non-empty `data` and at most all of it (returns how many), or fails; after a
//     failure the stream is broken (what reached the peer is unknown): close it.
//   - `s.Close()`: gives the stream up; never while an operation is in progress.
//   - One reader and one writer coroutine may use a stream at the same time; two concurrent
//     reads (or writes) are misuse.
// Deadlines are absolute (coro::DeadlineAfter), kTaskDeadlineInfinite for none; errors are
// values (io/io_error.h's IoError), nothing throws.
//
// TcpStream (io/tcp.h) models it (ReadSome is Read, WriteSome one send).
#ifndef FAIRSCHED_IO_BYTE_STREAM_H_
#define FAIRSCHED_IO_BYTE_STREAM_H_

#include <concepts>
#include <cstddef>
#include <span>

#include "coro/lazy.h"
#include "io/io_error.h"
#include "sched/task.h"

namespace fairsched {

template <typename S>
concept ByteStream = requires(S& stream, std::span<char> into, std::span<const char> data,
                              TaskDeadline deadline) {
  { stream.ReadSome(into, deadline) } -> std::same_as<coro::Lazy<IoResult<std::size_t>>>;
  { stream.WriteSome(data, deadline) } -> std::same_as<coro::Lazy<IoResult<std::size_t>>>;
  { stream.Close() } -> std::same_as<void>;
};

// Writes all of `data` through WriteSome calls; the first failure ends it.
template <ByteStream Stream>
coro::Lazy<IoError> WriteAll(Stream& stream, std::span<const char> data, TaskDeadline deadline) {
  while (!data.empty()) {
    IoResult<std::size_t> written = co_await stream.WriteSome(data, deadline);
    if (!written.ok()) co_return written.error();
    data = data.subspan(written.value());
  }
  co_return IoError();
}

}  // namespace fairsched

#endif  // FAIRSCHED_IO_BYTE_STREAM_H_
