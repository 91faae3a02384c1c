// API tokens. A token is 32 random bytes, hex encoded, prefixed "tsum_". Only its SHA-256 is stored.
// Admin tokens reach every /v1 route; a run token reaches only its own run's events route.
#pragma once

#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "daemon/db.h"

namespace tsum::daemon {

struct TokenInfo {
  bool admin = false;
  bool metrics = false;  // may read GET /metrics only
  int64_t run_id = 0;  // for run tokens
};

class TokenStore {
 public:
  TokenStore(Db& db, const Clock& clock) : db_(db), clock_(clock) {}

  Result<std::string> create_admin();
  Result<std::string> create_for_run(int64_t run_id);
  Result<std::string> create_metrics();
  // not_found for an unknown or revoked token.
  Result<TokenInfo> authenticate(std::string_view token);
  // Revokes every token of a run (its agent can post no more).
  Status revoke_run(int64_t run_id);

  static std::string sha256_hex(std::string_view data);

 private:
  Result<std::string> insert(std::string_view scope, std::optional<int64_t> run_id);

  Db& db_;
  const Clock& clock_;
};

}  // namespace tsum::daemon
