// The Google Compute Engine provider: instances are on-demand VMs in one zone, booted from a configured
// image with cloud-init user data (cloud_init/cloud_init.h) that starts the tsum agent.
//   create     instances.insert with a requestId (a UUID from the idempotency token and a per-call nonce),
//              so HttpClient's retries of a lost answer get the first try's operation instead of a second
//              VM. The instance name derives from the token alone: a later create for the same launch (a
//              daemon retry or restart) meets alreadyExists and adopts the instance when its labels name
//              the same run, while a launch whose insert failed (a stockout) really tries again. Labels
//              <label_key>=<tag> and tsum-run=<run id>; metadata user-data; scheduling.maxRunDuration with
//              instanceTerminationAction DELETE as a safety net. Waits for the zone operation to finish,
//              polling until operation_deadline.
//   describe   instances.get: PROVISIONING/STAGING -> pending, RUNNING -> running, STOPPING, SUSPENDING,
//              SUSPENDED, TERMINATED (stopped), REPAIRING -> exited, 404 -> gone. The address is the natIP.
//   describe_many aggregated/instances filtered by labels.<label_key> = the handles' tag (which create records
//              in the handle), every page: one listing for all the daemon's live runs; a handle without a tag
//              or an instance the listing lacks is asked about with describe.
//   terminate  instances.delete (with a requestId of its own); 404 counts as deleted. Returns once GCE accepted
//              the delete; describe then sees STOPPING until the instance is gone.
//   list_tagged aggregated/instances filtered by labels.<label_key>, every page, every zone.
//   offers     gce_catalog.h, fetched on first use and kept for catalog_ttl.
// Every call goes through GceApi: OAuth2 with a service-account JWT, retried by HttpClient on 429 and 5xx.
// Not thread-safe: call from one thread (the daemon's io_context).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/clock.h"
#include "providers/cloud_init/cloud_init.h"
#include "providers/gce/gce_api.h"
#include "providers/gce/gce_json.h"
#include "providers/provider.h"

namespace tsum::providers::gce {

struct GceOptions {
  ServiceAccount account = {};             // a service account's key, unless `login` says otherwise
  std::optional<GceCredentials> login = {};  // the user's login (gce_login.h: resolve_gce_login)
  std::string unusable = {};               // no login was found: every call fails with this (its fix)
  std::string project = {};                // empty: the account's project_id
  std::string zone = "us-central1-a";
  std::string compute_endpoint = {};       // base URL overrides; empty: Google's
  std::string billing_endpoint = {};
  std::string token_endpoint = {};         // empty: the account's token_uri
  std::string source_image = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts";  // with cloud-init
  int disk_gb = 50;
  std::string network = "global/networks/default";
  std::string label_key = "tsum";          // the ownership label's key; its value is LaunchSpec::tag
  CloudInitOptions cloud_init = {};
  std::chrono::seconds max_run_duration{std::chrono::hours(24)};  // 0: none
  http::HttpClientOptions http = {};       // CA file, retry policy
  std::chrono::milliseconds attempt_timeout{30000};
  std::chrono::milliseconds operation_deadline{std::chrono::minutes(3)};
  std::chrono::milliseconds operation_poll{2000};
  std::chrono::seconds catalog_ttl{3600};
  const Clock* clock = nullptr;            // null: the system clock
};

class GceProvider final : public Provider {
 public:
  // invalid_argument for a missing account (and login), project or zone, a bad label key or a malformed
  // endpoint. With `unusable` set, the project may be missing.
  static Result<std::unique_ptr<GceProvider>> make(GceOptions opts);

  std::string_view name() const override { return "gce"; }
  Capabilities capabilities() const override { return {.gpus = true, .spot = true, .docker = true, .native = true}; }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;
  // The zone's region's quotas (regions.get): INSTANCES, and CPUS over the fewest vCPUs of the offers.
  Task<Result<MachineQuota>> machine_quota() override;

  // The instance name for a launch: tsum-<run id, cleaned>-<8 hex of the token's SHA-256>.
  static std::string instance_name(const LaunchSpec& spec);

 private:
  GceProvider(GceOptions opts, std::unique_ptr<GceApi> api);
  double now_s() const;
  std::string nonce();
  Result<InsertSpec> insert_spec(const Offer& offer, const LaunchSpec& spec) const;  // boots offer.image, else source_image
  Task<std::string> current_image();
  std::string zone_path(const std::string& zone) const;
  Task<Result<GceOperation>> wait_for(const std::string& zone, GceOperation op);
  // st, marked interrupted when GCE preempted the (Spot) instance.
  Task<InstanceStatus> with_preemption(const InstanceHandle& h, InstanceStatus st);
  Task<Result<InstanceHandle>> adopt(const InsertSpec& s, const LaunchSpec& spec, double created_at);
  // data: project, zone, instance_id, machine_type, created_at_s and the ownership tag (when known).
  InstanceHandle handle_of(const GceInstance& i, double created_at, std::string_view tag) const;
  // aggregated/instances with labels.<label_key> = tag, every page, every zone.
  Task<Result<std::vector<GceInstance>>> list_labelled(const std::string& tag);

  GceOptions opts_;
  std::unique_ptr<GceApi> api_;
  SystemClock system_clock_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::optional<std::vector<Offer>> catalog_;
  double catalog_at_s_ = 0;
};

}  // namespace tsum::providers::gce
