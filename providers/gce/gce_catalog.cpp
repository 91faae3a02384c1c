#include "providers/gce/gce_catalog.h"

#include <algorithm>
#include <array>
#include <limits>

#include "common/json_util.h"
#include "providers/gce/gce_json.h"
#include "providers/http/codec.h"

namespace tsum::providers::gce {

namespace {

constexpr int kMaxPages = 200;  // a listing longer than this is a server that keeps handing out tokens
constexpr std::string_view kRunningIn = " running in ";

struct FamilyRow {
  std::string_view family;
  FamilyStems stems;
};

constexpr std::array<FamilyRow, 8> kFamilies{{
    {"n1", {"N1 Predefined Instance Core", "N1 Predefined Instance Ram"}},
    {"n2", {"N2 Instance Core", "N2 Instance Ram"}},
    {"n2d", {"N2D AMD Instance Core", "N2D AMD Instance Ram"}},
    {"e2", {"E2 Instance Core", "E2 Instance Ram"}},
    {"c2", {"Compute optimized Core", "Compute optimized Ram"}},
    {"c3", {"C3 Instance Core", "C3 Instance Ram"}},
    {"a2", {"A2 Instance Core", "A2 Instance Ram"}},
    {"g2", {"G2 Instance Core", "G2 Instance Ram"}},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kGpus{{
    {"nvidia-tesla-t4", "Nvidia Tesla T4 GPU"},
    {"nvidia-tesla-v100", "Nvidia Tesla V100 GPU"},
    {"nvidia-tesla-p100", "Nvidia Tesla P100 GPU"},
    {"nvidia-tesla-a100", "Nvidia Tesla A100 GPU"},
    {"nvidia-a100-80gb", "Nvidia Tesla A100 80GB GPU"},
    {"nvidia-l4", "Nvidia L4 GPU"},
}};

// An int64 carried as a JSON string (proto3 JSON) or number.
std::optional<long long> int64_of(const nlohmann::json& j) {
  if (j.is_number_integer()) return j.get<long long>();
  if (!j.is_string()) return std::nullopt;
  const std::string s = j.get<std::string>();
  if (s.empty() || s.size() > 18 || !std::all_of(s.begin() + (s[0] == '-'), s.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      s == "-")
    return std::nullopt;
  return std::stoll(s);
}

// The base tier's price: the tier starting at 0 usage.
Result<std::optional<long long>> base_tier_nanos(const nlohmann::json& expression) {
  auto tiers = expression.find("tieredRates");
  if (tiers == expression.end() || !tiers->is_array()) return std::optional<long long>();
  for (const auto& t : *tiers) {
    if (!t.is_object()) continue;
    // The base tier starts at 0; proto3's JSON leaves a 0 out. A start that is not a number is not the base.
    auto start = t.find("startUsageAmount");
    if (start != t.end() && !(start->is_number() && start->get<double>() == 0.0)) continue;
    auto price = t.find("unitPrice");
    if (price == t.end()) continue;
    auto nanos = money_nanos(*price);
    if (!nanos) return nanos.error();
    return std::optional<long long>(*nanos);
  }
  return std::optional<long long>();
}

Result<std::optional<Sku>> parse_sku(const nlohmann::json& s) {
  if (!s.is_object()) return make_error(Code::internal, "Cloud Billing: a SKU is not a JSON object");
  Sku sku{.description = json_str(s, "description")};
  if (auto cat = s.find("category"); cat != s.end() && cat->is_object()) sku.usage_type = json_str(*cat, "usageType");
  if (auto regions = s.find("serviceRegions"); regions != s.end() && regions->is_array())
    for (const auto& r : *regions)
      if (r.is_string()) sku.regions.push_back(r.get<std::string>());
  auto info = s.find("pricingInfo");
  if (info == s.end() || !info->is_array() || info->empty() || !(*info)[0].is_object()) return std::optional<Sku>();
  auto expression = (*info)[0].find("pricingExpression");
  if (expression == (*info)[0].end() || !expression->is_object()) return std::optional<Sku>();
  sku.unit = json_str(*expression, "usageUnit");
  auto nanos = base_tier_nanos(*expression);
  if (!nanos) return make_error(Code::internal, "Cloud Billing: SKU '" + sku.description + "': " + nanos.error().detail);
  if (!*nanos) return std::optional<Sku>();
  sku.nanos_per_unit = **nanos;
  return std::optional<Sku>(std::move(sku));
}

}  // namespace

Result<long long> money_nanos(const nlohmann::json& unit_price) {
  if (!unit_price.is_object()) return make_error(Code::internal, "money is not an object");
  auto units = int64_of(unit_price.value("units", nlohmann::json("0")));
  auto nanos = int64_of(unit_price.value("nanos", nlohmann::json(0)));
  constexpr long long kMaxUnits = std::numeric_limits<long long>::max() / 1'000'000'000 - 1;
  if (!units || !nanos || *units < 0 || *units > kMaxUnits || *nanos < 0 || *nanos > 999'999'999)
    return make_error(Code::internal, "money " + unit_price.dump() + " is not non-negative units + nanos");
  return *units * 1'000'000'000 + *nanos;
}

Result<SkuPage> parse_sku_page(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Code::internal, "Cloud Billing skus: not a JSON object");
  SkuPage page{{}, json_str(j, "nextPageToken")};
  auto skus = j.find("skus");
  if (skus == j.end()) return page;
  if (!skus->is_array()) return make_error(Code::internal, "Cloud Billing skus: skus is not an array");
  for (const auto& s : *skus) {
    auto sku = parse_sku(s);
    if (!sku) return sku.error();
    if (*sku) page.items.push_back(std::move(**sku));
  }
  return page;
}

Result<MachineTypePage> parse_machine_types(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(Code::internal, "Compute machineTypes: not a JSON object");
  MachineTypePage page{{}, json_str(j, "nextPageToken")};
  auto items = j.find("items");
  if (items == j.end()) return page;
  if (!items->is_array()) return make_error(Code::internal, "Compute machineTypes: items is not an array");
  for (const auto& m : *items) {
    if (!m.is_object() || json_str(m, "name").empty() || !m.value("guestCpus", nlohmann::json()).is_number_integer() ||
        !m.value("memoryMb", nlohmann::json()).is_number_integer())
      return make_error(Code::internal, "Compute machineTypes: an item without name, guestCpus or memoryMb");
    MachineType t{json_str(m, "name"), m["guestCpus"].get<int>(), m["memoryMb"].get<long>(), json_or(m, "isSharedCpu", false)};
    if (auto acc = m.find("accelerators"); acc != m.end() && acc->is_array() && !acc->empty() && (*acc)[0].is_object()) {
      t.gpu_type = json_str((*acc)[0], "guestAcceleratorType");
      t.gpus = json_or((*acc)[0], "guestAcceleratorCount", 0);
    }
    page.items.push_back(std::move(t));
  }
  return page;
}

std::optional<FamilyStems> family_stems(std::string_view family) {
  for (const auto& row : kFamilies)
    if (row.family == family) return row.stems;
  return std::nullopt;
}

std::optional<std::string_view> gpu_stem(std::string_view accelerator_type) {
  for (const auto& [type, stem] : kGpus)
    if (type == accelerator_type) return stem;
  return std::nullopt;
}

std::string sku_stem(std::string_view description) {
  auto at = description.find(kRunningIn);
  return at == std::string_view::npos || at == 0 ? std::string() : std::string(description.substr(0, at));
}

std::map<std::string, Sku> on_demand_rates(const std::vector<Sku>& skus, std::string_view region) {
  std::map<std::string, Sku> out;
  for (const auto& s : skus) {
    std::string stem = sku_stem(s.description);
    if (stem.empty() || s.usage_type != "OnDemand" ||
        std::find(s.regions.begin(), s.regions.end(), region) == s.regions.end())
      continue;
    out.emplace(std::move(stem), s);
  }
  return out;
}

std::vector<Offer> price_machine_types(const std::vector<MachineType>& types, const std::map<std::string, Sku>& rates,
                                       std::string_view zone) {
  auto rate = [&](std::string_view stem, std::string_view unit) -> std::optional<long long> {
    auto it = rates.find(std::string(stem));
    if (it == rates.end() || it->second.unit != unit) return std::nullopt;
    return it->second.nanos_per_unit;
  };
  std::vector<Offer> out;
  for (const auto& t : types) {
    auto stems = family_stems(t.name.substr(0, t.name.find('-')));
    if (t.shared_cpu || !stems) continue;
    auto core = rate(stems->core, "h");
    auto ram = rate(stems->ram, "GiBy.h");
    if (!core || !ram) continue;
    long long nanos = *core * t.vcpus + *ram * t.memory_mb / 1024;
    if (t.gpus > 0) {
      auto stem = gpu_stem(t.gpu_type);
      auto gpu = stem ? rate(*stem, "h") : std::nullopt;
      if (!gpu) continue;
      nanos += *gpu * t.gpus;
    }
    out.push_back({.provider = "gce", .instance_type = t.name, .vcpus = t.vcpus,
                   .memory_gib = static_cast<double>(t.memory_mb) / 1024.0, .gpus = t.gpus, .gpu_type = t.gpu_type,
                   .hourly_price = static_cast<double>(nanos) / 1e9, .currency = "USD", .region = std::string(zone),
                   .note = "GCE on-demand: vCPU + RAM" + std::string(t.gpus ? " + GPU" : "") + " SKUs of the Cloud Billing Catalog"});
  }
  std::stable_sort(out.begin(), out.end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; });
  return out;
}

Task<Result<std::vector<Offer>>> fetch_catalog(GceApi& api, const std::string& project, const std::string& zone) {
  std::vector<MachineType> types;
  std::string token;
  for (int page = 0;; ++page) {
    if (page == kMaxPages) co_return make_error(Code::internal, "Compute machineTypes: more than 200 pages");
    const std::string path = "projects/" + project + "/zones/" + zone + "/machineTypes?maxResults=500" +
                             (token.empty() ? "" : "&pageToken=" + http::uri_encode(token));
    const std::string method = "GET", body;
    auto answer = co_await api.compute(method, path, body);
    if (!answer) co_return answer.error();
    auto parsed = parse_machine_types(*answer);
    if (!parsed) co_return parsed.error();
    types.insert(types.end(), parsed->items.begin(), parsed->items.end());
    if (parsed->next_page_token.empty()) break;
    token = parsed->next_page_token;
  }
  std::vector<Sku> skus;
  token.clear();
  for (int page = 0;; ++page) {
    if (page == kMaxPages) co_return make_error(Code::internal, "Cloud Billing skus: more than 200 pages");
    const std::string path = "services/" + std::string(kComputeServiceId) + "/skus?currencyCode=USD&pageSize=5000" +
                             (token.empty() ? "" : "&pageToken=" + http::uri_encode(token));
    auto answer = co_await api.billing(path);
    if (!answer) co_return answer.error();
    auto parsed = parse_sku_page(*answer);
    if (!parsed) co_return parsed.error();
    skus.insert(skus.end(), parsed->items.begin(), parsed->items.end());
    if (parsed->next_page_token.empty()) break;
    token = parsed->next_page_token;
  }
  co_return price_machine_types(types, on_demand_rates(skus, region_of(zone)), zone);
}

}  // namespace tsum::providers::gce
