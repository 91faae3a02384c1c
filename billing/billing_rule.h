// Billing rules: how a provider rounds an instance's up-time into billed time. Pure functions, no I/O.
//
//   billed(t) = max(min_s, ceil(t / step_s) * step_s)
//   cost(t)   = hourly_price * billed(t) / 3600
//
// A rule is written either as a built-in name ("per_second_60s_min", "per_minute", "per_10_minutes",
// "per_hour") or as a custom spec "step:S,min:M" (seconds, M optional and 0 by default).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::billing {

struct BillingRule {
  std::string name;    // the name it was asked for: a built-in name or the custom spec itself
  double step_s = 1;   // > 0
  double min_s = 0;    // >= 0
  std::string note;    // who bills this way
};

// The four built-in rules, in a stable order.
const std::vector<BillingRule>& builtin_rules();

// A built-in name or "step:S,min:M". invalid_argument names what is wrong.
Result<BillingRule> parse_rule(std::string_view spec);

// Billed seconds for an up-time of t_s seconds (t_s < 0 is treated as 0). A t_s within 1 ns of a step
// boundary counts as on it, so float noise cannot push a measurement into the next step.
double billed_seconds(const BillingRule& rule, double t_s);

// hourly_price * billed_seconds / 3600.
double cost(const BillingRule& rule, double hourly_price, double t_s);

}  // namespace tsum::billing
