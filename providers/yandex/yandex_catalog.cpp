#include "providers/yandex/yandex_catalog.h"

#include <algorithm>

#include "common/json_util.h"
#include "providers/hetzner/hetzner_json.h"
#include "providers/http/codec.h"

namespace tsum::providers::yandex {

namespace {

constexpr int kMaxPages = 1000;
constexpr int kNanoScale = 9;

// The newest STREET_PRICE version in effect at now_s, its tier from 0: nanos per unit; -1 for none.
Result<long long> rate_of(const nlohmann::json& sku, double now_s) {
  double best_time = -1;
  long long best = -1;
  for (const auto& v : json_array_at(sku, "pricingVersions")) {
    if (json_str(v, "type") != "STREET_PRICE") continue;
    auto effective = parse_rfc3339(json_str(v, "effectiveTime"));
    if (!effective || *effective > now_s || *effective < best_time) continue;
    for (const auto& e : json_array_at(v, "pricingExpressions"))
      for (const auto& r : json_array_at(e, "rates")) {
        if (json_str(r, "startPricingQuantity") != "0") continue;
        auto nanos = hetzner::parse_decimal(json_str(r, "unitPrice"), kNanoScale);
        if (!nanos) return make_error(Code::internal, "Billing: SKU '" + json_str(sku, "name") + "': unitPrice " + nanos.error().detail);
        best_time = *effective;
        best = *nanos;
      }
  }
  return best;
}

}  // namespace

std::string Shape::name() const {
  return platform + "-" + std::to_string(cores) + "c-" + std::to_string(memory_gib) + "g" +
         (gpus > 0 ? "-" + std::to_string(gpus) + "gpu" : "");
}

std::vector<Shape> default_shapes() {
  std::vector<Shape> out;
  for (int cores : {2, 4, 8, 16, 32})
    for (int per_core : {2, 4}) out.push_back({"standard-v3", cores, cores * per_core, 0});
  out.push_back({"gpu-standard-v2", 8, 48, 1});
  out.push_back({"gpu-standard-v3", 28, 119, 1});
  out.push_back({"gpu-standard-v3", 56, 238, 2});
  return out;
}

std::optional<PlatformStems> platform_stems(std::string_view platform) {
  static const std::map<std::string_view, PlatformStems> kStems{
      {"standard-v1", {"Intel Broadwell", ""}},
      {"standard-v2", {"Intel Cascade Lake", ""}},
      {"standard-v3", {"Intel Ice Lake", ""}},
      {"gpu-standard-v2", {"Intel Cascade Lake with NVIDIA Tesla V100", "nvidia-v100"}},
      {"gpu-standard-v3", {"AMD EPYC with NVIDIA Ampere A100", "nvidia-a100"}}};
  auto it = kStems.find(platform);
  if (it == kStems.end()) return std::nullopt;
  return it->second;
}

Result<SkuPage> parse_sku_page(const nlohmann::json& j, double now_s) {
  if (!j.is_object()) return make_error(Code::internal, "Billing: a SKU page is not a JSON object");
  SkuPage page{.next_page_token = json_str(j, "nextPageToken")};
  for (const auto& s : json_array_at(j, "skus")) {
    auto rate = rate_of(s, now_s);
    if (!rate) return rate.error();
    page.items.push_back({json_str(s, "name"), json_str(s, "pricingUnit"), *rate});
  }
  return page;
}

std::vector<Offer> price_shapes(const std::vector<Shape>& shapes, const std::vector<BillingSku>& skus,
                                std::string_view zone, std::string_view currency) {
  auto rate = [&](const std::string& name, std::string_view unit) -> long long {
    for (const auto& s : skus)
      if (s.name == name && s.pricing_unit == unit) return s.nanos_per_unit;
    return -1;
  };
  std::vector<Offer> out;
  for (const auto& shape : shapes) {
    auto stems = platform_stems(shape.platform);
    if (!stems) continue;
    const std::string stem(stems->stem);
    const long long core = rate(stem + ". 100% vCPU", "core*hour"), ram = rate(stem + ". RAM", "gbyte*hour");
    const long long gpu = shape.gpus > 0 ? rate(stem + ". GPU", "gpu*hour") : 0;
    if (core < 0 || ram < 0 || gpu < 0) continue;
    const long long nanos = shape.cores * core + shape.memory_gib * ram + shape.gpus * gpu;
    out.push_back({.provider = "yandex", .instance_type = shape.name(), .vcpus = shape.cores,
                   .memory_gib = static_cast<double>(shape.memory_gib), .gpus = shape.gpus,
                   .gpu_type = shape.gpus > 0 ? std::string(stems->gpu_type) : "",
                   .hourly_price = static_cast<double>(nanos) / 1e9, .currency = std::string(currency),
                   .region = std::string(zone),
                   .note = "Yandex Compute " + shape.platform + ", 100% vCPU; sum of Billing SKU rates (cores, RAM, GPUs), billed per second"});
  }
  std::stable_sort(out.begin(), out.end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; });
  return out;
}

Task<Result<std::vector<Offer>>> fetch_catalog(YandexApi& api, const std::vector<Shape>& shapes, const std::string& zone,
                                               const std::string& currency, double now_s) {
  std::vector<BillingSku> skus;
  std::string token;
  const std::string filter = "serviceId=\"" + std::string(kComputeServiceId) + "\"";
  for (int page = 0; page < kMaxPages; ++page) {
    const std::string path = "skus?currency=" + http::uri_encode(currency) + "&filter=" + http::uri_encode(filter) +
                             "&pageSize=1000" + (token.empty() ? "" : "&pageToken=" + http::uri_encode(token));
    const std::string method = "GET", body;
    auto answer = co_await api.call(Service::billing, method, path, body);
    if (!answer) co_return answer.error();
    auto parsed = parse_sku_page(*answer, now_s);
    if (!parsed) co_return parsed.error();
    skus.insert(skus.end(), parsed->items.begin(), parsed->items.end());
    if (parsed->next_page_token.empty()) co_return price_shapes(shapes, skus, zone, currency);
    token = parsed->next_page_token;
  }
  co_return make_error(Code::internal, "Billing skus: more than 1000 pages");
}

}  // namespace tsum::providers::yandex
