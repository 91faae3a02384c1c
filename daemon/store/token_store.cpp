#include "daemon/store/token_store.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

namespace tsum::daemon {

namespace {
std::string hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}
}  // namespace

std::string TokenStore::sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return hex(md, len);
}

Result<std::string> TokenStore::insert(std::string_view scope, std::optional<int64_t> run_id) {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return make_error(Code::internal, "no randomness for a token");
  std::string token = "tsum_" + hex(raw, sizeof raw);
  auto st = db_.prepare("INSERT INTO tokens (hash, scope, run_id, created_at) VALUES (?, ?, ?, ?)");
  if (!st) return st.error();
  if (auto s = st->bind(sha256_hex(token), scope, run_id, clock_.now_s()).run(); !s) return s.error();
  return token;
}

Result<std::string> TokenStore::create_admin() { return insert("admin", std::nullopt); }
Result<std::string> TokenStore::create_metrics() { return insert("metrics", std::nullopt); }
Result<std::string> TokenStore::create_for_run(int64_t run_id) { return insert("run", run_id); }

Result<TokenInfo> TokenStore::authenticate(std::string_view token) {
  auto st = db_.prepare("SELECT scope, run_id FROM tokens WHERE hash = ? AND revoked_at IS NULL");
  if (!st) return st.error();
  st->bind(sha256_hex(token));
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "unknown or revoked token");
  TokenInfo info;
  info.admin = st->text(0) == "admin";
  info.metrics = st->text(0) == "metrics";
  if (!st->is_null(1)) info.run_id = st->int64(1);
  return info;
}

Status TokenStore::revoke_run(int64_t run_id) {
  auto st = db_.prepare("UPDATE tokens SET revoked_at = ? WHERE run_id = ? AND revoked_at IS NULL");
  if (!st) return st.error();
  return st->bind(clock_.now_s(), run_id).run();
}

Result<std::vector<TokenRecord>> TokenStore::list() {
  auto st = db_.prepare(
      "SELECT substr(hash, 1, 16), scope, created_at, revoked_at FROM tokens WHERE scope <> 'run' ORDER BY created_at");
  if (!st) return st.error();
  std::vector<TokenRecord> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({st->text(0), st->text(1), st->real(2), st->opt_real(3)});
  }
  return out;
}

Status TokenStore::revoke(std::string_view id) {
  auto st = db_.prepare(
      "UPDATE tokens SET revoked_at = ? WHERE substr(hash, 1, 16) = ? AND scope <> 'run' AND revoked_at IS NULL");
  if (!st) return st.error();
  if (auto s = st->bind(clock_.now_s(), id).run(); !s) return s;
  if (db_.changes() == 0) return make_error(Code::not_found, "no active token with id '" + std::string(id) + "'");
  return {};
}

}  // namespace tsum::daemon
