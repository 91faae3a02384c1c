// tsum-login-probe: resolves one cloud's login chain for cases read as JSON lines on stdin and prints one JSON
// line per case, for the differential tests beside it (each holds a chain against its SDK or CLI).
//   in:  {"cloud": "aws" | "hetzner", "env": {NAME: value}, "home": DIR, and what tsum's config may name: "profile"
//        (aws), "context" (hetzner)}
//   out: {"error": true, "detail"} or {"error": false, ...}:
//     aws      "region", "creds": PLAN; PLAN is {"method", "access_key", "secret_key", "token"} for keys (a
//              credential_process is run for them), {"method", "role_arn", "source": PLAN} for assume-role,
//              {"method", "role_arn", "token_file"} for web identity, {"method", "start_url", "sso_region",
//              "account_id", "role_name"} for SSO, {"method"} otherwise
//     hetzner  "token", "endpoint", "context"
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "providers/aws/aws_login.h"
#include "providers/hetzner/hetzner_login.h"

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
