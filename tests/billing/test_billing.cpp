#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "billing/billing_rule.h"
#include "billing/catalog.h"

using namespace tsum::billing;

namespace {
BillingRule rule(const char* name) {
  auto r = parse_rule(name);
  REQUIRE(r.ok());
  return *r;
}
}  // namespace

TEST_CASE("the four built-in rules, on and around their step boundaries and below the minimum") {
  struct Row {
    const char* rule;
    double t, billed;
  };
  const Row rows[] = {
      {"per_second_60s_min", 0, 60},      {"per_second_60s_min", 1, 60},     {"per_second_60s_min", 59.9, 60},
      {"per_second_60s_min", 60, 60},     {"per_second_60s_min", 60.001, 61}, {"per_second_60s_min", 61, 61},
      {"per_second_60s_min", 3600.2, 3601},
      {"per_minute", 0.5, 60},            {"per_minute", 60, 60},            {"per_minute", 60.01, 120},
      {"per_minute", 119.99, 120},        {"per_minute", 120, 120},          {"per_minute", 120.5, 180},
      {"per_10_minutes", 1, 600},         {"per_10_minutes", 600, 600},      {"per_10_minutes", 600.5, 1200},
      {"per_10_minutes", 1799, 1800},
      {"per_hour", 1, 3600},              {"per_hour", 3600, 3600},          {"per_hour", 3600.01, 7200},
      {"per_hour", 7200, 7200},           {"per_hour", 7201, 10800},
  };
  for (const auto& r : rows) {
    CAPTURE(r.rule);
    CAPTURE(r.t);
    CHECK(billed_seconds(rule(r.rule), r.t) == doctest::Approx(r.billed));
  }
}

TEST_CASE("float noise at an exact boundary stays on it") {
  double t = 0.1 * 3 * 200;  // 60.00000000000001
  CHECK(billed_seconds(rule("per_minute"), t) == 60);
  CHECK(billed_seconds(rule("per_second_60s_min"), -5) == 60);
}

TEST_CASE("cost is the hourly price times billed hours") {
  CHECK(cost(rule("per_hour"), 0.085, 10) == doctest::Approx(0.085));
  CHECK(cost(rule("per_second_60s_min"), 3.6, 100) == doctest::Approx(0.1));
  CHECK(cost(rule("per_minute"), 0.6, 61) == doctest::Approx(0.02));
  CHECK(cost(rule("per_10_minutes"), 1.2, 601) == doctest::Approx(0.4));
}

TEST_CASE("custom rules step:S,min:M") {
  auto r = rule("step:30,min:90");
  CHECK(r.step_s == 30);
  CHECK(r.min_s == 90);
  CHECK(billed_seconds(r, 10) == 90);
  CHECK(billed_seconds(r, 91) == 120);
  auto no_min = rule("step:15");
  CHECK(no_min.min_s == 0);
  CHECK(billed_seconds(no_min, 0) == 0);
  CHECK(billed_seconds(no_min, 16) == 30);
  CHECK(rule("step:0.5,min:1").step_s == 0.5);
}

TEST_CASE("bad rules are refused with a message naming the problem") {
  for (const char* bad : {"per_fortnight", "step:", "step:0", "step:-1", "step:abc", "step:10,min:x",
                          "step:10,max:5", "step:10,step:20", "step:10,min", ""}) {
    CAPTURE(bad);
    auto r = parse_rule(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == tsum::Code::invalid_argument);
    CHECK_FALSE(r.error().detail.empty());
  }
}

TEST_CASE("the shipped local catalog parses and prices every local type") {
  auto text = tsum::find_embedded(embedded_catalogs(), "local.json");
  REQUIRE_FALSE(text.empty());
  auto c = parse_catalog(text);
  REQUIRE(c.ok());
  CHECK(c->provider == "local");
  CHECK_FALSE(c->source.empty());
  CHECK(c->as_of.size() == 10);
  CHECK(c->hourly_price("local-1c", 1).value() == doctest::Approx(0.0425));
  CHECK(c->hourly_price("local-2c", 2).value() == doctest::Approx(0.085));
  CHECK(c->hourly_price("local-3c", 3).value() == doctest::Approx(3 * 0.0425));  // per-vCPU fallback
}

TEST_CASE("malformed catalogs are errors, not exceptions") {
  CHECK_FALSE(parse_catalog("{").ok());
  CHECK_FALSE(parse_catalog(R"({"provider":"x"})").ok());
  CHECK_FALSE(parse_catalog(R"({"provider":"x","source":"s","as_of":"d","offers":[{"instance_type":"a","hourly":-1}]})").ok());
}
