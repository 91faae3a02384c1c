// tsum-fake-cloud: the fake AWS cloud (fake_cloud.h) as a process, for trying tsum's AWS provider or the
// daemon end to end without an AWS account. Prints "listening on <base URL>" and serves until SIGINT or
// SIGTERM.
// With --guest-root DIR, each instance's cloud-init user data really runs, in a guest machine of the stock
// root (--guest-image) on a test bridge (--guest-network) under DIR/<id> (providers/fake_guest; needs root),
// until the instance is deleted or the fake stops.
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "providers/aws/fake/fake_cloud.h"

using namespace tsum;
using namespace tsum::providers::aws::fake;

namespace {

constexpr const char* kUsage = R"(usage: tsum-fake-cloud [flags]
  --listen HOST:PORT        address to serve on (default 127.0.0.1:0, an ephemeral port)
  --cert FILE --key FILE    serve HTTPS with this PEM certificate chain and key (default: plain HTTP)
  --guest-root DIR          boot each instance's user data in a guest machine under DIR/<id>
                            until it is deleted (needs root; default: an instance is only a record)
  --guest-image TAR         the guests' stock root (scripts/guest-rootfs.sh TAR)
  --guest-network BRIDGE    the bridge guests join; the daemon listens on its address
  --faults SPEC             ACTION:KIND[:COUNT],... KIND is 429|503|500|timeout|lost, ACTION may be *
                            e.g. RunInstances:lost,DescribeInstances:429:2
  --access-key ID           credentials requests must be signed with
  --secret-key SECRET         (default AKIDTSUMFAKE / tsum-fake-secret-key)
  --session-token TOKEN     require this session token as well
  --region REGION           the EC2 region requests are scoped to (default us-east-1)
  --pending-s S             pending -> running (default 2)
  --shutting-down-s S       shutting-down -> terminated (default 2)
  --terminated-visible-s S  how long terminated instances stay listed (default 3600)
  --visibility-delay-s S    how long a new instance is unknown to Describe (default 0)
  --page-size N             most items per page of any listing (default 1000)
  --hang-ms MS              how long a timeout fault holds the connection (default 30000)
  --retry-after-s S         Retry-After of a 429 fault (default 1)
)";

bool parse_number(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

// Applies one flag; an error message when it is unknown or its value is bad.
std::string apply(FakeCloudOptions& o, std::string_view flag, std::string_view v) {
  double n = 0;
  auto number = [&](double& field) { return parse_number(v, field) ? "" : std::string(flag) + ": not a number >= 0"; };
  if (flag == "--listen") {
    auto colon = v.rfind(':');
    double port = 0;
    if (colon == std::string_view::npos || !parse_number(v.substr(colon + 1), port) || port > 65535)
      return "--listen wants HOST:PORT";
    o.listen.host = std::string(v.substr(0, colon));
    o.listen.port = static_cast<std::uint16_t>(port);
    return "";
  }
  if (flag == "--cert") return o.listen.cert_file = v, "";
  if (providers::fake_guest::apply_guest_flag(o.guest, flag, v)) return "";
  if (flag == "--key") return o.listen.key_file = v, "";
  if (flag == "--access-key") return o.credentials.access_key_id = v, "";
  if (flag == "--secret-key") return o.credentials.secret_access_key = v, "";
  if (flag == "--session-token") return o.credentials.session_token = v, "";
  if (flag == "--region") return o.ec2.region = v, "";
  if (flag == "--pending-s") return number(o.ec2.pending_s);
  if (flag == "--shutting-down-s") return number(o.ec2.shutting_down_s);
  if (flag == "--terminated-visible-s") return number(o.ec2.terminated_visible_s);
  if (flag == "--visibility-delay-s") return number(o.ec2.visibility_delay_s);
  if (flag == "--page-size" || flag == "--hang-ms" || flag == "--retry-after-s") {
    if (!parse_number(v, n) || n < 1 || n > 1e9) return std::string(flag) + ": not a positive number";
    if (flag == "--page-size") o.ec2.page_size = static_cast<int>(n);
    else if (flag == "--hang-ms") o.hang = std::chrono::milliseconds(static_cast<long>(n));
    else o.retry_after_s = static_cast<int>(n);
    return "";
  }
  return "unknown flag " + std::string(flag);
}

}  // namespace

int main(int argc, char** argv) {
  FakeCloudOptions opts;
  std::vector<Fault> faults;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (i + 1 >= argc) {
      std::cerr << "tsum-fake-cloud: " << flag << " needs a value\n" << kUsage;
      return 2;
    }
    std::string_view value = argv[++i];
    std::string err;
    if (flag == "--faults") {
      auto parsed = parse_faults(value);
      if (parsed) faults = *parsed;
      else err = parsed.error().detail;
    } else {
      err = apply(opts, flag, value);
    }
    if (!err.empty()) {
      std::cerr << "tsum-fake-cloud: " << err << "\n";
      return 2;
    }
  }
  if (opts.listen.cert_file.empty() != opts.listen.key_file.empty()) {
    std::cerr << "tsum-fake-cloud: --cert and --key go together\n";
    return 2;
  }
  // Block the stop signals before the server thread starts, so only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  FakeCloud cloud(opts);
  for (const auto& f : faults) cloud.inject(f);
  auto port = cloud.start();
  if (!port) {
    std::cerr << "tsum-fake-cloud: " << port.error().detail << "\n";
    return 1;
  }
  std::cout << "tsum-fake-cloud: listening on " << cloud.base_url() << " (region " << opts.ec2.region
            << ", access key " << opts.credentials.access_key_id << ")" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  cloud.stop();
  std::cout << "tsum-fake-cloud: stopped by signal " << sig << std::endl;
  return 0;
}
