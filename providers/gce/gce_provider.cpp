#include "providers/gce/gce_provider.h"

#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <map>

#include "common/json_util.h"
#include "providers/gce/gce_catalog.h"
#include "providers/http/codec.h"
#include "providers/instance_name.h"
#include "providers/sleep_for.h"

namespace tsum::providers::gce {

namespace {

constexpr int kMaxListPages = 1000;
constexpr std::string_view kRunLabel = "tsum-run";

InstanceState state_of(std::string_view status) {
  if (status == "PROVISIONING" || status == "STAGING") return InstanceState::pending;
  if (status == "RUNNING") return InstanceState::running;
  return InstanceState::exited;  // STOPPING, SUSPENDING, SUSPENDED, TERMINATED (stopped), REPAIRING
}

InstanceStatus status_of(const GceInstance& i) {
  return {state_of(i.status), "GCE status " + i.status, i.nat_ip.empty() ? i.internal_ip : i.nat_ip};
}

std::string data_field(const InstanceHandle& h, const char* name, const std::string& fallback) {
  return h.data.is_object() && h.data.value(name, "") != "" ? h.data.value(name, "") : fallback;
}

}  // namespace

Result<std::unique_ptr<GceProvider>> GceProvider::make(GceOptions opts) {
  if (opts.project.empty()) opts.project = opts.account.project_id;
  opts.cloud_init.spot_notice = "gce";  // instance/preempted
  if (opts.project.empty() && !opts.unusable.empty()) opts.project = "none";  // never asked: every call fails first
  if (opts.project.empty() || opts.project.find_first_of("/?#& ") != std::string::npos)
    return make_error(Code::invalid_argument, "gce: no valid project (set project or the key file's project_id)");
  if (!valid_resource_name(opts.zone)) return make_error(Code::invalid_argument, "gce: zone '" + opts.zone + "' is not valid");
  if (!valid_label_key(opts.label_key)) return make_error(Code::invalid_argument, "gce: label key '" + opts.label_key + "' is not valid");
  GceApiOptions api{.account = opts.account, .login = opts.login, .unusable = opts.unusable, .compute_endpoint = opts.compute_endpoint,
                    .billing_endpoint = opts.billing_endpoint, .token_endpoint = opts.token_endpoint,
                    .http = opts.http, .attempt_timeout = opts.attempt_timeout, .clock = opts.clock};
  auto made = GceApi::make(std::move(api));
  if (!made) return made.error();
  return std::unique_ptr<GceProvider>(new GceProvider(std::move(opts), std::move(*made)));
}

GceProvider::GceProvider(GceOptions opts, std::unique_ptr<GceApi> api) : opts_(std::move(opts)), api_(std::move(api)) {}

double GceProvider::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

std::string GceProvider::nonce() { return std::to_string(rng_()); }

std::string GceProvider::zone_path(const std::string& zone) const { return "projects/" + opts_.project + "/zones/" + zone; }

std::string GceProvider::instance_name(const LaunchSpec& spec) { return instance_name_for(spec); }

Task<Result<std::vector<Offer>>> GceProvider::offers(const Requirements& req) {
  if (!catalog_ || now_s() - catalog_at_s_ > static_cast<double>(opts_.catalog_ttl.count())) {
    auto fetched = co_await fetch_catalog(*api_, opts_.project, opts_.zone);
    if (!fetched) co_return fetched.error();
    auto image = co_await current_image();
    for (auto& o : *fetched) o.image = image;
    catalog_ = std::move(*fetched);  // once whole: a call while the image was asked for gets it too
    catalog_at_s_ = now_s();
  }
  std::vector<Offer> out;
  for (const auto& o : *catalog_)
    if (satisfies(o, req)) out.push_back(o);
  co_return out;
}

Task<Result<MachineQuota>> GceProvider::machine_quota() {
  const Requirements any;
  auto all = co_await offers(any);
  if (!all) co_return all.error();
  const std::string region = opts_.zone.substr(0, opts_.zone.rfind('-'));
  const std::string method = "GET", body, path = "projects/" + opts_.project + "/regions/" + region;
  auto got = co_await api_->compute(method, path, body);
  if (!got) co_return got.error();
  double cpus = 0, instances = 0;
  if (got->is_object() && got->contains("quotas") && (*got)["quotas"].is_array())
    for (const auto& q : (*got)["quotas"]) {
      const double limit = q.is_object() && q.contains("limit") && q["limit"].is_number() ? q["limit"].get<double>() : 0;
      if (json_str(q, "metric") == "CPUS") cpus = limit;
      if (json_str(q, "metric") == "INSTANCES") instances = limit;
    }
  auto out = machines_within(cpus, *all, "region " + region + "'s CPUS quota");
  if (instances >= 1 && instances <= 1e7 && (!out || instances < out->machines))
    out = MachineQuota{static_cast<int>(instances), "region " + region + "'s INSTANCES quota"};
  if (!out) co_return make_error(Code::not_found, "gce: region " + region + " reports no CPUS or INSTANCES quota");
  co_return *out;
}

// source_image as GCE has it now: a family (projects/P/global/images/family/F) is asked for its current image
// (images.getFromFamily), as `gcloud compute instances create --image-family` does; anything else, or a family
// that cannot be asked, is what the config names.
Task<std::string> GceProvider::current_image() {
  const std::string& family = opts_.source_image;
  const auto at = family.find("/global/images/family/");
  if (!family.starts_with("projects/") || at == std::string::npos) co_return family;
  const std::string method = "GET", body;
  auto got = co_await api_->compute(method, family, body);
  const std::string name = got && got->is_object() ? json_str(*got, "name") : "";
  co_return name.empty() || !valid_resource_name(name) ? family : family.substr(0, at) + "/global/images/" + name;
}

Result<InsertSpec> GceProvider::insert_spec(const Offer& offer, const LaunchSpec& spec) const {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, "gce: " + why); };
  if (offer.instance_type.empty()) return bad("offer without a machine type");
  if (spec.idempotency_token.empty()) return bad("create needs an idempotency token");
  if (spec.tag.empty() || !valid_label_value(spec.tag))
    return bad("tag '" + spec.tag + "' is not a GCE label value (lowercase letters, digits, _ and -, at most 63)");
  if (!valid_label_value(spec.run_id)) return bad("run id '" + spec.run_id + "' is not a GCE label value");
  if (opts_.source_image.empty()) return bad("no source_image configured");
  if (!spec.zone.empty() && !valid_resource_name(spec.zone)) return bad("zone '" + spec.zone + "' is not valid");
  auto user_data = cloud_init_user_data(spec, opts_.cloud_init);
  if (!user_data) return user_data.error();
  return InsertSpec{.name = instance_name(spec), .zone = spec.zone.empty() ? opts_.zone : spec.zone,
                    .machine_type = offer.instance_type,
                    .source_image = offer.image.empty() ? opts_.source_image : offer.image, .disk_gb = opts_.disk_gb, .network = opts_.network,
                    .labels = {{opts_.label_key, spec.tag}, {std::string(kRunLabel), spec.run_id}},
                    .metadata = {{"user-data", *user_data}}, .max_run_duration = opts_.max_run_duration,
                    .gpus = offer.gpus > 0, .spot = spec.market == "spot"};
}

InstanceHandle GceProvider::handle_of(const GceInstance& i, double created_at, std::string_view tag) const {
  InstanceHandle h{"gce", i.name,
                   {{"project", opts_.project}, {"zone", i.zone.empty() ? opts_.zone : i.zone}, {"instance_id", i.id},
                    {"machine_type", i.machine_type}, {"created_at_s", created_at}}};
  if (!tag.empty()) h.data["tag"] = std::string(tag);
  return h;
}

Task<Result<GceOperation>> GceProvider::wait_for(const std::string& zone, GceOperation op) {
  const auto deadline = std::chrono::steady_clock::now() + opts_.operation_deadline;
  while (op.status != "DONE") {
    if (std::chrono::steady_clock::now() + opts_.operation_poll > deadline)
      co_return make_error(Code::timeout, "gce: operation " + op.name + " not done within " +
                                              std::to_string(opts_.operation_deadline.count()) + " ms");
    co_await sleep_for(opts_.operation_poll);
    const std::string path = zone_path(zone) + "/operations/" + op.name, method = "GET", body;
    auto answer = co_await api_->compute(method, path, body);
    if (!answer) co_return answer.error();
    auto parsed = parse_operation(*answer);
    if (!parsed) co_return parsed.error();
    op = std::move(*parsed);
  }
  co_return op;
}

Task<Result<InstanceHandle>> GceProvider::adopt(const InsertSpec& s, const LaunchSpec& spec, double created_at) {
  const std::string path = zone_path(s.zone) + "/instances/" + s.name, method = "GET", body;
  auto answer = co_await api_->compute(method, path, body);
  if (!answer) co_return answer.error();
  auto i = parse_instance(*answer);
  if (!i) co_return i.error();
  auto run = i->labels.find(std::string(kRunLabel));
  if (run == i->labels.end() || run->second != spec.run_id || i->labels[opts_.label_key] != spec.tag)
    co_return make_error(Code::already_exists, "gce: instance name " + s.name + " is taken by another run's instance");
  co_return handle_of(*i, created_at, spec.tag);
}

Task<Result<InstanceHandle>> GceProvider::create(const Offer& offer, const LaunchSpec& spec) {
  auto s = insert_spec(offer, spec);
  if (!s) co_return s.error();
  const double created_at = now_s();
  const std::string path = zone_path(s->zone) + "/instances?requestId=" + uuid_for(spec.idempotency_token + "#" + nonce());
  const std::string method = "POST", body = insert_body(*s).dump();
  auto answer = co_await api_->compute(method, path, body);
  if (!answer && answer.code() == Code::already_exists) co_return co_await adopt(*s, spec, created_at);
  if (!answer) co_return answer.error();
  auto op = parse_operation(*answer);
  if (!op) co_return op.error();
  auto done = co_await wait_for(s->zone, std::move(*op));
  if (!done) co_return done.error();
  if (!done->error_code.empty()) co_return operation_error("gce: insert " + s->name, *done);
  GceInstance created{.name = s->name, .id = done->target_id, .zone = s->zone, .machine_type = s->machine_type};
  auto h = handle_of(created, created_at, spec.tag);
  if (spec.market == "spot") h.data["spot"] = true;  // describe then asks whether GCE preempted it
  co_return h;
}

Task<Result<InstanceStatus>> GceProvider::describe(const InstanceHandle& h) {
  if (h.id.empty()) co_return make_error(Code::invalid_argument, "gce: handle without an instance name");
  const std::string path = zone_path(data_field(h, "zone", opts_.zone)) + "/instances/" + h.id, method = "GET", body;
  auto answer = co_await api_->compute(method, path, body);
  // Named values around co_await: GCC 12 mishandles temporaries inside co_await expressions.
  InstanceStatus st{InstanceState::gone, "GCE does not know the instance", ""};
  if (!answer && answer.code() != Code::not_found) co_return answer.error();
  if (answer) {
    auto i = parse_instance(*answer);
    if (!i) co_return i.error();
    st = status_of(*i);
  }
  InstanceStatus out = co_await with_preemption(h, st);
  co_return out;
}

// A Spot VM that is no longer running: GCE records a preemption as a compute.instances.preempted operation of its
// zone (the instance itself says only STOPPING, TERMINATED or nothing once deleted).
Task<InstanceStatus> GceProvider::with_preemption(const InstanceHandle& h, InstanceStatus st) {
  const bool spot = h.data.is_object() && h.data.value("spot", false);
  if (!spot || st.state == InstanceState::running || st.state == InstanceState::pending) co_return st;
  const std::string path = zone_path(data_field(h, "zone", opts_.zone)) +
                           "/operations?filter=" + http::uri_encode("operationType=\"compute.instances.preempted\"");
  const std::string method = "GET", body;
  auto ops = co_await api_->compute(method, path, body);
  if (!ops || !ops->is_object() || !ops->contains("items") || !(*ops)["items"].is_array()) co_return st;
  const std::string id = data_field(h, "instance_id", "");
  for (const auto& op : (*ops)["items"]) {
    const bool same = (!id.empty() && op.value("targetId", "") == id) ||
                      op.value("targetLink", "").ends_with("/instances/" + h.id);
    if (same) {
      st.interrupted = true;
      st.detail += " (preempted: compute.instances.preempted)";
      break;
    }
  }
  co_return st;
}

Task<std::vector<Result<InstanceStatus>>> GceProvider::describe_many(const std::vector<InstanceHandle>& handles) {
  // One listing per ownership tag (a daemon has one), keyed by zone/name.
  std::map<std::string, Result<std::map<std::string, GceInstance>>> by_tag;
  for (const auto& h : handles) {
    const std::string tag = data_field(h, "tag", "");
    if (tag.empty() || by_tag.count(tag) || data_field(h, "project", opts_.project) != opts_.project) continue;
    auto listed = co_await list_labelled(tag);
    if (!listed) {
      by_tag.emplace(tag, listed.error());
      continue;
    }
    std::map<std::string, GceInstance> found;
    for (auto& i : *listed) found[i.zone + "/" + i.name] = std::move(i);
    by_tag.emplace(tag, std::move(found));
  }
  std::vector<Result<InstanceStatus>> out;
  for (const auto& h : handles) {
    auto listing = by_tag.find(data_field(h, "tag", ""));
    if (listing != by_tag.end() && !listing->second) {
      out.push_back(listing->second.error());
      continue;
    }
    if (listing != by_tag.end()) {
      auto it = listing->second->find(data_field(h, "zone", opts_.zone) + "/" + h.id);
      if (it != listing->second->end()) {
        InstanceStatus listed = status_of(it->second);
        InstanceStatus st = co_await with_preemption(h, listed);
        out.push_back(std::move(st));
        continue;
      }
    }
    auto one = co_await describe(h);  // no tag to list by, or not listed: gone (404) or relabelled
    out.push_back(std::move(one));
  }
  co_return out;
}

Task<Status> GceProvider::terminate(const InstanceHandle& h) {
  if (h.id.empty()) co_return make_error(Code::invalid_argument, "gce: handle without an instance name");
  const std::string zone = data_field(h, "zone", opts_.zone);
  const std::string path = zone_path(zone) + "/instances/" + h.id + "?requestId=" + uuid_for("delete " + h.id + "#" + nonce());
  const std::string method = "DELETE", body;
  auto answer = co_await api_->compute(method, path, body);
  if (!answer && answer.code() == Code::not_found) co_return Status{};  // gone already
  if (!answer) co_return answer.error();
  auto op = parse_operation(*answer);
  if (!op) co_return op.error();
  if (!op->error_code.empty()) co_return operation_error("gce: delete " + h.id, *op);
  co_return Status{};
}

Task<Result<std::vector<InstanceHandle>>> GceProvider::list_tagged(std::string_view tag) {
  if (!valid_label_value(tag)) co_return make_error(Code::invalid_argument, "gce: tag '" + std::string(tag) + "' is not a label value");
  const std::string wanted(tag);
  auto listed = co_await list_labelled(wanted);
  if (!listed) co_return listed.error();
  std::vector<InstanceHandle> out;
  for (const auto& i : *listed) out.push_back(handle_of(i, 0, wanted));
  co_return out;
}

Task<Result<std::vector<GceInstance>>> GceProvider::list_labelled(const std::string& tag) {
  std::vector<GceInstance> out;
  const std::string filter = "labels." + opts_.label_key + " = \"" + tag + "\"";
  std::string token;
  for (int page = 0; page < kMaxListPages; ++page) {
    const std::string path = "projects/" + opts_.project + "/aggregated/instances?filter=" + http::uri_encode(filter) +
                             "&maxResults=500&returnPartialSuccess=true" +
                             (token.empty() ? "" : "&pageToken=" + http::uri_encode(token));
    const std::string method = "GET", body;
    auto answer = co_await api_->compute(method, path, body);
    if (!answer) co_return answer.error();
    auto parsed = parse_aggregated_instances(*answer);
    if (!parsed) co_return parsed.error();
    for (auto& i : parsed->items) out.push_back(std::move(i));
    if (parsed->next_page_token.empty()) co_return out;
    token = parsed->next_page_token;
  }
  co_return make_error(Code::internal, "Compute aggregated instances: more than 1000 pages");
}

}  // namespace tsum::providers::gce
