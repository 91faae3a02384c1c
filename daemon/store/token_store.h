// API tokens. A token is 32 random bytes, hex encoded, prefixed "tsum_". Only its SHA-256 is stored.
// Admin tokens reach every /v1 route; a run token reaches only its own run's events route.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "daemon/store/db.h"

namespace tsum::daemon {

struct TokenInfo {
  bool admin = false;
  bool metrics = false;  // may read GET /metrics only
  int64_t run_id = 0;  // for run tokens
};

// An admin or metrics token as listed: never the token itself.
struct TokenRecord {
  std::string id;  // the first 16 hex digits of its SHA-256
  std::string scope;
  double created_at = 0;
  std::optional<double> revoked_at;
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
  // Admin and metrics tokens, oldest first.
  Result<std::vector<TokenRecord>> list();
  // Revokes the admin or metrics token with this id; not_found when no unrevoked one has it.
  Status revoke(std::string_view id);

  // A token's public id: the first 16 hex digits of its SHA-256.
  static std::string id_of(std::string_view token) { return sha256_hex(token).substr(0, 16); }

  static std::string sha256_hex(std::string_view data);

 private:
  Result<std::string> insert(std::string_view scope, std::optional<int64_t> run_id);

  Db& db_;
  const Clock& clock_;
};

}  // namespace tsum::daemon
