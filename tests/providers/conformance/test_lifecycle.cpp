// Contract: create is idempotent by token, describe follows pending -> running, terminate is idempotent and
// the instance is gone afterwards, list_tagged finds exactly the tag's instances through every page, and
// create refuses what it cannot launch.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "providers/conformance/cloud_rig.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::conformance;
using namespace tsum::providers;
using tsum::testing::run_sync;

namespace {

// Describes h, advancing the fake clock half a second at a time (40 steps at most), until it reads `want`.
Result<InstanceStatus> describe_until(CloudRig& rig, const InstanceHandle& h, InstanceState want) {
  auto st = run_sync(rig.provider().describe(h));
  for (int i = 0; i < 40 && st.ok() && st->state != want; ++i) {
    rig.clock().advance(0.5);
    st = run_sync(rig.provider().describe(h));
  }
  return st;
}

}  // namespace

CONFORMANCE("create launches one instance; describe follows pending -> running, with an address") {
  auto rig = Cloud::make();
  auto h = run_sync(rig->provider().create(rig->offer(), launch_spec("7")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(h->provider == rig->name());
  CHECK_FALSE(h->id.empty());
  CHECK(rig->created() == 1);
  auto round_trip = InstanceHandle::from_json(nlohmann::json::parse(h->to_json().dump()));  // as SQLite keeps it
  auto st = run_sync(rig->provider().describe(round_trip));
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(st->state == InstanceState::pending);
  st = describe_until(*rig, round_trip, InstanceState::running);
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(st->state == InstanceState::running);
  CHECK_FALSE(st->address.empty());
}

CONFORMANCE("create is idempotent by token: a second create gives the same instance, one in all") {
  auto rig = Cloud::make();
  auto first = run_sync(rig->provider().create(rig->offer(), launch_spec("2")));
  REQUIRE_MESSAGE(first.ok(), first.error().detail);
  auto again = run_sync(rig->provider().create(rig->offer(), launch_spec("2")));
  REQUIRE_MESSAGE(again.ok(), again.error().detail);
  CHECK(again->id == first->id);
  auto other = run_sync(rig->provider().create(rig->offer(), launch_spec("3")));
  REQUIRE_MESSAGE(other.ok(), other.error().detail);
  CHECK(other->id != first->id);
  CHECK(rig->created() == 2);
}

CONFORMANCE("terminate is idempotent; the instance is gone afterwards, and terminating it then still succeeds") {
  auto rig = Cloud::make();
  auto h = run_sync(rig->provider().create(rig->offer(), launch_spec("3")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  REQUIRE(describe_until(*rig, *h, InstanceState::running)->state == InstanceState::running);
  auto first = run_sync(rig->provider().terminate(*h));
  REQUIRE_MESSAGE(first.ok(), first.error().detail);
  CHECK(run_sync(rig->provider().terminate(*h)).ok());
  auto st = run_sync(rig->provider().describe(*h));
  REQUIRE(st.ok());
  CHECK(st->state != InstanceState::running);
  CHECK(st->state != InstanceState::pending);
  st = describe_until(*rig, *h, InstanceState::gone);
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(st->state == InstanceState::gone);
  rig->clock().advance(300);
  CHECK(rig->existing() == 0);
  CHECK(run_sync(rig->provider().describe(*h))->state == InstanceState::gone);  // the cloud no longer knows it
  auto again = run_sync(rig->provider().terminate(*h));  // "already gone" is success
  CHECK_MESSAGE(again.ok(), again.error().detail);
}

CONFORMANCE("list_tagged finds exactly the tag's instances, through every page, and drops terminated ones") {
  auto rig = Cloud::make({.page_size = 2});
  std::set<std::string> mine;
  for (int i = 0; i < 5; ++i) {
    auto h = run_sync(rig->provider().create(rig->offer(), launch_spec(std::to_string(10 + i))));
    REQUIRE_MESSAGE(h.ok(), h.error().detail);
    mine.insert(h->id);
  }
  REQUIRE(run_sync(rig->provider().create(rig->offer(), launch_spec("20", "someone-else"))).ok());
  const int before = rig->server().requests(rig->methods().list);
  auto found = run_sync(rig->provider().list_tagged("tsum-test"));
  REQUIRE_MESSAGE(found.ok(), found.error().detail);
  std::set<std::string> ids;
  for (const auto& h : *found) {
    CHECK(h.provider == rig->name());
    ids.insert(h.id);
  }
  CHECK(ids == mine);
  CHECK(found->size() == 5);
  CHECK(rig->server().requests(rig->methods().list) - before >= 3);  // pages of two
  CHECK(run_sync(rig->provider().list_tagged("nobody"))->empty());

  REQUIRE(run_sync(rig->provider().terminate(found->front())).ok());
  rig->clock().advance(10);
  auto left = run_sync(rig->provider().list_tagged("tsum-test"));
  REQUIRE_MESSAGE(left.ok(), left.error().detail);
  CHECK(left->size() == 4);
  for (const auto& h : *left) CHECK(h.id != found->front().id);
}

CONFORMANCE("create refuses what it cannot launch, naming why, and launches nothing") {
  auto rig = Cloud::make();
  auto no_token = launch_spec("1");
  no_token.idempotency_token.clear();
  CHECK(run_sync(rig->provider().create(rig->offer(), no_token)).code() == Code::invalid_argument);
  auto bad_env = launch_spec("1");
  bad_env.env["NOT-A-NAME"] = "x";
  auto refused = run_sync(rig->provider().create(rig->offer(), bad_env));
  CHECK(refused.code() == Code::invalid_argument);
  CHECK(refused.error().detail.find("NOT-A-NAME") != std::string::npos);
  Offer unknown = rig->offer();
  unknown.instance_type = "no-such-type-x9";
  CHECK(run_sync(rig->provider().create(unknown, launch_spec("1"))).code() == Code::invalid_argument);
  CHECK(rig->created() == 0);
}

CONFORMANCE("describe_many answers every handle, in order, as describe would (a gone one too), and none for none") {
  auto rig = Cloud::make({.page_size = 2});
  std::vector<InstanceHandle> hs;
  for (int i = 0; i < 3; ++i) {
    auto h = run_sync(rig->provider().create(rig->offer(), launch_spec(std::to_string(50 + i))));
    REQUIRE_MESSAGE(h.ok(), h.error().detail);
    hs.push_back(*h);
  }
  auto other = run_sync(rig->provider().create(rig->offer(), launch_spec("60", "another-daemon")));
  REQUIRE_MESSAGE(other.ok(), other.error().detail);
  REQUIRE(describe_until(*rig, hs[0], InstanceState::running).ok());
  REQUIRE(run_sync(rig->provider().terminate(hs[1])).ok());
  REQUIRE(describe_until(*rig, hs[1], InstanceState::gone).ok());
  const std::vector<InstanceHandle> asked = {hs[2], hs[1], *other, hs[0]};
  auto all = run_sync(rig->provider().describe_many(asked));
  REQUIRE(all.size() == asked.size());
  for (size_t i = 0; i < asked.size(); ++i) {
    CAPTURE(i);
    auto one = run_sync(rig->provider().describe(asked[i]));
    REQUIRE_MESSAGE(all[i].ok(), all[i].error().detail);
    REQUIRE(one.ok());
    CHECK(all[i]->state == one->state);
    CHECK(all[i]->address == one->address);
  }
  CHECK(all[1]->state == InstanceState::gone);
  CHECK(all[3]->state == InstanceState::running);
  CHECK(run_sync(rig->provider().describe_many({})).empty());
}

CONFORMANCE("market spot: each cloud that sells spare capacity launches it as its API asks; the others say they have none") {
  auto rig = Cloud::make();
  const std::map<std::string, std::string> wanted = {
      {"aws", "spot"}, {"gce", "SPOT/DELETE"}, {"azure", "Spot/Delete/-1"}, {"yandex", "preemptible"}};
  CHECK(rig->provider().capabilities().spot == wanted.contains(rig->name()));
  auto on_demand = run_sync(rig->provider().create(rig->offer(), launch_spec("7")));
  REQUIRE_MESSAGE(on_demand.ok(), on_demand.error().detail);
  CHECK(rig->market(*on_demand) == "on-demand");
  if (!rig->provider().capabilities().spot) return;  // the daemon refuses spot there (tests/api)
  LaunchSpec spot = launch_spec("8");
  spot.market = "spot";
  auto h = run_sync(rig->provider().create(rig->offer(), spot));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(rig->market(*h) == wanted.at(rig->name()));
  CHECK(rig->created() == 2);
  auto again = run_sync(rig->provider().create(rig->offer(), spot));  // idempotent as on-demand is
  REQUIRE_MESSAGE(again.ok(), again.error().detail);
  CHECK(again->id == h->id);
  CHECK(rig->created() == 2);
}
