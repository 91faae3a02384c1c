// What a fake cloud books about its callers, thread-safe: requests per method, refused requests, and the
// bearer tokens it issued with their expiry. The GCE, Azure and Yandex fakes each keep theirs in one.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "providers/http/loopback_server.h"

namespace tsum::providers::aws::fake {

class CallBook {
 public:
  void count(std::string_view method) {
    std::lock_guard lock(mu_);
    ++requests_[std::string(method)];
  }
  int requests(std::string_view method) const {
    std::lock_guard lock(mu_);
    auto it = requests_.find(method);
    return it == requests_.end() ? 0 : it->second;
  }
  void reject() {
    std::lock_guard lock(mu_);
    ++rejected_;
  }
  int rejected() const {
    std::lock_guard lock(mu_);
    return rejected_;
  }
  void issue(const std::string& token, double expires_at) {
    std::lock_guard lock(mu_);
    tokens_[token] = expires_at;
    ++issued_;
  }
  int issued() const {
    std::lock_guard lock(mu_);
    return issued_;
  }
  bool valid(const std::string& token, double now) const {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(token);
    return it != tokens_.end() && it->second > now;
  }
  void revoke_all() {
    std::lock_guard lock(mu_);
    tokens_.clear();
  }

  // The token of an "Authorization: Bearer <token>" header; nullopt without one.
  static std::optional<std::string> bearer(const http::LoopbackRequest& req) {
    auto auth = http::find_header(req.headers, "Authorization");
    if (!auth || !auth->starts_with("Bearer ")) return std::nullopt;
    return std::string(auth->substr(7));
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int, std::less<>> requests_;
  std::map<std::string, double> tokens_;  // token -> expiry
  int rejected_ = 0;
  int issued_ = 0;
};

}  // namespace tsum::providers::aws::fake
