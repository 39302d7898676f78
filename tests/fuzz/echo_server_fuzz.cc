// Fuzz target "echo_server": the echo server (examples/echo_server.h) over a ScriptedStream
// (tests/io/scripted_stream.h),
// mostly in its framed mode. The input chooses the protocol (framed for 7 of 8 first-byte
// values), the largest frame, the chunk sizes and the bytes the client sends; a fresh
// server serves them (ServeStream) until the stream ends. Checked against a reference scan
// of the bytes:
//   - framed: the answer is exactly the complete frames before the first incomplete or
//     oversized one, in order and unchanged; answered and bytes_echoed count them; the end
//     is counted as oversized iff such a frame came, else as closed by the peer;
//   - plain: the answer is every byte sent, unchanged.
#include <cstdint>
#include <string_view>

#include "coro/lazy.h"
#include "examples/echo_server.h"
#include "io/epoll_backend.h"
#include "queues/binary_heap.h"
#include "queues/mcsp_queue.h"
#include "sched/task_scheduler.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/io/scripted_stream.h"

namespace fairsched::fuzz {
namespace {

using testing::ScriptedStream;

using Scheduler = BasicTaskScheduler<McspQueue<Task>, BinaryHeap<Task>, EpollBackend>;

struct FrameScan {
  std::size_t complete_bytes = 0;  // the complete, allowed frames at the front
  std::int64_t frames = 0;
  bool oversized = false;  // an oversized frame's header follows them
};

FrameScan ScanFrames(std::string_view sent, std::uint32_t max_frame) {
  FrameScan scan;
  while (sent.size() - scan.complete_bytes >= examples::kEchoHeaderSize) {
    const std::uint32_t length = examples::DecodeFrameLength(sent.data() + scan.complete_bytes);
    if (length > max_frame) {
      scan.oversized = true;
      break;
    }
    if (sent.size() - scan.complete_bytes < examples::kEchoHeaderSize + length) break;
    scan.complete_bytes += examples::kEchoHeaderSize + length;
    ++scan.frames;
  }
  return scan;
}

void FuzzEchoServer(std::string_view input) {
  static Scheduler* const scheduler = new Scheduler();  // never started: nothing is spawned
  FuzzInput script(input);
  examples::EchoServerOptions options;
  const bool plain = script.Byte() % 8 == 0;
  options.protocol = plain ? examples::EchoProtocol::kPlain : examples::EchoProtocol::kFramed;
  const std::uint32_t size_byte = script.Byte();
  options.max_frame = size_byte < 200 ? size_byte : (size_byte - 199) * 1000;
  options.plain_buffer = std::size_t{script.Byte()} + 1;
  std::vector<std::size_t> chunks = script.ReadSizes();
  const std::string_view sent = script.Rest();

  examples::EchoServer<Scheduler> server(*scheduler, options);
  ScriptedStream stream(std::string(sent), std::move(chunks));
  coro::RunSync(server.ServeStream(stream));
  const examples::EchoServerStats stats = server.Stats();

  if (plain) {
    FuzzCheck(stream.written == sent, "echo_server plain: the echo differs from what was sent");
    FuzzCheck(stats.bytes_echoed == static_cast<std::int64_t>(sent.size()),
              "echo_server plain: bytes_echoed is not the bytes sent");
    FuzzCheck(stats.closed_by_peer == 1, "echo_server plain: the end is not counted once");
    return;
  }
  const FrameScan scan = ScanFrames(sent, options.max_frame);
  FuzzCheck(stream.written == sent.substr(0, scan.complete_bytes),
            "echo_server framed: the echo is not the complete frames sent");
  FuzzCheck(stats.answered == scan.frames, "echo_server framed: answered miscounts the frames");
  FuzzCheck(stats.bytes_echoed == static_cast<std::int64_t>(scan.complete_bytes),
            "echo_server framed: bytes_echoed miscounts");
  FuzzCheck(stats.dropped_oversized == (scan.oversized ? 1 : 0) &&
                stats.closed_by_peer == (scan.oversized ? 0 : 1),
            "echo_server framed: the end is counted wrongly");
}

[[maybe_unused]] const bool kRegistered = RegisterFuzzTarget("echo_server", &FuzzEchoServer);

}  // namespace
}  // namespace fairsched::fuzz
