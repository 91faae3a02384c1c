#include "providers/aws/price_list.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/json_util.h"

namespace tsum::providers::aws {

using nlohmann::json;

namespace {

// The lowest hourly USD price among the product's on-demand terms; 0 when it has none.
double hourly_usd(const json& product) {
  double best = 0;
  const json terms = product.value("/terms/OnDemand"_json_pointer, json::object());
  for (const auto& [_, term] : terms.items()) {
    if (!term.is_object()) continue;
    const json dims = term.value("priceDimensions", json::object());
    for (const auto& [__, dim] : dims.items()) {
      if (!dim.is_object() || dim.value("unit", "") != "Hrs") continue;
      std::string usd = dim.value("/pricePerUnit/USD"_json_pointer, std::string());
      char* end = nullptr;
      double v = std::strtod(usd.c_str(), &end);
      if (!usd.empty() && end && *end == '\0' && v > 0 && (best == 0 || v < best)) best = v;
    }
  }
  return best;
}

}  // namespace

std::string get_products_body(std::string_view region, std::string_view next_token) {
  json filters = json::array();
  auto match = [&](const char* field, std::string_view value) {
    filters.push_back({{"Type", "TERM_MATCH"}, {"Field", field}, {"Value", value}});
  };
  match("regionCode", region);
  match("operatingSystem", "Linux");
  match("tenancy", "Shared");
  match("preInstalledSw", "NA");
  match("capacitystatus", "Used");
  json body = {{"ServiceCode", "AmazonEC2"}, {"FormatVersion", "aws_v1"}, {"MaxResults", 100}, {"Filters", filters}};
  if (!next_token.empty()) body["NextToken"] = next_token;
  return body.dump();
}

Result<Page<OnDemandPrice>> parse_get_products(std::string_view body) {
  auto doc = parse_json_safely(body);
  if (!doc || !doc->is_object() || !doc->contains("PriceList") || !(*doc)["PriceList"].is_array())
    return make_error(Code::internal, "GetProducts: answer is not a JSON object with a PriceList array");
  Page<OnDemandPrice> out;
  for (const auto& entry : (*doc)["PriceList"]) {
    auto product = entry.is_string() ? parse_json_safely(entry.get<std::string>()) : std::nullopt;
    if (!product || !product->is_object())
      return make_error(Code::internal, "GetProducts: a PriceList entry is not a JSON document in a string");
    try {
      std::string type = product->value("/product/attributes/instanceType"_json_pointer, std::string());
      double price = hourly_usd(*product);
      if (!type.empty() && price > 0) out.items.push_back({type, price});
    } catch (const json::exception& e) {
      return make_error(Code::internal, std::string("GetProducts: unexpected product shape: ") + e.what());
    }
  }
  if (auto t = doc->find("NextToken"); t != doc->end() && t->is_string()) out.next_token = t->get<std::string>();
  return out;
}

}  // namespace tsum::providers::aws
