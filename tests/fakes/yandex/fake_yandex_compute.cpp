#include "tests/fakes/yandex/fake_yandex_compute.h"

#include <algorithm>
#include <cstdio>

#include "tests/fakes/cloud/pagination.h"
#include "providers/yandex/yandex_catalog.h"
#include "providers/yandex/yandex_json.h"
#include "tests/fakes/cloud/json_body.h"

namespace tsum::providers::yandex::fake {

using fake_cloud::text_at;
using fake_cloud::value_at;

namespace {

const std::vector<std::string> kZones{"ru-central1-a", "ru-central1-b", "ru-central1-d"};

int grpc_code(int status) {
  switch (status) {
    case 400: return 3;
    case 401: return 16;
    case 403: return 7;
    case 404: return 5;
    case 409: return 6;
    case 429: return 8;
    case 503: return 14;
    default: return status >= 500 ? 13 : 2;
  }
}

// An int64 as proto3 JSON writes it (a decimal string; a number is accepted too); -1 when neither.
long long int64_of(const nlohmann::json& j) {
  if (j.is_number_integer()) return j.get<long long>();
  if (!j.is_string() || j.get<std::string>().empty()) return -1;
  long long v = 0;
  for (char c : j.get<std::string>()) {
    if (c < '0' || c > '9' || v > (1LL << 50)) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string fake_id(char prefix, unsigned long n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%cfhm%016lu", prefix, n);
  return buf;
}

}  // namespace

YcAnswer yc_error(int status, const std::string& message) {
  return {status, {{"code", grpc_code(status)}, {"message", message}, {"details", nlohmann::json::array()}}};
}

std::string compute_method(const ComputeCall& c) {
  const auto& s = c.segments;
  if (s.empty() || s[0] != "instances") return {};
  if (s.size() == 1) return c.method == "POST" ? "instances.create" : c.method == "GET" ? "instances.list" : "";
  if (s.size() == 2) return c.method == "GET" ? "instances.get" : c.method == "DELETE" ? "instances.delete" : "";
  return {};
}

FakeYandexCompute::FakeYandexCompute(FakeYandexComputeOptions opts, const Clock& clock)
    : opts_(std::move(opts)),
      life_{.boot = {{"PROVISIONING", opts_.provisioning_s}, {"STARTING", opts_.starting_s}, {"RUNNING"}},
            .teardown = {{"DELETING"}},  // until the delete operation is done and the record goes
            .halt = {{"STOPPING", opts_.stopping_s}, {"STOPPED"}}},
      clock_(clock) {}

FakeYandexCompute::Record* FakeYandexCompute::find(const std::string& id) {
  for (auto& r : records_)
    if (r.inst.id == id) return &r;
  return nullptr;
}

YcAnswer FakeYandexCompute::handle(const std::string& method, const ComputeCall& c) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  settle(now);
  if (method == "instances.create") return create(c, now);
  if (method == "instances.list") return list(c, now);
  if (method == "instances.get") return get(c.segments[1], now);
  if (method == "instances.delete") return remove(c.segments[1], now);
  return yc_error(404, "No such method");
}

FakeYandexCompute::Operation& FakeYandexCompute::start_operation(const std::string& kind, const std::string& instance_id, double now) {
  Operation op{.id = fake_id('e', next_id_++), .kind = kind, .instance_id = instance_id,
               .description = kind == "create" ? "Create instance" : "Delete instance",
               .polls_left = opts_.operation_polls, .started_at_s = now};
  return ops_[op.id] = op;
}

void FakeYandexCompute::finish(Operation& op) {
  op.done = true;
  if (op.kind == "delete")
    records_.erase(std::remove_if(records_.begin(), records_.end(), [&](const Record& r) { return r.inst.id == op.instance_id; }),
                   records_.end());
}

void FakeYandexCompute::settle(double now) {
  for (auto& [_, op] : ops_)
    if (!op.done && now - op.started_at_s >= opts_.operation_s) finish(op);
}

FakeInstance FakeYandexCompute::as_of(const Record& r, double now) const {
  FakeInstance out = r.inst;
  out.status = fake_cloud::state_at(life_, r.t, now);
  if (out.status == "PROVISIONING") out.nat_ip.clear(), out.internal_ip.clear();
  return out;
}

nlohmann::json FakeYandexCompute::instance_json(const FakeInstance& i) const {
  nlohmann::json nic{{"index", "0"}, {"subnetId", i.subnet_id}};
  if (!i.internal_ip.empty()) {
    nic["primaryV4Address"] = {{"address", i.internal_ip}};
    if (!i.nat_ip.empty()) nic["primaryV4Address"]["oneToOneNat"] = {{"address", i.nat_ip}, {"ipVersion", "IPV4"}};
  }
  nlohmann::json resources{{"memory", std::to_string(i.memory_bytes)}, {"cores", std::to_string(i.cores)}, {"coreFraction", "100"}};
  if (i.gpus > 0) resources["gpus"] = std::to_string(i.gpus);
  return {{"id", i.id}, {"folderId", opts_.folder_id}, {"createdAt", "2024-01-01T00:00:00Z"}, {"name", i.name},
          {"labels", i.labels}, {"zoneId", i.zone_id}, {"platformId", i.platform_id}, {"resources", resources},
          {"status", i.status}, {"metadata", {{"user-data", i.user_data}}},
          {"bootDisk", {{"mode", "READ_WRITE"}, {"autoDelete", i.disk_auto_delete}}}, {"networkInterfaces", {nic}},
          {"schedulingPolicy", {{"preemptible", i.preemptible}}}};
}

nlohmann::json FakeYandexCompute::operation_json(const Operation& op) const {
  const std::string type = op.kind == "create" ? "CreateInstanceMetadata" : "DeleteInstanceMetadata";
  nlohmann::json out{{"id", op.id}, {"description", op.description}, {"createdAt", "2024-01-01T00:00:00Z"},
                     {"createdBy", "fake-sa"}, {"modifiedAt", "2024-01-01T00:00:00Z"}, {"done", op.done},
                     {"metadata", {{"@type", "type.googleapis.com/yandex.cloud.compute.v1." + type}, {"instanceId", op.instance_id}}}};
  if (op.done) out["response"] = {{"@type", "type.googleapis.com/google.protobuf.Empty"}};
  return out;
}

YcAnswer FakeYandexCompute::create(const ComputeCall& c, double now) {
  auto body = fake_cloud::parse_body(c.body);
  if (!body.is_object()) return yc_error(400, "Request body is not a JSON object");
  if (text_at(body, "folderId") != opts_.folder_id) return yc_error(403, "Permission denied to folder " + text_at(body, "folderId"));
  const std::string name = text_at(body, "name");
  if (!valid_instance_name(name)) return yc_error(400, "Illegal argument name: '" + name + "'");
  const auto& labels = value_at(body, {"labels"});
  std::map<std::string, std::string> label_map;
  if (!labels.is_null() && !labels.is_object()) return yc_error(400, "Illegal argument labels");
  if (labels.is_object())
    for (const auto& [k, v] : labels.items()) {
      if (!v.is_string() || !valid_label_key(k) || !valid_label_value(v.get<std::string>()))
        return yc_error(400, "Illegal argument labels: '" + k + "'");
      label_map[k] = v.get<std::string>();
    }
  const std::string zone = text_at(body, "zoneId"), platform = text_at(body, "platformId");
  if (std::find(kZones.begin(), kZones.end(), zone) == kZones.end()) return yc_error(400, "Zone '" + zone + "' not found");
  auto stems = platform_stems(platform);
  if (!stems) return yc_error(400, "Platform '" + platform + "' not found");
  const long long cores = int64_of(value_at(body, {"resourcesSpec", "cores"})), memory = int64_of(value_at(body, {"resourcesSpec", "memory"}));
  long long gpus = int64_of(value_at(body, {"resourcesSpec", "gpus"}));
  if (gpus < 0) gpus = 0;
  if (cores < 2 || cores > 96 || memory < (1LL << 30) || memory % (1LL << 30) != 0)
    return yc_error(400, "Illegal argument resourcesSpec: cores and memory (whole GiB) are required");
  if ((gpus > 0) != !stems->gpu_type.empty()) return yc_error(400, "Platform " + platform + " and " + std::to_string(gpus) + " GPUs do not go together");
  const std::string user_data = text_at(value_at(body, {"metadata"}), "user-data");
  if (user_data.empty()) return yc_error(400, "Illegal argument metadata: user-data is required by this fake");
  const std::string image = text_at(value_at(body, {"bootDiskSpec", "diskSpec"}), "imageId");
  const auto& nics = value_at(body, {"networkInterfaceSpecs"});
  if (image.empty() || !nics.is_array() || nics.size() != 1 || text_at(nics[0], "subnetId").empty())
    return yc_error(400, "Illegal argument: bootDiskSpec.diskSpec.imageId and one networkInterfaceSpecs entry with subnetId are required");
  const auto& preemptible = value_at(body, {"schedulingPolicy", "preemptible"});
  if (!preemptible.is_null() && !preemptible.is_boolean())
    return yc_error(400, "Illegal argument schedulingPolicy.preemptible: a boolean");
  for (const auto& r : records_)
    if (r.inst.name == name) return yc_error(409, "Instance with name " + name + " already exists");
  const unsigned long n = next_id_++;
  Record r{.inst = {.id = fake_id('f', n), .name = name, .zone_id = zone, .platform_id = platform, .cores = static_cast<int>(cores),
                    .memory_bytes = memory, .gpus = static_cast<int>(gpus),
                    .nat_ip = value_at(nics[0], {"primaryV4AddressSpec", "oneToOneNatSpec"}).is_object()
                                  ? "51.250." + std::to_string(n / 250 % 250) + "." + std::to_string(n % 250 + 1) : "",
                    .internal_ip = "10.128.0." + std::to_string(n % 250 + 2), .image_id = image, .subnet_id = text_at(nics[0], "subnetId"),
                    .disk_auto_delete = value_at(body, {"bootDiskSpec", "autoDelete"}) == true, .user_data = user_data, .labels = label_map,
                    .preemptible = preemptible == true},
           .t = {.created_at_s = now}};
  records_.push_back(r);
  ++created_;
  return {200, operation_json(start_operation("create", r.inst.id, now))};
}

YcAnswer FakeYandexCompute::get(const std::string& id, double now) const {
  for (const auto& r : records_)
    if (r.inst.id == id) return {200, instance_json(as_of(r, now))};
  return yc_error(404, "Instance " + id + " not found");
}

YcAnswer FakeYandexCompute::list(const ComputeCall& c, double now) const {
  auto folder = c.query.find("folderId");
  if (folder == c.query.end()) return yc_error(400, "Illegal argument folderId: required");
  if (folder->second != opts_.folder_id) return yc_error(403, "Permission denied to folder " + folder->second);
  std::string name;
  if (auto f = c.query.find("filter"); f != c.query.end()) {
    const std::string& v = f->second;
    if (!v.starts_with("name=\"") || !v.ends_with("\"") || v.size() < 8) return yc_error(400, "Illegal filter '" + v + "': only name=\"...\" is supported");
    name = v.substr(6, v.size() - 7);
  }
  auto page = fake_cloud::number_param(c.query, "pageSize", 1, 1000, 1000);
  if (!page) return yc_error(400, "Illegal argument pageSize");
  std::vector<const Record*> matched;
  for (const auto& r : records_)
    if (name.empty() || r.inst.name == name) matched.push_back(&r);
  auto token = c.query.contains("pageToken") ? std::optional(c.query.at("pageToken")) : std::nullopt;
  auto w = fake_cloud::page_at_token(matched.size(), token, "", *page, opts_.page_size);
  if (!w) return yc_error(400, "Illegal argument pageToken");
  nlohmann::json out = nlohmann::json::object();
  if (w->begin < w->end) {
    out["instances"] = nlohmann::json::array();
    for (std::size_t i = w->begin; i < w->end; ++i) out["instances"].push_back(instance_json(as_of(*matched[i], now)));
  }
  if (w->next) out["nextPageToken"] = w->next_token();
  return {200, out};
}

YcAnswer FakeYandexCompute::remove(const std::string& id, double now) {
  Record* r = find(id);
  if (!r) return yc_error(404, "Instance " + id + " not found");
  if (!r->delete_op.empty()) return yc_error(400, "Operation is not allowed in the instance's current state (DELETING)");
  r->delete_op = start_operation("delete", id, now).id;
  r->t.deleted_at_s = now;
  return {200, operation_json(ops_[r->delete_op])};
}

YcAnswer FakeYandexCompute::operation(const std::string& id) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  settle(now);
  auto it = ops_.find(id);
  if (it == ops_.end()) return yc_error(404, "Operation " + id + " not found");
  Operation& op = it->second;
  if (!op.done && --op.polls_left < 0) finish(op);
  return {200, operation_json(op)};
}

std::vector<FakeInstance> FakeYandexCompute::instances() const {
  std::lock_guard lock(mu_);
  std::vector<FakeInstance> out;
  for (const auto& r : records_) out.push_back(as_of(r, clock_.now_s()));
  return out;
}

int FakeYandexCompute::created() const {
  std::lock_guard lock(mu_);
  return created_;
}

Status FakeYandexCompute::guest_shutdown(const std::string& id) {
  std::lock_guard lock(mu_);
  Record* r = find(id);
  if (!r) return make_error(Code::not_found, "no instance " + id);
  if (!r->t.halted_at_s) r->t.halted_at_s = clock_.now_s();
  return Status{};
}

}  // namespace tsum::providers::yandex::fake
