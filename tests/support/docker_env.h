// A real Docker setup for tests: an engine, the workload image tsum-train:latest (the stock Debian 12 root plus
// the trainer bundle), and a private registry on loopback that serves it as 127.0.0.1:PORT/tsum-train:latest.
//
//   DockerEnv env;                               // or DockerEnv env({.registry_auth = true});
//   env.image();                                 // "127.0.0.1:PORT/tsum-train:latest", pushed
//   env.docker_host();                           // "unix:///.../docker.sock"
//   env.docker("run --rm --network none " + env.image() + " --help");   // {status, output}
//   env.stop();                                  // or the destructor
//
// The engine: $DOCKER_HOST if set (it must answer), else the system engine on /var/run/docker.sock if it
// answers, else a private dockerd (scripts/docker-engine.sh) whose state lives in <build>/cache/docker, so its
// images stay cached between runs. Test processes share the private engine: each holds a shared lock on
// <state>/users.lock while it uses it, and the last one out stops it if a test started it (an engine started by
// `make image` or by hand is left running). The images are made by scripts/docker-images.sh when missing or
// stale (the base from <build>/cache/guest-bookworm.tar, which scripts/guest-rootfs.sh makes with debootstrap
// when missing; the workload from <build>/bundle/tsum-bundle.tar.gz). The registry
// (scripts/registry.sh) is fresh per DockerEnv, in a temporary directory, on a free loopback port; with
// registry_auth it requires HTTP basic auth and docker_config() holds a `docker login` for it. The docker CLI
// is Debian's /usr/bin/docker (20.10, API 1.41, the engine's own), with DOCKER_CONFIG pointing at
// docker_config(), so the user's ~/.docker is never read or written.
//
// Every step is bounded (coreutils timeout); a missing tool or package FAILs the test naming the Debian package.
// The source and build directories come from the compile definitions TSUM_SOURCE_DIR and TSUM_BUILD_DIR
// (tests/docker/CMakeLists.txt shows how) unless DockerEnvOptions names them.
#pragma once

#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/temp_dir.h"

namespace tsum::testing {

struct DockerCommand {
  int status = -1;     // exit status; 124 when it ran past its limit
  std::string output;  // stdout and stderr together, final newline trimmed
};

struct DockerEnvOptions {
#ifdef TSUM_SOURCE_DIR
  std::string source_dir = TSUM_SOURCE_DIR;
#else
  std::string source_dir;
#endif
#ifdef TSUM_BUILD_DIR
  std::string build_dir = TSUM_BUILD_DIR;
#else
  std::string build_dir;
#endif
  bool registry_auth = false;  // the registry requires registry_user()/registry_password()
  bool push = true;            // push tsum-train:latest to the registry as image()
  // Start the registry with the blobs of the last push (hardlinked from <build>/cache/registry-seed), so the
  // push finds its layers there ("Layer already exists") instead of compressing and uploading ~250 MB again.
  // false: an empty registry, a full upload.
  bool seed_registry = true;
  // The address the registry listens on; "0.0.0.0" serves guests on a test bridge too (at the bridge's
  // address, as an insecure registry of their engines), while image() still names 127.0.0.1.
  std::string registry_listen = "127.0.0.1";
};

namespace docker_env_detail {

inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `sh -c cmd` under coreutils `timeout`, capturing stdout and stderr. The child gets none of this
// process's other file descriptors: a dockerd or registry it starts outlives the test and must not keep the
// test's sockets (a listening port) open.
inline DockerCommand run(const std::string& cmd, std::chrono::seconds limit) {
  DockerCommand r;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return r;
  const std::string secs = std::to_string(limit.count());
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    close_range(3, ~0U, 0);
    execl("/usr/bin/timeout", "timeout", "-k", "10", secs.c_str(), "/bin/sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  close(out[1]);
  if (pid < 0) {
    close(out[0]);
    return r;
  }
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) != 0;) {
    if (n > 0) r.output.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  }
  close(out[0]);
  int rc = 0;
  while (waitpid(pid, &rc, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  while (!r.output.empty() && r.output.back() == '\n') r.output.pop_back();
  return r;
}

inline int free_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

inline std::string random_hex(int n) {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string out;
  for (int i = 0; i < n; ++i) out += "0123456789abcdef"[static_cast<unsigned char>(in.get()) % 16];
  return out;
}

}  // namespace docker_env_detail

class DockerEnv {
 public:
  static constexpr const char* kBaseImage = "tsum-base:bookworm";
  static constexpr const char* kLocalImage = "tsum-train:latest";
  static constexpr const char* kExampleImage = "tsum-example-pytorch:latest";  // examples/pytorch-mnist

  explicit DockerEnv(DockerEnvOptions options = {}) : options_(std::move(options)), dir_("tsum-docker") {
    try {
      setup();
    } catch (...) {
      stop();
      throw;
    }
  }
  ~DockerEnv() { stop(); }
  DockerEnv(const DockerEnv&) = delete;
  DockerEnv& operator=(const DockerEnv&) = delete;

  const std::string& docker_host() const { return docker_host_; }
  // The DOCKER_CONFIG directory every docker command here uses (holds the registry login with registry_auth).
  const std::string& docker_config() const { return docker_config_; }
  const std::string& docker_cli() const { return cli_; }
  // "127.0.0.1:PORT", the registry part of image references.
  const std::string& registry() const { return registry_; }
  int registry_port() const { return registry_port_; }
  const std::string& registry_dir() const { return registry_dir_; }
  const std::string& registry_user() const { return user_; }          // empty without registry_auth
  const std::string& registry_password() const { return password_; }  // empty without registry_auth
  // The pushed workload image, "127.0.0.1:PORT/tsum-train:latest".
  const std::string& image() const { return image_; }
  // The private engine's state directory (data-root, log), or empty when an outside engine is used.
  const std::string& engine_state() const { return state_; }
  bool started_engine() const { return started_engine_; }
  // After stop(): whether it stopped the private engine (the last test user of an engine a test started).
  bool stopped_engine() const { return stopped_engine_; }

  // What the agent needs (PROTOCOL.md): DOCKER_HOST, TSUM_IMAGE and, with registry_auth, TSUM_REGISTRY_USER and
  // TSUM_REGISTRY_PASSWORD. Not DOCKER_CONFIG: give the agent a directory of its own, so its `docker login` is
  // its own and root's ~/.docker stays untouched.
  std::vector<std::pair<std::string, std::string>> env() const {
    std::vector<std::pair<std::string, std::string>> out = {{"DOCKER_HOST", docker_host_}, {"TSUM_IMAGE", image_}};
    if (!user_.empty()) {
      out.emplace_back("TSUM_REGISTRY_USER", user_);
      out.emplace_back("TSUM_REGISTRY_PASSWORD", password_);
    }
    return out;
  }

  // Runs `docker ARGS` (ARGS is shell text) against the engine, bounded by limit.
  DockerCommand docker(const std::string& args, std::chrono::seconds limit = std::chrono::seconds(300)) const {
    return docker_env_detail::run(prefix() + cli_ + " " + args, limit);
  }

  // The example job's image (examples/pytorch-mnist), built once per engine and inputs
  // (scripts/docker-images.sh example), pushed to the registry; returns its reference there.
  std::string push_example() const {
    ensure_images("example");
    const std::string ref = registry_ + "/" + kExampleImage;
    push_as(kExampleImage, ref);
    return ref;
  }

  // Creates /tmp/release-<token> in every running container of the engine: a job that waits for that file (see
  // wait_for_release) goes on once the test has seen what it needed to see. Other suites may share the engine;
  // the token is the test's own, so their containers just get a file nobody reads. How many containers got it.
  int release(const std::string& token) const {
    const auto ids = docker("ps -q", std::chrono::seconds(60));
    std::istringstream in(ids.output);
    int n = 0;
    for (std::string id; std::getline(in, id);)
      if (!id.empty()) n += docker("exec " + id + " touch /tmp/release-" + token, std::chrono::seconds(60)).status == 0;
    return n;
  }
  // Shell text that waits (at most 600 s) until release(token) has run.
  static std::string wait_for_release(const std::string& token) {
    return "i=0; while [ ! -e /tmp/release-" + token + " ] && [ $i -lt 6000 ]; do sleep 0.1; i=$((i+1)); done\n";
  }

  // Bytes the registry has sent for blobs (layers and image configs) of repository repo, from its access log;
  // `blobs` gets the number of such requests.
  long long blob_bytes_served(const std::string& repo = "tsum-train", int* blobs = nullptr) const {
    std::ifstream in(registry_dir_ + "/registry.log");
    const std::string needle = "\"GET /v2/" + repo + "/blobs/sha256:";
    long long total = 0;
    int count = 0;
    for (std::string line; std::getline(in, line);) {
      auto at = line.find(needle);
      if (at == std::string::npos) continue;
      auto end = line.find("\" ", at + 1);  // end of the request: `" STATUS BYTES`
      if (end == std::string::npos) continue;
      std::istringstream rest(line.substr(end + 2));
      int status = 0;
      long long bytes = 0;
      if (rest >> status >> bytes && (status == 200 || status == 206)) {
        total += bytes;
        ++count;
      }
    }
    if (blobs != nullptr) *blobs = count;
    return total;
  }

  // Untags image() locally, stops the registry, and releases the engine (stopping it if this was its last test
  // user and a test started it). Idempotent.
  void stop() {
    if (stopped_) return;
    stopped_ = true;
    if (pushed_) docker("rmi " + image_ + " >/dev/null", std::chrono::seconds(60));
    if (!registry_dir_.empty()) {
      script("registry.sh", "stop " + q(registry_dir_), std::chrono::seconds(60));
      std::error_code ec;
      std::filesystem::remove_all(registry_dir_, ec);
    }
    release_engine();
  }

 private:
  static std::string q(const std::string& s) { return docker_env_detail::quote(s); }

  std::string prefix() const {
    return "DOCKER_HOST=" + q(docker_host_) + " DOCKER_CONFIG=" + q(docker_config_) + " ";
  }

  // Runs scripts/NAME ARGS (ARGS is shell text) with the environment assignments env (shell text).
  DockerCommand script(const std::string& name, const std::string& args, std::chrono::seconds limit,
                       const std::string& env = "") const {
    return docker_env_detail::run(env + "sh " + q(options_.source_dir + "/scripts/" + name) + " " + args, limit);
  }

  bool answers(const std::string& host) const {
    return docker_env_detail::run("DOCKER_HOST=" + q(host) + " " + cli_ + " version --format '{{.Server.Version}}'",
                                  std::chrono::seconds(15))
               .status == 0;
  }

  void setup() {
    if (options_.source_dir.empty() || options_.build_dir.empty())
      FAIL("DockerEnv needs TSUM_SOURCE_DIR and TSUM_BUILD_DIR (compile definitions or DockerEnvOptions)");
    cli_ = access("/usr/bin/docker", X_OK) == 0 ? "/usr/bin/docker" : "";
    if (cli_.empty()) FAIL("/usr/bin/docker is missing: install docker.io (scripts/install-deps.sh)");
    for (auto [tool, package] : {std::pair{"/usr/bin/docker-registry", "docker-registry"},
                                 std::pair{"/usr/bin/curl", "curl"}, std::pair{"/usr/bin/perl", "perl"},
                                 std::pair{"/usr/bin/timeout", "coreutils"}, std::pair{"/usr/bin/flock", "util-linux"}})
      if (access(tool, X_OK) != 0) FAIL(tool << " is missing: install " << package << " (scripts/install-deps.sh)");
    docker_config_ = dir_.file("docker-config");
    std::filesystem::create_directories(docker_config_);
    acquire_engine();
    ensure_images();
    start_registry();
    if (options_.push) push();
  }

  void acquire_engine() {
    if (const char* host = std::getenv("DOCKER_HOST"); host != nullptr && *host != '\0') {
      if (!answers(host)) FAIL("DOCKER_HOST=" << host << " does not answer (`docker version` fails)");
      docker_host_ = host;
      return;
    }
    if (answers("unix:///var/run/docker.sock")) {
      docker_host_ = "unix:///var/run/docker.sock";
      return;
    }
    if (geteuid() != 0) FAIL("a private dockerd needs root; run the test as root or point DOCKER_HOST at an engine");
    if (access("/usr/sbin/dockerd", X_OK) != 0) FAIL("/usr/sbin/dockerd is missing: install docker.io");
    state_ = options_.build_dir + "/cache/docker";
    std::filesystem::create_directories(state_);
    // A shared lock while this process uses the engine; the last user out takes it exclusively to stop it.
    users_fd_ = open((state_ + "/users.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    REQUIRE(users_fd_ >= 0);
    bool locked = false;
    for (auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
         !(locked = flock(users_fd_, LOCK_SH | LOCK_NB) == 0) && std::chrono::steady_clock::now() < end;)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!locked) FAIL("another test process is stopping the engine in " << state_ << " for over 120 s");
    docker_host_ = "unix://" + state_ + "/docker.sock";
    if (answers(docker_host_)) return;
    DockerCommand started = script("docker-engine.sh", "start " + q(state_), std::chrono::seconds(240));
    if (started.status != 0) FAIL("starting dockerd failed (scripts/docker-engine.sh start):\n" << started.output);
    started_engine_ = true;
    std::ofstream(state_ + "/started-by-test") << getpid() << "\n";
  }

  void release_engine() {
    if (users_fd_ < 0) return;
    // Drop our shared lock; if no other test process holds one, stop an engine a test started.
    flock(users_fd_, LOCK_UN);
    if (flock(users_fd_, LOCK_EX | LOCK_NB) == 0) {
      if (std::filesystem::exists(state_ + "/started-by-test")) {
        DockerCommand r = script("docker-engine.sh", "stop " + q(state_), std::chrono::seconds(120));
        if (r.status == 0) {
          std::filesystem::remove(state_ + "/started-by-test");
          stopped_engine_ = true;
        } else {
          MESSAGE("stopping dockerd failed: " << r.output);
        }
      }
      flock(users_fd_, LOCK_UN);
    }
    close(users_fd_);
    users_fd_ = -1;
  }

  void ensure_images(const std::string& which = "workload") const {
    std::string env = "DOCKER_HOST=" + q(docker_host_) + " BUILD=" + q(options_.build_dir) + " ";
    DockerCommand r = script("docker-images.sh", which, std::chrono::seconds(1500), env);
    if (r.status != 0) FAIL("making the images failed (scripts/docker-images.sh " << which << "):\n" << r.output);
  }

  void start_registry() {
    sweep_registries();
    std::string tmpl = options_.build_dir + "/cache/registry-XXXXXX";  // beside the seed: hardlinks work
    std::filesystem::create_directories(options_.build_dir + "/cache");
    if (mkdtemp(tmpl.data()) == nullptr) FAIL("cannot create " << tmpl);
    registry_dir_ = tmpl;
    std::ofstream(registry_dir_ + "/owner") << getpid() << "\n";
    const std::string seed = options_.build_dir + "/cache/registry-seed";
    if (options_.seed_registry && std::filesystem::exists(seed + "/docker"))
      docker_env_detail::run("mkdir -p " + q(registry_dir_ + "/data") + " && (cp -al " + q(seed + "/docker") + " " +
                                 q(registry_dir_ + "/data/") + " || cp -a " + q(seed + "/docker") + " " +
                                 q(registry_dir_ + "/data/") + ")",
                             std::chrono::seconds(300));
    std::string env = "TSUM_REGISTRY_ADDR=" + q(options_.registry_listen) + " ";
    if (options_.registry_auth) {
      user_ = "tsum";
      password_ = docker_env_detail::random_hex(24);
      env += "TSUM_REGISTRY_USER=" + q(user_) + " TSUM_REGISTRY_PASSWORD=" + q(password_) + " ";
    }
    DockerCommand r;
    for (int attempt = 0; attempt < 5; ++attempt) {  // a free port can be taken before the registry binds it
      registry_port_ = docker_env_detail::free_loopback_port();
      r = script("registry.sh", "start " + q(registry_dir_) + " " + std::to_string(registry_port_),
                 std::chrono::seconds(60), env);
      if (r.status != 3) break;
    }
    if (r.status != 0) FAIL("starting the registry failed (scripts/registry.sh start):\n" << r.output);
    registry_ = "127.0.0.1:" + std::to_string(registry_port_);
    image_ = registry_ + "/tsum-train:latest";
    if (options_.registry_auth) {
      DockerCommand login = docker_env_detail::run(
          "printf '%s' " + q(password_) + " | " + prefix() + cli_ + " login -u " + q(user_) + " --password-stdin " +
              registry_,
          std::chrono::seconds(60));
      if (login.status != 0) FAIL("docker login " << registry_ << " failed:\n" << login.output);
    }
  }

  void push() {
    pushed_ = true;
    push_as(kLocalImage, image_);
  }

  // Tags the local image as ref and pushes it; the registry's blobs then seed the next one (replaced whole,
  // under a lock), so the next push of these layers finds them there.
  void push_as(const std::string& local, const std::string& ref) const {
    DockerCommand tag = docker("tag " + local + " " + ref);
    if (tag.status != 0) FAIL("docker tag failed: " << tag.output);
    DockerCommand r = docker("push -q " + ref, std::chrono::seconds(900));
    if (r.status != 0) FAIL("docker push " << ref << " failed:\n" << r.output);
    const std::string seed = options_.build_dir + "/cache/registry-seed";
    docker_env_detail::run("exec 9>" + q(seed + ".lock") + " && flock -w 120 9 && rm -rf " + q(seed + ".new") +
                               " && mkdir -p " + q(seed + ".new") + " && cp -al " + q(registry_dir_ + "/data/docker") +
                               " " + q(seed + ".new/") + " && rm -rf " + q(seed) + " && mv " + q(seed + ".new") + " " +
                               q(seed),
                           std::chrono::seconds(300));
  }

  // Registries of test processes that are gone (killed before their destructor ran): stop them, delete them.
  void sweep_registries() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options_.build_dir + "/cache", ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("registry-") || name == "registry-seed" || !entry.is_directory()) continue;
      std::ifstream in(entry.path() / "owner");
      long pid = 0;
      if (!(in >> pid) || pid <= 0 || kill(static_cast<pid_t>(pid), 0) == 0) continue;
      script("registry.sh", "stop " + q(entry.path().string()), std::chrono::seconds(60));
      std::filesystem::remove_all(entry.path(), ec);
    }
  }

  DockerEnvOptions options_;
  TempDir dir_;
  std::string cli_, docker_host_, docker_config_, state_, registry_dir_, registry_, image_, user_, password_;
  int registry_port_ = 0;
  int users_fd_ = -1;
  bool started_engine_ = false, stopped_engine_ = false, pushed_ = false, stopped_ = false;
};

}  // namespace tsum::testing
