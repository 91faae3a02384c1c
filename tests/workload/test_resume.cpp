// tsum-train stopped by SIGTERM in the middle of an epoch writes a checkpoint and exits 75; resumed from it in
// a new process, it finishes with the same numbers as a run that never stopped (CPU, one thread). So do the two
// ranks of a ring run when one of them is told to stop.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <string>
#include <vector>

#include "temp_dir.h"

using namespace tsum::workload::testing;
using nlohmann::json;

namespace {

// A tsum-train process whose events are read line by line as they come.
class Trainer {
 public:
  Trainer(const std::vector<std::string>& args, const std::string& err_path) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      if (std::FILE* f = std::freopen(err_path.c_str(), "w", stderr); f == nullptr) _exit(126);
      std::vector<char*> argv{const_cast<char*>(TSUM_TRAIN_BIN)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(TSUM_TRAIN_BIN, argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
  }
  ~Trainer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      wait();
    }
    if (out_) std::fclose(out_);
  }
  // The next event, or null at the end of its output.
  json next() {
    std::string line;
    for (int c; (c = std::fgetc(out_)) != EOF && c != '\n';) line += static_cast<char>(c);
    if (line.empty()) return nullptr;
    return json::parse(line);
  }
  void signal(int sig) { kill(pid_, sig); }
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = 0;
  std::FILE* out_ = nullptr;
};

std::vector<json> run_all(const std::vector<std::string>& args, const std::string& err, int& rc) {
  Trainer t(args, err);
  std::vector<json> events;
  for (json e = t.next(); !e.is_null(); e = t.next()) events.push_back(e);
  rc = t.wait();
  return events;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

const json* find_event(const std::vector<json>& events, const std::string& name) {
  for (const auto& e : events)
    if (e["event"] == name) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("tsum-train: SIGTERM mid-epoch checkpoints and exits 75; --resume finishes as if it never stopped") {
  TempDir dir;
  const std::string state = dir.file("state.pt");
  const std::vector<std::string> common = {"--limit", "1536", "--epochs", "2", "--threads", "1", "--test-limit", "300",
                                           "--batch", "64", "--data", TSUM_FASHION_MNIST_DIR, "--checkpoint",
                                           dir.file("model.pt")};
  int rc = -1;
  auto straight = run_all(common, dir.file("straight.err"), rc);
  INFO(slurp(dir.file("straight.err")));
  REQUIRE(rc == 0);
  const json* straight_verify = find_event(straight, "verify");
  REQUIRE(straight_verify != nullptr);

  // Periodic checkpoints every 0.2 s; after the first, SIGTERM: the step in progress ends, then the last one.
  auto args = common;
  args.insert(args.end(), {"--state", state, "--checkpoint-every", "0.2"});
  std::vector<json> stopped;
  {
    Trainer t(args, dir.file("stopped.err"));
    for (json e = t.next(); !e.is_null(); e = t.next()) {
      stopped.push_back(e);
      if (e["event"] == "checkpoint" && e["reason"] == "periodic" && e["epoch"] == 1) {
        CHECK(std::filesystem::exists(state));
        t.signal(SIGTERM);
      }
    }
    rc = t.wait();
  }
  INFO(slurp(dir.file("stopped.err")));
  CHECK(rc == 75);
  REQUIRE(!stopped.empty());
  const json last = stopped.back();
  REQUIRE(last["event"] == "checkpoint");
  CHECK(last["reason"] == "signal");
  CHECK(last["epoch"] == 1);  // stopped inside the first epoch: 24 steps take longer than a fifth of a second
  CHECK(last["examples"].get<int>() > 0);
  CHECK(last["examples"].get<int>() < 1536);
  CHECK(last["step"].get<int>() == last["examples"].get<int>() / 64);
  CHECK(last["path"] == state);
  CHECK(last["bytes"].get<int>() > 1000000);  // the model and Adam's two moments
  CHECK(find_event(stopped, "learn_end") == nullptr);
  CHECK(std::filesystem::exists(state));
  CHECK_FALSE(std::filesystem::exists(state + ".tmp"));

  // A new process (as on a new machine) goes on from that step.
  auto resume = common;
  resume.insert(resume.end(), {"--resume", state});
  auto resumed = run_all(resume, dir.file("resumed.err"), rc);
  INFO(slurp(dir.file("resumed.err")));
  REQUIRE(rc == 0);
  const json* r = find_event(resumed, "resumed");
  REQUIRE(r != nullptr);
  CHECK((*r)["epoch"] == 1);
  CHECK((*r)["examples"] == last["examples"]);
  CHECK((*r)["step"] == last["step"]);
  int epochs = 0;
  for (const auto& e : resumed) epochs += e["event"] == "epoch";
  CHECK(epochs == 2);  // the first epoch's rest, then the second
  const json* verify = find_event(resumed, "verify");
  REQUIRE(verify != nullptr);
  // The same steps on the same batches with the same dropout masks: the same model.
  CHECK((*verify)["test_loss"].get<double>() == doctest::Approx((*straight_verify)["test_loss"].get<double>()).epsilon(1e-6));
  CHECK((*verify)["test_accuracy"] == (*straight_verify)["test_accuracy"]);
  const json* learn_end = find_event(resumed, "learn_end");
  REQUIRE(learn_end != nullptr);
  CHECK((*learn_end)["seconds_here"].get<double>() < (*learn_end)["seconds"].get<double>());
}

TEST_CASE("tsum-train --resume: a missing, truncated or foreign checkpoint is a clear error, exit 2") {
  TempDir dir;
  const std::string state = dir.file("state.pt");
  const std::vector<std::string> common = {"--limit", "6000", "--epochs", "1", "--threads", "1", "--test-limit", "100",
                                           "--data", TSUM_FASHION_MNIST_DIR, "--checkpoint", dir.file("m.pt")};
  int rc = -1;
  auto args = common;
  args.insert(args.end(), {"--resume", dir.file("none.pt")});
  run_all(args, dir.file("e1"), rc);
  CHECK(rc == 2);
  CHECK(slurp(dir.file("e1")).find("no such checkpoint") != std::string::npos);

  // A checkpoint to spoil: SIGTERM before the first step is answered by one at step 0.
  args = common;
  args.insert(args.end(), {"--state", state, "--checkpoint-every", "0.001"});
  {
    Trainer t(args, dir.file("e2"));
    for (json e = t.next(); !e.is_null(); e = t.next())
      if (e["event"] == "checkpoint") t.signal(SIGTERM);
    CHECK(t.wait() == 75);
  }
  REQUIRE(std::filesystem::exists(state));

  auto other = std::vector<std::string>{"--model", "mnist_mlp"};
  other.insert(other.end(), common.begin(), common.end());
  other.insert(other.end(), {"--resume", state});
  run_all(other, dir.file("e3"), rc);
  CHECK(rc == 2);
  CHECK(slurp(dir.file("e3")).find("a checkpoint of model mnist_cnn, not mnist_mlp") != std::string::npos);

  std::filesystem::resize_file(state, std::filesystem::file_size(state) / 2);
  args = common;
  args.insert(args.end(), {"--resume", state});
  run_all(args, dir.file("e4"), rc);
  CHECK(rc == 2);
  CHECK(slurp(dir.file("e4")).find("not a readable checkpoint") != std::string::npos);
}

namespace {

// A free TCP port on 127.0.0.1 (bound, read and released: the ranks' master takes it next).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

// Two ring ranks on this host, each its own process; `extra(rank)` adds its flags. Their events, by rank.
struct TwoRanks {
  std::vector<json> events[2];
  int rc[2] = {-1, -1};
};

}  // namespace

TEST_CASE("tsum-train --dist ring: SIGTERM to one rank checkpoints every rank at the same step; resumed, the two "
          "ranks finish with the numbers of a ring run that never stopped") {
  TempDir dir;
  auto common = [&](int rank, int port) {
    return std::vector<std::string>{"--limit", "1536", "--epochs", "2", "--threads", "1", "--test-limit", "300",
                                    "--batch", "64", "--data", TSUM_FASHION_MNIST_DIR, "--checkpoint",
                                    dir.file("model" + std::to_string(rank) + ".pt"), "--world-size", "2", "--rank",
                                    std::to_string(rank), "--dist", "ring", "--master", "127.0.0.1:" + std::to_string(port)};
  };
  auto state = [&](int rank) { return dir.file("state" + std::to_string(rank) + ".pt"); };
  // `run` starts both ranks with `more(rank)` added, reads them to the end, and calls on_event(rank, event, ranks).
  auto run = [&](const std::string& name, auto more, auto on_event) {
    TwoRanks out;
    const int port = free_port();
    std::vector<std::unique_ptr<Trainer>> t;
    for (int r = 0; r < 2; ++r) {
      auto args = common(r, port);
      auto m = more(r);
      args.insert(args.end(), m.begin(), m.end());
      t.push_back(std::make_unique<Trainer>(args, dir.file(name + std::to_string(r) + ".err")));
    }
    // Rank 1 is read on a thread of its own: the ranks step together, so neither may wait on the other's pipe.
    std::thread other([&] {
      for (json e = t[1]->next(); !e.is_null(); e = t[1]->next()) out.events[1].push_back(e);
    });
    for (json e = t[0]->next(); !e.is_null(); e = t[0]->next()) {
      out.events[0].push_back(e);
      on_event(e, t);
    }
    other.join();
    for (int r = 0; r < 2; ++r) out.rc[r] = t[r]->wait();
    return out;
  };
  auto none = [](int) { return std::vector<std::string>{}; };
  auto ignore = [](const json&, auto&) {};

  TwoRanks straight = run("straight", none, ignore);
  INFO(slurp(dir.file("straight0.err")) << slurp(dir.file("straight1.err")));
  REQUIRE(straight.rc[0] == 0);
  REQUIRE(straight.rc[1] == 0);
  const json* straight_verify = find_event(straight.events[0], "verify");
  REQUIRE(straight_verify != nullptr);

  // Periodic checkpoints every 0.2 s (rank 0's clock); after the first, SIGTERM to rank 1 alone.
  bool signalled = false;
  TwoRanks stopped = run(
      "stopped", [&](int r) { return std::vector<std::string>{"--state", state(r), "--checkpoint-every", "0.2"}; },
      [&](const json& e, auto& t) {
        if (!signalled && e["event"] == "checkpoint" && e["reason"] == "periodic" && e["epoch"] == 1) {
          signalled = true;
          t[1]->signal(SIGTERM);
        }
      });
  INFO(slurp(dir.file("stopped0.err")) << slurp(dir.file("stopped1.err")));
  CHECK(stopped.rc[0] == 75);
  CHECK(stopped.rc[1] == 75);
  json last[2];
  for (int r = 0; r < 2; ++r) {
    REQUIRE(!stopped.events[r].empty());
    last[r] = stopped.events[r].back();
    REQUIRE(last[r]["event"] == "checkpoint");
    CHECK(last[r]["reason"] == "signal");
    CHECK(std::filesystem::exists(state(r)));
  }
  CHECK(last[0]["step"] == last[1]["step"]);  // both ranks stopped at one step
  CHECK(last[0]["examples"] == last[1]["examples"]);
  CHECK(last[0]["step"].get<int>() > 0);
  CHECK(last[0]["examples"].get<int>() < 1536);

  // New processes (as on new machines) go on, each from its own checkpoint.
  TwoRanks resumed = run("resumed", [&](int r) { return std::vector<std::string>{"--resume", state(r)}; }, ignore);
  INFO(slurp(dir.file("resumed0.err")) << slurp(dir.file("resumed1.err")));
  REQUIRE(resumed.rc[0] == 0);
  REQUIRE(resumed.rc[1] == 0);
  const json* r = find_event(resumed.events[0], "resumed");
  REQUIRE(r != nullptr);
  CHECK((*r)["step"] == last[0]["step"]);
  const json* verify = find_event(resumed.events[0], "verify");
  REQUIRE(verify != nullptr);
  CHECK((*verify)["test_loss"].get<double>() == doctest::Approx((*straight_verify)["test_loss"].get<double>()).epsilon(1e-6));
  CHECK((*verify)["test_accuracy"] == (*straight_verify)["test_accuracy"]);
}
