#include "tests/fakes/gce/fake_compute.h"

#include <algorithm>
#include <charconv>

#include "common/json_util.h"
#include "tests/fakes/cloud/pagination.h"
#include "providers/gce/gce_json.h"
#include "tests/fakes/cloud/json_body.h"

namespace tsum::providers::gce::fake {

using fake_cloud::text_at;

namespace {

constexpr std::string_view kApi = "https://www.googleapis.com/compute/v1/";
constexpr std::size_t kMaxMetadataBytes = 512 * 1024;
constexpr long kMaxRunDurationS = 120L * 24 * 3600;

bool is(const ComputeCall& c, std::size_t n, std::string_view method) { return c.segments.size() == n && c.method == method; }

JsonAnswer invalid(const std::string& field, const std::string& why) {
  return google_error(400, "invalid", "Invalid value for field '" + field + "': " + why);
}

std::optional<long> seconds_of(const nlohmann::json& d) {
  if (!d.is_object()) return std::nullopt;
  auto s = d.value("seconds", nlohmann::json());
  if (s.is_number_integer()) return s.get<long>();
  if (!s.is_string()) return std::nullopt;
  long n = 0;
  const std::string v = s.get<std::string>();
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && p == v.data() + v.size() ? std::optional<long>(n) : std::nullopt;
}

// The body's fields into inst, or the 400 Compute would give.
std::optional<JsonAnswer> read_insert(const nlohmann::json& b, const std::string& zone, FakeGceInstance& inst) {
  static const char* kKnown[] = {"name", "machineType", "labels", "metadata", "disks", "networkInterfaces",
                                 "scheduling", "description", "tags", "serviceAccounts", "guestAccelerators"};
  for (const auto& [k, _] : b.items())
    if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown))
      return google_error(400, "badRequest", "Invalid JSON payload received. Unknown name \"" + k + "\"");
  for (const char* field : {"labels", "metadata", "scheduling"})
    if (b.contains(field) && !b[field].is_object()) return invalid(std::string("resource.") + field, "must be an object");
  for (const char* field : {"disks", "networkInterfaces"})
    if (b.contains(field) && !b[field].is_array()) return invalid(std::string("resource.") + field, "must be a list");
  inst.name = text_at(b, "name");
  if (!valid_resource_name(inst.name)) return invalid("resource.name", "'" + inst.name + "' must match [a-z]([-a-z0-9]*[a-z0-9])?");
  const std::string mt = text_at(b, "machineType");
  const std::string want = "zones/" + zone + "/machineTypes/";
  auto at = mt.find(want);
  const FakeMachineType* type = at == std::string::npos ? nullptr : find_machine_type(mt.substr(at + want.size()));
  if (!type) return invalid("resource.machineType", "'" + mt + "' is not a machine type of zone " + zone);
  inst.machine_type = std::string(type->name);
  if (auto labels = b.value("labels", nlohmann::json::object()); labels.is_object()) {
    for (const auto& [k, v] : labels.items()) {
      if (!valid_label_key(k) || !v.is_string() || !valid_label_value(v.get<std::string>()))
        return invalid("labels", "label '" + k + "' or its value is not valid");
      inst.labels[k] = v.get<std::string>();
    }
  }
  std::size_t metadata_bytes = 0;
  for (const auto& item : b.value("metadata", nlohmann::json::object()).value("items", nlohmann::json::array())) {
    if (!item.is_object() || text_at(item, "key").empty() || !item.value("value", nlohmann::json()).is_string())
      return invalid("resource.metadata", "items must be {key, value} strings");
    metadata_bytes += text_at(item, "value").size();
    inst.metadata[text_at(item, "key")] = text_at(item, "value");
  }
  if (metadata_bytes > kMaxMetadataBytes) return invalid("resource.metadata", "metadata is larger than 512 KB");
  for (const auto& d : b.value("disks", nlohmann::json::array()))
    if (d.is_object() && d.value("boot", false))
      inst.source_image = text_at(d.value("initializeParams", nlohmann::json::object()), "sourceImage");
  if (inst.source_image.empty()) return google_error(400, "invalid", "At least one boot disk with a sourceImage is required");
  auto nics = b.value("networkInterfaces", nlohmann::json::array());
  if (!nics.is_array() || nics.empty()) return invalid("resource.networkInterfaces", "at least one is required");
  const auto scheduling = b.value("scheduling", nlohmann::json::object());
  inst.termination_action = text_at(scheduling, "instanceTerminationAction");
  inst.on_host_maintenance = text_at(scheduling, "onHostMaintenance");
  // Spot VMs as Compute takes them: no live migration, no automatic restart, and a termination action.
  if (const std::string model = text_at(scheduling, "provisioningModel"); !model.empty()) {
    if (model != "STANDARD" && model != "SPOT")
      return invalid("resource.scheduling.provisioningModel", "must be STANDARD or SPOT, got '" + model + "'");
    inst.provisioning_model = model;
  }
  if (inst.provisioning_model == "SPOT") {
    if (inst.on_host_maintenance != "TERMINATE")
      return google_error(400, "badRequest", "Spot VMs do not support live migration: onHostMaintenance must be TERMINATE.");
    if (scheduling.value("automaticRestart", true) != false)
      return google_error(400, "badRequest", "Spot VMs do not support automatic restart.");
    if (inst.termination_action != "DELETE" && inst.termination_action != "STOP")
      return invalid("resource.scheduling.instanceTerminationAction", "a Spot VM needs DELETE or STOP");
  }
  if (auto d = scheduling.find("maxRunDuration"); d != scheduling.end()) {
    auto s = seconds_of(*d);
    if (!s || *s < 30 || *s > kMaxRunDurationS) return invalid("resource.scheduling.maxRunDuration", "must be 30 s .. 120 days");
    if (inst.termination_action != "DELETE" && inst.termination_action != "STOP")
      return invalid("resource.scheduling.instanceTerminationAction", "maxRunDuration needs DELETE or STOP");
    inst.max_run_duration_s = *s;
  }
  if (type->gpus > 0 && inst.on_host_maintenance != "TERMINATE")
    return google_error(400, "badRequest", "Instances with guest accelerators do not support live migration.");
  return std::nullopt;
}

// labels.KEY = "VALUE" or labels.KEY=VALUE; an empty filter matches everything.
std::optional<std::pair<std::string, std::string>> parse_filter(std::string_view f, bool& ok) {
  ok = true;
  if (f.empty()) return std::nullopt;
  auto eq = f.find('=');
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  std::string_view key = eq == std::string_view::npos ? f : trim(f.substr(0, eq));
  std::string_view value = eq == std::string_view::npos ? "" : trim(f.substr(eq + 1));
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  ok = eq != std::string_view::npos && key.starts_with("labels.") && key.size() > 7;
  if (!ok) return std::nullopt;
  return std::make_pair(std::string(key.substr(7)), std::string(value));
}

}  // namespace

std::string compute_method(const ComputeCall& c) {
  const auto& s = c.segments;
  if (s.size() < 3 || s[0] != "projects") return {};
  if (s.size() == 6 && s[2] == "global" && s[3] == "images" && s[4] == "family" && c.method == "GET") return "images.getFromFamily";
  if (s.size() == 4 && s[2] == "regions" && c.method == "GET") return "regions.get";
  if (s.size() == 4 && s[2] == "aggregated" && s[3] == "instances" && c.method == "GET") return "instances.aggregatedList";
  if (s.size() < 5 || s[2] != "zones") return {};
  if (s[4] == "instances" && is(c, 5, "POST")) return "instances.insert";
  if (s[4] == "instances" && is(c, 6, "GET")) return "instances.get";
  if (s[4] == "instances" && is(c, 6, "DELETE")) return "instances.delete";
  if (s[4] == "operations" && is(c, 6, "GET")) return "zoneOperations.get";
  if (s[4] == "operations" && is(c, 5, "GET")) return "zoneOperations.list";
  if (s[4] == "machineTypes" && is(c, 5, "GET")) return "machineTypes.list";
  return {};
}

FakeCompute::FakeCompute(FakeComputeOptions opts, const Clock& clock)
    : opts_(std::move(opts)),
      life_{.boot = {{"PROVISIONING", opts_.provisioning_s}, {"STAGING", opts_.staging_s}, {"RUNNING"}},
            .teardown = {{"STOPPING", opts_.stopping_s}},
            .halt = {{"STOPPING", opts_.stopping_s}, {"TERMINATED"}}},
      clock_(clock) {}

JsonAnswer FakeCompute::handle(const ComputeCall& c) {
  const std::string method = compute_method(c);
  if (method.empty()) return google_error(404, "notFound", "No such Compute method: " + c.method);
  if (method == "images.getFromFamily") return image_from_family(c.segments[1], c.segments[5]);
  if (c.segments[1] != opts_.project) return google_error(404, "notFound", "The resource 'projects/" + c.segments[1] + "' was not found");
  if (method == "regions.get") {  // a new project's regional quotas
    const std::string& region = c.segments[3];
    const bool known = std::any_of(kFakeZones.begin(), kFakeZones.end(), [&](const std::string& z) { return z.starts_with(region + "-"); });
    if (!known) return google_error(404, "notFound", "The resource 'projects/" + opts_.project + "/regions/" + region + "' was not found");
    return {200, {{"kind", "compute#region"}, {"name", region}, {"status", "UP"},
                  {"quotas", {{{"metric", "CPUS"}, {"limit", opts_.cpus_quota}, {"usage", 0}},
                              {{"metric", "INSTANCES"}, {"limit", 6000}, {"usage", 0}},
                              {{"metric", "PREEMPTIBLE_CPUS"}, {"limit", 0}, {"usage", 0}}}}}};
  }
  if (method == "instances.aggregatedList") {
    std::lock_guard lock(mu_);
    return aggregated(c);
  }
  const std::string& zone = c.segments[3];
  if (std::find(kFakeZones.begin(), kFakeZones.end(), zone) == kFakeZones.end())
    return invalid("zone", "'" + zone + "'. Unknown zone.");
  if (method == "machineTypes.list") return list_machine_types(opts_.project, zone, c.query, opts_.page_size);
  std::lock_guard lock(mu_);
  if (method == "instances.insert") return insert(zone, c);
  if (method == "instances.get") return get(zone, c.segments[5]);
  if (method == "instances.delete") return remove(zone, c.segments[5], c);
  if (method == "zoneOperations.list") return list_operations(zone, c);
  return operation(zone, c.segments[5]);
}

JsonAnswer FakeCompute::image_from_family(const std::string& project, const std::string& family) const {
  // The public images' families, each with its newest image (what Google's image projects advertise)
  static const std::map<std::string, std::string> kFamilies = {
      {"ubuntu-os-cloud/ubuntu-2204-lts", "ubuntu-2204-jammy-v20261120"},
      {"debian-cloud/debian-12", "debian-12-bookworm-v20261118"}};
  auto it = kFamilies.find(project + "/" + family);
  if (it == kFamilies.end())
    return google_error(404, "notFound", "The resource 'projects/" + project + "/global/images/family/" + family + "' was not found");
  return {200, {{"kind", "compute#image"}, {"name", it->second}, {"family", family}, {"status", "READY"},
                {"selfLink", std::string(kApi) + "projects/" + project + "/global/images/" + it->second}}};
}

std::string FakeCompute::zone_url(const std::string& zone) const {
  return std::string(kApi) + "projects/" + opts_.project + "/zones/" + zone;
}

std::string FakeCompute::status_of(const Record& r, double now) const {
  fake_cloud::Timeline t = r.t;
  if (r.inst.max_run_duration_s > 0) {  // past maxRunDuration, the instanceTerminationAction applies
    double expiry = r.inst.created_at_s + static_cast<double>(r.inst.max_run_duration_s);
    auto& when = r.inst.termination_action == "DELETE" ? t.deleted_at_s : t.halted_at_s;
    if (now >= expiry && (!when || *when > expiry)) when = expiry;
  }
  return fake_cloud::state_at(life_, t, now);
}

FakeCompute::Record* FakeCompute::find(const std::string& zone, const std::string& name, double now) {
  for (auto& r : records_)
    if (r.inst.zone == zone && r.inst.name == name && !status_of(r, now).empty()) return &r;
  return nullptr;
}

nlohmann::json FakeCompute::instance_json(const Record& r, double now) const {
  const FakeGceInstance& i = r.inst;
  const std::string status = status_of(r, now);
  nlohmann::json access{{"type", "ONE_TO_ONE_NAT"}, {"name", "External NAT"}};
  if (status == "STAGING" || status == "RUNNING") access["natIP"] = i.nat_ip;
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [k, v] : i.metadata) items.push_back({{"key", k}, {"value", v}});
  nlohmann::json scheduling{{"onHostMaintenance", i.on_host_maintenance.empty() ? "MIGRATE" : i.on_host_maintenance},
                            {"provisioningModel", i.provisioning_model}};
  if (i.max_run_duration_s > 0) scheduling["maxRunDuration"] = {{"seconds", std::to_string(i.max_run_duration_s)}};
  if (!i.termination_action.empty()) scheduling["instanceTerminationAction"] = i.termination_action;
  return {{"kind", "compute#instance"}, {"id", i.id}, {"name", i.name}, {"status", status},
          {"zone", zone_url(i.zone)}, {"machineType", zone_url(i.zone) + "/machineTypes/" + i.machine_type},
          {"labels", i.labels}, {"metadata", {{"items", items}}}, {"scheduling", scheduling},
          {"networkInterfaces", {{{"name", "nic0"}, {"networkIP", i.internal_ip}, {"accessConfigs", {access}}}}},
          {"selfLink", zone_url(i.zone) + "/instances/" + i.name}};
}

nlohmann::json FakeCompute::operation_json(const Operation& op, double now, bool fresh) const {
  const bool done = !fresh && now >= op.done_at_s;
  nlohmann::json j{{"kind", "compute#operation"}, {"id", op.id}, {"name", op.name}, {"operationType", op.type},
                   {"zone", zone_url(op.zone)}, {"targetLink", zone_url(op.zone) + "/instances/" + op.target},
                   {"targetId", op.target_id}, {"status", done ? "DONE" : "RUNNING"}, {"progress", done ? 100 : 0},
                   {"selfLink", zone_url(op.zone) + "/operations/" + op.name}};
  if (done && !op.error_code.empty())
    j["error"] = {{"errors", {{{"code", op.error_code}, {"message", op.error_message}}}}};
  return j;
}

std::optional<JsonAnswer> FakeCompute::replay(const ComputeCall& c, double now) {
  auto rid = c.query.find("requestId");
  if (rid == c.query.end()) return std::nullopt;
  if (!valid_uuid(rid->second)) return invalid("requestId", "'" + rid->second + "' is not a UUID");
  auto seen = by_request_id_.find(rid->second);
  if (seen == by_request_id_.end() || now > seen->second.second + opts_.request_id_ttl_s) return std::nullopt;
  return JsonAnswer{200, operation_json(operations_.at(seen->second.first), now, false)};
}

FakeCompute::Operation& FakeCompute::start_operation(const std::string& zone, const std::string& type,
                                                     const Record* target, double now, const ComputeCall& c) {
  const unsigned long n = next_id_++;
  Operation op{.name = "operation-" + std::to_string(1700000000000 + n) + "-fake", .id = std::to_string(7000000000000000000UL + n),
               .zone = zone, .type = type, .target = target ? target->inst.name : "", .target_id = target ? target->inst.id : "",
               .started_at_s = now, .done_at_s = now + opts_.operation_s};
  if (auto rid = c.query.find("requestId"); rid != c.query.end()) by_request_id_[rid->second] = {op.name, now};
  return operations_[op.name] = std::move(op);
}

JsonAnswer FakeCompute::insert(const std::string& zone, const ComputeCall& c) {
  const double now = clock_.now_s();
  if (auto again = replay(c, now)) return *again;
  auto body = parse_json_safely(c.body);
  if (!body || !body->is_object()) return google_error(400, "parseError", "This API does not support parsing the request body");
  FakeGceInstance inst;
  if (auto bad = read_insert(*body, zone, inst)) return *bad;
  if (find(zone, inst.name, now))
    return google_error(409, "alreadyExists", "The resource 'projects/" + opts_.project + "/zones/" + zone + "/instances/" +
                                                  inst.name + "' already exists");
  auto spot_left = spot_left_.find(zone);
  const bool spot = inst.provisioning_model == "SPOT" && spot_left != spot_left_.end();
  if (stockout_ || (spot && spot_left->second <= 0)) {
    Operation& op = start_operation(zone, "insert", nullptr, now, c);
    op.target = inst.name;
    op.error_code = "ZONE_RESOURCE_POOL_EXHAUSTED";
    op.error_message = "The zone '" + zone_url(zone) + "' does not have enough resources available to fulfill the request.";
    return {200, operation_json(op, now, true)};
  }
  if (spot) --spot_left->second;
  const unsigned long n = next_id_;
  inst.id = std::to_string(4000000000000000000UL + n);
  inst.zone = zone;
  inst.created_at_s = now;
  inst.internal_ip = "10.128.0." + std::to_string(n % 250 + 2);
  inst.nat_ip = "34.118." + std::to_string(n / 250 % 256) + "." + std::to_string(n % 250 + 1);
  records_.push_back({std::move(inst), {.created_at_s = now}});
  return {200, operation_json(start_operation(zone, "insert", &records_.back(), now, c), now, true)};
}

JsonAnswer FakeCompute::get(const std::string& zone, const std::string& name) {
  const double now = clock_.now_s();
  const Record* r = find(zone, name, now);
  if (!r) return google_error(404, "notFound", "The resource 'projects/" + opts_.project + "/zones/" + zone + "/instances/" + name + "' was not found");
  return {200, instance_json(*r, now)};
}

JsonAnswer FakeCompute::remove(const std::string& zone, const std::string& name, const ComputeCall& c) {
  const double now = clock_.now_s();
  if (auto again = replay(c, now)) return *again;
  Record* r = find(zone, name, now);
  if (!r) return google_error(404, "notFound", "The resource 'projects/" + opts_.project + "/zones/" + zone + "/instances/" + name + "' was not found");
  if (!r->t.deleted_at_s) r->t.deleted_at_s = now;
  Operation& op = start_operation(zone, "delete", r, now, c);
  op.done_at_s = std::max(op.done_at_s, *r->t.deleted_at_s + opts_.stopping_s);
  return {200, operation_json(op, now, true)};
}

JsonAnswer FakeCompute::operation(const std::string& zone, const std::string& name) {
  auto it = operations_.find(name);
  if (it == operations_.end() || it->second.zone != zone)
    return google_error(404, "notFound", "The resource 'projects/" + opts_.project + "/zones/" + zone + "/operations/" + name + "' was not found");
  return {200, operation_json(it->second, clock_.now_s(), false)};
}

JsonAnswer FakeCompute::aggregated(const ComputeCall& c) {
  bool ok = true;
  auto f = c.query.find("filter");
  auto label = parse_filter(f == c.query.end() ? "" : f->second, ok);
  if (!ok) return invalid("filter", "the fake supports only labels.KEY = \"VALUE\"");
  auto max = fake_cloud::number_param(c.query, "maxResults", 0, 500, 500);
  if (!max) return invalid("maxResults", "must be 0..500");
  const double now = clock_.now_s();
  std::vector<const Record*> picked;
  for (const auto& r : records_) {
    if (status_of(r, now).empty()) continue;
    auto l = label ? r.inst.labels.find(label->first) : r.inst.labels.end();
    if (!label || (l != r.inst.labels.end() && l->second == label->second)) picked.push_back(&r);
  }
  std::stable_sort(picked.begin(), picked.end(), [](const Record* a, const Record* b) { return a->inst.zone < b->inst.zone; });
  auto token = c.query.count("pageToken") ? std::optional<std::string>(c.query.at("pageToken")) : std::nullopt;
  auto w = fake_cloud::page_at_token(picked.size(), token, kPageTokenPrefix, *max == 0 ? 500 : *max, opts_.page_size);
  if (!w) return invalid("pageToken", "not a token this server handed out");
  nlohmann::json items = nlohmann::json::object();
  for (const auto& z : kFakeZones)
    items["zones/" + z] = {{"warning", {{"code", "NO_RESULTS_ON_PAGE"}, {"message", "There are no results for scope 'zones/" + z + "' on this page."}}}};
  for (std::size_t i = w->begin; i < w->end; ++i) {
    auto& scope = items["zones/" + picked[i]->inst.zone];
    scope.erase("warning");
    scope["instances"].push_back(instance_json(*picked[i], now));
  }
  JsonAnswer a{200, {{"kind", "compute#instanceAggregatedList"}, {"items", items}}};
  if (w->next) a.body["nextPageToken"] = w->next_token(kPageTokenPrefix);
  return a;
}

std::vector<FakeGceInstance> FakeCompute::instances() const {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  std::vector<FakeGceInstance> out;
  for (const auto& r : records_) {
    FakeGceInstance i = r.inst;
    i.status = status_of(r, now);
    if (!i.status.empty()) out.push_back(std::move(i));
  }
  return out;
}

int FakeCompute::created() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(records_.size());
}

Status FakeCompute::guest_shutdown(const std::string& zone, const std::string& name) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  Record* r = find(zone, name, now);
  if (!r) return make_error(Code::not_found, "no instance " + zone + "/" + name);
  std::string status = status_of(*r, now);
  if (status == "RUNNING" || status == "STAGING" || status == "PROVISIONING") r->t.halted_at_s = now;
  return Status{};
}

Status FakeCompute::interrupt(const std::string& name, std::optional<double> notice_s) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  Record* r = nullptr;
  for (auto& x : records_)
    if ((x.inst.name == name || x.inst.id == name) && status_of(x, now) == "RUNNING") r = &x;
  if (!r) return make_error(Code::not_found, "no instance " + name + " is running");
  if (r->inst.provisioning_model != "SPOT") return make_error(Code::invalid_argument, name + " is not a Spot VM");
  if (r->preempted_at_s) return make_error(Code::invalid_argument, name + " is already being preempted");
  const double at = now + notice_s.value_or(30);
  r->preempted_at_s = now;
  (r->inst.termination_action == "STOP" ? r->t.halted_at_s : r->t.deleted_at_s) = at;
  const ComputeCall none;
  Operation& op = start_operation(r->inst.zone, "compute.instances.preempted", r, at, none);
  op.done_at_s = at;
  return Status{};
}

std::pair<int, std::string> FakeCompute::metadata(const std::string& path, const std::string& flavor, const std::string& id) {
  std::lock_guard lock(mu_);
  if (flavor != "Google") return {403, "Missing Metadata-Flavor:Google header."};
  const double now = clock_.now_s();
  const Record* r = nullptr;
  for (const auto& x : records_)
    if (x.inst.id == id && !status_of(x, now).empty()) r = &x;
  if (!r) return {404, "not found"};
  if (path == "/computeMetadata/v1/instance/preempted")
    return {200, r->preempted_at_s && now >= *r->preempted_at_s ? "TRUE" : "FALSE"};
  if (path == "/computeMetadata/v1/instance/id") return {200, r->inst.id};
  if (path == "/computeMetadata/v1/instance/name") return {200, r->inst.name};
  return {404, "not found"};
}

// The zone's operations that have begun, filtered by operationType="..." (the only filter the fake takes).
JsonAnswer FakeCompute::list_operations(const std::string& zone, const ComputeCall& c) {
  std::string type;
  if (auto f = c.query.find("filter"); f != c.query.end()) {
    const std::string& text = f->second;
    const std::string prefix = "operationType=\"";
    std::string compact;
    for (char ch : text)
      if (ch != ' ') compact += ch;
    if (!compact.starts_with(prefix) || !compact.ends_with("\"") || compact.size() < prefix.size() + 1)
      return invalid("filter", "the fake supports only operationType = \"TYPE\"");
    type = compact.substr(prefix.size(), compact.size() - prefix.size() - 1);
  }
  const double now = clock_.now_s();
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [name, op] : operations_)
    if (op.zone == zone && op.started_at_s <= now && (type.empty() || op.type == type))
      items.push_back(operation_json(op, now, false));
  return {200, {{"kind", "compute#operationList"}, {"items", items}}};
}

void FakeCompute::set_stockout(bool on) {
  std::lock_guard lock(mu_);
  stockout_ = on;
}

void FakeCompute::set_spot_capacity(const std::string& zone, std::optional<int> left) {
  std::lock_guard lock(mu_);
  if (left) spot_left_[zone] = *left;
  else spot_left_.erase(zone);
}

}  // namespace tsum::providers::gce::fake
