// FakeYandexCloud: a stateful fake of the Yandex Cloud endpoints tsum's Yandex provider talks to, served
// over HTTP(S) on loopback. One server answers:
//   POST /iam/v1/tokens          {"jwt": ...}: a PS256 JWT signed by the authorized key (kid = its id,
//                                iss = its service account, aud = iam_url(), at most an hour long and current)
//                                gives {"iamToken", "expiresAt"}
//   /compute/v1/instances...     Compute (fake_yandex_compute.h)
//   GET /operations/{id}         the Operation API
//   GET /billing/v1/skus         Billing SKUs (fake_yandex_billing.h)
// Everything but the token endpoint needs "Authorization: Bearer <an IAM token issued and not expired>".
// Refusals quote the credential they got back (as a careless proxy might), so tests can check that the
// client redacts it. Faults (aws/fake/fake_faults.h) apply to accepted requests, by method name:
// iam.token, instances.create, instances.get, instances.list, instances.delete, operations.get, skus.list.
// Point the provider at it with iam_endpoint = iam_url(), compute_endpoint = compute_url(),
// operation_endpoint = operation_url(), billing_endpoint = billing_url() and, for HTTPS, http.ca_file.
// With guest.root set, each instance's user data really runs (providers/fake_guest): after every request
// the guests follow the instances: metadata user-data is booted under guest.root/<instance id> while
// PROVISIONING, STARTING or RUNNING, and halted once the instance is STOPPING, STOPPED, DELETING or gone;
// destroying the fake halts them all.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "providers/aws/fake/call_book.h"
#include "providers/aws/fake/fake_faults.h"
#include "providers/fake_guest/fake_guest.h"
#include "providers/http/loopback_server.h"
#include "providers/yandex/fake/fake_yandex_compute.h"

namespace tsum::providers::yandex::fake {

using aws::fake::CallBook;
using aws::fake::Fault;
using aws::fake::FaultKind;

struct FakeYandexCloudOptions {
  http::LoopbackOptions listen = {};  // host, port, cert_file/key_file (both empty: plain HTTP)
  std::string key_id = "ajefakekey0000000001";
  std::string service_account_id = "ajefakesa00000000001";
  std::string public_key_pem = {};    // the authorized key's public key (or its private key PEM); required
  FakeYandexComputeOptions compute = {};
  int sku_page_size = 1000;
  double token_lifetime_s = 12 * 3600;
  std::chrono::milliseconds hang{30000};  // how long a "timeout" fault holds the connection before closing it
  int retry_after_s = 1;                  // the Retry-After of a 429 fault
  fake_guest::FakeGuestOptions guest = {};  // guest.root set: run instances' user data (FakeGuest, see above)
  const Clock* clock = nullptr;           // lifecycle, JWT and token time; null: the system clock
};

class FakeYandexCloud {
 public:
  explicit FakeYandexCloud(FakeYandexCloudOptions opts);
  ~FakeYandexCloud();

  Result<std::uint16_t> start();
  void stop();
  const std::string& base_url() const { return server_.base_url(); }
  std::string iam_url() const { return base_url() + "/iam/v1/tokens"; }
  std::string compute_url() const { return base_url() + "/compute/v1"; }
  std::string operation_url() const { return base_url() + "/operations"; }
  std::string billing_url() const { return base_url() + "/billing/v1"; }
  const std::string& folder_id() const { return opts_.compute.folder_id; }

  void inject(const Fault& f) { faults_.add(f); }
  int pending_faults() const { return faults_.pending(); }

  // Accepted requests per method (faulted ones included), refused credentials, tokens issued.
  int requests(std::string_view method) const;
  int rejected() const;
  int tokens_issued() const;
  void revoke_tokens();

  std::vector<FakeInstance> instances() const { return compute_.instances(); }
  int created() const { return compute_.created(); }
  Status guest_shutdown(const std::string& id);

 private:
  http::LoopbackReply handle(const http::LoopbackRequest& req);
  http::LoopbackReply token(const http::LoopbackRequest& req);
  std::string refuse_bearer(const http::LoopbackRequest& req);  // empty: the token is good
  void sync_guests();
  http::LoopbackReply fault_reply(FaultKind kind) const;

  FakeYandexCloudOptions opts_;
  SystemClock system_clock_;
  const Clock& clock_;
  FakeYandexCompute compute_;
  aws::fake::FaultPlan faults_;
  CallBook book_;
  std::optional<fake_guest::FakeGuest> guest_;  // outlives the server, whose thread syncs it
  http::LoopbackServer server_;
};

}  // namespace tsum::providers::yandex::fake
