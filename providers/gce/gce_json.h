// The Compute Engine JSON tsum writes and reads: the instances.insert body, instances and operations as
// answered, aggregated listings, and the names GCE requires (instance names, label keys and values, the
// UUID requestId). Pure functions, no I/O.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::gce {

struct InsertSpec {
  std::string name;
  std::string zone;
  std::string machine_type;                   // e.g. n1-standard-4
  std::string source_image;                   // e.g. projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts
  int disk_gb = 50;
  std::string network = "global/networks/default";
  std::map<std::string, std::string> labels = {};
  std::map<std::string, std::string> metadata = {};  // e.g. user-data
  std::chrono::seconds max_run_duration{0};   // 0: none; else with instanceTerminationAction DELETE
  bool gpus = false;                          // GPU machines cannot live-migrate: onHostMaintenance TERMINATE
  bool spot = false;                          // provisioningModel SPOT, deleted when preempted
};

nlohmann::json insert_body(const InsertSpec& s);

struct GceInstance {
  std::string name = {};
  std::string id = {};
  std::string zone = {};          // short name, e.g. us-central1-a
  std::string machine_type = {};  // short name
  std::string status = {};        // PROVISIONING, STAGING, RUNNING, STOPPING, TERMINATED, ...
  std::string nat_ip = {};        // the first access config's external address, if any
  std::string internal_ip = {};
  std::map<std::string, std::string> labels = {};
};

// internal: not an instance (no name or status).
Result<GceInstance> parse_instance(const nlohmann::json& j);

struct GceOperation {
  std::string name = {};
  std::string status = {};       // PENDING, RUNNING, DONE
  std::string target_id = {};
  std::string error_code = {};   // the first error's code, when DONE with errors
  std::string error_message = {};
};

Result<GceOperation> parse_operation(const nlohmann::json& j);

// An operation's error as a tsum error: stockouts and quotas are unavailable, the rest invalid_argument.
Error operation_error(const std::string& what, const GceOperation& op);

struct InstancePage {
  std::vector<GceInstance> items;
  std::string next_page_token;
};

// aggregated/instances: {"items": {"zones/z": {"instances": [...]} | {"warning": ...}}, "nextPageToken"}.
Result<InstancePage> parse_aggregated_instances(const nlohmann::json& j);

// The last path segment of a resource URL ("…/zones/us-central1-a" -> "us-central1-a").
std::string short_name(std::string_view url);
// The region of a zone ("us-central1-a" -> "us-central1").
std::string region_of(std::string_view zone);

// RFC 1035 names: [a-z]([-a-z0-9]{0,61}[a-z0-9])?
bool valid_resource_name(std::string_view name);
// Label keys: [a-z][a-z0-9_-]{0,62}; values: [a-z0-9_-]{0,63}.
bool valid_label_key(std::string_view key);
bool valid_label_value(std::string_view value);
// 8-4-4-4-12 lowercase hex.
bool valid_uuid(std::string_view id);

// A UUID made from text's SHA-256 (RFC 9562 version 8, "custom"): the same text always gives the same
// requestId.
std::string uuid_for(std::string_view text);

}  // namespace tsum::providers::gce
