// The Yandex Cloud provider: instances are on-demand Compute VMs in one zone and folder, booted from a
// configured image with cloud-init user data (cloud_init/cloud_init.h, as metadata user-data) that starts
// the tsum agent, with a public IPv4 (one-to-one NAT) on a configured subnet.
//   create     POST /compute/v1/instances, then the operation is polled (the Operation API) until done or
//              operation_deadline. Labels <label_key>=<tag> and tsum-run=<run id>. Instance names are unique
//              in a folder and tsum's derives from the idempotency token (tsum-<run>-<8 hex>): a retried
//              create (a lost answer) meets ALREADY_EXISTS and adopts the instance of that name when its
//              labels name the same run (not one being deleted). The boot disk is autoDelete.
//   describe   GET /compute/v1/instances/{id}: PROVISIONING/STARTING -> pending, RUNNING -> running,
//              STOPPING, STOPPED, RESTARTING, UPDATING, ERROR, CRASHED, DELETING -> exited, 404 -> gone. The
//              address is primaryV4Address.oneToOneNat.address.
//   describe_many every page of the folder's instances: one listing for all the daemon's live runs; an
//              instance it does not list is asked about with describe.
//   terminate  DELETE /compute/v1/instances/{id}, then its operation is polled until done or delete_deadline
//              (timeout; calling again is safe). 404 counts as deleted, and so does a refusal (FAILED_PRECONDITION)
//              of an instance already DELETING.
//   list_tagged Yandex cannot filter by label server-side: every page of the folder's instances
//              (nextPageToken), kept when their <label_key> label is the tag.
//   offers     yandex_catalog.h: the configured shapes priced from Billing SKUs, kept for catalog_ttl.
// Every call goes through YandexApi: an IAM token from a PS256 JWT, retried by HttpClient on 429 and 5xx.
// Not thread-safe: call from one thread (the daemon's io_context).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "providers/cloud_init/cloud_init.h"
#include "providers/provider.h"
#include "providers/yandex/yandex_api.h"
#include "providers/yandex/yandex_catalog.h"
#include "providers/yandex/yandex_json.h"

namespace tsum::providers::yandex {

struct YandexOptions {
  AuthorizedKey key = {};                  // a service account's authorized key, unless a login below says otherwise
  std::string oauth_token = {};            // or a user's OAuth token (the yc CLI's; yandex_login.h)
  bool metadata = false;                   // or the VM's service account (the metadata server)
  std::string metadata_host = "169.254.169.254";  // the metadata server's host[:port]
  std::string unusable = {};               // no login was found: every call fails with this (its fix)
  std::string folder_id = {};              // required
  std::string zone = "ru-central1-a";
  std::string subnet_id = {};              // a subnet of the zone; empty: the folder's first subnet in the zone
  std::string image_id = {};               // empty: the latest image of image_family in image_folder
  std::string image_family = "ubuntu-2204-lts";
  std::string image_folder = "standard-images";
  int disk_gb = 30;
  std::string disk_type = "network-ssd";
  std::vector<Shape> shapes = default_shapes();
  std::string currency = "RUB";            // RUB, USD or KZT, as the Billing API prices
  std::string label_key = "tsum";          // the ownership label's key; its value is LaunchSpec::tag
  std::string iam_endpoint = {};           // URL overrides; empty: Yandex's
  std::string compute_endpoint = {};
  std::string operation_endpoint = {};
  std::string billing_endpoint = {};
  std::string vpc_endpoint = {};
  CloudInitOptions cloud_init = {};
  http::HttpClientOptions http = {};       // CA file, retry policy
  std::chrono::milliseconds attempt_timeout{30000};
  std::chrono::milliseconds operation_deadline{std::chrono::minutes(5)};
  std::chrono::milliseconds delete_deadline{std::chrono::minutes(5)};
  std::chrono::milliseconds operation_poll{2000};
  std::chrono::seconds catalog_ttl{3600};
  const Clock* clock = nullptr;            // null: the system clock
};

class YandexProvider final : public Provider {
 public:
  // invalid_argument for a missing key (and login) or folder, a malformed subnet or image id, a bad zone or
  // label key, an empty shape list or a malformed endpoint. With `unusable` set, the folder may be missing.
  static Result<std::unique_ptr<YandexProvider>> make(YandexOptions opts);

  std::string_view name() const override { return "yandex"; }
  Capabilities capabilities() const override { return {.gpus = true, .spot = true, .docker = true, .native = true}; }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  // The instance name for a launch: tsum-<run id, cleaned>-<8 hex of the token's SHA-256>.
  static std::string instance_name(const LaunchSpec& spec);

  // The image its machines boot: image_id, else the latest of image_family (images:latestByFamily).
  Task<Result<std::string>> image();

 private:
  YandexProvider(YandexOptions opts, std::unique_ptr<YandexApi> api);
  double now_s() const;
  Result<CreateInstance> create_spec(const Offer& offer, const LaunchSpec& spec) const;
  // The image and subnet a create names: the configured ones, else found once (the family's latest image, the
  // folder's first subnet in the zone) and kept.
  Task<Result<std::pair<std::string, std::string>>> image_and_subnet();
  Task<Result<YandexOperation>> wait_for(YandexOperation op, std::chrono::milliseconds deadline);
  Task<Result<InstanceHandle>> adopt(const CreateInstance& c, const LaunchSpec& spec, double created_at);
  InstanceHandle handle_of(const std::string& id, const std::string& name, const std::string& platform, double created_at) const;
  // Every page of the folder's instances.
  Task<Result<std::vector<YandexInstance>>> list_folder();

  YandexOptions opts_;
  std::unique_ptr<YandexApi> api_;
  SystemClock system_clock_;
  std::optional<std::vector<Offer>> catalog_;
  double catalog_at_s_ = 0;
  std::string image_id_, subnet_id_;  // found, when not configured
};

}  // namespace tsum::providers::yandex
