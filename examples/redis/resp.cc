// RESP2 encoding and parsing (resp.h): a recursive descent over the buffer, one position
// index, no copies of the input but the strings it returns.
#include "examples/redis/resp.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "sched/task.h"  // FAIRSCHED_CHECK

namespace fairsched::redis {

const char* ToString(Reply::Type type) {
  switch (type) {
    case Reply::Type::kSimpleString:
      return "simple string";
    case Reply::Type::kError:
      return "error";
    case Reply::Type::kInteger:
      return "integer";
    case Reply::Type::kBulkString:
      return "bulk string";
    case Reply::Type::kNullBulk:
      return "null bulk";
    case Reply::Type::kArray:
      return "array";
    case Reply::Type::kNullArray:
      return "null array";
  }
  return "?";
}

const char* ToString(ParseStatus status) {
  switch (status) {
    case ParseStatus::kComplete:
      return "complete";
    case ParseStatus::kIncomplete:
      return "incomplete";
    case ParseStatus::kMalformed:
      return "malformed reply";
    case ParseStatus::kTooLarge:
      return "reply over the client's limits";
  }
  return "?";
}

std::string Reply::DebugString() const {
  constexpr std::size_t kCut = 40;
  auto cut = [](const std::string& s) {
    return s.size() <= kCut ? s : s.substr(0, kCut) + "...(" + std::to_string(s.size()) + ")";
  };
  switch (type) {
    case Type::kSimpleString:
      return "+" + cut(text);
    case Type::kError:
      return "-" + cut(text);
    case Type::kInteger:
      return ":" + std::to_string(integer);
    case Type::kBulkString:
      return "$" + cut(text);
    case Type::kNullBulk:
      return "$nil";
    case Type::kNullArray:
      return "*nil";
    case Type::kArray: {
      std::string out = "[";
      for (std::size_t i = 0; i < elements.size(); ++i) {
        if (i > 0) out += ", ";
        out += elements[i].DebugString();
      }
      return out + "]";
    }
  }
  return "?";
}

void AppendCommand(std::span<const std::string_view> args, std::string* out) {
  FAIRSCHED_CHECK(!args.empty(), "a Redis command needs at least its name");
  out->append("*").append(std::to_string(args.size())).append("\r\n");
  for (std::string_view arg : args) {
    out->append("$").append(std::to_string(arg.size())).append("\r\n");
    out->append(arg).append("\r\n");
  }
}

namespace {

class Parser {
 public:
  Parser(std::string_view input, const ReplyLimits& limits) : in_(input), limits_(limits) {}

  ParseStatus Parse(int depth, Reply* reply) {
    if (pos_ >= in_.size()) return ParseStatus::kIncomplete;
    const char type = in_[pos_++];
    if (type != '+' && type != '-' && type != ':' && type != '$' && type != '*') {
      return ParseStatus::kMalformed;  // at once: no need to wait for the line's end
    }
    std::string_view line;
    if (const ParseStatus s = Line(&line); s != ParseStatus::kComplete) return s;
    switch (type) {
      case '+':
        reply->type = Reply::Type::kSimpleString;
        reply->text.assign(line);
        return ParseStatus::kComplete;
      case '-':
        reply->type = Reply::Type::kError;
        reply->text.assign(line);
        return ParseStatus::kComplete;
      case ':':
        reply->type = Reply::Type::kInteger;
        return Number(line, &reply->integer) ? ParseStatus::kComplete : ParseStatus::kMalformed;
      case '$':
        return Bulk(line, reply);
      case '*':
        return Array(line, depth, reply);
      default:
        return ParseStatus::kMalformed;
    }
  }

  std::size_t pos() const { return pos_; }

 private:
  // The line from pos_ to the next "\r\n" (consumed). A lone '\r' or '\n' inside is malformed.
  ParseStatus Line(std::string_view* line) {
    const std::size_t begin = pos_;
    const std::size_t end = std::min(in_.size(), begin + limits_.max_line + 1);
    for (std::size_t i = begin; i < end; ++i) {
      if (in_[i] == '\n') return ParseStatus::kMalformed;
      if (in_[i] != '\r') continue;
      if (i + 1 == in_.size()) return ParseStatus::kIncomplete;
      if (in_[i + 1] != '\n') return ParseStatus::kMalformed;
      if (i - begin > limits_.max_line) return ParseStatus::kTooLarge;
      *line = in_.substr(begin, i - begin);
      pos_ = i + 2;
      return ParseStatus::kComplete;
    }
    // No '\r' within max_line + 1 bytes: the line can only end past the limit.
    return end - begin > limits_.max_line ? ParseStatus::kTooLarge : ParseStatus::kIncomplete;
  }

  // A signed decimal without leading '+', fitting an int64.
  static bool Number(std::string_view text, std::int64_t* value) {
    const bool negative = !text.empty() && text.front() == '-';
    if (negative) text.remove_prefix(1);
    if (text.empty() || text.size() > 19) return false;
    std::uint64_t magnitude = 0;
    for (char c : text) {
      if (c < '0' || c > '9') return false;
      magnitude = magnitude * 10 + static_cast<std::uint64_t>(c - '0');
    }
    const std::uint64_t max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (magnitude > max + (negative ? 1 : 0)) return false;
    *value =
        negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
    return true;
  }

  ParseStatus Bulk(std::string_view header, Reply* reply) {
    std::int64_t length = 0;
    if (!Number(header, &length) || length < -1) return ParseStatus::kMalformed;
    if (length == -1) {
      reply->type = Reply::Type::kNullBulk;
      return ParseStatus::kComplete;
    }
    const std::uint64_t n = static_cast<std::uint64_t>(length);
    if (n > limits_.max_bulk) return ParseStatus::kTooLarge;
    if (pos_ + n + 2 > limits_.max_reply_bytes) return ParseStatus::kTooLarge;
    if (in_.size() - pos_ < n + 2) {
      // What is there of the trailer must still be "\r\n".
      const std::size_t have = in_.size() - pos_;
      if (have > n && in_[pos_ + n] != '\r') return ParseStatus::kMalformed;
      return ParseStatus::kIncomplete;
    }
    if (in_[pos_ + n] != '\r' || in_[pos_ + n + 1] != '\n') return ParseStatus::kMalformed;
    reply->type = Reply::Type::kBulkString;
    reply->text.assign(in_.substr(pos_, n));
    pos_ += n + 2;
    return ParseStatus::kComplete;
  }

  ParseStatus Array(std::string_view header, int depth, Reply* reply) {
    std::int64_t count = 0;
    if (!Number(header, &count) || count < -1) return ParseStatus::kMalformed;
    if (count == -1) {
      reply->type = Reply::Type::kNullArray;
      return ParseStatus::kComplete;
    }
    if (static_cast<std::uint64_t>(count) > limits_.max_elements) return ParseStatus::kTooLarge;
    if (depth + 1 > limits_.max_depth) return ParseStatus::kTooLarge;
    reply->type = Reply::Type::kArray;
    reply->elements.clear();
    // Each element takes at least 3 bytes: reserve no more than the input could hold.
    reply->elements.reserve(std::min<std::size_t>(count, (in_.size() - pos_) / 3));
    for (std::int64_t i = 0; i < count; ++i) {
      reply->elements.emplace_back();
      const ParseStatus s = Parse(depth + 1, &reply->elements.back());
      if (s != ParseStatus::kComplete) return s;
      if (pos_ > limits_.max_reply_bytes) return ParseStatus::kTooLarge;
    }
    return ParseStatus::kComplete;
  }

  std::string_view in_;
  const ReplyLimits& limits_;
  std::size_t pos_ = 0;
};

}  // namespace

ParseResult ParseReply(std::string_view input, const ReplyLimits& limits, Reply* reply) {
  Parser parser(input, limits);
  ParseStatus status = parser.Parse(0, reply);
  if (status == ParseStatus::kComplete && parser.pos() > limits.max_reply_bytes) {
    status = ParseStatus::kTooLarge;
  }
  if (status == ParseStatus::kIncomplete && input.size() > limits.max_reply_bytes) {
    status = ParseStatus::kTooLarge;  // the reply is longer than all of `input`
  }
  return {status, status == ParseStatus::kComplete ? parser.pos() : 0};
}

}  // namespace fairsched::redis
