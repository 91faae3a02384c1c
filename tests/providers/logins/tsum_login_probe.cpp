// tsum-login-probe: resolves one cloud's login chain for cases read as JSON lines on stdin and prints one JSON
// line per case, for the differential tests beside it (each holds a chain against its SDK or CLI).
//   in:  {"cloud": "aws" | "gce" | "hetzner" | "kubernetes" | "yandex", "env": {NAME: value}, "home": DIR, and what tsum's config may name: "profile"
//        (aws), "context" (hetzner)}
//   out: {"error": true, "detail"} or {"error": false, ...}:
//     aws      "region", "creds": PLAN; PLAN is {"method", "access_key", "secret_key", "token"} for keys (a
//              credential_process is run for them), {"method", "role_arn", "source": PLAN} for assume-role,
//              {"method", "role_arn", "token_file"} for web identity, {"method", "start_url", "sso_region",
//              "account_id", "role_name"} for SSO, {"method"} otherwise
//     gce      "kind" (service_account, authorized_user, metadata), "email" or "client_id", "project"; the
//              metadata server is asked (its ping and project) as google-auth asks it
//     hetzner  "token", "endpoint", "context"
//     kubernetes  "server", "ca", "token", "cert", "key" (PEM or the file's text), "namespace"; "context" in
//     yandex   "kind" (key, oauth, metadata), "service_account_id", "oauth_token", "folder", "zone"; "profile" in
//     azure    "kind" (secret, certificate, workload_identity, managed_identity, cli_user), "tenant", "client_id",
//              "secret", "certificate", "token_file", "refresh_token", "username", "identity", "subscription";
//              the metadata service is asked as azure-identity asks it
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "providers/aws/aws_login.h"
#include "providers/azure/azure_login.h"
#include "providers/gce/gce_login.h"
#include "providers/hetzner/hetzner_login.h"
#include "providers/kubernetes/kubeconfig.h"
#include "providers/yandex/yandex_login.h"

using nlohmann::json;
using tsum::providers::http::LoginEnvironment;

namespace {

using namespace tsum::providers::aws;

json plan_json(const AwsLoginPlan& p) {
  json out = {{"method", p.method}};
  if (p.method == "env" || p.method == "shared-credentials-file" || p.method == "config-file") {
    out["access_key"] = p.credentials.access_key_id;
    out["secret_key"] = p.credentials.secret_access_key;
    out["token"] = p.credentials.session_token;
  } else if (p.method == "custom-process") {
    auto c = run_credential_process(p.process, p.profile);
    if (!c) return {{"process_error", c.error().detail}};
    out["access_key"] = c->credentials.access_key_id;
    out["secret_key"] = c->credentials.secret_access_key;
    out["token"] = c->credentials.session_token;
  } else if (p.method == "assume-role") {
    out["role_arn"] = p.role_arn;
    out["source"] = p.source ? plan_json(*p.source) : json(nullptr);
    if (out["source"].contains("process_error")) return out["source"];
  } else if (p.method == "assume-role-with-web-identity") {
    out["role_arn"] = p.role_arn;
    out["token_file"] = p.web_identity_token_file;
  } else if (p.method == "sso") {
    out["start_url"] = p.sso_start_url;
    out["sso_region"] = p.sso_region;
    out["account_id"] = p.sso_account_id;
    out["role_name"] = p.sso_role_name;
  }
  return out;
}

json resolve(const json& in, const LoginEnvironment& env) {
  const std::string cloud = in.value("cloud", "");
  if (cloud == "aws") {
    auto login = resolve_aws_login(env, in.value("profile", ""));
    if (!login) return {{"error", true}, {"detail", login.error().detail}};
    json creds = plan_json(login->plan);
    if (creds.contains("process_error"))  // botocore runs the process as it resolves: its failure is the chain's
      return {{"error", true}, {"detail", creds["process_error"]}};
    return {{"error", false}, {"region", login->region}, {"creds", creds}};
  }
  if (cloud == "gce") {
    namespace gce = tsum::providers::gce;
    auto login = gce::resolve_gce_login(env);
    if (!login) return {{"error", true}, {"detail", login.error().detail}};
    if (login->credentials.kind == "metadata") {
      boost::asio::io_context io;
      tsum::providers::http::HttpClient http(tsum::providers::http::HttpClientOptions{});
      tsum::Result<std::string> project = std::string();
      boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> { project = co_await gce::metadata_project(http, *login); },
                            boost::asio::detached);
      io.run();
      if (!project) return {{"error", true}, {"detail", project.error().detail}};
      if (login->project.empty()) login->project = *project;
    }
    const auto& c = login->credentials;
    json out = {{"error", false}, {"kind", c.kind}, {"project", login->project}};
    if (c.kind == "service_account") out["email"] = c.account.client_email;
    if (c.kind == "authorized_user") out["client_id"] = c.user.client_id;
    return out;
  }
  if (cloud == "kubernetes") {
    tsum::providers::KubernetesOptions o;
    namespace kube = tsum::providers::kube;
    if (auto st = kube::apply_kubeconfig(kube::kubeconfig_paths(env), in.value("context", ""), &o); !st)
      return {{"error", true}, {"detail", st.error().detail}};
    auto text = [](const std::string& pem, const std::string& file) {
      return pem.empty() && !file.empty() ? tsum::providers::http::read_login_file(file).value_or("") : pem;
    };
    return {{"error", false}, {"server", o.api_url}, {"ca", text(o.ca_pem, o.ca_file)},
            {"token", text(o.token, o.token_file)}, {"cert", text(o.client_cert_pem, o.client_cert_file)},
            {"key", text(o.client_key_pem, o.client_key_file)}, {"namespace", o.namespace_}};
  }
  if (cloud == "azure") {
    namespace azure = tsum::providers::azure;
    auto login = azure::resolve_azure_login(env);
    if (login && login->fallback) {
      boost::asio::io_context io;
      tsum::providers::http::HttpClient http(tsum::providers::http::HttpClientOptions{});
      tsum::Result<azure::AzureLogin> settled = tsum::make_error(tsum::Code::internal, "not asked");
      boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> { settled = co_await azure::settle_azure_login(http, *login); },
                            boost::asio::detached);
      io.run();
      login = std::move(settled);
    }
    if (!login) return {{"error", true}, {"detail", login.error().detail}};
    const auto& c = login->credentials;
    return {{"error", false}, {"kind", c.kind}, {"tenant", c.tenant_id}, {"client_id", c.client_id},
            {"secret", c.client_secret}, {"certificate", c.certificate_path}, {"token_file", c.token_file},
            {"refresh_token", c.refresh_token}, {"username", login->username}, {"identity", c.identity},
            {"subscription", c.subscription_id}};
  }
  if (cloud == "yandex") {
    auto login = tsum::providers::yandex::resolve_yandex_login(env, in.value("profile", ""));
    if (!login) return {{"error", true}, {"detail", login.error().detail}};
    const auto& c = login->credentials;
    return {{"error", false}, {"kind", c.kind}, {"service_account_id", c.key.service_account_id},
            {"oauth_token", c.oauth_token}, {"folder", login->folder_id}, {"zone", login->zone}};
  }
  if (cloud == "hetzner") {
    auto login = tsum::providers::hetzner::resolve_hetzner_login(env, in.value("context", ""));
    if (!login) return {{"error", true}, {"detail", login.error().detail}};
    return {{"error", false}, {"token", login->token}, {"endpoint", login->endpoint}, {"context", login->context}};
  }
  return {{"error", true}, {"detail", "unknown cloud '" + cloud + "'"}};
}

}  // namespace

int main() {
  for (std::string line; std::getline(std::cin, line);) {
    auto in = json::parse(line, nullptr, false);
    if (!in.is_object()) {
      std::cout << json{{"error", true}, {"detail", "not a JSON object"}}.dump() << std::endl;
      continue;
    }
    LoginEnvironment env;
    const json vars = in.value("env", json::object());
    for (const auto& [k, v] : vars.items()) env.vars[k] = v.get<std::string>();
    env.home = in.value("home", "");
    std::cout << resolve(in, env).dump() << std::endl;
  }
}
