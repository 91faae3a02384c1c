// The Azure rig: the ARM adapter (a resource group per launch) on the fake Azure (a client-credentials
// grant, then bearer tokens); operations finish after one poll.
#include "providers/azure/azure_provider.h"
#include "tests/fakes/azure/fake_azure_cloud.h"
#include "providers/conformance/cloud_rig.h"
#include "support/provider_fixtures.h"

namespace tsum::conformance {

namespace {

using namespace std::chrono_literals;
using namespace providers;
using namespace providers::azure;

const std::string kSecret = "azure-conformance-secret~0123456789";
const std::string kWrongSecret = "azure-wrong-secret~abcdef";

class AzureRig final : public CloudRig {
 public:
  explicit AzureRig(const RigOptions& o)
      : fake_({.server = {.listen = {.cert_file = tls_.cert_file(), .key_file = tls_.key_file()}, .hang = 3s,
                          .guest = o.guest, .clock = &clock_},
               .client_secret = kSecret,
               .arm = {.page_size = o.page_size > 0 ? o.page_size : 100},
               .retail = {.page_size = o.page_size > 0 ? o.page_size : 100},
               .sku_page_size = o.page_size > 0 ? o.page_size : 100}) {
    REQUIRE(fake_.start().ok());
    provider_ = make(kSecret);
  }

  std::string name() const override { return "azure"; }
  Provider& provider() override { return *provider_; }
  fake_cloud::FakeServer& server() override { return fake_.server(); }
  Methods methods() const override {
    return {"virtualMachines.createOrUpdate", "virtualMachines.get", "resourceGroups.delete", "resourceGroups.list",
            {"prices.list", "resourceSkus.list"}};
  }
  Offer offer() const override { return {.provider = "azure", .instance_type = "Standard_D2s_v5"}; }
  std::unique_ptr<Provider> with_wrong_credential() override { return make(kWrongSecret); }
  std::vector<std::string> secrets() const override { return {kSecret, kWrongSecret}; }
  std::string refusal_code() const override { return "invalid_client"; }
  double token_lifetime_s() const override { return 3599; }

  int created() const override { return fake_.vms_created(); }
  int existing() const override { return static_cast<int>(fake_.vms().size()); }
  std::string user_data(const InstanceHandle& h) const override {
    for (const auto& v : fake_.vms())
      if (v.group == h.id) return v.custom_data;
    return {};
  }
  std::string market(const InstanceHandle& h) const override {
    for (const auto& v : fake_.vms())
      if (v.group == h.id)
        return v.priority == "Regular" ? "on-demand"
                                       : v.priority + "/" + v.eviction_policy + "/" + std::to_string(static_cast<int>(v.max_price));
    return {};
  }

 private:
  std::unique_ptr<AzureProvider> make(const std::string& secret) {
    azure::fake::FakeAzureCloudOptions d;
    AzureOptions o{.credentials = {.tenant_id = d.tenant_id, .client_id = d.client_id, .client_secret = secret,
                                   .subscription_id = fake_.subscription()},
                   .login_endpoint = fake_.server().base_url(), .management_endpoint = fake_.server().base_url(),
                   .prices_endpoint = fake_.prices_url(),
                   .http = testing::fake_http(tls_.ca_file()),
                   .attempt_timeout = 1000ms, .operation_deadline = 5s, .delete_deadline = 5s, .operation_poll = 5ms, .clock = &clock_};
    auto p = AzureProvider::make(o);
    REQUIRE_MESSAGE(p.ok(), p.error().detail);
    return std::move(*p);
  }

  azure::fake::FakeAzureCloud fake_;
  std::unique_ptr<AzureProvider> provider_;
};

}  // namespace

std::unique_ptr<CloudRig> make_azure_rig(const RigOptions& o) { return std::make_unique<AzureRig>(o); }

}  // namespace tsum::conformance
