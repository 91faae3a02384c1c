#include <doctest/doctest.h>

#include "billing/prices/billing_rule.h"
#include "billing/prices/catalog.h"
#include "billing/prices/rule_book.h"

using namespace tsum::billing;

namespace {

Catalog shipped(const char* name) {
  auto text = tsum::find_embedded(embedded_catalogs(), name);
  REQUIRE_FALSE(text.empty());
  auto c = parse_catalog(text);
  REQUIRE(c.ok());
  return *c;
}

}  // namespace

TEST_CASE("every shipped catalog parses, cites a source and a date, and names a known billing rule") {
  for (const char* name : {"local.json", "aws.json", "gce.json", "azure.json", "hetzner.json", "yandex.json", "regru.json"}) {
    CAPTURE(name);
    auto c = shipped(name);
    CHECK_FALSE(c.source.empty());
    CHECK(c.as_of.size() == 10);
    CHECK_FALSE(c.offers.empty());
    if (!c.billing.empty()) CHECK(parse_rule(c.billing).ok());
    for (const auto& o : c.offers) {
      CAPTURE(o.instance_type);
      CHECK(o.hourly > 0);
      CHECK((o.gpus == 0) == o.gpu_type.empty());
    }
  }
}

TEST_CASE("the catalogs hold the types and currencies they promise") {
  auto aws = shipped("aws.json");
  CHECK(aws.currency == "USD");
  for (const char* t : {"c6i.large", "c5.2xlarge", "p3.2xlarge", "g4dn.xlarge", "p4d.24xlarge"}) CHECK(aws.find(t));
  CHECK(aws.find("p3.2xlarge")->gpu_type == "V100");
  CHECK(aws.find("p4d.24xlarge")->gpus == 8);
  auto gce = shipped("gce.json");
  for (const char* t : {"n1-standard-8", "n2-standard-8", "c2-standard-8", "n1-standard-8+1xV100", "n1-standard-8+1xT4",
                        "n1-standard-4+1xK80"})
    CHECK(gce.find(t));
  CHECK(gce.find("n1-standard-8+1xV100")->spot_hourly.has_value());
  auto hz = shipped("hetzner.json");
  CHECK(hz.currency == "EUR");
  for (const char* t : {"cx22", "cpx31", "ccx33"}) {
    REQUIRE(hz.find(t));
    REQUIRE(hz.find(t)->monthly.has_value());
    // The monthly price caps the bill at 600-700 hours of the hourly price.
    double hours = *hz.find(t)->monthly / hz.find(t)->hourly;
    CHECK(hours > 550);
    CHECK(hours < 700);
  }
  CHECK(shipped("yandex.json").currency == "RUB");
  auto regru = shipped("regru.json");
  CHECK(regru.currency == "RUB");
  for (const auto& o : regru.offers) {
    CHECK(o.gpu_type == "V100");
    CHECK(o.hourly >= 90);
    CHECK(o.hourly <= 130);
  }
}

TEST_CASE("a catalog survives serialize and parse") {
  for (const char* name : {"local.json", "aws.json", "hetzner.json", "yandex.json"}) {
    CAPTURE(name);
    auto c = shipped(name);
    auto back = parse_catalog(serialize_catalog(c));
    REQUIRE(back.ok());
    CHECK(back->provider == c.provider);
    CHECK(back->per_vcpu_hourly == c.per_vcpu_hourly);
    REQUIRE(back->offers.size() == c.offers.size());
    for (size_t i = 0; i < c.offers.size(); ++i) {
      CHECK(back->offers[i].instance_type == c.offers[i].instance_type);
      CHECK(back->offers[i].hourly == c.offers[i].hourly);
      CHECK(back->offers[i].spot_hourly == c.offers[i].spot_hourly);
      CHECK(back->offers[i].monthly == c.offers[i].monthly);
      CHECK(back->offers[i].gpus == c.offers[i].gpus);
    }
    CHECK(serialize_catalog(*back) == serialize_catalog(c));
  }
}

TEST_CASE("merge_prices replaces the prices of the listed types and keeps the rest") {
  auto aws = shipped("aws.json");
  auto update = parse_catalog(R"({"provider": "aws", "currency": "USD", "source": "https://pricing.us-east-1.amazonaws.com",
    "as_of": "2026-11-01", "offers": [
      {"instance_type": "p3.2xlarge", "hourly": 2.9, "spot_hourly": 0.95},
      {"instance_type": "c7i.large", "vcpus": 2, "hourly": 0.08925}]})");
  REQUIRE(update.ok());
  auto merged = merge_prices(aws, *update);
  REQUIRE(merged.ok());
  const auto* p3 = merged->find("p3.2xlarge");
  REQUIRE(p3);
  CHECK(p3->hourly == 2.9);
  CHECK(*p3->spot_hourly == 0.95);
  CHECK(p3->vcpus == 8);  // the rest of the offer is kept
  CHECK(p3->as_of == "2026-11-01");
  CHECK(p3->source == "https://pricing.us-east-1.amazonaws.com");
  CHECK(merged->find("c6i.large")->hourly == aws.find("c6i.large")->hourly);
  CHECK(merged->find("c6i.large")->as_of.empty());
  REQUIRE(merged->find("c7i.large"));
  CHECK(merged->offers.size() == aws.offers.size() + 1);

  auto eur = *update;
  eur.currency = "EUR";
  CHECK_FALSE(merge_prices(aws, eur).ok());
  auto other = *update;
  other.provider = "gce";
  CHECK_FALSE(merge_prices(aws, other).ok());
}

TEST_CASE("catalog typos and bad prices are errors") {
  CHECK_FALSE(parse_catalog(R"({"provider":"x","source":"s","as_of":"d","ofers":[]})").ok());
  CHECK_FALSE(parse_catalog(R"({"provider":"x","source":"s","as_of":"d","offers":[{"instance_type":"a","hourli":1}]})").ok());
  CHECK_FALSE(parse_catalog(R"({"provider":"x","source":"s","as_of":"d","offers":[{"instance_type":"a","hourly":1,"spot_hourly":-1}]})").ok());
  CHECK_FALSE(parse_catalog(R"({"provider":"x","source":"s","as_of":"d","offers":[{"instance_type":"a","hourly":1,"monthly":0}]})").ok());
  CHECK_FALSE(parse_catalog(R"({"provider":"x","source":"s","as_of":"d","offers":[{"instance_type":"a","hourly":1},{"instance_type":"a","hourly":2}]})").ok());
  CHECK_FALSE(parse_catalog(R"({"provider":"x","source":"s","as_of":"d","offers":[{"instance_type":"a","hourly":"1"}]})").ok());
  CHECK_FALSE(parse_catalog(R"([1,2])").ok());
}
