// Pure parts of the Yandex adapter: PS256 signatures (RSA-PSS, salt = digest length) and JWTs, authorized
// key files, RFC 3339 times, the create body, instance and operation parsing, Billing SKU rates and shapes.
#include <doctest/doctest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "providers/gce/jwt.h"
#include "providers/yandex/ps256_jwt.h"
#include "providers/yandex/yandex_api.h"
#include "providers/yandex/yandex_catalog.h"
#include "providers/yandex/yandex_json.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::yandex;

namespace {

const std::string& test_key_pem() {
  static const std::string pem = gce::generate_rsa_key_pem().value();
  return pem;
}

AuthorizedKey parts_key() { return {.id = "ajekey1", .service_account_id = "ajesa1", .private_key_pem = test_key_pem()}; }

// Verifies with an explicit salt length, independently of ps256_verify.
bool verifies_with_salt(const std::string& pem, const std::string& data, const std::string& sig, int salt) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;
  bool ok = EVP_DigestVerifyInit(ctx, &pctx, EVP_sha256(), nullptr, key) == 1 &&
            EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, salt) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  BIO_free(bio);
  return ok;
}

}  // namespace

TEST_CASE("PS256: RSA-PSS with a 32-byte salt, randomized, verified; RS256 and other keys refused") {
  const std::string data = "header.claims";
  auto a = ps256_sign(test_key_pem(), data);
  auto b = ps256_sign(test_key_pem(), data);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->size() == 256);
  CHECK(*a != *b);  // PSS salts are random
  CHECK(verifies_with_salt(test_key_pem(), data, *a, 32));
  CHECK_FALSE(verifies_with_salt(test_key_pem(), data, *a, 20));
  CHECK(ps256_verify(test_key_pem(), data, *a).value());
  CHECK_FALSE(ps256_verify(test_key_pem(), data + "x", *a).value());
  auto rs = gce::rs256_sign(test_key_pem(), data);
  CHECK_FALSE(ps256_verify(test_key_pem(), data, *rs).value());
  auto other = gce::generate_rsa_key_pem();
  CHECK_FALSE(ps256_verify(*other, data, *a).value());
  CHECK(ps256_sign("not a key", data).code() == Code::invalid_argument);
}

TEST_CASE("the IAM JWT: header, claims, and verification that refuses tampering and other algorithms") {
  auto jwt = make_ps256_jwt(parts_key(), kDefaultIamTokenUrl, 1700000000);
  REQUIRE(jwt.ok());
  auto pub = gce::rsa_public_key_pem(test_key_pem());
  auto v = verify_ps256_jwt(*jwt, *pub);
  REQUIRE_MESSAGE(v.ok(), v.error().detail);
  CHECK(v->header == nlohmann::json{{"typ", "JWT"}, {"alg", "PS256"}, {"kid", "ajekey1"}});
  CHECK(v->claims == nlohmann::json{{"iss", "ajesa1"}, {"aud", kDefaultIamTokenUrl}, {"iat", 1700000000}, {"exp", 1700003600}});
  std::string tampered = *jwt;
  tampered[tampered.find('.') + 3] ^= 1;
  CHECK(verify_ps256_jwt(tampered, *pub).code() == Code::invalid_argument);
  auto rs = gce::make_assertion({.client_email = "x", .private_key_pem = test_key_pem()}, "s", "a", 1);
  CHECK(verify_ps256_jwt(*rs, *pub).error().detail.find("not PS256") != std::string::npos);
  CHECK(verify_ps256_jwt("a.b", *pub).code() == Code::invalid_argument);
}

TEST_CASE("authorized key files: Yandex's warning line is dropped; what is missing is named, the key never quoted") {
  auto key = parts_key();
  auto parsed = parse_authorized_key(authorized_key_json(key));
  REQUIRE_MESSAGE(parsed.ok(), parsed.error().detail);
  CHECK(parsed->id == "ajekey1");
  CHECK(parsed->service_account_id == "ajesa1");
  CHECK(parsed->private_key_pem == key.private_key_pem);
  CHECK(parse_authorized_key(R"({"service_account_id":"s","private_key":"x"})").error().detail.find("no id") != std::string::npos);
  CHECK(parse_authorized_key(R"({"id":"k","private_key":"x"})").error().detail.find("service_account_id") != std::string::npos);
  auto bad = parse_authorized_key(R"({"id":"k","service_account_id":"s","private_key":"-----BEGIN PRIVATE KEY-----\nsecretstuff"})");
  CHECK(bad.code() == Code::invalid_argument);
  CHECK(bad.error().detail.find("secretstuff") == std::string::npos);
  CHECK(load_authorized_key("/nonexistent/key.json").code() == Code::invalid_argument);
}

TEST_CASE("RFC 3339 times") {
  CHECK(parse_rfc3339("1970-01-01T00:00:00Z").value() == 0);
  CHECK(parse_rfc3339("2024-05-01T12:00:00.5Z").value() == doctest::Approx(1714564800.5));
  CHECK(parse_rfc3339("2024-05-01T15:00:00+03:00").value() == 1714564800);
  for (const char* bad : {"", "2024-05-01", "2024-05-01 12:00:00Z", "2024-13-01T00:00:00Z", "2024-05-01T12:00:00", "2024-05-01T12:00:00Zx"})
    CHECK_MESSAGE(parse_rfc3339(bad).code() == Code::invalid_argument, bad);
}

TEST_CASE("the create body and instance, operation and listing parsing") {
  CreateInstance c{.folder_id = "f", .name = "tsum-1-abc", .zone_id = "ru-central1-a", .platform_id = "gpu-standard-v3",
                   .cores = 28, .memory_bytes = 119LL << 30, .gpus = 1, .image_id = "img", .disk_bytes = 30LL << 30,
                   .subnet_id = "sub", .user_data = "#cloud-config\n", .labels = {{"tsum", "t"}}};
  auto j = create_body(c);
  CHECK(j["resourcesSpec"]["memory"] == std::to_string(119LL << 30));  // int64 as a string
  CHECK(j["resourcesSpec"]["cores"] == "28");
  CHECK(j["resourcesSpec"]["gpus"] == "1");
  CHECK(j["metadata"]["user-data"] == "#cloud-config\n");
  CHECK(j["bootDiskSpec"]["autoDelete"] == true);
  CHECK(j["networkInterfaceSpecs"][0]["primaryV4AddressSpec"]["oneToOneNatSpec"]["ipVersion"] == "IPV4");
  CHECK(j["labels"]["tsum"] == "t");

  auto i = parse_instance(nlohmann::json::parse(R"({"id":"fhm1","name":"n","status":"RUNNING","labels":{"tsum":"t"},
      "networkInterfaces":[{"primaryV4Address":{"address":"10.0.0.3","oneToOneNat":{"address":"51.250.1.2","ipVersion":"IPV4"}}}]})"));
  REQUIRE(i.ok());
  CHECK(i->nat_ip == "51.250.1.2");
  CHECK(i->internal_ip == "10.0.0.3");
  CHECK(i->labels.at("tsum") == "t");
  CHECK(parse_instance(nlohmann::json::parse(R"({"id":"x"})")).code() == Code::internal);

  auto op = parse_operation(nlohmann::json::parse(R"({"id":"op1","done":true,"metadata":{"instanceId":"fhm1"},
      "error":{"code":8,"message":"Quota limit vpc.externalAddresses.count exceeded"}})"));
  REQUIRE(op.ok());
  CHECK(op->done);
  CHECK(op->instance_id == "fhm1");
  CHECK(operation_error("create", *op).code == Code::unavailable);
  CHECK(operation_error("create", {.id = "o", .error_code = 3}).code == Code::invalid_argument);
  CHECK_FALSE(parse_operation(nlohmann::json::parse(R"({"id":"op2"})"))->done);

  CHECK(parse_instance_page(nlohmann::json::object())->items.empty());  // Yandex leaves the field out when empty
  CHECK(parse_instance_page(nlohmann::json::parse(R"({"instances":{}})")).code() == Code::internal);
  CHECK(valid_instance_name("tsum-1-abc"));
  CHECK_FALSE(valid_instance_name("1abc"));
  CHECK_FALSE(valid_instance_name("abc-"));
  CHECK(valid_label_value("run.1_a@b"));
  CHECK_FALSE(valid_label_value("Upper"));
  CHECK_FALSE(valid_label_key("-x"));
}

TEST_CASE("Billing SKUs: the newest street price in effect, from tier 0, exact; shapes summed from their parts") {
  auto page = parse_sku_page(nlohmann::json::parse(R"({"skus":[
    {"name":"Intel Ice Lake. 100% vCPU","pricingUnit":"core*hour","pricingVersions":[
      {"type":"STREET_PRICE","effectiveTime":"2022-01-01T00:00:00Z","pricingExpressions":[{"rates":[{"startPricingQuantity":"0","unitPrice":"0.9"}]}]},
      {"type":"STREET_PRICE","effectiveTime":"2024-01-01T00:00:00Z","pricingExpressions":[{"rates":[{"startPricingQuantity":"0","unitPrice":"1.12"},{"startPricingQuantity":"1000","unitPrice":"1.0"}]}]},
      {"type":"CONTRACT_PRICE","effectiveTime":"2024-02-01T00:00:00Z","pricingExpressions":[{"rates":[{"startPricingQuantity":"0","unitPrice":"0.5"}]}]},
      {"type":"STREET_PRICE","effectiveTime":"2099-01-01T00:00:00Z","pricingExpressions":[{"rates":[{"startPricingQuantity":"0","unitPrice":"9"}]}]}]},
    {"name":"Intel Ice Lake. RAM","pricingUnit":"gbyte*hour","pricingVersions":[
      {"type":"STREET_PRICE","effectiveTime":"2024-01-01T00:00:00Z","pricingExpressions":[{"rates":[{"startPricingQuantity":"0","unitPrice":"0.2976"}]}]}]},
    {"name":"AMD EPYC with NVIDIA Ampere A100. 100% vCPU","pricingUnit":"core*hour","pricingVersions":[]}
  ],"nextPageToken":"p2"})"), 1.8e9);
  REQUIRE_MESSAGE(page.ok(), page.error().detail);
  CHECK(page->next_page_token == "p2");
  REQUIRE(page->items.size() == 3);
  CHECK(page->items[0].nanos_per_unit == 1120000000);
  CHECK(page->items[1].nanos_per_unit == 297600000);
  CHECK(page->items[2].nanos_per_unit == -1);
  auto offers = price_shapes({{"standard-v3", 2, 8, 0}, {"gpu-standard-v3", 28, 119, 1}, {"no-such-platform", 2, 2, 0}},
                             page->items, "ru-central1-a", "RUB");
  REQUIRE(offers.size() == 1);  // the A100 shape lacks RAM and GPU rates
  CHECK(offers[0].instance_type == "standard-v3-2c-8g");
  CHECK(offers[0].hourly_price == doctest::Approx(2 * 1.12 + 8 * 0.2976));
  CHECK(offers[0].currency == "RUB");
  CHECK(Shape{"gpu-standard-v3", 28, 119, 1}.name() == "gpu-standard-v3-28c-119g-1gpu");
  CHECK(parse_sku_page(nlohmann::json::parse(R"({"skus":[{"name":"x","pricingVersions":[{"type":"STREET_PRICE",
      "effectiveTime":"2024-01-01T00:00:00Z","pricingExpressions":[{"rates":[{"startPricingQuantity":"0","unitPrice":"1e3"}]}]}]}]})"), 1.8e9)
            .code() == Code::internal);
  // Fields of another type read as missing, never throw (fuzz_cloud_json: "skus" a string, found 2026-11-27).
  for (const char* doc : {R"({"skus":""})", R"({"skus":{"a":1}})", R"({"skus":[""]})", R"({"skus":[{"pricingVersions":"x"}]})",
                          R"({"skus":[{"pricingVersions":[{"type":"STREET_PRICE","effectiveTime":"2024-01-01T00:00:00Z",
                              "pricingExpressions":[7,{"rates":{"r":1}}]}]}]})"}) {
    auto odd = parse_sku_page(nlohmann::json::parse(doc), 1.8e9);
    REQUIRE_MESSAGE(odd.ok(), doc);
    for (const auto& item : odd->items) CHECK(item.nanos_per_unit == -1);
  }
}
