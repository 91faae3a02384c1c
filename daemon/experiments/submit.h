// Turning a validated experiment spec into queued runs: every config is checked against its provider's offers
// (unknown provider, unknown type, a runtime the provider cannot run) and priced. The REST route and the
// scheduler both submit through here, so a scheduled firing is checked exactly as a user's request is.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <vector>

#include "daemon/artifacts/datasets.h"
#include "daemon/experiments/experiment_spec.h"
#include "daemon/config/provider_registry.h"
#include "daemon/store/store.h"

namespace tsum::daemon {

// invalid_argument naming the field for a workload's data set that does not exist or that its model does not
// read (check_datasets), and naming the config for anything a provider refuses (a workload's device or
// precision the offer cannot run included); other codes for provider failures.
boost::asio::awaitable<Result<std::vector<PricedConfig>>> price_configs(const ExperimentSpec& spec,
                                                                        ProviderRegistry& providers,
                                                                        Datasets& datasets);

// invalid_argument naming the field when a workload's registered data set does not exist or is not what its
// model reads.
Status check_datasets(const ExperimentSpec& spec, Datasets& datasets);

}  // namespace tsum::daemon
