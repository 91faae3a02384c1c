#include "providers/fake_guest/fake_guest.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "providers/http/codec.h"

namespace tsum::providers::fake_guest {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr auto kStartDeadline = std::chrono::seconds(5);
constexpr auto kHaltDeadline = std::chrono::seconds(5);
constexpr const char* kPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

Error invalid(std::string detail) { return make_error(Code::invalid_argument, std::move(detail)); }

bool name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool valid_id(std::string_view id) {
  return !id.empty() && id != "." && id != ".." && std::all_of(id.begin(), id.end(), name_char);
}

bool plain_path(std::string_view p) {
  return p.starts_with('/') && std::all_of(p.begin(), p.end(), [](char c) { return name_char(c) || c == '/'; });
}

void log(const std::string& id, const std::string& line) { std::cerr << "fake guest " << id << ": " << line << std::endl; }

// The first line, without a trailing CR or blanks.
std::string_view first_line(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return line;
}

Result<std::string> scalar(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) return invalid(what + " must be a string");
  return n.as<std::string>();
}

Result<unsigned> permissions_of(const YAML::Node& n, const std::string& path) {
  auto text = scalar(n, "permissions of " + path);
  if (!text) return text.error();
  unsigned mode = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), mode, 8);
  if (text->empty() || ec != std::errc() || end != text->data() + text->size() || mode > 07777)
    return invalid("permissions '" + *text + "' of " + path + " are not an octal mode");
  return mode;
}

bool absolute_without_dotdot(std::string_view p) {
  if (!p.starts_with('/') || p.find('\0') != std::string_view::npos || p.ends_with('/')) return false;
  for (const auto& part : fs::path(std::string(p)))
    if (part == "..") return false;
  return true;
}

Result<GuestFile> read_file_entry(const YAML::Node& entry, std::vector<std::string>& skipped) {
  if (!entry.IsMap()) return invalid("each write_files entry must be a mapping");
  GuestFile f;
  const YAML::Node path_node = entry["path"];
  if (!path_node.IsDefined() || !path_node.IsScalar()) return invalid("a write_files entry has no path (a string)");
  const std::string path = path_node.as<std::string>();
  if (!absolute_without_dotdot(path)) return invalid("write_files path '" + path + "' must be an absolute file path without ..");
  f.path = path;
  std::string encoding = "text/plain";
  for (const auto& kv : entry) {
    auto key = scalar(kv.first, "a write_files key");
    if (!key) return key.error();
    if (*key == "path") continue;
    if (*key == "permissions") {
      auto mode = permissions_of(kv.second, f.path);
      if (!mode) return mode.error();
      f.permissions = *mode;
    } else if (*key == "encoding" || *key == "content") {
      auto value = scalar(kv.second, *key + " of " + f.path);
      if (!value) return value.error();
      (*key == "encoding" ? encoding : f.content) = *value;
    } else {
      skipped.push_back("write_files." + *key);
    }
  }
  const bool gzipped = encoding == "gz+b64" || encoding == "gzip+base64" || encoding == "gz+base64";
  if (gzipped || encoding == "b64" || encoding == "base64") {
    auto decoded = http::base64_decode(f.content);
    if (!decoded) return invalid("content of " + f.path + " is not valid base64: " + decoded.error().detail);
    f.content = std::move(*decoded);
  } else if (encoding != "text/plain") {
    return invalid("encoding '" + encoding + "' of " + f.path + " is not supported (gz+b64, b64, base64 or text/plain)");
  }
  if (gzipped) {
    auto plain = http::gzip_decompress(f.content);
    if (!plain) return invalid("content of " + f.path + " is not gzip: " + plain.error().detail);
    f.content = std::move(*plain);
  }
  return f;
}

Result<std::vector<std::string>> read_command(const YAML::Node& entry) {
  if (entry.IsScalar()) return std::vector<std::string>{"/bin/sh", "-c", entry.as<std::string>()};
  if (!entry.IsSequence() || entry.size() == 0) return invalid("each runcmd entry must be a string or a non-empty list");
  std::vector<std::string> argv;
  for (const auto& arg : entry) {
    auto a = scalar(arg, "each argument of a runcmd list");
    if (!a) return a.error();
    argv.push_back(std::move(*a));
  }
  return argv;
}

Status read_document(const YAML::Node& doc, CloudConfig& out) {
  for (const auto& kv : doc) {
    auto key = scalar(kv.first, "a #cloud-config key");
    if (!key) return key.error();
    if (*key == "write_files") {
      if (!kv.second.IsSequence()) return invalid("write_files must be a list");
      for (const auto& entry : kv.second) {
        auto f = read_file_entry(entry, out.skipped);
        if (!f) return f.error();
        out.files.push_back(std::move(*f));
      }
    } else if (*key == "runcmd") {
      if (!kv.second.IsSequence()) return invalid("runcmd must be a list");
      for (const auto& entry : kv.second) {
        auto argv = read_command(entry);
        if (!argv) return argv.error();
        out.runcmd.push_back(std::move(*argv));
      }
    } else {
      out.skipped.push_back(*key);
    }
  }
  return {};
}

// The deepest directory that holds every written file; "/" when they share none below it.
std::string common_parent(const std::vector<GuestFile>& files) {
  if (files.empty()) return "/";
  fs::path common = fs::path(files[0].path).parent_path();
  for (const auto& f : files) {
    fs::path dir = fs::path(f.path).parent_path(), prefix;
    for (auto a = common.begin(), b = dir.begin(); a != common.end() && b != dir.end() && *a == *b; ++a, ++b) prefix /= *a;
    common = prefix;
  }
  return common.string();
}

// Replaces `from` by `to` where it stands as a whole path: not inside a longer name or path.
std::string replace_path(const std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = text.find(from, at)) != std::string::npos; at = hit + from.size()) {
    const std::size_t end = hit + from.size();
    const bool whole = (hit == 0 || (!name_char(text[hit - 1]) && text[hit - 1] != '/')) &&
                       (end == text.size() || !name_char(text[end]));
    out.append(text, at, hit - at).append(whole ? to : from);
  }
  return out.append(text, at);
}

void relocate(CloudConfig& config, const std::string& home) {
  const std::string dir = common_parent(config.files);
  for (auto& f : config.files) {
    if (dir != "/") f.content = replace_path(f.content, dir, home + dir);
    f.path = home + f.path;
  }
  if (dir == "/") return;
  for (auto& argv : config.runcmd)
    for (auto& arg : argv) arg = replace_path(arg, dir, home + dir);
}

Status write_file(const std::string& path, const std::string& content, unsigned mode) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return make_error(Code::internal, "cannot create the directory of " + path + ": " + ec.message());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) return make_error(Code::internal, "cannot write " + path);
  if (::chmod(path.c_str(), mode) != 0) return make_error(Code::internal, "cannot chmod " + path + ": " + strerror(errno));
  return {};
}

std::string single_quoted(std::string_view v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string runcmd_script(const std::string& id, const std::vector<std::vector<std::string>>& runcmd) {
  std::string s = "#!/bin/sh\n# runcmd of instance " + id + ", as cloud-init runs it once at first boot.\n";
  for (const auto& argv : runcmd) {
    for (std::size_t i = 0; i < argv.size(); ++i) s += (i ? " " : "") + single_quoted(argv[i]);
    s += "\n";
  }
  return s + "# The instance stays up: this shell is the init of its PID namespace.\nexec sleep infinity\n";
}

// setpriv --pdeathsig KILL unshare ... /bin/sh <script>: a session of its own, signals unblocked and at
// their defaults, no descriptor of ours but 0, 1 and 2.
Result<pid_t> spawn_namespace(const std::string& home, const std::string& script) {
  const std::string console = home + "/console.log", env_home = "HOME=" + home;
  std::vector<std::string> args{"setpriv", "--pdeathsig", "KILL", "unshare", "--pid", "--fork", "--kill-child",
                                "--mount-proc", "/bin/sh", script};
  std::vector<char*> argv, envp{const_cast<char*>(kPath), const_cast<char*>(env_home.c_str()), nullptr};
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, console.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawn_file_actions_addchdir_np(&actions, home.c_str());
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, "setpriv", &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return make_error(Code::internal, std::string("cannot start setpriv/unshare: ") + strerror(rc));
  return pid;
}

// The first child of pid (/proc/<pid>/task/<pid>/children), or -1.
pid_t first_child(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = -1;
  in >> child;
  return in ? child : -1;
}

// Reaps pid within the deadline; true when it is gone (or was never ours to reap).
bool reap(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  return text.size() > 400 ? text.substr(text.size() - 400) : text;
}

}  // namespace

Result<CloudConfig> parse_cloud_config(std::string_view user_data) {
  if (first_line(user_data) != "#cloud-config") return invalid("user data does not start with a #cloud-config line");
  CloudConfig out;
  try {
    YAML::Node doc = YAML::Load(std::string(user_data));
    if (doc.IsNull()) return out;
    if (!doc.IsMap()) return invalid("the #cloud-config document must be a mapping");
    if (auto read = read_document(doc, out); !read) return read.error();
  } catch (const YAML::Exception& e) {
    return invalid(std::string("user data is not valid YAML: ") + e.what());
  }
  return out;
}

FakeGuest::FakeGuest(std::string root) : root_(fs::absolute(root).lexically_normal().string()) {
  while (root_.size() > 1 && root_.ends_with('/')) root_.pop_back();
}

FakeGuest::~FakeGuest() {
  std::lock_guard lock(mu_);
  for (auto& [id, g] : guests_) stop(id, g);
  guests_.clear();
}

Status FakeGuest::boot(const std::string& instance_id, std::string_view user_data) {
  std::lock_guard lock(mu_);
  if (auto it = guests_.find(instance_id); it != guests_.end()) return it->second.booted;
  Guest& g = guests_[instance_id];
  g.booted = start(instance_id, user_data, g);
  return g.booted;
}

void FakeGuest::halt(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = guests_.find(instance_id);
  if (it == guests_.end()) return;
  stop(it->first, it->second);
  guests_.erase(it);
}

void FakeGuest::sync(const std::vector<LiveInstance>& up) {
  std::lock_guard lock(mu_);
  std::set<std::string> live;
  for (const auto& i : up) live.insert(i.id);
  for (auto it = guests_.begin(); it != guests_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    stop(it->first, it->second);
    it = guests_.erase(it);
  }
  for (const auto& i : up) {
    if (guests_.contains(i.id)) continue;
    Guest& g = guests_[i.id];
    g.booted = start(i.id, i.user_data, g);
    if (!g.booted) log(i.id, "boot failed: " + g.booted.error().detail);
  }
}

bool FakeGuest::running(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = guests_.find(instance_id);
  if (it == guests_.end() || it->second.unshare < 0) return false;
  int status = 0;
  if (::waitpid(it->second.unshare, &status, WNOHANG) == 0) return true;
  it->second.unshare = it->second.init = -1;  // the namespace ended by itself; reaped now
  return false;
}

Status FakeGuest::start(const std::string& id, std::string_view user_data, Guest& g) {
  if (!valid_id(id)) return invalid("instance id '" + id + "' may hold only letters, digits, '.', '_' and '-'");
  if (!plain_path(root_)) return invalid("guest root '" + root_ + "' must be a path of letters, digits, / _ . - only");
  auto config = parse_cloud_config(user_data);
  if (!config) return config.error();
  if (!config->skipped.empty()) {
    std::string names;
    for (const auto& k : config->skipped) names += (names.empty() ? "" : ", ") + k;
    log(id, "skipping what a fake guest cannot do: " + names);
  }
  const std::string home = root_ + "/" + id;
  relocate(*config, home);
  std::error_code ec;
  fs::remove_all(home, ec);
  if (ec) return make_error(Code::internal, "cannot empty " + home + ": " + ec.message());
  for (const auto& f : config->files)
    if (auto w = write_file(f.path, f.content, f.permissions); !w) return w;
  const std::string script = home + "/var/lib/cloud/instance/scripts/runcmd";
  if (auto w = write_file(script, runcmd_script(id, config->runcmd), 0700); !w) return w;
  auto pid = spawn_namespace(home, script);
  if (!pid) return pid.error();
  g.unshare = *pid;
  for (const auto deadline = Clock::now() + kStartDeadline; Clock::now() < deadline;) {
    if ((g.init = first_child(g.unshare)) > 0) return {};
    int status = 0;
    if (::waitpid(g.unshare, &status, WNOHANG) == g.unshare) {
      g.unshare = -1;
      return make_error(Code::internal, "the PID namespace of " + id + " did not start: " + tail_of(home + "/console.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop(id, g);
  return make_error(Code::internal, "the PID namespace of " + id + " did not start within 5 s");
}

// SIGKILL to the namespace's init makes the kernel kill everything in the namespace; unshare, waiting for
// its child, exits once the init is reaped, that is once the namespace is empty.
void FakeGuest::stop(const std::string& id, Guest& g) {
  if (g.unshare < 0) return;
  if (g.init > 0) ::kill(g.init, SIGKILL);
  if (!reap(g.unshare, Clock::now() + kHaltDeadline)) {
    ::kill(g.unshare, SIGKILL);  // --kill-child and its parent-death signal take the namespace down
    if (!reap(g.unshare, Clock::now() + kHaltDeadline)) log(id, "unshare " + std::to_string(g.unshare) + " would not exit");
  }
  g.unshare = g.init = -1;
}

}  // namespace tsum::providers::fake_guest
