// `tsumd offers`: the priced offers of the providers a config file names, each fetched through its adapter
// (for a cloud: its price API, e.g. EC2's Price List, GCE's Cloud Billing Catalog, Azure's Retail Prices).
// With --catalog-out the one provider's offers are written as a price catalog (billing/prices/catalog.h): the
// shipped catalog of that provider refreshed with them (merge_prices), or the fetched offers alone when
// tsum ships none. --json prints {"offers": [...], "errors": [{"provider", "detail"}]}; the table goes to
// stdout either way. A provider whose price API fails is named on stderr (and in "errors"), the others'
// offers are still printed, and the exit code is 1 (no catalog is written).
// Exit codes: 0 ok, 1 a provider failed, 2 bad input.
#pragma once

#include <string>

namespace tsum::daemon {

int offers_command(const std::string& config_path, const std::string& only, bool json, const std::string& catalog_out);

}  // namespace tsum::daemon
