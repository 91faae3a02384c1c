// FakeAzureCloud: a stateful fake of the Azure endpoints tsum's Azure provider talks to, served over
// HTTP(S) on loopback. One server answers:
//   POST /<tenant>/oauth2/v2.0/token             client-credentials grant: the app's client_id and
//                                                client_secret, scope https://management.azure.com/.default
//   GET /<tenant>/v2.0/.well-known/openid-configuration   for OAuth2 libraries that discover the endpoint
//   /subscriptions/...                           Resource Manager (fake_arm.h) and Resource SKUs
//   GET /api/retail/prices                       the Retail Prices API (no authentication)
// ARM calls need "Authorization: Bearer <a token /token issued and not yet expired>". Refusals quote the
// credential they got back (as a careless proxy might), so tests can check that the client redacts it.
// Faults (aws/fake/fake_faults.h) apply to accepted requests, by method name: token, resourceGroups.get,
// resourceGroups.createOrUpdate, resourceGroups.delete, resourceGroups.list, virtualNetworks.createOrUpdate,
// virtualMachines.createOrUpdate, virtualMachines.get, publicIPAddresses.list, operations.get,
// operationResults.get, resourceSkus.list, prices.list.
// Point the provider at it with login_endpoint = management_endpoint = base_url(), prices_endpoint =
// prices_url() and, for HTTPS, http.ca_file = the CA that signed cert_file.
// With guest.root set, each instance's user data really runs (providers/fake_guest): after every request
// the guests follow the VMs: osProfile.customData is booted under guest.root/<group>.<vm name> while the VM
// is Creating or Succeeded and not stopped, and halted once it is stopped, Deleting, Failed or gone;
// destroying the fake halts them all.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "providers/aws/fake/call_book.h"
#include "providers/aws/fake/fake_faults.h"
#include "providers/azure/fake/fake_arm.h"
#include "providers/azure/fake/fake_azure_catalog.h"
#include "providers/fake_guest/fake_guest.h"
#include "providers/http/loopback_server.h"

namespace tsum::providers::azure::fake {

using aws::fake::CallBook;
using aws::fake::Fault;
using aws::fake::FaultKind;

struct FakeAzureCloudOptions {
  http::LoopbackOptions listen = {};  // host, port, cert_file/key_file (both empty: plain HTTP)
  std::string tenant_id = "11111111-2222-4333-8444-555555555555";
  std::string client_id = "66666666-7777-4888-9999-000000000000";
  std::string client_secret = {};     // required
  FakeArmOptions arm = {};
  RetailPaging retail = {};
  int sku_page_size = 100;
  double token_lifetime_s = 3599;
  std::chrono::milliseconds hang{30000};  // how long a "timeout" fault holds the connection before closing it
  int retry_after_s = 1;                  // the Retry-After of a 429 fault
  fake_guest::FakeGuestOptions guest = {};  // guest.root set: run instances' user data (FakeGuest, see above)
  const Clock* clock = nullptr;           // lifecycle and token time; null: the system clock
};

class FakeAzureCloud {
 public:
  explicit FakeAzureCloud(FakeAzureCloudOptions opts);
  ~FakeAzureCloud();

  Result<std::uint16_t> start();
  void stop();
  const std::string& base_url() const { return server_.base_url(); }
  std::string prices_url() const { return base_url() + "/api/retail/prices"; }
  const std::string& subscription() const { return opts_.arm.subscription; }

  void inject(const Fault& f) { faults_.add(f); }
  int pending_faults() const { return faults_.pending(); }

  // Accepted requests per method (faulted ones included), refused credentials, tokens issued.
  int requests(std::string_view method) const;
  int rejected() const;
  int tokens_issued() const;
  // Every token issued so far stops working (a revocation).
  void revoke_tokens();

  std::vector<FakeGroup> groups() const { return arm_.groups(); }
  std::vector<FakeVm> vms() const { return arm_.vms(); }
  int vms_created() const { return arm_.vms_created(); }
  int groups_created() const { return arm_.groups_created(); }
  Status guest_shutdown(const std::string& group);
  void set_allocation_failure(bool on) { arm_.set_allocation_failure(on); }

 private:
  http::LoopbackReply handle(const http::LoopbackRequest& req);
  http::LoopbackReply token(const http::LoopbackRequest& req);
  std::string refuse_bearer(const http::LoopbackRequest& req);  // empty: the token is good
  void sync_guests();
  http::LoopbackReply fault_reply(FaultKind kind) const;

  FakeAzureCloudOptions opts_;
  SystemClock system_clock_;
  const Clock& clock_;
  FakeArm arm_;
  aws::fake::FaultPlan faults_;
  CallBook book_;
  std::optional<fake_guest::FakeGuest> guest_;  // outlives the server, whose thread syncs it
  http::LoopbackServer server_;
};

}  // namespace tsum::providers::azure::fake
