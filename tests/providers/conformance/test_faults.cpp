// Contract: throttling (429), 5xx and timeouts are retried; throttling that outlasts the retries is
// unavailable; a create whose answer was lost is retried into the same one instance, and one whose answers
// were all lost leaves an instance the tag sweep finds.
#include "providers/conformance/cloud_rig.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::conformance;
using namespace tsum::providers;
using namespace tsum::providers::fake_cloud;
using tsum::testing::run_sync;

CONFORMANCE("429 (with Retry-After), 503, 500 and timeouts are retried until the call goes through") {
  auto rig = Cloud::make();
  const Methods m = rig->methods();
  auto h = run_sync(rig->provider().create(rig->offer(), launch_spec("6")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  for (FaultKind k : {FaultKind::throttle_429, FaultKind::unavailable_503, FaultKind::internal_500})
    rig->server().inject({.method = m.describe, .kind = k});
  int before = rig->server().requests(m.describe);
  auto st = run_sync(rig->provider().describe(*h));
  REQUIRE_MESSAGE(st.ok(), st.error().detail);
  CHECK(rig->server().requests(m.describe) - before == 4);

  rig->server().inject({.method = m.terminate, .kind = FaultKind::timeout});
  rig->server().inject({.method = m.terminate, .kind = FaultKind::unavailable_503});
  before = rig->server().requests(m.terminate);
  auto gone = run_sync(rig->provider().terminate(*h));
  REQUIRE_MESSAGE(gone.ok(), gone.error().detail);
  CHECK(rig->server().requests(m.terminate) - before == 3);
  CHECK(rig->server().pending_faults() == 0);
}

CONFORMANCE("throttling that outlasts the retries is unavailable, naming the status") {
  auto rig = Cloud::make();
  const Methods m = rig->methods();
  auto h = run_sync(rig->provider().create(rig->offer(), launch_spec("6")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  rig->server().inject({.method = m.describe, .kind = FaultKind::unavailable_503, .count = 10});
  const int before = rig->server().requests(m.describe);
  auto st = run_sync(rig->provider().describe(*h));
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Code::unavailable);
  CHECK(st.error().detail.find("503") != std::string::npos);
  CHECK(rig->server().requests(m.describe) - before == 4);  // the retry policy's max_attempts
}

CONFORMANCE("a create whose answer was lost is retried into the one instance it made") {
  auto rig = Cloud::make();
  const Methods m = rig->methods();
  rig->server().inject({.method = m.create, .kind = FaultKind::lost});
  auto h = run_sync(rig->provider().create(rig->offer(), launch_spec("1")));
  REQUIRE_MESSAGE(h.ok(), h.error().detail);
  CHECK(rig->server().requests(m.create) >= 2);
  CHECK(rig->created() == 1);
  auto found = run_sync(rig->provider().list_tagged("tsum-test"));
  REQUIRE_MESSAGE(found.ok(), found.error().detail);
  REQUIRE(found->size() == 1);
  CHECK((*found)[0].id == h->id);
}

CONFORMANCE("leak guard: a create whose answers are all lost leaves one instance; the tag sweep finds and ends it") {
  auto rig = Cloud::make();
  rig->server().inject({.method = rig->methods().create, .kind = FaultKind::lost, .count = 4});
  auto h = run_sync(rig->provider().create(rig->offer(), launch_spec("5")));
  REQUIRE_FALSE(h.ok());
  CHECK(h.code() == Code::unavailable);
  CHECK(rig->created() == 1);  // four tries, one instance
  auto strays = run_sync(rig->provider().list_tagged("tsum-test"));
  REQUIRE_MESSAGE(strays.ok(), strays.error().detail);
  REQUIRE(strays->size() == 1);
  REQUIRE(run_sync(rig->provider().terminate((*strays)[0])).ok());
  rig->clock().advance(10);
  CHECK(run_sync(rig->provider().list_tagged("tsum-test"))->empty());
  CHECK(rig->existing() == 0);
}
