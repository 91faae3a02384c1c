// The fake Azure's catalog: a few VM sizes as the Resource SKUs API lists them (capabilities vCPUs,
// MemoryGB, GPUs; one size restricted for the subscription in westeurope), and their Retail Prices API
// items: per size and region a Linux Consumption price, a Windows one, a Spot and a Low Priority one, a
// DevTest one, plus a reservation. Prices are plausible, not Azure's. Pure functions, no I/O.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/fakes/azure/fake_arm.h"

namespace tsum::providers::azure::fake {

inline const std::vector<std::string> kFakeLocations{"westeurope", "eastus"};

struct FakeSize {
  std::string name;
  int vcpus;
  double memory_gb;
  int gpus;
  double linux_hourly;  // westeurope, USD; eastus is 10% cheaper
  std::string series;   // the productName's series
};

const std::vector<FakeSize>& fake_sizes();

// GET .../providers/Microsoft.Compute/skus with $filter=location eq '<loc>' (or none: every location);
// $skiptoken paging by page_size, nextLink under base_url.
ArmAnswer list_resource_skus(const std::map<std::string, std::string>& query, int page_size, const std::string& base_url,
                             const std::string& subscription);

struct RetailPaging {
  int page_size = 100;
  bool drop_next_page_link = false;  // answer without NextPageLink (the client must fall back to $skip)
};

// GET /api/retail/prices with $filter ("field eq 'value'" joined by " and ", fields serviceName,
// armRegionName, priceType, armSkuName) and $skip; 400 for anything else.
ArmAnswer list_retail_prices(const std::map<std::string, std::string>& query, const RetailPaging& paging,
                             const std::string& prices_url);

}  // namespace tsum::providers::azure::fake
