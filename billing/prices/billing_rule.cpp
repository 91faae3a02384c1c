#include "billing/prices/billing_rule.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "billing/prices/rule_book.h"

namespace tsum::billing {

const std::vector<BillingRule>& builtin_rules() {
  static const std::vector<BillingRule> kRules = [] {
    std::vector<BillingRule> out;
    for (const char* name : {"per_second_60s_min", "per_minute", "per_10_minutes", "per_hour"})
      for (const auto& r : shipped_rules())
        if (r.name == name) out.push_back(r);
    return out;
  }();
  return kRules;
}

namespace {

constexpr double kBoundaryNoise = 1e-9;

Result<double> parse_seconds(std::string_view key, std::string_view text, std::string_view spec) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v) || v < 0)
    return make_error(Code::invalid_argument,
                      "billing rule '" + std::string(spec) + "': " + std::string(key) +
                          " must be a non-negative number of seconds, got '" + std::string(text) + "'");
  return v;
}

Result<BillingRule> parse_custom(std::string_view spec) {
  BillingRule rule;
  rule.name = std::string(spec);
  rule.step_s = 0;
  rule.note = "custom";
  bool have_step = false;
  std::string_view rest = spec;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    auto colon = part.find(':');
    if (colon == std::string_view::npos)
      return make_error(Code::invalid_argument, "billing rule '" + std::string(spec) + "': expected key:value, got '" +
                                                    std::string(part) + "'");
    std::string_view key = part.substr(0, colon);
    auto value = parse_seconds(key, part.substr(colon + 1), spec);
    if (!value) return value.error();
    if (key == "step" && !have_step) {
      rule.step_s = *value;
      have_step = true;
    } else if (key == "min") {
      rule.min_s = *value;
    } else {
      return make_error(Code::invalid_argument,
                        "billing rule '" + std::string(spec) + "': unknown or repeated key '" + std::string(key) + "'");
    }
  }
  if (rule.step_s <= 0)
    return make_error(Code::invalid_argument, "billing rule '" + std::string(spec) + "': step must be > 0");
  return rule;
}

// Steps billed for an up-time t (>= 0) that started `offset` seconds past a wall-clock step boundary.
double steps_of(const BillingRule& rule, double t, double offset) {
  const double noise = kBoundaryNoise / rule.step_s;
  if (rule.round_down) return std::max(0.0, std::floor(t / rule.step_s + noise));
  if (rule.clock_hour) {
    double start = std::fmod(std::max(0.0, offset), rule.step_s);
    double first = std::floor(start / rule.step_s + noise);
    return std::max(0.0, std::ceil((start + t) / rule.step_s - noise) - first);
  }
  return std::max(0.0, std::ceil(t / rule.step_s - noise));
}

double uncapped(const BillingRule& rule, double t, double offset) {
  return std::max(rule.min_s, steps_of(rule, t, offset) * rule.step_s);
}

}  // namespace

Result<BillingRule> parse_rule(std::string_view spec, std::span<const BillingRule> extra) {
  for (const auto& r : extra)
    if (r.name == spec) return r;
  for (const auto& r : shipped_rules())
    if (r.name == spec) return r;
  if (!spec.starts_with("step:"))
    return make_error(Code::invalid_argument,
                      "unknown billing rule '" + std::string(spec) +
                          "': use a rule name from billing/prices/rules.json (e.g. per_second_60s_min, per_minute, "
                          "per_10_minutes, per_hour, aws_ec2_linux), a rules file's name, or step:S,min:M");
  return parse_custom(spec);
}

Result<BillingRule> parse_rule(std::string_view spec) { return parse_rule(spec, {}); }

double billed_seconds(const BillingRule& rule, double t_s, double start_offset_s) {
  if (!(t_s > 0)) t_s = 0;
  if (!rule.cap_hours) return uncapped(rule, t_s, start_offset_s);
  const double cap_s = *rule.cap_hours * 3600.0;
  const double months = std::floor(t_s / kMonthS + kBoundaryNoise / kMonthS);
  if (months < 1) return std::min(cap_s, uncapped(rule, t_s, start_offset_s));
  const double rest = std::max(0.0, t_s - months * kMonthS);
  const double full = std::min(cap_s, uncapped(rule, kMonthS, 0));
  return months * full + (rest > kBoundaryNoise ? std::min(cap_s, uncapped(rule, rest, start_offset_s)) : 0.0);
}

double expected_billed_seconds(const BillingRule& rule, double t_s) {
  if (!rule.clock_hour) return billed_seconds(rule, t_s);
  // Over a uniform start offset the count of started steps takes two values: one more than ceil-less-one on
  // [0, step - r] and one more again on (step - r, step), r = t mod step. Billed time is constant on each
  // piece, so evaluating at each piece's midpoint and weighting by its length is exact.
  const double step = rule.step_s;
  double r = std::fmod(std::max(0.0, t_s), step);
  if (r < kBoundaryNoise || step - r < kBoundaryNoise) r = 0;
  const double low_len = step - r;
  double e = (low_len / step) * billed_seconds(rule, t_s, low_len / 2);
  if (r > 0) e += (r / step) * billed_seconds(rule, t_s, low_len + r / 2);
  return e;
}

double start_offset_of(const BillingRule& rule, double unix_start_s) {
  double m = std::fmod(unix_start_s, rule.step_s);
  return m < 0 ? m + rule.step_s : m;
}

double cost(const BillingRule& rule, double hourly_price, double t_s, double start_offset_s) {
  return hourly_price * billed_seconds(rule, t_s, start_offset_s) / 3600.0;
}

double expected_cost(const BillingRule& rule, double hourly_price, double t_s) {
  return hourly_price * expected_billed_seconds(rule, t_s) / 3600.0;
}

BillingRule with_monthly_cap(BillingRule rule, double hourly_price, double monthly_price) {
  if (rule.cap_hours && hourly_price > 0 && monthly_price > 0) rule.cap_hours = monthly_price / hourly_price;
  return rule;
}

std::string format_duration(double seconds) {
  char buf[64];
  long s = std::lround(seconds);
  if (s >= 3600 && s % 60 == 0) {
    long h = s / 3600, m = (s % 3600) / 60;
    if (m == 0) std::snprintf(buf, sizeof buf, "%ld h", h);
    else std::snprintf(buf, sizeof buf, "%ld h %ld min", h, m);
  } else if (s >= 60 && s % 60 == 0) {
    std::snprintf(buf, sizeof buf, "%ld min", s / 60);
  } else if (seconds >= 3600) {
    std::snprintf(buf, sizeof buf, "%.2f h", seconds / 3600);
  } else if (seconds >= 600) {
    std::snprintf(buf, sizeof buf, "%.1f min", seconds / 60);
  } else if (std::fabs(seconds - static_cast<double>(s)) < 0.05) {
    std::snprintf(buf, sizeof buf, "%ld s", s);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  }
  return buf;
}

}  // namespace tsum::billing
