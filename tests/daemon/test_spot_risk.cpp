// What the planner reads of spot runs from their views (daemon/planning/spot_risk.h): restarts of resumed attempts, a run
// of several machines as one machine's phases, and the interruption model of a candidate.
#include <cmath>
#include <doctest/doctest.h>

#include "daemon/planning/spot_risk.h"

using namespace tsum::daemon;
using nlohmann::json;

namespace {

json phases(double startup, double learn) {
  return {{"startup", startup}, {"install", 10}, {"load_data", 2}, {"start", 1}, {"learn", learn},
          {"verify", 3}, {"save", 1}, {"poweroff", 4}};
}

// Three machines: interrupted after 50 s of learning with 45 kept, abandoned after 20 with 20 kept, then done.
json three_machines() {
  json a1 = {{"attempt", 1}, {"started_at", 100.0}, {"ended_at", 200.0}, {"phases", phases(5, 0)},
             {"learned_s", 50.0}, {"lost_s", 5.0}};
  a1["phases"]["learn"] = nullptr;
  json a2 = {{"attempt", 2}, {"started_at", 210.0}, {"ended_at", 300.0}, {"phases", phases(6, 0)},
             {"learned_s", 20.0}, {"lost_s", 0.0}};
  a2["phases"]["learn"] = nullptr;
  json a3 = {{"attempt", 3}, {"started_at", 305.0}, {"ended_at", nullptr}, {"phases", phases(7, 30)},
             {"learned_s", nullptr}, {"lost_s", nullptr}};
  return {{"attempt", 3}, {"attempts", {a1, a2, a3}}, {"phases", a3["phases"]}};
}

}  // namespace

TEST_CASE("restarts_of: each resumed attempt's wait for its machine plus its startup to learning") {
  auto r = restarts_of(three_machines());
  REQUIRE(r.size() == 2);
  CHECK(r[0] == doctest::Approx(10 + 6 + 10 + 2 + 1));  // 210 - 200, then its phases up to learning
  CHECK(r[1] == doctest::Approx(5 + 7 + 10 + 2 + 1));
  CHECK(restarts_of(json{{"phases", phases(5, 30)}}).empty());  // one machine: nothing resumed
  json unknown = three_machines();
  unknown["attempts"][1]["phases"]["install"] = nullptr;  // a phase not measured: that restart is not known
  CHECK(restarts_of(unknown).size() == 1);
}

TEST_CASE("one_machine_phases: the first machine's setup, the learning every machine kept, the last one's end") {
  auto p = one_machine_phases(three_machines());
  CHECK(p["startup"] == 5);
  CHECK(p["learn"].get<double>() == doctest::Approx(30 + 45 + 20));
  CHECK(p["poweroff"] == 4);
  const json one = {{"phases", phases(5, 30)}};
  CHECK(one_machine_phases(one) == one["phases"]);
  json unknown = three_machines();
  unknown["attempts"][0]["lost_s"] = nullptr;
  CHECK(one_machine_phases(unknown)["learn"].is_null());
  // A job's unmarked phases took no time of their own: 0 for the predictor, not unknown.
  json unmarked = one;
  unmarked["phases"]["start"] = nullptr;
  unmarked["unmarked"] = json::array({"start"});
  CHECK(one_machine_phases(unmarked)["start"] == 0.0);
  unmarked["unmarked"] = json::array();
  CHECK(one_machine_phases(unmarked)["start"].is_null());
}

TEST_CASE("unfinished_phases: what a stopped run was billed, its machine's up time beyond the phases measured in "
          "the phase it was stopped in") {
  // As GET /v1/runs shows a trace run stopped at its 10 s deadline while learning: up 12 s, 5 s of phases measured.
  const json stopped = {{"phases", {{"startup", 1.0}, {"install", 1.0}, {"load_data", 1.0}, {"start", 1.0},
                                    {"learn", nullptr}, {"verify", nullptr}, {"save", nullptr}, {"poweroff", 1.0}}},
                        {"attempts", json::array({{{"attempt", 1}, {"up_s", 12.0}}})}};
  auto p = unfinished_phases(stopped);
  REQUIRE(p.has_value());
  CHECK((*p)[4] == doctest::Approx(7));  // learn: what it learned, a lower bound on the config's learn time
  CHECK((*p)[5] == 0);
  CHECK((*p)[6] == 0);
  CHECK((*p)[7] == 1);
  double t_sum = 0;
  for (double s : *p) t_sum += s;
  CHECK(t_sum == doctest::Approx(12));  // what the machine was billed for
  // Stopped while installing: the rest of its up time is install's, and learn is unknown (0).
  json installing = stopped;
  installing["phases"]["install"] = nullptr;
  installing["phases"]["load_data"] = nullptr;
  installing["phases"]["start"] = nullptr;
  auto q = unfinished_phases(installing);
  REQUIRE(q.has_value());
  CHECK((*q)[1] == doctest::Approx(10));
  CHECK((*q)[4] == 0);
  // No up time known (a machine that never reported its poweroff): the phases measured, nothing added.
  json no_up = stopped;
  no_up["attempts"][0]["up_s"] = nullptr;
  auto r = unfinished_phases(no_up);
  REQUIRE(r.has_value());
  CHECK((*r)[4] == 0);
  // Stopped at its deadline on its machine's own clock (a trace replayed 1000x faster: the daemon saw 0.5 s pass):
  // up the deadline's 3,600 s before its poweroff, whatever the daemon's clock says; a longer up time stands.
  json replayed = stopped;
  replayed["attempts"][0]["up_s"] = 0.5;
  auto at = unfinished_phases(replayed, 3600.0);
  REQUIRE(at.has_value());
  CHECK((*at)[4] == doctest::Approx(3600 - 4));  // learn: from the end of start to the deadline
  CHECK(unfinished_phases(stopped, 3.0).value()[4] == doctest::Approx(7));
  CHECK(unfinished_phases(replayed, std::nan("")).value()[4] == 0);  // no number: the daemon's up time alone
  // Nothing measured: nothing to bill from.
  json nothing = {{"phases", json::object()}};
  CHECK_FALSE(unfinished_phases(nothing).has_value());
  CHECK_FALSE(unfinished_phases(json::array()).has_value());
}

TEST_CASE("spot_model: the type's measured rate over the prior, the run's recovery policy, AWS's free hour, the "
          "mean restart") {
  RunConfig::SpotRecovery recovery{.max_interruptions = 3, .on_demand_after = 2, .checkpoint_every_s = 60};
  auto m = spot_model({.attempts = 4, .interruptions = 2, .machine_hours = 1.0}, recovery, "aws", 0.1, 0.05, {10, 20});
  CHECK(m.rate_per_hour == doctest::Approx((0.05 + 2) / 2));
  CHECK(m.rate_basis.find("measured: 2 interruptions in 1 spot machine-hours") == 0);
  CHECK(m.rate_basis.find("(4 spot attempts)") != std::string::npos);
  CHECK(m.checkpoint_every_s == 60);
  CHECK(m.max_interruptions == 3);
  CHECK(m.on_demand_after == 2);
  CHECK(m.on_demand_price == 0.1);
  CHECK(m.free_first_hour);
  REQUIRE(m.restart_s.has_value());
  CHECK(*m.restart_s == doctest::Approx(15));
  auto prior = spot_model({}, {}, "gce", 0.2, 0.05, {});
  CHECK(prior.rate_per_hour == doctest::Approx(0.05));
  CHECK(prior.rate_basis.find("prior") == 0);
  CHECK_FALSE(prior.free_first_hour);
  CHECK_FALSE(prior.restart_s.has_value());
  CHECK(prior.restart_basis.find("no resumed attempt") == 0);
}

TEST_CASE("a run's measured config names its machine and the workload fields its experiment varied") {
  using nlohmann::json;
  CHECK(tsum::daemon::measured_config(json{{"config", {{"provider", "local"}, {"instance_type", "local-1c"}}}}) ==
        "local/local-1c");
  const json served = {{"config", {{"provider", "aws"}, {"instance_type", "c5.large"},
                                   {"workload", {{"max_delay_ms", 2.5}, {"max_batch", 4}, {"input", "jpeg"}}}}}};
  CHECK(tsum::daemon::measured_config(served) == "aws/c5.large input=jpeg max_batch=4 max_delay_ms=2.5");
  CHECK(tsum::daemon::measured_config(json::object()) == "/");
}

// Where a recovery goes (daemon/runs/recovery.h).
#include "daemon/runs/recovery.h"

namespace {
tsum::providers::Offer offer(const std::string& provider, const std::string& region, const std::string& type,
                             int vcpus, double memory, double price) {
  tsum::providers::Offer o;
  o.provider = provider, o.region = region, o.instance_type = type, o.vcpus = vcpus, o.memory_gib = memory;
  o.hourly_price = price;
  return o;
}
}  // namespace

TEST_CASE("rank_offers: by expected cost per hour of learning, where a risky region can lose to a dearer calm one") {
  const RecoveryTerms terms{.checkpoint_every_s = 3600, .restart_s = 600, .checkpoint_bytes = 0};
  std::vector<RecoveryOffer> offers = {
      {offer("aws", "us-east-1", "c5.large", 2, 4, 0.085), "spot", 0.030, 4.0, "measured"},   // cheap, often taken back
      {offer("aws", "us-west-2", "c5.large", 2, 4, 0.085), "spot", 0.034, 0.05, "prior"},
      {offer("gce", "us-central1-a", "e2-standard-2", 2, 8, 0.067), "on-demand", 0.067, 0, ""}};
  auto ranked = rank_offers(offers, terms);
  REQUIRE(ranked.size() == 3);
  // us-east-1: 0.030 × (1 + 4 × (0.5 + 1/6)) + 0.030 × 1/6 = 0.115; us-west-2: 0.034 × (1 + 0.05 × 0.667) + 0.0057.
  CHECK(ranked[0].o.offer.region == "us-west-2");
  CHECK(ranked[0].expected == doctest::Approx(0.034 * (1 + 0.05 * (0.5 + 1.0 / 6)) + 0.034 / 6));
  CHECK(ranked[1].o.offer.provider == "gce");
  CHECK(ranked[2].o.offer.region == "us-east-1");
  CHECK(ranked[0].why.find("0.034") != std::string::npos);
  // Moving a 1 GB checkpoint costs where the machine is dearer: 1e9 / 12.5e6 = 80 s of its price.
  auto moved = rank_offers({offers[1]}, {.checkpoint_every_s = 3600, .restart_s = 600, .checkpoint_bytes = 1e9});
  CHECK(moved[0].expected == doctest::Approx(ranked[0].expected + 0.034 * 80 / 3600));
}

TEST_CASE("fits and no_capacity: another cloud's machine must hold the run's; each cloud's capacity error is known") {
  const nlohmann::json machine = {{"vcpus", 2}, {"memory_gib", 4.0}};
  CHECK(fits(machine, offer("gce", "r", "e2-standard-2", 2, 8, 0.067)));
  CHECK_FALSE(fits(machine, offer("gce", "r", "e2-micro", 2, 1, 0.008)));   // less memory
  CHECK_FALSE(fits(machine, offer("gce", "r", "e2-small", 1, 4, 0.017)));   // fewer vCPUs
  CHECK_FALSE(fits(nlohmann::json::object(), offer("gce", "r", "e2-standard-2", 2, 8, 0.067)));  // nothing known
  auto gpu = offer("gce", "r", "g2-standard-4", 4, 16, 0.7);
  gpu.gpus = 1, gpu.gpu_type = "nvidia-l4";
  CHECK_FALSE(fits({{"vcpus", 4}, {"gpus", 1}, {"gpu_type", "NVIDIA T4"}}, gpu));  // another GPU
  CHECK(fits({{"vcpus", 4}, {"gpus", 1}, {"gpu_type", "nvidia-l4"}}, gpu));
  for (const char* detail : {"EC2 RunInstances (HTTP 500): InsufficientInstanceCapacity: We currently do not have",
                             "GCE instances.insert: operation error ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS: ...",
                             "Azure virtualMachines.createOrUpdate (HTTP 409): SkuNotAvailable: The requested size",
                             "Hetzner servers.create (HTTP 412): resource_unavailable: the server type is not available"})
    CHECK(no_capacity({tsum::Code::unavailable, detail}));
  CHECK_FALSE(no_capacity({tsum::Code::unavailable, "EC2 RunInstances (HTTP 503): RequestLimitExceeded"}));
  CHECK_FALSE(no_capacity({tsum::Code::invalid_argument, "aws: no image_id (AMI) configured"}));
  CHECK(offer_key(offer("aws", "us-east-1", "t3.micro", 2, 1, 0.01), "spot") == "aws us-east-1 t3.micro spot");
}
