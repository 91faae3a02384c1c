// FakeGceCloud: a stateful fake of the Google endpoints tsum's GCE provider talks to, served over HTTP(S)
// on loopback. One server answers:
//   POST /token                                 OAuth2 jwt-bearer grant: the assertion must be an RS256 JWT
//                                               signed by the service account's key, iss = its email,
//                                               aud = token_url(), a scope, at most an hour long and current
//   /compute/v1/projects/...                    Compute Engine (fake_compute.h), machineTypes.list
//   GET /v1/services/6F81-5844-456A/skus        the Cloud Billing Catalog (fake_gce_catalog.h)
// API calls need "Authorization: Bearer <a token /token issued and not yet expired>". Refusals quote the
// credential they got back (as a careless proxy might), so tests can check that the client redacts it.
// Faults (aws/fake/fake_faults.h) apply to accepted requests, by method name: token, instances.insert,
// instances.get, instances.delete, instances.aggregatedList, zoneOperations.get, machineTypes.list,
// skus.list.
// Point the provider at it with compute_endpoint = compute_url(), billing_endpoint = billing_url(),
// token_endpoint = token_url() and, for HTTPS, http.ca_file = the CA that signed cert_file.
// With guest.root set, each instance's user data really runs (providers/fake_guest): after every request
// the guests follow the instances: the metadata item user-data is booted under guest.root/<instance id>
// while PROVISIONING, STAGING or RUNNING, and halted once the instance is STOPPING, TERMINATED or gone;
// destroying the fake halts them all.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "providers/aws/fake/call_book.h"
#include "providers/aws/fake/fake_faults.h"
#include "providers/gce/fake/fake_compute.h"
#include "providers/fake_guest/fake_guest.h"
#include "providers/http/loopback_server.h"

namespace tsum::providers::gce::fake {

using aws::fake::CallBook;
using aws::fake::Fault;
using aws::fake::FaultKind;

struct FakeGceCloudOptions {
  http::LoopbackOptions listen = {};  // host, port, cert_file/key_file (both empty: plain HTTP)
  std::string client_email = "tsum@tsum-fake.iam.gserviceaccount.com";
  std::string public_key_pem = {};    // the service account's public key (or its private key PEM)
  FakeComputeOptions compute = {};
  double token_lifetime_s = 3600;
  std::chrono::milliseconds hang{30000};  // how long a "timeout" fault holds the connection before closing it
  int retry_after_s = 1;                  // the Retry-After of a 429 fault
  fake_guest::FakeGuestOptions guest = {};  // guest.root set: run instances' user data (FakeGuest, see above)
  const Clock* clock = nullptr;           // lifecycle, JWT and token time; null: the system clock
};

class FakeGceCloud {
 public:
  explicit FakeGceCloud(FakeGceCloudOptions opts);
  ~FakeGceCloud();

  Result<std::uint16_t> start();
  void stop();
  const std::string& base_url() const { return server_.base_url(); }
  std::string token_url() const { return base_url() + "/token"; }
  std::string compute_url() const { return base_url() + "/compute/v1"; }
  std::string billing_url() const { return base_url() + "/v1"; }

  void inject(const Fault& f) { faults_.add(f); }
  int pending_faults() const { return faults_.pending(); }

  // Accepted requests per method (faulted ones included), refused credentials, tokens issued.
  int requests(std::string_view method) const;
  int rejected() const;
  int tokens_issued() const;
  // Every token issued so far stops working (a revocation); with refuse_all, new ones are refused too.
  void revoke_tokens(bool refuse_all = false);

  std::vector<FakeGceInstance> instances() const { return compute_.instances(); }
  int created() const { return compute_.created(); }
  Status guest_shutdown(const std::string& zone, const std::string& name);
  void set_stockout(bool on) { compute_.set_stockout(on); }

 private:
  http::LoopbackReply handle(const http::LoopbackRequest& req);
  http::LoopbackReply token(const http::LoopbackRequest& req);
  std::string refuse_bearer(const http::LoopbackRequest& req);  // empty: the token is good
  void sync_guests();
  http::LoopbackReply fault_reply(FaultKind kind) const;

  FakeGceCloudOptions opts_;
  SystemClock system_clock_;
  const Clock& clock_;
  FakeCompute compute_;
  aws::fake::FaultPlan faults_;
  CallBook book_;
  std::atomic<bool> refuse_all_{false};
  std::optional<fake_guest::FakeGuest> guest_;  // outlives the server, whose thread syncs it
  http::LoopbackServer server_;
};

}  // namespace tsum::providers::gce::fake
