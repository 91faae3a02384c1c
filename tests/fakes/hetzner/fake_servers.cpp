#include "tests/fakes/hetzner/fake_servers.h"

#include <algorithm>
#include <random>

#include "common/json_util.h"
#include "tests/fakes/cloud/request.h"
#include "providers/hetzner/hetzner_json.h"
#include "tests/fakes/cloud/json_body.h"

namespace tsum::providers::hetzner::fake {

using fake_cloud::text_at;

namespace {

constexpr std::size_t kMaxUserData = 32 * 1024;
const std::vector<std::string> kImages{"ubuntu-22.04", "ubuntu-24.04", "debian-12"};

JsonAnswer invalid_input(const std::string& message) { return hetzner_error(400, "invalid_input", message); }

struct Selector {
  std::string key;
  std::string op;  // ==, !=, exists, absent
  std::string value;
};

std::optional<std::vector<Selector>> parse_selector(std::string_view s) {
  std::vector<Selector> out;
  while (!s.empty()) {
    auto comma = s.find(',');
    std::string_view term = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    Selector sel;
    if (auto ne = term.find("!="); ne != std::string_view::npos) sel = {std::string(term.substr(0, ne)), "!=", std::string(term.substr(ne + 2))};
    else if (auto eq2 = term.find("=="); eq2 != std::string_view::npos) sel = {std::string(term.substr(0, eq2)), "==", std::string(term.substr(eq2 + 2))};
    else if (auto eq = term.find('='); eq != std::string_view::npos) sel = {std::string(term.substr(0, eq)), "==", std::string(term.substr(eq + 1))};
    else if (term.starts_with('!')) sel = {std::string(term.substr(1)), "absent", ""};
    else sel = {std::string(term), "exists", ""};
    if (!valid_label(sel.key, false)) return std::nullopt;
    out.push_back(std::move(sel));
  }
  return out;
}

bool matches(const std::map<std::string, std::string>& labels, const Selector& s) {
  auto it = labels.find(s.key);
  if (s.op == "exists") return it != labels.end();
  if (s.op == "absent") return it == labels.end();
  bool equal = it != labels.end() && it->second == s.value;
  return s.op == "==" ? equal : !equal;
}

std::string root_password() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kChars[] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  std::string out;
  for (int i = 0; i < 20; ++i) out += kChars[rng() % (sizeof kChars - 1)];
  return out;
}

// The body's fields into s, or Hetzner's invalid_input.
std::optional<JsonAnswer> read_create(const nlohmann::json& b, FakeServer& s) {
  static const char* kKnown[] = {"name", "server_type", "image", "location", "datacenter", "user_data", "labels",
                                 "start_after_create", "ssh_keys", "public_net", "networks", "volumes", "firewalls",
                                 "automount", "placement_group"};
  for (const auto& [k, _] : b.items())
    if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown)) return invalid_input("unknown field " + k);
  s.name = text_at(b, "name");
  if (!valid_server_name(s.name)) return invalid_input("name '" + s.name + "' is not a valid hostname");
  s.server_type = text_at(b, "server_type");
  if (!find_server_type(s.server_type)) return invalid_input("server_type '" + s.server_type + "' not found");
  s.image = text_at(b, "image");
  if (std::find(kImages.begin(), kImages.end(), s.image) == kImages.end()) return invalid_input("image '" + s.image + "' not found");
  s.location = text_at(b, "location").empty() ? "fsn1" : text_at(b, "location");
  if (std::find(kFakeLocations.begin(), kFakeLocations.end(), s.location) == kFakeLocations.end())
    return invalid_input("location '" + s.location + "' not found");
  if (s.location == "ash" && find_server_type(s.server_type)->hourly_us.empty())
    return hetzner_error(412, "resource_unavailable", "server type " + s.server_type + " is not available in ash");
  s.user_data = text_at(b, "user_data");
  if (s.user_data.size() > kMaxUserData) return invalid_input("user_data is longer than 32 KiB");
  const nlohmann::json labels = b.value("labels", nlohmann::json::object());
  if (!labels.is_object()) return invalid_input("labels must be an object");
  for (const auto& [k, v] : labels.items()) {
    if (!valid_label(k, false) || !v.is_string() || !valid_label(v.get<std::string>(), true))
      return invalid_input("label '" + k + "' or its value is not valid");
    s.labels[k] = v.get<std::string>();
  }
  for (const auto& key : b.value("ssh_keys", nlohmann::json::array()))
    if (key.is_string()) s.ssh_keys.push_back(key.get<std::string>());
  return std::nullopt;
}

}  // namespace

FakeServers::FakeServers(FakeServersOptions opts, const Clock& clock)
    : opts_(std::move(opts)),
      life_{.boot = {{"initializing", opts_.initializing_s}, {"starting", opts_.starting_s}, {"running"}},
            .teardown = {{"deleting", opts_.deleting_s}},
            .halt = {{"off"}}},
      clock_(clock) {}

std::string FakeServers::status_of(const Record& r, double now) const { return fake_cloud::state_at(life_, r.t, now); }

FakeServers::Record* FakeServers::find(const std::string& id, double now) {
  for (auto& r : records_)
    if (std::to_string(r.server.id) == id && !status_of(r, now).empty()) return &r;
  return nullptr;
}

nlohmann::json FakeServers::server_json(const Record& r, double now) const {
  const FakeServer& s = r.server;
  return {{"id", s.id}, {"name", s.name}, {"status", status_of(r, now)}, {"created", fake_cloud::iso8601(s.created_at_s)},
          {"public_net", {{"ipv4", {{"id", s.id * 2}, {"ip", s.ipv4}, {"blocked", false},
                                    {"dns_ptr", "static." + s.ipv4 + ".clients.your-server.de"}}},
                          {"ipv6", {{"id", s.id * 2 + 1}, {"ip", s.ipv6}, {"blocked", false}, {"dns_ptr", nlohmann::json::array()}}},
                          {"floating_ips", nlohmann::json::array()}, {"firewalls", nlohmann::json::array()}}},
          {"private_net", nlohmann::json::array()},
          {"server_type", server_type_json(*find_server_type(s.server_type), 0)},
          {"datacenter", {{"name", s.location + "-dc1"}, {"location", {{"name", s.location}}}}},
          {"image", {{"name", s.image}, {"type", "system"}}},
          {"labels", s.labels}, {"locked", false}, {"rescue_enabled", false}, {"protection", {{"delete", false}, {"rebuild", false}}}};
}

nlohmann::json FakeServers::action_json(const std::string& command, long long server_id, double now) {
  return {{"id", next_action_++}, {"command", command}, {"status", "running"}, {"progress", 0},
          {"started", fake_cloud::iso8601(now)}, {"finished", nullptr},
          {"resources", {{{"id", server_id}, {"type", "server"}}}}, {"error", nullptr}};
}

JsonAnswer FakeServers::create(const std::string& body) {
  auto b = parse_json_safely(body);
  if (!b || !b->is_object()) return hetzner_error(400, "json_error", "the body is not a JSON object");
  FakeServer s;
  if (auto bad = read_create(*b, s)) return *bad;
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  for (const auto& r : records_)
    if (r.server.name == s.name && !status_of(r, now).empty())
      return hetzner_error(409, "uniqueness_error", "server name is already used");
  s.id = next_id_++;
  s.created_at_s = now;
  s.ipv4 = "95.217." + std::to_string(s.id / 250 % 256) + "." + std::to_string(s.id % 250 + 1);
  s.ipv6 = "2a01:4f8:c0c:" + std::to_string(s.id % 10000) + "::/64";
  records_.push_back({s, {.created_at_s = now}});
  nlohmann::json answer{{"server", server_json(records_.back(), now)},
                        {"action", action_json("create_server", s.id, now)},
                        {"next_actions", {action_json("start_server", s.id, now)}},
                        {"root_password", s.ssh_keys.empty() ? nlohmann::json(root_password()) : nlohmann::json(nullptr)}};
  return {201, std::move(answer)};
}

JsonAnswer FakeServers::get(const std::string& id) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  const Record* r = find(id, now);
  if (!r) return hetzner_error(404, "not_found", "server with ID '" + id + "' not found");
  return {200, {{"server", server_json(*r, now)}}};
}

JsonAnswer FakeServers::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  Record* r = find(id, now);
  if (!r) return hetzner_error(404, "not_found", "server with ID '" + id + "' not found");
  if (!r->t.deleted_at_s) r->t.deleted_at_s = now;
  return {200, {{"action", action_json("delete_server", r->server.id, now)}}};
}

JsonAnswer FakeServers::list(const std::map<std::string, std::string>& query) {
  auto selector = parse_selector(query.count("label_selector") ? query.at("label_selector") : "");
  if (!selector) return invalid_input("label_selector is not valid");
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  std::vector<const Record*> picked;
  for (const auto& r : records_) {
    if (status_of(r, now).empty()) continue;
    if (auto name = query.find("name"); name != query.end() && r.server.name != name->second) continue;
    if (std::all_of(selector->begin(), selector->end(), [&](const Selector& s) { return matches(r.server.labels, s); }))
      picked.push_back(&r);
  }
  auto w = page_window(picked.size(), query, opts_.page_size);
  if (!w) return invalid_input("page must be >= 1 and per_page 1..50");
  nlohmann::json servers = nlohmann::json::array();
  for (std::size_t i = w->begin; i < w->end; ++i) servers.push_back(server_json(*picked[i], now));
  return {200, {{"servers", servers}, {"meta", w->meta}}};
}

std::vector<FakeServer> FakeServers::servers() const {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  std::vector<FakeServer> out;
  for (const auto& r : records_) {
    FakeServer s = r.server;
    s.status = status_of(r, now);
    if (!s.status.empty()) out.push_back(std::move(s));
  }
  return out;
}

int FakeServers::created() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(records_.size());
}

Status FakeServers::guest_shutdown(long long id) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  Record* r = find(std::to_string(id), now);
  if (!r) return make_error(Code::not_found, "no server " + std::to_string(id));
  if (!r->t.deleted_at_s) r->t.halted_at_s = now;
  return Status{};
}

}  // namespace tsum::providers::hetzner::fake
