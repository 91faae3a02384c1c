// The AWS Price List Query API (service "pricing", JSON 1.1 protocol), GetProducts for EC2 on-demand
// Linux prices. The answer's PriceList holds each product as a JSON *string*: it is parsed twice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "providers/aws/ec2_xml.h"

namespace tsum::providers::aws {

inline constexpr std::string_view kGetProductsTarget = "AWSPriceListService.GetProducts";

struct OnDemandPrice {
  std::string instance_type;
  double usd_per_hour = 0;
};

// The request body for one page of shared-tenancy, Linux, no-preinstalled-software, used-capacity EC2
// products in region; next_token empty for the first page.
std::string get_products_body(std::string_view region, std::string_view next_token);

// One page of the answer. Products without an instance type or an hourly USD on-demand price are skipped;
// a body or PriceList entry that is not the expected JSON is an internal error.
Result<Page<OnDemandPrice>> parse_get_products(std::string_view body);

}  // namespace tsum::providers::aws
