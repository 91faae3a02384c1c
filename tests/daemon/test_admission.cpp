#include <doctest/doctest.h>

#include "daemon/runs/admission.h"

using namespace tsum::daemon;

namespace {
QueueEntry run(int64_t id, int64_t exp, const char* type, const char* provider = "local") {
  return {id, exp, provider, type};
}
}  // namespace

TEST_CASE("local runs never share a core: a run waits until its cores are free") {
  QueueLimits l{.global = 10, .local_cores = 2};
  CHECK(admit({run(1, 1, "local-1c"), run(2, 1, "local-2c"), run(3, 1, "local-1c")}, {}, l) ==
        std::vector<int64_t>{1, 3});  // 2 needs both cores; 3 fits beside 1
  CHECK(admit({run(2, 1, "local-2c")}, {run(1, 1, "local-1c")}, l).empty());
  CHECK(admit({run(2, 1, "local-2c")}, {}, l) == std::vector<int64_t>{2});
  CHECK(local_cores_of("local", "local-12c") == 12);
  CHECK(local_cores_of("local", "local-c") == 0);
  CHECK(local_cores_of("aws", "local-2c") == 0);
}

TEST_CASE("caps: global, per provider and per instance type") {
  std::vector<QueueEntry> q = {run(1, 1, "c6i.large", "aws"), run(2, 1, "c6i.large", "aws"),
                               run(3, 1, "g5.xlarge", "aws"), run(4, 1, "cx22", "hetzner")};
  CHECK(admit(q, {}, {.global = 2}) == std::vector<int64_t>{1, 2});
  CHECK(admit(q, {}, {.global = 10, .per_provider = {{"aws", 2}}}) == std::vector<int64_t>{1, 2, 4});
  CHECK(admit(q, {}, {.global = 10, .per_type = {{"c6i.large", 1}}}) == std::vector<int64_t>{1, 3, 4});
  CHECK(admit(q, {run(9, 2, "c6i.large", "aws")}, {.global = 10, .per_type = {{"c6i.large", 1}}}) ==
        std::vector<int64_t>{3, 4});
}

TEST_CASE("fairness: experiments take turns instead of the first one draining the queue") {
  std::vector<QueueEntry> q = {run(1, 1, "x", "aws"), run(2, 1, "x", "aws"), run(3, 1, "x", "aws"),
                               run(4, 2, "x", "aws"), run(5, 2, "x", "aws"), run(6, 3, "x", "aws")};
  CHECK(admit(q, {}, {.global = 4}) == std::vector<int64_t>{1, 4, 6, 2});
  // Experiment 1 already has two live runs: the others go first.
  CHECK(admit(q, {run(7, 1, "x", "aws"), run(8, 1, "x", "aws")}, {.global = 5}) == std::vector<int64_t>{4, 6, 5});
}

TEST_CASE("caps parse from flags") {
  std::map<std::string, int> caps;
  CHECK(parse_caps("local=1,aws=4", &caps));
  CHECK(caps == std::map<std::string, int>{{"aws", 4}, {"local", 1}});
  std::map<std::string, int> bad;
  CHECK_FALSE(parse_caps("aws", &bad));
  CHECK_FALSE(parse_caps("aws=0", &bad));
  CHECK_FALSE(parse_caps("=3", &bad));
  CHECK_FALSE(parse_caps("aws=3x", &bad));
}

TEST_CASE("an ssh host runs one run at a time; other hosts and providers are not held up") {
  QueueLimits l{.global = 10};
  std::vector<QueueEntry> q = {run(1, 1, "h1", "ssh"), run(2, 1, "h1", "ssh"), run(3, 1, "h2", "ssh"),
                               run(4, 1, "h1", "aws")};
  CHECK(admit(q, {}, l) == std::vector<int64_t>{1, 3, 4});
  CHECK(admit({run(2, 1, "h1", "ssh")}, {run(1, 1, "h1", "ssh")}, l).empty());
  CHECK(admit({run(2, 1, "h1", "ssh")}, {run(1, 1, "h2", "ssh")}, l) == std::vector<int64_t>{2});
}

TEST_CASE("default limits: clouds side by side, 8 machines each, a flag's cap wins; local by cores, ssh by host") {
  QueueLimits l{.per_provider = {{"gce", 2}}, .local_cores = 2};
  default_caps(l, {"aws", "gce", "local", "ssh", "trace", "kubernetes"});
  CHECK(l.global == kDefaultGlobalCap);
  CHECK(l.per_provider == std::map<std::string, int>{{"aws", kDefaultProviderCap}, {"gce", 2}, {"kubernetes", kDefaultProviderCap}});
  // 2 configs x 2 repetitions on one cloud: all four machines start at once; the ninth of one provider waits.
  std::vector<QueueEntry> q;
  for (int64_t i = 1; i <= 9; ++i) q.push_back(run(i, 1 + i % 2, i % 2 ? "c6i.large" : "m6i.large", "aws"));
  CHECK(admit({q.begin(), q.begin() + 4}, {}, l).size() == 4);
  CHECK(admit(q, {}, l).size() == 8);
  CHECK(describe_limits(l, {"aws", "gce", "local", "ssh", "trace"}) ==
        "runs at once: 64 in all; aws 8 machines; gce 2 machines; local by its 2 cores; ssh one run a host; trace uncapped");
}
