// Yandex offers: Yandex Compute has no machine types, only a platform plus a number of cores, GiB of RAM
// and GPUs, each billed by its own Billing SKU. tsum offers a configured list of shapes and prices each as
// cores x the platform's "<stem>. 100% vCPU" rate (core*hour) + GiB x its "<stem>. RAM" rate (gbyte*hour) +
// GPUs x its "<stem>. GPU" rate (gpu*hour), from the Billing API's SKUs of Compute Cloud (billing/v1/skus,
// every page through nextPageToken). A SKU's rate is its newest STREET_PRICE pricing version in effect, the
// tier that starts at 0; unit prices are decimal strings, kept as integer nanos until the sum.
// Assumed, to be checked against `yc billing sku list`: the SKU names by platform (platform_stems), that
// 100% core fraction is what tsum launches, and that preemptible and committed-use SKUs are other names.
// A shape whose parts do not all have a rate gets no offer.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "providers/provider.h"
#include "providers/yandex/yandex_api.h"

namespace tsum::providers::yandex {

inline constexpr std::string_view kComputeServiceId = "dn22pas77ftg9h3f2djj";

struct Shape {
  std::string platform;  // standard-v3, gpu-standard-v3, ...
  int cores = 2;
  int memory_gib = 8;
  int gpus = 0;
  std::string name() const;  // "standard-v3-2c-8g", "gpu-standard-v3-28c-119g-1gpu"
};

// Ice Lake from 2 to 32 cores at 2 and 4 GiB a core, one V100 and one and two A100 shapes.
std::vector<Shape> default_shapes();

struct PlatformStems {
  std::string_view stem;      // "Intel Ice Lake"
  std::string_view gpu_type;  // "nvidia-a100"; empty for none
};
std::optional<PlatformStems> platform_stems(std::string_view platform);

struct BillingSku {
  std::string name = {};
  std::string pricing_unit = {};  // core*hour, gbyte*hour, gpu*hour
  long long nanos_per_unit = -1;  // the rate in effect; -1: none
};

struct SkuPage {
  std::vector<BillingSku> items = {};
  std::string next_page_token;
};

// Rates as of now_s. internal for a malformed unit price.
Result<SkuPage> parse_sku_page(const nlohmann::json& j, double now_s);

// Offers for every shape whose parts all have a rate, cheapest first.
std::vector<Offer> price_shapes(const std::vector<Shape>& shapes, const std::vector<BillingSku>& skus,
                                std::string_view zone, std::string_view currency);

// Every page of Compute Cloud's SKUs, then price_shapes.
Task<Result<std::vector<Offer>>> fetch_catalog(YandexApi& api, const std::vector<Shape>& shapes, const std::string& zone,
                                               const std::string& currency, double now_s);

}  // namespace tsum::providers::yandex
