#include "providers/azure/azure_json.h"

#include <cctype>

#include "common/json_util.h"
#include "providers/http/codec.h"

namespace tsum::providers::azure {

namespace {

const nlohmann::json& child(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kNull;
}

std::string ip_address(const nlohmann::json& ip) { return ip.is_object() ? json_str(child(ip, "properties"), "ipAddress") : ""; }

Tags tags_of(const nlohmann::json& j) {
  Tags out;
  const auto& t = child(j, "tags");
  if (!t.is_object()) return out;
  for (const auto& [k, v] : t.items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

}  // namespace

nlohmann::json group_body(const std::string& location, const Tags& tags) {
  return {{"location", location}, {"tags", tags}};
}

nlohmann::json vnet_body(const std::string& location, const Tags& tags) {
  return {{"location", location},
          {"tags", tags},
          {"properties",
           {{"addressSpace", {{"addressPrefixes", {"10.0.0.0/16"}}}},
            {"subnets", {{{"name", "default"}, {"properties", {{"addressPrefix", "10.0.0.0/24"}}}}}}}}};
}

nlohmann::json vm_body(const VmSpec& s) {
  nlohmann::json public_ip{{"name", s.name + "-ip"},
                           {"sku", {{"name", "Standard"}}},
                           {"properties", {{"deleteOption", "Delete"}, {"publicIPAllocationMethod", "Static"}}}};
  nlohmann::json ip_config{{"name", "ipconfig1"},
                           {"properties", {{"subnet", {{"id", s.subnet_id}}}, {"publicIPAddressConfiguration", public_ip}}}};
  nlohmann::json nic{{"name", s.name + "-nic"},
                     {"properties", {{"primary", true}, {"deleteOption", "Delete"}, {"ipConfigurations", {ip_config}}}}};
  nlohmann::json linux_config{{"disablePasswordAuthentication", true},
                              {"ssh", {{"publicKeys", {{{"path", "/home/" + s.admin_username + "/.ssh/authorized_keys"},
                                                        {"keyData", s.ssh_public_key}}}}}}};
  nlohmann::json body{{"location", s.location},
          {"tags", s.tags},
          {"properties",
           {{"hardwareProfile", {{"vmSize", s.size}}},
            {"storageProfile",
             {{"imageReference", {{"publisher", s.image.publisher}, {"offer", s.image.offer}, {"sku", s.image.sku},
                                  {"version", s.image.version}}},
              {"osDisk", {{"createOption", "FromImage"}, {"deleteOption", "Delete"}, {"diskSizeGB", s.disk_gb},
                          {"managedDisk", {{"storageAccountType", "StandardSSD_LRS"}}}}}}},
            {"osProfile", {{"computerName", s.name}, {"adminUsername", s.admin_username},
                           {"customData", http::base64_encode(s.user_data)}, {"linuxConfiguration", linux_config}}},
            {"networkProfile", {{"networkApiVersion", "2020-11-01"}, {"networkInterfaceConfigurations", {nic}}}}}}};
  if (s.spot)
    body["properties"].update({{"priority", "Spot"}, {"evictionPolicy", "Delete"}, {"billingProfile", {{"maxPrice", -1}}}});
  if (!s.zone.empty()) body["zones"] = {s.zone};
  return body;
}

Result<AzureVm> parse_vm(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Code::internal, "ARM: a virtual machine is not a JSON object");
  const auto& props = child(j, "properties");
  AzureVm vm{.name = json_str(j, "name"), .group = group_of_id(json_str(j, "id")), .tags = tags_of(j)};
  if (props.is_object()) {
    vm.provisioning_state = json_str(props, "provisioningState");
    vm.vm_size = json_str(child(props, "hardwareProfile"), "vmSize");
    const auto& view = child(props, "instanceView");
    auto statuses = view.is_object() ? view.find("statuses") : view.end();
    if (view.is_object() && statuses != view.end() && statuses->is_array()) {
      for (const auto& s : *statuses) {
        const std::string code = s.is_object() ? json_str(s, "code") : "";
        if (code.starts_with("PowerState/")) {
          vm.power_state = code.substr(11);
        } else if (code.starts_with("ProvisioningState/") && vm.provisioning_state.empty()) {
          vm.provisioning_state = code.substr(18, code.find('/', 18) - 18);  // "failed/AllocationFailed" -> failed
          auto& state = vm.provisioning_state;
          if (!state.empty()) state[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(state[0])));
        }
      }
    }
  }
  if (vm.name.empty() || vm.provisioning_state.empty())
    return make_error(Code::internal, "ARM: a virtual machine without name or provisioningState");
  return vm;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string group_of_id(std::string_view id) {
  const std::string lower = ascii_lower(id);
  const std::string_view key = "/resourcegroups/";
  const auto at = lower.find(key);
  if (at == std::string::npos) return {};
  const auto begin = at + key.size(), end = lower.find('/', begin);
  return lower.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

ArmPage parse_page(const nlohmann::json& j) {
  ArmPage out;
  if (!j.is_object()) return out;
  if (auto v = j.find("value"); v != j.end() && v->is_array()) out.value.assign(v->begin(), v->end());
  out.next_link = json_str(j, "nextLink");
  return out;
}

std::string first_public_ip(const nlohmann::json& listing) {
  auto value = listing.find("value");
  if (value == listing.end() || !value->is_array()) return {};
  for (const auto& ip : *value)
    if (std::string a = ip_address(ip); !a.empty()) return a;
  return {};
}

std::map<std::string, std::string> public_ips_by_group(const std::vector<nlohmann::json>& items) {
  std::map<std::string, std::string> out;
  for (const auto& ip : items)
    if (std::string a = ip_address(ip); !a.empty()) out.try_emplace(group_of_id(json_str(ip, "id")), a);
  return out;
}

Result<AsyncStatus> parse_async_status(const nlohmann::json& j) {
  AsyncStatus out{.status = j.is_object() ? json_str(j, "status") : ""};
  if (out.status.empty()) return make_error(Code::internal, "ARM: an asynchronous operation without a status");
  if (const auto& e = child(j, "error"); e.is_object()) {
    out.error_code = json_str(e, "code");
    out.error_message = json_str(e, "message");
  }
  return out;
}

Result<ResourceGroup> parse_group(const nlohmann::json& j) {
  if (!j.is_object() || json_str(j, "name").empty()) return make_error(Code::internal, "ARM: a resource group without a name");
  return ResourceGroup{.name = json_str(j, "name"), .location = json_str(j, "location"),
                       .provisioning_state = json_str(child(j, "properties"), "provisioningState"), .tags = tags_of(j)};
}

Result<GroupPage> parse_group_page(const nlohmann::json& j) {
  auto value = j.find("value");
  if (!j.is_object() || value == j.end() || !value->is_array())
    return make_error(Code::internal, "ARM: a resource group listing without a value array");
  GroupPage out{.next_link = json_str(j, "nextLink")};
  for (const auto& g : *value) {
    auto parsed = parse_group(g);
    if (!parsed) return parsed.error();
    out.items.push_back(std::move(*parsed));
  }
  return out;
}

bool valid_group_name(std::string_view name) {
  if (name.empty() || name.size() > 90 || name.back() == '.') return false;
  for (char c : name)
    if (!alnum(c) && c != '_' && c != '-' && c != '.' && c != '(' && c != ')') return false;
  return true;
}

bool valid_location(std::string_view location) {
  if (location.empty() || location.size() > 40) return false;
  for (char c : location)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

bool valid_tag_text(std::string_view text) {
  if (text.empty() || text.size() > 256) return false;
  for (char c : text)
    if (!alnum(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

}  // namespace tsum::providers::azure
