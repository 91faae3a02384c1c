// CallBook: what a fake cloud books about its callers, thread-safe: requests per API method (faulted ones
// included), refused requests, and the bearer tokens it issued with their expiry. Every fake keeps one
// (FakeServer::book()); tests read it through the server.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fakes/http/loopback_server.h"

namespace tsum::providers::fake_cloud {

class CallBook {
 public:
  void count(std::string_view method);
  int requests(std::string_view method) const;
  void reject();
  int rejected() const;

  // A new random bearer token, prefix followed by 32 hex digits (e.g. "ya29.fake-..."), valid until expires_at.
  std::string issue(std::string_view prefix, double expires_at);
  int issued() const;
  // Whether token was issued here, has not expired at now and was not revoked.
  bool valid(std::string_view token, double now) const;
  // Every token issued so far stops working (a revocation); with refuse_new, tokens issued later do too.
  void revoke_all(bool refuse_new = false);
  // Every token ever issued, revoked and expired ones too, so tests can look for them where they must not be.
  std::vector<std::string> tokens() const;

  // The token of an "Authorization: Bearer <token>" header; nullopt without one.
  static std::optional<std::string> bearer(const http::LoopbackRequest& req);

 private:
  mutable std::mutex mu_;
  std::map<std::string, int, std::less<>> requests_;
  std::map<std::string, double, std::less<>> tokens_;  // token -> expiry (-1: revoked)
  int rejected_ = 0;
  int issued_ = 0;
  bool refuse_all_ = false;
};

}  // namespace tsum::providers::fake_cloud
