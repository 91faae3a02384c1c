#include "tests/fakes/aws/fake_catalog.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/json_util.h"

namespace tsum::providers::aws::fake {

using nlohmann::json;

namespace {

constexpr FakeInstanceType kTypes[] = {
    {"t3.micro", 2, 1024, 0, "", "", 0, 0.0104, 0.0031},
    {"t3.large", 2, 8192, 0, "", "", 0, 0.0832, 0.0250},
    {"m5.large", 2, 8192, 0, "", "", 0, 0.096, 0.0350},
    {"c6i.large", 2, 4096, 0, "", "", 0, 0.085, 0.0330},
    {"c6i.xlarge", 4, 8192, 0, "", "", 0, 0.17, 0.0660},
    {"c6i.2xlarge", 8, 16384, 0, "", "", 0, 0.34, 0.1310},
    {"g4dn.xlarge", 4, 16384, 1, "NVIDIA", "T4", 16384, 0.526, 0.1578},
    {"g5.xlarge", 4, 16384, 1, "NVIDIA", "A10G", 24576, 1.006, 0.3300},
    {"p3.2xlarge", 8, 62464, 1, "NVIDIA", "V100", 16384, 3.06, 0.9180},
};

std::string money(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10f", v);
  return buf;
}

std::string type_item(const FakeInstanceType& t) {
  std::string x = "<item>" + el("instanceType", t.type) + el("currentGeneration", "true") + "<vCpuInfo>" +
                  el("defaultVCpus", std::to_string(t.vcpus)) + el("defaultCores", std::to_string(std::max(1, t.vcpus / 2))) +
                  el("defaultThreadsPerCore", t.vcpus > 1 ? "2" : "1") + "</vCpuInfo><memoryInfo>" +
                  el("sizeInMiB", std::to_string(t.memory_mib)) + "</memoryInfo>";
  if (t.gpus > 0)
    x += "<gpuInfo><gpus><item>" + el("name", t.gpu_name) + el("manufacturer", t.gpu_manufacturer) +
         el("count", std::to_string(t.gpus)) + "<memoryInfo>" + el("sizeInMiB", std::to_string(t.gpu_memory_mib)) +
         "</memoryInfo></item></gpus>" + el("totalGpuMemoryInMiB", std::to_string(t.gpus * t.gpu_memory_mib)) + "</gpuInfo>";
  return x + "</item>";
}

json product(const FakeInstanceType& t, std::string_view region, std::string_view os, std::string_view tenancy,
             double price) {
  std::string sku = std::string(t.type) + "." + std::string(region) + "." + std::string(os) + "." + std::string(tenancy);
  json attributes = {{"instanceType", t.type},      {"vcpu", std::to_string(t.vcpus)},
                     {"memory", std::to_string(t.memory_mib / 1024) + " GiB"},
                     {"gpu", std::to_string(t.gpus)}, {"operatingSystem", os},
                     {"tenancy", tenancy},          {"preInstalledSw", "NA"},
                     {"capacitystatus", "Used"},    {"regionCode", region},
                     {"servicecode", "AmazonEC2"}};
  json dimension = {{"unit", "Hrs"}, {"pricePerUnit", {{"USD", money(price)}}},
                    {"description", "$" + money(price) + " per On Demand " + std::string(os) + " " + std::string(t.type) + " Instance Hour"}};
  json term = {{"sku", sku}, {"effectiveDate", "2024-06-01T00:00:00Z"},
               {"priceDimensions", {{sku + ".JRTCKXETXF.6YS6EN2CT7", dimension}}}};
  return {{"product", {{"productFamily", "Compute Instance"}, {"sku", sku}, {"attributes", attributes}}},
          {"serviceCode", "AmazonEC2"},
          {"terms", {{"OnDemand", {{sku + ".JRTCKXETXF", term}}}}},
          {"version", "20240601000000"},
          {"publicationDate", "2024-06-01T00:00:00Z"}};
}

std::vector<json> all_products(const std::vector<std::string>& regions) {
  std::vector<json> out;
  std::string other = "eu-west-1";  // a region nobody asked for, priced apart
  for (const char* r : {"eu-west-1", "ap-south-1", "sa-east-1"})
    if (std::find(regions.begin(), regions.end(), r) == regions.end()) {
      other = r;
      break;
    }
  for (const auto& t : kTypes) {
    for (const auto& region : regions) {
      out.push_back(product(t, region, "Linux", "Shared", t.on_demand));
      out.push_back(product(t, region, "Windows", "Shared", t.on_demand + 0.046 * t.vcpus));
      out.push_back(product(t, region, "Linux", "Dedicated", t.on_demand * 1.1));
    }
    out.push_back(product(t, other, "Linux", "Shared", t.on_demand * 1.08));
  }
  for (const auto& region : regions)
    out.push_back({{"product", {{"productFamily", "Data Transfer"}, {"attributes", {{"regionCode", region}}}}},
                   {"serviceCode", "AmazonEC2"},
                   {"terms", json::object()}});
  return out;
}

bool product_matches(const json& prod, const json& filters) {
  const json& attrs = prod["product"]["attributes"];
  for (const auto& f : filters) {
    auto it = attrs.find(f.value("Field", ""));
    if (it == attrs.end() || !it->is_string() || it->get<std::string>() != f.value("Value", "")) return false;
  }
  return true;
}

FakeAnswer get_products_checked(std::string_view json_body, const std::vector<std::string>& regions, int page_size) {
  auto body = parse_json_safely(json_body);
  if (!body || !body->is_object()) return json_error(400, "SerializationException", "the body is not a JSON object");
  std::string service = body->value("ServiceCode", "");
  if (service.empty()) return json_error(400, "InvalidParameterException", "ServiceCode is required");
  json filters = body->value("Filters", json::array());
  if (!filters.is_array()) return json_error(400, "InvalidParameterException", "Filters must be a list");
  for (const auto& f : filters)
    if (!f.is_object() || f.value("Type", "") != "TERM_MATCH" || !f.contains("Field") || !f.contains("Value"))
      return json_error(400, "InvalidParameterException", "each filter needs Type TERM_MATCH, Field and Value");
  json max = body->value("MaxResults", json(100));
  if (!max.is_number_integer() || max.get<long>() < 1 || max.get<long>() > 100)
    return json_error(400, "InvalidParameterException", "MaxResults must be between 1 and 100");
  std::vector<json> picked;
  if (service == "AmazonEC2")
    for (auto& p : all_products(regions))
      if (product_matches(p, filters)) picked.push_back(std::move(p));
  std::optional<std::string> token;
  if (body->contains("NextToken") && (*body)["NextToken"].is_string()) token = (*body)["NextToken"].get<std::string>();
  auto w = fake_cloud::page_at_token(picked.size(), token, kNextTokenPrefix, max.get<long>(), page_size);
  if (!w) return json_error(400, "InvalidNextTokenException", "the NextToken is not valid");
  json out = {{"FormatVersion", "aws_v1"}, {"PriceList", json::array()}};
  for (std::size_t i = w->begin; i < w->end; ++i) out["PriceList"].push_back(picked[i].dump());  // JSON in a string
  if (w->next) out["NextToken"] = w->next_token(kNextTokenPrefix);
  return {200, out.dump(), "application/x-amz-json-1.1"};
}

}  // namespace

std::span<const FakeInstanceType> fake_instance_types() { return kTypes; }

const FakeInstanceType* find_fake_type(std::string_view type) {
  for (const auto& t : kTypes)
    if (t.type == type) return &t;
  return nullptr;
}

FakeAnswer describe_instance_types(const Fields& params, int page_size) {
  if (auto u = unknown_param(params, {"MaxResults", "NextToken"}, {"InstanceType", "Filter"}))
    return ec2_error(400, "UnknownParameter", "The parameter " + *u + " is not recognized");
  auto max = int_param(params, "MaxResults", 5, 100);
  if (max == -1) return ec2_error(400, "InvalidParameterValue", "MaxResults must be between 5 and 100");
  std::vector<const FakeInstanceType*> picked;
  auto wanted = indexed(params, "InstanceType");
  for (const auto& name : wanted) {
    const FakeInstanceType* t = find_fake_type(name);
    if (!t) return ec2_error(400, "InvalidInstanceType", "The following supplied instance types do not exist: [" + name + "]");
    picked.push_back(t);
  }
  if (wanted.empty())
    for (const auto& t : kTypes) picked.push_back(&t);
  auto w = fake_cloud::page_at_token(picked.size(), param(params, "NextToken"), kNextTokenPrefix, max.value_or(100), page_size);
  if (!w) return ec2_error(400, "InvalidNextToken", "The specified NextToken is not valid");
  std::string items;
  for (std::size_t i = w->begin; i < w->end; ++i) items += type_item(*picked[i]);
  std::string inner = "<instanceTypeSet>" + items + "</instanceTypeSet>";
  if (w->next) inner += el("nextToken", w->next_token(kNextTokenPrefix));
  return ec2_ok("DescribeInstanceTypes", inner);
}

FakeAnswer describe_spot_price_history(const Fields& params, std::string_view region, double spot_factor, double now_s,
                                       int page_size) {
  if (auto u = unknown_param(params, {"MaxResults", "NextToken", "StartTime", "EndTime", "AvailabilityZone"},
                             {"InstanceType", "ProductDescription", "Filter"}))
    return ec2_error(400, "UnknownParameter", "The parameter " + *u + " is not recognized");
  auto max = int_param(params, "MaxResults", 1, 1000);
  if (max == -1) return ec2_error(400, "InvalidParameterValue", "MaxResults must be between 1 and 1000");
  auto types = indexed(params, "InstanceType");
  auto products = indexed(params, "ProductDescription");
  bool linux_wanted = products.empty() || std::find(products.begin(), products.end(), "Linux/UNIX") != products.end();
  struct Row { const FakeInstanceType* t; std::string zone; double price; };
  std::vector<Row> rows;
  for (const auto& t : kTypes) {
    if (!linux_wanted || (!types.empty() && std::find(types.begin(), types.end(), t.type) == types.end())) continue;
    rows.push_back({&t, std::string(region) + "a", t.spot * spot_factor});
    rows.push_back({&t, std::string(region) + "b", t.spot * spot_factor * 1.07});
  }
  auto w = fake_cloud::page_at_token(rows.size(), param(params, "NextToken"), kNextTokenPrefix, max.value_or(1000), page_size);
  if (!w) return ec2_error(400, "InvalidNextToken", "The specified NextToken is not valid");
  std::string items;
  for (std::size_t i = w->begin; i < w->end; ++i) {
    char price[32];
    std::snprintf(price, sizeof price, "%.6f", rows[i].price);
    items += "<item>" + el("instanceType", rows[i].t->type) + el("productDescription", "Linux/UNIX") +
             el("spotPrice", price) + el("timestamp", iso8601(now_s)) + el("availabilityZone", rows[i].zone) + "</item>";
  }
  std::string inner = "<spotPriceHistorySet>" + items + "</spotPriceHistorySet>";
  if (w->next) inner += el("nextToken", w->next_token(kNextTokenPrefix));
  return ec2_ok("DescribeSpotPriceHistory", inner);
}

FakeAnswer get_products(std::string_view json_body, const std::vector<std::string>& regions, int page_size) {
  try {
    return get_products_checked(json_body, regions, page_size);
  } catch (const json::exception& e) {  // a field of the wrong type
    return json_error(400, "SerializationException", e.what());
  }
}

}  // namespace tsum::providers::aws::fake
