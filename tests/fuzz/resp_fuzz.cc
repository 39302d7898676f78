// Fuzz target "resp": the RESP2 parser of our Redis client (examples/redis/resp.h) on any
// bytes, with limits the input chooses (small ones, so that every limit is reached). The
// first 5 bytes pick max_line, max_bulk, max_elements, max_depth and max_reply_bytes; the
// rest is what the server sent. Checked, for the first reply and then each following one:
//   - the parser never reads past the input: a complete reply consumed 1..size bytes;
//   - a verdict other than kIncomplete does not change when more bytes arrive (the same
//     reply and length, or a refusal again): a reader never has to look twice;
//   - every proper prefix of a complete reply is kIncomplete (a reply is never taken
//     early), for replies up to 512 bytes;
//   - a complete reply, encoded canonically, parses back to itself;
//   - a complete reply respects the limits (depth, element counts, bulk and line lengths).
#include <cstddef>
#include <string>
#include <string_view>

#include "examples/redis/resp.h"
#include "tests/fuzz/fuzz_target.h"

namespace fairsched::fuzz {
namespace {

using redis::ParseReply;
using redis::ParseResult;
using redis::ParseStatus;
using redis::Reply;
using redis::ReplyLimits;

// The canonical encoding of a reply.
void Encode(const Reply& reply, std::string* out) {
  switch (reply.type) {
    case Reply::Type::kSimpleString:
      *out += "+" + reply.text + "\r\n";
      return;
    case Reply::Type::kError:
      *out += "-" + reply.text + "\r\n";
      return;
    case Reply::Type::kInteger:
      *out += ":" + std::to_string(reply.integer) + "\r\n";
      return;
    case Reply::Type::kBulkString:
      *out += "$" + std::to_string(reply.text.size()) + "\r\n" + reply.text + "\r\n";
      return;
    case Reply::Type::kNullBulk:
      *out += "$-1\r\n";
      return;
    case Reply::Type::kNullArray:
      *out += "*-1\r\n";
      return;
    case Reply::Type::kArray:
      *out += "*" + std::to_string(reply.elements.size()) + "\r\n";
      for (const Reply& element : reply.elements) Encode(element, out);
      return;
  }
}

// The reply is within `limits`, its arrays nested `depth` deep so far.
bool WithinLimits(const Reply& reply, const ReplyLimits& limits, int depth) {
  switch (reply.type) {
    case Reply::Type::kSimpleString:
    case Reply::Type::kError:
      return reply.text.size() <= limits.max_line;
    case Reply::Type::kBulkString:
      return reply.text.size() <= limits.max_bulk;
    case Reply::Type::kArray:
      if (depth + 1 > limits.max_depth || reply.elements.size() > limits.max_elements) {
        return false;
      }
      for (const Reply& element : reply.elements) {
        if (!WithinLimits(element, limits, depth + 1)) return false;
      }
      return true;
    default:
      return true;
  }
}

void FuzzResp(std::string_view input) {
  FuzzInput script(input);
  ReplyLimits limits;
  limits.max_line = 1 + script.Byte() % 64;
  limits.max_bulk = script.Byte() % 128;
  limits.max_elements = script.Byte() % 16;
  limits.max_depth = 1 + script.Byte() % 6;
  limits.max_reply_bytes = 4 + script.Byte() * 4;
  std::string_view rest = script.Rest();
  for (int replies = 0; replies < 64; ++replies) {
    Reply reply;
    const ParseResult parsed = ParseReply(rest, limits, &reply);
    if (parsed.status == ParseStatus::kIncomplete) return;
    const std::string longer = std::string(rest) + "\r\n+x\r\n$1\r\n";
    Reply again;
    const ParseResult extended = ParseReply(longer, limits, &again);
    // A complete reply stays complete; a refusal stays a refusal (malformed or too large).
    FuzzCheck((extended.status == ParseStatus::kComplete) ==
                  (parsed.status == ParseStatus::kComplete),
              "resp: more bytes changed the verdict");
    if (parsed.status != ParseStatus::kComplete) return;  // refused: the reader closes
    FuzzCheck(parsed.consumed > 0 && parsed.consumed <= rest.size(),
              "resp: a reply consumed no bytes or bytes past the input");
    FuzzCheck(extended.consumed == parsed.consumed && again == reply,
              "resp: more bytes changed the reply");
    FuzzCheck(WithinLimits(reply, limits, 0), "resp: a reply over its limits was accepted");
    if (parsed.consumed <= 512) {
      for (std::size_t cut = 0; cut < parsed.consumed; ++cut) {
        Reply partial;
        FuzzCheck(
            ParseReply(rest.substr(0, cut), limits, &partial).status == ParseStatus::kIncomplete,
            "resp: a proper prefix of a reply was not incomplete");
      }
    }
    std::string encoded;
    Encode(reply, &encoded);
    Reply decoded;
    ReplyLimits unlimited;
    unlimited.max_depth = 64;
    const ParseResult round = ParseReply(encoded, unlimited, &decoded);
    FuzzCheck(round.status == ParseStatus::kComplete && round.consumed == encoded.size() &&
                  decoded == reply,
              "resp: the canonical encoding does not parse back to the reply");
    rest.remove_prefix(parsed.consumed);
  }
}

[[maybe_unused]] const bool kRegistered = RegisterFuzzTarget("resp", &FuzzResp);

}  // namespace
}  // namespace fairsched::fuzz
