// tsum-fake-azure: the fake Azure (fake_azure_cloud.h) as a process, for trying tsum's Azure provider
// without an Azure account. Prints "listening on <base URL>" with the tenant, client id and subscription
// to use, and serves until SIGINT or SIGTERM.
// With --guest-root DIR, each instance's cloud-init user data really runs, in a guest machine of the stock
// root (--guest-image) on a test bridge (--guest-network) under DIR/<id> (providers/fake_guest; needs root),
// until the instance is deleted or the fake stops.
#include <signal.h>

#include <charconv>
#include <iostream>
#include <string>
#include <string_view>

#include "providers/azure/fake/fake_azure_cloud.h"

using namespace tsum;
using namespace tsum::providers::azure::fake;

namespace {

constexpr const char* kUsage = R"(usage: tsum-fake-azure --client-secret SECRET [flags]
  --listen HOST:PORT        address to serve on (default 127.0.0.1:0, an ephemeral port)
  --cert FILE --key FILE    serve HTTPS with this PEM certificate chain and key (default: plain HTTP)
  --guest-root DIR          boot each instance's user data in a guest machine under DIR/<id>
                            until it is deleted (needs root; default: an instance is only a record)
  --guest-image TAR         the guests' stock root (scripts/guest-rootfs.sh TAR)
  --guest-network BRIDGE    the bridge guests join; the daemon listens on its address
  --client-secret SECRET    the app's client secret the token endpoint accepts (required)
  --tenant ID --client-id ID --subscription ID   the identities requests must name
  --faults SPEC             METHOD:KIND[:COUNT],... KIND is 429|503|500|timeout|lost, METHOD may be *
                            e.g. virtualMachines.createOrUpdate:lost,virtualMachines.get:429:2
  --starting-s S            PowerState/starting -> running after provisioning (default 2)
  --operation-s S           an operation is done this long after it started (default 30)
  --operation-polls N       or after this many polls (default 1)
  --page-size N             resource groups per page (default 100)
  --prices-page-size N      Retail Prices items per page (default 100)
  --drop-next-page-link     Retail Prices pages without NextPageLink (clients must use $skip)
  --hang-ms MS              how long a timeout fault holds the connection (default 30000)
)";

bool parse_number(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

struct Flags {
  FakeAzureCloudOptions cloud;
  std::vector<Fault> faults;
};

// Applies one flag with a value; an error message when it is unknown or its value is bad.
std::string apply(Flags& f, std::string_view flag, std::string_view v) {
  FakeAzureCloudOptions& o = f.cloud;
  double n = 0;
  auto number = [&](double& field) { return parse_number(v, field) ? "" : std::string(flag) + ": not a number >= 0"; };
  auto count = [&](int& field) {
    if (!parse_number(v, n) || n < 1 || n > 1e6) return std::string(flag) + ": not a positive number";
    field = static_cast<int>(n);
    return std::string();
  };
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
  if (flag == "--client-secret") return o.client_secret = v, "";
  if (flag == "--tenant") return o.tenant_id = v, "";
  if (flag == "--client-id") return o.client_id = v, "";
  if (flag == "--subscription") return o.arm.subscription = v, "";
  if (flag == "--starting-s") return number(o.arm.starting_s);
  if (flag == "--operation-s") return number(o.arm.operation_s);
  if (flag == "--operation-polls") return count(o.arm.operation_polls);
  if (flag == "--page-size") return count(o.arm.page_size);
  if (flag == "--prices-page-size") return count(o.retail.page_size);
  if (flag == "--hang-ms") {
    if (!parse_number(v, n) || n < 1 || n > 1e9) return "--hang-ms: not a positive number";
    o.hang = std::chrono::milliseconds(static_cast<long>(n));
    return "";
  }
  if (flag == "--faults") {
    auto parsed = providers::aws::fake::parse_faults(v);
    if (!parsed) return parsed.error().detail;
    return f.faults = *parsed, "";
  }
  return "unknown flag " + std::string(flag);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::cout << kUsage, 0;
    if (flag == "--drop-next-page-link") {
      f.cloud.retail.drop_next_page_link = true;
      continue;
    }
    if (i + 1 >= argc) return std::cerr << "tsum-fake-azure: " << flag << " needs a value\n" << kUsage, 2;
    if (std::string err = apply(f, flag, argv[++i]); !err.empty()) return std::cerr << "tsum-fake-azure: " << err << "\n", 2;
  }
  if (f.cloud.client_secret.empty()) return std::cerr << "tsum-fake-azure: --client-secret is required\n" << kUsage, 2;
  if (f.cloud.listen.cert_file.empty() != f.cloud.listen.key_file.empty())
    return std::cerr << "tsum-fake-azure: --cert and --key go together\n", 2;
  sigset_t stop_signals;  // blocked before the server thread starts, so only sigwait below receives them
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  FakeAzureCloud cloud(f.cloud);
  for (const auto& fault : f.faults) cloud.inject(fault);
  auto port = cloud.start();
  if (!port) return std::cerr << "tsum-fake-azure: " << port.error().detail << "\n", 1;
  std::cout << "tsum-fake-azure: listening on " << cloud.base_url() << " (tenant " << f.cloud.tenant_id << ", client "
            << f.cloud.client_id << ", subscription " << f.cloud.arm.subscription << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  cloud.stop();
  std::cout << "tsum-fake-azure: stopped by signal " << sig << std::endl;
  return 0;
}
