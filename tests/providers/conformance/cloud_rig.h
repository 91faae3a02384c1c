// The provider contract's conformance suite: one rig per cloud, an adapter wired to its fake over HTTPS on
// loopback (a CA made at test time, a FakeClock shared by both, fast retries), and the same contract checks
// run against every rig (TEST_CASE_TEMPLATE over the tags below). A rig knows only what is truly the
// cloud's: how to build its fake and adapter, its method names, a credential the fake refuses, and how to
// read back what the fake made. A sixth cloud adds a rig_<cloud>.cpp and a tag.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "tests/fakes/cloud/fake_server.h"
#include "tests/fakes/guest/fake_guest.h"
#include "providers/provider.h"
#include "support/provider_fixtures.h"
#include "support/test_tls.h"

namespace tsum::conformance {

struct RigOptions {
  int page_size = 0;            // > 0: every listing of the fake pages by this many items
  providers::fake_guest::FakeGuestOptions guest = {};  // root set: the fake boots instances' user data
};

// The fake's names of the calls behind each provider operation (fake_cloud/faults.h, the call book).
struct Methods {
  std::string create, describe, terminate, list;
  std::vector<std::string> catalog;  // what offers() lists
};

class CloudRig {
 public:
  virtual ~CloudRig() = default;

  virtual std::string name() const = 0;
  virtual providers::Provider& provider() = 0;
  virtual providers::fake_cloud::FakeServer& server() = 0;
  virtual Methods methods() const = 0;
  // A small CPU offer of this cloud that its adapter can launch.
  virtual providers::Offer offer() const = 0;

  // A second adapter on the same fake whose credential the fake refuses, and the strings of that credential
  // (and of the good one) that must never show in an error text.
  virtual std::unique_ptr<providers::Provider> with_wrong_credential() = 0;
  virtual std::vector<std::string> secrets() const = 0;
  // The cloud's error code for that refusal, e.g. SignatureDoesNotMatch.
  virtual std::string refusal_code() const = 0;
  // Whether the fake quotes a refused credential back in its error (so the adapter must redact it).
  virtual bool fake_quotes_credentials() const { return true; }
  // For clouds whose adapter trades its credential for expiring bearer tokens: how long one lives; 0 for none.
  virtual double token_lifetime_s() const { return 0; }

  // Instances the fake ever made, and those it still has (any state but gone).
  virtual int created() const = 0;
  virtual int existing() const = 0;
  // The user data the fake holds for the instance behind h, decoded.
  virtual std::string user_data(const providers::InstanceHandle& h) const = 0;
  // How the fake holds the instance behind h, in its cloud's words: "spot" (EC2 instanceLifecycle), "SPOT" (GCE
  // provisioningModel), "Spot/Delete/-1" (Azure priority, evictionPolicy, maxPrice), "preemptible" (Yandex); else
  // "on-demand". "" for an unknown instance.
  virtual std::string market(const providers::InstanceHandle& h) const = 0;

  FakeClock& clock() { return clock_; }

 protected:
  testing::TestTls tls_;
  FakeClock clock_{1.8e9};
};

std::unique_ptr<CloudRig> make_aws_rig(const RigOptions& o);
std::unique_ptr<CloudRig> make_gce_rig(const RigOptions& o);
std::unique_ptr<CloudRig> make_azure_rig(const RigOptions& o);
std::unique_ptr<CloudRig> make_hetzner_rig(const RigOptions& o);
std::unique_ptr<CloudRig> make_yandex_rig(const RigOptions& o);

// The tags the suite is parameterised over.
struct Aws {
  static std::unique_ptr<CloudRig> make(const RigOptions& o = {}) { return make_aws_rig(o); }
};
struct Gce {
  static std::unique_ptr<CloudRig> make(const RigOptions& o = {}) { return make_gce_rig(o); }
};
struct Azure {
  static std::unique_ptr<CloudRig> make(const RigOptions& o = {}) { return make_azure_rig(o); }
};
struct Hetzner {
  static std::unique_ptr<CloudRig> make(const RigOptions& o = {}) { return make_hetzner_rig(o); }
};
struct Yandex {
  static std::unique_ptr<CloudRig> make(const RigOptions& o = {}) { return make_yandex_rig(o); }
};

using testing::launch_spec;

}  // namespace tsum::conformance

TYPE_TO_STRING_AS("aws", tsum::conformance::Aws);
TYPE_TO_STRING_AS("gce", tsum::conformance::Gce);
TYPE_TO_STRING_AS("azure", tsum::conformance::Azure);
TYPE_TO_STRING_AS("hetzner", tsum::conformance::Hetzner);
TYPE_TO_STRING_AS("yandex", tsum::conformance::Yandex);

// A contract check, run once per cloud as its own test case ("name<aws>", "name<gce>", ...; doctest's -tc
// picks one). Inside, Cloud is the tag: Cloud::make() builds the rig.
#define CONFORMANCE(name) \
  TEST_CASE_TEMPLATE(name, Cloud, tsum::conformance::Aws, tsum::conformance::Gce, tsum::conformance::Azure, \
                     tsum::conformance::Hetzner, tsum::conformance::Yandex)
// The same for the clouds whose adapters trade their credential for expiring bearer tokens.
#define CONFORMANCE_TOKENS(name) \
  TEST_CASE_TEMPLATE(name, Cloud, tsum::conformance::Gce, tsum::conformance::Azure, tsum::conformance::Yandex)
