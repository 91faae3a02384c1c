// The fake cloud's catalog: a handful of real EC2 instance types with their shapes and us-east-1 Linux
// on-demand prices (approximate public list prices, mid 2024; spot prices made up), and the three
// read-only listings over it: DescribeInstanceTypes, DescribeSpotPriceHistory and the Price List API's
// GetProducts. Every region of the fake sells the same types at the same prices. GetProducts also lists
// Windows, dedicated-tenancy, other-region and non-instance products, so a client must filter.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "providers/aws/codec.h"
#include "tests/fakes/aws/fake_common.h"

namespace tsum::providers::aws::fake {

struct FakeInstanceType {
  std::string_view type;
  int vcpus;
  long memory_mib;
  int gpus;
  std::string_view gpu_manufacturer;
  std::string_view gpu_name;
  long gpu_memory_mib;
  double on_demand;  // USD per hour, Linux, shared tenancy
  double spot;       // lowest zone's spot price
};

std::span<const FakeInstanceType> fake_instance_types();
const FakeInstanceType* find_fake_type(std::string_view type);

// page_size caps every page whatever MaxResults asks, so tests can force pagination.
FakeAnswer describe_instance_types(const Fields& params, int page_size);
// spot_factor scales every spot price: regions of one fake differ in price as real ones do.
FakeAnswer describe_spot_price_history(const Fields& params, std::string_view region, double spot_factor, double now_s,
                                       int page_size);
// The Price List of every region in `regions` (and a decoy region's, priced apart, that none asked for).
FakeAnswer get_products(std::string_view json_body, const std::vector<std::string>& regions, int page_size);

}  // namespace tsum::providers::aws::fake
