#include "tests/fakes/aws/fake_auth.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <cmath>

namespace tsum::providers::aws::fake {

namespace {

constexpr double kMaxSkewS = 15 * 60;

AuthRefusal refuse(int status, std::string code, std::string message) {
  return {status, std::move(code), std::move(message)};
}

double epoch_s(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

AuthRefusal verify_sigv4(const http::LoopbackRequest& req, const Credentials& creds, std::string_view region,
                         std::string_view service, double now_s) {
  auto header = [&](std::string_view name) { return http::find_header(req.headers, name); };
  auto auth_value = header("Authorization");
  if (!auth_value) return refuse(401, "MissingAuthenticationToken", "Request is missing Authentication Token");
  auto auth = parse_authorization(*auth_value);
  if (!auth) return refuse(400, "IncompleteSignature", auth.error().detail);
  if (auth->access_key_id != creds.access_key_id)
    return refuse(401, "AuthFailure", "AWS was not able to validate the provided access credentials");
  if (auth->region != region || auth->service != service)
    return refuse(401, "AuthFailure", "Credential should be scoped to region '" + std::string(region) + "' and service '" +
                                          std::string(service) + "', not '" + auth->region + "/" + auth->service + "'");
  const auto& names = auth->signed_headers;
  for (const char* needed : {"host", "x-amz-date"})
    if (std::find(names.begin(), names.end(), needed) == names.end())
      return refuse(400, "IncompleteSignature", std::string("SignedHeaders must include ") + needed);
  auto date = header("X-Amz-Date");
  auto when = date ? parse_amz_date(*date) : parse_amz_date("");
  if (!when || date->substr(0, 8) != auth->date)
    return refuse(400, "IncompleteSignature", "X-Amz-Date is missing, malformed or not the credential's date");
  if (std::fabs(epoch_s(*when) - now_s) > kMaxSkewS) return refuse(400, "RequestExpired", "Request has expired.");
  if (!creds.session_token.empty() && header("X-Amz-Security-Token") != creds.session_token)
    return refuse(401, "AuthFailure", "The security token included in the request is invalid");

  std::string payload_hash = sha256_hex(req.body);
  if (auto claimed = header("X-Amz-Content-SHA256")) {
    if (*claimed != "UNSIGNED-PAYLOAD" && *claimed != payload_hash)
      return refuse(400, "XAmzContentSHA256Mismatch", "The provided x-amz-content-sha256 header does not match the body");
    payload_hash = std::string(*claimed);
  }
  auto q = req.target.find('?');
  auto query = parse_query(q == std::string::npos ? std::string_view{} : std::string_view(req.target).substr(q + 1));
  if (!query) return refuse(400, "InvalidQueryParameter", query.error().detail);
  SignableRequest signable{.method = req.method, .path = req.target.substr(0, q), .query = *query,
                           .headers = req.headers, .body = req.body};
  std::string canonical = canonical_request(signable, names, payload_hash, /*normalize_path=*/true);
  std::string expected = signature_of(creds.secret_access_key, auth->scope, string_to_sign(*date, auth->scope, canonical));
  if (expected.size() != auth->signature.size() ||
      CRYPTO_memcmp(expected.data(), auth->signature.data(), expected.size()) != 0)
    return refuse(403, "SignatureDoesNotMatch",
                  "The request signature we calculated does not match the signature you provided. The canonical "
                  "request should have been\n" + canonical);
  return {};
}

}  // namespace tsum::providers::aws::fake
