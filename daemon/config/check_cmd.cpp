#include "daemon/config/check_cmd.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "daemon/config/config.h"
#include "daemon/config/kube_config.h"
#include "providers/kubernetes/kubernetes_provider.h"

namespace tsum::daemon {

namespace {

struct Verdict {
  std::string provider;
  bool usable = false;
  std::string login;   // which login it used
  std::string detail;  // what proved it, or why not and the fix
};

std::string line_of(const Verdict& v) {
  std::string detail = v.detail;
  if (detail.starts_with(v.provider + ": ")) detail = detail.substr(v.provider.size() + 2);
  if (!v.usable) return v.provider + ": not usable" + (v.login.empty() ? "" : " with " + v.login) + ": " + detail;
  return v.provider + ": usable" + (v.login.empty() ? "" : ", " + v.login) + (detail.empty() ? "" : ", " + detail);
}

// The login a configured cloud found (or why none), as resolve_cloud_secrets left it.
struct Found {
  std::string login, error;
};
Found found(const CloudConfig& c, std::string_view name) {
  if (name == "aws" && c.aws) return {c.aws->login, c.aws->login_error};
  if (name == "gce" && c.gce) return {c.gce->login, c.gce->login_error};
  if (name == "azure" && c.azure) return {c.azure->login, c.azure->login_error};
  if (name == "hetzner" && c.hetzner) return {c.hetzner->login, c.hetzner->login_error};
  if (name == "yandex" && c.yandex) return {c.yandex->login, c.yandex->login_error};
  return {};
}

// A Kubernetes cluster to check: its options (from the config, or the user's kubeconfig), or why there are none.
struct KubeCheck {
  std::optional<providers::KubernetesOptions> options;
  std::string error;
};

// Proves each configured cloud, and the cluster, with one call.
std::vector<Verdict> check_all(CloudConfig& clouds, const KubeCheck& kube) {
  std::vector<Verdict> out;
  auto providers = make_cloud_providers(clouds);
  if (providers && kube.options) providers->push_back(std::make_unique<providers::KubernetesProvider>(*kube.options));
  boost::asio::io_context io;
  boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
    if (!providers) {
      out.push_back({"config", false, "", providers.error().detail});
      co_return;
    }
    for (auto& p : *providers) {
      Verdict v{std::string(p->name())};
      if (p->name() == "aws") {
        auto& a = *clouds.aws;
        v.login = a.login;
        if (!a.login_error.empty()) {
          v.detail = a.login_error;
        } else {
          auto source = a.options.credential_source;
          if (!source) {  // keys in the file
            providers::aws::AwsLoginPlan plan;
            plan.method = "config-file";
            plan.credentials = a.options.credentials;
            source = std::make_shared<providers::aws::AwsCredentialSource>(
                plan, providers::aws::AwsCredentialSourceOptions{.http = a.options.http, .region = a.options.region});
          }
          auto arn = co_await source->caller_identity();
          v.usable = static_cast<bool>(arn);
          v.detail = arn ? "account " + *arn : arn.error().detail;
          if (auto* aws = dynamic_cast<providers::aws::AwsProvider*>(p.get()); aws && arn) {
            auto ami = co_await aws->image("");  // what its machines boot, found if not configured
            v.usable = static_cast<bool>(ami);
            v.detail += ami ? ", image " + *ami + (a.options.image_id.empty() ? " (" + a.options.image_parameter + ")" : "")
                            : "; " + ami.error().detail;
          }
        }
      } else {
        // (GCC 12: no temporaries or if-initializers around a co_await)
        const Found f = found(clouds, p->name());
        const providers::Requirements any;
        v.login = f.login;
        v.detail = f.error;
        if (!f.error.empty()) {
          out.push_back(std::move(v));
          continue;
        }
        auto offers = co_await p->offers(any);
        v.usable = static_cast<bool>(offers);
        v.detail = offers ? std::to_string(offers->size()) + " offers" : offers.error().detail;
      }
      if (p->name() == "kubernetes") v.login = "server " + kube.options->api_url;
      out.push_back(std::move(v));
    }
  }, boost::asio::detached);
  io.run();
  if (!kube.error.empty()) out.push_back({"kubernetes", false, "", kube.error});
  return out;
}

}  // namespace

void log_logins(const CloudConfig& clouds, std::ostream& out) {
  for (const auto& name : clouds.names()) {
    auto f = found(clouds, name);
    if (!f.error.empty()) out << "tsumd: " << name << ": not usable: " << f.error << "\n";
    else if (!f.login.empty()) out << "tsumd: " << name << ": login " << f.login << "\n";
  }
}

int check_command(const std::string& config_path, bool json) {
  CloudConfig clouds;
  KubeCheck kube;
  if (!config_path.empty()) {
    auto config = load_config(config_path);
    if (!config) {
      std::cerr << "tsumd: " << config.error().detail << "\n";
      return 2;
    }
    clouds = std::move(config->clouds);
    kube.options = std::move(config->kubernetes);
    if (clouds.names().empty() && !kube.options) {
      std::cerr << "tsumd: " << config_path << " configures no cloud and no cluster\n";
      return 2;
    }
  } else {
    providers::KubernetesOptions o;  // the user's kubeconfig, as an empty section takes it
    if (auto s = read_kubernetes_credentials({}, &o); s) kube.options = std::move(o);
    else kube.error = s.error().detail;
    for (auto name : kLoginClouds)
      if (auto s = parse_cloud_section(name, nlohmann::json::object(), ".", &clouds); !s) {
        std::cerr << "tsumd: " << s.error().detail << "\n";
        return 2;
      }
    if (auto s = resolve_cloud_secrets(clouds); !s) {
      std::cerr << "tsumd: " << s.error().detail << "\n";
      return 2;
    }
  }
  const auto verdicts = check_all(clouds, kube);
  bool all_usable = !verdicts.empty(), any_usable = false;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& v : verdicts) {
    all_usable = all_usable && v.usable;
    any_usable = any_usable || v.usable;
    if (json) list.push_back({{"provider", v.provider}, {"usable", v.usable}, {"login", v.login}, {"detail", v.detail}});
    else std::cout << line_of(v) << "\n";
  }
  if (json) std::cout << nlohmann::json{{"providers", list}}.dump(2) << "\n";
  return (config_path.empty() ? any_usable : all_usable) ? 0 : 1;
}

}  // namespace tsum::daemon
