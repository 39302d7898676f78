// Reading protocol frames (protocol.h) from a coroutine TcpStream (io/tcp.h): the one
// helper the blob store and the fairsched savegame server share.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_STREAM_FRAMES_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_STREAM_FRAMES_H_

#include <cerrno>
#include <string_view>

#include "coro/lazy.h"
#include "examples/savegame/protocol.h"
#include "io/tcp.h"

namespace fairsched::savegame {

// The next frame's body from `stream` (buffered in `buffer`; valid until the next read), or
// the read's error (kSystem/EPROTO for a frame over kMaxFrame).
template <typename Stream>
coro::Lazy<IoResult<std::string_view>> ReadFrame(Stream& stream, FrameBuffer& buffer,
                                                 TaskDeadline deadline) {
  while (true) {
    if (std::optional<std::string_view> body = buffer.NextFrame()) co_return *body;
    if (buffer.Corrupt()) co_return IoError(IoErrorCode::kSystem, EPROTO);
    IoResult<std::size_t> received = co_await stream.Read(buffer.WritableTail(), deadline);
    if (!received.ok()) co_return received.error();
    buffer.Commit(received.value());
  }
}

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_STREAM_FRAMES_H_
