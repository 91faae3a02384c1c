// GCE offers for one zone: machine shapes from machineTypes.list, prices from the Cloud Billing Catalog's
// Compute Engine SKUs (services/6F81-5844-456A/skus). GCE sells a machine type as parts, so its on-demand
// hourly price is vCPUs x the family's core rate + GiB of RAM x the family's RAM rate + GPUs x the
// accelerator's rate, each rate the OnDemand SKU "<stem> running in <geography>" that lists the zone's
// region. Money stays integer nanos (the Catalog's units + nanos) until the sum. Both listings are followed
// through nextPageToken. Shared-core types and families without a known stem get no offer.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "providers/gce/gce_api.h"
#include "providers/provider.h"

namespace tsum::providers::gce {

inline constexpr std::string_view kComputeServiceId = "6F81-5844-456A";

struct Sku {
  std::string description = {};
  std::string usage_type = {};         // OnDemand, Preemptible, Commit1Yr, ...
  std::vector<std::string> regions = {};
  std::string unit = {};               // h, GiBy.h, ...
  long long nanos_per_unit = 0;        // USD (the currency asked for) x 1e9, the base tier
};

struct SkuPage {
  std::vector<Sku> items;
  std::string next_page_token;
};

// SKUs without a pricing expression are left out; malformed money is an internal error.
Result<SkuPage> parse_sku_page(const nlohmann::json& j);

// {"units": "12", "nanos": 340000000} -> 12340000000. Negative or out-of-range parts are refused.
Result<long long> money_nanos(const nlohmann::json& unit_price);

struct MachineType {
  std::string name = {};
  int vcpus = 0;
  long memory_mb = 0;
  bool shared_cpu = false;
  std::string gpu_type = {};  // e.g. nvidia-tesla-a100; empty: none built in
  int gpus = 0;
};

struct MachineTypePage {
  std::vector<MachineType> items;
  std::string next_page_token;
};

Result<MachineTypePage> parse_machine_types(const nlohmann::json& j);

// The SKU stems of a machine family's core and RAM ("n1" -> "N1 Predefined Instance Core", ...) and of an
// accelerator ("nvidia-tesla-t4" -> "Nvidia Tesla T4 GPU").
struct FamilyStems {
  std::string_view core;
  std::string_view ram;
};
std::optional<FamilyStems> family_stems(std::string_view family);
std::optional<std::string_view> gpu_stem(std::string_view accelerator_type);

// "<stem> running in <where>" -> stem; empty for any other description.
std::string sku_stem(std::string_view description);

// OnDemand rates in region by stem, with the unit each must be in (h for cores and GPUs, GiBy.h for RAM).
std::map<std::string, Sku> on_demand_rates(const std::vector<Sku>& skus, std::string_view region);

// Offers for every machine type whose parts all have a rate, cheapest first.
std::vector<Offer> price_machine_types(const std::vector<MachineType>& types, const std::map<std::string, Sku>& rates,
                                       std::string_view zone);

// Both listings, every page, then price_machine_types.
Task<Result<std::vector<Offer>>> fetch_catalog(GceApi& api, const std::string& project, const std::string& zone);

}  // namespace tsum::providers::gce
