#include "providers/azure/ssh_key.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <memory>

#include "providers/http/codec.h"

namespace tsum::providers::azure {

namespace {

struct OsslFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(BIGNUM* b) const { BN_free(b); }
};

void put_string(std::string& out, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
  out += s;
}

// RFC 4251 mpint: big-endian, with a leading zero byte when the top bit is set.
std::string mpint(const BIGNUM* bn) {
  std::string bytes(static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(bytes.data()));
  if (!bytes.empty() && (static_cast<unsigned char>(bytes[0]) & 0x80)) bytes.insert(bytes.begin(), '\0');
  return bytes;
}

}  // namespace

Result<std::string> throwaway_ssh_public_key() {
  std::unique_ptr<EVP_PKEY, OsslFree> key(EVP_RSA_gen(3072));
  BIGNUM* n = nullptr;
  BIGNUM* e = nullptr;
  if (!key || EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_N, &n) != 1 ||
      EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_E, &e) != 1) {
    BN_free(n);
    return make_error(Code::internal, "azure: generating a throwaway SSH key failed");
  }
  std::unique_ptr<BIGNUM, OsslFree> n_owned(n), e_owned(e);
  std::string blob;
  put_string(blob, "ssh-rsa");
  put_string(blob, mpint(e));
  put_string(blob, mpint(n));
  return "ssh-rsa " + http::base64_encode(blob) + " tsum-throwaway";
}

}  // namespace tsum::providers::azure
