// Replays every committed input of every fuzz target (tests/fuzz) in the normal build: the
// seed corpus (corpus/<target>/) and the crashes found so far (regressions/<target>/, each
// a test that the fixed code passes). A target aborts on a violated property, which fails
// this test with the target's message; the file name being replayed is printed first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

namespace fairsched::fuzz {
namespace {

namespace fs = std::filesystem;

// The files under tests/fuzz/<folder>/<target>/ in the test's runfiles, sorted.
std::vector<fs::path> InputsOf(const std::string& folder, const std::string& target) {
  const char* runfiles = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  EXPECT_NE(runfiles, nullptr);
  EXPECT_NE(workspace, nullptr);
  std::vector<fs::path> files;
  if (runfiles == nullptr || workspace == nullptr) return files;
  const fs::path dir = fs::path(runfiles) / workspace / "tests/fuzz" / folder / target;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename() != "README.md") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Feeds every corpus and regression file of `target`; returns how many corpus files ran.
std::size_t Replay(const std::string& target) {
  const auto found = FuzzTargets().find(target);
  if (found == FuzzTargets().end()) {
    ADD_FAILURE() << "no fuzz target named " << target;
    return 0;
  }
  std::size_t corpus = 0;
  for (const std::string folder : {"corpus", "regressions"}) {
    for (const fs::path& file : InputsOf(folder, target)) {
      std::ifstream in(file, std::ios::binary);
      const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replaying %s\n", file.c_str());
      found->second(input);
      if (folder == std::string("corpus")) ++corpus;
    }
  }
  return corpus;
}

TEST(FuzzReplayTest, EveryTargetIsReplayed) {
  EXPECT_EQ(FuzzTargets().size(), 7u) << "a target without a test below";
}

// Each target has a seed corpus, and every input of it holds the target's properties.
TEST(FuzzReplayTest, BufferedStream) { EXPECT_GT(Replay("buffered_stream"), 0u); }
TEST(FuzzReplayTest, KvServer) { EXPECT_GT(Replay("kv_server"), 0u); }
TEST(FuzzReplayTest, SavegameProtocol) { EXPECT_GT(Replay("savegame_protocol"), 0u); }
TEST(FuzzReplayTest, EchoServer) { EXPECT_GT(Replay("echo_server"), 0u); }
TEST(FuzzReplayTest, TlsHandshake) { EXPECT_GT(Replay("tls_handshake"), 0u); }
TEST(FuzzReplayTest, SocketAddress) { EXPECT_GT(Replay("socket_address"), 0u); }
TEST(FuzzReplayTest, Resp) { EXPECT_GT(Replay("resp"), 0u); }

}  // namespace
}  // namespace fairsched::fuzz
