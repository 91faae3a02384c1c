#include "providers/hetzner/hetzner_provider.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "providers/http/codec.h"
#include "providers/instance_name.h"

namespace tsum::providers::hetzner {

namespace {

constexpr int kMaxPages = 1000;
constexpr int kPerPage = 50;
constexpr std::size_t kMaxUserData = 32 * 1024;
constexpr std::string_view kRunLabel = "tsum-run";

InstanceState state_of(std::string_view status) {
  if (status == "initializing" || status == "starting") return InstanceState::pending;
  if (status == "running") return InstanceState::running;
  return InstanceState::exited;  // stopping, off, deleting, rebuilding, migrating, unknown: still billed
}

InstanceStatus status_of(const HetznerServer& s) {
  return {state_of(s.status), "Hetzner status " + s.status, s.ipv4.empty() ? s.ipv6 : s.ipv4};
}

std::string money(long long scaled) {
  std::string digits = std::to_string(scaled);
  if (digits.size() <= static_cast<std::size_t>(kPriceScale)) digits.insert(0, kPriceScale + 1 - digits.size(), '0');
  std::string out = digits.substr(0, digits.size() - kPriceScale) + "." + digits.substr(digits.size() - kPriceScale);
  while (out.back() == '0' && out[out.size() - 3] != '.') out.pop_back();
  return out;
}

}  // namespace

Result<std::unique_ptr<HetznerProvider>> HetznerProvider::make(HetznerOptions opts) {
  if (opts.location.empty()) return make_error(Code::invalid_argument, "hetzner: no location");
  if (!valid_label(opts.label_key, false)) return make_error(Code::invalid_argument, "hetzner: label key '" + opts.label_key + "' is not valid");
  auto api = HetznerApi::make({.token = opts.token, .unusable = opts.unusable, .endpoint = opts.endpoint, .http = opts.http,
                               .attempt_timeout = opts.attempt_timeout});
  if (!api) return api.error();
  return std::unique_ptr<HetznerProvider>(new HetznerProvider(std::move(opts), std::move(*api)));
}

HetznerProvider::HetznerProvider(HetznerOptions opts, std::unique_ptr<HetznerApi> api)
    : opts_(std::move(opts)), api_(std::move(api)) {}

double HetznerProvider::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

std::string HetznerProvider::server_name(const LaunchSpec& spec) { return instance_name_for(spec); }

Result<CreateServer> HetznerProvider::create_spec(const Offer& offer, const LaunchSpec& spec) const {
  auto bad = [](const std::string& why) { return make_error(Code::invalid_argument, "hetzner: " + why); };
  if (offer.instance_type.empty()) return bad("offer without a server type");
  if (spec.idempotency_token.empty()) return bad("create needs an idempotency token");
  if (!valid_label(spec.tag, false)) return bad("tag '" + spec.tag + "' is not a Hetzner label value");
  if (!valid_label(spec.run_id, false)) return bad("run id '" + spec.run_id + "' is not a Hetzner label value");
  auto user_data = cloud_init_user_data(spec, opts_.cloud_init);
  if (!user_data) return user_data.error();
  if (user_data->size() > kMaxUserData) return bad("user data over Hetzner's 32 KiB");
  return CreateServer{.name = server_name(spec), .server_type = offer.instance_type, .image = opts_.image,
                      .location = opts_.location, .user_data = *user_data,
                      .labels = {{opts_.label_key, spec.tag}, {std::string(kRunLabel), spec.run_id}},
                      .ssh_keys = opts_.ssh_keys};
}

InstanceHandle HetznerProvider::handle_of(const HetznerServer& s, double created_at) const {
  return {"hetzner", std::to_string(s.id),
          {{"name", s.name}, {"location", s.location.empty() ? opts_.location : s.location},
           {"server_type", s.server_type}, {"created_at_s", created_at}}};
}

Task<Result<InstanceHandle>> HetznerProvider::adopt(const CreateServer& c, const LaunchSpec& spec, double created_at) {
  const std::string path = "servers?name=" + http::uri_encode(c.name), method = "GET", body;
  auto answer = co_await api_->call(method, path, body);
  if (!answer) co_return answer.error();
  auto servers = answer->value("servers", nlohmann::json::array());
  if (!servers.is_array() || servers.empty())
    co_return make_error(Code::unavailable, "hetzner: server name " + c.name + " is taken, but no server has it (being deleted?)");
  auto s = parse_server(servers[0]);
  if (!s) co_return s.error();
  auto run = s->labels.find(std::string(kRunLabel));
  if (run == s->labels.end() || run->second != spec.run_id || s->labels[opts_.label_key] != spec.tag)
    co_return make_error(Code::already_exists, "hetzner: server name " + c.name + " is taken by another run's server");
  if (s->status == "deleting")
    co_return make_error(Code::unavailable, "hetzner: this launch's server " + c.name + " is being deleted; create again later");
  co_return handle_of(*s, created_at);
}

Task<Result<InstanceHandle>> HetznerProvider::create(const Offer& offer, const LaunchSpec& spec) {
  auto c = create_spec(offer, spec);
  if (!c) co_return c.error();
  const double created_at = now_s();
  const std::string path = "servers", method = "POST", body = create_body(*c).dump();
  auto answer = co_await api_->call(method, path, body);
  if (!answer && answer.code() == Code::already_exists) co_return co_await adopt(*c, spec, created_at);
  if (!answer) co_return answer.error();
  auto s = parse_server(answer->value("server", nlohmann::json()));
  if (!s) co_return s.error();
  co_return handle_of(*s, created_at);
}

Task<Result<InstanceStatus>> HetznerProvider::describe(const InstanceHandle& h) {
  if (h.id.empty()) co_return make_error(Code::invalid_argument, "hetzner: handle without a server id");
  const std::string path = "servers/" + http::uri_encode(h.id), method = "GET", body;
  auto answer = co_await api_->call(method, path, body);
  if (!answer && answer.code() == Code::not_found) co_return InstanceStatus{InstanceState::gone, "Hetzner does not know the server", ""};
  if (!answer) co_return answer.error();
  auto s = parse_server(answer->value("server", nlohmann::json()));
  if (!s) co_return s.error();
  co_return status_of(*s);
}

Task<std::vector<Result<InstanceStatus>>> HetznerProvider::describe_many(const std::vector<InstanceHandle>& handles) {
  std::vector<Result<InstanceStatus>> out;
  if (handles.empty()) co_return out;
  const std::string selector(kRunLabel);  // the label every server tsum creates carries
  auto listed = co_await list_servers(selector);
  std::map<std::string, const HetznerServer*> by_id;
  if (listed)
    for (const auto& s : *listed) by_id[std::to_string(s.id)] = &s;
  for (const auto& h : handles) {
    auto it = by_id.find(h.id);
    if (!listed) {
      out.push_back(listed.error());
    } else if (it != by_id.end()) {
      out.push_back(status_of(*it->second));
    } else {
      auto one = co_await describe(h);  // not listed: gone (404), or a server without tsum's label
      out.push_back(std::move(one));
    }
  }
  co_return out;
}

Task<Status> HetznerProvider::terminate(const InstanceHandle& h) {
  if (h.id.empty()) co_return make_error(Code::invalid_argument, "hetzner: handle without a server id");
  const std::string path = "servers/" + http::uri_encode(h.id), method = "DELETE", body;
  auto answer = co_await api_->call(method, path, body);
  if (!answer && answer.code() == Code::not_found) co_return Status{};  // deleted already
  if (!answer) co_return answer.error();
  auto action = answer->value("action", nlohmann::json::object());
  if (action.is_object() && action.value("status", "") == "error")
    co_return make_error(Code::unavailable, "Hetzner DELETE /servers/" + h.id + ": the delete action failed");
  co_return Status{};
}

Task<Result<std::vector<InstanceHandle>>> HetznerProvider::list_tagged(std::string_view tag) {
  if (!valid_label(tag, false)) co_return make_error(Code::invalid_argument, "hetzner: tag '" + std::string(tag) + "' is not a label value");
  const std::string selector = opts_.label_key + "==" + std::string(tag);
  auto servers = co_await list_servers(selector);
  if (!servers) co_return servers.error();
  std::vector<InstanceHandle> out;
  for (const auto& s : *servers) out.push_back(handle_of(s, 0));
  co_return out;
}

Task<Result<std::vector<HetznerServer>>> HetznerProvider::list_servers(const std::string& selector) {
  std::vector<HetznerServer> out;
  long page = 1;
  for (int n = 0; n < kMaxPages; ++n) {
    const std::string path = "servers?label_selector=" + http::uri_encode(selector) + "&page=" + std::to_string(page) +
                             "&per_page=" + std::to_string(kPerPage);
    const std::string method = "GET", body;
    auto answer = co_await api_->call(method, path, body);
    if (!answer) co_return answer.error();
    for (const auto& j : answer->value("servers", nlohmann::json::array())) {
      auto s = parse_server(j);
      if (!s) co_return s.error();
      out.push_back(std::move(*s));
    }
    auto next = next_page(*answer);
    if (!next) co_return out;
    if (*next <= page) co_return make_error(Code::internal, "Hetzner GET /servers: next_page does not advance");
    page = *next;
  }
  co_return make_error(Code::internal, "Hetzner GET /servers: more than 1000 pages");
}

Task<Result<std::vector<Offer>>> HetznerProvider::fetch_catalog() {
  std::vector<Offer> out;
  long page = 1;
  for (int n = 0;; ++n) {
    if (n == kMaxPages) co_return make_error(Code::internal, "Hetzner GET /server_types: more than 1000 pages");
    const std::string path = "server_types?page=" + std::to_string(page) + "&per_page=" + std::to_string(kPerPage);
    const std::string method = "GET", body;
    auto answer = co_await api_->call(method, path, body);
    if (!answer) co_return answer.error();
    for (const auto& j : answer->value("server_types", nlohmann::json::array())) {
      auto t = parse_server_type(j);
      if (!t) co_return t.error();
      auto price = std::find_if(t->prices.begin(), t->prices.end(), [&](const auto& p) { return p.location == opts_.location; });
      if (t->deprecated || price == t->prices.end()) continue;
      out.push_back({.provider = "hetzner", .instance_type = t->name, .vcpus = t->cores, .memory_gib = t->memory_gb,
                     .hourly_price = static_cast<double>(price->hourly_net) / 1e12, .currency = "EUR",
                     .region = opts_.location,
                     .note = "Hetzner Cloud, " + t->cpu_type + " " + t->architecture + " vCPU; EUR excl. VAT, billed hourly, capped at " +
                             money(price->monthly_net) + " a month"});
    }
    auto next = next_page(*answer);
    if (!next) break;
    if (*next <= page) co_return make_error(Code::internal, "Hetzner GET /server_types: next_page does not advance");
    page = *next;
  }
  std::stable_sort(out.begin(), out.end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; });
  co_return out;
}

Task<Result<std::vector<Offer>>> HetznerProvider::offers(const Requirements& req) {
  if (!catalog_ || now_s() - catalog_at_s_ > static_cast<double>(opts_.catalog_ttl.count())) {
    auto fetched = co_await fetch_catalog();
    if (!fetched) co_return fetched.error();
    catalog_ = std::move(*fetched);
    catalog_at_s_ = now_s();
    for (auto& o : *catalog_) o.image = opts_.image;  // a system image's name, e.g. ubuntu-22.04
  }
  std::vector<Offer> out;
  for (const auto& o : *catalog_)
    if (satisfies(o, req)) out.push_back(o);
  co_return out;
}

}  // namespace tsum::providers::hetzner
