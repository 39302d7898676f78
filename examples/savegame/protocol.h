// The savegame service's wire protocol and blob format, shared by the blob store, both
// server designs (fairsched coroutines and the "Updater" baseline), the client fleet and the
// final correctness check. Plain TCP, little-endian, every message one frame:
//
//   frame              = u32 body_length, body
//   client -> server   = u8 kSaveRequest, u64 request_id, u32 user
//   server -> client   = u64 request_id, u8 SaveStatus
//   server -> store    = u8 StoreOp, u32 user, u64 expected_version, blob (kPut only)
//   store -> server    = u8 StoreStatus, u64 version, blob
//   blob               = u64 counter, u64 last_request_id, payload (the "save data")
//
// Exactly-once saves (why a counter in the store can be checked against acknowledgements):
//   - kPut is a compare-and-set: it applies only if the stored version still equals
//     `expected_version` (the version the request downloaded); then version + 1. A missing
//     blob has version 0.
//   - A request holds its user's lock from download to reply, so no other request of that
//     user writes in between: its own upload is the only write that can race.
//   - If the upload's answer does not come (the store dropped or delayed it, the deadline
//     passed, the connection broke), the outcome is unknown. The server then sends a
//     *fence*: the same compare-and-set on the downloaded version, with the blob unchanged.
//     Exactly one compare-and-set on version v can apply. Fence applied: the upload never
//     will, the request failed cleanly (kUploadNotApplied). Fence refused: version v + 1
//     exists, written by the upload (the refusal carries the blob: its last_request_id is
//     this request: acknowledged, kOk) or by an earlier fence whose answer was lost (the old
//     blob: kUploadNotApplied). Only if no fence gets an answer within its attempts is the
//     reply kUnknown (counted separately; the check then allows that request either way).
//   So every kOk reply means "applied exactly once" and every other reply "not applied",
//   and at the end each user's counter must equal the number of kOk replies for that user.
#ifndef FAIRSCHED_EXAMPLES_SAVEGAME_PROTOCOL_H_
#define FAIRSCHED_EXAMPLES_SAVEGAME_PROTOCOL_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fairsched::savegame {

inline constexpr std::uint8_t kSaveRequest = 1;
inline constexpr std::uint32_t kMaxFrame = 1 << 20;  // bytes of body; larger is a bad peer

// The server's answer to one save request.
enum class SaveStatus : std::uint8_t {
  kOk = 0,            // applied exactly once
  kLockTimeout,       // the user's profile stayed locked past the deadline
  kStoreUnavailable,  // no connection to the blob store within the deadline
  kDownloadFailed,    // the download's answer did not come in time (nothing applied)
  kUploadNotApplied,  // the upload failed and the fence proved it did not apply
  kConflict,          // the store refused the compare-and-set (nothing applied)
  kUnknown,           // the upload's outcome could not be settled
  kShuttingDown,      // the server stopped while the request ran (not applied unless kOk)
  kBadRequest,        // malformed request or user out of range
};
inline constexpr int kSaveStatusCount = 9;
const char* ToString(SaveStatus status);

enum class StoreOp : std::uint8_t {
  kGet = 1,    // download, with the simulated latency and faults
  kPut = 2,    // compare-and-set upload, with the simulated latency and faults
  kCheck = 3,  // download for the final check: no latency, no faults
};
enum class StoreStatus : std::uint8_t { kOk = 0, kConflict = 1, kBadRequest = 2 };

struct SaveRequest {
  std::uint64_t request_id = 0;
  std::uint32_t user = 0;
};
struct SaveReply {
  std::uint64_t request_id = 0;
  SaveStatus status = SaveStatus::kOk;
};
struct StoreRequest {
  StoreOp op = StoreOp::kGet;
  std::uint32_t user = 0;
  std::uint64_t expected_version = 0;
  std::string_view blob;  // kPut
};
struct StoreResponse {
  StoreStatus status = StoreStatus::kOk;
  std::uint64_t version = 0;
  std::string_view blob;
};

// The blob's header; the payload after it is opaque save data.
struct BlobHeader {
  std::uint64_t counter = 0;
  std::uint64_t last_request_id = 0;
};
inline constexpr std::size_t kBlobHeaderSize = 16;

// Encoders append one whole frame to `out`.
void AppendSaveRequest(const SaveRequest& request, std::string* out);
void AppendSaveReply(const SaveReply& reply, std::string* out);
void AppendStoreRequest(const StoreRequest& request, std::string* out);
void AppendStoreResponse(const StoreResponse& response, std::string* out);
// Decoders take a frame body; nullopt if malformed.
std::optional<SaveRequest> ParseSaveRequest(std::string_view body);
std::optional<SaveReply> ParseSaveReply(std::string_view body);
std::optional<StoreRequest> ParseStoreRequest(std::string_view body);
std::optional<StoreResponse> ParseStoreResponse(std::string_view body);

// The header of a blob; a blob shorter than the header (never saved) reads as zeros.
BlobHeader ReadBlobHeader(std::string_view blob);
// "Change the blob": the next version of `old_blob` after applying request `request_id`:
// counter + 1, last_request_id = request_id, and the payload (`payload_size` bytes; a new
// blob gets one) rewritten by a mixing pass repeated until `cpu_cost` of CPU time is spent.
std::string ChangeBlob(std::string_view old_blob, std::uint64_t request_id,
                       std::size_t payload_size, std::chrono::nanoseconds cpu_cost);

// A receive buffer that cuts a byte stream into frames. Not thread-safe.
class FrameBuffer {
 public:
  // Free space at the end, at least `min_free` bytes (compacts or grows); fill, then Commit.
  std::span<char> WritableTail(std::size_t min_free = 4096);
  void Commit(std::size_t bytes) { end_ += bytes; }
  // The next complete frame's body, consumed; valid until the next WritableTail. nullopt if
  // no complete frame is buffered (or the stream is corrupt: see Corrupt()).
  std::optional<std::string_view> NextFrame();
  // A frame header announced more than kMaxFrame bytes.
  bool Corrupt() const { return corrupt_; }
  bool Empty() const { return begin_ == end_; }

 private:
  std::vector<char> data_ = std::vector<char>(8192);
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool corrupt_ = false;
};

// Receives into `in` all that the socket `fd` has buffered, without waiting (recv with
// MSG_DONTWAIT until it would block; an interrupted recv is retried). False when the peer
// closed the stream or the socket failed. For the epoll loops (load.cc, updater_server.cc).
bool ReceiveAvailable(int fd, FrameBuffer& in);

}  // namespace fairsched::savegame

#endif  // FAIRSCHED_EXAMPLES_SAVEGAME_PROTOCOL_H_
