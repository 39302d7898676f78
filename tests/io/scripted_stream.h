// ScriptedStream: an in-memory ByteStream (io/byte_stream.h) for tests and fuzz targets,
// whose read and write sizes a script chooses. Reads hand out `input` in order, each at most
// the next entry of `read_sizes` bytes (cycling through them; empty: no limit), then end the
// stream. Writes append to `written`, at most `max_write` bytes per call, or fail with
// `write_error` if it is set. After Close every call fails with kClosed. Every call
// completes without suspending, so coro::RunSync drives whatever runs on it. It also has
// TcpStream's Read/Write names (Write: all bytes or an error), for code written against a
// TcpStream's interface. Misuse (an empty read buffer, a write of no bytes) aborts with a
// message, in every build: the caller under test broke the ByteStream contract.
#ifndef FAIRSCHED_TESTS_IO_SCRIPTED_STREAM_H_
#define FAIRSCHED_TESTS_IO_SCRIPTED_STREAM_H_

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "coro/lazy.h"
#include "io/byte_stream.h"
#include "io/io_error.h"
#include "sched/task.h"

namespace fairsched::testing {

class ScriptedStream {
 public:
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

  // `read_sizes`: the most bytes each read returns, in turn (cycling); empty: no limit.
  explicit ScriptedStream(std::string input, std::vector<std::size_t> read_sizes = {},
                          std::size_t max_write = kUnlimited)
      : input_(std::move(input)), read_sizes_(std::move(read_sizes)), max_write_(max_write) {}

  coro::Lazy<IoResult<std::size_t>> ReadSome(std::span<char> into, TaskDeadline) {
    FAIRSCHED_CHECK(!into.empty(), "ScriptedStream: ReadSome into an empty buffer");
    if (closed) co_return IoError(IoErrorCode::kClosed);
    if (read_ == input_.size()) co_return IoError(IoErrorCode::kEndOfStream);
    std::size_t n = std::min(into.size(), input_.size() - read_);
    if (!read_sizes_.empty()) n = std::min(n, read_sizes_[reads_++ % read_sizes_.size()]);
    std::copy_n(input_.data() + read_, n, into.data());
    read_ += n;
    co_return n;
  }
  coro::Lazy<IoResult<std::size_t>> WriteSome(std::span<const char> data, TaskDeadline) {
    FAIRSCHED_CHECK(!data.empty(), "ScriptedStream: WriteSome of no bytes");
    if (closed) co_return IoError(IoErrorCode::kClosed);
    if (!write_error.ok()) co_return write_error;
    const std::size_t n = std::min(data.size(), max_write_);
    written.append(data.data(), n);
    ++writes;
    co_return n;
  }
  void Close() { closed = true; }

  // TcpStream's names: Read is ReadSome; Write writes everything (ignoring max_write).
  coro::Lazy<IoResult<std::size_t>> Read(std::span<char> into, TaskDeadline deadline) {
    return ReadSome(into, deadline);
  }
  coro::Lazy<IoError> Write(std::span<const char> data, TaskDeadline) {
    if (closed) co_return IoError(IoErrorCode::kClosed);
    if (!write_error.ok()) co_return write_error;
    written.append(data.data(), data.size());
    ++writes;
    co_return IoError();
  }

  std::size_t bytes_read() const { return read_; }

  std::string written;
  int writes = 0;  // successful WriteSome/Write calls
  bool closed = false;
  IoError write_error;  // set: every write fails with it

 private:
  std::string input_;
  std::vector<std::size_t> read_sizes_;
  std::size_t max_write_;
  std::size_t read_ = 0;
  std::size_t reads_ = 0;
};

static_assert(ByteStream<ScriptedStream>);

}  // namespace fairsched::testing

#endif  // FAIRSCHED_TESTS_IO_SCRIPTED_STREAM_H_
