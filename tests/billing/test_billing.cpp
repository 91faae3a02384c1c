#include <doctest/doctest.h>

#include "billing/prices/billing_rule.h"
#include "billing/prices/catalog.h"
#include "tests/support/billing_rule.h"

using namespace tsum::billing;
using tsum::billing::testing::rule;


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

TEST_CASE("every shipped provider rule on its boundaries, below its minimum and at its cap") {
  struct Row {
    const char* rule;
    double t, billed;
  };
  const Row rows[] = {
      // AWS, GCE, OCI VMs: per second after 60 s.
      {"aws_ec2_linux", 0, 60},     {"aws_ec2_linux", 59, 60},    {"aws_ec2_linux", 60, 60},
      {"aws_ec2_linux", 60.4, 61},  {"gce", 30, 60},              {"gce", 125.2, 126},
      {"oci_vm", 1, 60},            {"oci_vm", 61, 61},
      // OCI bare metal: per second after an hour.
      {"oci_bare_metal", 10, 3600}, {"oci_bare_metal", 3600, 3600}, {"oci_bare_metal", 3600.5, 3601},
      // Azure's FAQ: whole minutes only, rounded down.
      {"azure", 405, 360},          {"azure", 59.9, 0},           {"azure", 60, 60},  {"azure", 119.99, 60},
      // Hetzner: started hours.
      {"hetzner", 1, 3600},         {"hetzner", 3600, 3600},      {"hetzner", 3601, 7200},
      // Lambda: started minutes; RunPod, Vast, Yandex: per second, no minimum.
      {"lambda", 1, 60},            {"lambda", 61, 120},          {"runpod", 0.4, 1}, {"vast", 59, 59},
      {"yandex", 3600.2, 3601},     {"yandex", 0, 0},
      // Historical: GCE per minute after 10 minutes; RU per 10 minutes and per hour.
      {"gce_2016", 1, 600},         {"gce_2016", 600, 600},       {"gce_2016", 601, 660},
      {"ru_10min", 601, 1200},      {"ru_hourly", 3599, 3600},    {"ru_hourly", 3600.5, 7200},
  };
  for (const auto& r : rows) {
    CAPTURE(r.rule);
    CAPTURE(r.t);
    CHECK(billed_seconds(rule(r.rule), r.t) == doctest::Approx(r.billed));
  }
}

TEST_CASE("Hetzner's monthly cap: billed hours never exceed the cap within a month") {
  auto h = rule("hetzner");
  REQUIRE(h.cap_hours.has_value());
  CHECK(*h.cap_hours == 672);
  CHECK(billed_seconds(h, 671.5 * 3600) == doctest::Approx(672 * 3600));
  CHECK(billed_seconds(h, 700 * 3600) == doctest::Approx(672 * 3600));   // capped
  CHECK(billed_seconds(h, 729 * 3600) == doctest::Approx(672 * 3600));   // still one month
  CHECK(billed_seconds(h, kMonthS + 10) == doctest::Approx(672 * 3600 + 3600));  // a month, then an hour
  // The exact cap of an offer comes from its monthly price: CCX13 at 0.02/h and 12.49/month caps at 624.5 h.
  auto ccx13 = with_monthly_cap(h, 0.02, 12.49);
  CHECK(*ccx13.cap_hours == doctest::Approx(624.5));
  CHECK(cost(ccx13, 0.02, 700 * 3600) == doctest::Approx(12.49));
  CHECK(cost(ccx13, 0.02, 2.5 * 3600) == doctest::Approx(0.06));
  // Rules without a cap are left alone.
  CHECK_FALSE(with_monthly_cap(rule("per_hour"), 0.02, 12.49).cap_hours.has_value());
}

TEST_CASE("Selectel bills every clock hour a run touches") {
  auto s = rule("selectel");
  REQUIRE(s.clock_hour);
  CHECK(billed_seconds(s, 20 * 60, 50 * 60) == 7200);   // 10:50 to 11:10 is two clock hours
  CHECK(billed_seconds(s, 20 * 60, 0) == 3600);         // 10:00 to 10:20 is one
  CHECK(billed_seconds(s, 3600, 0) == 3600);            // exactly 10:00 to 11:00
  CHECK(billed_seconds(s, 3600, 1) == 7200);            // 10:00:01 to 11:00:01
  CHECK(billed_seconds(s, 10 * 60, 50 * 60) == 3600);   // 10:50 to 11:00 ends on the boundary
  CHECK(billed_seconds(s, 20 * 60, 50 * 60 + 3600) == 7200);  // offsets are taken modulo the hour
  CHECK(start_offset_of(s, 1'700'000'000.0) == doctest::Approx(800));  // 2023-11-14 22:13:20 UTC
  CHECK(start_offset_of(s, 1'700'000'000.0 + 3000) == doctest::Approx(200));
  // Over a uniform start offset, a run of t bills t + 1 h on average (before the minimum).
  CHECK(expected_billed_seconds(s, 1200) == doctest::Approx(1200 + 3600));
  CHECK(expected_billed_seconds(s, 3600) == doctest::Approx(7200));
  CHECK(expected_billed_seconds(s, 5400) == doctest::Approx(9000));
  // And for a rule that is not clock-aligned the expectation is the plain value.
  CHECK(expected_billed_seconds(rule("per_hour"), 1200) == 3600);
}

TEST_CASE("the stopped_bills flag follows each provider's documentation") {
  CHECK(rule("hetzner").stopped_bills);
  CHECK(rule("selectel").stopped_bills);
  CHECK_FALSE(rule("aws_ec2_linux").stopped_bills);
  CHECK_FALSE(rule("gce").stopped_bills);
  CHECK_FALSE(rule("yandex").stopped_bills);
}

TEST_CASE("builtin_rules keeps the four generic rules in their order") {
  const auto& b = builtin_rules();
  REQUIRE(b.size() == 4);
  CHECK(b[0].name == "per_second_60s_min");
  CHECK(b[1].name == "per_minute");
  CHECK(b[2].name == "per_10_minutes");
  CHECK(b[3].name == "per_hour");
}

TEST_CASE("durations read well") {
  CHECK(format_duration(3600) == "1 h");
  CHECK(format_duration(7800) == "2 h 10 min");
  CHECK(format_duration(600) == "10 min");
  CHECK(format_duration(61) == "61 s");
  CHECK(format_duration(61.25) == "61.2 s");
  CHECK(format_duration(6700) == "1.86 h");
  CHECK(format_duration(828.4) == "13.8 min");
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
