#include "tests/fakes/azure/fake_azure_catalog.h"

#include <cmath>

#include "tests/fakes/cloud/pagination.h"
#include "providers/http/codec.h"

namespace tsum::providers::azure::fake {

namespace {

struct Item {
  std::string sku, region, product, sku_name, meter, type, unit;
  double price;
};

std::vector<Item> retail_items() {
  std::vector<Item> out;
  for (const auto& loc : kFakeLocations) {
    const double factor = loc == "eastus" ? 0.9 : 1.0;
    for (const auto& s : fake_sizes()) {
      std::string short_name = s.name.substr(9);  // "Standard_D2s_v5" -> "D2s_v5" -> "D2s v5"
      for (char& c : short_name) c = c == '_' ? ' ' : c;
      auto round4 = [](double v) { return std::round(v * 10000) / 10000; };
      const double p = round4(s.linux_hourly * factor);
      const std::string product = "Virtual Machines " + s.series + " Series";
      out.push_back({s.name, loc, product + " Windows", short_name, short_name, "Consumption", "1 Hour", round4(p * 1.8)});
      out.push_back({s.name, loc, product, short_name + " Spot", short_name + " Spot", "Consumption", "1 Hour", round4(p * 0.2)});
      out.push_back({s.name, loc, product, short_name + " Low Priority", short_name + " Low Priority", "Consumption", "1 Hour", round4(p * 0.25)});
      out.push_back({s.name, loc, product, short_name, short_name, "Consumption", "1 Hour", p});
      out.push_back({s.name, loc, product, short_name, short_name, "DevTestConsumption", "1 Hour", round4(p * 0.9)});
      out.push_back({s.name, loc, product, short_name, short_name, "Reservation", "1 Year", round4(p * 5000)});
    }
  }
  return out;
}

nlohmann::json item_json(const Item& i) {
  return {{"currencyCode", "USD"}, {"tierMinimumUnits", 0.0}, {"retailPrice", i.price}, {"unitPrice", i.price},
          {"armRegionName", i.region}, {"location", i.region == "eastus" ? "US East" : "EU West"},
          {"effectiveStartDate", "2024-01-01T00:00:00Z"}, {"meterName", i.meter}, {"productName", i.product},
          {"skuName", i.sku_name}, {"serviceName", "Virtual Machines"}, {"serviceFamily", "Compute"},
          {"unitOfMeasure", i.unit}, {"type", i.type}, {"isPrimaryMeterRegion", true}, {"armSkuName", i.sku}};
}

// "a eq 'x' and b eq 'y'" -> {a: x, b: y}; nullopt when malformed.
std::optional<std::map<std::string, std::string>> eq_clauses(const std::string& f) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at < f.size()) {
    auto eq = f.find(" eq '", at);
    if (eq == std::string::npos) return std::nullopt;
    auto close = f.find('\'', eq + 5);
    if (close == std::string::npos) return std::nullopt;
    out[f.substr(at, eq - at)] = f.substr(eq + 5, close - eq - 5);
    at = close + 1;
    if (at == f.size()) break;
    if (f.compare(at, 5, " and ") != 0) return std::nullopt;
    at += 5;
  }
  return out;
}

}  // namespace

const std::vector<FakeSize>& fake_sizes() {
  static const std::vector<FakeSize> kSizes{
      {"Standard_B2s", 2, 4, 0, 0.0456, "BS"},
      {"Standard_D2s_v5", 2, 8, 0, 0.115, "Dsv5"},
      {"Standard_D4s_v5", 4, 16, 0, 0.23, "Dsv5"},
      {"Standard_F8s_v2", 8, 16, 0, 0.384, "FSv2"},
      {"Standard_E4s_v5", 4, 32, 0, 0.296, "Esv5"},
      {"Standard_NC4as_T4_v3", 4, 28, 1, 0.526, "NCasT4 v3"},
      {"Standard_NC24ads_A100_v4", 24, 220, 1, 3.673, "NCadsA100v4"}};
  return kSizes;
}

ArmAnswer list_resource_skus(const std::map<std::string, std::string>& query, int page_size, const std::string& base_url,
                             const std::string& subscription) {
  std::string location;
  if (auto f = query.find("$filter"); f != query.end()) {
    auto clauses = eq_clauses(f->second);
    if (!clauses || clauses->size() != 1 || !clauses->contains("location"))
      return arm_error(400, "InvalidFilter", "Only $filter=location eq '<location>' is supported.");
    location = clauses->at("location");
  }
  nlohmann::json all = nlohmann::json::array();
  for (const auto& s : fake_sizes())
    for (const auto& loc : kFakeLocations) {
      if (!location.empty() && loc != location) continue;
      nlohmann::json sku{{"resourceType", "virtualMachines"}, {"name", s.name}, {"tier", "Standard"},
                         {"size", s.name.substr(9)}, {"locations", {loc}},
                         {"capabilities", {{{"name", "vCPUs"}, {"value", std::to_string(s.vcpus)}},
                                           {{"name", "MemoryGB"}, {"value", nlohmann::json(s.memory_gb).dump()}}}},
                         {"restrictions", nlohmann::json::array()}};
      if (s.gpus > 0) sku["capabilities"].push_back({{"name", "GPUs"}, {"value", std::to_string(s.gpus)}});
      if (s.name == "Standard_E4s_v5" && loc == "westeurope")
        sku["restrictions"].push_back({{"type", "Location"}, {"values", {loc}}, {"reasonCode", "NotAvailableForSubscription"}});
      all.push_back(sku);
      all.push_back({{"resourceType", "disks"}, {"name", "Premium_LRS"}, {"locations", {loc}}});
    }
  auto token = query.contains("$skiptoken") ? std::optional(query.at("$skiptoken")) : std::nullopt;
  auto w = fake_cloud::page_at_token(all.size(), token, "", page_size, page_size);
  if (!w) return arm_error(400, "InvalidSkipToken", "The skip token is not valid.");
  nlohmann::json value = nlohmann::json::array();
  for (std::size_t i = w->begin; i < w->end; ++i) value.push_back(all[i]);
  nlohmann::json out{{"value", value}};
  if (w->next) {
    std::string link = base_url + "/subscriptions/" + subscription + "/providers/Microsoft.Compute/skus?api-version=2021-07-01";
    if (!location.empty()) link += "&$filter=" + http::uri_encode("location eq '" + location + "'");
    out["nextLink"] = link + "&$skiptoken=" + w->next_token();
  }
  return {200, out, {}};
}

ArmAnswer list_retail_prices(const std::map<std::string, std::string>& query, const RetailPaging& paging,
                             const std::string& prices_url) {
  auto bad = [](const std::string& why) { return ArmAnswer{400, {{"Error", {{"Code", "BadRequest"}, {"Message", why}}}}, {}}; };
  std::map<std::string, std::string> want;
  if (auto f = query.find("$filter"); f != query.end()) {
    auto clauses = eq_clauses(f->second);
    if (!clauses) return bad("Invalid OData filter: " + f->second);
    for (const auto& [field, _] : *clauses)
      if (field != "serviceName" && field != "armRegionName" && field != "priceType" && field != "armSkuName")
        return bad("Could not find a property named '" + field + "'");
    want = *clauses;
  }
  auto skip = fake_cloud::number_param(query, "$skip", 0, 1L << 30, 0);
  if (!skip) return bad("Invalid $skip");
  std::vector<Item> matched;
  for (const auto& i : retail_items()) {
    auto field = [&](const char* name, const std::string& value) { return !want.contains(name) || want[name] == value; };
    const std::string price_type = i.type == "Reservation" ? "Reservation" : i.type == "DevTestConsumption" ? "DevTestConsumption" : "Consumption";
    if (field("serviceName", "Virtual Machines") && field("armRegionName", i.region) && field("priceType", price_type) &&
        field("armSkuName", i.sku))
      matched.push_back(i);
  }
  const auto w = fake_cloud::page_from(matched.size(), static_cast<std::size_t>(*skip), paging.page_size, paging.page_size);
  nlohmann::json items = nlohmann::json::array();
  for (std::size_t i = w.begin; i < w.end; ++i) items.push_back(item_json(matched[i]));
  nlohmann::json out{{"BillingCurrency", "USD"}, {"CustomerEntityId", "Default"}, {"CustomerEntityType", "Retail"},
                     {"Items", items}, {"NextPageLink", nullptr}, {"Count", w.end - w.begin}};
  if (w.next && !paging.drop_next_page_link) {
    std::string link = prices_url + "?";  // as Azure writes it: the filter kept, $skip advanced
    if (auto f = query.find("$filter"); f != query.end()) link += "$filter=" + http::uri_encode(f->second) + "&";
    out["NextPageLink"] = link + "$skip=" + w.next_token();
  }
  return {200, out, {}};
}

}  // namespace tsum::providers::azure::fake
