#include "tests/fakes/aws/fake_ec2.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "tests/fakes/aws/fake_catalog.h"
#include "providers/aws/sigv4.h"
#include "providers/cloud_init/cloud_init.h"

namespace tsum::providers::aws::fake {

namespace {

int state_code(std::string_view s) {
  if (s == "pending") return 0;
  if (s == "running") return 16;
  if (s == "shutting-down") return 32;
  if (s == "terminated") return 48;
  if (s == "stopping") return 64;
  return 80;  // stopped
}

std::string state_xml(std::string_view tag, std::string_view state) {
  return "<" + std::string(tag) + ">" + el("code", std::to_string(state_code(state))) + el("name", state) + "</" +
         std::string(tag) + ">";
}

bool well_formed_id(std::string_view id) {
  if (!id.starts_with("i-") || (id.size() != 10 && id.size() != 19)) return false;
  return std::all_of(id.begin() + 2, id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool plain_text(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

std::string hex_id(const char* prefix, unsigned long n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s-%017lx", prefix, 0x0f5a0000000000UL + n);
  return buf;
}

// TagSpecification.N.{ResourceType, Tag.M.Key, Tag.M.Value}: the instance's tags, or an error answer.
std::optional<FakeAnswer> read_tags(const Fields& params, std::map<std::string, std::string>& tags) {
  for (int n = 1;; ++n) {
    std::string spec = "TagSpecification." + std::to_string(n);
    auto type = param(params, spec + ".ResourceType");
    if (!type) return std::nullopt;
    for (int m = 1;; ++m) {
      std::string tag = spec + ".Tag." + std::to_string(m);
      auto key = param(params, tag + ".Key");
      if (!key) break;
      std::string value = param(params, tag + ".Value").value_or("");
      if (key->empty() || key->size() > 128 || key->starts_with("aws:") || value.size() > 256 || !plain_text(*key) ||
          !plain_text(value))
        return ec2_error(400, "InvalidParameterValue", "Tag key '" + *key + "' or its value is not valid");
      if (*type == "instance") tags[*key] = value;
    }
  }
}

// Filter.N.Name / Filter.N.Value.M
struct Filter {
  std::string name;
  std::vector<std::string> values;
};

bool matches(const FakeInstance& i, const Filter& f) {
  auto any = [&](const std::string& v) { return std::find(f.values.begin(), f.values.end(), v) != f.values.end(); };
  if (f.name.starts_with("tag:")) {
    auto t = i.tags.find(f.name.substr(4));
    return t != i.tags.end() && any(t->second);
  }
  if (f.name == "tag-key") return std::any_of(i.tags.begin(), i.tags.end(), [&](const auto& kv) { return any(kv.first); });
  if (f.name == "instance-state-name") return any(i.state);
  if (f.name == "instance-type") return any(i.instance_type);
  if (f.name == "client-token") return any(i.client_token);
  return any(i.id);  // instance-id
}

}  // namespace

FakeEc2::FakeEc2(FakeEc2Options opts, const Clock& clock)
    : opts_(std::move(opts)),
      life_{.boot = {{"pending", opts_.pending_s}, {"running"}},
            .teardown = {{"shutting-down", opts_.shutting_down_s}, {"terminated", opts_.terminated_visible_s}},
            .halt = {{"stopping", opts_.shutting_down_s}, {"stopped"}}},
      clock_(clock),
      next_id_(opts_.first_id) {}

void FakeEc2::set_spot_capacity(std::optional<int> left) {
  std::lock_guard lock(mu_);
  spot_left_ = left;
}

FakeAnswer FakeEc2::handle(std::string_view action, const Fields& params) {
  std::lock_guard lock(mu_);
  if (action == "RunInstances") return run_instances(params);
  if (action == "DescribeInstances") return describe_instances(params);
  if (action == "TerminateInstances") return terminate_instances(params);
  return ec2_error(400, "InvalidAction", "The action " + std::string(action) + " is not valid for this web service.");
}

std::string FakeEc2::state_of(const Record& r, double now) const { return fake_cloud::state_at(life_, r.t, now); }

bool FakeEc2::visible(const Record& r, double now) const {
  return now >= r.inst.launched_at_s + opts_.visibility_delay_s && !state_of(r, now).empty();
}

FakeInstance FakeEc2::snapshot(const Record& r, double now) const {
  FakeInstance i = r.inst;
  i.state = state_of(r, now);
  if (i.state != "running" && i.state != "shutting-down" && i.state != "stopping") i.public_ip.clear();
  if (i.state == "terminated") i.private_ip.clear();
  return i;
}

FakeEc2::Record* FakeEc2::find(const std::string& id, double now) {
  for (auto& r : records_)
    if (r.inst.id == id && visible(r, now)) return &r;
  return nullptr;
}

std::string FakeEc2::instance_xml(const Record& r, double now) const {
  FakeInstance i = snapshot(r, now);
  std::string x = "<item>" + el("instanceId", i.id) + el("imageId", i.image_id) + state_xml("instanceState", i.state) +
                  el("instanceType", i.instance_type) + el("launchTime", iso8601(i.launched_at_s)) +
                  "<placement>" + el("availabilityZone", i.zone) + "</placement>";
  if (!i.private_ip.empty()) x += el("privateIpAddress", i.private_ip);
  if (!i.public_ip.empty()) x += el("ipAddress", i.public_ip);
  if (!i.client_token.empty()) x += el("clientToken", i.client_token);
  if (!i.lifecycle.empty()) x += el("instanceLifecycle", i.lifecycle);
  if (!r.state_reason.empty() && r.t.deleted_at_s && now >= *r.t.deleted_at_s)
    x += "<stateReason>" + el("code", r.state_reason) + el("message", r.state_reason + ": " +
         (r.state_reason == "Server.SpotInstanceTermination" ? "Spot instance termination" : "User initiated shutdown")) +
         "</stateReason>";
  x += "<tagSet>";
  for (const auto& [k, v] : i.tags) x += "<item>" + el("key", k) + el("value", v) + "</item>";
  return x + "</tagSet></item>";
}

FakeAnswer FakeEc2::run_instances(const Fields& params) {
  if (auto u = unknown_param(params, {"ImageId", "InstanceType", "MinCount", "MaxCount", "ClientToken", "UserData",
                                      "InstanceInitiatedShutdownBehavior", "KeyName", "SubnetId", "Placement.AvailabilityZone"},
                             {"SecurityGroupId", "TagSpecification", "InstanceMarketOptions"}))
    return ec2_error(400, "UnknownParameter", "The parameter " + *u + " is not recognized");
  auto image = param(params, "ImageId");
  auto type = param(params, "InstanceType");
  auto min = int_param(params, "MinCount", 1, 20), max = int_param(params, "MaxCount", 1, 20);
  if (!image || !type || !min || !max)
    return ec2_error(400, "MissingParameter", "RunInstances needs ImageId, InstanceType, MinCount and MaxCount");
  if (!image->starts_with("ami-")) return ec2_error(400, "InvalidAMIID.Malformed", "Invalid id: \"" + *image + "\"");
  if (!find_fake_type(*type)) return ec2_error(400, "InvalidParameterValue", "Invalid value '" + *type + "' for InstanceType.");
  if (*min == -1 || *max == -1 || *min > *max)
    return ec2_error(400, "InvalidParameterValue", "MinCount and MaxCount must be 1..20 with MinCount <= MaxCount");
  std::string token = param(params, "ClientToken").value_or("");
  if (token.size() > 64) return ec2_error(400, "InvalidParameterValue", "ClientToken is longer than 64 characters");
  std::string user_data;
  if (auto ud = param(params, "UserData")) {
    auto decoded = base64_decode(*ud);
    if (!decoded) return ec2_error(400, "InvalidParameterValue", "Invalid BASE64 encoding of user data.");
    if (decoded->size() > kMaxUserDataBytes) return ec2_error(400, "InvalidParameterValue", "User data is limited to 16384 bytes");
    user_data = std::move(*decoded);
  }
  std::string behavior = param(params, "InstanceInitiatedShutdownBehavior").value_or("stop");
  if (behavior != "stop" && behavior != "terminate")
    return ec2_error(400, "InvalidParameterValue", "InstanceInitiatedShutdownBehavior must be stop or terminate");
  std::map<std::string, std::string> tags;
  if (auto bad = read_tags(params, tags)) return *bad;
  // Spot as EC2 takes it: MarketType spot; a one-time request can only terminate on interruption.
  std::string lifecycle;
  if (auto market = param(params, "InstanceMarketOptions.MarketType")) {
    if (*market != "spot" && *market != "capacity-block")
      return ec2_error(400, "InvalidParameterValue", "Invalid value '" + *market + "' for MarketType");
    const auto type = param(params, "InstanceMarketOptions.SpotOptions.SpotInstanceType").value_or("one-time");
    const auto on_interruption =
        param(params, "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior").value_or("terminate");
    if (type != "one-time" && type != "persistent")
      return ec2_error(400, "InvalidParameterValue", "Invalid value '" + type + "' for SpotInstanceType");
    if (type == "one-time" && on_interruption != "terminate")
      return ec2_error(400, "InvalidParameterCombination",
                       "One-time spot instances can only be terminated on interruption");
    lifecycle = *market == "spot" ? "spot" : "";
  }
  // Placement: one of the region's zones (<region>a, b or c here); default the first.
  const std::string zone = param(params, "Placement.AvailabilityZone").value_or(opts_.region + "a");
  if (zone.size() != opts_.region.size() + 1 || !zone.starts_with(opts_.region) || zone.back() < 'a' || zone.back() > 'c')
    return ec2_error(400, "InvalidParameterValue", "Invalid availability zone: [" + zone + "]");

  if (lifecycle == "spot" && spot_left_ && *spot_left_ < *max && !by_token_.count(token))
    return ec2_error(500, "InsufficientInstanceCapacity",
                     "We currently do not have sufficient " + *type + " capacity in the Availability Zone you "
                     "requested (" + zone + "). Our system will be working on provisioning additional capacity.");
  if (lifecycle == "spot" && spot_left_ && !by_token_.count(token)) *spot_left_ -= static_cast<int>(*max);
  const double now = clock_.now_s();
  Fields significant;
  for (const auto& kv : params)
    if (kv.first != "ClientToken") significant.push_back(kv);
  const std::string fingerprint = canonical_query(significant);
  std::vector<std::string> ids;
  std::string reservation;
  if (auto it = by_token_.find(token); !token.empty() && it != by_token_.end()) {
    if (it->second.fingerprint != fingerprint)
      return ec2_error(400, "IdempotentParameterMismatch",
                       "The client token you have provided is associated with a resource that is already deleted or "
                       "with different parameters. Please use a different client token.");
    ids = it->second.ids;
  } else {
    reservation = hex_id("r", next_id_);
    for (long n = 0; n < *max; ++n, ++next_id_) {
      FakeInstance i{.id = hex_id("i", next_id_), .reservation_id = reservation, .instance_type = *type,
                     .image_id = *image, .private_ip = "10.0." + std::to_string(next_id_ / 250 % 256) + "." + std::to_string(next_id_ % 250 + 4),
                     .client_token = token, .shutdown_behavior = behavior, .user_data = user_data,
                     .lifecycle = lifecycle, .zone = zone, .tags = tags,
                     .launched_at_s = now};
      i.public_ip = "198.51." + std::to_string(100 + next_id_ / 250 % 100) + "." + std::to_string(next_id_ % 250 + 1);
      ids.push_back(i.id);
      records_.push_back({std::move(i), {.created_at_s = now}});
    }
    if (!token.empty()) by_token_[token] = {fingerprint, ids};
  }
  std::string items;
  for (const auto& r : records_)
    if (std::find(ids.begin(), ids.end(), r.inst.id) != ids.end()) {
      items += instance_xml(r, now);
      reservation = r.inst.reservation_id;
    }
  return ec2_ok("RunInstances", el("reservationId", reservation) + el("ownerId", kOwnerId) + "<groupSet/><instancesSet>" +
                                    items + "</instancesSet>");
}

FakeAnswer FakeEc2::describe_instances(const Fields& params) {
  if (auto u = unknown_param(params, {"MaxResults", "NextToken", "DryRun"}, {"InstanceId", "Filter"}))
    return ec2_error(400, "UnknownParameter", "The parameter " + *u + " is not recognized");
  auto ids = indexed(params, "InstanceId");
  auto max = int_param(params, "MaxResults", 5, 1000);
  if (max == -1) return ec2_error(400, "InvalidParameterValue", "MaxResults must be between 5 and 1000");
  if (max && !ids.empty())
    return ec2_error(400, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults");
  std::vector<Filter> filters;
  for (int n = 1;; ++n) {
    auto name = param(params, "Filter." + std::to_string(n) + ".Name");
    if (!name) break;
    static const char* kKnown[] = {"tag-key", "instance-state-name", "instance-type", "client-token", "instance-id"};
    if (!name->starts_with("tag:") && std::find(std::begin(kKnown), std::end(kKnown), *name) == std::end(kKnown))
      return ec2_error(400, "InvalidParameterValue", "The filter '" + *name + "' is invalid");
    filters.push_back({*name, indexed(params, "Filter." + std::to_string(n) + ".Value")});
  }
  const double now = clock_.now_s();
  std::vector<const Record*> picked;
  std::string missing;
  for (const auto& id : ids) {
    if (!well_formed_id(id)) return ec2_error(400, "InvalidInstanceID.Malformed", "Invalid id: \"" + id + "\"");
    if (const Record* r = find(id, now)) picked.push_back(r);
    else missing += (missing.empty() ? "" : ", ") + id;
  }
  if (!missing.empty()) return ec2_error(400, "InvalidInstanceID.NotFound", "The instance ID '" + missing + "' does not exist");
  if (ids.empty())
    for (const auto& r : records_)
      if (visible(r, now)) picked.push_back(&r);
  std::erase_if(picked, [&](const Record* r) {
    FakeInstance i = snapshot(*r, now);
    return !std::all_of(filters.begin(), filters.end(), [&](const Filter& f) { return matches(i, f); });
  });
  auto w = fake_cloud::page_at_token(picked.size(), param(params, "NextToken"), kNextTokenPrefix, max.value_or(1000), opts_.page_size);
  if (!w) return ec2_error(400, "InvalidParameterValue", "The NextToken is not valid");
  std::string xml;
  for (std::size_t i = w->begin; i < w->end; ++i) {
    const std::string& res = picked[i]->inst.reservation_id;
    if (i == w->begin || picked[i - 1]->inst.reservation_id != res) {
      if (i != w->begin) xml += "</instancesSet></item>";
      xml += "<item>" + el("reservationId", res) + el("ownerId", kOwnerId) + "<groupSet/><instancesSet>";
    }
    xml += instance_xml(*picked[i], now);
  }
  if (w->end > w->begin) xml += "</instancesSet></item>";
  std::string inner = "<reservationSet>" + xml + "</reservationSet>";
  if (w->next) inner += el("nextToken", w->next_token(kNextTokenPrefix));
  return ec2_ok("DescribeInstances", inner);
}

FakeAnswer FakeEc2::terminate_instances(const Fields& params) {
  if (auto u = unknown_param(params, {"DryRun"}, {"InstanceId"}))
    return ec2_error(400, "UnknownParameter", "The parameter " + *u + " is not recognized");
  auto ids = indexed(params, "InstanceId");
  if (ids.empty()) return ec2_error(400, "MissingParameter", "The request must contain the parameter InstanceId");
  const double now = clock_.now_s();
  std::vector<Record*> picked;
  for (const auto& id : ids) {
    if (!well_formed_id(id)) return ec2_error(400, "InvalidInstanceID.Malformed", "Invalid id: \"" + id + "\"");
    Record* r = find(id, now);
    if (!r) return ec2_error(400, "InvalidInstanceID.NotFound", "The instance ID '" + id + "' does not exist");
    picked.push_back(r);
  }
  std::string items;
  for (Record* r : picked) {
    std::string before = state_of(*r, now);
    if (!r->t.deleted_at_s || *r->t.deleted_at_s > now) {
      r->t.deleted_at_s = now;
      r->state_reason = "Client.UserInitiatedShutdown";
    }
    items += "<item>" + el("instanceId", r->inst.id) + state_xml("currentState", state_of(*r, now)) +
             state_xml("previousState", before) + "</item>";
  }
  return ec2_ok("TerminateInstances", "<instancesSet>" + items + "</instancesSet>");
}

std::vector<FakeInstance> FakeEc2::instances() const {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  std::vector<FakeInstance> out;
  for (const auto& r : records_)
    if (!state_of(r, now).empty()) out.push_back(snapshot(r, now));
  return out;
}

int FakeEc2::created() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(records_.size());
}

Status FakeEc2::interrupt(const std::string& id, std::optional<double> notice_s) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  Record* r = find(id, now);
  const std::string state = r ? state_of(*r, now) : "";
  if (!r || (state != "pending" && state != "running") || (r->t.deleted_at_s && *r->t.deleted_at_s <= now))
    return make_error(Code::not_found, "no instance " + id + " is up");
  if (r->inst.lifecycle != "spot") return make_error(Code::invalid_argument, id + " is an on-demand instance");
  if (r->notice_at_s) return make_error(Code::invalid_argument, id + " is already being interrupted");
  const double notice = notice_s.value_or(120);
  if (notice > 0) r->notice_at_s = now;
  r->t.deleted_at_s = now + notice;
  r->state_reason = "Server.SpotInstanceTermination";
  return Status{};
}

FakeAnswer FakeEc2::metadata(const std::string& method, const std::string& path, const std::string& token_header,
                             const std::string& ttl_header, const std::string& id) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  auto text = [](int status, std::string body) { return FakeAnswer{status, std::move(body), "text/plain"}; };
  if (path == "/latest/api/token") {
    if (method != "PUT") return text(405, "");
    char* end = nullptr;
    const long ttl = std::strtol(ttl_header.c_str(), &end, 10);
    if (ttl_header.empty() || *end != '\0' || ttl < 1 || ttl > 21600) return text(400, "");
    std::string token = "AQAEA" + std::to_string(next_id_++) + "-" + std::to_string(static_cast<long>(now * 1000));
    imds_tokens_[token] = now + static_cast<double>(ttl);
    return text(200, token);
  }
  auto tok = imds_tokens_.find(token_header);
  if (token_header.empty() || tok == imds_tokens_.end() || tok->second < now) return text(401, "");
  Record* r = id.empty() ? nullptr : find(id, now);
  if (!r) return text(404, "");
  if (path == "/latest/meta-data/instance-id") return text(200, r->inst.id);
  if (path == "/latest/meta-data/spot/instance-action") {
    if (!r->notice_at_s || now < *r->notice_at_s) return text(404, "");
    return text(200, "{\"action\": \"terminate\", \"time\": \"" + iso8601(*r->t.deleted_at_s) + "\"}");
  }
  return text(404, "");
}

Status FakeEc2::guest_shutdown(std::string_view id) {
  std::lock_guard lock(mu_);
  const double now = clock_.now_s();
  for (auto& r : records_) {
    if (r.inst.id != id) continue;
    std::string state = state_of(r, now);
    if (state != "pending" && state != "running") return Status{};
    if (r.inst.shutdown_behavior == "terminate") r.t.deleted_at_s = now;
    else r.t.halted_at_s = now;
    return Status{};
  }
  return make_error(Code::not_found, "no instance " + std::string(id));
}

}  // namespace tsum::providers::aws::fake
