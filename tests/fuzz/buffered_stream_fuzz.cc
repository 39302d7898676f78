// Fuzz target "buffered_stream": BufferedStream (io/buffered_stream.h) over a
// ScriptedStream (tests/io/scripted_stream.h).
// The input chooses the read buffer's size, the chunk sizes the stream hands out, a
// sequence of up to 31 read calls (ReadUntil with one of four delimiters, ReadLine,
// ReadExactly, ReadSome, each with a bound or size) and the bytes. Each result is checked
// against the bytes themselves, tracking how many the calls consumed:
//   - a line is exactly the bytes up to the first delimiter (so it never contains one), at
//     most `max` long, and consumes itself and the delimiter; ReadLine drops one '\r';
//   - "too long" only when the line (or, without a delimiter, the buffered bytes) exceeds
//     `max`; end of stream only when no delimiter follows, with Buffered() holding the rest;
//   - ReadExactly gives exactly the next N bytes, or ends the stream short of N;
//   - ReadSome gives 1..N of the next bytes; no other error ever comes from this stream.
#include <string>
#include <string_view>

#include "coro/lazy.h"
#include "io/buffered_stream.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/io/scripted_stream.h"

namespace fairsched::fuzz {
namespace {

using testing::ScriptedStream;

constexpr std::string_view kDelimiters[] = {"\n", "\r\n", "--", "END"};

// The checks of one session; `consumed` is how far the reads got into `data`.
class Session {
 public:
  Session(std::string_view data, BufferedStream<ScriptedStream>& stream)
      : data_(data), stream_(stream) {}

  // Runs one read call; false once the stream cannot go on (an error ended it).
  bool Step(int kind, std::size_t param) {
    switch (kind) {
      case 0:
        return Until(kDelimiters[param % 4], param / 4);
      case 1:
        return Line(param);
      case 2:
        return Exactly(param);
      default:
        return Some(param + 1);
    }
  }

 private:
  std::string_view Rest() const { return data_.substr(consumed_); }

  bool Until(std::string_view delimiter, std::size_t max) {
    IoResult<std::string_view> line =
        coro::RunSync(stream_.ReadUntil(delimiter, max, kTaskDeadlineInfinite));
    const std::size_t at = Rest().find(delimiter);
    if (line.ok()) {
      FuzzCheck(at == line.value().size() && at <= max, "ReadUntil: not the next line");
      FuzzCheck(Rest().substr(0, at) == line.value(), "ReadUntil: wrong bytes");
      consumed_ += at + delimiter.size();
      return true;
    }
    if (IsTooLong(line.error())) {
      FuzzCheck(at == std::string_view::npos ? Rest().size() >= max + delimiter.size() : at > max,
                "ReadUntil: too long, but the line fits");
      return false;
    }
    FuzzCheck(line.error().code() == IoErrorCode::kEndOfStream, "ReadUntil: unexpected error");
    FuzzCheck(at == std::string_view::npos, "ReadUntil: end of stream before a delimiter");
    FuzzCheck(stream_.Buffered() == Rest(), "ReadUntil: Buffered() is not the partial line");
    return false;
  }

  bool Line(std::size_t max) {
    IoResult<std::string_view> line =
        coro::RunSync(stream_.ReadLine(max, kTaskDeadlineInfinite));
    const std::size_t at = Rest().find('\n');
    std::string_view expected = Rest().substr(0, at);
    if (at != std::string_view::npos && !expected.empty() && expected.back() == '\r') {
      expected.remove_suffix(1);
    }
    if (line.ok()) {
      FuzzCheck(at != std::string_view::npos && line.value() == expected,
                "ReadLine: not the next line");
      FuzzCheck(line.value().size() <= max, "ReadLine: longer than max");
      FuzzCheck(line.value().find('\n') == std::string_view::npos, "ReadLine: holds a newline");
      consumed_ += at + 1;
      return true;
    }
    if (IsTooLong(line.error())) {
      FuzzCheck(at == std::string_view::npos ? Rest().size() >= max + 2 : expected.size() > max,
                "ReadLine: too long, but the line fits");
      return false;
    }
    FuzzCheck(line.error().code() == IoErrorCode::kEndOfStream, "ReadLine: unexpected error");
    FuzzCheck(at == std::string_view::npos, "ReadLine: end of stream before the newline");
    return false;
  }

  bool Exactly(std::size_t n) {
    std::string out(n, '\0');
    const IoError read = coro::RunSync(stream_.ReadExactly(out, kTaskDeadlineInfinite));
    if (read.ok()) {
      FuzzCheck(Rest().substr(0, n) == out && Rest().size() >= n, "ReadExactly: wrong bytes");
      consumed_ += n;
      return true;
    }
    FuzzCheck(read.code() == IoErrorCode::kEndOfStream && Rest().size() < n,
              "ReadExactly: failed with enough bytes left");
    return false;
  }

  bool Some(std::size_t n) {
    std::string out(n, '\0');
    IoResult<std::size_t> read = coro::RunSync(stream_.ReadSome(out, kTaskDeadlineInfinite));
    if (read.ok()) {
      const std::size_t k = read.value();
      FuzzCheck(k >= 1 && k <= n, "ReadSome: count out of range");
      FuzzCheck(Rest().substr(0, k) == std::string_view(out).substr(0, k),
                "ReadSome: wrong bytes");
      consumed_ += k;
      return true;
    }
    FuzzCheck(read.error().code() == IoErrorCode::kEndOfStream && Rest().empty(),
              "ReadSome: failed with bytes left");
    return false;
  }

  std::string_view data_;
  BufferedStream<ScriptedStream>& stream_;
  std::size_t consumed_ = 0;
};

void FuzzBufferedStream(std::string_view input) {
  FuzzInput script(input);
  const std::size_t read_buffer = std::size_t{script.Byte()} % 64 + 1;
  std::vector<std::size_t> chunks = script.ReadSizes();
  const int calls = script.Byte() % 32;
  std::vector<std::pair<int, std::size_t>> steps;
  for (int i = 0; i < calls; ++i) {
    const int kind = script.Byte() % 4;
    steps.emplace_back(kind, script.Byte());
  }
  const std::string_view data = script.Rest();
  BufferedStream<ScriptedStream> stream(ScriptedStream(std::string(data), std::move(chunks)),
                                        BufferedStreamOptions{.read_buffer = read_buffer});
  Session session(data, stream);
  for (const auto& [kind, param] : steps) {
    if (!session.Step(kind, param)) break;
  }
}

[[maybe_unused]] const bool kRegistered = RegisterFuzzTarget("buffered_stream", &FuzzBufferedStream);

}  // namespace
}  // namespace fairsched::fuzz
