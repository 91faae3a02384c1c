// The Hetzner rig: the Hetzner Cloud adapter on the fake Hetzner (a static bearer token).
#include "providers/conformance/cloud_rig.h"
#include "tests/fakes/hetzner/fake_hetzner_cloud.h"
#include "providers/hetzner/hetzner_provider.h"
#include "support/provider_fixtures.h"

namespace tsum::conformance {

namespace {

using namespace std::chrono_literals;
using namespace providers;
using namespace providers::hetzner;

const std::string kToken = "hcloud-conformance-token-0123456789";
const std::string kWrongToken = "hcloud-wrong-token-abcdef";

class HetznerRig final : public CloudRig {
 public:
  explicit HetznerRig(const RigOptions& o)
      : fake_({.server = {.listen = {.cert_file = tls_.cert_file(), .key_file = tls_.key_file()}, .hang = 3s,
                          .guest = o.guest, .clock = &clock_},
               .token = kToken,
               .servers = {.page_size = o.page_size > 0 ? o.page_size : 50}}) {
    REQUIRE(fake_.start().ok());
    provider_ = make(kToken);
  }

  std::string name() const override { return "hetzner"; }
  Provider& provider() override { return *provider_; }
  fake_cloud::FakeServer& server() override { return fake_.server(); }
  Methods methods() const override {
    return {"servers.create", "servers.get", "servers.delete", "servers.list", {"server_types.list"}};
  }
  Offer offer() const override { return {.provider = "hetzner", .instance_type = "cx22"}; }
  std::unique_ptr<Provider> with_wrong_credential() override { return make(kWrongToken); }
  std::vector<std::string> secrets() const override { return {kToken, kWrongToken}; }
  std::string refusal_code() const override { return "unauthorized"; }

  int created() const override { return fake_.created(); }
  int existing() const override { return static_cast<int>(fake_.servers().size()); }
  std::string user_data(const InstanceHandle& h) const override {
    for (const auto& s : fake_.servers())
      if (std::to_string(s.id) == h.id) return s.user_data;
    return {};
  }
  std::string market(const InstanceHandle& h) const override { return user_data(h).empty() ? "" : "on-demand"; }

 private:
  std::unique_ptr<HetznerProvider> make(const std::string& token) {
    HetznerOptions o{.token = token, .endpoint = fake_.api_url(),
                     .http = testing::fake_http(tls_.ca_file()),
                     .attempt_timeout = 1000ms, .clock = &clock_};
    auto p = HetznerProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }

  hetzner::fake::FakeHetznerCloud fake_;
  std::unique_ptr<HetznerProvider> provider_;
};

}  // namespace

std::unique_ptr<CloudRig> make_hetzner_rig(const RigOptions& o) { return std::make_unique<HetznerRig>(o); }

}  // namespace tsum::conformance
