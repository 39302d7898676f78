// Fuzz target "savegame_protocol": the savegame wire protocol (examples/savegame/protocol.h)
// as the blob store and the fairsched server read it: ReadFrame (stream_frames.h) over a
// ScriptedStream cuts the client's bytes into frames, and every frame body goes to all four
// message decoders. The input chooses the chunk sizes and the bytes. Checked against a
// reference scan of the u32 length prefixes:
//   - the frames come out in order, each exactly the body its prefix announced, and all
//     complete frames come out before the stream ends;
//   - a prefix over kMaxFrame fails the read with kSystem/EPROTO, and nothing after it
//     comes out as a frame;
//   - a decoder that accepts a body describes it completely: encoding the decoded message
//     gives back the exact frame (prefix and body).
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "coro/lazy.h"
#include "examples/savegame/protocol.h"
#include "examples/savegame/stream_frames.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/io/scripted_stream.h"

namespace fairsched::fuzz {
namespace {

using testing::ScriptedStream;

using namespace savegame;

// Each decoder that accepts `frame`'s body must encode back to `frame`.
void CheckDecoders(std::string_view frame) {
  const std::string_view body = frame.substr(4);
  std::string encoded;
  if (const std::optional<SaveRequest> request = ParseSaveRequest(body)) {
    AppendSaveRequest(*request, &encoded);
    FuzzCheck(encoded == frame, "savegame: SaveRequest does not encode back to its frame");
  }
  encoded.clear();
  if (const std::optional<SaveReply> reply = ParseSaveReply(body)) {
    AppendSaveReply(*reply, &encoded);
    FuzzCheck(encoded == frame, "savegame: SaveReply does not encode back to its frame");
    FuzzCheck(ToString(reply->status) != nullptr, "savegame: a status without a name");
  }
  encoded.clear();
  if (const std::optional<StoreRequest> request = ParseStoreRequest(body)) {
    AppendStoreRequest(*request, &encoded);
    FuzzCheck(encoded == frame, "savegame: StoreRequest does not encode back to its frame");
    (void)ReadBlobHeader(request->blob);
  }
  encoded.clear();
  if (const std::optional<StoreResponse> response = ParseStoreResponse(body)) {
    AppendStoreResponse(*response, &encoded);
    FuzzCheck(encoded == frame, "savegame: StoreResponse does not encode back to its frame");
    (void)ReadBlobHeader(response->blob);
  }
}

void FuzzSavegameProtocol(std::string_view input) {
  FuzzInput script(input);
  std::vector<std::size_t> chunks = script.ReadSizes();
  const std::string_view sent = script.Rest();
  ScriptedStream stream(std::string(sent), std::move(chunks));
  FrameBuffer buffer;
  std::size_t at = 0;  // where the next frame starts in `sent`
  while (true) {
    IoResult<std::string_view> body =
        coro::RunSync(ReadFrame(stream, buffer, kTaskDeadlineInfinite));
    std::uint32_t length = 0;
    const bool has_prefix = sent.size() - at >= 4;
    if (has_prefix) std::memcpy(&length, sent.data() + at, 4);  // little-endian, as the wire
    if (!body.ok()) {
      if (body.error().code() == IoErrorCode::kSystem) {
        FuzzCheck(body.error().sys_errno() == EPROTO && has_prefix && length > kMaxFrame,
                  "savegame: a frame refused that is within kMaxFrame");
        return;
      }
      FuzzCheck(body.error().code() == IoErrorCode::kEndOfStream,
                "savegame: ReadFrame failed with an unexpected error");
      FuzzCheck(!has_prefix || (length <= kMaxFrame && sent.size() - at - 4 < length),
                "savegame: the stream ended with a complete frame unread");
      return;
    }
    FuzzCheck(has_prefix && length <= kMaxFrame && body.value().size() == length &&
                  sent.substr(at + 4, length) == body.value(),
              "savegame: a frame that is not the next one sent");
    CheckDecoders(sent.substr(at, 4 + std::size_t{length}));
    at += 4 + std::size_t{length};
  }
}

[[maybe_unused]] const bool kRegistered =
    RegisterFuzzTarget("savegame_protocol", &FuzzSavegameProtocol);

}  // namespace
}  // namespace fairsched::fuzz
