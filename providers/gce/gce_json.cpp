#include "providers/gce/gce_json.h"

#include <algorithm>

#include "providers/http/codec.h"

namespace tsum::providers::gce {

namespace {

bool lower_digit_dash(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

std::string str(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_unsigned()) return std::to_string(it->get<unsigned long long>());
  return {};
}

}  // namespace

nlohmann::json insert_body(const InsertSpec& s) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [k, v] : s.metadata) items.push_back({{"key", k}, {"value", v}});
  // Spot VMs cannot live-migrate either, and are deleted (not stopped) when preempted.
  nlohmann::json scheduling{{"provisioningModel", s.spot ? "SPOT" : "STANDARD"}, {"automaticRestart", false},
                            {"onHostMaintenance", s.gpus || s.spot ? "TERMINATE" : "MIGRATE"}};
  if (s.max_run_duration.count() > 0)
    scheduling["maxRunDuration"] = {{"seconds", std::to_string(s.max_run_duration.count())}};
  if (s.max_run_duration.count() > 0 || s.spot) scheduling["instanceTerminationAction"] = "DELETE";
  return {{"name", s.name},
          {"machineType", "zones/" + s.zone + "/machineTypes/" + s.machine_type},
          {"labels", s.labels},
          {"metadata", {{"items", items}}},
          {"disks", {{{"boot", true}, {"autoDelete", true},
                      {"initializeParams", {{"sourceImage", s.source_image}, {"diskSizeGb", std::to_string(s.disk_gb)}}}}}},
          {"networkInterfaces", {{{"network", s.network},
                                  {"accessConfigs", {{{"type", "ONE_TO_ONE_NAT"}, {"name", "External NAT"}}}}}}},
          {"scheduling", scheduling}};
}

Result<GceInstance> parse_instance(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Code::internal, "Compute: an instance is not a JSON object");
  GceInstance i{str(j, "name"), str(j, "id"), short_name(str(j, "zone")), short_name(str(j, "machineType")),
                str(j, "status")};
  if (i.name.empty() || i.status.empty()) return make_error(Code::internal, "Compute: an instance without name or status");
  if (auto labels = j.find("labels"); labels != j.end() && labels->is_object())
    for (const auto& [k, v] : labels->items())
      if (v.is_string()) i.labels[k] = v.get<std::string>();
  if (auto nics = j.find("networkInterfaces"); nics != j.end() && nics->is_array() && !nics->empty()) {
    const auto& nic = (*nics)[0];
    i.internal_ip = str(nic, "networkIP");
    if (auto ac = nic.find("accessConfigs"); ac != nic.end() && ac->is_array() && !ac->empty())
      i.nat_ip = str((*ac)[0], "natIP");
  }
  return i;
}

Result<GceOperation> parse_operation(const nlohmann::json& j) {
  if (!j.is_object() || str(j, "name").empty() || str(j, "status").empty())
    return make_error(Code::internal, "Compute: the answer is not an operation (no name or status)");
  GceOperation op{str(j, "name"), str(j, "status"), str(j, "targetId")};
  if (auto e = j.find("error"); e != j.end() && e->is_object()) {
    auto errors = e->find("errors");
    if (errors != e->end() && errors->is_array() && !errors->empty() && (*errors)[0].is_object()) {
      op.error_code = str((*errors)[0], "code");
      op.error_message = str((*errors)[0], "message");
    }
    if (op.error_code.empty()) op.error_code = "UNKNOWN_ERROR";
  }
  return op;
}

Error operation_error(const std::string& what, const GceOperation& op) {
  const std::string& c = op.error_code;
  bool transient = c == "ZONE_RESOURCE_POOL_EXHAUSTED" || c == "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS" ||
                   c == "QUOTA_EXCEEDED" || c == "RESOURCE_OPERATION_RATE_EXCEEDED" || c == "INTERNAL_ERROR";
  Code code = c == "RESOURCE_ALREADY_EXISTS" ? Code::already_exists : transient ? Code::unavailable : Code::invalid_argument;
  return make_error(code, what + ": operation " + op.name + " failed: " + c +
                              (op.error_message.empty() ? "" : ": " + op.error_message));
}

Result<InstancePage> parse_aggregated_instances(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Code::internal, "Compute aggregated instances: not a JSON object");
  InstancePage page{{}, str(j, "nextPageToken")};
  auto items = j.find("items");
  if (items == j.end()) return page;
  if (!items->is_object()) return make_error(Code::internal, "Compute aggregated instances: items is not an object");
  for (const auto& [scope, list] : items->items()) {
    auto instances = list.find("instances");
    if (instances == list.end()) continue;  // {"warning": {"code": "NO_RESULTS_ON_PAGE"}}
    if (!instances->is_array()) return make_error(Code::internal, "Compute aggregated instances: " + scope + " is malformed");
    for (const auto& i : *instances) {
      auto parsed = parse_instance(i);
      if (!parsed) return parsed.error();
      page.items.push_back(std::move(*parsed));
    }
  }
  return page;
}

std::string short_name(std::string_view url) {
  auto slash = url.rfind('/');
  return std::string(slash == std::string_view::npos ? url : url.substr(slash + 1));
}

std::string region_of(std::string_view zone) {
  auto dash = zone.rfind('-');
  return std::string(dash == std::string_view::npos ? zone : zone.substr(0, dash));
}

bool valid_resource_name(std::string_view n) {
  return !n.empty() && n.size() <= 63 && n.front() >= 'a' && n.front() <= 'z' && n.back() != '-' &&
         std::all_of(n.begin(), n.end(), lower_digit_dash);
}

bool valid_label_key(std::string_view k) {
  return !k.empty() && k.front() >= 'a' && k.front() <= 'z' && valid_label_value(k);
}

bool valid_label_value(std::string_view v) {
  return v.size() <= 63 && std::all_of(v.begin(), v.end(), [](char c) { return lower_digit_dash(c) || c == '_'; });
}

bool valid_uuid(std::string_view id) {
  if (id.size() != 36) return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    bool dash_at = i == 8 || i == 13 || i == 18 || i == 23;
    char c = id[i];
    if (dash_at ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string uuid_for(std::string_view text) {
  std::string h = http::sha256_hex(text).substr(0, 32);
  h[12] = '8';                                          // version 8: custom
  h[16] = "89ab"[(h[16] >= 'a' ? h[16] - 'a' + 10 : h[16] - '0') & 3];  // variant 10xx
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

}  // namespace tsum::providers::gce
