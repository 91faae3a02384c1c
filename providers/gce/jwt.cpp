#include "providers/gce/jwt.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "common/json_util.h"

namespace tsum::providers::gce {

namespace {

struct OsslFree {
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
template <class T>
using Owned = std::unique_ptr<T, OsslFree>;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

Owned<BIO> memory_bio(std::string_view pem) {
  return Owned<BIO>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// An RSA key from a private or public PEM; null when it is neither.
Owned<EVP_PKEY> read_rsa_key(std::string_view pem, bool want_private) {
  auto bio = memory_bio(pem);
  Owned<EVP_PKEY> key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key && !want_private) {
    bio = memory_bio(pem);
    key.reset(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  }
  if (key && EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) key.reset();
  return key;
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
}

std::string field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A segment without its '=' padding (at most two), which some clients send and Google accepts.
std::string_view unpadded(std::string_view segment) {
  for (int i = 0; i < 2 && segment.ends_with('='); ++i) segment.remove_suffix(1);
  return segment;
}

}  // namespace

Result<ServiceAccount> parse_service_account(std::string_view json) {
  auto doc = parse_json_safely(json);
  if (!doc || !doc->is_object()) return make_error(Code::invalid_argument, "service account key: not a JSON object");
  if (field(*doc, "type") != "service_account")
    return make_error(Code::invalid_argument, "service account key: type is not \"service_account\"");
  ServiceAccount sa{field(*doc, "client_email"), field(*doc, "private_key_id"), field(*doc, "private_key"),
                    field(*doc, "token_uri"), field(*doc, "project_id")};
  if (sa.client_email.empty()) return make_error(Code::invalid_argument, "service account key: no client_email");
  if (sa.private_key_pem.empty()) return make_error(Code::invalid_argument, "service account key: no private_key");
  if (!read_rsa_key(sa.private_key_pem, true))
    return make_error(Code::invalid_argument, "service account key: private_key is not an RSA private key PEM");
  if (sa.token_uri.empty()) sa.token_uri = std::string(kDefaultTokenUri);
  return sa;
}

Result<ServiceAccount> load_service_account(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(Code::invalid_argument, "service account key file '" + path + "' cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  auto sa = parse_service_account(text.str());
  if (!sa) return make_error(sa.code(), path + ": " + sa.error().detail);
  return sa;
}

std::string service_account_json(const ServiceAccount& sa) {
  return nlohmann::json{{"type", "service_account"}, {"project_id", sa.project_id},
                        {"private_key_id", sa.private_key_id}, {"private_key", sa.private_key_pem},
                        {"client_email", sa.client_email}, {"token_uri", sa.token_uri}}
      .dump(2);
}

std::string base64url_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 2 < bytes.size(); i += 3) {
    unsigned v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (std::size_t rest = bytes.size() - i; rest > 0) {
    unsigned v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0u);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    if (rest == 2) out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

Result<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 == 1) return make_error(Code::invalid_argument, "base64url: impossible length");
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    int s = sextet(text[i]);
    if (s < 0) return make_error(Code::invalid_argument, "base64url: invalid character at offset " + std::to_string(i));
    v = (v << 6) | static_cast<unsigned>(s);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  if ((v & ((1u << bits) - 1)) != 0) return make_error(Code::invalid_argument, "base64url: non-zero trailing bits");
  return out;
}

Result<std::string> rs256_sign(std::string_view private_key_pem, std::string_view data) {
  auto key = read_rsa_key(private_key_pem, true);
  if (!key) return make_error(Code::invalid_argument, "RS256: the key is not an RSA private key PEM");
  Owned<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  std::size_t n = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1)
    return make_error(Code::internal, "RS256: signing failed");
  std::string sig(n, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &n,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1)
    return make_error(Code::internal, "RS256: signing failed");
  sig.resize(n);
  return sig;
}

Result<bool> rs256_verify(std::string_view key_pem, std::string_view data, std::string_view signature) {
  auto key = read_rsa_key(key_pem, false);
  if (!key) return make_error(Code::invalid_argument, "RS256: the key is not an RSA PEM");
  Owned<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1)
    return make_error(Code::internal, "RS256: verifier setup failed");
  int rc = EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return rc == 1;
}

Result<std::string> rsa_public_key_pem(std::string_view private_key_pem) {
  auto key = read_rsa_key(private_key_pem, true);
  if (!key) return make_error(Code::invalid_argument, "the key is not an RSA private key PEM");
  Owned<BIO> out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PUBKEY(out.get(), key.get()) != 1) return make_error(Code::internal, "writing a public key failed");
  return bio_text(out.get());
}

Result<std::string> generate_rsa_key_pem(int bits) {
  Owned<EVP_PKEY> key(EVP_RSA_gen(static_cast<unsigned>(bits)));
  Owned<BIO> out(BIO_new(BIO_s_mem()));
  if (!key || !out || PEM_write_bio_PrivateKey(out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return make_error(Code::internal, "generating an RSA key failed");
  return bio_text(out.get());
}

Result<std::string> make_assertion(const ServiceAccount& sa, std::string_view scope, std::string_view audience,
                                   long long now_s, long long lifetime_s) {
  nlohmann::json header{{"alg", "RS256"}, {"typ", "JWT"}};
  if (!sa.private_key_id.empty()) header["kid"] = sa.private_key_id;
  nlohmann::json claims{{"iss", sa.client_email}, {"scope", scope}, {"aud", audience},
                        {"iat", now_s}, {"exp", now_s + lifetime_s}};
  std::string signing_input = base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
  auto sig = rs256_sign(sa.private_key_pem, signing_input);
  if (!sig) return sig.error();
  return signing_input + "." + base64url_encode(*sig);
}

Result<VerifiedJwt> verify_jwt(std::string_view jwt, std::string_view key_pem) {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, "JWT: " + why); };
  auto dot1 = jwt.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : jwt.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || jwt.find('.', dot2 + 1) != std::string_view::npos)
    return bad("not three dot-separated parts");
  auto header_text = base64url_decode(unpadded(jwt.substr(0, dot1)));
  auto claims_text = base64url_decode(unpadded(jwt.substr(dot1 + 1, dot2 - dot1 - 1)));
  auto sig = base64url_decode(unpadded(jwt.substr(dot2 + 1)));
  if (!header_text || !claims_text || !sig) return bad("a part is not base64url");
  auto header = parse_json_safely(*header_text);
  auto claims = parse_json_safely(*claims_text);
  if (!header || !header->is_object() || !claims || !claims->is_object()) return bad("header or claims are not JSON objects");
  if (field(*header, "alg") != "RS256") return bad("alg is not RS256");
  auto ok = rs256_verify(key_pem, jwt.substr(0, dot2), *sig);
  if (!ok) return ok.error();
  if (!*ok) return bad("invalid signature");
  return VerifiedJwt{std::move(*header), std::move(*claims)};
}

}  // namespace tsum::providers::gce
