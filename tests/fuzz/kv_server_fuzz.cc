// Fuzz target "kv_server": the key-value server's protocol (examples/kv_server.h) over a
// BufferedStream on a ScriptedStream (tests/io/scripted_stream.h). The input chooses the
// chunk sizes, the server's line
// and value bounds (small, so the limits are reached), and the bytes the client sends; a
// fresh server serves them (ServeStream) until the stream ends. Checked:
//   - every answer is one of the protocol's answers, and only the last one may end the
//     connection (BYE, ERROR line too long, ERROR bad value);
//   - a VALUE answer carries at most max_value bytes, bytes the client sent;
//   - each command line read gets one answer, except a SET whose value the stream ends;
//   - the connection's end is counted exactly once, as bad input iff the last answer was
//     an error that ends it.
#include <charconv>
#include <string>
#include <string_view>

#include "coro/lazy.h"
#include "examples/kv_server.h"
#include "io/buffered_stream.h"
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

struct Answers {
  std::int64_t count = 0;
  std::int64_t too_long = 0;  // "ERROR line too long": answers a line that was not read
  bool ends_bad_input = false;
};

// Splits `output` into answers and checks each (see the file comment).
Answers CheckAnswers(std::string_view output, std::string_view sent, std::size_t max_value) {
  static constexpr std::string_view kFixed[] = {"STORED\n", "DELETED\n", "NOT_FOUND\n",
                                                 "ERROR unknown command\n"};
  static constexpr std::string_view kFinal[] = {"BYE\n", "ERROR line too long\n",
                                                 "ERROR bad value\n"};
  Answers answers;
  while (!output.empty()) {
    ++answers.count;
    bool matched = false;
    for (const std::string_view fixed : kFixed) {
      if (output.starts_with(fixed)) {
        output.remove_prefix(fixed.size());
        matched = true;
        break;
      }
    }
    if (matched) continue;
    for (const std::string_view final_answer : kFinal) {
      if (output == final_answer) {
        answers.too_long = final_answer == kFinal[1] ? 1 : 0;
        answers.ends_bad_input = final_answer != kFinal[0];
        return answers;
      }
    }
    FuzzCheck(output.starts_with("VALUE "), "kv_server: an answer the protocol does not have");
    output.remove_prefix(6);
    std::size_t size = 0;
    const auto [end, error] = std::from_chars(output.data(), output.data() + output.size(), size);
    FuzzCheck(error == std::errc() && end < output.data() + output.size() && *end == '\n',
              "kv_server: VALUE without its length line");
    output.remove_prefix(static_cast<std::size_t>(end - output.data()) + 1);
    FuzzCheck(size <= max_value && output.size() > size && output[size] == '\n',
              "kv_server: VALUE without its bytes and line end");
    FuzzCheck(sent.find(output.substr(0, size)) != std::string_view::npos,
              "kv_server: VALUE bytes the client never sent");
    output.remove_prefix(size + 1);
  }
  return answers;
}

void FuzzKvServer(std::string_view input) {
  static Scheduler* const scheduler = new Scheduler();  // never started: nothing is spawned
  FuzzInput script(input);
  std::vector<std::size_t> chunks = script.ReadSizes();
  examples::KvServerOptions options;
  options.max_line = std::size_t{script.Byte()} % 64 + 1;
  options.max_value = script.Byte();
  const std::string_view sent = script.Rest();

  examples::KvServer<Scheduler> server(*scheduler, options);
  BufferedStream<ScriptedStream> stream(ScriptedStream(std::string(sent), std::move(chunks)));
  coro::RunSync(server.ServeStream(stream));

  const Answers answers = CheckAnswers(stream.stream().written, sent, options.max_value);
  const examples::KvServerStats stats = server.Stats();
  FuzzCheck(stream.Unflushed() == 0, "kv_server: answers left unflushed");
  const std::int64_t answered = answers.count - answers.too_long;
  FuzzCheck(stats.commands >= answered && stats.commands <= answered + 1,
            "kv_server: a command without exactly one answer");
  FuzzCheck(stats.closed + stats.dropped_bad_input + stats.dropped_idle +
                    stats.dropped_slow_reader + stats.closed_by_stop ==
                1,
            "kv_server: the connection's end counted other than once");
  FuzzCheck((stats.dropped_bad_input == 1) == answers.ends_bad_input,
            "kv_server: bad input counted without its error answer");
}

[[maybe_unused]] const bool kRegistered = RegisterFuzzTarget("kv_server", &FuzzKvServer);

}  // namespace
}  // namespace fairsched::fuzz
