// FakeGceCloud: a stateful fake of the Google endpoints tsum's GCE provider talks to, on the shared fake
// server (fake_cloud/fake_server.h: loopback HTTP(S), call book, faults, guests). It answers:
//   POST /token                                 OAuth2 jwt-bearer grant: the assertion must be an RS256 JWT
//                                               signed by the service account's key, iss = its email,
//                                               aud = token_url(), a scope, at most an hour long and current;
//                                               or the refresh_token grant of the authorized user (gcloud's
//                                               application default login) whose client and token it knows
//   GET / and /computeMetadata/v1/...           the metadata server of the VM tsumd runs on (with
//                                               "Metadata-Flavor: Google"): project/project-id and
//                                               instance/service-accounts/default/token
//   /compute/v1/projects/...                    Compute Engine (fake_compute.h), machineTypes.list
//   GET /v1/services/6F81-5844-456A/skus        the Cloud Billing Catalog (fake_gce_catalog.h)
// API calls need "Authorization: Bearer <a token /token issued and not yet expired>". Refusals quote the
// credential they got back (as a careless proxy might), so tests can check that the client redacts it.
// Method names (for faults and the call book): token, instances.insert, instances.get, instances.delete,
// instances.aggregatedList, zoneOperations.get, machineTypes.list, skus.list.
// Point the provider at it with compute_endpoint = compute_url(), billing_endpoint = billing_url(),
// token_endpoint = token_url() and, for HTTPS, http.ca_file = the CA that signed the certificate.
// Guests: an instance's guest id is its numeric id; its metadata item user-data is up while PROVISIONING,
// STAGING or RUNNING.
#pragma once

#include <string>
#include <vector>

#include "tests/fakes/cloud/fake_server.h"
#include "providers/gce/gce_login.h"
#include "tests/fakes/gce/fake_compute.h"

namespace tsum::providers::gce::fake {

struct FakeGceCloudOptions {
  fake_cloud::FakeServerOptions server = {};
  std::string client_email = "tsum@tsum-fake.iam.gserviceaccount.com";
  std::string public_key_pem = {};  // the service account's public key (or its private key PEM); required
  FakeComputeOptions compute = {};
  double token_lifetime_s = 3600;
  AuthorizedUser user = {.client_id = "tsum-fake.apps.googleusercontent.com", .client_secret = "tsum-fake-client-secret",
                         .refresh_token = "1//tsum-fake-refresh-token"};
};

class FakeGceCloud final : public fake_cloud::FakeCloudApi {
 public:
  explicit FakeGceCloud(FakeGceCloudOptions opts);

  // invalid_argument without a public key; else see LoopbackServer::start.
  Result<std::uint16_t> start();
  fake_cloud::FakeServer& server() { return server_; }
  const fake_cloud::FakeServer& server() const { return server_; }
  std::string token_url() const { return server_.base_url() + "/token"; }
  std::string compute_url() const { return server_.base_url() + "/compute/v1"; }
  std::string billing_url() const { return server_.base_url() + "/v1"; }

  std::vector<FakeGceInstance> instances() const { return compute_.instances(); }
  int created() const { return compute_.created(); }
  Status guest_shutdown(const std::string& zone, const std::string& name);
  void set_stockout(bool on) { compute_.set_stockout(on); }
  // POST /_fake/capacity/<zone>?spot=N: GCE's Spot capacity is per zone.
  Status set_spot_capacity(const std::string& zone, std::optional<int> left) override {
    compute_.set_spot_capacity(zone, left);
    return {};
  }
  // A Spot VM's preemption (FakeCompute::interrupt) and the instances' metadata server (FakeCompute::metadata).
  Status interrupt(const std::string& name, std::optional<double> notice_s) override {
    return compute_.interrupt(name, notice_s);
  }
  http::LoopbackReply metadata(const http::LoopbackRequest& req, const std::string& id) override;

 private:
  fake_cloud::Route route(const http::LoopbackRequest& req) override;
  http::LoopbackReply fault_answer(int status, const std::string& method) const override;
  std::vector<fake_guest::LiveInstance> live_guests() const override;
  fake_cloud::Route token(const http::LoopbackRequest& req);
  http::LoopbackReply issue_token();
  // The metadata server of the host tsumd runs on (Application Default Credentials on a GCE VM).
  fake_cloud::Route host_metadata(const http::LoopbackRequest& req, const std::string& path);

  FakeGceCloudOptions opts_;
  FakeCompute compute_;
  fake_cloud::FakeServer server_;  // last: its thread stops before the state above goes
};

}  // namespace tsum::providers::gce::fake
