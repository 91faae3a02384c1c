// FakeAzureCloud: a stateful fake of the Azure endpoints tsum's Azure provider talks to, on the shared fake
// server (fake_cloud/fake_server.h: loopback HTTP(S), call book, faults, guests). It answers:
//   POST /<tenant>/oauth2/v2.0/token             client-credentials grant: the app's client_id and
//                                                client_secret, or a client assertion: a JWT signed by the
//                                                certificate's key (x5t its thumbprint, aud this URL) or the
//                                                federated token (workload identity); refresh-token grant for
//                                                the Azure CLI's client id; scope https://management.azure.com/.default
//   GET /metadata/identity/oauth2/token          the instance metadata service's managed identity (Metadata:
//                                                true), when managed_identity; 400 "no identity" otherwise
//   GET /metadata/instance/compute/subscriptionId  the VM's subscription
//   GET /<tenant>/v2.0/.well-known/openid-configuration   for OAuth2 libraries that discover the endpoint
//   /subscriptions/...                           Resource Manager (fake_arm.h) and Resource SKUs
//   GET /api/retail/prices                       the Retail Prices API (no authentication)
// ARM calls need "Authorization: Bearer <a token /token issued and not yet expired>". Refusals quote the
// credential they got back (as a careless proxy might), so tests can check that the client redacts it.
// Method names (for faults and the call book): token, resourceGroups.get, resourceGroups.createOrUpdate,
// resourceGroups.delete, resourceGroups.list, virtualNetworks.createOrUpdate, virtualMachines.createOrUpdate,
// virtualMachines.get, publicIPAddresses.list, operations.get, operationResults.get, resourceSkus.list,
// prices.list.
// Point the provider at it with login_endpoint = management_endpoint = server().base_url(), prices_endpoint =
// prices_url() and, for HTTPS, http.ca_file = the CA that signed the certificate.
// Guests: a VM's guest id is <group>.<vm name>; its osProfile.customData is up while the VM is Creating or
// Succeeded and not stopped.
#pragma once

#include <string>
#include <vector>

#include "tests/fakes/azure/fake_arm.h"
#include "tests/fakes/azure/fake_azure_catalog.h"
#include "tests/fakes/cloud/fake_server.h"

namespace tsum::providers::azure::fake {

struct FakeAzureCloudOptions {
  fake_cloud::FakeServerOptions server = {};
  std::string tenant_id = "11111111-2222-4333-8444-555555555555";
  std::string client_id = "66666666-7777-4888-9999-000000000000";
  std::string client_secret = {};    // the grants it takes: at least one of these
  std::string certificate_pem = {};  // the app's certificate (PEM): assertions signed by its key
  std::string federated_token = {};  // workload identity's token, as the assertion
  std::string refresh_token = {};    // the Azure CLI's refresh token for a user
  bool managed_identity = false;     // the metadata service hands out tokens
  FakeArmOptions arm = {};
  RetailPaging retail = {};
  int sku_page_size = 100;
  double token_lifetime_s = 3599;
};

class FakeAzureCloud final : public fake_cloud::FakeCloudApi {
 public:
  explicit FakeAzureCloud(FakeAzureCloudOptions opts);

  // invalid_argument without a grant to take; else see LoopbackServer::start.
  Result<std::uint16_t> start();
  fake_cloud::FakeServer& server() { return server_; }
  const fake_cloud::FakeServer& server() const { return server_; }
  std::string prices_url() const { return server_.base_url() + "/api/retail/prices"; }
  const std::string& subscription() const { return opts_.arm.subscription; }

  std::vector<FakeGroup> groups() const { return arm_.groups(); }
  std::vector<FakeVm> vms() const { return arm_.vms(); }
  int vms_created() const { return arm_.vms_created(); }
  int groups_created() const { return arm_.groups_created(); }
  Status guest_shutdown(const std::string& group);
  void set_allocation_failure(bool on) { arm_.set_allocation_failure(on); }
  // A Spot VM's eviction (FakeArm::interrupt) and the VMs' Scheduled Events on the metadata server.
  Status interrupt(const std::string& id, std::optional<double> notice_s) override {
    return arm_.interrupt(id, notice_s);
  }
  http::LoopbackReply metadata(const http::LoopbackRequest& req, const std::string& id) override;

 private:
  fake_cloud::Route route(const http::LoopbackRequest& req) override;
  http::LoopbackReply fault_answer(int status, const std::string& method) const override;
  std::vector<fake_guest::LiveInstance> live_guests() const override;
  fake_cloud::Route token(const http::LoopbackRequest& req);
  fake_cloud::Route issue();
  // Why a client assertion is refused; "" when it is the federated token or verifies with the certificate.
  std::string assertion_refused(const std::string& assertion, const std::string& audience) const;

  FakeAzureCloudOptions opts_;
  FakeArm arm_;
  fake_cloud::FakeServer server_;  // last: its thread stops before the state above goes
};

}  // namespace tsum::providers::azure::fake
