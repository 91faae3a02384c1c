#include "providers/azure/azure_catalog.h"

#include <algorithm>
#include <cstdlib>

#include "common/json_util.h"
#include "providers/azure/azure_json.h"
#include "providers/http/codec.h"

namespace tsum::providers::azure {

namespace {

constexpr int kMaxPages = 1000;

bool contains(std::string_view text, std::string_view word) { return text.find(word) != std::string_view::npos; }

// A capability's value as a number ("8", "0.75"); 0 when absent or not a number.
double capability(const nlohmann::json& sku, std::string_view name) {
  auto caps = sku.find("capabilities");
  if (caps == sku.end() || !caps->is_array()) return 0;
  for (const auto& c : *caps) {
    if (!c.is_object() || json_str(c, "name") != name) continue;
    std::string v = json_str(c, "value");
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    return !v.empty() && end == v.c_str() + v.size() && d >= 0 ? d : 0;
  }
  return 0;
}

bool restricted_in(const nlohmann::json& sku, std::string_view location) {
  auto rs = sku.find("restrictions");
  if (rs == sku.end() || !rs->is_array()) return false;
  for (const auto& r : *rs) {
    if (!r.is_object() || json_str(r, "type") != "Location") continue;
    for (const auto& v : json_array_at(r, "values"))
      if (v.is_string() && v.get<std::string>() == location) return true;
  }
  return false;
}

bool offered_in(const nlohmann::json& sku, std::string_view location) {
  for (const auto& l : json_array_at(sku, "locations")) {
    if (!l.is_string()) continue;
    std::string s = l.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
    if (s == location) return true;
  }
  return false;
}

}  // namespace

Result<RetailPage> parse_retail_page(const nlohmann::json& j) {
  auto items = j.is_object() ? j.find("Items") : j.end();
  if (!j.is_object() || items == j.end() || !items->is_array())
    return make_error(Code::internal, "Retail Prices: a page without an Items array");
  RetailPage page{.next_page_link = json_str(j, "NextPageLink")};
  for (const auto& i : *items) {
    if (!i.is_object()) return make_error(Code::internal, "Retail Prices: an item is not an object");
    auto price = i.find("retailPrice");
    if (price == i.end() || !price->is_number() || price->get<double>() < 0)
      return make_error(Code::internal, "Retail Prices: item '" + json_str(i, "armSkuName") + "' has no valid retailPrice");
    page.items.push_back({.arm_sku_name = json_str(i, "armSkuName"), .arm_region_name = json_str(i, "armRegionName"),
                          .product_name = json_str(i, "productName"), .sku_name = json_str(i, "skuName"),
                          .meter_name = json_str(i, "meterName"), .service_name = json_str(i, "serviceName"),
                          .type = json_str(i, "type"),
                          .unit_of_measure = json_str(i, "unitOfMeasure"), .currency = json_str(i, "currencyCode"),
                          .retail_price = price->get<double>()});
  }
  return page;
}

bool linux_on_demand(const RetailPrice& p) {
  if (p.type != "Consumption" || p.unit_of_measure != "1 Hour" || p.service_name != "Virtual Machines") return false;
  for (const std::string* s : {&p.sku_name, &p.meter_name})
    if (contains(*s, "Spot") || contains(*s, "Low Priority")) return false;
  return !contains(p.product_name, "Windows") && !p.arm_sku_name.empty();
}

std::map<std::string, RetailPrice> on_demand_prices(const std::vector<RetailPrice>& items, std::string_view region) {
  std::map<std::string, RetailPrice> out;
  for (const auto& p : items) {
    if (p.arm_region_name != region || !linux_on_demand(p)) continue;
    auto [it, fresh] = out.emplace(p.arm_sku_name, p);
    if (!fresh && p.retail_price < it->second.retail_price) it->second = p;
  }
  return out;
}

Result<SkuPage> parse_sku_page(const nlohmann::json& j, std::string_view location) {
  auto value = j.is_object() ? j.find("value") : j.end();
  if (!j.is_object() || value == j.end() || !value->is_array())
    return make_error(Code::internal, "Resource SKUs: a page without a value array");
  SkuPage page{.next_link = json_str(j, "nextLink")};
  for (const auto& s : *value) {
    if (!s.is_object() || json_str(s, "resourceType") != "virtualMachines" || !offered_in(s, location)) continue;
    page.items.push_back({.name = json_str(s, "name"), .vcpus = static_cast<int>(capability(s, "vCPUs")),
                          .memory_gib = capability(s, "MemoryGB"), .gpus = static_cast<int>(capability(s, "GPUs")),
                          .restricted = restricted_in(s, location)});
  }
  return page;
}

std::string gpu_type_of(std::string_view size) {
  for (auto [needle, type] : {std::pair{"_T4_", "nvidia-t4"}, {"_A10_", "nvidia-a10"}, {"A100", "nvidia-a100"},
                              {"H100", "nvidia-h100"}, {"s_v3", "nvidia-v100"}})
    if (size.starts_with("Standard_N") && contains(size, needle)) return type;
  return {};
}

std::vector<Offer> price_sizes(const std::vector<VmSku>& sizes, const std::map<std::string, RetailPrice>& prices,
                               std::string_view location) {
  std::vector<Offer> out;
  for (const auto& s : sizes) {
    auto p = prices.find(s.name);
    if (s.restricted || s.vcpus <= 0 || p == prices.end()) continue;
    out.push_back({.provider = "azure", .instance_type = s.name, .vcpus = s.vcpus, .memory_gib = s.memory_gib,
                   .gpus = s.gpus, .gpu_type = s.gpus > 0 ? gpu_type_of(s.name) : "", .hourly_price = p->second.retail_price,
                   .currency = p->second.currency.empty() ? "USD" : p->second.currency, .region = std::string(location),
                   .note = "Azure " + p->second.product_name + ", Linux pay-as-you-go retail price, billed per minute"});
  }
  std::stable_sort(out.begin(), out.end(), [](const Offer& a, const Offer& b) { return a.hourly_price < b.hourly_price; });
  return out;
}

std::string retail_url(std::string_view prices_endpoint, std::string_view location, long skip) {
  const std::string filter = "serviceName eq 'Virtual Machines' and armRegionName eq '" + std::string(location) +
                             "' and priceType eq 'Consumption'";
  return std::string(prices_endpoint) + "?api-version=" + std::string(kRetailApi) + "&$filter=" + http::uri_encode(filter) +
         (skip > 0 ? "&$skip=" + std::to_string(skip) : "");
}

namespace {

Task<Result<std::vector<RetailPrice>>> fetch_prices(AzureApi& api, const std::string& location) {
  std::vector<RetailPrice> all;
  std::string url = retail_url(api.prices_url(), location);
  std::size_t first_page = 0;
  for (int page = 0; page < kMaxPages; ++page) {
    auto answer = co_await api.prices(url);
    if (!answer) co_return answer.error();
    auto parsed = parse_retail_page(*answer);
    if (!parsed) co_return parsed.error();
    const std::size_t n = parsed->items.size();
    if (page == 0) first_page = n;
    all.insert(all.end(), parsed->items.begin(), parsed->items.end());
    if (!parsed->next_page_link.empty()) url = parsed->next_page_link;
    else if (n > 0 && n >= first_page) url = retail_url(api.prices_url(), location, static_cast<long>(all.size()));
    else co_return all;
  }
  co_return make_error(Code::internal, "Retail Prices: more than 1000 pages");
}

Task<Result<std::vector<VmSku>>> fetch_sizes(AzureApi& api, const std::string& subscription, const std::string& location) {
  std::vector<VmSku> all;
  const std::string filter = "location eq '" + location + "'";
  std::string path = "subscriptions/" + subscription + "/providers/Microsoft.Compute/skus?api-version=" +
                     std::string(kSkusApi) + "&$filter=" + http::uri_encode(filter);
  std::string next;
  for (int page = 0; page < kMaxPages; ++page) {
    const std::string method = "GET", body;
    Result<ArmReply> answer = make_error(Code::internal, "no answer");
    if (next.empty()) answer = co_await api.arm(method, path, body);
    else answer = co_await api.arm_get(next);
    if (!answer) co_return answer.error();
    auto parsed = parse_sku_page(answer->body, location);
    if (!parsed) co_return parsed.error();
    all.insert(all.end(), parsed->items.begin(), parsed->items.end());
    if (parsed->next_link.empty()) co_return all;
    next = parsed->next_link;
  }
  co_return make_error(Code::internal, "Resource SKUs: more than 1000 pages");
}

}  // namespace

Task<Result<std::vector<Offer>>> fetch_catalog(AzureApi& api, const std::string& subscription, const std::string& location) {
  auto sizes = co_await fetch_sizes(api, subscription, location);
  if (!sizes) co_return sizes.error();
  auto prices = co_await fetch_prices(api, location);
  if (!prices) co_return prices.error();
  co_return price_sizes(*sizes, on_demand_prices(*prices, location), location);
}

}  // namespace tsum::providers::azure
