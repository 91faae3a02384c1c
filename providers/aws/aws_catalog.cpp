#include "providers/aws/aws_catalog.h"

#include <algorithm>
#include <map>

#include "providers/aws/ec2_xml.h"
#include "providers/aws/price_list.h"

namespace tsum::providers::aws {

namespace {

constexpr int kMaxPages = 200;  // a listing longer than this is a server that keeps handing out tokens

Error too_many_pages(std::string_view what) {
  return make_error(Code::internal, std::string(what) + ": more than " + std::to_string(kMaxPages) + " pages");
}

Task<Result<std::vector<InstanceTypeInfo>>> instance_types(AwsApi& api) {
  std::vector<InstanceTypeInfo> out;
  std::string token;
  for (int page = 0; page < kMaxPages; ++page) {
    Fields params{{"MaxResults", "100"}};
    if (!token.empty()) params.emplace_back("NextToken", token);
    auto xml = co_await api.ec2("DescribeInstanceTypes", params);
    if (!xml) co_return xml.error();
    auto parsed = parse_describe_instance_types(*xml);
    if (!parsed) co_return parsed.error();
    out.insert(out.end(), parsed->items.begin(), parsed->items.end());
    if (parsed->next_token.empty()) co_return out;
    token = parsed->next_token;
  }
  co_return too_many_pages("DescribeInstanceTypes");
}

Task<Result<std::map<std::string, double>>> on_demand_prices(AwsApi& api) {
  std::map<std::string, double> out;
  std::string token;
  for (int page = 0; page < kMaxPages; ++page) {
    const std::string body = get_products_body(api.options().region, token);
    auto answer = co_await api.pricing(kGetProductsTarget, body);
    if (!answer) co_return answer.error();
    auto parsed = parse_get_products(*answer);
    if (!parsed) co_return parsed.error();
    for (const auto& p : parsed->items)
      if (auto [it, fresh] = out.emplace(p.instance_type, p.usd_per_hour); !fresh) it->second = std::min(it->second, p.usd_per_hour);
    if (parsed->next_token.empty()) co_return out;
    token = parsed->next_token;
  }
  co_return too_many_pages("GetProducts");
}

std::string iso8601_now(const AwsApi& api) {
  double now = api.options().clock ? api.options().clock->now_s() : SystemClock().now_s();
  std::string d = amz_date(std::chrono::system_clock::time_point(std::chrono::seconds(static_cast<long long>(now))));
  // 20240101T000000Z -> 2024-01-01T00:00:00Z
  return d.substr(0, 4) + "-" + d.substr(4, 2) + "-" + d.substr(6, 5) + ":" + d.substr(11, 2) + ":" + d.substr(13);
}

struct SpotQuote {
  double price = 0;
  std::string zone, timestamp;
};

// The lowest current spot price of each type over the region's zones, with its zone and time.
Task<Result<std::map<std::string, SpotQuote>>> spot_prices(AwsApi& api) {
  std::map<std::string, SpotQuote> out;
  std::string token;
  for (int page = 0; page < kMaxPages; ++page) {
    Fields params{{"ProductDescription.1", "Linux/UNIX"}, {"StartTime", iso8601_now(api)}, {"MaxResults", "1000"}};
    if (!token.empty()) params.emplace_back("NextToken", token);
    auto xml = co_await api.ec2("DescribeSpotPriceHistory", params);
    if (!xml) co_return xml.error();
    auto parsed = parse_spot_price_history(*xml);
    if (!parsed) co_return parsed.error();
    for (const auto& p : parsed->items)
      if (auto [it, fresh] = out.emplace(p.instance_type, SpotQuote{p.price, p.availability_zone, p.timestamp});
          !fresh && p.price < it->second.price)
        it->second = {p.price, p.availability_zone, p.timestamp};
    if (parsed->next_token.empty()) co_return out;
    token = parsed->next_token;
  }
  co_return too_many_pages("DescribeSpotPriceHistory");
}

}  // namespace

Task<Result<std::vector<Offer>>> fetch_catalog(AwsApi& api) {
  auto types = co_await instance_types(api);
  if (!types) co_return types.error();
  auto prices = co_await on_demand_prices(api);
  if (!prices) co_return prices.error();
  auto spot = co_await spot_prices(api);
  const std::string region = api.options().region;
  std::vector<Offer> out;
  for (const auto& t : *types) {
    auto price = prices->find(t.instance_type);
    if (price == prices->end()) continue;  // not sold on demand for Linux here
    Offer o{.provider = "aws", .instance_type = t.instance_type, .vcpus = t.vcpus,
            .memory_gib = static_cast<double>(t.memory_mib) / 1024.0, .gpus = t.gpus, .gpu_type = t.gpu_type,
            .hourly_price = price->second, .currency = "USD", .region = region,
            .note = "EC2 on-demand, Linux, shared tenancy"};
    if (!spot) o.note += "; spot prices unavailable: " + spot.error().detail;
    else if (auto s = spot->find(t.instance_type); s != spot->end()) {
      o.spot_hourly_price = s->second.price;
      o.spot_source = "EC2 DescribeSpotPriceHistory, Linux/UNIX, lowest zone " + s->second.zone + ", as of " +
                      s->second.timestamp;
    }
    out.push_back(std::move(o));
  }
  std::stable_sort(out.begin(), out.end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; });
  co_return out;
}

}  // namespace tsum::providers::aws
