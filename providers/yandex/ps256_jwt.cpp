#include "providers/yandex/ps256_jwt.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "common/json_util.h"
#include "providers/gce/jwt.h"

namespace tsum::providers::yandex {

namespace {

struct OsslFree {
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
template <class T>
using Owned = std::unique_ptr<T, OsslFree>;

Owned<EVP_PKEY> read_rsa_key(std::string_view pem, bool want_private) {
  Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Owned<EVP_PKEY> key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key && !want_private) {
    bio.reset(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    key.reset(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  }
  if (key && EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) key.reset();
  return key;
}

// RSA-PSS, SHA-256 for the message digest and MGF1, a salt as long as the digest.
bool set_pss(EVP_PKEY_CTX* pctx) {
  return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1 &&
         EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) == 1;
}

std::string field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

Result<AuthorizedKey> parse_authorized_key(std::string_view json) {
  auto doc = parse_json_safely(json);
  if (!doc || !doc->is_object()) return make_error(Code::invalid_argument, "authorized key: not a JSON object");
  AuthorizedKey key{field(*doc, "id"), field(*doc, "service_account_id"), field(*doc, "private_key"), field(*doc, "public_key")};
  if (key.id.empty()) return make_error(Code::invalid_argument, "authorized key: no id");
  if (key.service_account_id.empty()) return make_error(Code::invalid_argument, "authorized key: no service_account_id");
  if (auto begin = key.private_key_pem.find("-----BEGIN"); begin != std::string::npos) key.private_key_pem.erase(0, begin);
  if (!read_rsa_key(key.private_key_pem, true))
    return make_error(Code::invalid_argument, "authorized key: private_key is not an RSA private key PEM");
  return key;
}

Result<AuthorizedKey> load_authorized_key(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(Code::invalid_argument, "authorized key file '" + path + "' cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  auto key = parse_authorized_key(text.str());
  if (!key) return make_error(key.code(), path + ": " + key.error().detail);
  return key;
}

std::string authorized_key_json(const AuthorizedKey& key) {
  return nlohmann::json{{"id", key.id}, {"service_account_id", key.service_account_id}, {"key_algorithm", "RSA_2048"},
                        {"public_key", key.public_key_pem},
                        {"private_key", "PLEASE DO NOT REMOVE THIS LINE! Yandex.Cloud SA Key ID <" + key.id + ">\n" + key.private_key_pem}}
      .dump(2);
}

Result<std::string> ps256_sign(std::string_view private_key_pem, std::string_view data) {
  auto key = read_rsa_key(private_key_pem, true);
  if (!key) return make_error(Code::invalid_argument, "PS256: the key is not an RSA private key PEM");
  Owned<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;  // owned by ctx
  std::size_t n = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), &pctx, EVP_sha256(), nullptr, key.get()) != 1 || !set_pss(pctx) ||
      EVP_DigestSign(ctx.get(), nullptr, &n, bytes(data), data.size()) != 1)
    return make_error(Code::internal, "PS256: signing failed");
  std::string sig(n, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &n, bytes(data), data.size()) != 1)
    return make_error(Code::internal, "PS256: signing failed");
  sig.resize(n);
  return sig;
}

Result<bool> ps256_verify(std::string_view key_pem, std::string_view data, std::string_view signature) {
  auto key = read_rsa_key(key_pem, false);
  if (!key) return make_error(Code::invalid_argument, "PS256: the key is not an RSA PEM");
  Owned<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), &pctx, EVP_sha256(), nullptr, key.get()) != 1 || !set_pss(pctx))
    return make_error(Code::internal, "PS256: verifier setup failed");
  return EVP_DigestVerify(ctx.get(), bytes(signature), signature.size(), bytes(data), data.size()) == 1;
}

Result<std::string> make_ps256_jwt(const AuthorizedKey& key, std::string_view audience, long long now_s, long long lifetime_s) {
  const nlohmann::json header{{"typ", "JWT"}, {"alg", "PS256"}, {"kid", key.id}};
  const nlohmann::json claims{{"iss", key.service_account_id}, {"aud", audience}, {"iat", now_s}, {"exp", now_s + lifetime_s}};
  const std::string signing_input = gce::base64url_encode(header.dump()) + "." + gce::base64url_encode(claims.dump());
  auto sig = ps256_sign(key.private_key_pem, signing_input);
  if (!sig) return sig.error();
  return signing_input + "." + gce::base64url_encode(*sig);
}

Result<VerifiedJwt> verify_ps256_jwt(std::string_view jwt, std::string_view key_pem) {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, "JWT: " + why); };
  auto dot1 = jwt.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : jwt.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || jwt.find('.', dot2 + 1) != std::string_view::npos)
    return bad("not three dot-separated parts");
  auto header_text = gce::base64url_decode(jwt.substr(0, dot1));
  auto claims_text = gce::base64url_decode(jwt.substr(dot1 + 1, dot2 - dot1 - 1));
  auto sig = gce::base64url_decode(jwt.substr(dot2 + 1));
  if (!header_text || !claims_text || !sig) return bad("a part is not base64url");
  auto header = parse_json_safely(*header_text);
  auto claims = parse_json_safely(*claims_text);
  if (!header || !header->is_object() || !claims || !claims->is_object()) return bad("header or claims are not JSON objects");
  if (field(*header, "alg") != "PS256") return bad("alg is not PS256");
  auto ok = ps256_verify(key_pem, jwt.substr(0, dot2), *sig);
  if (!ok) return ok.error();
  if (!*ok) return bad("invalid signature");
  return VerifiedJwt{std::move(*header), std::move(*claims)};
}

}  // namespace tsum::providers::yandex
