// The room billing/prices/ owns what an up-time costs: billing rules (per second with a minimum, per minute, per 10
// minutes, per hour), the rule book (rules.json, which rule a provider bills by) and the price catalogs (catalogs/).
// It calls only common/.
//
// Billing rules: how a provider rounds an instance's up-time into billed time. Pure functions, no I/O.
//
//   steps(t)  = ceil(t / step_s)                  (round "up", the usual case)
//             = floor(t / step_s)                 (round "down": Azure's FAQ bills full minutes only)
//             = started wall-clock steps          (clock_hour: Selectel bills every clock hour touched)
//   billed(t) = min(cap, max(min_s, steps(t) * step_s))   cap = cap_hours per month, when the rule has one
//   cost(t)   = hourly_price * billed(t) / 3600
//
// A month is kMonthS (730 h = 8760 h / 12); a run longer than that bills the cap for each whole month and the
// rule again for the rest. Rules are data (billing/prices/rules.json, see rule_book.h). A rule is asked for by name
// (a shipped or user rule, e.g. "per_hour", "aws_ec2_linux") or as a custom spec "step:S,min:M" (seconds, M
// optional and 0 by default).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::billing {

inline constexpr double kMonthS = 730.0 * 3600.0;

struct BillingRule {
  std::string name;    // the name it was asked for: a rule name or the custom spec itself
  double step_s = 1;   // > 0
  double min_s = 0;    // >= 0
  std::string note;    // who bills this way, and any caveat
  std::optional<double> cap_hours;  // billed time never exceeds this many hours per month (Hetzner)
  bool clock_hour = false;          // steps start on wall-clock multiples of step_s, not at the start
  bool round_down = false;          // bill whole steps only, dropping the partial one
  bool stopped_bills = false;       // a stopped (not deleted) instance keeps billing compute
  std::string provider;             // the provider whose default rule this is, "" for generic shapes
  std::string source;               // where the rule is documented
  std::string as_of;                // YYYY-MM-DD the source was read
};

// The four generic rules every experiment prices by default, in a stable order: per_second_60s_min,
// per_minute, per_10_minutes, per_hour (taken from the shipped rules).
const std::vector<BillingRule>& builtin_rules();

// A rule name from `extra` (user rules win), then the shipped rules, or "step:S,min:M".
// invalid_argument names what is wrong.
Result<BillingRule> parse_rule(std::string_view spec, std::span<const BillingRule> extra);
Result<BillingRule> parse_rule(std::string_view spec);

// Billed seconds for an up-time of t_s seconds (t_s < 0 is treated as 0). A t_s within 1 ns of a step
// boundary counts as on it, so float noise cannot push a measurement into the next step.
// start_offset_s matters only for clock_hour rules: how far past a wall-clock step boundary the instance
// started (taken modulo step_s); 0 means it started exactly on one. See start_offset_of().
double billed_seconds(const BillingRule& rule, double t_s, double start_offset_s = 0);

// The expectation of billed_seconds over a start offset uniform in [0, step_s): what a planner that does not
// know the start time should use. Equals billed_seconds for rules that are not clock_hour. For a clock-hour
// rule and t_s > 0 it is t_s + step_s (before min and cap): one more started hour on average.
double expected_billed_seconds(const BillingRule& rule, double t_s);

// The start offset of an instance that started at unix_start_s, for clock_hour rules. Providers align to
// their local clock hour; every time zone they use is a whole number of hours off UTC, so UTC works.
double start_offset_of(const BillingRule& rule, double unix_start_s);

// hourly_price * billed_seconds / 3600.
double cost(const BillingRule& rule, double hourly_price, double t_s, double start_offset_s = 0);

// hourly_price * expected_billed_seconds / 3600.
double expected_cost(const BillingRule& rule, double hourly_price, double t_s);

// `rule` with its cap set from an offer's monthly price: cap_hours = monthly / hourly. Hetzner's cap is the
// monthly price of each server type, so a catalog offer that lists it gives the exact cap. Rules without a
// cap, or prices <= 0, come back unchanged.
BillingRule with_monthly_cap(BillingRule rule, double hourly_price, double monthly_price);

// "1 h", "2 h 10 min", "61 s", "1.86 h", "13.8 min": a billed duration for a human.
std::string format_duration(double seconds);

}  // namespace tsum::billing
