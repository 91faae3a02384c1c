#include "tests/fakes/gce/fake_gce_catalog.h"

#include <array>
#include <vector>

#include "tests/fakes/cloud/pagination.h"

namespace tsum::providers::gce::fake {

namespace {

constexpr std::array<FakeMachineType, 10> kTypes{{
    {"e2-micro", 2, 1024, true, "", 0},
    {"e2-standard-2", 2, 8192, false, "", 0},
    {"e2-standard-4", 4, 16384, false, "", 0},
    {"n1-standard-4", 4, 15360, false, "", 0},
    {"n1-standard-8", 8, 30720, false, "", 0},
    {"n2-standard-8", 8, 32768, false, "", 0},
    {"c2d-standard-4", 4, 16384, false, "", 0},
    {"g2-standard-4", 4, 16384, false, "nvidia-l4", 1},
    {"a2-highgpu-1g", 12, 87040, false, "nvidia-tesla-a100", 1},
    {"a2-highgpu-2g", 24, 174080, false, "nvidia-tesla-a100", 2},
}};

struct FakeSku {
  std::string_view id;
  std::string_view description;
  std::string_view group;       // category.resourceGroup
  std::string_view usage_type;  // category.usageType
  std::vector<std::string_view> regions;
  std::string_view unit;        // h, GiBy.h, GiBy
  long long units;
  int nanos;
};

const std::vector<FakeSku>& skus() {
  static const std::vector<FakeSku> kSkus{
      {"CP-N1-CORE-US", "N1 Predefined Instance Core running in Americas", "N1Standard", "OnDemand", {"us-central1", "us-east1"}, "h", 0, 31611000},
      {"CP-N1-RAM-US", "N1 Predefined Instance Ram running in Americas", "N1Standard", "OnDemand", {"us-central1", "us-east1"}, "GiBy.h", 0, 4237000},
      {"CP-N1-CORE-EU", "N1 Predefined Instance Core running in EMEA", "N1Standard", "OnDemand", {"europe-west4"}, "h", 0, 34806000},
      {"CP-N1-RAM-EU", "N1 Predefined Instance Ram running in EMEA", "N1Standard", "OnDemand", {"europe-west4"}, "GiBy.h", 0, 4664000},
      {"CP-N1-CORE-SPOT", "Spot Preemptible N1 Predefined Instance Core running in Americas", "N1Standard", "Preemptible", {"us-central1"}, "h", 0, 6655000},
      {"CP-N1-CORE-CUD", "Commitment v1: Cpu in Americas for 1 Year", "CPU", "Commit1Yr", {"us-central1"}, "h", 0, 19915000},
      {"CP-E2-CORE-US", "E2 Instance Core running in Americas", "CPU", "OnDemand", {"us-central1"}, "h", 0, 21811250},
      {"CP-E2-RAM-US", "E2 Instance Ram running in Americas", "RAM", "OnDemand", {"us-central1"}, "GiBy.h", 0, 2923750},
      {"CP-N2-CORE-US", "N2 Instance Core running in Americas", "CPU", "OnDemand", {"us-central1"}, "h", 0, 31611000},
      {"CP-N2-RAM-US", "N2 Instance Ram running in Americas", "RAM", "OnDemand", {"us-central1"}, "GiBy.h", 0, 4237000},
      {"CP-G2-CORE-US", "G2 Instance Core running in Americas", "CPU", "OnDemand", {"us-central1"}, "h", 0, 24988000},
      {"CP-G2-RAM-US", "G2 Instance Ram running in Americas", "RAM", "OnDemand", {"us-central1"}, "GiBy.h", 0, 2927000},
      {"CP-L4-US", "Nvidia L4 GPU running in Americas", "GPU", "OnDemand", {"us-central1"}, "h", 0, 560040000},
      {"CP-A2-CORE-US", "A2 Instance Core running in Americas", "CPU", "OnDemand", {"us-central1"}, "h", 0, 31611000},
      {"CP-A2-RAM-US", "A2 Instance Ram running in Americas", "RAM", "OnDemand", {"us-central1"}, "GiBy.h", 0, 4237000},
      {"CP-A100-US", "Nvidia Tesla A100 GPU running in Americas", "GPU", "OnDemand", {"us-central1"}, "h", 2, 933908000},
      {"CP-A100-SPOT", "Nvidia Tesla A100 GPU attached to Spot Preemptible VMs running in Americas", "GPU", "Preemptible", {"us-central1"}, "h", 1, 100000000},
      {"CP-T4-US", "Nvidia Tesla T4 GPU running in Americas", "GPU", "OnDemand", {"us-central1"}, "h", 0, 350000000},
      {"CP-CUSTOM-CORE", "Custom Instance Core running in Americas", "CPU", "OnDemand", {"us-central1"}, "h", 0, 33174000},
      {"CP-PD-STD", "Storage PD Capacity", "PDStandard", "OnDemand", {"us-central1"}, "GiBy.mo", 0, 40000000},
      {"CP-EGRESS", "Network Internet Egress from Americas to Americas", "PremiumInternetEgress", "OnDemand", {"us-central1"}, "GiBy", 0, 120000000},
  };
  return kSkus;
}

nlohmann::json sku_json(const FakeSku& s) {
  nlohmann::json regions = nlohmann::json::array();
  for (auto r : s.regions) regions.push_back(r);
  nlohmann::json rate{{"startUsageAmount", 0},
                      {"unitPrice", {{"currencyCode", "USD"}, {"units", std::to_string(s.units)}, {"nanos", s.nanos}}}};
  return {{"name", "services/6F81-5844-456A/skus/" + std::string(s.id)},
          {"skuId", s.id},
          {"description", s.description},
          {"category", {{"serviceDisplayName", "Compute Engine"}, {"resourceFamily", "Compute"},
                        {"resourceGroup", s.group}, {"usageType", s.usage_type}}},
          {"serviceRegions", regions},
          {"pricingInfo", {{{"effectiveTime", "2024-06-01T00:00:00Z"},
                            {"pricingExpression", {{"usageUnit", s.unit}, {"displayQuantity", 1},
                                                   {"baseUnit", s.unit == "h" ? "s" : "By.s"},
                                                   {"tieredRates", {rate}}}},
                            {"currencyConversionRate", 1}}}},
          {"serviceProviderName", "Google"}};
}

std::optional<std::string> token_of(const std::map<std::string, std::string>& query) {
  auto it = query.find("pageToken");
  if (it == query.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

}  // namespace

std::span<const FakeMachineType> fake_machine_types() { return kTypes; }

const FakeMachineType* find_machine_type(std::string_view name) {
  for (const auto& t : kTypes)
    if (t.name == name) return &t;
  return nullptr;
}

JsonAnswer google_error(int status, std::string_view reason, std::string_view message) {
  const char* code = status == 400 ? "INVALID_ARGUMENT" : status == 401 ? "UNAUTHENTICATED" : status == 403 ? "PERMISSION_DENIED"
                     : status == 404 ? "NOT_FOUND" : status == 409 ? "ALREADY_EXISTS" : status == 429 ? "RESOURCE_EXHAUSTED"
                     : status == 503 ? "UNAVAILABLE" : "INTERNAL";
  return {status, {{"error", {{"code", status}, {"message", message}, {"status", code},
                              {"errors", {{{"message", message}, {"domain", "global"}, {"reason", reason}}}}}}}};
}

JsonAnswer list_machine_types(std::string_view project, std::string_view zone,
                              const std::map<std::string, std::string>& query, int page_size) {
  auto max = fake_cloud::number_param(query, "maxResults", 0, 500, 500);
  if (!max) return google_error(400, "invalid", "Invalid value for field 'maxResults': must be 0..500");
  auto w = fake_cloud::page_at_token(kTypes.size(), token_of(query), kPageTokenPrefix, *max == 0 ? 500 : *max, page_size);
  if (!w) return google_error(400, "invalid", "Invalid value for field 'pageToken'");
  nlohmann::json items = nlohmann::json::array();
  const std::string zone_url = "https://www.googleapis.com/compute/v1/projects/" + std::string(project) + "/zones/" + std::string(zone);
  for (std::size_t i = w->begin; i < w->end; ++i) {
    const auto& t = kTypes[i];
    nlohmann::json m{{"kind", "compute#machineType"}, {"name", t.name}, {"guestCpus", t.vcpus}, {"memoryMb", t.memory_mb},
                     {"isSharedCpu", t.shared_cpu}, {"zone", std::string(zone)},
                     {"selfLink", zone_url + "/machineTypes/" + std::string(t.name)}};
    if (t.gpus > 0) m["accelerators"] = {{{"guestAcceleratorType", t.gpu_type}, {"guestAcceleratorCount", t.gpus}}};
    items.push_back(std::move(m));
  }
  JsonAnswer a{200, {{"kind", "compute#machineTypeList"}, {"items", items}, {"selfLink", zone_url + "/machineTypes"}}};
  if (w->next) a.body["nextPageToken"] = w->next_token(kPageTokenPrefix);
  return a;
}

JsonAnswer list_skus(const std::map<std::string, std::string>& query, int page_size) {
  if (auto c = query.find("currencyCode"); c != query.end() && c->second != "USD")
    return google_error(400, "badRequest", "The fake catalog is priced in USD only");
  auto max = fake_cloud::number_param(query, "pageSize", 1, 5000, 5000);
  if (!max) return google_error(400, "badRequest", "pageSize must be 1..5000");
  auto w = fake_cloud::page_at_token(skus().size(), token_of(query), kPageTokenPrefix, *max, page_size);
  if (!w) return google_error(400, "badRequest", "Invalid page token");
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = w->begin; i < w->end; ++i) list.push_back(sku_json(skus()[i]));
  return {200, {{"skus", list}, {"nextPageToken", w->next_token(kPageTokenPrefix)}}};
}

}  // namespace tsum::providers::gce::fake
