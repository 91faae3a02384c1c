// FakeCompute: the stateful part of the fake GCE, Compute Engine's instance lifecycle behind
// instances.insert/get/delete, aggregated/instances and zoneOperations.get, as tsum uses them.
//
// Model (fake_cloud/lifecycle.h): an inserted instance is PROVISIONING for provisioning_s, STAGING for staging_s (its natIP shows
// from here), then RUNNING. instances.delete makes it STOPPING for stopping_s, then it is gone (404). A
// guest power-off makes it STOPPING, then TERMINATED (stopped; it still exists). Past maxRunDuration the
// instanceTerminationAction applies: DELETE -> STOPPING -> gone, STOP -> STOPPING -> TERMINATED.
// Operations stay RUNNING for operation_s after they start (an insert's own answer always says RUNNING).
// requestId: a repeated insert or delete with the same requestId within request_id_ttl_s returns the first
// call's operation and does nothing more. An insert whose name is taken by a live instance is 409
// alreadyExists. With a stockout set (or a zone's Spot capacity used up: set_spot_capacity), insert operations
// end in ZONE_RESOURCE_POOL_EXHAUSTED and create nothing. Bodies with unknown fields, bad names, labels or scheduling get Compute's 400s.
// Time comes from the given Clock, so a FakeClock drives the lifecycle in tests. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "tests/fakes/cloud/lifecycle.h"
#include "tests/fakes/gce/fake_gce_catalog.h"

namespace tsum::providers::gce::fake {

inline const std::vector<std::string> kFakeZones{"us-central1-a", "us-central1-b", "europe-west4-a"};

struct FakeComputeOptions {
  std::string project = "tsum-fake";
  double provisioning_s = 1;
  double staging_s = 1;
  double stopping_s = 2;
  double operation_s = 0;
  double request_id_ttl_s = 3600;
  int page_size = 500;  // caps every page whatever maxResults asks, so tests can force pagination
  double cpus_quota = 24;  // each region's CPUS quota (regions.get), a new project's
};

struct FakeGceInstance {
  std::string name = {};
  std::string id = {};
  std::string zone = {};
  std::string machine_type = {};
  std::string status = {};  // as of now
  std::string nat_ip = {};  // shown from STAGING on
  std::string internal_ip = {};
  std::string source_image = {};
  std::map<std::string, std::string> labels = {};
  std::map<std::string, std::string> metadata = {};
  long max_run_duration_s = 0;
  std::string termination_action = {};
  std::string on_host_maintenance = {};
  std::string provisioning_model = "STANDARD";  // or SPOT
  double created_at_s = 0;
};

// The routed parts of a Compute request: segments of the path below compute/v1/, and the query.
struct ComputeCall {
  std::string method;
  std::vector<std::string> segments;
  std::map<std::string, std::string> query;
  std::string body;
};

// The API method a call names ("instances.insert", "zoneOperations.get", ...); empty for none.
std::string compute_method(const ComputeCall& c);

class FakeCompute {
 public:
  FakeCompute(FakeComputeOptions opts, const Clock& clock);

  JsonAnswer handle(const ComputeCall& c);

  // Every instance that exists now, with its status as of now, in creation order.
  std::vector<FakeGceInstance> instances() const;
  // How many instances were ever created.
  int created() const;
  // The guest powered itself off. not_found for an unknown or gone instance.
  Status guest_shutdown(const std::string& zone, const std::string& name);
  void set_stockout(bool on);
  // The Spot VMs `zone` can still start (nullopt: as many as asked); at 0 a Spot insert there is a stockout.
  void set_spot_capacity(const std::string& zone, std::optional<int> left);
  // A preemption (FakeCloudApi::interrupt) of the Spot VM named `name` (or with that id): its metadata's
  // instance/preempted turns TRUE now, and notice_s later (default 30, GCE's) its instanceTerminationAction
  // applies (DELETE: STOPPING, then gone), recorded as a compute.instances.preempted operation of its zone.
  // not_found: no such instance up; invalid_argument: a STANDARD one.
  Status interrupt(const std::string& name, std::optional<double> notice_s);
  // GET /computeMetadata/v1/instance/preempted (and instance/id, instance/name) from inside the instance with
  // that id; Metadata-Flavor: Google required (else 403).
  // Its status and plain-text body.
  std::pair<int, std::string> metadata(const std::string& path, const std::string& flavor, const std::string& id);

 private:
  struct Record {
    FakeGceInstance inst;
    fake_cloud::Timeline t;  // halted: a guest power-off
    std::optional<double> preempted_at_s = {};  // the notice; the termination action applies notice_s later
  };
  struct Operation {
    std::string name = {}, id = {}, zone = {}, type = {}, target = {}, target_id = {};
    std::string error_code = {}, error_message = {};
    double started_at_s = 0, done_at_s = 0;
  };

  JsonAnswer insert(const std::string& zone, const ComputeCall& c);
  JsonAnswer get(const std::string& zone, const std::string& name);
  JsonAnswer remove(const std::string& zone, const std::string& name, const ComputeCall& c);
  JsonAnswer aggregated(const ComputeCall& c);
  JsonAnswer operation(const std::string& zone, const std::string& name);
  JsonAnswer list_operations(const std::string& zone, const ComputeCall& c);
  std::optional<JsonAnswer> replay(const ComputeCall& c, double now);
  Operation& start_operation(const std::string& zone, const std::string& type, const Record* target, double now,
                             const ComputeCall& c);
  std::string status_of(const Record& r, double now) const;
  Record* find(const std::string& zone, const std::string& name, double now);
  nlohmann::json instance_json(const Record& r, double now) const;
  nlohmann::json operation_json(const Operation& op, double now, bool fresh) const;
  std::string zone_url(const std::string& zone) const;
  JsonAnswer image_from_family(const std::string& project, const std::string& family) const;

  FakeComputeOptions opts_;
  fake_cloud::Lifecycle life_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<Record> records_;
  std::map<std::string, Operation> operations_;
  std::map<std::string, std::pair<std::string, double>> by_request_id_;  // requestId -> operation, when
  unsigned long next_id_ = 1;
  bool stockout_ = false;
  std::map<std::string, int> spot_left_;  // by zone; absent: no limit
};

}  // namespace tsum::providers::gce::fake
