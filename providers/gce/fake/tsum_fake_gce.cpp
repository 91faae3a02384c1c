// tsum-fake-gce: the fake GCE (fake_gce_cloud.h) as a process, for trying tsum's GCE provider without a
// Google account. It makes a service account of its own and writes its key file (with token_uri pointing
// at this server) where --account-out says, or trusts the key file given with --account. Prints
// "listening on <base URL>" and serves until SIGINT or SIGTERM.
// With --guest-root DIR, each instance's cloud-init user data really runs, in a guest machine of the stock
// root (--guest-image) on a test bridge (--guest-network) under DIR/<id> (providers/fake_guest; needs root),
// until the instance is deleted or the fake stops.
#include <signal.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "providers/gce/fake/fake_gce_cloud.h"
#include "providers/gce/jwt.h"

using namespace tsum;
using namespace tsum::providers::gce;
using namespace tsum::providers::gce::fake;

namespace {

constexpr const char* kUsage = R"(usage: tsum-fake-gce [flags]
  --listen HOST:PORT        address to serve on (default 127.0.0.1:0, an ephemeral port)
  --cert FILE --key FILE    serve HTTPS with this PEM certificate chain and key (default: plain HTTP)
  --guest-root DIR          boot each instance's user data in a guest machine under DIR/<id>
                            until it is deleted (needs root; default: an instance is only a record)
  --guest-image TAR         the guests' stock root (scripts/guest-rootfs.sh TAR)
  --guest-network BRIDGE    the bridge guests join; the daemon listens on its address
  --account FILE            trust this service account key file (its email and public key)
  --account-out FILE        else: make a service account and write its key file here (default: none)
  --project ID              the project requests must name (default tsum-fake)
  --faults SPEC             METHOD:KIND[:COUNT],... KIND is 429|503|500|timeout|lost, METHOD may be *
                            e.g. instances.insert:lost,instances.get:429:2
  --provisioning-s S        PROVISIONING -> STAGING (default 1)
  --staging-s S             STAGING -> RUNNING (default 1)
  --stopping-s S            STOPPING -> gone or TERMINATED (default 2)
  --page-size N             most items per page of any listing (default 500)
  --hang-ms MS              how long a timeout fault holds the connection (default 30000)
)";

bool parse_number(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

struct Flags {
  FakeGceCloudOptions cloud;
  std::string account_in, account_out;
  std::vector<Fault> faults;
};

// Applies one flag; an error message when it is unknown or its value is bad.
std::string apply(Flags& f, std::string_view flag, std::string_view v) {
  double n = 0;
  auto number = [&](double& field) { return parse_number(v, field) ? "" : std::string(flag) + ": not a number >= 0"; };
  FakeGceCloudOptions& o = f.cloud;
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
  if (flag == "--account") return f.account_in = v, "";
  if (flag == "--account-out") return f.account_out = v, "";
  if (flag == "--project") return o.compute.project = v, "";
  if (flag == "--provisioning-s") return number(o.compute.provisioning_s);
  if (flag == "--staging-s") return number(o.compute.staging_s);
  if (flag == "--stopping-s") return number(o.compute.stopping_s);
  if (flag == "--faults") {
    auto parsed = providers::aws::fake::parse_faults(v);
    if (!parsed) return parsed.error().detail;
    return f.faults = *parsed, "";
  }
  if (flag == "--page-size" || flag == "--hang-ms") {
    if (!parse_number(v, n) || n < 1 || n > 1e9) return std::string(flag) + ": not a positive number";
    if (flag == "--page-size") o.compute.page_size = static_cast<int>(n);
    else o.hang = std::chrono::milliseconds(static_cast<long>(n));
    return "";
  }
  return "unknown flag " + std::string(flag);
}

// The account to trust: the given key file's, or a new one (its key file written once the URL is known).
Result<ServiceAccount> account(const Flags& f) {
  if (!f.account_in.empty()) return load_service_account(f.account_in);
  auto key = generate_rsa_key_pem();
  if (!key) return key.error();
  return ServiceAccount{.client_email = f.cloud.client_email, .private_key_id = "fake-key-1", .private_key_pem = *key,
                        .project_id = f.cloud.compute.project};
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::cout << kUsage, 0;
    if (i + 1 >= argc) return std::cerr << "tsum-fake-gce: " << flag << " needs a value\n" << kUsage, 2;
    if (std::string err = apply(f, flag, argv[++i]); !err.empty()) return std::cerr << "tsum-fake-gce: " << err << "\n", 2;
  }
  if (f.cloud.listen.cert_file.empty() != f.cloud.listen.key_file.empty())
    return std::cerr << "tsum-fake-gce: --cert and --key go together\n", 2;
  auto sa = account(f);
  if (!sa) return std::cerr << "tsum-fake-gce: " << sa.error().detail << "\n", 1;
  f.cloud.client_email = sa->client_email;
  f.cloud.public_key_pem = sa->private_key_pem;
  sigset_t stop_signals;  // blocked before the server thread starts, so only sigwait below receives them
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  FakeGceCloud cloud(f.cloud);
  for (const auto& fault : f.faults) cloud.inject(fault);
  auto port = cloud.start();
  if (!port) return std::cerr << "tsum-fake-gce: " << port.error().detail << "\n", 1;
  if (!f.account_out.empty()) {
    sa->token_uri = cloud.token_url();
    std::ofstream out(f.account_out);
    out << service_account_json(*sa);
    if (!out.flush()) return std::cerr << "tsum-fake-gce: cannot write " << f.account_out << "\n", 1;
  }
  std::cout << "tsum-fake-gce: listening on " << cloud.base_url() << " (project " << f.cloud.compute.project
            << ", account " << sa->client_email << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  cloud.stop();
  std::cout << "tsum-fake-gce: stopped by signal " << sig << std::endl;
  return 0;
}
