// tsum-fake-yandex: the fake Yandex Cloud (fake_yandex_cloud.h) as a process, for trying tsum's Yandex
// provider without a Yandex account. It makes an authorized key of its own and writes its key file where
// --key-out says, or trusts the key file given with --key. Prints "listening on <base URL>" and serves
// until SIGINT or SIGTERM.
// With --guest-root DIR, each instance's cloud-init user data really runs, in a guest machine of the stock
// root (--guest-image) on a test bridge (--guest-network) under DIR/<id> (providers/fake_guest; needs root),
// until the instance is deleted or the fake stops.
#include <signal.h>

#include <charconv>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "providers/gce/jwt.h"
#include "providers/yandex/fake/fake_yandex_cloud.h"
#include "providers/yandex/ps256_jwt.h"

using namespace tsum;
using namespace tsum::providers::yandex;
using namespace tsum::providers::yandex::fake;

namespace {

constexpr const char* kUsage = R"(usage: tsum-fake-yandex [flags]
  --listen HOST:PORT        address to serve on (default 127.0.0.1:0, an ephemeral port)
  --cert FILE --key-pem FILE  serve HTTPS with this PEM certificate chain and key (default: plain HTTP)
  --guest-root DIR          boot each instance's user data in a guest machine under DIR/<id>
                            until it is deleted (needs root; default: an instance is only a record)
  --guest-image TAR         the guests' stock root (scripts/guest-rootfs.sh TAR)
  --guest-network BRIDGE    the bridge guests join; the daemon listens on its address
  --key FILE                trust this authorized key file (its id, service account and public key)
  --key-out FILE            else: make an authorized key and write its key file here (default: none)
  --folder ID               the folder requests must name (default b1gfakefolder0000001)
  --faults SPEC             METHOD:KIND[:COUNT],... KIND is 429|503|500|timeout|lost, METHOD may be *
                            e.g. instances.create:lost,instances.get:429:2
  --provisioning-s S        PROVISIONING -> STARTING (default 1)
  --starting-s S            STARTING -> RUNNING (default 1)
  --stopping-s S            STOPPING -> STOPPED after a guest power-off (default 1)
  --operation-s S           an operation is done this long after it started (default 30)
  --operation-polls N       or after this many polls (default 1)
  --page-size N             most instances per page (default 1000)
  --hang-ms MS              how long a timeout fault holds the connection (default 30000)
)";

bool parse_number(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

struct Flags {
  FakeYandexCloudOptions cloud;
  std::string key_in, key_out;
  std::vector<Fault> faults;
};

std::string apply(Flags& f, std::string_view flag, std::string_view v) {
  FakeYandexCloudOptions& o = f.cloud;
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
  if (flag == "--key-pem") return o.listen.key_file = v, "";
  if (flag == "--key") return f.key_in = v, "";
  if (flag == "--key-out") return f.key_out = v, "";
  if (flag == "--folder") return o.compute.folder_id = v, "";
  if (flag == "--provisioning-s") return number(o.compute.provisioning_s);
  if (flag == "--starting-s") return number(o.compute.starting_s);
  if (flag == "--stopping-s") return number(o.compute.stopping_s);
  if (flag == "--operation-s") return number(o.compute.operation_s);
  if (flag == "--operation-polls") return count(o.compute.operation_polls);
  if (flag == "--page-size") return count(o.compute.page_size);
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

// The key to trust: the given key file's, or a new one.
Result<AuthorizedKey> key(const Flags& f) {
  if (!f.key_in.empty()) return load_authorized_key(f.key_in);
  auto pem = providers::gce::generate_rsa_key_pem();
  if (!pem) return pem.error();
  auto pub = providers::gce::rsa_public_key_pem(*pem);
  if (!pub) return pub.error();
  return AuthorizedKey{.id = f.cloud.key_id, .service_account_id = f.cloud.service_account_id, .private_key_pem = *pem,
                       .public_key_pem = *pub};
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::cout << kUsage, 0;
    if (i + 1 >= argc) return std::cerr << "tsum-fake-yandex: " << flag << " needs a value\n" << kUsage, 2;
    if (std::string err = apply(f, flag, argv[++i]); !err.empty()) return std::cerr << "tsum-fake-yandex: " << err << "\n", 2;
  }
  if (f.cloud.listen.cert_file.empty() != f.cloud.listen.key_file.empty())
    return std::cerr << "tsum-fake-yandex: --cert and --key-pem go together\n", 2;
  auto k = key(f);
  if (!k) return std::cerr << "tsum-fake-yandex: " << k.error().detail << "\n", 1;
  f.cloud.key_id = k->id;
  f.cloud.service_account_id = k->service_account_id;
  f.cloud.public_key_pem = k->private_key_pem;
  sigset_t stop_signals;  // blocked before the server thread starts, so only sigwait below receives them
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  FakeYandexCloud cloud(f.cloud);
  for (const auto& fault : f.faults) cloud.inject(fault);
  auto port = cloud.start();
  if (!port) return std::cerr << "tsum-fake-yandex: " << port.error().detail << "\n", 1;
  if (!f.key_out.empty()) {
    std::ofstream out(f.key_out);
    out << authorized_key_json(*k);
    if (!out.flush()) return std::cerr << "tsum-fake-yandex: cannot write " << f.key_out << "\n", 1;
  }
  std::cout << "tsum-fake-yandex: listening on " << cloud.base_url() << " (folder " << f.cloud.compute.folder_id
            << ", service account " << k->service_account_id << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  cloud.stop();
  std::cout << "tsum-fake-yandex: stopped by signal " << sig << std::endl;
  return 0;
}
