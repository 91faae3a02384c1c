// The GCE adapter's pure parts: base64url, RS256 JWTs and service-account keys, the Compute JSON it
// writes and reads, the catalog's exact money and SKU matching, and credential redaction.
#include <doctest/doctest.h>

#include "providers/gce/gce_catalog.h"
#include "providers/gce/gce_json.h"
#include "providers/gce/jwt.h"
#include "providers/http/redact.h"
#include "support/gce_account.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::gce;
using tsum::testing::test_account;

TEST_CASE("base64url round-trips every length and refuses other alphabets") {
  std::string bytes;
  for (int n = 0; n < 70; ++n) {
    auto back = base64url_decode(base64url_encode(bytes));
    REQUIRE(back.ok());
    CHECK(*back == bytes);
    bytes += static_cast<char>(n * 37 + 250);
  }
  CHECK(base64url_encode("\xfb\xff") == "-_8");
  CHECK(base64url_decode("a+b/").code() == Code::invalid_argument);
  CHECK(base64url_decode("abc=").code() == Code::invalid_argument);
  CHECK_FALSE(base64url_decode("a").ok());
}

TEST_CASE("an assertion verifies with the account's key and names the account, scope and audience") {
  const ServiceAccount& sa = test_account();
  auto jwt = make_assertion(sa, kCloudPlatformScope, "https://example.test/token", 1700000000);
  REQUIRE(jwt.ok());
  auto pub = rsa_public_key_pem(sa.private_key_pem);
  REQUIRE(pub.ok());
  auto v = verify_jwt(*jwt, *pub);
  REQUIRE_MESSAGE(v.ok(), v.error().detail);
  CHECK(v->header.value("alg", "") == "RS256");
  CHECK(v->header.value("kid", "") == sa.private_key_id);
  CHECK(v->claims.value("iss", "") == sa.client_email);
  CHECK(v->claims.value("aud", "") == "https://example.test/token");
  CHECK(v->claims.value("scope", "") == kCloudPlatformScope);
  CHECK(v->claims.value("exp", 0LL) - v->claims.value("iat", 0LL) == 3600);

  auto claims = v->claims;
  claims["iss"] = "attacker@example.test";  // well-formed claims, the original signature
  const auto dot1 = jwt->find('.'), dot2 = jwt->rfind('.');
  std::string tampered = jwt->substr(0, dot1 + 1) + base64url_encode(claims.dump()) + jwt->substr(dot2);
  CHECK(verify_jwt(tampered, *pub).error().detail.find("invalid signature") != std::string::npos);
  std::string bad_sig = *jwt;
  bad_sig[dot2 + 5] = bad_sig[dot2 + 5] == 'A' ? 'B' : 'A';
  CHECK(verify_jwt(bad_sig, *pub).error().detail.find("invalid signature") != std::string::npos);
  auto other = generate_rsa_key_pem();
  REQUIRE(other.ok());
  CHECK_FALSE(verify_jwt(*jwt, *rsa_public_key_pem(*other)).ok());
  CHECK(verify_jwt("a.b", *pub).code() == Code::invalid_argument);
  auto pad = [](std::string b64) { return b64 + std::string((4 - b64.size() % 4) % 4, '='); };
  const std::string padded_input = pad(base64url_encode(R"({"alg":"RS256","typ":"JWT"})")) + "." + pad(base64url_encode(R"({"a":1})"));
  CHECK(padded_input.find('=') != std::string::npos);
  auto padded_sig = rs256_sign(sa.private_key_pem, padded_input);
  REQUIRE(padded_sig.ok());
  CHECK(verify_jwt(padded_input + "." + pad(base64url_encode(*padded_sig)), *pub).ok());  // as google-auth 1.x signs
  CHECK_FALSE(verify_jwt(padded_input + "=." + base64url_encode(*padded_sig), *pub).ok());
  std::string none_alg = base64url_encode(R"({"alg":"none"})") + "." + base64url_encode("{}") + ".";
  CHECK(verify_jwt(none_alg, *pub).error().detail.find("RS256") != std::string::npos);
}

TEST_CASE("service account key files: what is missing is named, the key never") {
  const ServiceAccount& sa = test_account();
  auto back = parse_service_account(service_account_json(sa));
  REQUIRE(back.ok());
  CHECK(back->client_email == sa.client_email);
  CHECK(back->project_id == sa.project_id);
  CHECK(parse_service_account("[]").code() == Code::invalid_argument);
  CHECK(parse_service_account(R"({"type":"authorized_user"})").error().detail.find("service_account") != std::string::npos);
  CHECK(parse_service_account(R"({"type":"service_account","private_key":"x"})").error().detail.find("client_email") != std::string::npos);
  auto bad_key = parse_service_account(R"({"type":"service_account","client_email":"a@b","private_key":"-----BEGIN SECRET-----"})");
  REQUIRE_FALSE(bad_key.ok());
  CHECK(bad_key.error().detail.find("BEGIN SECRET") == std::string::npos);
  CHECK(load_service_account("/nonexistent/key.json").error().detail.find("/nonexistent/key.json") != std::string::npos);
  CHECK(rs256_sign("not a key", "x").code() == Code::invalid_argument);
}

TEST_CASE("redaction replaces every occurrence of every secret") {
  CHECK(http::redact("token abcd1234 and abcd1234 again", {"abcd1234"}) == "token [redacted] and [redacted] again");
  CHECK(http::redact("key=PRIVATE, tok=T0K3N", {"PRIVATE", "T0K3N", ""}) == "key=[redacted], tok=[redacted]");
  CHECK(http::redact("a short one: ab", {"ab"}) == "a short one: ab");  // too short to mean anything
}

TEST_CASE("the insert body carries labels, user data, maxRunDuration with DELETE and a NAT") {
  InsertSpec s{.name = "tsum-7-abc", .zone = "us-central1-a", .machine_type = "g2-standard-4", .source_image = "img",
               .labels = {{"tsum", "t"}}, .metadata = {{"user-data", "#cloud-config\n"}},
               .max_run_duration = std::chrono::hours(2), .gpus = true};
  auto b = insert_body(s);
  CHECK(b["machineType"] == "zones/us-central1-a/machineTypes/g2-standard-4");
  CHECK(b["labels"]["tsum"] == "t");
  CHECK(b["metadata"]["items"][0]["key"] == "user-data");
  CHECK(b["scheduling"]["maxRunDuration"]["seconds"] == "7200");
  CHECK(b["scheduling"]["instanceTerminationAction"] == "DELETE");
  CHECK(b["scheduling"]["onHostMaintenance"] == "TERMINATE");
  CHECK(b["networkInterfaces"][0]["accessConfigs"][0]["type"] == "ONE_TO_ONE_NAT");
  CHECK(b["disks"][0]["initializeParams"]["sourceImage"] == "img");
  s.max_run_duration = std::chrono::seconds(0);
  CHECK_FALSE(insert_body(s)["scheduling"].contains("maxRunDuration"));
}

TEST_CASE("instances, operations and aggregated pages parse; names, labels and UUIDs are checked") {
  auto page = parse_aggregated_instances(nlohmann::json::parse(R"({
    "items": {"zones/us-central1-a": {"instances": [{"name": "a", "status": "RUNNING", "id": "12",
                "zone": "https://x/zones/us-central1-a", "machineType": "https://x/machineTypes/e2-standard-2",
                "labels": {"tsum": "t"},
                "networkInterfaces": [{"networkIP": "10.0.0.2", "accessConfigs": [{"natIP": "34.1.2.3"}]}]}]},
              "zones/europe-west4-a": {"warning": {"code": "NO_RESULTS_ON_PAGE"}}},
    "nextPageToken": "p2"})"));
  REQUIRE(page.ok());
  REQUIRE(page->items.size() == 1);
  CHECK(page->items[0].nat_ip == "34.1.2.3");
  CHECK(page->items[0].zone == "us-central1-a");
  CHECK(page->items[0].machine_type == "e2-standard-2");
  CHECK(page->next_page_token == "p2");
  CHECK(parse_instance(nlohmann::json::parse(R"({"name": "a"})")).code() == Code::internal);

  auto op = parse_operation(nlohmann::json::parse(
      R"({"name": "op-1", "status": "DONE", "error": {"errors": [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": "no"}]}})"));
  REQUIRE(op.ok());
  CHECK(operation_error("insert", *op).code == Code::unavailable);
  op->error_code = "RESOURCE_ALREADY_EXISTS";
  CHECK(operation_error("insert", *op).code == Code::already_exists);

  CHECK(valid_resource_name("tsum-7-0a1b2c3d"));
  CHECK_FALSE(valid_resource_name("Tsum"));
  CHECK_FALSE(valid_resource_name("tsum-"));
  CHECK_FALSE(valid_resource_name(std::string(64, 'a')));
  CHECK(valid_label_key("tsum-run"));
  CHECK_FALSE(valid_label_key("1abc"));
  CHECK(valid_label_value(""));
  CHECK_FALSE(valid_label_value("Upper"));
  const std::string u = uuid_for("run-1");
  CHECK(valid_uuid(u));
  CHECK(u == uuid_for("run-1"));
  CHECK(u != uuid_for("run-2"));
  CHECK(u[14] == '8');
  CHECK(std::string("89ab").find(u[19]) != std::string::npos);
  CHECK(region_of("europe-west4-a") == "europe-west4");
}

TEST_CASE("money is exact integer nanos; malformed money is refused") {
  CHECK(money_nanos(nlohmann::json::parse(R"({"currencyCode": "USD", "units": "2", "nanos": 933908000})")).value() == 2933908000LL);
  CHECK(money_nanos(nlohmann::json::parse(R"({"nanos": 1})")).value() == 1);
  CHECK(money_nanos(nlohmann::json::parse(R"({"units": "0"})")).value() == 0);
  CHECK_FALSE(money_nanos(nlohmann::json::parse(R"({"units": "-1", "nanos": 0})")).ok());
  CHECK_FALSE(money_nanos(nlohmann::json::parse(R"({"units": "1", "nanos": 1000000000})")).ok());
  CHECK_FALSE(money_nanos(nlohmann::json::parse(R"({"units": "1.5"})")).ok());
  CHECK_FALSE(money_nanos(nlohmann::json::parse(R"({"units": "99999999999999999999"})")).ok());
}

TEST_CASE("machine types are priced from their family's core and RAM rates and their GPUs, in nanos") {
  std::vector<Sku> skus{
      {"N1 Predefined Instance Core running in Americas", "OnDemand", {"us-central1"}, "h", 31611000},
      {"N1 Predefined Instance Ram running in Americas", "OnDemand", {"us-central1"}, "GiBy.h", 4237000},
      {"Spot Preemptible N1 Predefined Instance Core running in Americas", "Preemptible", {"us-central1"}, "h", 1},
      {"N1 Predefined Instance Core running in EMEA", "OnDemand", {"europe-west4"}, "h", 99},
      {"G2 Instance Core running in Americas", "OnDemand", {"us-central1"}, "h", 24988000},
      {"G2 Instance Ram running in Americas", "OnDemand", {"us-central1"}, "GiBy.h", 2927000},
      {"Nvidia L4 GPU running in Americas", "OnDemand", {"us-central1"}, "h", 560040000},
      {"E2 Instance Core running in Americas", "OnDemand", {"us-central1"}, "h", 21811250},
      {"E2 Instance Ram running in Americas", "OnDemand", {"us-central1"}, "h", 2923750},  // wrong unit
  };
  CHECK(sku_stem("Nvidia L4 GPU running in Americas") == "Nvidia L4 GPU");
  CHECK(sku_stem("Commitment v1: Cpu in Americas for 1 Year").empty());
  auto rates = on_demand_rates(skus, "us-central1");
  CHECK(rates.at("N1 Predefined Instance Core").nanos_per_unit == 31611000);  // not Spot, not EMEA
  std::vector<MachineType> types{{"n1-standard-4", 4, 15360}, {"g2-standard-4", 4, 16384, false, "nvidia-l4", 1},
                                 {"e2-standard-2", 2, 8192}, {"e2-micro", 2, 1024, true}, {"z9-huge", 2, 1024}};
  auto offers = price_machine_types(types, rates, "us-central1-a");
  REQUIRE(offers.size() == 2);
  CHECK(offers[0].instance_type == "n1-standard-4");
  CHECK(offers[0].hourly_price == 0.189999);  // 4 x 0.031611 + 15 GiB x 0.004237, exactly
  CHECK(offers[1].hourly_price == doctest::Approx(4 * 0.024988 + 16 * 0.002927 + 0.56004));
  CHECK(offers[1].gpus == 1);
  CHECK(offers[1].gpu_type == "nvidia-l4");
  CHECK(offers[1].memory_gib == 16);
}

TEST_CASE("catalog answers with fields of another type are read without throwing") {
  // The base tier's start as a string is not the base tier; an item's flags and counts of another type read as
  // missing (the fuzz target must never see nlohmann's type_error).
  auto skus = parse_sku_page(nlohmann::json::parse(R"({"skus":[{"description":"N1 Predefined Instance Core running in Americas",
      "pricingInfo":[{"pricingExpression":{"usageUnit":"h","tieredRates":[{"startUsageAmount":"0","unitPrice":{"units":"1"}},
      {"unitPrice":{"units":"0","nanos":31611000}}]}}]}]})"));
  REQUIRE_MESSAGE(skus.ok(), skus.error().detail);
  REQUIRE(skus->items.size() == 1);
  CHECK(skus->items[0].nanos_per_unit == 31611000);
  auto types = parse_machine_types(nlohmann::json::parse(R"({"items":[{"name":"g2-standard-4","guestCpus":4,
      "memoryMb":16384,"isSharedCpu":"no","accelerators":[{"guestAcceleratorType":"nvidia-l4","guestAcceleratorCount":1.5}]}]})"));
  REQUIRE_MESSAGE(types.ok(), types.error().detail);
  REQUIRE(types->items.size() == 1);
  CHECK_FALSE(types->items[0].shared_cpu);
  CHECK(types->items[0].gpus == 0);
}
