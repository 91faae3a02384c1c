#include "billing/billing_rule.h"

#include <charconv>
#include <cmath>

namespace tsum::billing {

const std::vector<BillingRule>& builtin_rules() {
  static const std::vector<BillingRule> kRules = {
      {"per_second_60s_min", 1, 60, "AWS EC2 Linux and GCE today: per second, 60 s minimum"},
      {"per_minute", 60, 60, "Azure, as the seed states: per started minute"},
      {"per_10_minutes", 600, 600, "GCE in the seed's time: per started 10 minutes"},
      {"per_hour", 3600, 3600, "Hetzner, Selectel and many RU providers: per started hour"},
  };
  return kRules;
}

namespace {

Result<double> parse_seconds(std::string_view key, std::string_view text, std::string_view spec) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v) || v < 0)
    return make_error(Code::invalid_argument,
                      "billing rule '" + std::string(spec) + "': " + std::string(key) +
                          " must be a non-negative number of seconds, got '" + std::string(text) + "'");
  return v;
}

}  // namespace

Result<BillingRule> parse_rule(std::string_view spec) {
  for (const auto& r : builtin_rules())
    if (r.name == spec) return r;
  if (!spec.starts_with("step:"))
    return make_error(Code::invalid_argument,
                      "unknown billing rule '" + std::string(spec) +
                          "': use per_second_60s_min, per_minute, per_10_minutes, per_hour or step:S,min:M");
  BillingRule rule{std::string(spec), 0, 0, "custom"};
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

double billed_seconds(const BillingRule& rule, double t_s) {
  if (!(t_s > 0)) t_s = 0;
  double steps = std::ceil(t_s / rule.step_s - 1e-9 / rule.step_s);
  if (steps < 0) steps = 0;
  return std::max(rule.min_s, steps * rule.step_s);
}

double cost(const BillingRule& rule, double hourly_price, double t_s) {
  return hourly_price * billed_seconds(rule, t_s) / 3600.0;
}

}  // namespace tsum::billing
