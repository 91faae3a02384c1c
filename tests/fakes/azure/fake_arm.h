// FakeArm: the stateful part of the fake Azure, the Resource Manager calls tsum makes: resource groups
// (PUT, GET, DELETE, list with a tag $filter), virtual networks (PUT, GET), virtual machines (PUT, GET with
// $expand=instanceView, the subscription's list with statusOnly=true), public IP listings (a group's, the
// subscription's), and the operations they start (Azure-AsyncOperation status and Location operation results).
//
// Model: a group PUT is synchronous. A network or VM PUT that creates answers 201 with provisioningState
// Creating/Updating and an Azure-AsyncOperation URL; the operation reports InProgress for operation_polls
// polls (or until operation_s has passed on the clock, polled or not), then Succeeded, and the resource
// becomes Succeeded. A provisioned VM is PowerState/starting for starting_s, then running, and stopped after
// a guest power-off (fake_cloud/lifecycle.h); its static public IP exists from the PUT on. A PUT of an
// existing resource is an update: 200, nothing new is made, and the operation still running (if any) is
// handed back again. A group DELETE answers 202 with a Location that
// answers 202 until the deletion operation is done; meanwhile the group and its VM read Deleting, and a PUT
// into it is 409 ResourceGroupBeingDeleted; after it everything in the group is gone (404). With an
// allocation failure set, VM operations end Failed with AllocationFailed and the VM reads Failed.
// Bodies that lack what tsum must send (location, vmSize, customData, deleteOption Delete on disk, NIC and
// public IP, a subnet of an existing network in the group, an SSH key) get ARM's 400s.
// Time comes from the given Clock, so a FakeClock drives the lifecycle in tests. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "tests/fakes/cloud/lifecycle.h"
#include "providers/http/http_types.h"

namespace tsum::providers::azure::fake {

struct ArmAnswer {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
  http::HttpHeaders headers = {};
};

// {"error": {"code", "message"}}
ArmAnswer arm_error(int status, const std::string& code, const std::string& message);

struct FakeArmOptions {
  std::string subscription = "00000000-0000-4000-8000-000000000001";
  double cores_quota = 20;  // each location's Total Regional vCPUs (usages)
  double starting_s = 2;
  int operation_polls = 1;
  double operation_s = 30;
  int page_size = 100;  // resource groups, VMs or public IPs per page
};

struct FakeVm {
  std::string group = {};
  std::string name = {};
  std::string location = {};
  std::string size = {};
  std::string image = {};        // publisher:offer:sku:version
  std::string custom_data = {};  // decoded
  std::string admin_username = {};
  std::string ssh_key = {};
  std::map<std::string, std::string> tags = {};
  std::string provisioning_state = {};  // as of now
  std::string power_state = {};         // as of now; empty before provisioning succeeded
  std::string public_ip = {};
  std::string nic_name = {};
  std::string ip_name = {};
  int disk_gb = 0;
  bool all_delete_options = false;       // OS disk, NIC and public IP all deleteOption Delete
  std::string priority = "Regular";      // or Spot
  std::string eviction_policy = {};      // Spot: Delete or Deallocate
  double max_price = 0;                  // Spot: -1 (up to the pay-as-you-go price) or a price per hour
  std::string zone = {};                 // zones[0]: "1", "2" or "3"; empty: none asked
  double created_at_s = 0;
};

struct FakeGroup {
  std::string name = {};
  std::string location = {};
  std::map<std::string, std::string> tags = {};
  std::string provisioning_state = {};  // Succeeded, Deleting
};

// The routed parts of an ARM request: path segments, the decoded query, the body.
struct ArmCall {
  std::string method;
  std::vector<std::string> segments;
  std::map<std::string, std::string> query;
  std::string body;
};

// The ARM operation a call names ("virtualMachines.createOrUpdate", "resourceGroups.list", ...); empty for
// none. Catalog calls (resourceSkus.list) are named too, but FakeArm does not answer them.
std::string arm_method(const ArmCall& c);

class FakeArm {
 public:
  FakeArm(FakeArmOptions opts, const Clock& clock);

  // The URL prefix of the absolute URLs this fake hands out (operations, nextLink).
  void set_base_url(const std::string& url);
  ArmAnswer handle(const std::string& method_name, const ArmCall& c);

  std::vector<FakeGroup> groups() const;
  std::vector<FakeVm> vms() const;
  int vms_created() const;     // VM PUTs that made a new VM, ever
  int groups_created() const;
  Status guest_shutdown(const std::string& group);
  void set_allocation_failure(bool on);
  // An eviction of the running Spot VM `id` (<group>.<vm name>, or its name), as Azure does it: a Preempt event
  // on the VM's Scheduled Events now, and notice_s later (default 30, Azure's minimum) its evictionPolicy applies:
  // Delete removes the VM alone (its group, disks' owner, stays), Deallocate stops it.
  Status interrupt(const std::string& id, std::optional<double> notice_s);
  // GET /metadata/scheduledevents from inside VM `guest_id` (needs the "Metadata: true" header): status and the
  // {"DocumentIncarnation", "Events": [{"EventId", "EventType": "Preempt", "ResourceType", "Resources",
  // "EventStatus": "Scheduled", "NotBefore", "Description", "EventSource": "Platform", "DurationInSeconds"}]}.
  std::pair<int, std::string> scheduled_events(const std::string& guest_id, bool metadata_header) const;

 private:
  ArmAnswer image_versions(const std::string& location, const std::string& publisher, const std::string& offer,
                           const std::string& sku) const;
  struct Vm {
    FakeVm vm = {};
    std::string op = {};  // the create operation
    std::optional<double> provisioned_at_s = {};
    bool failed = false;
    std::optional<double> stopped_at_s = {};  // a guest power-off
    std::optional<double> notice_at_s = {};   // an eviction's Preempt event
    std::optional<double> evict_at_s = {};    // and when its policy applies
    bool evicted(double now) const { return evict_at_s && now >= *evict_at_s; }
  };
  struct Group {
    FakeGroup g;
    std::string delete_op;
    std::map<std::string, std::string> vnets;  // name -> create operation
    std::map<std::string, Vm> vms;
  };
  struct Operation {
    std::string kind;  // vnet, vm, delete
    std::string group, target;
    int polls_left = 0;
    double started_at_s = 0;
    bool done = false;
    bool failed = false;
  };

  ArmAnswer put_group(const std::string& name, const ArmCall& c);
  ArmAnswer get_group(const std::string& name) const;
  ArmAnswer delete_group(const std::string& name, double now);
  ArmAnswer list_groups(const ArmCall& c) const;
  ArmAnswer put_vnet(const std::string& group, const std::string& name, const ArmCall& c, double now);
  ArmAnswer put_vm(const std::string& group, const std::string& name, const ArmCall& c, double now);
  ArmAnswer get_vm(const std::string& group, const std::string& name, bool instance_view, double now) const;
  ArmAnswer list_ips(const std::string& group) const;
  // The subscription's VMs (instance views only with statusOnly=true) or public IPs, page_size a page.
  ArmAnswer list_all(const std::string& method_name, const ArmCall& c, double now) const;
  nlohmann::json ip_json(const FakeVm& v) const;
  ArmAnswer operation(const std::string& id, bool location_style, double now);
  std::string start_operation(const std::string& kind, const std::string& group, const std::string& target, double now);
  void finish(Operation& op, double now);
  void settle(double now);
  std::string async_url(const std::string& location, const std::string& id) const;
  std::string result_url(const std::string& id) const;
  FakeVm vm_as_of(const Vm& v, const Group& g, double now) const;
  nlohmann::json vm_json(const FakeVm& v, bool instance_view) const;
  nlohmann::json group_json(const FakeGroup& g) const;
  Group* find_group(const std::string& name);

  FakeArmOptions opts_;
  fake_cloud::Lifecycle power_;  // of a provisioned VM
  const Clock& clock_;
  std::string base_url_;
  mutable std::mutex mu_;
  std::map<std::string, Group> groups_;  // by lowercase name, as ARM names are case-insensitive
  std::map<std::string, Operation> ops_;
  unsigned long next_id_ = 1;
  int vms_created_ = 0;
  int groups_created_ = 0;
  bool allocation_failure_ = false;
};

}  // namespace tsum::providers::azure::fake
