#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

#include "billing/prices/billing_rule.h"
#include "billing/prices/rule_book.h"

using namespace tsum::billing;

namespace {

std::string one_rule(const std::string& fields) {
  return R"({"rules": [{"name": "mine", "step_s": 60, "source": "my contract", "as_of": "2026-01-01")" +
         (fields.empty() ? std::string() : ", " + fields) + "}]}";
}

std::string error_of(const std::string& text) {
  auto r = parse_rules(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == tsum::Code::invalid_argument);
  return r.error().detail;
}

}  // namespace

TEST_CASE("the shipped rules.json loads and every entry has a source and an as_of date") {
  REQUIRE(shipped_rules_status().ok());
  const auto& rules = shipped_rules();
  REQUIRE(rules.size() >= 18);
  std::set<std::string> names;
  for (const auto& r : rules) {
    CAPTURE(r.name);
    CHECK_FALSE(r.source.empty());
    CHECK(r.as_of.size() == 10);
    CHECK(r.step_s > 0);
    CHECK(r.min_s >= 0);
    names.insert(r.name);
  }
  for (const char* n : {"per_second_60s_min", "per_minute", "per_10_minutes", "per_hour", "aws_ec2_linux", "gce",
                        "azure", "oci_vm", "oci_bare_metal", "hetzner", "selectel", "lambda", "runpod", "vast",
                        "yandex", "gce_2016", "ru_10min", "ru_hourly"})
    CHECK(names.contains(n));
}

TEST_CASE("each provider has a default rule, and OCI's is the VM one") {
  for (const char* p : {"aws", "gce", "azure", "oci", "hetzner", "selectel", "lambda", "runpod", "vast", "yandex", "regru"}) {
    CAPTURE(p);
    CHECK(rule_for_provider(p).has_value());
  }
  CHECK(rule_for_provider("oci")->name == "oci_vm");
  CHECK_FALSE(rule_for_provider("local").has_value());
}

TEST_CASE("rules survive a serialize and parse round trip") {
  auto text = rules_to_json(shipped_rules());
  auto back = parse_rules(text);
  REQUIRE(back.ok());
  REQUIRE(back->size() == shipped_rules().size());
  for (size_t i = 0; i < back->size(); ++i) {
    const auto& a = shipped_rules()[i];
    const auto& b = (*back)[i];
    CHECK(a.name == b.name);
    CHECK(a.step_s == b.step_s);
    CHECK(a.min_s == b.min_s);
    CHECK(a.cap_hours == b.cap_hours);
    CHECK(a.clock_hour == b.clock_hour);
    CHECK(a.round_down == b.round_down);
    CHECK(a.stopped_bills == b.stopped_bills);
    CHECK(a.source == b.source);
  }
}

TEST_CASE("a user rule file adds rules usable by name, and shadows shipped ones") {
  auto rules = parse_rules(R"({"rules": [
    {"name": "azure_2025", "provider": "azure", "step_s": 1, "min_s": 300, "source": "my invoice", "as_of": "2025-07-01"},
    {"name": "per_hour", "step_s": 1800, "min_s": 1800, "source": "test", "as_of": "2025-07-01"}]})");
  REQUIRE(rules.ok());
  auto mine = parse_rule("azure_2025", *rules);
  REQUIRE(mine.ok());
  CHECK(billed_seconds(*mine, 90) == 300);
  CHECK(billed_seconds(*mine, 301) == 301);
  CHECK(rule_for_provider("azure", *rules)->name == "azure_2025");
  CHECK(parse_rule("per_hour", *rules)->step_s == 1800);
  CHECK(parse_rule("per_hour")->step_s == 3600);  // the shipped one is untouched
}

TEST_CASE("user rule files are validated with messages naming the entry and field") {
  CHECK(parse_rules(one_rule("")).ok());
  CHECK(error_of("{").find("not valid JSON") != std::string::npos);
  CHECK(error_of(R"({"rule": []})").find("expected an object") != std::string::npos);
  CHECK(error_of(one_rule(R"("min": 60)")).find("unknown field 'min'") != std::string::npos);
  CHECK(error_of(one_rule(R"("min": 60)")).find("rules[0] (mine)") != std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "mine", "step_s": -5, "source": "s", "as_of": "2026-01-01"}]})")
            .find("'step_s' must be > 0") != std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "mine", "step_s": 0, "source": "s", "as_of": "2026-01-01"}]})")
            .find("'step_s' must be > 0") != std::string::npos);
  CHECK(error_of(one_rule(R"("min_s": -1)")).find("'min_s' must be >= 0") != std::string::npos);
  CHECK(error_of(one_rule(R"("cap_hours": 0)")).find("cap_hours") != std::string::npos);
  CHECK(error_of(one_rule(R"("round": "nearest")")).find("'round'") != std::string::npos);
  CHECK(error_of(one_rule(R"("clock_hour": "yes")")).find("true or false") != std::string::npos);
  CHECK(error_of(one_rule(R"("clock_hour": true, "round": "down")")).find("cannot round down") != std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "mine", "step_s": 1, "as_of": "2026-01-01"}]})").find("missing 'source'") !=
        std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "mine", "step_s": 1, "source": "s", "as_of": "January"}]})").find("YYYY-MM-DD") !=
        std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "Mine!", "step_s": 1, "source": "s", "as_of": "2026-01-01"}]})").find("'name'") !=
        std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "step_x", "step_s": 1, "source": "s", "as_of": "2026-01-01"}]})").find("'name'") !=
        std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "a", "step_s": 1, "source": "s", "as_of": "2026-01-01"},
                               {"name": "a", "step_s": 2, "source": "s", "as_of": "2026-01-01"}]})")
            .find("rules[1] (a): duplicate") != std::string::npos);
  CHECK(error_of(R"({"rules": [{"name": "a", "step_s": "60", "source": "s", "as_of": "2026-01-01"}]})")
            .find("'step_s' must be a number") != std::string::npos);
}

TEST_CASE("load_rules_file reads a file and names it in errors") {
  auto dir = std::filesystem::temp_directory_path() / ("tsum_rules_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto good = dir / "good.json";
  auto bad = dir / "bad.json";
  std::ofstream(good) << one_rule(R"("min_s": 120)");
  std::ofstream(bad) << one_rule(R"("step": 1)");
  auto ok = load_rules_file(good.string());
  REQUIRE(ok.ok());
  CHECK((*ok)[0].min_s == 120);
  auto err = load_rules_file(bad.string());
  REQUIRE_FALSE(err.ok());
  CHECK(err.error().detail.find(bad.string()) != std::string::npos);
  CHECK(err.error().detail.find("unknown field 'step'") != std::string::npos);
  auto missing = load_rules_file((dir / "nope.json").string());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == tsum::Code::not_found);
  std::filesystem::remove_all(dir);
}
