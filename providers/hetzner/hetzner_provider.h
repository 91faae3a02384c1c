// The Hetzner Cloud provider: instances are cloud servers in one location, booted from a configured image
// with cloud-init user data (cloud_init/cloud_init.h) that starts the tsum agent.
//   create     POST /servers with labels <label_key>=<tag> and tsum-run=<run id>. Hetzner has no
//              idempotency token, but server names are unique per project and tsum's name derives from the
//              launch's idempotency token: a retried create (a lost answer) meets uniqueness_error and adopts
//              the server of that name when its labels name the same run. The root password Hetzner returns
//              (when no SSH key is given) is dropped unread.
//   describe   GET /servers/{id}: initializing/starting -> pending, running -> running, stopping, off,
//              deleting, rebuilding, migrating, unknown -> exited, 404 -> gone. A powered-off server still
//              bills: only terminate ends the bill.
//   describe_many GET /servers?label_selector=tsum-run (every server tsum made), every page: one listing for
//              all the daemon's live runs; a server it does not list is asked about with describe.
//   terminate  DELETE /servers/{id}; 404 counts as deleted.
//   list_tagged GET /servers?label_selector=<label_key>==<tag>, every page (meta.pagination).
//   offers     GET /server_types, every page: the configured location's net hourly price (EUR, exact
//              decimal), the monthly cap in the note; deprecated types left out. Kept for catalog_ttl.
// Every call goes through HetznerApi: bearer token, retried by HttpClient on 429 and 5xx.
// Not thread-safe: call from one thread (the daemon's io_context).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "providers/cloud_init/cloud_init.h"
#include "providers/hetzner/hetzner_api.h"
#include "providers/hetzner/hetzner_json.h"
#include "providers/provider.h"

namespace tsum::providers::hetzner {

struct HetznerOptions {
  std::string token = {};                  // see resolve_hetzner_login (hetzner_login.h)
  std::string unusable = {};               // no token: why (and the fix); every call fails with it
  std::string endpoint = {};               // base URL override; empty: https://api.hetzner.cloud/v1
  std::string location = "fsn1";
  std::string image = "ubuntu-22.04";
  std::vector<std::string> ssh_keys = {};  // names or ids of project SSH keys; optional
  std::string label_key = "tsum";          // the ownership label's key; its value is LaunchSpec::tag
  CloudInitOptions cloud_init = {};
  http::HttpClientOptions http = {};       // CA file, retry policy
  std::chrono::milliseconds attempt_timeout{30000};
  std::chrono::seconds catalog_ttl{3600};
  const Clock* clock = nullptr;            // null: the system clock
};

class HetznerProvider final : public Provider {
 public:
  // invalid_argument for a missing token or location, a bad label key or a malformed endpoint.
  static Result<std::unique_ptr<HetznerProvider>> make(HetznerOptions opts);

  std::string_view name() const override { return "hetzner"; }
  Capabilities capabilities() const override { return {.gpus = false, .spot = false, .docker = true, .native = true}; }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;

  // The server name for a launch: tsum-<run id, cleaned>-<8 hex of the token's SHA-256>.
  static std::string server_name(const LaunchSpec& spec);

 private:
  HetznerProvider(HetznerOptions opts, std::unique_ptr<HetznerApi> api);
  double now_s() const;
  Result<CreateServer> create_spec(const Offer& offer, const LaunchSpec& spec) const;
  Task<Result<InstanceHandle>> adopt(const CreateServer& c, const LaunchSpec& spec, double created_at);
  Task<Result<std::vector<Offer>>> fetch_catalog();
  InstanceHandle handle_of(const HetznerServer& s, double created_at) const;
  // GET /servers?label_selector=<selector>, every page.
  Task<Result<std::vector<HetznerServer>>> list_servers(const std::string& selector);

  HetznerOptions opts_;
  std::unique_ptr<HetznerApi> api_;
  SystemClock system_clock_;
  std::optional<std::vector<Offer>> catalog_;
  double catalog_at_s_ = 0;
};

}  // namespace tsum::providers::hetzner
