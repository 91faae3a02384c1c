// FakeYandexCompute: the stateful part of the fake Yandex Cloud, Compute's instance lifecycle behind
// instances create/get/list/delete and the Operation API, as tsum uses them.
//
// Model (fake_cloud/lifecycle.h): a created instance is PROVISIONING for provisioning_s, STARTING for starting_s (its addresses show
// from here), then RUNNING. Its create operation reports done:false for operation_polls polls (or until
// operation_s has passed on the clock, polled or not), then done. A delete makes the instance DELETING and
// starts an operation that ends the same way; when it is done the instance is gone (404). A guest power-off
// makes it STOPPING for stopping_s, then STOPPED. Names are unique in a folder among instances not yet gone: a create with a taken name is
// 409 ALREADY_EXISTS. Listings need the folderId, page by pageSize (capped at page_size) and nextPageToken,
// and filter only by name="..." (labels cannot be filtered: the real API cannot either). Bodies with bad
// names, labels, platforms, resources, or without user-data, image or subnet get 400 INVALID_ARGUMENT.
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

namespace tsum::providers::yandex::fake {

struct YcAnswer {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
};

// {"code": <gRPC code for the status>, "message": ..., "details": []}
YcAnswer yc_error(int status, const std::string& message);

struct FakeYandexComputeOptions {
  std::string folder_id = "b1gfakefolder0000001";
  double provisioning_s = 1;
  double starting_s = 1;
  double stopping_s = 1;
  int operation_polls = 1;
  double operation_s = 30;
  int page_size = 1000;
};

struct FakeInstance {
  std::string id = {};
  std::string name = {};
  std::string zone_id = {};
  std::string platform_id = {};
  int cores = 0;
  long long memory_bytes = 0;
  int gpus = 0;
  std::string status = {};  // as of now
  std::string nat_ip = {};
  std::string internal_ip = {};
  std::string image_id = {};
  std::string subnet_id = {};
  bool disk_auto_delete = false;
  std::string user_data = {};
  std::map<std::string, std::string> labels = {};
  bool preemptible = false;  // schedulingPolicy.preemptible
};

// A Compute call: method, the path below compute/v1/ split at '/', the decoded query, the body.
struct ComputeCall {
  std::string method;
  std::vector<std::string> segments;
  std::map<std::string, std::string> query;
  std::string body;
};

// "instances.create", "instances.get", "instances.list", "instances.delete"; empty for none.
std::string compute_method(const ComputeCall& c);

class FakeYandexCompute {
 public:
  FakeYandexCompute(FakeYandexComputeOptions opts, const Clock& clock);

  YcAnswer handle(const std::string& method, const ComputeCall& c);
  YcAnswer operation(const std::string& id);

  std::vector<FakeInstance> instances() const;  // every instance not yet gone, in creation order
  int created() const;
  Status guest_shutdown(const std::string& id);

 private:
  struct Record {
    FakeInstance inst = {};
    fake_cloud::Timeline t = {};  // deleted: its delete operation started; halted: a guest power-off
    std::string delete_op = {};
  };
  struct Operation {
    std::string id, kind, instance_id, description;
    int polls_left = 0;
    double started_at_s = 0;
    bool done = false;
  };

  YcAnswer create(const ComputeCall& c, double now);
  YcAnswer get(const std::string& id, double now) const;
  YcAnswer list(const ComputeCall& c, double now) const;
  YcAnswer remove(const std::string& id, double now);
  Operation& start_operation(const std::string& kind, const std::string& instance_id, double now);
  void finish(Operation& op);
  void settle(double now);
  FakeInstance as_of(const Record& r, double now) const;
  nlohmann::json instance_json(const FakeInstance& i) const;
  nlohmann::json operation_json(const Operation& op) const;
  Record* find(const std::string& id);

  FakeYandexComputeOptions opts_;
  fake_cloud::Lifecycle life_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<Record> records_;
  std::map<std::string, Operation> ops_;
  unsigned long next_id_ = 1;
  int created_ = 0;
};

}  // namespace tsum::providers::yandex::fake
