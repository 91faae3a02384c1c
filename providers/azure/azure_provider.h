// The Azure provider: every launch gets a resource group of its own in one location, tagged
// <tag_name>=<tag> and tsum-run=<run id>, holding a virtual network and one Linux VM booted from a
// marketplace image with cloud-init custom data (cloud_init/cloud_init.h) that starts the tsum agent.
//   create     GET the group (a group of that name tagged for another run is already_exists), PUT the
//              group, PUT the network and wait for it, PUT the VM and wait for its Azure-AsyncOperation,
//              polling until operation_deadline. The VM creates its NIC and static public IP itself;
//              OS disk, NIC and IP are deleteOption Delete. Every name derives from the launch's
//              idempotency token and every call is a PUT, so a retry after a lost answer (HttpClient's, or
//              a daemon's create again) finds the same resources instead of making new ones. A VM whose
//              provisioning fails gets its group deleted (not waited for) and the error back: allocation
//              and SKU failures unavailable, the rest invalid_argument. A wait that runs out is a timeout and
//              leaves the group: a later create for the launch carries on where it was, or the sweep finds it.
//   describe   GET the VM with $expand=instanceView: provisioning Creating or PowerState starting (or none
//              yet) -> pending, PowerState running -> running, stopped, deallocated, Deleting, Failed ->
//              exited, 404 (the VM or its group) -> gone. The address is the group's public IP.
//   describe_many  two listings for all of the daemon's live runs, every nextLink followed: the subscription's
//              VMs with statusOnly=true (their instance views) and its public IPs; each handle is answered as
//              describe would. A VM not in the listing (being created, or gone) is asked about alone with
//              describe. A listing that fails gives every handle its error. ARM throttles a subscription's
//              reads, so one poll a second of N runs costs 2 reads, not 2N.
//   terminate  DELETE the resource group (everything in it goes) and poll its Location until the group is
//              gone or delete_deadline passes (timeout; calling again is safe). 404 counts as deleted.
//   list_tagged resource groups with $filter=tagName eq '<tag_name>' and tagValue eq '<tag>', every page.
//   offers     azure_catalog.h, fetched on first use and kept for catalog_ttl.
// Handles: id = the resource group's name; data holds subscription, location, vm and vm_size.
// Every ARM call goes through AzureApi: the login's OAuth2 tokens, retried by HttpClient on 429 and 5xx.
// Not thread-safe: call from one thread (the daemon's io_context).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "providers/azure/azure_api.h"
#include "providers/azure/azure_json.h"
#include "providers/cloud_init/cloud_init.h"
#include "providers/provider.h"

namespace tsum::providers::azure {

struct AzureOptions {
  AzureCredentials credentials = {};       // the login (azure_login.h) and the subscription
  std::string unusable = {};               // no login: every call fails with this (why, and the fix)
  std::string location = "westeurope";
  std::string login_endpoint = {};         // base URL overrides; empty: Azure's public cloud
  std::string management_endpoint = {};
  std::string prices_endpoint = {};
  ImageReference image = {};               // Ubuntu 22.04 LTS gen2: has cloud-init
  int disk_gb = 64;
  std::string admin_username = "tsum";
  std::string ssh_public_key = {};         // empty: a throwaway key (ssh_key.h); nobody logs in
  std::string tag_name = "tsum";           // the ownership tag's name; its value is LaunchSpec::tag
  CloudInitOptions cloud_init = {};
  http::HttpClientOptions http = {};       // CA file, retry policy
  std::chrono::milliseconds attempt_timeout{30000};
  std::chrono::milliseconds operation_deadline{std::chrono::minutes(10)};
  std::chrono::milliseconds delete_deadline{std::chrono::minutes(15)};
  std::chrono::milliseconds operation_poll{5000};
  std::chrono::seconds catalog_ttl{3600};
  const Clock* clock = nullptr;            // null: the system clock
};

class AzureProvider final : public Provider {
 public:
  // invalid_argument for missing credentials or subscription, a bad location or tag name, or a malformed
  // endpoint.
  static Result<std::unique_ptr<AzureProvider>> make(AzureOptions opts);

  std::string_view name() const override { return "azure"; }
  Capabilities capabilities() const override { return {.gpus = true, .spot = true, .docker = true, .native = true}; }
  Task<Result<std::vector<Offer>>> offers(const Requirements& req) override;
  Task<Result<InstanceHandle>> create(const Offer& offer, const LaunchSpec& spec) override;
  Task<Result<InstanceStatus>> describe(const InstanceHandle& h) override;
  Task<std::vector<Result<InstanceStatus>>> describe_many(const std::vector<InstanceHandle>& handles) override;
  Task<Status> terminate(const InstanceHandle& h) override;
  Task<Result<std::vector<InstanceHandle>>> list_tagged(std::string_view tag) override;
  // The location's usages: "virtualMachines", and "cores" (Total Regional vCPUs) over the fewest vCPUs of the
  // offers.
  Task<Result<MachineQuota>> machine_quota() override;

  // The resource group (and VM) name for a launch: tsum-<run id, cleaned>-<8 hex of the token's SHA-256>.
  static std::string group_name(const LaunchSpec& spec);

 private:
  AzureProvider(AzureOptions opts, std::unique_ptr<AzureApi> api);
  double now_s() const;
  std::string group_path(const std::string& group) const;
  // The VM for a launch; makes the throwaway SSH key on first use when none is configured.
  Result<VmSpec> vm_spec(const Offer& offer, const LaunchSpec& spec);  // boots offer.image, else the configured image
  Task<ImageReference> current_image();
  Task<Status> claim_group(const VmSpec& vm, const LaunchSpec& spec);
  Task<Status> wait_for(const std::string& what, const ArmReply& reply, std::chrono::milliseconds deadline);
  Task<Result<std::string>> public_ip(const std::string& group);
  Task<Result<std::vector<nlohmann::json>>> list_all(const std::string& path, const std::string& what);  // every page
  InstanceHandle handle_of(const std::string& group, const std::string& location, const std::string& size,
                           double created_at) const;

  AzureOptions opts_;
  std::unique_ptr<AzureApi> api_;
  std::string ssh_public_key_;
  SystemClock system_clock_;
  std::optional<std::vector<Offer>> catalog_;
  double catalog_at_s_ = 0;
};

}  // namespace tsum::providers::azure
