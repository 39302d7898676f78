// The private redis-server's launcher (redis_server_process.h): fork/exec with
// PR_SET_PDEATHSIG, a PING over a plain blocking socket to know it is ready, signals by PID.
#include "examples/redis/redis_server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fairsched::redis {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// A port nobody listens on now (the kernel's pick for 127.0.0.1:0).
std::uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  std::uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

// One PING on a fresh blocking connection: true on "+PONG".
bool Pings(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval timeout{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  bool pong = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const char ping[] = "*1\r\n$4\r\nPING\r\n";
    char answer[64] = {};
    if (send(fd, ping, sizeof(ping) - 1, MSG_NOSIGNAL) == sizeof(ping) - 1) {
      const ssize_t n = recv(fd, answer, sizeof(answer) - 1, 0);
      pong = n >= 5 && std::string(answer, 5) == "+PONG";
    }
  }
  close(fd);
  return pong;
}

std::string LogTail(const std::string& dir) {
  std::ifstream log(dir + "/redis.log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(log, line);) lines.push_back(line);
  std::string tail;
  for (std::size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) {
    tail += "\n  " + lines[i];
  }
  return tail;
}

}  // namespace

std::string FindRedisServer() {
  if (const char* env = std::getenv("REDIS_SERVER"); env != nullptr && Executable(env)) return env;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (!dir.empty() && Executable(dir + "/redis-server")) return dir + "/redis-server";
    }
  }
  for (const char* path :
       {"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"}) {
    if (Executable(path)) return path;
  }
  return "";
}

std::string MissingMessage() {
  return "redis-server is not installed: apt-get install -y redis-server (or "
         "tools/redis/private_redis.sh install)";
}

SocketAddress RedisServerProcess::address() const {
  return SocketAddress::FromHostPort("127.0.0.1", port_).value();
}

bool RedisServerProcess::Start(const std::string& dir, std::string* error) {
  Stop();
  binary_ = FindRedisServer();
  if (binary_.empty()) {
    *error = MissingMessage();
    return false;
  }
  dir_ = dir;
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreePort();
    if (port_ != 0 && Launch(error)) return true;
  }
  return false;
}

bool RedisServerProcess::Restart(std::string* error) {
  Stop();
  return Launch(error);
}

bool RedisServerProcess::Launch(std::string* error) {
  const std::string port = std::to_string(port_);
  std::vector<std::string> args = {
      binary_,
      "--bind",
      "127.0.0.1",
      "--port",
      port,
      "--dir",
      dir_,
      "--appendonly",
      "yes",
      // Every write reaches the AOF before its answer (see redis_server_process.h).
      "--appendfsync",
      "always",
      "--save",
      "",
      "--daemonize",
      "no",
      "--logfile",
      dir_ + "/redis.log",
      "--protected-mode",
      "yes",
  };
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    *error = "fork failed";
    return false;
  }
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died already
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 1);
      dup2(null, 2);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  const auto give_up = steady_clock::now() + std::chrono::seconds(10);
  while (steady_clock::now() < give_up) {
    if (Pings(port_)) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {  // it exited: port taken, bad config
      pid_ = -1;
      *error = "redis-server on port " + port + " exited at start:" + LogTail(dir_);
      return false;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  *error = "redis-server on port " + port + " did not answer PING within 10 s:" + LogTail(dir_);
  Kill();
  return false;
}

void RedisServerProcess::EndWith(int signal) {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);  // a paused server cannot act on SIGTERM
  kill(pid_, signal);
  const auto give_up = steady_clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (steady_clock::now() >= give_up) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  pid_ = -1;
}

void RedisServerProcess::Stop() { EndWith(SIGTERM); }
void RedisServerProcess::Kill() { EndWith(SIGKILL); }
void RedisServerProcess::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}
void RedisServerProcess::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

}  // namespace fairsched::redis
