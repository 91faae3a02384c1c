// Yandex Cloud service-account authorized keys and the JSON Web Token the IAM token endpoint exchanges for
// an IAM token: header {"typ":"JWT","alg":"PS256","kid":<key id>}, claims iss (the service account id),
// aud (the IAM token URL), iat and exp, signed PS256 (RSASSA-PSS with SHA-256, MGF1 with SHA-256, salt
// length = digest length, 32 bytes) with OpenSSL's EVP API. verify_ps256_jwt is the other side, as the fake
// IAM endpoint checks a JWT. Base64url and RSA key helpers are GCE's (gce/jwt.h). Errors never quote key
// material.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tsum::providers::yandex {

inline constexpr std::string_view kDefaultIamTokenUrl = "https://iam.api.cloud.yandex.net/iam/v1/tokens";

struct AuthorizedKey {
  std::string id = {};                  // the key's id: the JWT's kid
  std::string service_account_id = {};  // the JWT's iss
  std::string private_key_pem = {};     // PKCS#8 RSA
  std::string public_key_pem = {};      // optional in tsum's use
};

// A key file as `yc iam key create --output key.json` writes it. The private_key field may start with
// Yandex's "PLEASE DO NOT REMOVE THIS LINE! ..." line; it is dropped. invalid_argument names what is missing
// or malformed.
Result<AuthorizedKey> parse_authorized_key(std::string_view json);
Result<AuthorizedKey> load_authorized_key(const std::string& path);
// The key file for a key (what parse_authorized_key reads back).
std::string authorized_key_json(const AuthorizedKey& key);

// PS256 over data with an RSA private key. invalid_argument: not an RSA private key PEM.
Result<std::string> ps256_sign(std::string_view private_key_pem, std::string_view data);
// Whether signature is data's PS256 signature by the RSA key in key_pem (public or private PEM).
Result<bool> ps256_verify(std::string_view key_pem, std::string_view data, std::string_view signature);

// The signed JWT for audience, valid from now_s for lifetime_s (Yandex allows at most an hour).
Result<std::string> make_ps256_jwt(const AuthorizedKey& key, std::string_view audience, long long now_s,
                                   long long lifetime_s = 3600);

struct VerifiedJwt {
  nlohmann::json header;
  nlohmann::json claims;
};

// Checks a compact JWT's form, that its alg is PS256 and that its signature verifies with key_pem.
// invalid_argument says which check failed. Claims are the caller's to check.
Result<VerifiedJwt> verify_ps256_jwt(std::string_view jwt, std::string_view key_pem);

}  // namespace tsum::providers::yandex
