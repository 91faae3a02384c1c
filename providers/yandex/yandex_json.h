// The Yandex Compute JSON tsum writes and reads: the instances.create body, instances, operations and
// instance listings as answered (int64 fields come as strings, proto3's JSON mapping), and the names and
// labels Yandex accepts. Pure functions, no I/O.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::yandex {

using Labels = std::map<std::string, std::string>;

struct CreateInstance {
  std::string folder_id;
  std::string name;
  std::string zone_id;       // e.g. ru-central1-a
  std::string platform_id;   // e.g. standard-v3
  int cores = 2;
  long long memory_bytes = 0;
  int core_fraction = 100;
  int gpus = 0;
  std::string image_id;
  long long disk_bytes = 0;
  std::string disk_type = "network-ssd";
  std::string subnet_id;
  std::string user_data;     // cloud-init, as metadata user-data
  Labels labels = {};
  bool preemptible = false;  // schedulingPolicy.preemptible: stopped within 24 h or when Yandex needs it back
};

nlohmann::json create_body(const CreateInstance& c);

struct YandexInstance {
  std::string id = {};
  std::string name = {};
  std::string zone_id = {};
  std::string platform_id = {};
  std::string status = {};      // PROVISIONING, RUNNING, STOPPING, STOPPED, STARTING, RESTARTING, UPDATING, ERROR, CRASHED, DELETING
  std::string nat_ip = {};      // networkInterfaces[0].primaryV4Address.oneToOneNat.address
  std::string internal_ip = {};
  Labels labels = {};
};

// internal: not an instance (no id or status).
Result<YandexInstance> parse_instance(const nlohmann::json& j);

struct YandexOperation {
  std::string id = {};
  bool done = false;
  std::string instance_id = {};  // metadata.instanceId
  int error_code = 0;            // gRPC code, when done with an error
  std::string error_message = {};
};

Result<YandexOperation> parse_operation(const nlohmann::json& j);

// An operation's error as a tsum error: RESOURCE_EXHAUSTED and UNAVAILABLE are unavailable, the rest
// invalid_argument.
Error operation_error(const std::string& what, const YandexOperation& op);

struct InstancePage {
  std::vector<YandexInstance> items = {};
  std::string next_page_token;
};

Result<InstancePage> parse_instance_page(const nlohmann::json& j);

// Instance names: [a-z]([-a-z0-9]{0,61}[a-z0-9])?
bool valid_instance_name(std::string_view name);
// Label keys: [a-z][-_./\@0-9a-z]{0,62}; values: [-_./\@0-9a-z]{0,63}.
bool valid_label_key(std::string_view key);
bool valid_label_value(std::string_view value);

}  // namespace tsum::providers::yandex
