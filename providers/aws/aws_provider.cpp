#include "providers/aws/aws_provider.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <map>

#include "common/json_util.h"
#include "providers/aws/aws_catalog.h"
#include "providers/aws/ec2_xml.h"

namespace tsum::providers::aws {

namespace {

constexpr std::size_t kMaxClientToken = 64;
constexpr std::size_t kMaxFilterValues = 200;  // EC2's limit on the values of one filter

InstanceState state_of(std::string_view ec2_state) {
  if (ec2_state == "pending") return InstanceState::pending;
  if (ec2_state == "running") return InstanceState::running;
  if (ec2_state == "terminated") return InstanceState::gone;
  return InstanceState::exited;  // shutting-down, stopping, stopped
}

InstanceHandle handle_of(const Ec2Instance& i, const std::string& region, double created_at_s) {
  return {"aws", i.id,
          {{"region", region}, {"instance_type", i.instance_type}, {"client_token", i.client_token},
           {"launch_time", i.launch_time}, {"created_at_s", created_at_s}}};
}

void add_tag(Fields& params, int n, const std::string& key, const std::string& value) {
  std::string prefix = "TagSpecification.1.Tag." + std::to_string(n);
  params.emplace_back(prefix + ".Key", key);
  params.emplace_back(prefix + ".Value", value);
}

}  // namespace

Result<std::unique_ptr<AwsProvider>> AwsProvider::make(AwsOptions opts) {
  if (opts.regions.empty()) opts.regions = {opts.region};
  opts.region = opts.regions.front();
  if (opts.tag_key.empty()) return make_error(Code::invalid_argument, "aws: empty tag key");
  opts.cloud_init.spot_notice = "aws";  // IMDSv2 spot/instance-action
  std::map<std::string, std::unique_ptr<AwsApi>> apis;
  for (const auto& region : opts.regions) {
    if (region.empty()) return make_error(Code::invalid_argument, "aws: no region");
    if (apis.count(region)) return make_error(Code::invalid_argument, "aws: region " + region + " is named twice");
    AwsApiOptions api{.region = region,
                      .credentials = opts.credentials,
                      .credential_source = opts.credential_source,
                      .ec2_endpoint = opts.ec2_endpoint.empty() ? "https://ec2." + region + ".amazonaws.com"
                                                                : opts.ec2_endpoint,
                      .pricing_endpoint = opts.pricing_endpoint.empty() ? "https://api.pricing.us-east-1.amazonaws.com"
                                                                        : opts.pricing_endpoint,
                      .ssm_endpoint = opts.ssm_endpoint,
                      .quotas_endpoint = opts.quotas_endpoint,
                      .http = opts.http,
                      .attempt_timeout = opts.attempt_timeout,
                      .clock = opts.clock};
    auto made = AwsApi::make(std::move(api));
    if (!made) return made.error();
    apis[region] = std::move(*made);
  }
  return std::unique_ptr<AwsProvider>(new AwsProvider(std::move(opts), std::move(apis)));
}

AwsProvider::AwsProvider(AwsOptions opts, std::map<std::string, std::unique_ptr<AwsApi>> apis)
    : opts_(std::move(opts)), apis_(std::move(apis)) {}

AwsApi* AwsProvider::api(const std::string& region) {
  auto it = apis_.find(region.empty() ? opts_.region : region);
  return it == apis_.end() ? nullptr : it->second.get();
}

namespace {
std::string region_of(const InstanceHandle& h) {
  return h.data.is_object() && h.data.contains("region") && h.data["region"].is_string() ? h.data["region"].get<std::string>()
                                                                                        : "";
}
}  // namespace

double AwsProvider::now_s() const { return opts_.clock ? opts_.clock->now_s() : system_clock_.now_s(); }

std::string AwsProvider::client_token(std::string_view token) {
  bool printable = std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; });
  return token.size() <= kMaxClientToken && printable ? std::string(token) : sha256_hex(token);
}

Task<Result<std::vector<Offer>>> AwsProvider::offers(const Requirements& req) {
  std::vector<Offer> out;
  for (const auto& region : opts_.regions) {  // the default region's offers first
    auto& api = *apis_.at(region);
    if (!catalog_.count(region) || now_s() - catalog_at_s_[region] > static_cast<double>(opts_.catalog_ttl.count())) {
      auto fetched = co_await fetch_catalog(api);
      if (!fetched) co_return make_error(fetched.code(), region + ": " + fetched.error().detail);
      for (auto& o : *fetched) {  // each type's image (amd64 or arm64), found once with the prices
        auto ami = co_await image(region, o.instance_type);
        o.image = ami ? *ami : std::string();
      }
      // Published once whole: a call while the images were asked for gets them too, not a catalog without them.
      catalog_[region] = std::move(*fetched);
      catalog_at_s_[region] = now_s();
    }
    for (const auto& o : catalog_[region])
      if (satisfies(o, req)) out.push_back(o);
  }
  co_return out;
}

namespace {
// Graviton families (a "g" after the generation digit: t4g, m7g, c7gn, r8g, ...) boot arm64 images.
bool arm64_type(const std::string& type) {
  auto dot = type.find('.');
  std::string family = type.substr(0, dot);
  for (std::size_t i = 1; i < family.size(); ++i)
    if (std::isdigit(static_cast<unsigned char>(family[i - 1])) && family[i] == 'g') return true;
  return false;
}
std::string ssm_get_parameter_body(const std::string& name) { return nlohmann::json{{"Name", name}}.dump(); }
}  // namespace

Task<Result<std::string>> AwsProvider::image(const std::string& region, const std::string& instance_type) {
  if (!opts_.image_id.empty()) co_return opts_.image_id;
  std::string name = opts_.image_parameter;
  if (arm64_type(instance_type))
    if (auto at = name.find("amd64"); at != std::string::npos) name.replace(at, 5, "arm64");
  AwsApi* regional = api(region);
  if (!regional) co_return make_error(Code::invalid_argument, "aws: region " + region + " is not configured");
  const std::string key = regional->options().region + " " + name;
  if (auto it = images_.find(key); it != images_.end()) co_return it->second;
  auto body = co_await regional->ssm("AmazonSSM.GetParameter", ssm_get_parameter_body(name));
  if (!body) co_return make_error(body.code(), "aws: finding the image (" + name + "): " + body.error().detail +
                                                   (body.code() == Code::not_found ? "; set image_id or image_parameter" : ""));
  auto doc = parse_json_safely(*body);
  std::string ami = doc && doc->is_object() && doc->contains("Parameter") && (*doc)["Parameter"].is_object()
                        ? json_str((*doc)["Parameter"], "Value") : "";
  if (!ami.starts_with("ami-")) co_return make_error(Code::internal, "aws: SSM parameter " + name + " holds no AMI id");
  images_[key] = ami;
  co_return ami;
}

Task<Result<MachineQuota>> AwsProvider::machine_quota() {
  const Requirements any;
  auto all = co_await offers(any);
  if (!all) co_return all.error();
  std::vector<Offer> standard;  // the quota counts the standard families' vCPUs (A, C, D, H, I, M, R, T, Z)
  for (auto& o : *all)
    if (o.region == opts_.regions.front() && o.gpus == 0) standard.push_back(o);
  const std::string body = nlohmann::json{{"ServiceCode", "ec2"}, {"QuotaCode", "L-1216C47A"}}.dump();
  auto got = co_await apis_.at(opts_.regions.front())->service_quotas("ServiceQuotasV20190624.GetServiceQuota", body);
  if (!got) co_return got.error();
  auto doc = parse_json_safely(*got);
  double limit = 0;
  if (doc && doc->is_object() && doc->contains("Quota") && (*doc)["Quota"].is_object() && (*doc)["Quota"].contains("Value") &&
      (*doc)["Quota"]["Value"].is_number())
    limit = (*doc)["Quota"]["Value"].get<double>();
  auto q = machines_within(limit, standard, "the On-Demand Standard vCPU quota");
  if (!q) co_return make_error(Code::not_found, "aws: Service Quotas gave no vCPU quota");
  co_return *q;
}

Result<Fields> AwsProvider::run_instances_params(const Offer& offer, const LaunchSpec& spec, const std::string& image) const {
  if (offer.instance_type.empty()) return make_error(Code::invalid_argument, "aws: offer without an instance type");
  if (spec.idempotency_token.empty()) return make_error(Code::invalid_argument, "aws: create needs an idempotency token");
  if (spec.tag.empty()) return make_error(Code::invalid_argument, "aws: create needs an ownership tag");
  if (!spec.zone.empty() && !opts_.subnet_id.empty())
    return make_error(Code::invalid_argument, "aws: zone " + spec.zone + " with subnet_id " + opts_.subnet_id +
                                                  ": a subnet is in one zone; leave subnet_id out to move between zones");
  auto user_data = cloud_init_user_data(spec, opts_.cloud_init);
  if (!user_data) return user_data.error();
  Fields p{{"ImageId", image},
           {"InstanceType", offer.instance_type},
           {"MinCount", "1"},
           {"MaxCount", "1"},
           {"ClientToken", client_token(spec.idempotency_token)},
           {"UserData", base64_encode(*user_data)},
           {"InstanceInitiatedShutdownBehavior", "terminate"},
           {"TagSpecification.1.ResourceType", "instance"}};
  add_tag(p, 1, opts_.tag_key, spec.tag);
  add_tag(p, 2, "tsum-run", spec.run_id);
  add_tag(p, 3, "Name", "tsum-run-" + spec.run_id);
  if (spec.market == "spot") {  // one-time: an interruption terminates it (the daemon resumes elsewhere)
    p.emplace_back("InstanceMarketOptions.MarketType", "spot");
    p.emplace_back("InstanceMarketOptions.SpotOptions.SpotInstanceType", "one-time");
    p.emplace_back("InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior", "terminate");
  }
  if (!opts_.key_name.empty()) p.emplace_back("KeyName", opts_.key_name);
  if (!opts_.subnet_id.empty()) p.emplace_back("SubnetId", opts_.subnet_id);
  if (!spec.zone.empty()) p.emplace_back("Placement.AvailabilityZone", spec.zone);
  for (std::size_t i = 0; i < opts_.security_group_ids.size(); ++i)
    p.emplace_back("SecurityGroupId." + std::to_string(i + 1), opts_.security_group_ids[i]);
  return p;
}

Task<Result<InstanceHandle>> AwsProvider::create(const Offer& offer, const LaunchSpec& spec) {
  AwsApi* regional = api(offer.region);
  if (!regional) co_return make_error(Code::invalid_argument, "aws: region " + offer.region + " is not configured");
  auto ami = co_await image(offer.region, offer.instance_type);
  if (!ami) co_return ami.error();
  auto params = run_instances_params(offer, spec, *ami);
  if (!params) co_return params.error();
  const double created_at = now_s();
  auto xml = co_await regional->ec2("RunInstances", *params);
  if (!xml) co_return xml.error();
  auto instances = parse_run_instances(*xml);
  if (!instances) co_return instances.error();
  if (instances->size() != 1 || instances->front().id.empty())
    co_return make_error(Code::internal, "EC2 RunInstances: expected one instance, got " +
                                             std::to_string(instances->size()));
  InstanceHandle h = handle_of(instances->front(), regional->options().region, created_at);
  h.data["image_id"] = *ami;  // shown on the run
  co_return h;
}

Task<Result<InstanceStatus>> AwsProvider::describe(const InstanceHandle& h) {
  if (h.id.empty()) co_return make_error(Code::invalid_argument, "aws: handle without an instance id");
  AwsApi* regional = api(region_of(h));
  if (!regional) co_return make_error(Code::invalid_argument, "aws: region " + region_of(h) + " is not configured");
  const Fields params{{"InstanceId.1", h.id}};
  auto xml = co_await regional->ec2("DescribeInstances", params);
  if (!xml && xml.code() != Code::not_found) co_return xml.error();
  std::optional<Ec2Instance> found;
  if (xml) {
    auto page = parse_describe_instances(*xml);
    if (!page) co_return page.error();
    for (auto& i : page->items)
      if (i.id == h.id) found = std::move(i);
  }
  co_return status_of(h, found ? &*found : nullptr);
}

InstanceStatus AwsProvider::status_of(const InstanceHandle& h, const Ec2Instance* found) const {
  if (!found) {
    double created = h.data.is_object() ? h.data.value("created_at_s", 0.0) : 0.0;
    if (created > 0 && now_s() - created < static_cast<double>(opts_.visibility_grace.count()))
      return {InstanceState::pending, "not visible yet (EC2 is eventually consistent)", ""};
    return {InstanceState::gone, "EC2 does not know the instance", ""};
  }
  std::string address = found->public_ip.empty() ? found->private_ip : found->public_ip;
  InstanceStatus st{state_of(found->state), "EC2 state " + found->state, address};
  if (!found->state_reason.empty()) st.detail += " (" + found->state_reason + ")";
  // EC2 took a spot instance back (its capacity, price or constraints): the state reason says so.
  st.interrupted = found->state_reason.starts_with("Server.SpotInstance");
  return st;
}

Task<std::vector<Result<InstanceStatus>>> AwsProvider::describe_many(const std::vector<InstanceHandle>& handles) {
  // The instance-id filter (unlike InstanceId.N) lists what exists and skips what does not, so one unknown
  // id does not fail the call for the others. One listing per region the handles are in.
  std::map<std::string, std::vector<std::string>> ids;  // by region
  for (const auto& h : handles) {
    auto& in = ids[region_of(h).empty() ? opts_.region : region_of(h)];
    if (!h.id.empty() && std::find(in.begin(), in.end(), h.id) == in.end()) in.push_back(h.id);
  }
  std::map<std::string, Ec2Instance> listed;
  std::map<std::string, Error> failed;  // by region
  for (const auto& [region, in] : ids) {
    AwsApi* regional = api(region);
    if (!regional) {
      failed[region] = {Code::invalid_argument, "aws: region " + region + " is not configured"};
      continue;
    }
    for (std::size_t from = 0; from < in.size() && !failed.count(region); from += kMaxFilterValues) {
      std::string token;
      for (int page = 0; page < 1000; ++page) {
        Fields params{{"Filter.1.Name", "instance-id"}, {"MaxResults", "1000"}};
        for (std::size_t i = from; i < std::min(in.size(), from + kMaxFilterValues); ++i)
          params.emplace_back("Filter.1.Value." + std::to_string(i - from + 1), in[i]);
        if (!token.empty()) params.emplace_back("NextToken", token);
        auto xml = co_await regional->ec2("DescribeInstances", params);
        if (!xml) {
          failed[region] = xml.error();
          break;
        }
        auto parsed = parse_describe_instances(*xml);
        if (!parsed) {
          failed[region] = parsed.error();
          break;
        }
        for (auto& i : parsed->items) listed[i.id] = std::move(i);
        if (parsed->next_token.empty()) break;
        token = parsed->next_token;
      }
    }
  }
  std::vector<Result<InstanceStatus>> out;
  for (const auto& h : handles) {
    auto f = failed.find(region_of(h).empty() ? opts_.region : region_of(h));
    if (h.id.empty()) out.push_back(make_error(Code::invalid_argument, "aws: handle without an instance id"));
    else if (f != failed.end()) out.push_back(f->second);
    else {
      auto it = listed.find(h.id);
      out.push_back(status_of(h, it == listed.end() ? nullptr : &it->second));
    }
  }
  co_return out;
}

Task<Status> AwsProvider::terminate(const InstanceHandle& h) {
  if (h.id.empty()) co_return make_error(Code::invalid_argument, "aws: handle without an instance id");
  AwsApi* regional = api(region_of(h));
  if (!regional) co_return make_error(Code::invalid_argument, "aws: region " + region_of(h) + " is not configured");
  const Fields params{{"InstanceId.1", h.id}};
  auto xml = co_await regional->ec2("TerminateInstances", params);
  if (!xml && xml.code() == Code::not_found) co_return Status{};  // gone already
  if (!xml) co_return xml.error();
  auto states = parse_terminate_instances(*xml);
  if (!states) co_return states.error();
  if (!states->count(h.id)) co_return make_error(Code::internal, "EC2 TerminateInstances: answer does not mention " + h.id);
  co_return Status{};
}

Task<Result<std::vector<InstanceHandle>>> AwsProvider::list_tagged(std::string_view tag) {
  std::vector<InstanceHandle> out;
  for (const auto& region : opts_.regions) {
    AwsApi& regional = *apis_.at(region);
    std::string token;
    for (int page = 0;; ++page) {
      if (page == 1000) co_return make_error(Code::internal, "EC2 DescribeInstances: more than 1000 pages");
      Fields params{{"Filter.1.Name", "tag:" + opts_.tag_key}, {"Filter.1.Value.1", std::string(tag)},
                    {"Filter.2.Name", "instance-state-name"}, {"MaxResults", "1000"}};
      const char* live[] = {"pending", "running", "shutting-down", "stopping", "stopped"};
      for (int i = 0; i < 5; ++i) params.emplace_back("Filter.2.Value." + std::to_string(i + 1), live[i]);
      if (!token.empty()) params.emplace_back("NextToken", token);
      auto xml = co_await regional.ec2("DescribeInstances", params);
      if (!xml) co_return make_error(xml.code(), region + ": " + xml.error().detail);
      auto parsed = parse_describe_instances(*xml);
      if (!parsed) co_return parsed.error();
      for (const auto& i : parsed->items) out.push_back(handle_of(i, region, 0));
      if (parsed->next_token.empty()) break;
      token = parsed->next_token;
    }
  }
  co_return out;
}

}  // namespace tsum::providers::aws
