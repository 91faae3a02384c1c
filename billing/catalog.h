// Price catalogs: data files (billing/catalogs/<provider>.json) that map instance types to hourly prices,
// each with its source URL and as_of date. Parsing is pure; the caller supplies the text.
//
// Format:
//   {"provider": "local", "currency": "USD", "source": "https://...", "as_of": "YYYY-MM-DD",
//    "note": "...", "per_vcpu_hourly": 0.0425,            // optional fallback for unlisted types
//    "offers": [{"instance_type": "local-1c", "vcpus": 1, "memory_gib": 2, "gpus": 0, "gpu_type": "",
//                "hourly": 0.0425, "spot_hourly": null, "region": "", "emulates": "..."}]}
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/embedded.h"
#include "common/result.h"

namespace tsum::billing {

struct CatalogOffer {
  std::string instance_type;
  int vcpus = 0;
  double memory_gib = 0;
  int gpus = 0;
  std::string gpu_type;
  double hourly = 0;
  std::optional<double> spot_hourly;
  std::string region;
  std::string emulates;
};

struct Catalog {
  std::string provider;
  std::string currency = "USD";
  std::string source;
  std::string as_of;
  std::string note;
  std::optional<double> per_vcpu_hourly;
  std::vector<CatalogOffer> offers;

  const CatalogOffer* find(std::string_view instance_type) const;
  // The listed price, else per_vcpu_hourly * vcpus when the catalog has that fallback.
  std::optional<double> hourly_price(std::string_view instance_type, int vcpus) const;
};

Result<Catalog> parse_catalog(std::string_view json_text);

// The catalogs shipped in billing/catalogs/, compiled in (target tsum_billing_catalogs).
std::span<const EmbeddedFile> embedded_catalogs();

}  // namespace tsum::billing
