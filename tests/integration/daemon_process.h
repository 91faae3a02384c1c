// A real `tsumd serve` child process on a free port (of loopback, or of a test network's bridge, where guest
// machines reach it: support/guest_net.h), plus helpers to talk to it.
#pragma once

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/http/http_client.h"
#include "support/temp_dir.h"

namespace tsum::testing {

inline uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Runs a command and returns its stdout (trimmed of the final newline).
inline std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

template <class F>
bool eventually(F f, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return f();
}

// Appends one exchange to $TSUM_API_EXCHANGES (when set) as a JSON line; bodies over 1 MiB are left out.
inline void record_exchange(const std::string& method, const std::string& target, const std::string& body,
                            const api::HttpResult& r) {
  static const char* file = std::getenv("TSUM_API_EXCHANGES");
  if (!file || !*file || !r.ok()) return;
  constexpr size_t kMax = 1 << 20;
  nlohmann::json line = {{"method", method}, {"target", target}, {"status", r.status},
                         {"content_type", r.header("Content-Type")}};
  if (body.size() <= kMax) line["request"] = body;
  if (r.body.size() <= kMax) line["response"] = r.body;
  static std::mutex m;
  std::lock_guard lock(m);
  std::ofstream(file, std::ios::app) << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

class DaemonProcess {
 public:
  // host: the address it listens on, which is also its public URL's (TSUM_URL), e.g. a TestNetwork's
  // listen_address().
  explicit DaemonProcess(std::string db, std::vector<std::string> extra_args = {}, std::string host = "127.0.0.1")
      : db_(std::move(db)), extra_args_(std::move(extra_args)), host_(std::move(host)) {}
  ~DaemonProcess() { stop(SIGKILL); }

  // `extra`: more `tsumd serve` flags, e.g. {"--monthly-budget", "1"}. "{port}" in any flag becomes the port.
  // A restart listens where the first start did, as a daemon keeps its URL: the machines of the runs it takes back
  // reach it there.
  void start(const std::vector<std::string>& extra = {}) {
    if (port_ == 0) port_ = free_port();
    std::string listen = host_ + ":" + std::to_string(port_);
    log_ = db_ + ".log";
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      if (open_files_ > 0) {  // as a shell's `ulimit -n` would leave it: soft and hard
        rlimit lim{open_files_, open_files_};
        setrlimit(RLIMIT_NOFILE, &lim);
      }
      FILE* f = freopen(log_.c_str(), "a", stderr);
      (void)f;
      std::vector<std::string> args = {TSUMD_BIN, "serve", "--db", db_, "--listen", listen};
      args.insert(args.end(), extra_args_.begin(), extra_args_.end());
      args.insert(args.end(), extra.begin(), extra.end());
      for (auto& a : args)
        if (auto at = a.find("{port}"); at != std::string::npos) a.replace(at, 6, std::to_string(port_));
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(TSUMD_BIN, argv.data());
      _exit(127);
    }
    bool up = eventually([&] { return api::http_call(host_, port_, "GET", "/healthz").status == 200; },
                         std::chrono::seconds(120));
    if (!up) FAIL("tsumd did not come up; log:\n" << log());
  }

  // Sends sig and waits (up to 90 s) for the exit. Returns the wait status, nullopt if not running.
  std::optional<int> stop(int sig) {
    if (pid_ <= 0) return std::nullopt;
    kill(pid_, sig);
    int status = 0;
    for (int i = 0; i < 900; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = 0;
    return status;
  }

  // Waits (up to `limit`) for the daemon to exit by itself. Returns the wait status, nullopt if still running.
  std::optional<int> wait_exit(std::chrono::milliseconds limit) {
    int status = 0;
    bool exited = eventually([&] { return pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_; }, limit);
    if (!exited) return std::nullopt;
    pid_ = 0;
    return status;
  }

  std::string admin_token() const { return run_capture(std::string(TSUMD_BIN) + " token create --db " + db_); }
  // The open-files limit (soft and hard) of the next start(); 0: this process's.
  void set_open_files(rlim_t n) { open_files_ = n; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Its public URL: http://<host>:<port>.
  std::string url() const { return "http://" + host_ + ":" + std::to_string(port_); }
  std::string log() const {
    std::ifstream in(log_);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  // With TSUM_API_EXCHANGES=FILE set, every call is appended to FILE as a JSON line, for the check of the
  // daemon's real requests and responses against api/openapi.json (tests/openapi/check_exchanges.py).
  api::HttpResult call(const std::string& method, const std::string& target, const std::string& token,
                       const std::string& body = "", const api::Headers& extra = {}) const {
    api::Headers h = extra;
    if (!token.empty()) h.push_back({"Authorization", "Bearer " + token});
    if (!body.empty()) h.push_back({"Content-Type", "application/json"});
    auto r = api::http_call(host_, port_, method, target, body, h);
    record_exchange(method, target, body, r);
    return r;
  }

 private:
  std::string db_;
  std::vector<std::string> extra_args_;
  std::string host_;
  std::string log_;
  pid_t pid_ = 0;
  rlim_t open_files_ = 0;
  uint16_t port_ = 0;
};

// A started daemon on loopback with a fresh database and an admin token.
struct Daemon {
  TempDir dir;
  DaemonProcess d{dir.file("t.db")};
  std::string admin = d.admin_token();
  Daemon() { d.start(); }
};

// Polls GET /v1/experiments/ID until the experiment is done, failed or cancelled (REQUIREd within limit).
inline nlohmann::json wait_experiment(const DaemonProcess& d, const std::string& admin, int64_t id,
                                      std::chrono::seconds limit) {
  nlohmann::json exp;
  bool finished = eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + std::to_string(id), admin).json();
    return exp["status"] == "done" || exp["status"] == "failed" || exp["status"] == "cancelled";
  }, limit);
  INFO(exp.dump(2));
  INFO(d.log());
  REQUIRE(finished);
  return exp;
}

// POST /v1/experiments; REQUIREs a 201 and returns the experiment's id.
inline int64_t submit_experiment(const DaemonProcess& d, const std::string& admin, const nlohmann::json& body) {
  auto r = d.call("POST", "/v1/experiments", admin, body.dump());
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json()["id"].get<int64_t>();
}

// The example body with a tiny workload.
inline std::string tiny_experiment(int limit = 300, int test_limit = 200,
                                   const std::vector<std::string>& types = {"local-1c"}) {
  nlohmann::json configs = nlohmann::json::array();
  for (const auto& t : types) configs.push_back({{"provider", "local"}, {"instance_type", t}});
  nlohmann::json body = {
      {"name", "it"},
      {"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", 1}, {"limit", limit},
                    {"test_limit", test_limit}}},
      {"configs", configs},
      {"repetitions", 1},
      {"billing", {"per_second_60s_min", "per_minute", "per_10_minutes", "per_hour"}}};
  return body.dump();
}

}  // namespace tsum::testing
