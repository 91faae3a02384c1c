// Contract: a credential the cloud refuses is a clear error, not retried; no secret (credential, key, token)
// ever shows in an error text, even where the cloud quotes it back; bearer tokens are renewed before they
// expire and after a revocation.
#include "providers/conformance/cloud_rig.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::conformance;
using namespace tsum::providers;
using tsum::testing::run_sync;

namespace {

void check_no_secret(CloudRig& rig, const std::string& text) {
  for (const auto& s : rig.secrets()) CHECK_MESSAGE(text.find(s) == std::string::npos, "'" << s << "' in: " << text);
  for (const auto& t : rig.server().book().tokens()) CHECK_MESSAGE(text.find(t) == std::string::npos, "a token in: " << text);
}

}  // namespace

CONFORMANCE("a refused credential is invalid_argument naming the call and the cloud's reason, not retried, no secret in it") {
  auto rig = Cloud::make();
  auto bad = rig->with_wrong_credential();
  auto r = run_sync(bad->list_tagged("tsum-test"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == Code::invalid_argument);
  const std::string& text = r.error().detail;
  CHECK(text.find("(HTTP 4") != std::string::npos);  // the call, its status...
  CHECK(text.find(rig->refusal_code()) != std::string::npos);  // ...and the cloud's own reason
  CHECK(rig->server().rejected() == 1);  // refused once: not retried
  CHECK(rig->server().requests(rig->methods().list) == 0);
  check_no_secret(*rig, text);
  if (rig->fake_quotes_credentials()) CHECK(text.find("[redacted]") != std::string::npos);

  auto created = run_sync(bad->create(rig->offer(), launch_spec("1")));
  REQUIRE_FALSE(created.ok());
  CHECK(created.code() == Code::invalid_argument);
  check_no_secret(*rig, created.error().detail);
  CHECK(rig->created() == 0);
}

CONFORMANCE_TOKENS("bearer tokens: one per lifetime, renewed before expiry and after a revocation (one 401)") {
  auto rig = Cloud::make();
  REQUIRE(run_sync(rig->provider().list_tagged("tsum-test")).ok());
  REQUIRE(run_sync(rig->provider().list_tagged("tsum-test")).ok());
  CHECK(rig->server().tokens_issued() == 1);
  rig->server().revoke_tokens();
  auto after = run_sync(rig->provider().list_tagged("tsum-test"));  // 401, a new token, the call again
  REQUIRE_MESSAGE(after.ok(), after.error().detail);
  CHECK(rig->server().tokens_issued() == 2);
  CHECK(rig->server().rejected() == 1);
  rig->clock().advance(rig->token_lifetime_s() - 200);  // within 5 minutes of expiry
  REQUIRE(run_sync(rig->provider().list_tagged("tsum-test")).ok());
  CHECK(rig->server().tokens_issued() == 3);
  CHECK(rig->server().rejected() == 1);  // renewed before use, not after a refusal
}

CONFORMANCE_TOKENS("a bearer token the cloud refuses and quotes back never shows in the error") {
  auto rig = Cloud::make();
  REQUIRE(run_sync(rig->provider().list_tagged("tsum-test")).ok());
  rig->server().revoke_tokens(/*refuse_new=*/true);
  auto r = run_sync(rig->provider().list_tagged("tsum-test"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().detail.find("401") != std::string::npos);
  CHECK(r.error().detail.find("[redacted]") != std::string::npos);
  CHECK(rig->server().book().tokens().size() >= 2);
  check_no_secret(*rig, r.error().detail);
}
