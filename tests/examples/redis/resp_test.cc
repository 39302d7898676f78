// The RESP2 encoder and parser (examples/redis/resp.h) on bytes: every reply type, every
// reply cut at every byte (each proper prefix is kIncomplete, the whole is kComplete with
// the exact byte count), pipelined replies, malformed input, and each limit (refused as soon
// as the header that breaks it is buffered).
#include "examples/redis/resp.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace fairsched::redis {
namespace {

Reply Simple(std::string text) { return {Reply::Type::kSimpleString, std::move(text), 0, {}}; }
Reply Error(std::string text) { return {Reply::Type::kError, std::move(text), 0, {}}; }
Reply Integer(std::int64_t n) { return {Reply::Type::kInteger, "", n, {}}; }
Reply Bulk(std::string text) { return {Reply::Type::kBulkString, std::move(text), 0, {}}; }
Reply NullBulk() { return {Reply::Type::kNullBulk, "", 0, {}}; }
Reply NullArray() { return {Reply::Type::kNullArray, "", 0, {}}; }
Reply Array(std::vector<Reply> elements) {
  return {Reply::Type::kArray, "", 0, std::move(elements)};
}

ParseResult Parse(std::string_view input, Reply* reply, const ReplyLimits& limits = {}) {
  return ParseReply(input, limits, reply);
}
ParseStatus StatusOf(std::string_view input, const ReplyLimits& limits = {}) {
  Reply reply;
  return Parse(input, &reply, limits).status;
}

struct Case {
  std::string wire;
  Reply expected;
};

std::vector<Case> EveryType() {
  return {
      {"+OK\r\n", Simple("OK")},
      {"+\r\n", Simple("")},
      {"-ERR unknown command 'FOO'\r\n", Error("ERR unknown command 'FOO'")},
      {":0\r\n", Integer(0)},
      {":42\r\n", Integer(42)},
      {":-7\r\n", Integer(-7)},
      {":9223372036854775807\r\n", Integer(9223372036854775807)},
      {":-9223372036854775808\r\n", Integer(-9223372036854775807 - 1)},
      {"$3\r\nabc\r\n", Bulk("abc")},
      {"$0\r\n\r\n", Bulk("")},
      {std::string("$6\r\na\r\n\0b\n\r\n", 12), Bulk(std::string("a\r\n\0b\n", 6))},  // binary
      {"$-1\r\n", NullBulk()},
      {"*-1\r\n", NullArray()},
      {"*0\r\n", Array({})},
      {"*2\r\n$1\r\na\r\n:5\r\n", Array({Bulk("a"), Integer(5)})},
      {"*4\r\n+x\r\n-E y\r\n$-1\r\n*2\r\n*1\r\n:1\r\n*-1\r\n",
       Array({Simple("x"), Error("E y"), NullBulk(), Array({Array({Integer(1)}), NullArray()})})},
  };
}

TEST(RespTest, ParsesEveryReplyType) {
  for (const Case& c : EveryType()) {
    SCOPED_TRACE(c.expected.DebugString());
    Reply reply;
    const ParseResult parsed = Parse(c.wire, &reply);
    ASSERT_EQ(parsed.status, ParseStatus::kComplete);
    EXPECT_EQ(parsed.consumed, c.wire.size());
    EXPECT_EQ(reply, c.expected) << reply.DebugString();
  }
}

TEST(RespTest, EveryProperPrefixIsIncomplete) {
  for (const Case& c : EveryType()) {
    SCOPED_TRACE(c.expected.DebugString());
    for (std::size_t cut = 0; cut < c.wire.size(); ++cut) {
      EXPECT_EQ(StatusOf(std::string_view(c.wire).substr(0, cut)), ParseStatus::kIncomplete)
          << "cut at byte " << cut;
    }
  }
}

TEST(RespTest, PipelinedRepliesParseOneAtATimeAtEverySplit) {
  std::string all;
  std::vector<Reply> expected;
  for (const Case& c : EveryType()) {
    all += c.wire;
    expected.push_back(c.expected);
  }
  // A reader that receives `all` in two pieces split at `split` parses the same replies.
  for (std::size_t split = 0; split <= all.size(); ++split) {
    std::string buffer = all.substr(0, split);
    std::size_t fed = split;
    std::vector<Reply> got;
    while (got.size() < expected.size()) {
      Reply reply;
      const ParseResult parsed = Parse(buffer, &reply);
      if (parsed.status == ParseStatus::kIncomplete) {
        ASSERT_LT(fed, all.size()) << "incomplete with everything received, split " << split;
        buffer += all.substr(fed);
        fed = all.size();
        continue;
      }
      ASSERT_EQ(parsed.status, ParseStatus::kComplete) << "split " << split;
      got.push_back(reply);
      buffer.erase(0, parsed.consumed);
    }
    EXPECT_EQ(got, expected) << "split " << split;
    EXPECT_TRUE(buffer.empty());
  }
}

TEST(RespTest, EncodesCommandsAsArraysOfBulkStrings) {
  std::string out;
  AppendCommand({"SET", "k", "v1"}, &out);
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n");
  AppendCommand({"PING"}, &out);
  EXPECT_EQ(out.substr(28), "*1\r\n$4\r\nPING\r\n");
  // Binary arguments survive: the encoding parses back (a command is a valid reply).
  const std::string binary("\r\n\0$*", 5);
  std::string command;
  AppendCommand({"SET", binary, ""}, &command);
  Reply reply;
  ASSERT_EQ(Parse(command, &reply).status, ParseStatus::kComplete);
  EXPECT_EQ(reply, Array({Bulk("SET"), Bulk(binary), Bulk("")}));
}

TEST(RespTest, MalformedInputIsRefused) {
  for (std::string_view bad : {
           "?x\r\n",                    // unknown type byte
           "\r\n",                      // no type byte
           "+OK\n",                     // bare '\n'
           "+O\rK\r\n",                 // bare '\r'
           ":\r\n",                     // empty number
           ":12a\r\n",                  // not a number
           ":+5\r\n",                   // a sign RESP does not use
           ":9223372036854775808\r\n",  // over int64
           ":99999999999999999999\r\n",
           "$-2\r\n",  // negative length other than -1
           "*-5\r\n", "$x\r\n",
           "$3\r\nabcd\r\n",     // bulk longer than announced
           "$3\r\nabcX",         // no "\r" after the bulk: malformed already
           "*2\r\n:1\r\n?\r\n",  // a bad element
       }) {
    EXPECT_EQ(StatusOf(bad), ParseStatus::kMalformed) << "input: " << bad;
  }
}

TEST(RespTest, UnknownTypeByteIsMalformedAtOnce) {
  // Not only once its line ends: the verdict must not depend on how much arrived (found by
  // the resp fuzz target: this was "too large" before its line ended).
  ReplyLimits limits;
  limits.max_reply_bytes = 4;
  EXPECT_EQ(StatusOf(std::string("\0\0\0\0ab", 6), limits), ParseStatus::kMalformed);
  EXPECT_EQ(StatusOf("?"), ParseStatus::kMalformed);
  EXPECT_EQ(StatusOf("x"), ParseStatus::kMalformed);
}

TEST(RespTest, LimitsAreEnforcedAsSoonAsTheHeaderArrives) {
  ReplyLimits limits;
  limits.max_line = 10;
  limits.max_bulk = 10;
  limits.max_elements = 3;
  limits.max_depth = 2;
  limits.max_reply_bytes = 64;

  // Lines: 10 bytes may still end; 11 without "\r\n" cannot.
  EXPECT_EQ(StatusOf("+0123456789\r\n", limits), ParseStatus::kComplete);
  EXPECT_EQ(StatusOf("+0123456789", limits), ParseStatus::kIncomplete);
  EXPECT_EQ(StatusOf("+0123456789A", limits), ParseStatus::kTooLarge);
  EXPECT_EQ(StatusOf("-0123456789AB\r\n", limits), ParseStatus::kTooLarge);
  // Bulk length: refused on its header, before its bytes.
  EXPECT_EQ(StatusOf("$10\r\n0123456789\r\n", limits), ParseStatus::kComplete);
  EXPECT_EQ(StatusOf("$11\r\n", limits), ParseStatus::kTooLarge);
  EXPECT_EQ(StatusOf("$1073741824\r\n"), ParseStatus::kTooLarge);  // default limits: 64 MiB
  // Array length.
  EXPECT_EQ(StatusOf("*3\r\n:1\r\n:2\r\n:3\r\n", limits), ParseStatus::kComplete);
  EXPECT_EQ(StatusOf("*4\r\n", limits), ParseStatus::kTooLarge);
  EXPECT_EQ(StatusOf("*2000000\r\n"), ParseStatus::kTooLarge);  // default: 1 Mi elements
  // Depth: two levels pass, three fail (also deep inside an array).
  EXPECT_EQ(StatusOf("*1\r\n*1\r\n:1\r\n", limits), ParseStatus::kComplete);
  EXPECT_EQ(StatusOf("*1\r\n*1\r\n*1\r\n", limits), ParseStatus::kTooLarge);
  EXPECT_EQ(StatusOf("*2\r\n:1\r\n*1\r\n:0\r\n", limits), ParseStatus::kComplete);
  EXPECT_EQ(StatusOf("*2\r\n:1\r\n*1\r\n*0\r\n", limits), ParseStatus::kTooLarge);
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "*1\r\n";
  EXPECT_EQ(StatusOf(deep), ParseStatus::kTooLarge) << "default depth 8, no deep recursion";
  // Total bytes: three bulks of 10 fit in 64 bytes only up to two (each is 17 bytes with
  // headers: 4 + 3 * 17 = 55 < 64 passes; a fourth bulk is over max_elements anyway).
  EXPECT_EQ(
      StatusOf("*3\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n", limits),
      ParseStatus::kComplete);
  limits.max_reply_bytes = 50;
  EXPECT_EQ(StatusOf("*3\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$10\r\n", limits),
            ParseStatus::kTooLarge)
      << "the third bulk's header says it ends past 50 bytes";
  // A prefix longer than max_reply_bytes can never become a reply within it.
  limits.max_line = 1000;
  EXPECT_EQ(StatusOf("+" + std::string(60, 'x'), limits), ParseStatus::kTooLarge);
}

TEST(RespTest, DebugStringIsShortAndReadable) {
  EXPECT_EQ(Array({Simple("OK"), Error("ERR x"), Integer(3), Bulk("b"), NullBulk(), NullArray()})
                .DebugString(),
            "[+OK, -ERR x, :3, $b, $nil, *nil]");
  EXPECT_EQ(Bulk(std::string(100, 'a')).DebugString().size(), 1 + 40 + 5u + 3u);
}

}  // namespace
}  // namespace fairsched::redis
