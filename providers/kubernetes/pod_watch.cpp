#include "providers/kubernetes/pod_watch.h"

#include "providers/http/codec.h"
#include "providers/http/http_client.h"
#include "providers/kubernetes/kube_api.h"
#include "providers/kubernetes/kube_json.h"

namespace tsum::providers::kube {

using nlohmann::json;

namespace {

// The server ends each watch after this long; the thread then watches again from where it was.
constexpr int kWatchSeconds = 60;

}  // namespace

PodWatch::PodWatch(KubernetesOptions opts, std::string ns) : opts_(std::move(opts)), ns_(std::move(ns)) {
  while (opts_.api_url.ends_with("/")) opts_.api_url.pop_back();
  thread_ = std::thread([this] { run(); });
}

PodWatch::~PodWatch() {
  stopping_ = true;
  interrupt_ = true;
  cv_.notify_all();
  thread_.join();
}

void PodWatch::reset(const json& pod_list) {
  std::lock_guard lock(mu_);
  pods_.clear();
  for (const auto& p : pod_list.value("items", json::array())) {
    const std::string name = p.value("metadata", json::object()).value("name", "");
    if (!name.empty()) pods_[name] = p;
  }
  rv_ = pod_list.value("metadata", json::object()).value("resourceVersion", "");
  current_ = false;  // until the stream from rv_ is connected
  wanted_ = !rv_.empty();
  ++generation_;
  interrupt_ = true;  // a stream from an older list ends
  reset_at_ = std::chrono::steady_clock::now();
  cv_.notify_all();
}

std::optional<json> PodWatch::snapshot() const {
  std::lock_guard lock(mu_);
  if (!current_ || std::chrono::steady_clock::now() - reset_at_ > kMaxAge) return std::nullopt;
  json items = json::array();
  for (const auto& [_, p] : pods_) items.push_back(p);
  return json{{"kind", "PodList"}, {"metadata", {{"resourceVersion", rv_}}}, {"items", items}};
}

void PodWatch::run() {
  http::HttpClientOptions h = client_options(opts_);
  h.threads = 1;
  const http::HttpClient client(h);
  while (!stopping_) {
    std::string from;
    long generation = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || wanted_; });
      if (stopping_) return;
      from = rv_;
      generation = generation_;
      interrupt_ = false;
      current_ = true;  // events since `from` are on their way
    }
    http::HttpRequest req;
    req.url = opts_.api_url + "/api/v1/namespaces/" + ns_ +
              "/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(kWatchSeconds) +
              "&labelSelector=" + http::uri_encode(std::string(kManagedBy) + "=tsum") + "&resourceVersion=" + from;
    req.timeout = std::chrono::seconds(kWatchSeconds + 30);
    req.headers.push_back({"Accept", "application/json"});
    if (auto token = bearer_token(opts_); token && !token->empty())
      req.headers.push_back({"Authorization", "Bearer " + *token});
    partial_.clear();
    auto on_data = [this](std::string_view piece) {
      partial_.append(piece);
      for (std::size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
        apply(partial_.substr(0, nl));
        partial_.erase(0, nl + 1);
      }
      std::lock_guard lock(mu_);
      return current_;  // an ERROR event ends the stream
    };
    auto resp = client.stream(req, on_data, &interrupt_);
    std::lock_guard lock(mu_);
    if (generation != generation_) continue;  // a reset: watch from its list
    // The server's timeout ends a healthy stream with 200: watch again from the last resourceVersion. Anything
    // else leaves the copy stale until the next list resets it.
    if (!resp || resp->status != 200 || !current_) {
      current_ = false;
      wanted_ = false;
    }
  }
}

void PodWatch::apply(const std::string& line) {
  if (line.empty()) return;
  auto ev = json::parse(line, nullptr, false);
  std::lock_guard lock(mu_);
  if (!ev.is_object() || !ev.contains("object") || !ev["object"].is_object()) {
    current_ = false;
    return;
  }
  const std::string type = ev.value("type", "");
  const json& obj = ev["object"];
  const json meta = obj.value("metadata", json::object());
  if (type == "ERROR") {  // 410 Expired and the like: list again
    current_ = false;
    return;
  }
  if (const std::string rv = meta.value("resourceVersion", ""); !rv.empty()) rv_ = rv;
  if (type == "BOOKMARK") return;
  const std::string name = meta.value("name", "");
  if (type == "DELETED")
    pods_.erase(name);
  else if (type == "ADDED" || type == "MODIFIED")
    pods_[name] = obj;
  ++events_;
}

}  // namespace tsum::providers::kube
