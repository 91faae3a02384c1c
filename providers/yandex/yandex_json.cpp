#include "providers/yandex/yandex_json.h"

#include "common/json_util.h"

namespace tsum::providers::yandex {

namespace {

const nlohmann::json& child(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  auto it = j.is_object() ? j.find(key) : j.end();
  return it != j.end() ? *it : kNull;
}

bool lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool label_char(char c) { return lower_or_digit(c) || c == '-' || c == '_' || c == '.' || c == '/' || c == '\\' || c == '@'; }

}  // namespace

nlohmann::json create_body(const CreateInstance& c) {
  nlohmann::json resources{{"memory", std::to_string(c.memory_bytes)}, {"cores", std::to_string(c.cores)},
                           {"coreFraction", std::to_string(c.core_fraction)}};
  if (c.gpus > 0) resources["gpus"] = std::to_string(c.gpus);
  return {{"folderId", c.folder_id},
          {"name", c.name},
          {"labels", c.labels},
          {"zoneId", c.zone_id},
          {"platformId", c.platform_id},
          {"resourcesSpec", resources},
          {"metadata", {{"user-data", c.user_data}}},
          {"bootDiskSpec", {{"autoDelete", true},
                            {"diskSpec", {{"typeId", c.disk_type}, {"size", std::to_string(c.disk_bytes)}, {"imageId", c.image_id}}}}},
          {"networkInterfaceSpecs", {{{"subnetId", c.subnet_id},
                                      {"primaryV4AddressSpec", {{"oneToOneNatSpec", {{"ipVersion", "IPV4"}}}}}}}},
          {"schedulingPolicy", {{"preemptible", c.preemptible}}}};
}

Result<YandexInstance> parse_instance(const nlohmann::json& j) {
  YandexInstance i{.id = json_str(j, "id"), .name = json_str(j, "name"), .zone_id = json_str(j, "zoneId"),
                   .platform_id = json_str(j, "platformId"), .status = json_str(j, "status")};
  if (i.id.empty() || i.status.empty()) return make_error(Code::internal, "Compute: an instance without id or status");
  if (const auto& labels = child(j, "labels"); labels.is_object())
    for (const auto& [k, v] : labels.items())
      if (v.is_string()) i.labels[k] = v.get<std::string>();
  if (const auto& nics = child(j, "networkInterfaces"); nics.is_array() && !nics.empty()) {
    const auto& v4 = child(nics[0], "primaryV4Address");
    i.internal_ip = json_str(v4, "address");
    i.nat_ip = json_str(child(v4, "oneToOneNat"), "address");
  }
  return i;
}

Result<YandexOperation> parse_operation(const nlohmann::json& j) {
  if (!j.is_object() || json_str(j, "id").empty()) return make_error(Code::internal, "Operation: an answer without an operation id");
  YandexOperation op{.id = json_str(j, "id"), .instance_id = json_str(child(j, "metadata"), "instanceId")};
  const auto& done = child(j, "done");
  op.done = done.is_boolean() && done.get<bool>();
  if (const auto& e = child(j, "error"); e.is_object()) {
    const auto& code = child(e, "code");
    op.error_code = code.is_number_integer() ? code.get<int>() : 2;  // UNKNOWN
    op.error_message = json_str(e, "message");
  }
  return op;
}

Error operation_error(const std::string& what, const YandexOperation& op) {
  const bool capacity = op.error_code == 8 || op.error_code == 14;
  return make_error(capacity ? Code::unavailable : Code::invalid_argument,
                    what + ": operation " + op.id + " failed with gRPC code " + std::to_string(op.error_code) +
                        (op.error_message.empty() ? "" : ": " + op.error_message));
}

Result<InstancePage> parse_instance_page(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Code::internal, "Compute: an instance listing is not a JSON object");
  InstancePage page{.next_page_token = json_str(j, "nextPageToken")};
  const auto& items = child(j, "instances");
  if (items.is_null()) return page;  // an empty listing leaves the field out
  if (!items.is_array()) return make_error(Code::internal, "Compute: instances is not an array");
  for (const auto& i : items) {
    auto parsed = parse_instance(i);
    if (!parsed) return parsed.error();
    page.items.push_back(std::move(*parsed));
  }
  return page;
}

bool valid_instance_name(std::string_view name) {
  if (name.empty() || name.size() > 63 || !(name[0] >= 'a' && name[0] <= 'z') || name.back() == '-') return false;
  for (char c : name)
    if (!lower_or_digit(c) && c != '-') return false;
  return true;
}

bool valid_label_key(std::string_view key) {
  if (key.empty() || key.size() > 63 || !(key[0] >= 'a' && key[0] <= 'z')) return false;
  for (char c : key)
    if (!label_char(c)) return false;
  return true;
}

bool valid_label_value(std::string_view value) {
  if (value.size() > 63) return false;
  for (char c : value)
    if (!label_char(c)) return false;
  return true;
}

}  // namespace tsum::providers::yandex
