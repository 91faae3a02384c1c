#include "daemon/config/slurm_config.h"

#include <cstdlib>
#include <fstream>

#include "billing/prices/billing_rule.h"
#include "daemon/config/config_fields.h"

namespace tsum::daemon {

using nlohmann::json;
using namespace config_detail;

namespace {

Status parse_login(const json& j, const std::string& dir, providers::SshHost* h) {
  Fields f(j, "providers.slurm.login");
  if (auto s = f.is_object(); !s) return s;
  for (auto s : {f.text("name", &h->name), f.text("address", &h->address, true), f.integer("port", &h->port, 1, 65535),
                 f.text("user", &h->user, true), f.text("key_file", &h->key_file, true), f.no_unknown()})
    if (!s) return s;
  if (!h->name.empty() && !safe_name(h->name)) return Fields::bad(f.at("name"), "letters, digits, '-', '_' and '.' only");
  if (h->address.front() == '-' || h->address.find_first_of(" \t\n'\"\\@") != std::string::npos)
    return Fields::bad(f.at("address"), "must be a host name or an IP address");
  if (h->user.front() == '-' || !safe_name(h->user)) return Fields::bad(f.at("user"), "is not a valid user name");
  h->key_file = absolute_in(dir, h->key_file);
  return {};
}

Status parse_partition(const json& j, const std::string& path, providers::SlurmPartitionPrice* p) {
  Fields f(j, path);
  if (auto s = f.is_object(); !s) return s;
  for (auto s : {f.number("hourly_price", &p->hourly_price, true), f.text("billing_rule", &p->billing_rule),
                 f.text("currency", &p->currency), f.no_unknown()})
    if (!s) return s;
  if (auto rule = billing::parse_rule(p->billing_rule); !rule) return Fields::bad(f.at("billing_rule"), rule.error().detail);
  if (p->currency.size() != 3) return Fields::bad(f.at("currency"), "must be a 3-letter currency code");
  return {};
}

// providers.slurm.slurmrestd: {"url", "user", "token_env" | "token_file"}.
Status parse_rest(const json& j, const std::string& dir, providers::SlurmOptions* o, SlurmTokenRef* token) {
  Fields f(j, "providers.slurm.slurmrestd");
  if (auto s = f.is_object(); !s) return s;
  for (auto s : {f.text("url", &o->rest_url, true), f.text("user", &o->rest_user, true), f.text("token_env", &token->env),
                 f.text("token_file", &token->file), f.no_unknown()})
    if (!s) return s;
  if (!o->rest_url.starts_with("http://") && !o->rest_url.starts_with("https://"))
    return Fields::bad(f.at("url"), "must be an http:// or https:// URL");
  if (token->env.empty() == token->file.empty())
    return Fields::bad("providers.slurm.slurmrestd", "needs exactly one of token_env and token_file");
  token->file = absolute_in(dir, token->file);
  return {};
}

}  // namespace

Status read_slurm_token(const SlurmTokenRef& ref, providers::SlurmOptions* out) {
  if (!ref.env.empty()) {
    const char* v = std::getenv(ref.env.c_str());
    if (!v || !*v)
      return make_error(Code::invalid_argument, "providers.slurm.slurmrestd: environment variable " + ref.env + " is not set");
    out->rest_token = v;
    return {};
  }
  if (ref.file.empty()) return {};
  if (auto s = check_mode(ref.file, S_IRWXG | S_IRWXO, "it holds slurmrestd's token and others may read it; chmod 600 " + ref.file); !s)
    return s;
  std::ifstream in(ref.file);
  std::string text{std::istreambuf_iterator<char>(in), {}};
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return make_error(Code::invalid_argument, "providers.slurm.slurmrestd: " + ref.file + " is empty");
  out->rest_token = std::move(text);
  return {};
}

Status parse_slurm_section(const json& j, const std::string& dir, providers::SlurmOptions* out,
                           std::chrono::seconds* startup_deadline, SlurmTokenRef* token) {
  Fields f(j, "providers.slurm");
  if (auto s = f.is_object(); !s) return s;
  providers::SlurmOptions o;
  if (f.has("partitions")) {
    const auto& parts = f.raw("partitions");
    if (!parts.is_object()) return Fields::bad(f.at("partitions"), "must be an object of partition names");
    for (const auto& [name, v] : parts.items()) {
      if (!safe_name(name)) return Fields::bad(f.at("partitions") + "." + name, "is not a partition name");
      if (auto s = parse_partition(v, f.at("partitions") + "." + name, &o.partitions[name]); !s) return s;
    }
  }
  if (f.has("slurmrestd"))
    if (auto s = parse_rest(f.raw("slurmrestd"), dir, &o, token); !s) return s;
  if (f.has("login")) {
    if (auto s = parse_login(f.raw("login"), dir, &o.login); !s) return s;
  } else if (o.rest_url.empty()) {
    return Fields::bad(f.at("login"), "is required (or slurmrestd)");
  }
  for (auto s : {f.text("work_dir", &o.work_dir), f.strings("sbatch_args", &o.sbatch_args), f.boolean("docker", &o.docker),
                 f.text("known_hosts", &o.known_hosts), f.seconds("connect_timeout_s", &o.connect_timeout),
                 f.seconds("command_timeout_s", &o.command_timeout), f.seconds("push_timeout_s", &o.push_timeout),
                 f.seconds("cancel_timeout_s", &o.cancel_timeout), f.seconds("startup_deadline_s", startup_deadline),
                 f.no_unknown()})
    if (!s) return s;
  if (!safe_path(o.work_dir)) return Fields::bad(f.at("work_dir"), "must be an absolute path of letters, digits, / _ . -");
  for (const auto& a : o.sbatch_args)
    if (!a.starts_with("--")) return Fields::bad(f.at("sbatch_args"), "'" + a + "' is not a long option (--name=value)");
  o.known_hosts = absolute_in(dir, o.known_hosts);
  *out = std::move(o);
  return {};
}

}  // namespace tsum::daemon
