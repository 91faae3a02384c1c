#include "tests/fakes/cloud/call_book.h"

#include <cstdio>
#include <random>

namespace tsum::providers::fake_cloud {

void CallBook::count(std::string_view method) {
  std::lock_guard lock(mu_);
  ++requests_[std::string(method)];
}

int CallBook::requests(std::string_view method) const {
  std::lock_guard lock(mu_);
  auto it = requests_.find(method);
  return it == requests_.end() ? 0 : it->second;
}

void CallBook::reject() {
  std::lock_guard lock(mu_);
  ++rejected_;
}

int CallBook::rejected() const {
  std::lock_guard lock(mu_);
  return rejected_;
}

std::string CallBook::issue(std::string_view prefix, double expires_at) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(rng()), static_cast<unsigned long long>(rng()));
  std::string token = std::string(prefix) + hex;
  std::lock_guard lock(mu_);
  tokens_[token] = expires_at;
  ++issued_;
  return token;
}

int CallBook::issued() const {
  std::lock_guard lock(mu_);
  return issued_;
}

bool CallBook::valid(std::string_view token, double now) const {
  std::lock_guard lock(mu_);
  auto it = tokens_.find(token);
  return !refuse_all_ && it != tokens_.end() && it->second > now;
}

void CallBook::revoke_all(bool refuse_new) {
  std::lock_guard lock(mu_);
  for (auto& [_, expiry] : tokens_) expiry = -1;
  refuse_all_ = refuse_new;
}

std::vector<std::string> CallBook::tokens() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [token, _] : tokens_) out.push_back(token);
  return out;
}

std::optional<std::string> CallBook::bearer(const http::LoopbackRequest& req) {
  auto auth = http::find_header(req.headers, "Authorization");
  if (!auth || !auth->starts_with("Bearer ")) return std::nullopt;
  return std::string(auth->substr(7));
}

}  // namespace tsum::providers::fake_cloud
