// Replays inputs through a libFuzzer target without libFuzzer, the way libFuzzer targets are replayed in ordinary
// builds: every file named on the command line, and every file in each folder named (sorted), goes through
// LLVMFuzzerTestOneInput once. The main build links each target in tests/fuzz with this main (fuzz_replay_<name>),
// and CTest's fuzz_replay runs them over the committed seeds (tests/fuzz/corpus/<name>/) and kept findings
// (tests/fuzz/regressions/<name>/). A crash, a trap or an uncaught exception fails the run; the input it was on is
// the last one printed. Fuzzing itself (clang, libFuzzer, sanitizers) is bench/fuzz.sh and `make fuzz`.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::is_directory(p)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(p)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "fuzz replay: no such file or folder: %s\n", argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz replay: no input to replay\n");
    return 2;
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("%s (%zu bytes)\n", p.c_str(), bytes.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz replay: %zu inputs replayed, none failed\n", inputs.size());
  return 0;
}
