#include "tests/fakes/guest/fake_guest.h"

#include <sys/mount.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "providers/guest/docker_engine.h"

namespace tsum::providers::fake_guest {

namespace {

// `text` for inside single quotes in sh: each ' as '\''.
std::string shell_quoted_body(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out;
}

namespace fs = std::filesystem;
constexpr const char* kRuncmd = "/var/lib/cloud/instance/scripts/runcmd";

Error invalid_request(std::string detail) { return make_error(Code::invalid_argument, std::move(detail)); }

bool name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool valid_id(std::string_view id) {
  return !id.empty() && id.size() <= 63 && id != "." && id != ".." && std::all_of(id.begin(), id.end(), name_char);
}

void log(const std::string& id, const std::string& line) { std::cerr << "fake guest " << id << ": " << line << std::endl; }

std::string single_quoted(std::string_view v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The instance's init: its packages checked (the image must have them; a fake guest reaches no mirror) and
// their services started as the image's service manager would (docker.io: Docker's engine), then runcmd, as
// cloud-init runs it once at first boot.
std::string runcmd_script(const std::string& id, const CloudConfig& config, const std::string& registry) {
  std::string s = "#!/bin/sh\n# runcmd of instance " + id + ", as cloud-init runs it once at first boot.\n";
  for (const auto& p : config.packages) {
    s += "dpkg -s " + single_quoted(p) + " >/dev/null 2>&1 || echo \"cloud-init: package " + p +
         " is not in this image (a fake guest reaches no mirror)\" >&2\n";
    if (p == "docker.io") s += "if command -v dockerd >/dev/null; then " + guest::docker_engine_boot(registry) + ":; fi\n";
  }
  for (const auto& argv : config.runcmd) {
    for (std::size_t i = 0; i < argv.size(); ++i) s += (i ? " " : "") + single_quoted(argv[i]);
    s += "\n";
  }
  return s + "# The instance stays up: this shell is the init of its PID namespace.\nexec sleep infinity\n";
}

}  // namespace

FakeGuest::FakeGuest(FakeGuestOptions options) : opts_(std::move(options)) {
  std::error_code ec;
  if (!opts_.root.empty()) opts_.root = fs::absolute(opts_.root, ec).lexically_normal().string();
  while (opts_.root.size() > 1 && opts_.root.ends_with('/')) opts_.root.pop_back();
}

FakeGuest::~FakeGuest() {
  std::lock_guard lock(mu_);
  guests_.clear();  // each machine's destructor halts it
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
  guests_.erase(instance_id);  // the machine's destructor halts it
}

void FakeGuest::sync(const std::vector<LiveInstance>& up) {
  std::lock_guard lock(mu_);
  std::set<std::string> live;
  for (const auto& i : up) live.insert(i.id);
  std::erase_if(guests_, [&](const auto& kv) { return !live.contains(kv.first); });
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
  return it != guests_.end() && it->second.machine && it->second.machine->running();
}

std::string FakeGuest::netns(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = guests_.find(instance_id);
  return it != guests_.end() && it->second.machine ? it->second.machine->netns() : std::string();
}

std::string FakeGuest::address(const std::string& instance_id) {
  std::lock_guard lock(mu_);
  auto it = guests_.find(instance_id);
  return it != guests_.end() && it->second.machine ? it->second.machine->address() : std::string();
}

std::string FakeGuest::instance_at(const std::string& address) {
  std::lock_guard lock(mu_);
  for (const auto& [id, g] : guests_)
    if (g.machine && g.machine->address() == address) return id;
  return {};
}

Status FakeGuest::open_image_and_network() {
  if (opts_.image.empty() || opts_.network.empty())
    return invalid_request("a fake guest needs a stock root image (--guest-image) and a network (--guest-network)");
  if (!image_) {
    auto image = guest::GuestImage::open(opts_.image);
    if (!image) return image.error();
    image_ = std::move(*image);
  }
  if (!network_) {
    auto network = guest::GuestNetwork::open(opts_.network);
    if (!network) return network.error();
    network_ = std::move(*network);
  }
  return {};
}

Status FakeGuest::start(const std::string& id, std::string_view user_data, Guest& g) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!valid_id(id)) return invalid_request("instance id '" + id + "' may hold only letters, digits, '.', '_' and '-'");
  if (opts_.root.empty()) return invalid_request("a fake guest needs a root directory (--guest-root)");
  auto config = parse_cloud_config(user_data);
  if (!config) return config.error();
  if (!config->skipped.empty()) {
    std::string names;
    for (const auto& k : config->skipped) names += (names.empty() ? "" : ", ") + k;
    log(id, "skipping what a fake guest cannot do: " + names);
  }
  if (auto s = open_image_and_network(); !s) return s;
  // A fresh disk: whatever an earlier boot of this id left (a process killed before its halt) goes first.
  const std::string dir = opts_.root + "/" + id;
  std::error_code ec;
  ::umount2((dir + "/root").c_str(), MNT_DETACH);
  fs::remove_all(dir, ec);
  auto machine = guest::GuestMachine::create(*image_, *network_, {.dir = dir, .name = id});
  if (!machine) return machine.error();
  auto& m = *machine;  // halted (by its destructor) unless it boots
  for (const auto& f : config->files)
    if (auto w = m->write_file(f.path, f.content, f.permissions); !w) return w;
  if (auto w = m->write_file(kRuncmd, runcmd_script(id, *config, opts_.insecure_registry), 0700); !w) return w;
  if (!opts_.boot_hook.empty()) {
    const std::string command = "TSUM_GUEST_ID='" + id + "' TSUM_GUEST_NETNS='" + m->netns() + "' sh -c '" +
                                shell_quoted_body(opts_.boot_hook) + "' >>'" + dir + "/boot-hook.log' 2>&1";
    if (const int rc = std::system(command.c_str()); rc != 0)
      return make_error(Code::unavailable, "the boot hook failed (" + std::to_string(rc) + "): see " + dir +
                                               "/boot-hook.log");
  }
  if (auto s = m->start({"/bin/sh", kRuncmd}); !s) return s;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  log(id, "booted at " + m->address() + " in " + std::to_string(ms.count()) + " ms");
  g.machine = std::move(m);
  return {};
}

}  // namespace tsum::providers::fake_guest
