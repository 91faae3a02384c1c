#include "daemon/config/cloud_config.h"

#include "daemon/config/config_fields.h"

namespace tsum::daemon {

using nlohmann::json;
using namespace config_detail;
using std::chrono::milliseconds;

namespace {

// `<name>_env` / `<name>_file`: exactly one when required, at most one otherwise.
Status secret(Fields& f, const std::string& name, const std::string& dir, bool required, SecretRef* out) {
  out->field = f.at(name);
  if (auto s = f.text(name + "_env", &out->env); !s) return s;
  if (auto s = f.text(name + "_file", &out->file); !s) return s;
  if (!out->env.empty() && !out->file.empty())
    return Fields::bad(out->field, "give " + name + "_env or " + name + "_file, not both");
  if (required && !out->named()) return Fields::bad(out->field, "needs " + name + "_env or " + name + "_file");
  out->file = absolute_in(dir, out->file);
  return {};
}

// A base-URL override: empty (the provider's own) or http(s)://...
Status endpoint(Fields& f, const std::string& key, std::string* out) {
  if (auto s = f.text(key, out); !s) return s;
  if (!out->empty() && !out->starts_with("https://") && !out->starts_with("http://"))
    return Fields::bad(f.at(key), "must be an http:// or https:// URL");
  return {};
}

// The fields every cloud section has: the CA file, the boot payload's directory and lifetime, timeouts, and
// the metadata service the agents of spot machines ask for notices (a stand-in's; empty: the cloud's own).
template <class Options>
Status common(Fields& f, const std::string& dir, Options* o) {
  int lifetime_min = static_cast<int>(o->cloud_init.max_lifetime.count());
  int attempt_s = static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(o->attempt_timeout).count());
  for (auto s : {f.text("ca_file", &o->http.ca_file), f.text("cloud_init_dir", &o->cloud_init.dir),
                 f.integer("max_lifetime_min", &lifetime_min, 0, 7 * 24 * 60),
                 f.integer("attempt_timeout_s", &attempt_s, 1, 600), f.seconds("catalog_ttl_s", &o->catalog_ttl),
                 endpoint(f, "metadata_url", &o->cloud_init.metadata_url)})
    if (!s) return s;
  o->http.ca_file = absolute_in(dir, o->http.ca_file);
  if (!safe_path(o->cloud_init.dir)) return Fields::bad(f.at("cloud_init_dir"), "must be an absolute path of letters, digits, / _ . -");
  o->cloud_init.max_lifetime = std::chrono::minutes(lifetime_min);
  o->attempt_timeout = std::chrono::seconds(attempt_s);
  return {};
}

Status poll_ms(Fields& f, milliseconds* out) {
  int ms = static_cast<int>(out->count());
  if (auto s = f.integer("operation_poll_ms", &ms, 10, 60000); !s) return s;
  *out = milliseconds(ms);
  return {};
}

Status parse_aws(Fields& f, const std::string& dir, AwsSection* a) {
  auto& o = a->options;
  if (f.has("region") && f.has("regions"))
    return Fields::bad(f.at("regions"), "give region (one) or regions (several, the first the default), not both");
  a->region_set = f.has("region") || f.has("regions");
  const bool keys = f.has("access_key_id");
  if (f.has("image_id") && f.has("image_parameter"))
    return Fields::bad(f.at("image_parameter"), "give image_id (one AMI) or image_parameter (found per region), not both");
  if (f.has("profile") && keys) return Fields::bad(f.at("profile"), "give profile (a login) or access_key_id (keys), not both");
  for (auto s : {f.text("region", &o.region), f.strings("regions", &o.regions), f.text("image_id", &o.image_id),
                 f.text("image_parameter", &o.image_parameter),
                 endpoint(f, "ssm_endpoint", &o.ssm_endpoint), endpoint(f, "quotas_endpoint", &o.quotas_endpoint),
                 f.text("access_key_id", &o.credentials.access_key_id, keys), f.text("profile", &a->profile),
                 secret(f, "secret_access_key", dir, keys, &a->secret_access_key),
                 secret(f, "session_token", dir, false, &a->session_token), f.text("key_name", &o.key_name),
                 f.text("subnet_id", &o.subnet_id), f.strings("security_group_ids", &o.security_group_ids),
                 endpoint(f, "ec2_endpoint", &o.ec2_endpoint), endpoint(f, "pricing_endpoint", &o.pricing_endpoint),
                 common(f, dir, &o)})
    if (!s) return s;
  if (o.image_parameter.empty()) return Fields::bad(f.at("image_parameter"), "must not be empty");
  return {};
}

Status parse_gce(Fields& f, const std::string& dir, GceSection* g) {
  auto& o = g->options;
  int run_s = static_cast<int>(o.max_run_duration.count());
  g->project_set = f.has("project");
  for (auto s : {secret(f, "service_account", dir, false, &g->service_account), f.text("project", &o.project),
                 f.text("zone", &o.zone), f.text("source_image", &o.source_image), f.integer("disk_gb", &o.disk_gb, 10, 65536),
                 f.text("network", &o.network), f.integer("max_run_duration_s", &run_s, 0, 120 * 86400),
                 endpoint(f, "compute_endpoint", &o.compute_endpoint), endpoint(f, "billing_endpoint", &o.billing_endpoint),
                 endpoint(f, "token_endpoint", &o.token_endpoint), poll_ms(f, &o.operation_poll), common(f, dir, &o)})
    if (!s) return s;
  o.max_run_duration = std::chrono::seconds(run_s);
  return {};
}

Status parse_azure(Fields& f, const std::string& dir, AzureSection* a) {
  auto& o = a->options;
  auto& c = o.credentials;
  const bool keys = f.has("client_id") || f.has("tenant_id") || f.has("client_secret_env") || f.has("client_secret_file");
  for (auto s : {f.text("tenant_id", &c.tenant_id, keys), f.text("client_id", &c.client_id, keys),
                 f.text("subscription_id", &c.subscription_id),
                 secret(f, "client_secret", dir, keys, &a->client_secret), f.text("location", &o.location),
                 f.integer("disk_gb", &o.disk_gb, 30, 65536), f.text("admin_username", &o.admin_username),
                 endpoint(f, "login_endpoint", &o.login_endpoint),
                 endpoint(f, "management_endpoint", &o.management_endpoint),
                 endpoint(f, "prices_endpoint", &o.prices_endpoint), poll_ms(f, &o.operation_poll), common(f, dir, &o)})
    if (!s) return s;
  return {};
}

Status parse_hetzner(Fields& f, const std::string& dir, HetznerSection* h) {
  auto& o = h->options;
  if (f.has("context") && (f.has("token_env") || f.has("token_file")))
    return Fields::bad(f.at("context"), "give context (the hcloud CLI's login) or token_env/token_file, not both");
  for (auto s : {secret(f, "token", dir, false, &h->token), f.text("context", &h->context),
                 f.text("location", &o.location), f.text("image", &o.image),
                 f.strings("ssh_keys", &o.ssh_keys), endpoint(f, "endpoint", &o.endpoint), common(f, dir, &o)})
    if (!s) return s;
  return {};
}

Status parse_yandex(Fields& f, const std::string& dir, YandexSection* y) {
  auto& o = y->options;
  y->folder_set = f.has("folder_id");
  y->zone_set = f.has("zone");
  if (f.has("profile") && (f.has("key_env") || f.has("key_file")))
    return Fields::bad(f.at("profile"), "give profile (the yc CLI's login) or key_env/key_file, not both");
  if (f.has("image_id") && f.has("image_family"))
    return Fields::bad(f.at("image_family"), "give image_id (one image) or image_family (its latest), not both");
  for (auto s : {secret(f, "key", dir, false, &y->key), f.text("profile", &y->profile), f.text("folder_id", &o.folder_id),
                 f.text("subnet_id", &o.subnet_id), f.text("image_id", &o.image_id), f.text("image_family", &o.image_family),
                 endpoint(f, "vpc_endpoint", &o.vpc_endpoint), endpoint(f, "metadata_endpoint", &y->metadata_endpoint),
                 f.text("zone", &o.zone),
                 f.text("currency", &o.currency), f.integer("disk_gb", &o.disk_gb, 5, 65536),
                 f.text("disk_type", &o.disk_type), endpoint(f, "iam_endpoint", &o.iam_endpoint),
                 endpoint(f, "compute_endpoint", &o.compute_endpoint),
                 endpoint(f, "operation_endpoint", &o.operation_endpoint),
                 endpoint(f, "billing_endpoint", &o.billing_endpoint), poll_ms(f, &o.operation_poll), common(f, dir, &o)})
    if (!s) return s;
  return {};
}

template <class Section, class Parse>
Status section(const json& j, const std::string& name, const std::string& dir, std::optional<Section>* out, Parse parse) {
  Fields f(j, "providers." + name);
  if (auto s = f.is_object(); !s) return s;
  Section sec;
  if (auto s = parse(f, dir, &sec); !s) return s;
  if (auto s = f.seconds("startup_deadline_s", &sec.startup_deadline); !s) return s;
  if (auto s = f.no_unknown(); !s) return s;
  *out = std::move(sec);
  return {};
}

}  // namespace

std::vector<std::string> CloudConfig::names() const {
  std::vector<std::string> out;
  for (auto [name, set] : {std::pair{"aws", aws.has_value()}, {"gce", gce.has_value()}, {"azure", azure.has_value()},
                           {"hetzner", hetzner.has_value()}, {"yandex", yandex.has_value()}})
    if (set) out.emplace_back(name);
  return out;
}

std::map<std::string, std::chrono::seconds> CloudConfig::startup_deadlines() const {
  std::map<std::string, std::chrono::seconds> out;
  if (aws) out["aws"] = aws->startup_deadline;
  if (gce) out["gce"] = gce->startup_deadline;
  if (azure) out["azure"] = azure->startup_deadline;
  if (hetzner) out["hetzner"] = hetzner->startup_deadline;
  if (yandex) out["yandex"] = yandex->startup_deadline;
  return out;
}

Status parse_cloud_section(std::string_view name, const json& j, const std::string& dir, CloudConfig* out) {
  const std::string n(name);
  if (n == "aws") return section(j, n, dir, &out->aws, parse_aws);
  if (n == "gce") return section(j, n, dir, &out->gce, parse_gce);
  if (n == "azure") return section(j, n, dir, &out->azure, parse_azure);
  if (n == "hetzner") return section(j, n, dir, &out->hetzner, parse_hetzner);
  if (n == "yandex") return section(j, n, dir, &out->yandex, parse_yandex);
  return make_error(Code::invalid_argument, "providers." + n + ": not a cloud");
}

}  // namespace tsum::daemon
