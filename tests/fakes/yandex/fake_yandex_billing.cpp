#include "tests/fakes/yandex/fake_yandex_billing.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "tests/fakes/cloud/pagination.h"
#include "providers/yandex/yandex_catalog.h"

namespace tsum::providers::yandex::fake {

namespace {

struct FakeSku {
  std::string name, unit;
  double rub;
};

std::vector<FakeSku> skus() {
  return {{"Intel Broadwell. 100% vCPU", "core*hour", 1.25},
          {"Intel Broadwell. RAM", "gbyte*hour", 0.33},
          {"Intel Cascade Lake. 100% vCPU", "core*hour", 1.05},
          {"Intel Cascade Lake. RAM", "gbyte*hour", 0.28},
          {"Intel Ice Lake. 100% vCPU", "core*hour", 1.12},
          {"Intel Ice Lake. RAM", "gbyte*hour", 0.2976},
          {"Intel Ice Lake. 100% vCPU. Preemptible instances", "core*hour", 0.33},
          {"Intel Cascade Lake with NVIDIA Tesla V100. 100% vCPU", "core*hour", 1.08},
          {"Intel Cascade Lake with NVIDIA Tesla V100. RAM", "gbyte*hour", 0.2976},
          {"Intel Cascade Lake with NVIDIA Tesla V100. GPU", "gpu*hour", 174.24},
          {"AMD EPYC with NVIDIA Ampere A100. 100% vCPU", "core*hour", 1.12},
          {"AMD EPYC with NVIDIA Ampere A100. RAM", "gbyte*hour", 0.2976},
          {"AMD EPYC with NVIDIA Ampere A100. GPU", "gpu*hour", 265.0},
          {"Fast network drive (SSD)", "gbyte*month", 11.91}};
}

std::string money(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

nlohmann::json sku_json(const FakeSku& s, std::size_t index, double factor) {
  auto version = [&](const char* when, double price) {
    return nlohmann::json{{"type", "STREET_PRICE"}, {"effectiveTime", when},
                          {"pricingExpressions", {{{"rates", {{{"startPricingQuantity", "0"}, {"unitPrice", money(price * factor)},
                                                                {"currency", factor == 1.0 ? "RUB" : "USD"}}}}}}}};
  };
  char id[32];
  std::snprintf(id, sizeof id, "dn2fakesku%010zu", index);
  return {{"id", id}, {"name", s.name}, {"description", s.name}, {"serviceId", std::string(kComputeServiceId)},
          {"pricingUnit", s.unit},
          {"pricingVersions", {version("2022-01-01T00:00:00Z", s.rub * 0.8), version("2024-01-01T00:00:00Z", s.rub),
                               version("2099-01-01T00:00:00Z", s.rub * 3)}}};
}

}  // namespace

YcAnswer list_skus(const std::map<std::string, std::string>& query, int page_size) {
  auto currency = query.find("currency");
  if (currency == query.end() || (currency->second != "RUB" && currency->second != "USD"))
    return yc_error(400, "Illegal argument currency: RUB or USD");
  if (auto f = query.find("filter"); f != query.end() && f->second != "serviceId=\"" + std::string(kComputeServiceId) + "\"")
    return yc_error(400, "Illegal filter '" + f->second + "'");
  auto page = fake_cloud::number_param(query, "pageSize", 1, 1000, 1000);
  if (!page) return yc_error(400, "Illegal argument pageSize");
  const auto all = skus();
  auto token = query.contains("pageToken") ? std::optional(query.at("pageToken")) : std::nullopt;
  auto w = fake_cloud::page_at_token(all.size(), token, "", *page, page_size);
  if (!w) return yc_error(400, "Illegal argument pageToken");
  const double factor = currency->second == "RUB" ? 1.0 : 1.0 / 90;
  nlohmann::json out{{"skus", nlohmann::json::array()}};
  for (std::size_t i = w->begin; i < w->end; ++i) out["skus"].push_back(sku_json(all[i], i, factor));
  if (w->next) out["nextPageToken"] = w->next_token();
  return {200, out};
}

}  // namespace tsum::providers::yandex::fake
