// The cloud sections' secrets read and their providers made (daemon/config/cloud_config.h); the parsing is in
// cloud_config.cpp, which reads nothing.
#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <fstream>

#include "daemon/config/cloud_config.h"
#include "daemon/config/config_fields.h"
#include "providers/azure/azure_login.h"
#include "providers/gce/gce_login.h"
#include "providers/hetzner/hetzner_login.h"
#include "providers/yandex/yandex_login.h"

namespace tsum::daemon {

using namespace config_detail;

namespace {

// The secret's value; nullopt (and no error) for an optional secret that is not named.
Result<std::optional<std::string>> read_secret(const SecretRef& ref) {
  if (!ref.env.empty()) {
    const char* v = std::getenv(ref.env.c_str());
    if (!v || !*v) return make_error(Code::invalid_argument, ref.field + ": environment variable " + ref.env + " is not set");
    return std::optional<std::string>(v);
  }
  if (ref.file.empty()) return std::optional<std::string>();
  if (auto s = check_mode(ref.file, S_IRWXG | S_IRWXO, "it holds " + ref.field + " and others may read it; chmod 600 " + ref.file); !s)
    return make_error(Code::invalid_argument, ref.field + ": " + s.error().detail);
  std::ifstream in(ref.file);
  std::string text{std::istreambuf_iterator<char>(in), {}};
  if (!in.good() && !in.eof()) return make_error(Code::invalid_argument, ref.field + ": " + ref.file + " cannot be read");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return make_error(Code::invalid_argument, ref.field + ": " + ref.file + " is empty");
  return std::optional<std::string>(std::move(text));
}

// Reads `ref` into *out (unchanged when an optional secret is not named).
Status read_into(const SecretRef& ref, std::string* out) {
  auto v = read_secret(ref);
  if (!v) return v.error();
  if (*v) *out = std::move(**v);
  return {};
}

// Parses a secret holding a key file's JSON; the parser's message names what is missing, never a value.
template <class Key, class ParseKey>
Status read_key(const SecretRef& ref, Key* out, ParseKey parse) {
  std::string text;
  if (auto s = read_into(ref, &text); !s) return s;
  auto key = parse(text);
  if (!key) return make_error(Code::invalid_argument, ref.field + ": " + key.error().detail);
  *out = std::move(*key);
  return {};
}

// The user's own AWS login for a section without keys: its credentials, region and endpoints, unless the
// section names them. No login: a source that answers why on every call.
void aws_login(AwsSection& a, const providers::aws::AwsEnvironment& env) {
  namespace aws = providers::aws;
  auto& o = a.options;
  auto login = aws::resolve_aws_login(env, a.profile);
  aws::AwsLoginPlan plan;
  aws::AwsCredentialSourceOptions so{.http = o.http, .clock = o.clock, .home = env.home};
  if (!login) {
    a.login_error = login.error().detail;
    plan.method = "none";
    plan.unusable = a.login_error;
  } else {
    if (!a.region_set && !login->region.empty()) o.region = login->region;
    if (o.ec2_endpoint.empty()) o.ec2_endpoint = login->endpoints.ec2;
    if (o.pricing_endpoint.empty()) o.pricing_endpoint = login->endpoints.pricing;
    if (o.ssm_endpoint.empty()) o.ssm_endpoint = login->endpoints.ssm;
    if (o.quotas_endpoint.empty()) o.quotas_endpoint = login->endpoints.quotas;
    so.endpoints = login->endpoints;
    plan = login->plan;
    a.login = plan.describe(env.home) + ", region " + (o.regions.empty() ? o.region : o.regions.front()) +
              (a.region_set ? " (the config file)" : login->region.empty() ? " (the default)" : " (" + login->region_from + ")");
  }
  so.region = o.regions.empty() ? o.region : o.regions.front();
  o.credential_source = std::make_shared<aws::AwsCredentialSource>(std::move(plan), std::move(so));
}

// Application Default Credentials for a section that names no key; a project the section names wins. On the
// metadata server, its project is asked for here (3 s at most).
void gce_login(GceSection& g, const providers::http::LoginEnvironment& env) {
  namespace gce = providers::gce;
  auto login = gce::resolve_gce_login(env);
  if (login && login->credentials.kind == "metadata") {
    boost::asio::io_context io;
    providers::http::HttpClient http(g.options.http);
    Result<std::string> project = make_error(Code::internal, "not asked");
    boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> { project = co_await gce::metadata_project(http, *login); },
                          boost::asio::detached);
    io.run();
    if (!project) login = project.error();
    else if (login->project.empty() && !project->empty()) {
      login->project = *project;
      login->project_from = "the metadata server";
    }
  }
  if (!login) {
    g.login_error = login.error().detail;
    g.options.unusable = g.login_error;
    return;
  }
  g.options.login = login->credentials;
  if (!g.project_set) g.options.project = login->project;
  if (g.options.project.empty()) {
    g.login_error = "gce: " + login->source + " names no project; set GOOGLE_CLOUD_PROJECT, run 'gcloud config set project ID', or give project";
    g.options.unusable = g.login_error;
    return;
  }
  g.login = login->source + ", project " + g.options.project +
            (g.project_set ? " (the config file)" : " (" + login->project_from + ")");
}

// The user's Azure login for a section that names no service principal; a subscription or login endpoint the
// section names wins. A managed identity is asked for here (1 s to answer, when probed).
void azure_login(AzureSection& a, const providers::http::LoginEnvironment& env) {
  namespace azure = providers::azure;
  auto& o = a.options;
  const std::string configured = o.credentials.subscription_id;
  auto login = azure::resolve_azure_login(env);
  if (login && login->fallback) {
    boost::asio::io_context io;
    providers::http::HttpClient http(o.http);
    Result<azure::AzureLogin> settled = make_error(Code::internal, "not asked");
    boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> { settled = co_await azure::settle_azure_login(http, *login); },
                          boost::asio::detached);
    io.run();
    login = std::move(settled);
  }
  if (!login) {
    a.login_error = login.error().detail;
    o.unusable = a.login_error;
    return;
  }
  o.credentials = login->credentials;
  if (!configured.empty()) o.credentials.subscription_id = configured;
  if (o.login_endpoint.empty()) o.login_endpoint = login->login_endpoint;
  if (o.credentials.subscription_id.empty()) {
    a.login_error = "azure: " + login->source + " names no subscription; set AZURE_SUBSCRIPTION_ID, run 'az account set "
                    "--subscription ID', or give subscription_id";
    o.unusable = a.login_error;
    return;
  }
  a.login = login->source + ", subscription " + o.credentials.subscription_id +
            (configured.empty() ? " (" + login->subscription_from + ")" : " (the config file)");
}

// The hcloud CLI's login for a section that names no token; an endpoint the section names wins.
void hetzner_login(HetznerSection& h, const providers::http::LoginEnvironment& env) {
  auto login = providers::hetzner::resolve_hetzner_login(env, h.context);
  if (!login) {
    h.login_error = login.error().detail;
    h.options.unusable = h.login_error;
    return;
  }
  h.options.token = login->token;
  if (h.options.endpoint.empty()) h.options.endpoint = login->endpoint;
  h.login = login->source;
}

// The yc CLI's login for a section that names no key; a folder or zone the section names wins.
void yandex_login(YandexSection& y, const providers::http::LoginEnvironment& env) {
  auto login = providers::yandex::resolve_yandex_login(env, y.profile);
  if (!login) {
    y.login_error = login.error().detail;
    y.options.unusable = y.login_error;
    return;
  }
  const auto& c = login->credentials;
  y.options.key = c.key;
  y.options.oauth_token = c.oauth_token;
  y.options.metadata = c.kind == "metadata";
  if (!y.metadata_endpoint.empty()) y.options.metadata_host = y.metadata_endpoint.substr(y.metadata_endpoint.find("://") + 3);
  if (!y.folder_set) y.options.folder_id = login->folder_id;
  if (!y.zone_set && !login->zone.empty()) y.options.zone = login->zone;
  y.login = login->source + ", folder " + y.options.folder_id + ", zone " + y.options.zone;
}

template <class P, class Section>
Status add(const std::optional<Section>& sec, std::string_view name, std::vector<std::unique_ptr<providers::Provider>>* out) {
  if (!sec) return {};
  auto p = P::make(sec->options);
  if (!p) return make_error(Code::invalid_argument, "providers." + std::string(name) + ": " + p.error().detail);
  out->push_back(std::move(*p));
  return {};
}

}  // namespace

Status resolve_cloud_secrets(CloudConfig& c) {
  if (c.aws) {
    auto& cr = c.aws->options.credentials;
    if (cr.access_key_id.empty() && c.aws->secret_access_key.named())
      return make_error(Code::invalid_argument, "providers.aws.secret_access_key: needs access_key_id");
    for (auto s : {read_into(c.aws->secret_access_key, &cr.secret_access_key), read_into(c.aws->session_token, &cr.session_token)})
      if (!s) return s;
    if (cr.access_key_id.empty()) aws_login(*c.aws, providers::aws::AwsEnvironment::current());
    else c.aws->login = "access_key_id " + cr.access_key_id + " (the config file)";
  }
  if (c.gce) {
    auto& g = *c.gce;
    if (g.service_account.named()) {
      if (auto s = read_key(g.service_account, &g.options.account, providers::gce::parse_service_account); !s) return s;
      g.login = "service account " + g.options.account.client_email + " (the config file)";
    } else {
      gce_login(g, providers::http::LoginEnvironment::current());
    }
  }
  if (c.azure) {
    auto& a = *c.azure;
    if (a.client_secret.named()) {
      if (auto s = read_into(a.client_secret, &a.options.credentials.client_secret); !s) return s;
      auto& sub = a.options.credentials.subscription_id;
      if (sub.empty()) {  // the keys in the file, the subscription as found: AZURE_SUBSCRIPTION_ID or the CLI's
        auto found = providers::azure::find_azure_subscription(providers::http::LoginEnvironment::current());
        if (!found)
          return make_error(Code::invalid_argument, "providers.azure.subscription_id: not given, and neither AZURE_SUBSCRIPTION_ID "
                                                    "nor the Azure CLI names one");
        sub = found->id;
      }
      a.login = "service principal " + a.options.credentials.client_id + " (the config file), subscription " +
                a.options.credentials.subscription_id;
    } else {
      azure_login(a, providers::http::LoginEnvironment::current());
    }
  }
  if (c.hetzner) {
    auto& h = *c.hetzner;
    if (auto s = read_into(h.token, &h.options.token); !s) return s;
    if (h.token.named()) h.login = "token (the config file)";
    else hetzner_login(h, providers::http::LoginEnvironment::current());
  }
  if (c.yandex) {
    auto& y = *c.yandex;
    if (y.key.named()) {
      if (auto s = read_key(y.key, &y.options.key, providers::yandex::parse_authorized_key); !s) return s;
      y.login = "service account " + y.options.key.service_account_id + " (the config file)";
    } else {
      yandex_login(y, providers::http::LoginEnvironment::current());
    }
    if (y.options.folder_id.empty() && y.login_error.empty()) {
      y.login_error = "yandex: no folder: set folder_id, YC_FOLDER_ID or 'yc config set folder-id ID'";
      y.options.unusable = y.login_error;
    }
  }
  return {};
}

Result<std::vector<std::unique_ptr<providers::Provider>>> make_cloud_providers(const CloudConfig& c) {
  std::vector<std::unique_ptr<providers::Provider>> out;
  for (auto s : {add<providers::aws::AwsProvider>(c.aws, "aws", &out), add<providers::gce::GceProvider>(c.gce, "gce", &out),
                 add<providers::azure::AzureProvider>(c.azure, "azure", &out),
                 add<providers::hetzner::HetznerProvider>(c.hetzner, "hetzner", &out),
                 add<providers::yandex::YandexProvider>(c.yandex, "yandex", &out)})
    if (!s) return s.error();
  return out;
}

}  // namespace tsum::daemon
