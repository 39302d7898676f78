// BufferedStream (io/buffered_stream.h) over an in-memory ByteStream that hands out its
// input in scripted pieces (down to one byte per read) and accepts at most a few bytes per
// write: delimiters split across reads, lines at and over their bound (and the memory the
// bound allows), the stream ending mid-line, ReadExactly across the buffer, buffered writes
// and Flush with partial writes. Those run synchronously (coro::RunSync). Then the same
// reader over real TcpStreams (a ByteStream themselves) on every backend of the platform
// (epoll and io_uring; IOCP under Wine), against a client that splits its bytes across
// packets.
#include "io/buffered_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "coro/runtime.h"
#include "coro/lazy.h"
#include "io/byte_stream.h"
#include "io/tcp.h"
#include "tests/io/io_test_util.h"
#include "tests/io/scripted_stream.h"

namespace fairsched {
namespace {

using std::chrono::seconds;

using testing::ScriptedStream;

static_assert(ByteStream<BufferedStream<ScriptedStream>>);  // layers stack
// (TcpStream over each backend: the BufferedTcpTest suite below instantiates it.)

using Buffered = BufferedStream<ScriptedStream>;

// ReadLine results until the first error, each as "line", then the error's code name.
coro::Lazy<std::vector<std::string>> AllLines(Buffered* in, std::size_t max) {
  std::vector<std::string> lines;
  while (true) {
    IoResult<std::string_view> line = co_await in->ReadLine(max, kTaskDeadlineInfinite);
    if (!line.ok()) {
      lines.push_back(IsTooLong(line.error()) ? "<too long>" : ToString(line.error().code()));
      co_return lines;
    }
    lines.emplace_back(line.value());
  }
}

const std::string kEnd = ToString(IoErrorCode::kEndOfStream);

TEST(BufferedStreamTest, LinesArriveOneByteAtATime) {
  Buffered in(ScriptedStream("GET a\r\nSET b 1\n\nlast\r\n", {1}));
  EXPECT_EQ(coro::RunSync(AllLines(&in, 100)),
            (std::vector<std::string>{"GET a", "SET b 1", "", "last", kEnd}));
  EXPECT_TRUE(in.Buffered().empty()) << "a clean end between lines";
}

TEST(BufferedStreamTest, DelimiterSplitAcrossReads) {
  for (std::size_t piece : {1, 2, 3, 5, 7}) {
    SCOPED_TRACE(piece);
    Buffered in(ScriptedStream("HEAD\r\n\r\nBODY\r\n\r\n", {piece}));
    IoResult<std::string_view> head =
        coro::RunSync(in.ReadUntil("\r\n\r\n", 64, kTaskDeadlineInfinite));
    ASSERT_TRUE(head.ok()) << head.error().Message();
    EXPECT_EQ(head.value(), "HEAD");
    IoResult<std::string_view> body =
        coro::RunSync(in.ReadUntil("\r\n\r\n", 64, kTaskDeadlineInfinite));
    ASSERT_TRUE(body.ok()) << body.error().Message();
    EXPECT_EQ(body.value(), "BODY");
  }
}

TEST(BufferedStreamTest, LineAtTheLimitPassesOneByteOverFails) {
  const std::string ten(10, 'x');
  Buffered exact(ScriptedStream(ten + "\r\n" + ten + "\n", {3}));
  EXPECT_EQ(coro::RunSync(AllLines(&exact, 10)), (std::vector<std::string>{ten, ten, kEnd}));
  Buffered over(ScriptedStream(ten + "y\r\n", {3}));
  EXPECT_EQ(coro::RunSync(AllLines(&over, 10)), (std::vector<std::string>{"<too long>"}));
  Buffered over_no_cr(ScriptedStream(ten + "y\n"));
  EXPECT_EQ(coro::RunSync(AllLines(&over_no_cr, 10)), (std::vector<std::string>{"<too long>"}));
}

TEST(BufferedStreamTest, AnEndlessLineReadsNoMoreThanItsBound) {
  // 1 MiB without a newline; a small initial buffer that ReadUntil may grow up to max + 1.
  Buffered in(ScriptedStream(std::string(1 << 20, 'a')), {.read_buffer = 16});
  IoResult<std::string_view> line = coro::RunSync(in.ReadUntil("\n", 1000, kTaskDeadlineInfinite));
  ASSERT_FALSE(line.ok());
  EXPECT_TRUE(IsTooLong(line.error())) << line.error().Message();
  EXPECT_LE(in.stream().bytes_read(), 1001u) << "the buffer grew beyond the line's bound";
  EXPECT_NE(line.error().Message().find("too long"), std::string::npos) << line.error().Message();
}

TEST(BufferedStreamTest, EndOfStreamMidLineKeepsThePartialLine) {
  Buffered in(ScriptedStream("ok\npartial", {4}));
  EXPECT_EQ(coro::RunSync(AllLines(&in, 100)), (std::vector<std::string>{"ok", kEnd}));
  EXPECT_EQ(in.Buffered(), "partial");
}

coro::Lazy<IoError> ReadInto(Buffered* in, std::string* out) {
  co_return co_await in->ReadExactly(*out, kTaskDeadlineInfinite);
}

TEST(BufferedStreamTest, ReadExactlyAcrossTheBufferAndBeyondIt) {
  std::string payload(20000, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  Buffered in(ScriptedStream("SET k 20000\n" + payload + "tail", {7}), {.read_buffer = 16});
  IoResult<std::string_view> command = coro::RunSync(in.ReadLine(64, kTaskDeadlineInfinite));
  ASSERT_TRUE(command.ok());
  EXPECT_EQ(command.value(), "SET k 20000");
  std::string value(payload.size(), '?');
  const IoError read = coro::RunSync(ReadInto(&in, &value));
  ASSERT_TRUE(read.ok()) << read.Message();
  EXPECT_TRUE(value == payload);
  std::string more(10, '?');  // only "tail" is left
  EXPECT_EQ(coro::RunSync(ReadInto(&in, &more)).code(), IoErrorCode::kEndOfStream);
}

coro::Lazy<IoError> WriteEach(Buffered* out, std::vector<std::string> pieces, bool flush) {
  for (const std::string& piece : pieces) {
    IoError written = co_await out->Write(piece, kTaskDeadlineInfinite);
    if (!written.ok()) co_return written;
  }
  if (!flush) co_return IoError();
  co_return co_await out->Flush(kTaskDeadlineInfinite);
}

TEST(BufferedStreamTest, WritesWaitForFlushThenGoOutWhole) {
  Buffered out(ScriptedStream("", {}, /*max_write=*/3));
  ASSERT_TRUE(coro::RunSync(WriteEach(&out, {"STORED\n", "VALUE 1\n", "x\n"}, false)).ok());
  EXPECT_EQ(out.stream().writes, 0) << "nothing is sent before Flush or a full buffer";
  EXPECT_EQ(out.Unflushed(), 17u);
  ASSERT_TRUE(coro::RunSync(WriteEach(&out, {}, true)).ok());
  EXPECT_EQ(out.stream().written, "STORED\nVALUE 1\nx\n");  // partial writes of 3 bytes
  EXPECT_EQ(out.stream().writes, 6);
  EXPECT_EQ(out.Unflushed(), 0u);
}

TEST(BufferedStreamTest, LargeWritesGoStraightThroughInOrder) {
  Buffered out(ScriptedStream(""), {.write_buffer = 8});
  const std::string big(100, 'B');
  ASSERT_TRUE(coro::RunSync(WriteEach(&out, {"abc", big, "de", "fghijkl"}, false)).ok());
  // "abc" flushed before the big piece, which went out directly; "de" fitted, "fghijkl"
  // did not: "de" flushed, "fghijkl" buffered.
  EXPECT_EQ(out.stream().written, "abc" + big + "de");
  EXPECT_EQ(out.Unflushed(), 7u);
}

TEST(BufferedStreamTest, AFailedFlushReportsTheError) {
  Buffered out(ScriptedStream(""));
  out.stream().write_error = IoError(IoErrorCode::kResetByPeer);
  const IoError result = coro::RunSync(WriteEach(&out, {"answer\n"}, true));
  EXPECT_EQ(result.code(), IoErrorCode::kResetByPeer);
  out.Close();
  EXPECT_TRUE(out.stream().closed);
}

#ifndef NDEBUG
TEST(BufferedStreamDeathTest, MisuseIsReportedInDebugBuilds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Buffered in(ScriptedStream("x\n"));
  EXPECT_DEATH((void)coro::RunSync(in.ReadUntil("", 10, kTaskDeadlineInfinite)), "empty delimiter");
  EXPECT_DEATH((void)coro::RunSync(in.ReadLine(std::size_t{1} << 40, kTaskDeadlineInfinite)),
               "bounds nothing");
}
#endif

// ---- over real sockets, both backends ----

// The server under test on `scheduler_`; the client on `peers_`.
template <typename Backend>
class BufferedTcpTest : public ::testing::Test {
 protected:
  using Sched = testing::IoTestScheduler<Backend>;
  BufferedTcpTest() {
    scheduler_.Start(2);
    peers_.Start(1);
  }
  Sched peers_;
  Sched scheduler_;
};

TYPED_TEST_SUITE(BufferedTcpTest, testing::IoBackends);

template <typename Sched>
coro::Lazy<IoResult<TcpStream<Sched>>> ConnectTo(Sched* scheduler, SocketAddress address) {
  co_return co_await TcpStream<Sched>::Connect(*scheduler, address,
                                               coro::DeadlineAfter(seconds(10)));
}

template <typename Sched>
coro::Lazy<IoError> SendPiece(TcpStream<Sched>* stream, std::string piece) {
  co_return co_await stream->Write(piece, coro::DeadlineAfter(seconds(10)));
}

template <typename Sched>
coro::Lazy<std::string> ReceiveBytes(TcpStream<Sched>* stream, std::size_t size) {
  std::string bytes(size, '\0');
  IoError read = co_await stream->ReadExactly(bytes, coro::DeadlineAfter(seconds(10)));
  co_return read.ok() ? bytes : "read failed: " + read.Message();
}

// Accepts one connection; reads two lines, a 4-digit length line and that many bytes,
// answers "<line1>|<line2>|<bytes>\n" with one Flush; then reads one more line with a
// bound of 16 and returns how that ended.
template <typename Sched>
coro::Lazy<IoError> ServeOne(TcpListener<Sched> listener) {
  IoResult<TcpStream<Sched>> accepted = co_await listener.Accept(coro::DeadlineAfter(seconds(10)));
  if (!accepted.ok()) co_return accepted.error();
  BufferedStream in_out(std::move(accepted).value(), {.read_buffer = 32});
  const TaskDeadline deadline = coro::DeadlineAfter(seconds(10));
  std::string answer;
  for (int i = 0; i < 3; ++i) {
    IoResult<std::string_view> line = co_await in_out.ReadLine(64, deadline);
    if (!line.ok()) co_return line.error();
    answer.append(line.value()).append(i < 2 ? "|" : "");
  }
  std::string bytes(std::stoul(answer.substr(answer.rfind('|') + 1)), '\0');
  if (IoError read = co_await in_out.ReadExactly(bytes, deadline); !read.ok()) co_return read;
  answer.append("|").append(bytes).append("\n");
  if (IoError written = co_await in_out.Write(answer, deadline); !written.ok()) co_return written;
  if (IoError flushed = co_await in_out.Flush(deadline); !flushed.ok()) co_return flushed;
  IoResult<std::string_view> long_line = co_await in_out.ReadLine(16, deadline);
  co_return long_line.ok() ? IoError() : long_line.error();
}

TYPED_TEST(BufferedTcpTest, LinesAndExactReadsSplitAcrossPackets) {
  using Sched = typename TestFixture::Sched;
  IoResult<TcpListener<Sched>> listener =
      TcpListener<Sched>::Listen(this->scheduler_, SocketAddress::Parse("127.0.0.1:0").value());
  ASSERT_TRUE(listener.ok());
  const SocketAddress address = listener.value().LocalAddress().value();
  coro::JoinHandle<IoError> server =
      coro::Spawn(this->scheduler_, ServeOne<Sched>(std::move(listener).value()));
  IoResult<TcpStream<Sched>> connected =
      coro::Spawn(this->peers_, ConnectTo(&this->peers_, address)).Get();
  ASSERT_TRUE(connected.ok()) << connected.error().Message();
  TcpStream<Sched> client = std::move(connected).value();
  auto send = [&](std::string piece) {
    return coro::Spawn(this->peers_, SendPiece(&client, std::move(piece))).Get().ok();
  };
  const std::string payload(1000, 'p');
  for (const std::string& piece :
       {std::string("hel"), std::string("lo\r"), std::string("\nwor"), std::string("ld\n10"),
        std::string("00\r\n") + payload.substr(0, 10), payload.substr(10)}) {
    ASSERT_TRUE(send(piece));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // separate packets
  }
  const std::string expected = "hello|world|1000|" + payload + "\n";
  EXPECT_EQ(coro::Spawn(this->peers_, ReceiveBytes(&client, expected.size())).Get(), expected);
  ASSERT_TRUE(send(std::string(100, 'L') + "\n"));
  const IoError result = server.Get();
  EXPECT_TRUE(IsTooLong(result)) << result.Message();
}

}  // namespace
}  // namespace fairsched
