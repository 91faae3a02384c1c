// FakeYandexCloud: a stateful fake of the Yandex Cloud endpoints tsum's Yandex provider talks to, on the
// shared fake server (fake_cloud/fake_server.h: loopback HTTP(S), call book, faults, guests). It answers:
//   POST /iam/v1/tokens          {"jwt": ...}: a PS256 JWT signed by the authorized key (kid = its id,
//                                iss = its service account, aud = iam_url(), at most an hour long and current)
//                                gives {"iamToken", "expiresAt"}; so does {"yandexPassportOauthToken": the
//                                user's OAuth token the yc CLI keeps}
//   /compute/v1/instances...     Compute (fake_yandex_compute.h)
//   GET /compute/v1/images:latestByFamily   the latest image of a family in standard-images
//   GET /vpc/v1/subnets          the folder's subnets, one per zone
//   GET /operations/{id}         the Operation API
//   GET /billing/v1/skus         Billing SKUs (fake_yandex_billing.h)
// Everything but the token endpoint needs "Authorization: Bearer <an IAM token issued and not expired>".
// Refusals quote the credential they got back (as a careless proxy might), so tests can check that the
// client redacts it. Method names (for faults and the call book): iam.token, instances.create,
// instances.get, instances.list, instances.delete, operations.get, skus.list, images.getLatestByFamily,
// subnets.list.
// Point the provider at it with iam_endpoint = iam_url(), compute_endpoint = compute_url(),
// operation_endpoint = operation_url(), billing_endpoint = billing_url() and, for HTTPS, http.ca_file.
// Guests: an instance's guest id is its id; its metadata user-data is up while PROVISIONING, STARTING or
// RUNNING.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/fakes/cloud/fake_server.h"
#include "tests/fakes/yandex/fake_yandex_compute.h"

namespace tsum::providers::yandex::fake {

struct FakeYandexCloudOptions {
  fake_cloud::FakeServerOptions server = {};
  std::string key_id = "ajefakekey0000000001";
  std::string service_account_id = "ajefakesa00000000001";
  std::string public_key_pem = {};  // the authorized key's public key (or its private key PEM); required
  FakeYandexComputeOptions compute = {};
  int sku_page_size = 1000;
  double token_lifetime_s = 12 * 3600;
  std::string oauth_token = "y0_tsumfakeoauthtoken";  // a user's OAuth token the IAM endpoint exchanges
  bool instance_service_account = false;  // it is also the VM's metadata server, with a service account's tokens
  // images:latestByFamily in standard-images: family -> image id; and the folder's subnet in each zone.
  std::map<std::string, std::string> image_families = {{"ubuntu-2204-lts", "fd8fakeubuntu2204"}, {"debian-12", "fd8fakedebian12"}};
  std::map<std::string, std::string> subnets = {{"ru-central1-a", "e9bfakesubneta"}, {"ru-central1-b", "e2lfakesubnetb"}};
};

class FakeYandexCloud final : public fake_cloud::FakeCloudApi {
 public:
  explicit FakeYandexCloud(FakeYandexCloudOptions opts);

  // invalid_argument without a public key; else see LoopbackServer::start.
  Result<std::uint16_t> start();
  fake_cloud::FakeServer& server() { return server_; }
  const fake_cloud::FakeServer& server() const { return server_; }
  std::string iam_url() const { return server_.base_url() + "/iam/v1/tokens"; }
  std::string compute_url() const { return server_.base_url() + "/compute/v1"; }
  std::string operation_url() const { return server_.base_url() + "/operations"; }
  std::string billing_url() const { return server_.base_url() + "/billing/v1"; }
  const std::string& folder_id() const { return opts_.compute.folder_id; }

  std::vector<FakeInstance> instances() const { return compute_.instances(); }
  int created() const { return compute_.created(); }
  Status guest_shutdown(const std::string& id);

 private:
  fake_cloud::Route route(const http::LoopbackRequest& req) override;
  http::LoopbackReply fault_answer(int status, const std::string& method) const override;
  std::vector<fake_guest::LiveInstance> live_guests() const override;
  fake_cloud::Route token(const http::LoopbackRequest& req);

  FakeYandexCloudOptions opts_;
  FakeYandexCompute compute_;
  fake_cloud::FakeServer server_;  // last: its thread stops before the state above goes
};

}  // namespace tsum::providers::yandex::fake
