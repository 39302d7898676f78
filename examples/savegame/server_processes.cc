// Starting, stopping and reaping the savegame server processes (server_processes.h).
#include "examples/savegame/server_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace fairsched::savegame {
namespace {

using Clock = std::chrono::steady_clock;

// One line from `fd` (without the newline), read a byte at a time so nothing after it is
// consumed; false at the end of the stream, on an error or when `deadline` passes.
bool ReadLine(int fd, Clock::time_point deadline, std::string* line) {
  line->clear();
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char c = 0;
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    *line += c;
  }
}

// waitpid until `pid` ends or `deadline` passes; true when reaped.
bool ReapBy(pid_t pid, Clock::time_point deadline, int* status) {
  while (true) {
    const pid_t done = ::waitpid(pid, status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return false;
    if (Clock::now() >= deadline) return false;
    ::usleep(2000);
  }
}

}  // namespace

std::string SelfExecutable() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  return std::string(path, static_cast<std::size_t>(n));
}

ServerProcesses::~ServerProcesses() { KillAll(); }

void ServerProcesses::KillAll() {
  for (Child& child : children_) {
    if (child.to_child >= 0) ::close(child.to_child);
    if (child.from_child >= 0) ::close(child.from_child);
    if (child.pid > 0) {
      ::kill(child.pid, SIGKILL);
      int status = 0;
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  children_.clear();
  addresses_.clear();
}

bool ServerProcesses::Start(const std::string& binary, const std::vector<std::string>& args,
                            int count, std::chrono::milliseconds start_timeout,
                            std::string* error) {
  const pid_t parent = ::getpid();
  for (int i = 0; i < count; ++i) {
    // argv, built before the fork: the child only calls async-signal-safe functions.
    std::vector<std::string> all = {binary};
    all.insert(all.end(), args.begin(), args.end());
    all.push_back("--server_index=" + std::to_string(i));
    std::vector<char*> argv;
    for (std::string& arg : all) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int in_pipe[2], out_pipe[2];  // [0] read end, [1] write end
    if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
      *error = std::string("pipe: ") + std::strerror(errno);
      KillAll();
      return false;
    }
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
      *error = std::string("pipe: ") + std::strerror(errno);
      ::close(in_pipe[0]);
      ::close(in_pipe[1]);
      KillAll();
      return false;
    }
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      // The child: stdin and stdout become the pipes (dup2 clears O_CLOEXEC on the copies),
      // stderr stays the parent's; it dies with the thread that forked it.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before the prctl
      ::dup2(in_pipe[0], 0);
      ::dup2(out_pipe[1], 1);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(in_pipe[0]);
    ::close(out_pipe[1]);
    if (pid < 0) {
      *error = std::string("fork: ") + std::strerror(errno);
      ::close(in_pipe[1]);
      ::close(out_pipe[0]);
      KillAll();
      return false;
    }
    children_.push_back({pid, in_pipe[1], out_pipe[0]});
  }
  const Clock::time_point deadline = Clock::now() + start_timeout;
  for (Child& child : children_) {
    std::string line;
    // "listening 127.0.0.1:PORT"
    if (!ReadLine(child.from_child, deadline, &line) || line.rfind("listening ", 0) != 0) {
      *error = "server process " + std::to_string(child.pid) +
               " did not report its address (got \"" + line + "\")";
      KillAll();
      return false;
    }
    IoResult<SocketAddress> address = SocketAddress::Parse(line.substr(10));
    if (!address.ok()) {
      *error = "server process " + std::to_string(child.pid) + ": bad address " + line;
      KillAll();
      return false;
    }
    addresses_.push_back(address.value());
  }
  return true;
}

bool ServerProcesses::Stop(std::vector<ServerProcessStats>* stats, std::string* error) {
  bool clean = true;
  // Every child first gets its stop (the end of its stdin), so they stop together.
  for (Child& child : children_) {
    ::close(child.to_child);
    child.to_child = -1;
  }
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
  for (Child& child : children_) {
    std::string line;
    ServerProcessStats child_stats;
    // "stats FENCED FAULTS CPU_SECONDS"
    const bool got = ReadLine(child.from_child, deadline, &line) && line.rfind("stats ", 0) == 0;
    if (got) {
      std::istringstream fields(line.substr(6));
      fields >> child_stats.fenced_uploads >> child_stats.faults_injected >>
          child_stats.cpu_seconds;
    }
    ::close(child.from_child);
    child.from_child = -1;
    int status = 0;
    if (!ReapBy(child.pid, deadline, &status)) {
      ::kill(child.pid, SIGKILL);
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
      status = -1;
    }
    child.pid = -1;
    if (!got || status != 0) {
      clean = false;
      *error += "server process did not stop cleanly (wait status " + std::to_string(status) +
                ", last line \"" + line + "\"); ";
    }
    stats->push_back(child_stats);
  }
  children_.clear();
  return clean;
}

}  // namespace fairsched::savegame
