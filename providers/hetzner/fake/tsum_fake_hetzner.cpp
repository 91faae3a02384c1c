// tsum-fake-hetzner: the fake Hetzner Cloud (fake_hetzner_cloud.h) as a process, for trying tsum's Hetzner
// provider without an account. Prints "listening on <base URL>" and serves until SIGINT or SIGTERM.
// With --guest-root DIR, each instance's cloud-init user data really runs, in a guest machine of the stock
// root (--guest-image) on a test bridge (--guest-network) under DIR/<id> (providers/fake_guest; needs root),
// until the instance is deleted or the fake stops.
#include <signal.h>

#include <charconv>
#include <iostream>
#include <string>
#include <string_view>

#include "providers/hetzner/fake/fake_hetzner_cloud.h"

using namespace tsum;
using namespace tsum::providers::hetzner::fake;

namespace {

constexpr const char* kUsage = R"(usage: tsum-fake-hetzner [flags]
  --listen HOST:PORT        address to serve on (default 127.0.0.1:0, an ephemeral port)
  --cert FILE --key FILE    serve HTTPS with this PEM certificate chain and key (default: plain HTTP)
  --guest-root DIR          boot each instance's user data in a guest machine under DIR/<id>
                            until it is deleted (needs root; default: an instance is only a record)
  --guest-image TAR         the guests' stock root (scripts/guest-rootfs.sh TAR)
  --guest-network BRIDGE    the bridge guests join; the daemon listens on its address
  --token TOKEN             the API token requests must carry (default tsum-fake-hcloud-token)
  --faults SPEC             ACTION:KIND[:COUNT],... KIND is 429|503|500|timeout|lost, ACTION may be *
                            e.g. servers.create:lost,servers.get:429:2
  --initializing-s S        initializing -> starting (default 1)
  --starting-s S            starting -> running (default 1)
  --deleting-s S            deleting -> gone (default 2)
  --page-size N             most items per page of any listing (default 50)
  --hang-ms MS              how long a timeout fault holds the connection (default 30000)
)";

bool parse_number(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

// Applies one flag; an error message when it is unknown or its value is bad.
std::string apply(FakeHetznerCloudOptions& o, std::vector<Fault>& faults, std::string_view flag, std::string_view v) {
  double n = 0;
  auto number = [&](double& field) { return parse_number(v, field) ? "" : std::string(flag) + ": not a number >= 0"; };
  if (flag == "--listen") {
    auto colon = v.rfind(':');
    double port = 0;
    if (colon == std::string_view::npos || !parse_number(v.substr(colon + 1), port) || port > 65535) return "--listen wants HOST:PORT";
    o.listen.host = std::string(v.substr(0, colon));
    o.listen.port = static_cast<std::uint16_t>(port);
    return "";
  }
  if (flag == "--cert") return o.listen.cert_file = v, "";
  if (providers::fake_guest::apply_guest_flag(o.guest, flag, v)) return "";
  if (flag == "--key") return o.listen.key_file = v, "";
  if (flag == "--token") return o.token = v, "";
  if (flag == "--initializing-s") return number(o.servers.initializing_s);
  if (flag == "--starting-s") return number(o.servers.starting_s);
  if (flag == "--deleting-s") return number(o.servers.deleting_s);
  if (flag == "--faults") {
    auto parsed = tsum::providers::aws::fake::parse_faults(v);
    if (!parsed) return parsed.error().detail;
    return faults = *parsed, "";
  }
  if (flag == "--page-size" || flag == "--hang-ms") {
    if (!parse_number(v, n) || n < 1 || n > 1e9) return std::string(flag) + ": not a positive number";
    if (flag == "--page-size") o.servers.page_size = static_cast<int>(n);
    else o.hang = std::chrono::milliseconds(static_cast<long>(n));
    return "";
  }
  return "unknown flag " + std::string(flag);
}

}  // namespace

int main(int argc, char** argv) {
  FakeHetznerCloudOptions opts;
  std::vector<Fault> faults;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::cout << kUsage, 0;
    if (i + 1 >= argc) return std::cerr << "tsum-fake-hetzner: " << flag << " needs a value\n" << kUsage, 2;
    if (std::string err = apply(opts, faults, flag, argv[++i]); !err.empty())
      return std::cerr << "tsum-fake-hetzner: " << err << "\n", 2;
  }
  if (opts.listen.cert_file.empty() != opts.listen.key_file.empty())
    return std::cerr << "tsum-fake-hetzner: --cert and --key go together\n", 2;
  sigset_t stop_signals;  // blocked before the server thread starts, so only sigwait below receives them
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  FakeHetznerCloud cloud(opts);
  for (const auto& f : faults) cloud.inject(f);
  auto port = cloud.start();
  if (!port) return std::cerr << "tsum-fake-hetzner: " << port.error().detail << "\n", 1;
  std::cout << "tsum-fake-hetzner: listening on " << cloud.base_url() << " (API at " << cloud.api_url() << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  cloud.stop();
  std::cout << "tsum-fake-hetzner: stopped by signal " << sig << std::endl;
  return 0;
}
