// Contract: offers are priced and filtered by Requirements, read through every page of the cloud's catalog,
// and cached.
#include <algorithm>
#include <cmath>
#include <set>

#include "providers/conformance/cloud_rig.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::conformance;
using namespace tsum::providers;
using tsum::testing::run_sync;

namespace {

std::set<std::string> types_of(const std::vector<Offer>& offers) {
  std::set<std::string> out;
  for (const auto& o : offers) out.insert(o.instance_type);
  return out;
}

}  // namespace

CONFORMANCE("offers: each priced and named, cheapest first, the same through pages of any size") {
  auto rig = Cloud::make();
  auto all = run_sync(rig->provider().offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  REQUIRE(all->size() >= 2);
  for (const auto& o : *all) {
    CAPTURE(o.instance_type);
    CHECK(o.provider == rig->name());
    CHECK_FALSE(o.instance_type.empty());
    CHECK(std::isfinite(o.hourly_price));
    CHECK(o.hourly_price > 0);
    CHECK(o.vcpus > 0);
    CHECK(o.memory_gib > 0);
    CHECK_FALSE(o.currency.empty());
    CHECK_FALSE(o.region.empty());
  }
  CHECK(std::is_sorted(all->begin(), all->end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; }));
  CHECK(types_of(*all).contains(rig->offer().instance_type));

  auto paged = Cloud::make({.page_size = 2});
  auto again = run_sync(paged->provider().offers({}));
  REQUIRE_MESSAGE(again.ok(), again.error().detail);
  CHECK(types_of(*again) == types_of(*all));
  int listed = 0;
  for (const auto& m : paged->methods().catalog) listed += paged->server().requests(m);
  CHECK(listed > static_cast<int>(rig->methods().catalog.size()));  // more than one page somewhere
}

CONFORMANCE("offers: filtered by Requirements exactly as satisfies() says; cached after the first call") {
  auto rig = Cloud::make();
  auto all = run_sync(rig->provider().offers({}));
  REQUIRE_MESSAGE(all.ok(), all.error().detail);
  int listed = 0;
  for (const auto& m : rig->methods().catalog) listed += rig->server().requests(m);
  CHECK(listed > 0);
  const Requirements reqs[] = {{.min_vcpus = 4}, {.min_vcpus = 1000}, {.gpus = 1}, {.instance_type = all->back().instance_type},
                               {.instance_type = "no-such-type"}, {.instance_type = all->front().instance_type, .min_vcpus = 1000}};
  for (const auto& req : reqs) {
    CAPTURE(req.instance_type);
    CAPTURE(req.min_vcpus);
    CAPTURE(req.gpus);
    auto got = run_sync(rig->provider().offers(req));
    REQUIRE_MESSAGE(got.ok(), got.error().detail);
    std::vector<Offer> want;
    std::copy_if(all->begin(), all->end(), std::back_inserter(want), [&](const Offer& o) { return satisfies(o, req); });
    CHECK(types_of(*got) == types_of(want));
    for (const auto& o : *got) CHECK(satisfies(o, req));
  }
  int again = 0;
  for (const auto& m : rig->methods().catalog) again += rig->server().requests(m);
  CHECK(again == listed);  // every filter was answered from the cached catalog
  rig->clock().advance(3601);
  REQUIRE(run_sync(rig->provider().offers({})).ok());
  int refreshed = 0;
  for (const auto& m : rig->methods().catalog) refreshed += rig->server().requests(m);
  CHECK(refreshed > listed);  // an hour later the catalog is read again
}
