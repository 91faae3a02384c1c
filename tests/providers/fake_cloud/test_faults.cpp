// The fault spec every fake's --faults takes, and the plan that hands faults out.
#include <doctest/doctest.h>

#include "tests/fakes/cloud/faults.h"

using namespace tsum;
using namespace tsum::providers::fake_cloud;

TEST_CASE("fault specs parse, and a bad one is named") {
  auto f = parse_faults("RunInstances:lost,DescribeInstances:429:2,*:503,instances.get:timeout,x:500");
  REQUIRE(f.ok());
  REQUIRE(f->size() == 5);
  CHECK((*f)[0].kind == FaultKind::lost);
  CHECK((*f)[1].method == "DescribeInstances");
  CHECK((*f)[1].count == 2);
  CHECK((*f)[2].method == "*");
  CHECK((*f)[2].kind == FaultKind::unavailable_503);
  CHECK((*f)[3].kind == FaultKind::timeout);
  CHECK((*f)[4].kind == FaultKind::internal_500);
  CHECK(parse_faults("").ok());
  auto bad = parse_faults("RunInstances:explode");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.code() == Code::invalid_argument);
  CHECK(bad.error().detail.find("RunInstances:explode") != std::string::npos);
  CHECK_FALSE(parse_faults("RunInstances:429:0").ok());
  CHECK_FALSE(parse_faults("RunInstances:429:x").ok());
  CHECK_FALSE(parse_faults(":429").ok());
  CHECK_FALSE(parse_faults("a:429:1:2").ok());
}

TEST_CASE("a plan hands out a method's own faults before '*' ones, each as many times as counted") {
  FaultPlan plan;
  plan.add({.method = "*", .kind = FaultKind::internal_500});
  plan.add({.method = "RunInstances", .kind = FaultKind::lost, .count = 2});
  CHECK(plan.pending() == 3);
  CHECK(plan.take("RunInstances") == FaultKind::lost);
  CHECK(plan.take("DescribeInstances") == FaultKind::internal_500);
  CHECK(plan.take("DescribeInstances") == std::nullopt);
  CHECK(plan.take("RunInstances") == FaultKind::lost);
  CHECK(plan.take("RunInstances") == std::nullopt);
  CHECK(plan.pending() == 0);
}
