// BufferedStream: a read buffer and a write buffer over any ByteStream (io/byte_stream.h),
// so that a line-based or length-prefixed protocol is a few lines of user code:
//
//   BufferedStream in_out(std::move(stream));  // a TcpStream
//   IoResult<std::string_view> line = co_await in_out.ReadLine(1024, deadline);  // "SET k 5"
//   co_await in_out.ReadExactly(value, deadline);                               // 5 bytes
//   co_await in_out.Write("STORED\n", deadline);   // buffered: no syscall yet
//   co_await in_out.Flush(deadline);               // one write for every buffered answer
//
// Contract:
//   - Reads: ReadUntil(delimiter, max) returns the bytes before the next `delimiter` and
//     consumes both; ReadLine(max) is ReadUntil("\n") without a trailing '\r'. The view
//     points into the read buffer and stays valid until the next read call on this stream.
//     `max` bounds the line (delimiter not counted) and the memory: the buffer grows to at
//     most max + delimiter.size() bytes for it, never more. A line longer than `max` fails
//     with kSystem/EMSGSIZE (IsTooLong(error)); the stream cannot resynchronise after it
//     (where the line ends is unknown): reply and close. If the stream ends before the
//     delimiter, the result is kEndOfStream, and Buffered() holds the incomplete line
//     (empty: a clean end between lines). ReadExactly(out) fills `out` completely
//     (kEndOfStream if the stream ends first; the bytes read until then are consumed).
//     ReadSome returns buffered bytes first.
//   - Writes: Write appends to the write buffer and writes to the stream only when the
//     buffer is full (data larger than the buffer goes straight through, after what was
//     buffered). Flush writes everything buffered. Nothing is sent until Flush or a full
//     buffer. After a failed write or flush the stream is broken: close it.
//   - Close() closes the underlying stream and drops unflushed bytes (Flush first). It
//     touches neither buffer, so it may run on any thread while the reader and the writer
//     are inside calls, and concurrently with another Close or with stream().Close(), when
//     the underlying stream's Close allows that (TcpStream, UnixStream: any thread). Every
//     call that starts after it (also one that would be served from the read buffer, and
//     Write, which would only buffer) fails with kClosed; a call in progress ends with the
//     underlying stream's kClosed. Unflushed() is 0 from then on.
//   - BufferedStream is itself a ByteStream (ReadSome/WriteSome/Close), so layers stack.
//   - Concurrency as for the underlying stream: one reader and one writer coroutine may
//     use it at the same time (the two buffers are disjoint); not two readers or writers.
//   - Every read call spends one unit of the coroutine's cooperative budget (coro/budget.h),
//     so a peer that pipelines many lines cannot hold the worker while they are served
//     from the buffer: after a run of calls that did not suspend, one yields first.
//   - Deadlines are absolute and bound each call as a whole (every underlying operation of
//     the call gets the same deadline).
#ifndef FAIRSCHED_IO_BUFFERED_STREAM_H_
#define FAIRSCHED_IO_BUFFERED_STREAM_H_

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "coro/budget.h"
#include "coro/lazy.h"
#include "io/byte_stream.h"
#include "io/io_error.h"
#include "sched/task.h"
#include "sync/primitives.h"

namespace fairsched {

// The error of a ReadUntil/ReadLine whose line exceeds its `max`.
inline IoError LineTooLongError() { return IoError(IoErrorCode::kSystem, EMSGSIZE); }
inline bool IsTooLong(const IoError& error) {
  return error.code() == IoErrorCode::kSystem && error.sys_errno() == EMSGSIZE;
}

struct BufferedStreamOptions {
  std::size_t read_buffer = 8 * 1024;   // initial size; ReadUntil grows it up to its max
  std::size_t write_buffer = 8 * 1024;  // Write sends when this much is buffered
};

template <ByteStream Stream>
class BufferedStream {
 public:
  // The largest `max` of ReadUntil/ReadLine (1 GiB).
  static constexpr std::size_t kMaxLine = std::size_t{1} << 30;

  explicit BufferedStream(Stream stream, BufferedStreamOptions options = {})
      : stream_(std::move(stream)),
        read_(options.read_buffer),
        write_capacity_(options.write_buffer) {
    FAIRSCHED_CHECK(options.read_buffer > 0 && options.write_buffer > 0,
                    "BufferedStream buffers must not be empty");
    write_.reserve(write_capacity_);
  }
  BufferedStream(BufferedStream&&) = default;
  BufferedStream& operator=(BufferedStream&&) = default;

  // ---- reading ----
  coro::Lazy<IoResult<std::string_view>> ReadUntil(std::string_view delimiter, std::size_t max,
                                                   TaskDeadline deadline) {
    FAIRSCHED_DCHECK(!delimiter.empty(), "ReadUntil with an empty delimiter");
    FAIRSCHED_DCHECK(max <= kMaxLine, "ReadUntil: max is a memory bound; this one bounds nothing");
    if (IsClosed()) co_return IoError(IoErrorCode::kClosed);
    co_await coro::ConsumeBudget();  // a line served from the buffer never suspends
    std::size_t searched = 0;  // bytes after begin_ known not to start the delimiter
    while (true) {
      const std::string_view buffered = Buffered();
      const std::size_t at = buffered.find(delimiter, searched);
      if (at != std::string_view::npos) {
        if (at > max) co_return LineTooLongError();
        begin_ += at + delimiter.size();
        co_return buffered.substr(0, at);
      }
      // With max + delimiter.size() bytes and no delimiter, it could only end beyond max.
      if (buffered.size() >= max + delimiter.size()) co_return LineTooLongError();
      searched = buffered.size() >= delimiter.size() ? buffered.size() - delimiter.size() + 1 : 0;
      const IoError filled = co_await Fill(max + delimiter.size(), deadline);
      if (!filled.ok()) co_return filled;
    }
  }

  coro::Lazy<IoResult<std::string_view>> ReadLine(std::size_t max, TaskDeadline deadline) {
    // One more byte for the '\r' that a "\r\n" line carries before the delimiter.
    IoResult<std::string_view> line = co_await ReadUntil("\n", max + 1, deadline);
    if (!line.ok()) co_return line;
    std::string_view text = line.value();
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.size() > max) co_return LineTooLongError();
    co_return text;
  }

  coro::Lazy<IoError> ReadExactly(std::span<char> out, TaskDeadline deadline) {
    if (IsClosed()) co_return IoError(IoErrorCode::kClosed);
    co_await coro::ConsumeBudget();  // as in ReadUntil
    while (!out.empty()) {
      if (begin_ == end_) {
        if (out.size() >= read_.size()) {  // large: straight into `out`, no copy
          IoResult<std::size_t> n = co_await stream_.ReadSome(out, deadline);
          if (!n.ok()) co_return n.error();
          out = out.subspan(n.value());
          continue;
        }
        const IoError filled = co_await Fill(read_.size(), deadline);
        if (!filled.ok()) co_return filled;
      }
      out = out.subspan(TakeBuffered(out));
    }
    co_return IoError();
  }

  coro::Lazy<IoResult<std::size_t>> ReadSome(std::span<char> into, TaskDeadline deadline) {
    FAIRSCHED_DCHECK(!into.empty(), "ReadSome into an empty buffer");
    if (IsClosed()) co_return IoError(IoErrorCode::kClosed);
    co_await coro::ConsumeBudget();  // as in ReadUntil
    if (begin_ == end_) {
      if (into.size() >= read_.size()) co_return co_await stream_.ReadSome(into, deadline);
      const IoError filled = co_await Fill(read_.size(), deadline);
      if (!filled.ok()) co_return filled;
    }
    co_return TakeBuffered(into);
  }

  // Received bytes not consumed yet.
  std::string_view Buffered() const {
    return std::string_view(read_.data() + begin_, end_ - begin_);
  }

  // ---- writing ----
  coro::Lazy<IoError> Write(std::string_view data, TaskDeadline deadline) {
    if (IsClosed()) co_return DropWrites();
    if (write_.size() + data.size() > write_capacity_) {
      const IoError flushed = co_await Flush(deadline);
      if (!flushed.ok()) co_return flushed;
      if (data.size() >= write_capacity_) co_return co_await WriteAll(stream_, data, deadline);
    }
    write_.insert(write_.end(), data.begin(), data.end());
    co_return IoError();
  }

  coro::Lazy<IoResult<std::size_t>> WriteSome(std::span<const char> data, TaskDeadline deadline) {
    const IoError written = co_await Write(std::string_view(data.data(), data.size()), deadline);
    if (!written.ok()) co_return written;
    co_return data.size();
  }

  coro::Lazy<IoError> Flush(TaskDeadline deadline) {
    if (IsClosed()) co_return DropWrites();
    const IoError written = co_await WriteAll(stream_, write_, deadline);
    write_.clear();  // sent, or the stream is broken (see the contract)
    co_return written;
  }

  // Bytes written but not flushed yet.
  std::size_t Unflushed() const { return IsClosed() ? 0 : write_.size(); }

  // Any thread; see the contract.
  void Close() {
    closed_.value.store(true, std::memory_order_relaxed);  // (see closed_)
    stream_.Close();
  }

  Stream& stream() { return stream_; }

 private:
  // Reads once from the stream into the read buffer, after making room: moves the
  // unconsumed bytes to the front, and grows the buffer if they fill it, to at most `limit`
  // bytes (or keeps its size, if it is larger already).
  coro::Lazy<IoError> Fill(std::size_t limit, TaskDeadline deadline) {
    if (begin_ > 0) {
      std::memmove(read_.data(), read_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == read_.size()) {
      FAIRSCHED_DCHECK(limit > read_.size(), "BufferedStream: full read buffer at its limit");
      read_.resize(std::min(limit, 2 * read_.size()));
    }
    IoResult<std::size_t> n = co_await stream_.ReadSome(
        std::span<char>(read_.data() + end_, read_.size() - end_), deadline);
    if (!n.ok()) co_return n.error();
    end_ += n.value();
    co_return IoError();
  }

  bool IsClosed() const { return closed_.value.load(std::memory_order_relaxed); }
  // The writer, on a closed stream: the buffered bytes are dropped; kClosed.
  IoError DropWrites() {
    write_.clear();
    return IoError(IoErrorCode::kClosed);
  }

  // Copies buffered bytes into `into` (as many as fit), consumes them, returns how many.
  std::size_t TakeBuffered(std::span<char> into) {
    const std::size_t n = std::min(into.size(), end_ - begin_);
    std::memcpy(into.data(), read_.data() + begin_, n);
    begin_ += n;
    return n;
  }

  Stream stream_;
  std::vector<char> read_;
  std::size_t begin_ = 0;  // read_[begin_, end_): received, not consumed
  std::size_t end_ = 0;
  std::vector<char> write_;  // buffered, not yet written
  std::size_t write_capacity_;
  // Close was called. Relaxed everywhere: the flag publishes no other data (Close touches
  // no buffer; the underlying stream orders its own state), and a call that misses a Close
  // that just happened fails with the underlying stream's kClosed instead.
  struct ClosedFlag {
    ClosedFlag() = default;
    // Moves copy the value: a move is never concurrent with a Close of either object.
    ClosedFlag(ClosedFlag&& other) noexcept
        : value(other.value.load(std::memory_order_relaxed)) {}
    ClosedFlag& operator=(ClosedFlag&& other) noexcept {
      value.store(other.value.load(std::memory_order_relaxed), std::memory_order_relaxed);
      return *this;
    }
    Atomic<bool> value{false};
  } closed_;
};

}  // namespace fairsched

#endif  // FAIRSCHED_IO_BUFFERED_STREAM_H_
