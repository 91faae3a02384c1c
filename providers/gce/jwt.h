// Google service-account credentials and the JSON Web Token that OAuth2's jwt-bearer grant (RFC 7523)
// exchanges for an access token: header {"alg":"RS256","typ":"JWT","kid":...}, claims iss (the account's
// email), scope, aud (the token endpoint), iat and exp, signed RS256 (RSASSA-PKCS1-v1_5, SHA-256) with
// OpenSSL's EVP API. verify_jwt is the other side, as the fake token endpoint checks an assertion.
// Errors never quote key material.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace tsum::providers::gce {

inline constexpr std::string_view kDefaultTokenUri = "https://oauth2.googleapis.com/token";
inline constexpr std::string_view kCloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform";

struct ServiceAccount {
  std::string client_email = {};
  std::string private_key_id = {};
  std::string private_key_pem = {};  // PKCS#8 or traditional RSA PEM
  std::string token_uri = std::string(kDefaultTokenUri);
  std::string project_id = {};
};

// A key file as the Cloud console downloads it (type "service_account"). invalid_argument names what is
// missing or malformed.
Result<ServiceAccount> parse_service_account(std::string_view json);
Result<ServiceAccount> load_service_account(const std::string& path);
// The key file for an account (what parse_service_account reads back).
std::string service_account_json(const ServiceAccount& sa);

// RFC 4648 section 5, no padding. decode: invalid_argument for anything outside the alphabet.
std::string base64url_encode(std::string_view bytes);
Result<std::string> base64url_decode(std::string_view text);

// RS256 over data with an RSA private key. invalid_argument: not an RSA private key PEM.
Result<std::string> rs256_sign(std::string_view private_key_pem, std::string_view data);
// Whether signature is data's RS256 signature by the RSA key in key_pem (public or private PEM).
Result<bool> rs256_verify(std::string_view key_pem, std::string_view data, std::string_view signature);
// The SubjectPublicKeyInfo PEM of an RSA private key.
Result<std::string> rsa_public_key_pem(std::string_view private_key_pem);
// A fresh RSA key as PKCS#8 PEM (tests and the fake cloud's generated accounts).
Result<std::string> generate_rsa_key_pem(int bits = 2048);

// The signed assertion for the token endpoint at audience, valid from now_s for lifetime_s.
Result<std::string> make_assertion(const ServiceAccount& sa, std::string_view scope, std::string_view audience,
                                   long long now_s, long long lifetime_s = 3600);

struct VerifiedJwt {
  nlohmann::json header;
  nlohmann::json claims;
};

// Checks a compact JWT's form, that its alg is RS256 and that its signature verifies with key_pem.
// Segments padded with '=' (google-auth 1.x sends them so) are accepted, as Google's endpoint accepts them.
// invalid_argument says which check failed. Claims are the caller's to check.
Result<VerifiedJwt> verify_jwt(std::string_view jwt, std::string_view key_pem);

}  // namespace tsum::providers::gce
