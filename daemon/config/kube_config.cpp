#include "daemon/config/kube_config.h"

#include "billing/prices/billing_rule.h"
#include "daemon/config/config_fields.h"
#include "providers/kubernetes/kubeconfig.h"

namespace tsum::daemon {

using nlohmann::json;
using namespace config_detail;

namespace {

Status parse_rule_and_currency(Fields& f, std::string* rule, std::string* currency) {
  for (auto s : {f.text("billing_rule", rule), f.text("currency", currency)})
    if (!s) return s;
  if (auto r = billing::parse_rule(*rule); !r) return Fields::bad(f.at("billing_rule"), r.error().detail);
  if (currency->size() != 3) return Fields::bad(f.at("currency"), "must be a 3-letter currency code");
  return {};
}

bool dns_label(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

}  // namespace

Status parse_kubernetes_section(const json& j, const std::string& dir, providers::KubernetesOptions* out,
                                std::chrono::seconds* startup_deadline, KubeconfigRef* kubeconfig) {
  Fields f(j, "providers.kubernetes");
  if (auto s = f.is_object(); !s) return s;
  providers::KubernetesOptions o;
  if (f.has("shapes")) {
    const auto& shapes = f.raw("shapes");
    if (!shapes.is_object()) return Fields::bad(f.at("shapes"), "must be an object of node shape names");
    for (const auto& [name, v] : shapes.items()) {
      Fields s(v, f.at("shapes") + "." + name);
      if (auto st = s.is_object(); !st) return st;
      auto& price = o.shapes[name];
      if (auto st = s.number("hourly_price", &price.hourly_price, true); !st) return st;
      if (auto st = parse_rule_and_currency(s, &price.billing_rule, &price.currency); !st) return st;
      if (auto st = s.no_unknown(); !st) return st;
    }
  }
  if (f.has("prices")) {
    Fields p(f.raw("prices"), f.at("prices"));
    if (auto s = p.is_object(); !s) return s;
    for (auto s : {p.number("vcpu_hour", &o.resources.vcpu_hour), p.number("gib_hour", &o.resources.gib_hour),
                   p.number("gpu_hour", &o.resources.gpu_hour)})
      if (!s) return s;
    if (auto s = parse_rule_and_currency(p, &o.resources.billing_rule, &o.resources.currency); !s) return s;
    if (auto s = p.no_unknown(); !s) return s;
  }
  for (auto s : {f.text("api_url", &o.api_url), f.text("ca_file", &o.ca_file), f.text("token_file", &o.token_file),
                 f.text("client_cert_file", &o.client_cert_file), f.text("client_key_file", &o.client_key_file),
                 f.text("namespace", &o.namespace_), f.text("kubeconfig", &kubeconfig->path),
                 f.text("context", &kubeconfig->context), f.text("image_pull_secret", &o.image_pull_secret),
                 f.seconds("active_deadline_s", &o.active_deadline), f.seconds("request_timeout_s", &o.request_timeout),
                 f.seconds("delete_timeout_s", &o.delete_timeout), f.seconds("startup_deadline_s", startup_deadline),
                 f.no_unknown()})
    if (!s) return s;
  if (!o.api_url.empty() && !o.api_url.starts_with("https://") && !o.api_url.starts_with("http://"))
    return Fields::bad(f.at("api_url"), "must be an https:// URL");
  if (!kubeconfig->context.empty() && !o.api_url.empty())
    return Fields::bad(f.at("context"), "names a context of a kubeconfig: give it or api_url, not both");
  if (o.client_cert_file.empty() != o.client_key_file.empty())
    return Fields::bad(f.at("client_cert_file"), "and client_key_file go together");
  if (!o.token_file.empty() && !o.client_cert_file.empty())
    return Fields::bad(f.at("token_file"), "or a client certificate, not both");
  if (!o.namespace_.empty() && !dns_label(o.namespace_))
    return Fields::bad(f.at("namespace"), "is not a namespace name (lowercase letters, digits and '-')");
  if (!o.image_pull_secret.empty() && !dns_label(o.image_pull_secret))
    return Fields::bad(f.at("image_pull_secret"), "is not a Secret name");
  for (auto* p : {&o.ca_file, &o.token_file, &o.client_cert_file, &o.client_key_file, &kubeconfig->path})
    *p = absolute_in(dir, *p);
  *out = std::move(o);
  return {};
}

Status read_kubernetes_credentials(const KubeconfigRef& ref, providers::KubernetesOptions* out) {
  if (!ref.path.empty()) {
    if (auto s = providers::kube::apply_kubeconfig(ref.path, ref.context, out); !s) return s;
  } else if (out->api_url.empty()) {  // neither: the user's own, as kubectl finds it
    const auto env = providers::http::LoginEnvironment::current();
    if (auto s = providers::kube::apply_kubeconfig(providers::kube::kubeconfig_paths(env), ref.context, out); !s)
      return make_error(s.code(), "providers.kubernetes: " + s.error().detail);
  }
  if (out->api_url.empty()) return make_error(Code::invalid_argument, "providers.kubernetes: no API server URL");
  for (const auto& [file, what] : {std::pair{out->token_file, "token"}, {out->client_key_file, "client key"}}) {
    if (file.empty()) continue;
    if (auto s =
            check_mode(file, S_IRWXG | S_IRWXO,
                       std::string("it holds the Kubernetes ") + what + " and others may read it; chmod 600 " + file);
        !s)
      return s;
  }
  return {};
}

}  // namespace tsum::daemon
