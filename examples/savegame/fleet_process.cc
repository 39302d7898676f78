// The client fleet in a child process (fleet_process.h).
#include "examples/savegame/fleet_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace fairsched::savegame {
namespace {

// Appends plain values, vectors of plain values and strings, each vector and string
// preceded by its length; the reader takes them in the same order (same machine, same
// build: no byte-order or layout concerns).
class Writer {
 public:
  template <typename T>
  void Value(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <typename T>
  void Vector(const std::vector<T>& values) {
    static_assert(std::is_trivially_copyable_v<T>);
    Value<std::uint64_t>(values.size());
    bytes_.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  void String(const std::string& text) {
    Value<std::uint64_t>(text.size());
    bytes_ += text;
  }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  bool Value(T* value) {
    if (bytes_.size() - at_ < sizeof(T)) return false;
    std::memcpy(value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  template <typename T>
  bool Vector(std::vector<T>* values) {
    std::uint64_t size = 0;
    if (!Value(&size) || size > (bytes_.size() - at_) / sizeof(T)) return false;
    values->resize(size);
    std::memcpy(values->data(), bytes_.data() + at_, size * sizeof(T));
    at_ += size * sizeof(T);
    return true;
  }
  bool String(std::string* text) {
    std::uint64_t size = 0;
    if (!Value(&size) || size > bytes_.size() - at_) return false;
    text->assign(bytes_, at_, size);
    at_ += size;
    return true;
  }
  bool AtEnd() const { return at_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  std::size_t at_ = 0;
};

bool WriteAll(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string bytes;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return bytes;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

std::string SerializeFleetResult(const FleetResult& r) {
  Writer out;
  out.Value(r.seconds);
  out.Value(r.open_loop);
  out.Value(r.offered_rate);
  out.Value(r.arrivals);
  out.Value(r.unsent);
  out.Value(r.max_backlog);
  out.Value(r.sent);
  out.Value(r.replies);
  out.Value(r.no_reply);
  out.Value(r.connect_failures);
  out.Vector(r.acked);
  out.Vector(r.unknown);
  out.Vector(r.ok_latency_us);
  out.Vector(r.reply_latency_us);
  out.Vector(r.requests);
  out.Value<std::uint64_t>(r.client_threads.size());
  for (const ThreadSample& thread : r.client_threads) {
    out.Value(thread.tid);
    out.String(thread.name);
    out.Value(thread.times);
  }
  return out.Take();
}

std::optional<FleetResult> ParseFleetResult(const std::string& bytes) {
  Reader in(bytes);
  FleetResult r;
  std::uint64_t threads = 0;
  const bool ok = in.Value(&r.seconds) && in.Value(&r.open_loop) && in.Value(&r.offered_rate) &&
                  in.Value(&r.arrivals) && in.Value(&r.unsent) && in.Value(&r.max_backlog) &&
                  in.Value(&r.sent) && in.Value(&r.replies) && in.Value(&r.no_reply) &&
                  in.Value(&r.connect_failures) && in.Vector(&r.acked) && in.Vector(&r.unknown) &&
                  in.Vector(&r.ok_latency_us) && in.Vector(&r.reply_latency_us) &&
                  in.Vector(&r.requests) && in.Value(&threads);
  if (!ok) return std::nullopt;
  for (std::uint64_t i = 0; i < threads; ++i) {
    ThreadSample thread;
    if (!in.Value(&thread.tid) || !in.String(&thread.name) || !in.Value(&thread.times)) {
      return std::nullopt;
    }
    r.client_threads.push_back(std::move(thread));
  }
  if (!in.AtEnd()) return std::nullopt;
  return r;
}

FleetResult RunFleetInChildProcess(const SocketAddress& server, const FleetOptions& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "savegame: cannot create a pipe for the fleet process: %s\n",
                 std::strerror(errno));
    std::exit(1);
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "savegame: cannot fork the fleet process: %s\n", std::strerror(errno));
    std::exit(1);
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    FleetOptions quiet = options;
    quiet.progress = nullptr;
    const bool sent = WriteAll(pipe_fds[1], SerializeFleetResult(RunFleet(server, quiet)));
    ::_exit(sent ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  const std::string bytes = ReadAll(pipe_fds[0]);
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::optional<FleetResult> result = ParseFleetResult(bytes);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !result) {
    std::fprintf(stderr, "savegame: the fleet process failed (wait status %d, %zu bytes)\n",
                 status, bytes.size());
    std::exit(1);
  }
  return *std::move(result);
}

}  // namespace fairsched::savegame
