#include "providers/kubernetes/kube_api.h"

#include <fstream>

#include "providers/http/codec.h"
#include "providers/kubernetes/kube_json.h"

namespace tsum::providers::kube {

using nlohmann::json;

http::HttpClientOptions client_options(const KubernetesOptions& o) {
  http::HttpClientOptions h;
  h.ca_file = o.ca_file;
  h.client_cert_file = o.client_cert_file;
  h.client_key_file = o.client_key_file;
  h.ca_pem = o.ca_pem;
  h.client_cert_pem = o.client_cert_pem;
  h.client_key_pem = o.client_key_pem;
  return h;
}

Result<std::string> bearer_token(const KubernetesOptions& o) {
  if (o.token_file.empty()) return o.token;
  std::ifstream in(o.token_file);
  if (!in) return make_error(Code::invalid_argument, "kubernetes: cannot read the token file " + o.token_file);
  std::string token{std::istreambuf_iterator<char>(in), {}};
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

KubeApi::KubeApi(KubernetesOptions opts) : opts_(std::move(opts)) {
  while (opts_.api_url.ends_with("/")) opts_.api_url.pop_back();
  if (opts_.namespace_.empty()) opts_.namespace_ = "default";
  http::HttpClientOptions h = client_options(opts_);
  h.retry.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(opts_.request_timeout) * 2;
  http_ = std::make_unique<http::HttpClient>(h);
}

std::string KubeApi::collection(const std::string& kind, const std::string& selector) const {
  std::string p = "/api/v1/namespaces/" + opts_.namespace_ + "/" + kind;
  if (!selector.empty()) p += "?labelSelector=" + http::uri_encode(selector);
  return p;
}

Task<Result<json>> KubeApi::get(std::string path) { return call("GET", std::move(path), ""); }
Task<Result<json>> KubeApi::post(std::string path, const json& body) {
  return call("POST", std::move(path), body.dump());
}
Task<Result<json>> KubeApi::del(std::string path) { return call("DELETE", std::move(path), ""); }

Task<Result<json>> KubeApi::call(std::string method, std::string path, std::string body) {
  http::HttpRequest req;
  req.method = method;
  req.url = opts_.api_url + path;
  req.body = body;
  req.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(opts_.request_timeout);
  req.headers.push_back({"Accept", "application/json"});
  if (!body.empty()) req.headers.push_back({"Content-Type", "application/json"});
  auto token = bearer_token(opts_);
  if (!token) co_return token.error();
  if (!token->empty()) req.headers.push_back({"Authorization", "Bearer " + *token});
  auto resp = co_await http_->send(req);
  if (!resp) co_return make_error(resp.code(), "kubernetes: " + resp.error().detail);
  const int code = resp->status;
  const std::string what = "kubernetes: " + method + " " + path + ": HTTP " + std::to_string(code) + ": ";
  if (code >= 200 && code < 300) {
    auto j = json::parse(resp->body, nullptr, false);
    if (j.is_discarded()) co_return make_error(Code::internal, what + "the answer is not JSON");
    co_return j;
  }
  const std::string msg = status_message(resp->body);
  if (code == 404) co_return make_error(Code::not_found, what + msg);
  if (code == 409) {
    auto j = json::parse(resp->body, nullptr, false);
    const bool exists = j.is_object() && j.value("reason", "") == "AlreadyExists";
    co_return make_error(exists ? Code::already_exists : Code::unavailable, what + msg);
  }
  if (code == 429 || code >= 500) co_return make_error(Code::unavailable, what + msg);
  co_return make_error(Code::invalid_argument, what + msg);
}

}  // namespace tsum::providers::kube
