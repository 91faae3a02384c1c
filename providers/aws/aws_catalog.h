// The EC2 offer catalog of one region, fetched from AWS: instance shapes from DescribeInstanceTypes,
// on-demand Linux prices from the Price List API (GetProducts), current spot prices (lowest over the
// region's zones) from DescribeSpotPriceHistory. Every paginated listing is followed to its end.
#pragma once

#include <vector>

#include "providers/aws/aws_api.h"
#include "providers/provider.h"

namespace tsum::providers::aws {

// Offers for every type that has both a shape and an on-demand price, cheapest first. Spot prices are
// best effort: when that listing fails the offers carry no spot price and say why in their note.
Task<Result<std::vector<Offer>>> fetch_catalog(AwsApi& api);

}  // namespace tsum::providers::aws
