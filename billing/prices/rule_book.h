// Billing rules as data: billing/prices/rules.json (compiled in) and user rule files in the same format, so a user
// can add or override a rule without recompiling.
//
// Format:
//   {"rules": [{"name": "aws_ec2_linux", "provider": "aws", "step_s": 1, "min_s": 60,
//               "cap_hours": null, "clock_hour": false, "round": "up", "stopped_bills": false,
//               "source": "https://...", "as_of": "YYYY-MM-DD", "note": "..."}]}
//
// Required: name ([a-z0-9_]+, not starting with "step"), step_s (> 0), source, as_of (YYYY-MM-DD).
// Optional: provider (""), min_s (0, >= 0), cap_hours (none, > 0: hours per month), clock_hour (false),
// round ("up" or "down"), stopped_bills (false), note (""). Any other field is an error, so a typo such as
// "min" for "min_s" is caught instead of silently ignored. Names must be unique within a file.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "billing/prices/billing_rule.h"
#include "common/embedded.h"
#include "common/result.h"

namespace tsum::billing {

// Parses a rules document. invalid_argument names the entry (index and name) and the field at fault.
Result<std::vector<BillingRule>> parse_rules(std::string_view json_text);

// The rules document for `rules` (parse_rules(rules_to_json(r)) gives r back).
std::string rules_to_json(std::span<const BillingRule> rules);

// The shipped rules, in file order. Empty only if the compiled-in rules.json is broken, which
// shipped_rules_status() then explains (a test keeps it from happening).
const std::vector<BillingRule>& shipped_rules();
Status shipped_rules_status();

// Reads and parses a user's rules file. not_found when it cannot be read; invalid_argument (prefixed with
// the path) when it is malformed.
Result<std::vector<BillingRule>> load_rules_file(const std::string& path);

// The default rule of a provider: the first rule in `extra`, then in the shipped rules, whose provider field
// matches. nullopt when neither has one.
std::optional<BillingRule> rule_for_provider(std::string_view provider, std::span<const BillingRule> extra = {});

// billing/prices/rules.json, compiled in (target tsum_billing_rules).
std::span<const EmbeddedFile> embedded_rules();

}  // namespace tsum::billing
