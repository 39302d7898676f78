// Encoding, decoding and the blob change of the savegame protocol (protocol.h).
#include "examples/savegame/protocol.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace fairsched::savegame {
namespace {

template <typename T>
void Put(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts only (x86-64, arm64)
  out->append(bytes, sizeof(T));
}

template <typename T>
bool Take(std::string_view* in, T* value) {
  if (in->size() < sizeof(T)) return false;
  std::memcpy(value, in->data(), sizeof(T));
  in->remove_prefix(sizeof(T));
  return true;
}

// Reserves the length word; FinishFrame fills it in.
std::size_t BeginFrame(std::string* out) {
  const std::size_t at = out->size();
  Put<std::uint32_t>(out, 0);
  return at;
}
void FinishFrame(std::string* out, std::size_t at) {
  const std::uint32_t length = static_cast<std::uint32_t>(out->size() - at - 4);
  std::memcpy(out->data() + at, &length, 4);
}

}  // namespace

const char* ToString(SaveStatus status) {
  switch (status) {
    case SaveStatus::kOk:
      return "ok";
    case SaveStatus::kLockTimeout:
      return "lock_timeout";
    case SaveStatus::kStoreUnavailable:
      return "store_unavailable";
    case SaveStatus::kDownloadFailed:
      return "download_failed";
    case SaveStatus::kUploadNotApplied:
      return "upload_not_applied";
    case SaveStatus::kConflict:
      return "conflict";
    case SaveStatus::kUnknown:
      return "unknown";
    case SaveStatus::kShuttingDown:
      return "shutting_down";
    case SaveStatus::kBadRequest:
      return "bad_request";
  }
  return "?";
}

void AppendSaveRequest(const SaveRequest& request, std::string* out) {
  const std::size_t at = BeginFrame(out);
  Put<std::uint8_t>(out, kSaveRequest);
  Put<std::uint64_t>(out, request.request_id);
  Put<std::uint32_t>(out, request.user);
  FinishFrame(out, at);
}

void AppendSaveReply(const SaveReply& reply, std::string* out) {
  const std::size_t at = BeginFrame(out);
  Put<std::uint64_t>(out, reply.request_id);
  Put<std::uint8_t>(out, static_cast<std::uint8_t>(reply.status));
  FinishFrame(out, at);
}

void AppendStoreRequest(const StoreRequest& request, std::string* out) {
  const std::size_t at = BeginFrame(out);
  Put<std::uint8_t>(out, static_cast<std::uint8_t>(request.op));
  Put<std::uint32_t>(out, request.user);
  Put<std::uint64_t>(out, request.expected_version);
  out->append(request.blob);
  FinishFrame(out, at);
}

void AppendStoreResponse(const StoreResponse& response, std::string* out) {
  const std::size_t at = BeginFrame(out);
  Put<std::uint8_t>(out, static_cast<std::uint8_t>(response.status));
  Put<std::uint64_t>(out, response.version);
  out->append(response.blob);
  FinishFrame(out, at);
}

std::optional<SaveRequest> ParseSaveRequest(std::string_view body) {
  std::uint8_t kind = 0;
  SaveRequest request;
  if (!Take(&body, &kind) || kind != kSaveRequest || !Take(&body, &request.request_id) ||
      !Take(&body, &request.user) || !body.empty()) {
    return std::nullopt;
  }
  return request;
}

std::optional<SaveReply> ParseSaveReply(std::string_view body) {
  SaveReply reply;
  std::uint8_t status = 0;
  if (!Take(&body, &reply.request_id) || !Take(&body, &status) || !body.empty() ||
      status >= kSaveStatusCount) {
    return std::nullopt;
  }
  reply.status = static_cast<SaveStatus>(status);
  return reply;
}

std::optional<StoreRequest> ParseStoreRequest(std::string_view body) {
  StoreRequest request;
  std::uint8_t op = 0;
  if (!Take(&body, &op) || op < 1 || op > 3 || !Take(&body, &request.user) ||
      !Take(&body, &request.expected_version)) {
    return std::nullopt;
  }
  request.op = static_cast<StoreOp>(op);
  request.blob = body;
  return request;
}

std::optional<StoreResponse> ParseStoreResponse(std::string_view body) {
  StoreResponse response;
  std::uint8_t status = 0;
  if (!Take(&body, &status) || status > 2 || !Take(&body, &response.version)) {
    return std::nullopt;
  }
  response.status = static_cast<StoreStatus>(status);
  response.blob = body;
  return response;
}

BlobHeader ReadBlobHeader(std::string_view blob) {
  BlobHeader header;
  if (blob.size() < kBlobHeaderSize) return header;
  std::memcpy(&header.counter, blob.data(), 8);
  std::memcpy(&header.last_request_id, blob.data() + 8, 8);
  return header;
}

std::string ChangeBlob(std::string_view old_blob, std::uint64_t request_id,
                       std::size_t payload_size, std::chrono::nanoseconds cpu_cost) {
  const BlobHeader old_header = ReadBlobHeader(old_blob);
  std::string blob(kBlobHeaderSize, '\0');
  const std::uint64_t counter = old_header.counter + 1;
  std::memcpy(blob.data(), &counter, 8);
  std::memcpy(blob.data() + 8, &request_id, 8);
  if (old_blob.size() > kBlobHeaderSize) {
    blob.append(old_blob.substr(kBlobHeaderSize));
  } else {
    blob.append(payload_size, '\0');
  }
  // The CPU work: rewrite the payload with a running hash until cpu_cost has passed (at
  // least one pass). Time-based, so the cost per request is the same in every build.
  std::uint64_t hash = 1469598103934665603ull ^ request_id;
  const auto until = std::chrono::steady_clock::now() + cpu_cost;
  do {
    for (std::size_t i = kBlobHeaderSize; i < blob.size(); ++i) {
      hash = (hash ^ static_cast<unsigned char>(blob[i])) * 1099511628211ull;
      blob[i] = static_cast<char>(hash >> 56);
    }
  } while (std::chrono::steady_clock::now() < until);
  return blob;
}

std::span<char> FrameBuffer::WritableTail(std::size_t min_free) {
  if (data_.size() - end_ < min_free) {
    if (begin_ > 0) {
      std::copy(data_.begin() + static_cast<std::ptrdiff_t>(begin_),
                data_.begin() + static_cast<std::ptrdiff_t>(end_), data_.begin());
      end_ -= begin_;
      begin_ = 0;
    }
    if (data_.size() - end_ < min_free) data_.resize(end_ + min_free);
  }
  return std::span<char>(data_.data() + end_, data_.size() - end_);
}

std::optional<std::string_view> FrameBuffer::NextFrame() {
  if (corrupt_ || end_ - begin_ < 4) return std::nullopt;
  std::uint32_t length = 0;
  std::memcpy(&length, data_.data() + begin_, 4);
  if (length > kMaxFrame) {
    corrupt_ = true;
    return std::nullopt;
  }
  if (end_ - begin_ < 4 + std::size_t{length}) {
    // Make sure the whole frame fits once it arrives.
    if (data_.size() - begin_ < 4 + std::size_t{length}) WritableTail(4 + length - (end_ - begin_));
    return std::nullopt;
  }
  const std::string_view body(data_.data() + begin_ + 4, length);
  begin_ += 4 + length;
  if (begin_ == end_) begin_ = end_ = 0;  // body stays valid: nothing is written until Commit
  return body;
}

bool ReceiveAvailable(int fd, FrameBuffer& in) {
  while (true) {
    std::span<char> tail = in.WritableTail();
    const ssize_t n = ::recv(fd, tail.data(), tail.size(), MSG_DONTWAIT);
    if (n > 0) {
      in.Commit(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

}  // namespace fairsched::savegame
