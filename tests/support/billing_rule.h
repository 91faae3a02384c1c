// A billing rule by name, for tests: fails the test case when the name is not a rule (billing/prices/billing_rule.h).
#pragma once

#include <doctest/doctest.h>

#include "billing/prices/billing_rule.h"

namespace tsum::billing::testing {

inline BillingRule rule(const char* name) {
  auto r = parse_rule(name);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace tsum::billing::testing
