// RESP2, the Redis wire protocol, as pure functions on bytes (no IO): encoding a command and
// parsing one reply from the front of a buffer. The Redis client (redis_client.h) runs them
// over a BufferedStream; tests run them on every split of a reply, and a fuzz target can run
// them on any bytes.
//
//   std::string out;
//   AppendCommand({"SET", "user:7", blob}, &out);     // *3\r\n$3\r\nSET\r\n$6\r\nuser:7...
//   Reply reply;
//   ParseResult parsed = ParseReply(received, ReplyLimits{}, &reply);
//   if (parsed.status == ParseStatus::kComplete) received.remove_prefix(parsed.consumed);
//
// Contract:
//   - AppendCommand appends one command: an array of bulk strings (binary-safe; any bytes,
//     also "\r\n", may be in an argument). A command has at least one argument.
//   - ParseReply looks at the front of `input` for one whole reply: simple string ("+OK"),
//     error ("-ERR ..."), integer (":42"), bulk string ("$3\r\nabc", "$-1" is the null bulk),
//     array ("*2\r\n..." of any of these, nested; "*-1" is the null array). It never reads
//     past `input` and never allocates more than the limits allow:
//       kComplete    `*reply` holds the reply; `consumed` bytes of `input` were it.
//       kIncomplete  `input` is a proper prefix of a valid reply (or empty): read more and
//                    call again with the longer buffer (the parse starts over: a reply is
//                    parsed whole, never resumed). `*reply` is unspecified.
//       kMalformed   `input` does not start with a RESP2 reply (bad type byte, a line without
//                    "\r\n", a bad number, a bulk not followed by "\r\n"). Nothing after it can be
//                    trusted: close the connection.
//       kTooLarge    the reply breaks a limit of `limits` (a line, bulk length, array length,
//                    nesting depth, or its total size). Found as soon as the header that breaks
//                    it is buffered (a 1 GiB bulk is refused on its "$1073741824\r\n"), so a
//                    peer cannot make the caller buffer more than `max_reply_bytes`. Close the
//                    connection too.
//     Verdicts are stable: a complete reply stays the same reply when more bytes follow,
//     and a refused one (kMalformed or kTooLarge) never parses with more bytes (which of
//     the two it is may change: ":12x" is kTooLarge while its line is longer than
//     max_reply_bytes, kMalformed once the line ends). A prefix that could still become a
//     valid reply within the limits is kIncomplete; a prefix longer than max_reply_bytes is
//     kTooLarge.
//   - Redis' own errors (a "-ERR" reply) are replies (Reply::Type::kError), not parse errors.
// Nothing here throws or aborts on input; misuse (an empty command) is checked.
#ifndef FAIRSCHED_EXAMPLES_REDIS_RESP_H_
#define FAIRSCHED_EXAMPLES_REDIS_RESP_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fairsched::redis {

// One reply. `text` holds a simple string, an error's message (without the '-') or a bulk
// string; `integer` an integer; `elements` an array's replies.
struct Reply {
  enum class Type : std::uint8_t {
    kSimpleString,
    kError,
    kInteger,
    kBulkString,
    kNullBulk,  // "$-1": GET of a missing key
    kArray,
    kNullArray,  // "*-1"
  };
  Type type = Type::kNullBulk;
  std::string text;
  std::int64_t integer = 0;
  std::vector<Reply> elements;

  bool IsError() const { return type == Type::kError; }
  bool IsNull() const { return type == Type::kNullBulk || type == Type::kNullArray; }
  // A short human-readable form, for messages and tests: +OK, -ERR x, :5, $abc, $nil,
  // [a, b], *nil. Long strings are cut.
  std::string DebugString() const;
  friend bool operator==(const Reply&, const Reply&) = default;
};
const char* ToString(Reply::Type type);

struct ReplyLimits {
  std::size_t max_line = 64 * 1024;                 // a simple string, error, integer, header
  std::size_t max_bulk = 64 * 1024 * 1024;          // one bulk string's length
  std::size_t max_elements = 1024 * 1024;           // one array's length
  int max_depth = 8;                                // arrays nested in arrays (1: no nesting)
  std::size_t max_reply_bytes = 128 * 1024 * 1024;  // one whole reply, bytes on the wire
};

enum class ParseStatus : std::uint8_t { kComplete, kIncomplete, kMalformed, kTooLarge };
const char* ToString(ParseStatus status);

struct ParseResult {
  ParseStatus status = ParseStatus::kIncomplete;
  std::size_t consumed = 0;  // kComplete: the reply's bytes
};

// Appends one command (an array of bulk strings) to `out`.
void AppendCommand(std::span<const std::string_view> args, std::string* out);
inline void AppendCommand(std::initializer_list<std::string_view> args, std::string* out) {
  AppendCommand(std::span<const std::string_view>(args.begin(), args.size()), out);
}

ParseResult ParseReply(std::string_view input, const ReplyLimits& limits, Reply* reply);

}  // namespace fairsched::redis

#endif  // FAIRSCHED_EXAMPLES_REDIS_RESP_H_
