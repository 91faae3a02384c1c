#include "providers/guest/guest_network.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "providers/guest/host_command.h"

namespace tsum::providers::guest {

namespace {

namespace fs = std::filesystem;

bool valid_bridge(std::string_view name) {
  return !name.empty() && name.size() <= GuestNetwork::kMaxBridgeName &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
         });
}

std::string ip_text(std::uint32_t ip) {
  in_addr a{htonl(ip)};
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &a, buf, sizeof buf);
}

// The start time of a process (field 22 of /proc/<pid>/stat), empty when there is no such process.
std::string start_time_of(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  for (int i = 3; i <= 22 && (fields >> f); ++i) {
  }
  return fields ? f : std::string();
}

std::string owner_line() { return std::to_string(::getpid()) + " " + start_time_of(::getpid()); }

bool owner_alive(const std::string& line) {
  pid_t pid = 0;
  auto space = line.find(' ');
  if (space == std::string::npos) return false;
  auto [end, ec] = std::from_chars(line.data(), line.data() + space, pid);
  if (ec != std::errc() || pid <= 0) return false;
  const std::string start = start_time_of(pid);
  return !start.empty() && start == line.substr(space + 1);
}

std::string lease_dir(const std::string& bridge) { return std::string(GuestNetwork::kLeaseDir) + "/" + bridge; }

}  // namespace

GuestNetwork::GuestNetwork(std::string bridge, std::uint32_t gateway, int prefix)
    : bridge_(std::move(bridge)), gateway_(ip_text(gateway)), gateway_ip_(gateway), prefix_(prefix) {}

Status GuestNetwork::create_bridge(const std::string& bridge, const std::string& gateway_cidr) {
  if (!valid_bridge(bridge))
    return make_error(Code::invalid_argument, "bridge name '" + bridge + "' must be 1 to " +
                                                  std::to_string(kMaxBridgeName) + " letters and digits");
  auto slash = gateway_cidr.find('/');
  in_addr a{};
  int prefix = 0;
  if (slash == std::string::npos || inet_pton(AF_INET, gateway_cidr.substr(0, slash).c_str(), &a) != 1 ||
      std::from_chars(gateway_cidr.data() + slash + 1, gateway_cidr.data() + gateway_cidr.size(), prefix).ec !=
          std::errc() ||
      prefix < 8 || prefix > 30)
    return make_error(Code::invalid_argument, "gateway '" + gateway_cidr + "' is not an IPv4 ADDRESS/PREFIX (8..30)");
  if (fs::exists("/sys/class/net/" + bridge))
    return make_error(Code::already_exists, "a network interface named " + bridge + " exists");
  if (auto s = run_checked({"ip", "link", "add", bridge, "type", "bridge"}, kIpDeadline); !s) return s;
  for (const std::vector<std::string>& cmd : {std::vector<std::string>{"ip", "addr", "add", gateway_cidr, "dev", bridge},
                                              {"ip", "link", "set", bridge, "up"}}) {
    if (auto s = run_checked(cmd, kIpDeadline); !s) {
      remove_bridge(bridge);
      return s;
    }
  }
  return {};
}

void GuestNetwork::remove_bridge(const std::string& bridge) {
  if (!valid_bridge(bridge)) return;
  if (fs::exists("/sys/class/net/" + bridge)) (void)run_command({"ip", "link", "del", bridge}, kIpDeadline);
  std::error_code ec;
  fs::remove_all(lease_dir(bridge), ec);
}

Result<GuestNetwork> GuestNetwork::open(const std::string& bridge) {
  if (!valid_bridge(bridge)) return make_error(Code::invalid_argument, "bridge name '" + bridge + "' is not valid");
  std::error_code ec;
  if (!fs::exists("/sys/class/net/" + bridge, ec)) return make_error(Code::not_found, "there is no bridge " + bridge);
  if (!fs::exists("/sys/class/net/" + bridge + "/bridge", ec))
    return make_error(Code::invalid_argument, "network interface " + bridge + " is not a bridge");
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return make_error(Code::internal, std::string("getifaddrs: ") + strerror(errno));
  std::optional<GuestNetwork> found;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask || bridge != i->ifa_name) continue;
    std::uint32_t ip = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    std::uint32_t mask = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
    found = GuestNetwork(bridge, ip, std::popcount(mask));
  }
  freeifaddrs(list);
  if (!found) return make_error(Code::invalid_argument, "bridge " + bridge + " has no IPv4 address");
  if (found->prefix_ < 8 || found->prefix_ > 30)
    return make_error(Code::invalid_argument, "the subnet of bridge " + bridge + " must have a prefix of 8 to 30");
  return *found;
}

AddressLease GuestNetwork::lease_at(int index) const {
  const std::uint32_t mask = prefix_ == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix_);
  AddressLease l;
  l.index = index;
  l.address = ip_text((gateway_ip_ & mask) + static_cast<std::uint32_t>(index));
  l.netns = "tsumg-" + bridge_ + "-" + std::to_string(index);
  l.veth = bridge_ + "-" + std::to_string(index);
  l.file = lease_dir(bridge_) + "/" + l.address;
  return l;
}

Result<AddressLease> GuestNetwork::lease(const std::string& note) const {
  static std::atomic<unsigned> counter{0};
  const std::string dir = lease_dir(bridge_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(Code::internal, "cannot create " + dir + ": " + ec.message());
  const std::string tmp = dir + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << owner_line() << "\n" << note.substr(0, note.find('\n')) << "\n";
    out.close();
    if (!out) return make_error(Code::internal, "cannot write " + tmp);
  }
  const std::uint32_t mask = ~std::uint32_t{0} << (32 - prefix_);
  const int hosts = static_cast<int>(std::min<std::uint32_t>(~mask, 4096));  // the broadcast's index
  const int gateway_index = static_cast<int>(gateway_ip_ & ~mask);
  for (int index = 1; index < hosts; ++index) {
    if (index == gateway_index) continue;
    AddressLease l = lease_at(index);
    if (::link(tmp.c_str(), l.file.c_str()) == 0) {
      ::unlink(tmp.c_str());
      return l;
    }
    if (errno != EEXIST) {
      int err = errno;
      ::unlink(tmp.c_str());
      return make_error(Code::internal, "cannot make lease " + l.file + ": " + strerror(err));
    }
  }
  ::unlink(tmp.c_str());
  return make_error(Code::unavailable, "every address of bridge " + bridge_ + " is leased");
}

void GuestNetwork::release(const AddressLease& lease) const {
  if (!lease.file.empty()) ::unlink(lease.file.c_str());
}

std::vector<LeaseRecord> GuestNetwork::leases() const {
  std::vector<LeaseRecord> out;
  std::error_code ec;
  const std::uint32_t mask = ~std::uint32_t{0} << (32 - prefix_);
  for (const auto& entry : fs::directory_iterator(lease_dir(bridge_), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".tmp-")) {  // a lease being written, or one its owner never linked into place
      const std::string pid = name.substr(5, name.find('-', 5) - 5);
      if (!fs::exists("/proc/" + pid, ec)) fs::remove(entry.path(), ec);
      continue;
    }
    in_addr a{};
    if (inet_pton(AF_INET, name.c_str(), &a) != 1) continue;
    const std::string text = read_text(entry.path().string());
    LeaseRecord s{lease_at(static_cast<int>(ntohl(a.s_addr) & ~mask)), {}, owner_alive(text.substr(0, text.find('\n')))};
    auto nl = text.find('\n');
    if (nl != std::string::npos) s.note = text.substr(nl + 1, text.find('\n', nl + 1) - nl - 1);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tsum::providers::guest
