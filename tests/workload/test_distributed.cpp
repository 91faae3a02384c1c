// Data-parallel tsum-train end to end: real processes, one per rank, meeting on the loopback; real
// Fashion-MNIST. Accuracy of ring, ps and ps async against one rank with the same global batch and
// epochs; a rank killed (SIGKILL) or hung (SIGSTOP) mid-training ends every other rank with an error
// naming it. No timing assertions: the generous limits below only keep a broken build from hanging.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.h"

extern char** environ;

using namespace tsum::workload::testing;

namespace {

// A port free on the loopback now, for rank 0 to listen on once it has started. Taken below the kernel's
// ephemeral range (ip_local_port_range), so that no socket the other suites bind to port 0 or connect from can
// take it in the seconds before rank 0 listens (a kernel pick, closed again, could be handed out again).
int free_port() {
  int low = 32768;
  if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> low;
  low = std::max(low, 2048);
  std::mt19937 pick(static_cast<unsigned>(::getpid()) ^
                    static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::uniform_int_distribution<int> ports(1024 + (low - 1024) / 2, low - 1);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = ports(pick);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free) return port;
  }
  FAIL("no free port below the ephemeral range " << low);
  return 0;
}

std::string text_of(const std::string& path) {
  const auto bytes = read_all(path);
  return {bytes.begin(), bytes.end()};
}

// One tsum-train process with stdout and stderr in files.
class Proc {
 public:
  Proc(const TempDir& dir, const std::string& name, const std::vector<std::string>& args)
      : out_(dir.file(name + ".out")), err_(dir.file(name + ".err")) {
    std::vector<std::string> argv = {TSUM_TRAIN_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(posix_spawn(&pid_, cargv[0], &fa, nullptr, cargv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Proc() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  bool running() const { return status_ < 0; }

  // Exit code, or -SIGNAL; -1000 if still running after `limit` (then killed).
  int wait(std::chrono::seconds limit = std::chrono::seconds(240)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (running()) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        return -1000;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return status_ >= 1000 ? -(status_ - 1000) : status_;
  }

  void signal(int sig) const { ::kill(pid_, sig); }
  std::string out() const { return text_of(out_); }
  std::string err() const { return text_of(err_); }

  std::vector<nlohmann::json> events() const {
    std::vector<nlohmann::json> events;
    std::istringstream in(out());
    for (std::string line; std::getline(in, line);) events.push_back(nlohmann::json::parse(line));
    return events;
  }

  // Waits until the process has printed an event named `name` (false if it exited first).
  bool wait_for_event(const std::string& name) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    while (std::chrono::steady_clock::now() < deadline) {
      if (out().find("{\"event\":\"" + name + "\"") != std::string::npos) return true;
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

 private:
  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
  int status_ = -1;
};

// The training flags every accuracy run shares: mnist_mlp on 3000 Fashion-MNIST images, the whole
// test set, 8 epochs of global batch 120 (divisible by 1, 2 and 3 ranks), one thread per rank.
std::vector<std::string> common_flags(const TempDir& dir, const std::string& name) {
  return {"--model", "mnist_mlp", "--data", TSUM_FASHION_MNIST_DIR, "--limit", "3000",
          "--epochs", "8", "--batch", "120", "--threads", "1", "--checkpoint",
          dir.file(name + ".pt")};
}

struct Run {
  std::vector<std::unique_ptr<Proc>> ranks;
};

// Starts `world` ranks of `dist_flags` (world 1: a plain run).
Run start_ranks(const TempDir& dir, const std::string& name, int world,
                const std::vector<std::string>& dist_flags, std::vector<std::string> flags) {
  Run run;
  const std::string master = "127.0.0.1:" + std::to_string(free_port());
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> args = flags;
    if (world > 1) {
      args.insert(args.end(), {"--world-size", std::to_string(world), "--rank", std::to_string(r),
                               "--master", master});
      args.insert(args.end(), dist_flags.begin(), dist_flags.end());
    }
    run.ranks.push_back(std::make_unique<Proc>(dir, name + "-" + std::to_string(r), args));
  }
  return run;
}

const nlohmann::json* find_event(const std::vector<nlohmann::json>& events, const std::string& name) {
  for (const auto& e : events) {
    if (e["event"] == name) return &e;
  }
  return nullptr;
}

// Runs to completion; returns rank 0's test accuracy after checking every rank's events.
double accuracy_of(const TempDir& dir, const std::string& name, int world,
                   const std::vector<std::string>& dist_flags) {
  Run run = start_ranks(dir, name, world, dist_flags, common_flags(dir, name));
  for (int r = 0; r < world; ++r) {
    auto& p = *run.ranks[static_cast<std::size_t>(r)];
    const int code = p.wait();
    INFO(name << " rank " << r << " stderr: " << p.err());
    REQUIRE(code == 0);
    const auto events = p.events();
    const auto* learn_end = find_event(events, "learn_end");
    REQUIRE(learn_end != nullptr);
    CHECK(learn_end->at("images_per_s").get<double>() > 0.0);
    if (world > 1) {
      for (const auto& e : events) CHECK(e["rank"] == r);
      CHECK(learn_end->at("world_size") == world);
      CHECK(learn_end->at("comm_seconds").get<double>() >= 0.0);
      CHECK(learn_end->at("bytes_sent").get<std::int64_t>() > 0);
      CHECK(learn_end->at("bytes_sent_all").get<std::int64_t>() >= learn_end->at("bytes_sent"));
      // Only rank 0 verifies and saves.
      CHECK((find_event(events, "verify") != nullptr) == (r == 0));
      CHECK((find_event(events, "saved") != nullptr) == (r == 0));
    }
  }
  const auto events = run.ranks[0]->events();
  const auto* verify = find_event(events, "verify");
  REQUIRE(verify != nullptr);
  CHECK(verify->at("test_images") == 10000);
  MESSAGE(name << ": test accuracy " << verify->at("test_accuracy").get<double>());
  return verify->at("test_accuracy").get<double>();
}

}  // namespace

TEST_CASE("dist: bad flag combinations exit 2 with a clear message") {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--world-size", "2", "--rank", "2", "--master", "127.0.0.1:1"}, "outside the world"},
      {{"--world-size", "2", "--rank", "1"}, "needs --master HOST:PORT"},
      {{"--world-size", "3", "--rank", "0", "--master", "127.0.0.1:1", "--batch", "128"},
       "--batch 128 is not divisible by --world-size 3"},
      {{"--world-size", "2", "--master", "127.0.0.1:1", "--ps-async"}, "--ps-async needs --dist ps"},
      {{"--ps-async", "--dist", "ps"}, "--ps-async needs --world-size 2 or more"},
      {{"--world-size", "2", "--master", "nohostport"}, "--master: expected HOST:PORT"},
      {{"--world-size", "2", "--master", "h:70000"}, "--master"},
      {{"--world-size", "2", "--master", "h:1", "--dist", "allreduce"}, "--dist: expected ring or ps"},
      {{"--world-size", "0"}, "--world-size"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--data", TSUM_FASHION_MNIST_DIR, "--limit", "10"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Proc p(dir, "bad", args);
    CAPTURE(c.message);
    CHECK(p.wait() == 2);
    CHECK(p.err().find(c.message) != std::string::npos);
    CHECK(p.out().empty());
  }
}

TEST_CASE("dist: ring, ps and ps async on 2 and 3 ranks match one rank's accuracy within a point") {
  TempDir dir;
  const double single = accuracy_of(dir, "single", 1, {});
  CHECK(single > 0.7);
  const std::vector<std::pair<std::string, std::vector<std::string>>> modes = {
      {"ring", {"--dist", "ring"}}, {"ps", {"--dist", "ps"}}, {"ps-async", {"--dist", "ps", "--ps-async"}}};
  for (const auto& [mode, flags] : modes) {
    for (const int world : {2, 3}) {
      const std::string name = mode + "-" + std::to_string(world);
      CAPTURE(name);
      const double acc = accuracy_of(dir, name, world, flags);
      // ring and ps compute one rank's steps (other dropout masks, float order): within a point.
      // ps async applies stale gradients (about N-2 updates behind) in an order set by timing, so
      // it is not deterministic: 3 ranks, 16 runs on a quiet AMD EPYC (2026-11-27) ended 0.7495 to
      // 0.8012 against one rank's 0.7977, 4.8 points below at worst (the 2 points allowed before
      // failed about one run in three). Allow 6; that every worker's gradient is applied, once,
      // is checked exactly by the staleness case's update count.
      CHECK(std::abs(acc - single) <= (mode == "ps-async" ? 0.06 : 0.01));
    }
  }
}

TEST_CASE("dist: ps async reports staleness on rank 0") {
  TempDir dir;
  Run run = start_ranks(dir, "stale", 3, {"--dist", "ps", "--ps-async"}, common_flags(dir, "stale"));
  for (auto& p : run.ranks) {
    INFO(p->err());
    REQUIRE(p->wait() == 0);
  }
  const auto events = run.ranks[0]->events();
  const auto* learn_end = find_event(events, "learn_end");
  REQUIRE(learn_end != nullptr);
  CHECK(learn_end->at("dist") == "ps-async");
  // 3000 images in 2 slices of 1500, batches of 120: 13 updates per worker per epoch.
  CHECK(learn_end->at("updates") == 8 * 2 * 13);
  CHECK(learn_end->at("staleness_mean").get<double>() >= 0.0);
  CHECK(learn_end->at("staleness_max").get<std::int64_t>() >= 0);
  CHECK(learn_end->at("staleness_max").get<std::int64_t>() <= 2 * 13 * 8);
  CHECK(find_event(run.ranks[1]->events(), "learn_end")->count("staleness_mean") == 0);
}

namespace {

// Starts 3 ranks training for long, waits for rank 0's first epoch, sends `sig` to `victim`, and
// checks that every other rank exits non-zero with an error naming the victim.
void fault_case(const std::string& name, const std::vector<std::string>& dist, int victim, int sig,
                const std::string& what) {
  TempDir dir;
  std::vector<std::string> flags = {"--model", "mnist_mlp", "--data", TSUM_FASHION_MNIST_DIR,
                                    "--limit", "1200", "--epochs", "1000", "--batch", "60",
                                    "--threads", "1", "--dist-timeout", "15", "--checkpoint",
                                    dir.file("m.pt")};
  Run run = start_ranks(dir, name, 3, dist, flags);
  auto& watched = *run.ranks[victim == 0 ? 1 : 0];
  const bool epoch = watched.wait_for_event("epoch");
  INFO(name << ": the watched rank's stderr: " << watched.err());
  REQUIRE(epoch);
  run.ranks[static_cast<std::size_t>(victim)]->signal(sig);
  for (int r = 0; r < 3; ++r) {
    if (r == victim) continue;
    auto& p = *run.ranks[static_cast<std::size_t>(r)];
    const int code = p.wait();
    const std::string err = p.err();
    INFO(name << " rank " << r << " stderr: " << err);
    CHECK(code == 1);
    CHECK(err.find("rank " + std::to_string(victim) + " " + what) != std::string::npos);
  }
  run.ranks[static_cast<std::size_t>(victim)]->signal(SIGKILL);
}

}  // namespace

TEST_CASE("dist: a killed rank ends every other rank, named") {
  SUBCASE("ring, rank 1 killed") { fault_case("kill-ring", {"--dist", "ring"}, 1, SIGKILL, "exited"); }
  SUBCASE("ps, rank 0 killed") { fault_case("kill-ps", {"--dist", "ps"}, 0, SIGKILL, "exited"); }
}

TEST_CASE("dist: a hung rank ends every other rank within the timeout, named") {
  SUBCASE("ring, rank 2 stopped") {
    fault_case("stop-ring", {"--dist", "ring"}, 2, SIGSTOP, "stopped answering");
  }
  SUBCASE("ps async, rank 1 stopped") {
    fault_case("stop-async", {"--dist", "ps", "--ps-async"}, 1, SIGSTOP, "stopped answering");
  }
}
