// The Kubernetes API calls the provider makes, over HTTPS with the cluster's CA and a bearer token (read from
// its file at every call: projected ServiceAccount tokens rotate) or a client certificate. Each call has the
// options' request_timeout and retries what the API server asks to be retried (429 with Retry-After, 5xx,
// refused connections) within it. Errors: not_found (404), already_exists (409 AlreadyExists), unavailable
// (409 Conflict, 429, 5xx, no answer), invalid_argument (422 and other 4xx: the API server's message), timeout.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "providers/http/http_client.h"
#include "providers/kubernetes/kube_options.h"

namespace tsum::providers::kube {

template <class T>
using Task = boost::asio::awaitable<T>;

// The HTTP client options of the API server's TLS: its CA, the client certificate if any.
http::HttpClientOptions client_options(const KubernetesOptions& o);
// The bearer token: token_file's (read now: projected tokens rotate), else the token itself; empty: none.
// invalid_argument when the file cannot be read.
Result<std::string> bearer_token(const KubernetesOptions& o);

class KubeApi {
 public:
  explicit KubeApi(KubernetesOptions opts);

  // GET/POST/DELETE of a path under the API server ("/api/v1/nodes"); the response's JSON. The arguments are
  // taken by value: the coroutine keeps its own copies.
  Task<Result<nlohmann::json>> get(std::string path);
  Task<Result<nlohmann::json>> post(std::string path, const nlohmann::json& body);
  Task<Result<nlohmann::json>> del(std::string path);

  // "/api/v1/namespaces/<ns>/<kind>" (kind: pods, services, secrets), with a label selector if given.
  std::string collection(const std::string& kind, const std::string& selector = {}) const;
  const KubernetesOptions& options() const { return opts_; }

 private:
  Task<Result<nlohmann::json>> call(std::string method, std::string path, std::string body);

  KubernetesOptions opts_;
  std::unique_ptr<http::HttpClient> http_;
};

}  // namespace tsum::providers::kube
