// Azure offers for one location: VM sizes from the Resource SKUs API (Microsoft.Compute/skus, vCPUs,
// MemoryGB and GPUs capabilities; sizes restricted for the subscription there left out), prices from the
// Retail Prices API (prices.azure.com/api/retail/prices, no authentication), filtered server-side by
// serviceName 'Virtual Machines', armRegionName and priceType 'Consumption'. A size's on-demand Linux price
// is its cheapest "1 Hour" Consumption item that is not a Spot, Low Priority or Windows meter. Retail pages
// are followed through NextPageLink; a page without one that is as full as the first is followed by $skip
// (the API has been seen to drop the link), until an empty page. Both listings stop at 1000 pages.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "providers/azure/azure_api.h"
#include "providers/provider.h"

namespace tsum::providers::azure {

struct RetailPrice {
  std::string arm_sku_name = {};   // Standard_D2s_v5
  std::string arm_region_name = {};
  std::string product_name = {};   // Virtual Machines Dsv5 Series (Windows)
  std::string sku_name = {};       // D2s v5 Spot
  std::string meter_name = {};
  std::string service_name = {};
  std::string type = {};           // Consumption, Reservation, DevTestConsumption
  std::string unit_of_measure = {};
  std::string currency = {};
  double retail_price = 0;
};

struct RetailPage {
  std::vector<RetailPrice> items;
  std::string next_page_link;  // empty: none given
};

// internal for a page without Items or an item with a non-numeric or negative price.
Result<RetailPage> parse_retail_page(const nlohmann::json& j);

// Consumption, per hour, Virtual Machines, and neither Spot, Low Priority nor Windows.
bool linux_on_demand(const RetailPrice& p);

// armSkuName -> the cheapest linux_on_demand price in region.
std::map<std::string, RetailPrice> on_demand_prices(const std::vector<RetailPrice>& items, std::string_view region);

struct VmSku {
  std::string name = {};
  int vcpus = 0;
  double memory_gib = 0;
  int gpus = 0;
  bool restricted = false;  // NotAvailableForSubscription (or otherwise restricted) in the location
};

struct SkuPage {
  std::vector<VmSku> items;  // virtualMachines offered in the location only
  std::string next_link;
};

Result<SkuPage> parse_sku_page(const nlohmann::json& j, std::string_view location);

// A few GPU families by size name (T4, A10, A100, H100, V100); empty when not known.
std::string gpu_type_of(std::string_view size);

// Offers for every unrestricted size with a price, cheapest first.
std::vector<Offer> price_sizes(const std::vector<VmSku>& sizes, const std::map<std::string, RetailPrice>& prices,
                               std::string_view location);

// The retail URL for a location's Linux-and-other VM Consumption prices (before client-side filtering).
std::string retail_url(std::string_view prices_endpoint, std::string_view location, long skip = 0);

// Both listings, every page, then price_sizes.
Task<Result<std::vector<Offer>>> fetch_catalog(AzureApi& api, const std::string& subscription, const std::string& location);

}  // namespace tsum::providers::azure
