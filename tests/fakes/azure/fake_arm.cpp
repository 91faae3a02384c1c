#include "tests/fakes/azure/fake_arm.h"

#include <ctime>

#include <algorithm>

#include "providers/azure/azure_json.h"
#include "tests/fakes/azure/fake_azure_catalog.h"
#include "tests/fakes/cloud/pagination.h"
#include "providers/http/codec.h"
#include "tests/fakes/cloud/json_body.h"

namespace tsum::providers::azure::fake {

using fake_cloud::text_at;
using fake_cloud::value_at;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  return s;
}

bool ieq(const std::string& a, std::string_view b) { return lower(a) == lower(std::string(b)); }

// tags: an object of strings, each valid; nullopt when not.
std::optional<std::map<std::string, std::string>> tags_of(const nlohmann::json& body) {
  std::map<std::string, std::string> out;
  auto t = body.find("tags");
  if (t == body.end()) return out;
  if (!t->is_object()) return std::nullopt;
  for (const auto& [k, v] : t->items()) {
    if (!v.is_string() || k.empty() || k.size() > 512 || v.get<std::string>().size() > 256) return std::nullopt;
    out[k] = v.get<std::string>();
  }
  return out;
}

ArmAnswer invalid(const std::string& message) { return arm_error(400, "InvalidRequestContent", message); }

ArmAnswer group_not_found(const std::string& name) {
  return arm_error(404, "ResourceGroupNotFound", "Resource group '" + name + "' could not be found.");
}

// "tagName eq 'a' and tagValue eq 'b'" or "tagName eq 'a'": {name, value (nullopt: any)}; nullopt: unsupported.
std::optional<std::pair<std::string, std::optional<std::string>>> tag_filter(const std::string& f) {
  auto quoted = [&](std::string_view prefix, std::size_t from) -> std::optional<std::pair<std::string, std::size_t>> {
    if (f.compare(from, prefix.size(), prefix) != 0) return std::nullopt;
    auto start = from + prefix.size();
    auto end = f.find('\'', start);
    if (end == std::string::npos) return std::nullopt;
    return std::make_pair(f.substr(start, end - start), end + 1);
  };
  auto name = quoted("tagName eq '", 0);
  if (!name) return std::nullopt;
  if (name->second == f.size()) return std::make_pair(name->first, std::optional<std::string>());
  auto value = quoted(" and tagValue eq '", name->second);
  if (!value || value->second != f.size()) return std::nullopt;
  return std::make_pair(name->first, std::optional<std::string>(value->first));
}

}  // namespace

ArmAnswer arm_error(int status, const std::string& code, const std::string& message) {
  return {status, {{"error", {{"code", code}, {"message", message}}}}, {}};
}

std::string arm_method(const ArmCall& c) {
  const auto& s = c.segments;
  if (s.size() < 2 || s[0] != "subscriptions") return {};
  const std::string& m = c.method;
  if (s.size() == 3 && ieq(s[2], "resourcegroups") && m == "GET") return "resourceGroups.list";
  if (s.size() == 4 && ieq(s[2], "resourcegroups")) {
    if (m == "PUT") return "resourceGroups.createOrUpdate";
    if (m == "GET") return "resourceGroups.get";
    if (m == "DELETE") return "resourceGroups.delete";
    return {};
  }
  if (s.size() == 4 && ieq(s[2], "operationresults") && m == "GET") return "operationResults.get";
  if (s.size() == 5 && ieq(s[2], "providers") && ieq(s[3], "Microsoft.Compute") && ieq(s[4], "skus") && m == "GET")
    return "resourceSkus.list";
  const auto subscription_wide = [&](const char* ns, const char* type) {
    return s.size() == 5 && ieq(s[2], "providers") && ieq(s[3], ns) && ieq(s[4], type) && m == "GET";
  };
  if (subscription_wide("Microsoft.Compute", "virtualMachines")) return "virtualMachines.listAll";
  if (s.size() == 15 && ieq(s[2], "providers") && ieq(s[3], "Microsoft.Compute") && ieq(s[4], "locations") &&
      ieq(s[6], "publishers") && ieq(s[8], "artifacttypes") && ieq(s[9], "vmimage") && ieq(s[10], "offers") &&
      ieq(s[12], "skus") && ieq(s[14], "versions") && m == "GET")
    return "virtualMachineImages.list";
  if (s.size() == 7 && ieq(s[2], "providers") && ieq(s[3], "Microsoft.Compute") && ieq(s[4], "locations") &&
      ieq(s[6], "usages") && m == "GET")
    return "usage.list";
  if (subscription_wide("Microsoft.Network", "publicIPAddresses")) return "publicIPAddresses.listAll";
  if (s.size() == 8 && ieq(s[2], "providers") && ieq(s[4], "locations") && ieq(s[6], "operations") && m == "GET")
    return "operations.get";
  if (s.size() < 7 || !ieq(s[2], "resourcegroups") || !ieq(s[4], "providers")) return {};
  const std::string type = lower(s[5] + "/" + s[6]);
  if (s.size() == 7 && type == "microsoft.network/publicipaddresses" && m == "GET") return "publicIPAddresses.list";
  if (s.size() != 8) return {};
  const std::string verb = m == "PUT" ? ".createOrUpdate" : m == "GET" ? ".get" : "";
  if (verb.empty()) return {};
  if (type == "microsoft.network/virtualnetworks") return "virtualNetworks" + verb;
  if (type == "microsoft.compute/virtualmachines") return "virtualMachines" + verb;
  return {};
}

// The marketplace images' versions in a location, unsorted as Azure lists them: a bare JSON array.
ArmAnswer FakeArm::image_versions(const std::string& location, const std::string& publisher, const std::string& offer,
                                  const std::string& sku) const {
  static const std::map<std::string, std::vector<std::string>> kImages = {
      {"canonical/0001-com-ubuntu-server-jammy/22_04-lts-gen2", {"22.04.202309200", "22.04.202611200", "22.04.202610150", "22.04.9"}},
      {"debian/debian-12/12-gen2", {"0.20261110.1234", "0.20260901.1000"}}};
  auto it = kImages.find(lower(publisher + "/" + offer + "/" + sku));
  if (it == kImages.end()) return arm_error(404, "NotFound", "Artifact: VMImage was not found.");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : it->second)
    out.push_back({{"location", location}, {"name", v},
                   {"id", "/Subscriptions/" + opts_.subscription + "/Providers/Microsoft.Compute/Locations/" + location +
                              "/Publishers/" + publisher + "/ArtifactTypes/VMImage/Offers/" + offer + "/Skus/" + sku + "/Versions/" + v}});
  return {200, out, {}};
}

FakeArm::FakeArm(FakeArmOptions opts, const Clock& clock)
    : opts_(std::move(opts)), power_{.boot = {{"starting", opts_.starting_s}, {"running"}}, .halt = {{"stopped"}}}, clock_(clock) {}

void FakeArm::set_base_url(const std::string& url) {
  std::lock_guard lock(mu_);
  base_url_ = url;
}

ArmAnswer FakeArm::handle(const std::string& method_name, const ArmCall& c) {
  const auto& s = c.segments;
  if (s[1] != opts_.subscription)
    return arm_error(404, "SubscriptionNotFound", "The subscription '" + s[1] + "' could not be found.");
  if (!c.query.contains("api-version"))
    return arm_error(400, "MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests.");
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  settle(now);
  if (method_name == "resourceGroups.list") return list_groups(c);
  if (method_name == "resourceGroups.createOrUpdate") return put_group(s[3], c);
  if (method_name == "resourceGroups.get") return get_group(s[3]);
  if (method_name == "resourceGroups.delete") return delete_group(s[3], now);
  if (method_name == "operationResults.get") return operation(s[3], true, now);
  if (method_name == "operations.get") return operation(s[7], false, now);
  if (method_name == "virtualNetworks.createOrUpdate") return put_vnet(s[3], s[7], c, now);
  if (method_name == "virtualMachines.createOrUpdate") return put_vm(s[3], s[7], c, now);
  if (method_name == "virtualMachines.get") return get_vm(s[3], s[7], c.query.contains("$expand") && c.query.at("$expand") == "instanceView", now);
  if (method_name == "publicIPAddresses.list") return list_ips(s[3]);
  if (method_name == "virtualMachineImages.list") return image_versions(s[5], s[7], s[11], s[13]);
  if (method_name == "usage.list") {  // a pay-as-you-go subscription's regional limits
    auto usage = [](const char* name, const char* shown, double limit) {
      return nlohmann::json{{"name", {{"value", name}, {"localizedValue", shown}}}, {"limit", limit}, {"currentValue", 0}, {"unit", "Count"}};
    };
    return {200, {{"value", {usage("availabilitySets", "Availability Sets", 2500), usage("cores", "Total Regional vCPUs", opts_.cores_quota),
                             usage("virtualMachines", "Virtual Machines", 25000),
                             usage("standardDSv5Family", "Standard DSv5 Family vCPUs", opts_.cores_quota)}}}, {}};
  }
  if (method_name == "virtualMachines.listAll" || method_name == "publicIPAddresses.listAll")
    return list_all(method_name, c, now);
  if (method_name == "virtualNetworks.get") {
    Group* g = find_group(s[3]);
    if (!g) return group_not_found(s[3]);
    if (!g->vnets.contains(lower(s[7]))) return arm_error(404, "ResourceNotFound", "The Resource 'Microsoft.Network/virtualNetworks/" + s[7] + "' was not found.");
    return {200, {{"name", s[7]}, {"properties", {{"provisioningState", ops_[g->vnets[lower(s[7])]].done ? "Succeeded" : "Updating"}}}}, {}};
  }
  return arm_error(400, "InvalidResourceType", "This fake does not serve " + method_name);
}

FakeArm::Group* FakeArm::find_group(const std::string& name) {
  auto it = groups_.find(lower(name));
  return it == groups_.end() ? nullptr : &it->second;
}

std::string FakeArm::async_url(const std::string& location, const std::string& id) const {
  return base_url_ + "/subscriptions/" + opts_.subscription + "/providers/Microsoft.Compute/locations/" + location +
         "/operations/" + id + "?api-version=" + std::string(kComputeApi);
}

std::string FakeArm::result_url(const std::string& id) const {
  return base_url_ + "/subscriptions/" + opts_.subscription + "/operationresults/" + id + "?api-version=" + std::string(kResourcesApi);
}

std::string FakeArm::start_operation(const std::string& kind, const std::string& group, const std::string& target, double now) {
  std::string id = "op-" + std::to_string(next_id_++);
  ops_[id] = {.kind = kind, .group = lower(group), .target = lower(target), .polls_left = opts_.operation_polls, .started_at_s = now};
  return id;
}

void FakeArm::finish(Operation& op, double now) {
  op.done = true;
  Group* g = find_group(op.group);
  if (!g) return;
  if (op.kind == "vm") {
    auto v = g->vms.find(op.target);
    if (v == g->vms.end()) return;
    op.failed = allocation_failure_;
    v->second.failed = op.failed;
    if (!op.failed) v->second.provisioned_at_s = now;
  } else if (op.kind == "delete") {
    groups_.erase(op.group);
  }
}

void FakeArm::settle(double now) {
  for (auto& [_, op] : ops_)
    if (!op.done && now - op.started_at_s >= opts_.operation_s) finish(op, now);
  for (auto& [_, g] : groups_)  // evictions due: Delete takes the VM out of its group, Deallocate stops it
    for (auto v = g.vms.begin(); v != g.vms.end();) {
      if (v->second.evicted(now) && v->second.vm.eviction_policy == "Delete") {
        v = g.vms.erase(v);
        continue;
      }
      if (v->second.evicted(now) && !v->second.stopped_at_s) v->second.stopped_at_s = *v->second.evict_at_s;
      ++v;
    }
}

Status FakeArm::interrupt(const std::string& id, std::optional<double> notice_s) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  settle(now);
  for (auto& [_, g] : groups_)
    for (auto& [__, v] : g.vms) {
      if (v.vm.group + "." + v.vm.name != id && v.vm.name != id) continue;
      if (vm_as_of(v, g, now).power_state != "running") return make_error(Code::not_found, id + " is not running");
      if (v.vm.priority != "Spot") return make_error(Code::invalid_argument, id + " is not a Spot VM");
      if (v.notice_at_s) return make_error(Code::invalid_argument, id + " is already being evicted");
      v.notice_at_s = now;
      v.evict_at_s = now + notice_s.value_or(30);
      return Status{};
    }
  return make_error(Code::not_found, "no VM " + id);
}

std::pair<int, std::string> FakeArm::scheduled_events(const std::string& guest_id, bool metadata_header) const {
  if (!metadata_header)
    return {400, R"({"error": "Bad request. Required metadata header not specified"})"};
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  for (const auto& [_, g] : groups_)
    for (const auto& [__, v] : g.vms) {
      if (v.vm.group + "." + v.vm.name != guest_id || v.evicted(now)) continue;
      nlohmann::json events = nlohmann::json::array();
      if (v.notice_at_s) {
        char not_before[64];
        const std::time_t t = static_cast<std::time_t>(*v.evict_at_s);
        std::tm tm{};
        gmtime_r(&t, &tm);
        std::strftime(not_before, sizeof not_before, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        events.push_back({{"EventId", "A123BC45-1234-5678-AB90-ABCDEF123456"}, {"EventType", "Preempt"},
                          {"ResourceType", "VirtualMachine"}, {"Resources", {v.vm.name}}, {"EventStatus", "Scheduled"},
                          {"NotBefore", not_before}, {"Description", "Spot VM eviction"},
                          {"EventSource", "Platform"}, {"DurationInSeconds", -1}});
      }
      return {200, nlohmann::json{{"DocumentIncarnation", v.notice_at_s ? 2 : 1}, {"Events", events}}.dump()};
    }
  return {404, R"({"error": "Not found"})"};
}

FakeVm FakeArm::vm_as_of(const Vm& v, const Group& g, double now) const {
  FakeVm out = v.vm;
  if (g.g.provisioning_state == "Deleting") out.provisioning_state = "Deleting";
  else if (v.failed) out.provisioning_state = "Failed";
  else out.provisioning_state = v.provisioned_at_s ? "Succeeded" : "Creating";
  if (v.provisioned_at_s)
    out.power_state = fake_cloud::state_at(power_, {.created_at_s = *v.provisioned_at_s, .halted_at_s = v.stopped_at_s}, now);
  return out;
}

nlohmann::json FakeArm::group_json(const FakeGroup& g) const {
  return {{"id", "/subscriptions/" + opts_.subscription + "/resourceGroups/" + g.name}, {"name", g.name},
          {"type", "Microsoft.Resources/resourceGroups"}, {"location", g.location}, {"tags", g.tags},
          {"properties", {{"provisioningState", g.provisioning_state}}}};
}

nlohmann::json FakeArm::vm_json(const FakeVm& v, bool instance_view) const {
  const std::string id = "/subscriptions/" + opts_.subscription + "/resourceGroups/" + v.group +
                         "/providers/Microsoft.Compute/virtualMachines/" + v.name;
  nlohmann::json props{{"provisioningState", v.provisioning_state},
                       {"hardwareProfile", {{"vmSize", v.size}}},
                       {"osProfile", {{"computerName", v.name}, {"adminUsername", v.admin_username}}},
                       {"networkProfile", {{"networkInterfaces", {{{"id", "/subscriptions/" + opts_.subscription + "/resourceGroups/" + v.group +
                                                                            "/providers/Microsoft.Network/networkInterfaces/" + v.nic_name}}}}}}};
  if (v.priority != "Regular")
    props.update({{"priority", v.priority}, {"evictionPolicy", v.eviction_policy}, {"billingProfile", {{"maxPrice", v.max_price}}}});
  if (instance_view) {
    nlohmann::json statuses = {{{"code", "ProvisioningState/" + lower(v.provisioning_state)}}};
    if (!v.power_state.empty()) statuses.push_back({{"code", "PowerState/" + v.power_state}});
    props["instanceView"] = {{"computerName", v.name}, {"statuses", statuses}};
  }
  nlohmann::json out{{"id", id}, {"name", v.name}, {"type", "Microsoft.Compute/virtualMachines"},
                     {"location", v.location}, {"tags", v.tags}, {"properties", props}};
  if (!v.zone.empty()) out["zones"] = {v.zone};
  return out;
}

ArmAnswer FakeArm::put_group(const std::string& name, const ArmCall& c) {
  if (!valid_group_name(name)) return arm_error(400, "InvalidResourceGroup", "The provided resource group name '" + name + "' has these invalid characters.");
  auto body = fake_cloud::parse_body(c.body);
  auto tags = body.is_object() ? tags_of(body) : std::nullopt;
  if (!body.is_object() || !tags) return invalid("The request content was invalid and could not be deserialized.");
  const std::string location = text_at(body, "location");
  if (!valid_location(location)) return arm_error(400, "LocationRequired", "The location property is required for this definition.");
  if (Group* g = find_group(name)) {
    if (g->g.provisioning_state == "Deleting")
      return arm_error(409, "ResourceGroupBeingDeleted", "The resource group '" + name + "' is in deprovisioning state and cannot perform this operation.");
    if (g->g.location != location)
      return arm_error(409, "InvalidResourceGroupLocation", "Invalid resource group location '" + location + "'. The Resource group already exists in location '" + g->g.location + "'.");
    g->g.tags = *tags;
    return {200, group_json(g->g), {}};
  }
  Group& g = groups_[lower(name)];
  g.g = {.name = name, .location = location, .tags = *tags, .provisioning_state = "Succeeded"};
  ++groups_created_;
  return {201, group_json(g.g), {}};
}

ArmAnswer FakeArm::get_group(const std::string& name) const {
  auto it = groups_.find(lower(name));
  if (it == groups_.end()) return group_not_found(name);
  return {200, group_json(it->second.g), {}};
}

ArmAnswer FakeArm::delete_group(const std::string& name, double now) {
  Group* g = find_group(name);
  if (!g) return group_not_found(name);
  if (g->delete_op.empty()) {
    g->delete_op = start_operation("delete", name, name, now);
    g->g.provisioning_state = "Deleting";
  }
  return {202, nlohmann::json::object(), {{"Location", result_url(g->delete_op)}, {"Retry-After", "0"}}};
}

ArmAnswer FakeArm::list_groups(const ArmCall& c) const {
  std::optional<std::pair<std::string, std::optional<std::string>>> filter;
  if (auto f = c.query.find("$filter"); f != c.query.end()) {
    filter = tag_filter(f->second);
    if (!filter) return arm_error(400, "InvalidFilterInQueryString", "Invalid $filter '" + f->second + "' specified in the query string.");
  }
  std::vector<const FakeGroup*> matched;
  for (const auto& [_, g] : groups_) {
    if (filter) {
      auto t = g.g.tags.find(filter->first);
      if (t == g.g.tags.end() || (filter->second && t->second != *filter->second)) continue;
    }
    matched.push_back(&g.g);
  }
  auto token = c.query.contains("$skiptoken") ? std::optional(c.query.at("$skiptoken")) : std::nullopt;
  auto w = fake_cloud::page_at_token(matched.size(), token, "", opts_.page_size, opts_.page_size);
  if (!w) return arm_error(400, "InvalidSkipToken", "The skip token is not valid.");
  nlohmann::json value = nlohmann::json::array();
  for (std::size_t i = w->begin; i < w->end; ++i) value.push_back(group_json(*matched[i]));
  nlohmann::json out{{"value", value}};
  if (w->next) {
    std::string link = base_url_ + "/subscriptions/" + opts_.subscription + "/resourcegroups?api-version=" + std::string(kResourcesApi);
    if (filter) link += "&$filter=" + http::uri_encode(c.query.at("$filter"));
    out["nextLink"] = link + "&$skiptoken=" + w->next_token();
  }
  return {200, out, {}};
}

ArmAnswer FakeArm::put_vnet(const std::string& group, const std::string& name, const ArmCall& c, double now) {
  Group* g = find_group(group);
  if (!g) return group_not_found(group);
  if (g->g.provisioning_state == "Deleting")
    return arm_error(409, "ResourceGroupBeingDeleted", "The resource group '" + group + "' is being deleted.");
  auto body = fake_cloud::parse_body(c.body);
  if (!body.is_object() || !valid_location(text_at(body, "location")) ||
      !value_at(body, {"properties", "addressSpace", "addressPrefixes"}).is_array() ||
      !value_at(body, {"properties", "subnets"}).is_array())
    return invalid("A virtual network needs location, properties.addressSpace.addressPrefixes and properties.subnets.");
  nlohmann::json vnet{{"name", name}, {"location", text_at(body, "location")}, {"properties", body["properties"]}};
  auto existing = g->vnets.find(lower(name));
  if (existing != g->vnets.end()) {
    const Operation& op = ops_[existing->second];
    vnet["properties"]["provisioningState"] = op.done ? "Succeeded" : "Updating";
    ArmAnswer a{200, vnet, {}};
    if (!op.done) a.headers.emplace_back("Azure-AsyncOperation", async_url(g->g.location, existing->second));
    return a;
  }
  std::string op = start_operation("vnet", group, name, now);
  g->vnets[lower(name)] = op;
  vnet["properties"]["provisioningState"] = "Updating";
  return {201, vnet, {{"Azure-AsyncOperation", async_url(g->g.location, op)}}};
}

ArmAnswer FakeArm::put_vm(const std::string& group, const std::string& name, const ArmCall& c, double now) {
  Group* g = find_group(group);
  if (!g) return group_not_found(group);
  if (g->g.provisioning_state == "Deleting")
    return arm_error(409, "ResourceGroupBeingDeleted", "The resource group '" + group + "' is being deleted.");
  auto body = fake_cloud::parse_body(c.body);
  auto tags = body.is_object() ? tags_of(body) : std::nullopt;
  if (!body.is_object() || !tags) return invalid("The request content was invalid and could not be deserialized.");
  const auto& props = value_at(body, {"properties"});
  const std::string size = text_at(value_at(props, {"hardwareProfile"}), "vmSize");
  if (size.empty()) return arm_error(400, "InvalidParameter", "Required parameter 'hardwareProfile.vmSize' is missing (null).");
  if (std::none_of(fake_sizes().begin(), fake_sizes().end(), [&](const FakeSize& f) { return f.name == size; }))
    return arm_error(400, "InvalidParameter", "The value " + size + " provided for the VM size is not valid.");
  if (text_at(body, "location").empty()) return arm_error(400, "LocationRequired", "The location property is required for this definition.");
  const auto& os = value_at(props, {"osProfile"});
  auto custom = http::base64_decode(text_at(os, "customData"));
  if (!custom || custom->empty()) return arm_error(400, "InvalidParameter", "The value of parameter osProfile.customData is invalid.");
  const auto& keys = value_at(os, {"linuxConfiguration", "ssh", "publicKeys"});
  std::string ssh_key = keys.is_array() && !keys.empty() ? text_at(keys[0], "keyData") : "";
  if (text_at(os, "adminUsername").empty() || (!ssh_key.starts_with("ssh-rsa ") && text_at(os, "adminPassword").empty()))
    return arm_error(400, "InvalidParameter", "Linux VMs need osProfile.adminUsername and an SSH public key or a password.");
  const auto& nics = value_at(props, {"networkProfile", "networkInterfaceConfigurations"});
  if (text_at(value_at(props, {"networkProfile"}), "networkApiVersion").empty() || !nics.is_array() || nics.size() != 1)
    return arm_error(400, "InvalidParameter", "networkProfile needs networkApiVersion and one networkInterfaceConfigurations entry.");
  const auto& ipc = value_at(nics[0], {"properties", "ipConfigurations"});
  if (!ipc.is_array() || ipc.empty()) return arm_error(400, "InvalidParameter", "A NIC configuration needs ipConfigurations.");
  const std::string subnet = text_at(value_at(ipc[0], {"properties", "subnet"}), "id");
  const std::string want_prefix = "/subscriptions/" + opts_.subscription + "/resourceGroups/" + g->g.name + "/providers/Microsoft.Network/virtualNetworks/";
  auto vnet_start = subnet.find(want_prefix) == 0 ? want_prefix.size() : std::string::npos;
  auto vnet_end = vnet_start == std::string::npos ? vnet_start : subnet.find('/', vnet_start);
  if (vnet_end == std::string::npos || !g->vnets.contains(lower(subnet.substr(vnet_start, vnet_end - vnet_start))))
    return arm_error(400, "InvalidResourceReference", "Resource " + subnet + " referenced by resource " + name + " was not found.");
  const auto& pip = value_at(ipc[0], {"properties", "publicIPAddressConfiguration"});
  // Spot as ARM takes it: priority Spot with an eviction policy; maxPrice -1 or a positive price.
  const std::string priority = text_at(props, "priority").empty() ? "Regular" : text_at(props, "priority");
  if (priority != "Regular" && priority != "Low" && priority != "Spot")
    return arm_error(400, "InvalidParameter", "The value '" + priority + "' of parameter 'priority' is not allowed.");
  const std::string eviction = text_at(props, "evictionPolicy");
  const auto& max_price = value_at(props, {"billingProfile", "maxPrice"});
  if (priority == "Spot") {
    if (eviction != "Delete" && eviction != "Deallocate")
      return arm_error(400, "InvalidParameter", "Spot VMs need evictionPolicy Delete or Deallocate.");
    if (!max_price.is_null() && (!max_price.is_number() || (max_price.get<double>() != -1 && max_price.get<double>() <= 0)))
      return arm_error(400, "InvalidParameter", "billingProfile.maxPrice must be -1 or greater than 0.");
  } else if (!eviction.empty() || !max_price.is_null()) {
    return arm_error(400, "InvalidParameter", "evictionPolicy and billingProfile apply to Spot VMs only.");
  }
  // An availability zone: at most one of the location's "1", "2", "3".
  std::string zone;
  if (body.contains("zones")) {
    const auto& z = body["zones"];
    if (!z.is_array() || z.size() != 1 || !z[0].is_string() ||
        (z[0] != "1" && z[0] != "2" && z[0] != "3"))
      return arm_error(400, "InvalidParameter", "The value of parameter zones is invalid: one of \"1\", \"2\", \"3\".");
    zone = z[0].get<std::string>();
  }
  auto existing = g->vms.find(lower(name));
  if (existing != g->vms.end()) {
    Vm& v = existing->second;
    v.vm.tags = *tags;
    const Operation& op = ops_[v.op];
    ArmAnswer a{200, vm_json(vm_as_of(v, *g, now), false), {}};
    if (!op.done) a.headers.emplace_back("Azure-AsyncOperation", async_url(g->g.location, v.op));
    return a;
  }
  const auto& img = value_at(props, {"storageProfile", "imageReference"});
  const auto& disk = value_at(props, {"storageProfile", "osDisk"});
  Vm v{.vm = {.group = g->g.name, .name = name, .location = g->g.location, .size = size,
              .image = text_at(img, "publisher") + ":" + text_at(img, "offer") + ":" + text_at(img, "sku") + ":" + text_at(img, "version"),
              .custom_data = *custom, .admin_username = text_at(os, "adminUsername"), .ssh_key = ssh_key, .tags = *tags,
              .public_ip = pip.is_object() ? "20.50." + std::to_string(next_id_ / 250 % 250) + "." + std::to_string(next_id_ % 250 + 1) : "",
              .nic_name = text_at(nics[0], "name"), .ip_name = text_at(pip, "name"),
              .disk_gb = value_at(disk, {"diskSizeGB"}).is_number_integer() ? value_at(disk, {"diskSizeGB"}).get<int>() : 30,
              .all_delete_options = text_at(disk, "deleteOption") == "Delete" &&
                                    text_at(value_at(nics[0], {"properties"}), "deleteOption") == "Delete" &&
                                    text_at(value_at(pip, {"properties"}), "deleteOption") == "Delete",
              .priority = priority, .eviction_policy = eviction,
              .max_price = max_price.is_number() ? max_price.get<double>() : 0,
              .zone = zone, .created_at_s = now}};
  v.op = start_operation("vm", group, name, now);
  ++vms_created_;
  auto& stored = g->vms[lower(name)] = std::move(v);
  return {201, vm_json(vm_as_of(stored, *g, now), false), {{"Azure-AsyncOperation", async_url(g->g.location, stored.op)}}};
}

ArmAnswer FakeArm::get_vm(const std::string& group, const std::string& name, bool instance_view, double now) const {
  auto g = groups_.find(lower(group));
  if (g == groups_.end()) return group_not_found(group);
  auto v = g->second.vms.find(lower(name));
  if (v == g->second.vms.end())
    return arm_error(404, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachines/" + name + "' under resource group '" + group + "' was not found.");
  return {200, vm_json(vm_as_of(v->second, g->second, now), instance_view), {}};
}

nlohmann::json FakeArm::ip_json(const FakeVm& v) const {
  return {{"id", "/subscriptions/" + opts_.subscription + "/resourceGroups/" + v.group +
                     "/providers/Microsoft.Network/publicIPAddresses/" + v.ip_name},
          {"name", v.ip_name}, {"location", v.location}, {"sku", {{"name", "Standard"}}},
          {"properties",
           {{"provisioningState", "Succeeded"}, {"publicIPAllocationMethod", "Static"}, {"ipAddress", v.public_ip}}}};
}

ArmAnswer FakeArm::list_all(const std::string& method_name, const ArmCall& c, double now) const {
  const bool vms = method_name == "virtualMachines.listAll";
  const bool status_only = vms && c.query.contains("statusOnly") && c.query.at("statusOnly") == "true";
  std::vector<nlohmann::json> items;
  for (const auto& [_, g] : groups_)
    for (const auto& [__, stored] : g.vms) {
      const FakeVm v = vm_as_of(stored, g, now);
      if (!vms) {
        if (!v.ip_name.empty()) items.push_back(ip_json(v));
        continue;
      }
      nlohmann::json j = vm_json(v, status_only);
      if (status_only) {  // the instance view only: the model's properties are left out, as ARM does
        nlohmann::json props{{"instanceView", j["properties"]["instanceView"]}};
        j["properties"] = props;
      }
      items.push_back(std::move(j));
    }
  auto token = c.query.contains("$skiptoken") ? std::optional(c.query.at("$skiptoken")) : std::nullopt;
  auto w = fake_cloud::page_at_token(items.size(), token, "", opts_.page_size, opts_.page_size);
  if (!w) return arm_error(400, "InvalidSkipToken", "The skip token is not valid.");
  nlohmann::json value = nlohmann::json::array();
  for (std::size_t i = w->begin; i < w->end; ++i) value.push_back(items[i]);
  nlohmann::json out{{"value", value}};
  if (w->next)
    out["nextLink"] = base_url_ + "/subscriptions/" + opts_.subscription +
                      (vms ? "/providers/Microsoft.Compute/virtualMachines?api-version=" + std::string(kComputeApi) +
                                 (status_only ? "&statusOnly=true" : "")
                           : "/providers/Microsoft.Network/publicIPAddresses?api-version=" + std::string(kNetworkApi)) +
                      "&$skiptoken=" + w->next_token();
  return {200, out, {}};
}

ArmAnswer FakeArm::list_ips(const std::string& group) const {
  auto g = groups_.find(lower(group));
  if (g == groups_.end()) return group_not_found(group);
  nlohmann::json value = nlohmann::json::array();
  for (const auto& [_, v] : g->second.vms)
    if (!v.vm.ip_name.empty())
      value.push_back({{"name", v.vm.ip_name}, {"location", v.vm.location}, {"sku", {{"name", "Standard"}}},
                       {"properties", {{"provisioningState", "Succeeded"}, {"publicIPAllocationMethod", "Static"},
                                       {"ipAddress", v.vm.public_ip}}}});
  return {200, {{"value", value}}, {}};
}

ArmAnswer FakeArm::operation(const std::string& id, bool location_style, double now) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return arm_error(404, "OperationNotFound", "The operation '" + id + "' was not found.");
  Operation& op = it->second;
  if (!op.done && --op.polls_left < 0) finish(op, now);
  if (location_style) {
    if (!op.done) return {202, nlohmann::json::object(), {{"Location", result_url(id)}, {"Retry-After", "0"}}};
    return {200, nlohmann::json::object(), {}};
  }
  nlohmann::json out{{"name", id}, {"status", !op.done ? "InProgress" : op.failed ? "Failed" : "Succeeded"}};
  if (op.failed)
    out["error"] = {{"code", "AllocationFailed"}, {"message", "Allocation failed. We do not have sufficient capacity for the requested VM size in this region."}};
  return {200, out, {}};
}

std::vector<FakeGroup> FakeArm::groups() const {
  std::lock_guard lock(mu_);
  std::vector<FakeGroup> out;
  for (const auto& [_, g] : groups_) out.push_back(g.g);
  return out;
}

std::vector<FakeVm> FakeArm::vms() const {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  std::vector<FakeVm> out;
  for (const auto& [_, g] : groups_)
    for (const auto& [__, v] : g.vms)
      if (!(v.evicted(now) && v.vm.eviction_policy == "Delete")) out.push_back(vm_as_of(v, g, now));
  return out;
}

int FakeArm::vms_created() const {
  std::lock_guard lock(mu_);
  return vms_created_;
}

int FakeArm::groups_created() const {
  std::lock_guard lock(mu_);
  return groups_created_;
}

Status FakeArm::guest_shutdown(const std::string& group) {
  std::lock_guard lock(mu_);
  Group* g = find_group(group);
  if (!g || g->vms.empty()) return make_error(Code::not_found, "no VM in group " + group);
  for (auto& [_, v] : g->vms)
    if (!v.stopped_at_s) v.stopped_at_s = clock_.now_s();
  return Status{};
}

void FakeArm::set_allocation_failure(bool on) {
  std::lock_guard lock(mu_);
  allocation_failure_ = on;
}

}  // namespace tsum::providers::azure::fake
