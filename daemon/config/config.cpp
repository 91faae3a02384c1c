#include "daemon/config/config.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "billing/prices/billing_rule.h"
#include "daemon/config/config_fields.h"
#include "daemon/config/slurm_config.h"

namespace tsum::daemon {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace config_detail;

namespace {

Status parse_host(const json& j, const std::string& path, const std::string& dir, providers::SshHost* h,
                  std::optional<std::string>* key_env) {
  Fields f(j, path);
  if (auto s = f.is_object(); !s) return s;
  std::string env;
  for (auto s : {f.text("name", &h->name, true), f.text("address", &h->address, true),
                 f.integer("port", &h->port, 1, 65535), f.text("user", &h->user, true),
                 f.text("key_file", &h->key_file), f.text("key_env", &env), f.integer("cores", &h->cores, 1, 100000, true),
                 f.integer("gpus", &h->gpus, 0, 1024), f.text("gpu_type", &h->gpu_type),
                 f.number("memory_gib", &h->memory_gib), f.number("hourly_price", &h->hourly_price, true),
                 f.text("billing", &h->billing), f.text("power_on", &h->power_on), f.text("power_off", &h->power_off),
                 f.text("work_dir", &h->work_dir), f.boolean("docker", &h->docker), f.no_unknown()})
    if (!s) return s;
  if (!safe_name(h->name)) return Fields::bad(f.at("name"), "letters, digits, '-', '_' and '.' only (at most 64)");
  if (h->address.front() == '-' || h->address.find_first_of(" \t\n'\"\\@") != std::string::npos)
    return Fields::bad(f.at("address"), "must be a host name or an IP address");
  if (h->user.front() == '-' || !safe_name(h->user)) return Fields::bad(f.at("user"), "is not a valid user name");
  if (h->key_file.empty() == env.empty()) return Fields::bad(path, "needs exactly one of key_file and key_env");
  if (!env.empty()) *key_env = env;
  if (!h->key_file.empty() && h->key_file[0] != '/') h->key_file = dir + "/" + h->key_file;
  if (auto rule = billing::parse_rule(h->billing); !rule) return Fields::bad(f.at("billing"), rule.error().detail);
  if (!safe_path(h->work_dir)) return Fields::bad(f.at("work_dir"), "must be an absolute path of letters, digits, / _ . -");
  return {};
}

Status parse_ssh(const json& j, const std::string& dir, DaemonConfig* out) {
  Fields f(j, "providers.ssh");
  if (auto s = f.is_object(); !s) return s;
  providers::SshOptions o;
  if (!f.has("hosts") || !j["hosts"].is_array() || j["hosts"].empty())
    return Fields::bad(f.at("hosts"), "must be a non-empty array of hosts");
  const auto& hosts = f.raw("hosts");
  std::set<std::string> names;
  for (size_t i = 0; i < hosts.size(); ++i) {
    std::string path = f.at("hosts") + "[" + std::to_string(i) + "]";
    providers::SshHost h;
    std::optional<std::string> key_env;
    if (auto s = parse_host(hosts[i], path, dir, &h, &key_env); !s) return s;
    if (!names.insert(h.name).second) return Fields::bad(path + ".name", "'" + h.name + "' is used twice");
    if (key_env) out->ssh_env_keys.push_back({h.name, *key_env});
    o.hosts.push_back(std::move(h));
  }
  for (auto s : {f.text("known_hosts", &o.known_hosts), f.seconds("connect_timeout_s", &o.connect_timeout),
                 f.seconds("server_alive_interval_s", &o.alive_interval),
                 f.integer("server_alive_count_max", &o.alive_count, 1, 100), f.seconds("boot_timeout_s", &o.boot_timeout),
                 f.seconds("push_timeout_s", &o.push_timeout), f.seconds("power_timeout_s", &o.power_timeout),
                 f.seconds("command_timeout_s", &o.command_timeout),
                 f.seconds("startup_deadline_s", &out->ssh_startup_deadline), f.no_unknown()})
    if (!s) return s;
  if (!o.known_hosts.empty() && o.known_hosts[0] != '/') o.known_hosts = dir + "/" + o.known_hosts;
  out->ssh = std::move(o);
  return {};
}

}  // namespace

// providers.byo: {"hourly_price": 0.1, "billing": "per_hour"}: what machines that join cost.
Status parse_byo(const json& j, DaemonConfig* out) {
  Fields f(j, "providers.byo");
  if (auto s = f.is_object(); !s) return s;
  for (auto s : {f.number("hourly_price", &out->byo_hourly_price), f.text("billing", &out->byo_billing), f.no_unknown()})
    if (!s) return s;
  if (auto rule = billing::parse_rule(out->byo_billing); !rule) return Fields::bad(f.at("billing"), rule.error().detail);
  return {};
}

std::map<std::string, std::chrono::seconds> DaemonConfig::startup_deadlines() const {
  auto out = clouds.startup_deadlines();
  if (ssh) out["ssh"] = ssh_startup_deadline;
  if (slurm) out["slurm"] = slurm_startup_deadline;
  if (kubernetes) out["kubernetes"] = kubernetes_startup_deadline;
  return out;
}

Result<DaemonConfig> parse_config(std::string_view text, const std::string& dir) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return make_error(Code::invalid_argument, "config: not valid JSON");
  Fields top(j, "config");
  if (auto s = top.is_object(); !s) return s.error();
  DaemonConfig out;
  if (top.has("daemon")) {
    Fields d(top.raw("daemon"), "daemon");
    if (auto s = d.is_object(); !s) return s.error();
    for (auto s : {d.text("public_url", &out.public_url), d.no_unknown()})
      if (!s) return s.error();
  }
  if (top.has("providers")) {
    const auto& providers = top.raw("providers");
    Fields p(providers, "providers");
    if (auto s = p.is_object(); !s) return s.error();
    for (const auto& [k, v] : providers.items()) {
      Status s;
      if (k == "ssh") s = parse_ssh(v, dir, &out);
      else if (k == "byo") s = parse_byo(v, &out);
      else if (k == "slurm") {
        providers::SlurmOptions o;
        s = parse_slurm_section(v, dir, &o, &out.slurm_startup_deadline, &out.slurm_token);
        if (s) out.slurm = std::move(o);
      } else if (k == "kubernetes") {
        providers::KubernetesOptions o;
        s = parse_kubernetes_section(v, dir, &o, &out.kubernetes_startup_deadline, &out.kubeconfig);
        if (s) out.kubernetes = std::move(o);
      }
      else if (std::find(std::begin(kCloudNames), std::end(kCloudNames), k) != std::end(kCloudNames))
        s = parse_cloud_section(k, v, dir, &out.clouds);
      else
        return Fields::bad("providers." + k, "unknown provider (known: ssh, slurm, kubernetes, byo, aws, gce, azure, hetzner, yandex)");
      if (!s) return s.error();
    }
  }
  if (auto s = top.no_unknown(); !s) return s.error();
  return out;
}

}  // namespace tsum::daemon
