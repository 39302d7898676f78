// ChunkedStream: an in-memory ByteStream (io/byte_stream.h) for the fuzz targets. Reads hand
// out `data` in pieces whose sizes a script chooses (cycling through it; 1 byte and up),
// then end the stream; writes append to `written`. Every call completes without suspending,
// so coro::RunSync drives whatever runs on it. It also has TcpStream's Read/Write (all bytes
// or an error), for code written against a TcpStream's interface.
#ifndef FAIRSCHED_TESTS_FUZZ_CHUNKED_STREAM_H_
#define FAIRSCHED_TESTS_FUZZ_CHUNKED_STREAM_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coro/lazy.h"
#include "io/byte_stream.h"
#include "io/io_error.h"
#include "sched/task.h"
#include "tests/fuzz/fuzz_target.h"

namespace fairsched::fuzz {

class ChunkedStream {
 public:
  // `chunk_sizes`: the most bytes each read returns, in turn (cycling); empty: no limit.
  ChunkedStream(std::string_view data, std::vector<std::size_t> chunk_sizes)
      : data_(data), chunk_sizes_(std::move(chunk_sizes)) {}

  // A script from the input's front: a count byte (0-15 sizes), then one byte per size;
  // size byte b allows b + 1 bytes, or (b - 191)^2 for b >= 192 (large reads too). The
  // caller takes the stream's data from the input afterwards.
  static std::vector<std::size_t> ChunkSizesFrom(FuzzInput& input) {
    std::vector<std::size_t> sizes(input.Byte() % 16);
    for (std::size_t& size : sizes) {
      const std::size_t b = input.Byte();
      size = b < 192 ? b + 1 : (b - 191) * (b - 191);
    }
    return sizes;
  }

  coro::Lazy<IoResult<std::size_t>> ReadSome(std::span<char> into, TaskDeadline) {
    FuzzCheck(!into.empty(), "ReadSome into an empty buffer");
    if (closed) co_return IoError(IoErrorCode::kClosed);
    if (read_ == data_.size()) co_return IoError(IoErrorCode::kEndOfStream);
    std::size_t n = std::min(into.size(), data_.size() - read_);
    if (!chunk_sizes_.empty()) n = std::min(n, chunk_sizes_[reads_++ % chunk_sizes_.size()]);
    std::copy_n(data_.data() + read_, n, into.data());
    read_ += n;
    co_return n;
  }
  coro::Lazy<IoResult<std::size_t>> WriteSome(std::span<const char> data, TaskDeadline) {
    FuzzCheck(!data.empty(), "WriteSome of no bytes");
    if (closed) co_return IoError(IoErrorCode::kClosed);
    written.append(data.data(), data.size());
    co_return data.size();
  }
  void Close() { closed = true; }

  // TcpStream's names: Read is ReadSome; Write writes everything.
  coro::Lazy<IoResult<std::size_t>> Read(std::span<char> into, TaskDeadline deadline) {
    return ReadSome(into, deadline);
  }
  coro::Lazy<IoError> Write(std::span<const char> data, TaskDeadline) {
    if (closed) co_return IoError(IoErrorCode::kClosed);
    written.append(data.data(), data.size());
    co_return IoError();
  }

  std::size_t bytes_read() const { return read_; }

  std::string written;
  bool closed = false;

 private:
  std::string_view data_;
  std::vector<std::size_t> chunk_sizes_;
  std::size_t read_ = 0;
  std::size_t reads_ = 0;
};

static_assert(ByteStream<ChunkedStream>);

}  // namespace fairsched::fuzz

#endif  // FAIRSCHED_TESTS_FUZZ_CHUNKED_STREAM_H_
