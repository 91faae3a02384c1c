#include "providers/hetzner/hetzner_api.h"

#include "common/json_util.h"
#include "providers/http/redact.h"

namespace tsum::providers::hetzner {

namespace {

bool one_of(std::string_view code, std::initializer_list<std::string_view> codes) {
  for (auto c : codes)
    if (code == c) return true;
  return false;
}

// {"error": {"code": "...", "message": "...", "details": {...}}}
Error api_error(const std::string& what, int status, const std::string& body) {
  std::string code, message = body.substr(0, 200);
  if (auto doc = parse_json_safely(body); doc && doc->is_object() && (*doc)["error"].is_object()) {
    code = (*doc)["error"].value("code", "");
    message = (*doc)["error"].value("message", "");
  }
  std::string detail = what + " (HTTP " + std::to_string(status) + "): " + (code.empty() ? "no error code" : code) +
                       (message.empty() ? "" : ": " + message);
  if (status == 401)  // the fix, in the words of the Cloud Console and the CLI
    detail += "; the project's API token is refused: make a new one (Cloud Console, Security, API tokens) and run "
              "'hcloud context create NAME'";
  Code c = Code::invalid_argument;
  if (code == "not_found" || (code.empty() && status == 404)) c = Code::not_found;
  else if (code == "uniqueness_error") c = Code::already_exists;
  else if (one_of(code, {"rate_limit_exceeded", "conflict", "locked", "resource_limit_exceeded", "resource_unavailable",
                         "server_error", "unavailable", "timeout", "maintenance"}) ||
           status == 429 || status >= 500)
    c = Code::unavailable;
  return make_error(c, detail);
}

}  // namespace

Result<std::unique_ptr<HetznerApi>> HetznerApi::make(HetznerApiOptions opts) {
  if (opts.token.empty() && opts.unusable.empty()) return make_error(Code::invalid_argument, "hetzner: no API token");
  auto base = http::parse_base_url(opts.endpoint.empty() ? "https://api.hetzner.cloud/v1" : opts.endpoint);
  if (!base) return base.error();
  return std::unique_ptr<HetznerApi>(new HetznerApi(std::move(opts), std::move(*base)));
}

HetznerApi::HetznerApi(HetznerApiOptions opts, http::BaseUrl base)
    : opts_(std::move(opts)), base_(std::move(base)), http_(opts_.http) {}

Error HetznerApi::redacted(Error e) const {
  e.detail = http::redact(std::move(e.detail), {opts_.token});
  return e;
}

Task<Result<nlohmann::json>> HetznerApi::call(const std::string& method, const std::string& path_and_query,
                                              const std::string& body) {
  if (opts_.token.empty()) co_return make_error(Code::invalid_argument, opts_.unusable);
  const std::string what = "Hetzner " + method + " /" + path_and_query.substr(0, path_and_query.find('?'));
  http::HttpRequest req{.method = method, .url = base_.url + path_and_query,
                        .headers = {{"Authorization", "Bearer " + opts_.token}}, .body = body,
                        .timeout = opts_.attempt_timeout};
  if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
  auto res = co_await http_.send(req);
  if (!res) co_return redacted(make_error(res.code(), what + ": " + res.error().detail));
  if (res->status < 200 || res->status > 299) co_return redacted(api_error(what, res->status, res->body));
  auto doc = parse_json_safely(res->body.empty() ? "{}" : res->body);
  if (!doc || !doc->is_object()) co_return make_error(Code::internal, what + ": the answer is not a JSON object");
  co_return std::move(*doc);
}

}  // namespace tsum::providers::hetzner
