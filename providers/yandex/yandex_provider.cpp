#include "providers/yandex/yandex_provider.h"

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <map>

#include "providers/http/codec.h"
#include "providers/instance_name.h"
#include "providers/sleep_for.h"

namespace tsum::providers::yandex {

namespace {

constexpr int kMaxListPages = 1000;
constexpr int kPageSize = 1000;
constexpr std::string_view kRunLabel = "tsum-run";
constexpr long long kGiB = 1LL << 30;
constexpr std::size_t kMaxUserData = 256 * 1024;  // Yandex's metadata limit

InstanceState state_of(std::string_view status) {
  if (status == "PROVISIONING" || status == "STARTING") return InstanceState::pending;
  if (status == "RUNNING") return InstanceState::running;
  return InstanceState::exited;  // STOPPING, STOPPED, RESTARTING, UPDATING, ERROR, CRASHED, DELETING
}

InstanceStatus status_of(const YandexInstance& i) {
  return {state_of(i.status), "Yandex status " + i.status, i.nat_ip.empty() ? i.internal_ip : i.nat_ip};
}

bool plain_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 && id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

}  // namespace

Result<std::unique_ptr<YandexProvider>> YandexProvider::make(YandexOptions opts) {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, "yandex: " + why); };
  if (opts.folder_id.empty() && !opts.unusable.empty()) opts.folder_id = "none";  // never asked: every call fails first
  if (!plain_id(opts.folder_id)) return bad("no valid folder id");
  if (!opts.subnet_id.empty() && !plain_id(opts.subnet_id)) return bad("no valid subnet id");
  if (!opts.image_id.empty() && !plain_id(opts.image_id)) return bad("no valid image id");
  if (!plain_id(opts.image_family) || !plain_id(opts.image_folder)) return bad("no valid image family or folder");
  if (!valid_instance_name(opts.zone)) return bad("zone '" + opts.zone + "' is not valid");
  if (!valid_label_key(opts.label_key)) return bad("label key '" + opts.label_key + "' is not valid");
  if (opts.shapes.empty()) return bad("no shapes to offer");
  auto api = YandexApi::make({.key = opts.key, .oauth_token = opts.oauth_token, .metadata = opts.metadata,
                              .metadata_host = opts.metadata_host,
                              .unusable = opts.unusable, .iam_endpoint = opts.iam_endpoint,
                              .compute_endpoint = opts.compute_endpoint, .operation_endpoint = opts.operation_endpoint,
                              .billing_endpoint = opts.billing_endpoint, .vpc_endpoint = opts.vpc_endpoint,
                              .http = opts.http, .attempt_timeout = opts.attempt_timeout, .clock = opts.clock});
  if (!api) return api.error();
  return std::unique_ptr<YandexProvider>(new YandexProvider(std::move(opts), std::move(*api)));
}

YandexProvider::YandexProvider(YandexOptions opts, std::unique_ptr<YandexApi> api) : opts_(std::move(opts)), api_(std::move(api)) {}

double YandexProvider::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

std::string YandexProvider::instance_name(const LaunchSpec& spec) { return instance_name_for(spec); }

Task<Result<std::vector<Offer>>> YandexProvider::offers(const Requirements& req) {
  if (!catalog_ || now_s() - catalog_at_s_ > static_cast<double>(opts_.catalog_ttl.count())) {
    auto fetched = co_await fetch_catalog(*api_, opts_.shapes, opts_.zone, opts_.currency, now_s());
    if (!fetched) co_return fetched.error();
    auto found = co_await image();  // the family's latest, found once with the prices; unknown if it cannot be
    for (auto& o : *fetched) o.image = found ? *found : std::string();
    catalog_ = std::move(*fetched);  // once whole: a call while the image was asked for gets it too
    catalog_at_s_ = now_s();
  }
  std::vector<Offer> out;
  for (const auto& o : *catalog_)
    if (satisfies(o, req))
      out.push_back(o);
  co_return out;
}

Result<CreateInstance> YandexProvider::create_spec(const Offer& offer, const LaunchSpec& spec) const {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, "yandex: " + why); };
  auto shape = std::find_if(opts_.shapes.begin(), opts_.shapes.end(), [&](const Shape& s) { return s.name() == offer.instance_type; });
  if (shape == opts_.shapes.end()) return bad("offer '" + offer.instance_type + "' is not one of the configured shapes");
  if (spec.idempotency_token.empty()) return bad("create needs an idempotency token");
  if (spec.tag.empty() || !valid_label_value(spec.tag)) return bad("tag '" + spec.tag + "' is not a Yandex label value");
  if (!valid_label_value(spec.run_id)) return bad("run id '" + spec.run_id + "' is not a Yandex label value");
  if (!spec.zone.empty() && spec.zone != opts_.zone)
    return bad("zone " + spec.zone + ": the configured subnet is in " + opts_.zone + " (a subnet belongs to one zone)");
  auto user_data = cloud_init_user_data(spec, opts_.cloud_init);
  if (!user_data) return user_data.error();
  if (user_data->size() > kMaxUserData) return bad("user data over Yandex's 256 KiB");
  return CreateInstance{.folder_id = opts_.folder_id, .name = instance_name(spec), .zone_id = opts_.zone,
                        .platform_id = shape->platform, .cores = shape->cores, .memory_bytes = shape->memory_gib * kGiB,
                        .gpus = shape->gpus, .image_id = opts_.image_id, .disk_bytes = opts_.disk_gb * kGiB,
                        .disk_type = opts_.disk_type, .subnet_id = opts_.subnet_id, .user_data = *user_data,
                        .labels = {{opts_.label_key, spec.tag}, {std::string(kRunLabel), spec.run_id}},
                        .preemptible = spec.market == "spot"};
}

InstanceHandle YandexProvider::handle_of(const std::string& id, const std::string& name, const std::string& platform,
                                         double created_at) const {
  return {"yandex", id,
          {{"folder", opts_.folder_id}, {"zone", opts_.zone}, {"name", name}, {"platform", platform}, {"created_at_s", created_at}}};
}

Task<Result<YandexOperation>> YandexProvider::wait_for(YandexOperation op, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!op.done) {
    if (std::chrono::steady_clock::now() + opts_.operation_poll > until)
      co_return make_error(Code::timeout, "yandex: operation " + op.id + " not done within " + std::to_string(deadline.count()) + " ms");
    co_await sleep_for(opts_.operation_poll);
    const std::string path = http::uri_encode(op.id), method = "GET", body;
    auto answer = co_await api_->call(Service::operation, method, path, body);
    if (!answer) co_return answer.error();
    auto parsed = parse_operation(*answer);
    if (!parsed) co_return parsed.error();
    op = std::move(*parsed);
  }
  co_return op;
}

Task<Result<InstanceHandle>> YandexProvider::adopt(const CreateInstance& c, const LaunchSpec& spec, double created_at) {
  const std::string path = "instances?folderId=" + http::uri_encode(opts_.folder_id) + "&filter=" + http::uri_encode("name=\"" + c.name + "\"");
  const std::string method = "GET", body;
  auto answer = co_await api_->call(Service::compute, method, path, body);
  if (!answer) co_return answer.error();
  auto page = parse_instance_page(*answer);
  if (!page) co_return page.error();
  if (page->items.empty())
    co_return make_error(Code::unavailable, "yandex: instance name " + c.name + " is taken, but no instance has it (being deleted?)");
  const YandexInstance& i = page->items[0];
  auto run = i.labels.find(std::string(kRunLabel));
  auto tag = i.labels.find(opts_.label_key);
  if (run == i.labels.end() || run->second != spec.run_id || tag == i.labels.end() || tag->second != spec.tag)
    co_return make_error(Code::already_exists, "yandex: instance name " + c.name + " is taken by another run's instance");
  if (i.status == "DELETING")
    co_return make_error(Code::unavailable, "yandex: this launch's instance " + c.name + " is being deleted; create again later");
  co_return handle_of(i.id, i.name, c.platform_id, created_at);
}

Task<Result<std::string>> YandexProvider::image() {
  if (!opts_.image_id.empty()) co_return opts_.image_id;
  if (!image_id_.empty()) co_return image_id_;
  const std::string path = "images:latestByFamily?folderId=" + http::uri_encode(opts_.image_folder) +
                           "&family=" + http::uri_encode(opts_.image_family);
  const std::string method = "GET", body;
  auto answer = co_await api_->call(Service::compute, method, path, body);
  if (!answer) co_return answer.error();
  const std::string id = answer->value("id", "");
  if (!plain_id(id)) co_return make_error(Code::internal, "yandex: the latest image of family " + opts_.image_family + " has no id");
  image_id_ = id;
  co_return id;
}

Task<Result<std::pair<std::string, std::string>>> YandexProvider::image_and_subnet() {
  auto img = co_await image();
  if (!img) co_return img.error();
  if (!opts_.subnet_id.empty()) co_return std::pair{*img, opts_.subnet_id};
  if (subnet_id_.empty()) {
    const std::string path = "subnets?folderId=" + http::uri_encode(opts_.folder_id), method = "GET", body;
    auto answer = co_await api_->call(Service::vpc, method, path, body);
    if (!answer) co_return answer.error();
    if (auto list = answer->find("subnets"); list != answer->end() && list->is_array())
      for (const auto& sn : *list)
        if (sn.is_object() && sn.value("zoneId", "") == opts_.zone && plain_id(sn.value("id", ""))) {
          subnet_id_ = sn.value("id", "");
          break;
        }
    if (subnet_id_.empty())
      co_return make_error(Code::invalid_argument, "yandex: folder " + opts_.folder_id + " has no subnet in " + opts_.zone +
                                                       "; create one ('yc vpc subnet create') or give subnet_id");
  }
  co_return std::pair{*img, subnet_id_};
}

Task<Result<InstanceHandle>> YandexProvider::create(const Offer& offer, const LaunchSpec& spec) {
  auto found = co_await image_and_subnet();
  if (!found) co_return found.error();
  auto c = create_spec(offer, spec);
  if (!c) co_return c.error();
  c->image_id = found->first;
  c->subnet_id = found->second;
  const double created_at = now_s();
  const std::string path = "instances", method = "POST", body = create_body(*c).dump();
  auto answer = co_await api_->call(Service::compute, method, path, body);
  if (!answer && answer.code() == Code::already_exists) co_return co_await adopt(*c, spec, created_at);
  if (!answer) co_return answer.error();
  auto op = parse_operation(*answer);
  if (!op) co_return op.error();
  const std::string instance_id = op->instance_id;
  auto done = co_await wait_for(std::move(*op), opts_.operation_deadline);
  if (!done) co_return done.error();
  if (done->error_code != 0) co_return operation_error("yandex: create " + c->name, *done);
  if (instance_id.empty() && done->instance_id.empty())
    co_return make_error(Code::internal, "yandex: create " + c->name + ": the operation names no instance");
  co_return handle_of(instance_id.empty() ? done->instance_id : instance_id, c->name, c->platform_id, created_at);
}

Task<Result<InstanceStatus>> YandexProvider::describe(const InstanceHandle& h) {
  if (!plain_id(h.id)) co_return make_error(Code::invalid_argument, "yandex: handle without a valid instance id");
  const std::string path = "instances/" + h.id, method = "GET", body;
  auto answer = co_await api_->call(Service::compute, method, path, body);
  if (!answer && answer.code() == Code::not_found) co_return InstanceStatus{InstanceState::gone, "Yandex does not know the instance", ""};
  if (!answer) co_return answer.error();
  auto i = parse_instance(*answer);
  if (!i) co_return i.error();
  co_return status_of(*i);
}

Task<std::vector<Result<InstanceStatus>>> YandexProvider::describe_many(const std::vector<InstanceHandle>& handles) {
  std::vector<Result<InstanceStatus>> out;
  if (handles.empty()) co_return out;
  auto listed = co_await list_folder();
  std::map<std::string, const YandexInstance*> by_id;
  if (listed)
    for (const auto& i : *listed) by_id[i.id] = &i;
  for (const auto& h : handles) {
    auto it = by_id.find(h.id);
    if (!listed) {
      out.push_back(listed.error());
    } else if (it != by_id.end()) {
      out.push_back(status_of(*it->second));
    } else {
      auto one = co_await describe(h);  // not listed: gone (404), or in another folder
      out.push_back(std::move(one));
    }
  }
  co_return out;
}

Task<Status> YandexProvider::terminate(const InstanceHandle& h) {
  if (!plain_id(h.id)) co_return make_error(Code::invalid_argument, "yandex: handle without a valid instance id");
  const std::string path = "instances/" + h.id, method = "DELETE", body;
  auto answer = co_await api_->call(Service::compute, method, path, body);
  if (!answer && answer.code() == Code::not_found) co_return Status{};  // deleted already
  if (!answer && answer.code() == Code::invalid_argument) {
    auto now = co_await describe(h);  // FAILED_PRECONDITION: another delete may be under way
    if (now && (now->state == InstanceState::gone || now->detail == "Yandex status DELETING")) co_return Status{};
  }
  if (!answer) co_return answer.error();
  auto op = parse_operation(*answer);
  if (!op) co_return op.error();
  auto done = co_await wait_for(std::move(*op), opts_.delete_deadline);
  if (!done) co_return done.error();
  if (done->error_code == 5) co_return Status{};  // NOT_FOUND: another delete won
  if (done->error_code != 0) co_return operation_error("yandex: delete " + h.id, *done);
  co_return Status{};
}

Task<Result<std::vector<InstanceHandle>>> YandexProvider::list_tagged(std::string_view tag) {
  if (tag.empty() || !valid_label_value(tag)) co_return make_error(Code::invalid_argument, "yandex: tag '" + std::string(tag) + "' is not a label value");
  const std::string wanted(tag);  // the caller's view may not outlive the co_await
  auto listed = co_await list_folder();
  if (!listed) co_return listed.error();
  std::vector<InstanceHandle> out;
  for (const auto& i : *listed) {
    auto label = i.labels.find(opts_.label_key);
    if (label != i.labels.end() && label->second == wanted) out.push_back(handle_of(i.id, i.name, i.platform_id, 0));
  }
  co_return out;
}

Task<Result<std::vector<YandexInstance>>> YandexProvider::list_folder() {
  std::vector<YandexInstance> out;
  std::string token;
  for (int page = 0; page < kMaxListPages; ++page) {
    const std::string path = "instances?folderId=" + http::uri_encode(opts_.folder_id) + "&pageSize=" + std::to_string(kPageSize) +
                             (token.empty() ? "" : "&pageToken=" + http::uri_encode(token));
    const std::string method = "GET", body;
    auto answer = co_await api_->call(Service::compute, method, path, body);
    if (!answer) co_return answer.error();
    auto parsed = parse_instance_page(*answer);
    if (!parsed) co_return parsed.error();
    for (auto& i : parsed->items) out.push_back(std::move(i));
    if (parsed->next_page_token.empty()) co_return out;
    token = parsed->next_page_token;
  }
  co_return make_error(Code::internal, "Compute instances list: more than 1000 pages");
}

}  // namespace tsum::providers::yandex
