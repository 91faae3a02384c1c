// The GCE rig: the Compute Engine adapter on the fake GCE (an RS256 JWT grant, then bearer tokens).
#include "providers/conformance/cloud_rig.h"
#include "tests/fakes/gce/fake_gce_cloud.h"
#include "providers/gce/gce_provider.h"
#include "support/gce_account.h"
#include "support/provider_fixtures.h"

namespace tsum::conformance {

namespace {

using namespace std::chrono_literals;
using namespace providers;
using namespace providers::gce;
using testing::test_account;

class GceRig final : public CloudRig {
 public:
  explicit GceRig(const RigOptions& o)
      : fake_({.server = {.listen = {.cert_file = tls_.cert_file(), .key_file = tls_.key_file()}, .hang = 3s,
                          .guest = o.guest, .clock = &clock_},
               .client_email = test_account().client_email,
               .public_key_pem = rsa_public_key_pem(test_account().private_key_pem).value(),
               .compute = {.page_size = o.page_size > 0 ? o.page_size : 500}}) {
    REQUIRE(fake_.start().ok());
    provider_ = make(test_account());
  }

  std::string name() const override { return "gce"; }
  Provider& provider() override { return *provider_; }
  fake_cloud::FakeServer& server() override { return fake_.server(); }
  Methods methods() const override {
    return {"instances.insert", "instances.get", "instances.delete", "instances.aggregatedList", {"skus.list", "machineTypes.list"}};
  }
  Offer offer() const override { return {.provider = "gce", .instance_type = "e2-standard-2"}; }
  std::unique_ptr<Provider> with_wrong_credential() override {
    ServiceAccount impostor = test_account();
    impostor.private_key_pem = generate_rsa_key_pem().value();
    return make(impostor);
  }
  // A private key, or a JWT (base64url of '{"'), in any text.
  std::vector<std::string> secrets() const override { return {"PRIVATE KEY", "eyJ"}; }
  std::string refusal_code() const override { return "invalid_grant"; }
  double token_lifetime_s() const override { return 3600; }

  int created() const override { return fake_.created(); }
  int existing() const override { return static_cast<int>(fake_.instances().size()); }
  std::string user_data(const InstanceHandle& h) const override {
    for (const auto& i : fake_.instances())
      if (i.name == h.id) return i.metadata.contains("user-data") ? i.metadata.at("user-data") : "";
    return {};
  }
  std::string market(const InstanceHandle& h) const override {
    for (const auto& i : fake_.instances())
      if (i.name == h.id)
        return i.provisioning_model == "STANDARD" ? "on-demand" : i.provisioning_model + "/" + i.termination_action;
    return {};
  }

 private:
  std::unique_ptr<GceProvider> make(const ServiceAccount& sa) {
    GceOptions o{.account = sa, .compute_endpoint = fake_.compute_url(), .billing_endpoint = fake_.billing_url(),
                 .token_endpoint = fake_.token_url(),
                 .http = testing::fake_http(tls_.ca_file()),
                 .attempt_timeout = 1000ms, .operation_deadline = 2000ms, .operation_poll = 10ms, .clock = &clock_};
    auto p = GceProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }

  gce::fake::FakeGceCloud fake_;
  std::unique_ptr<GceProvider> provider_;
};

}  // namespace

std::unique_ptr<CloudRig> make_gce_rig(const RigOptions& o) { return std::make_unique<GceRig>(o); }

}  // namespace tsum::conformance
