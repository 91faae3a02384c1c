// Price catalogs: data files (billing/prices/catalogs/<provider>.json) that map instance types to hourly prices,
// each with its source URL and as_of date. Parsing is pure; the caller supplies the text.
//
// Format:
//   {"provider": "aws", "currency": "USD", "source": "https://...", "as_of": "YYYY-MM-DD",
//    "note": "...", "billing": "aws_ec2_linux",          // optional: the rule name for this provider
//    "per_vcpu_hourly": 0.0425,                          // optional fallback for unlisted types
//    "offers": [{"instance_type": "p3.2xlarge", "vcpus": 8, "memory_gib": 61, "gpus": 1, "gpu_type": "V100",
//                "cpu_family": "intel-broadwell", "hourly": 3.06, "spot_hourly": null, "monthly": null,
//                "region": "us-east-1", "billing": "", "emulates": "", "source": "", "as_of": ""}]}
//
// An offer's own source/as_of (set by merge_prices) override the catalog's; its billing overrides the
// catalog's (e.g. OCI bare metal). Unknown fields are errors, so a typo cannot silently drop a price.
// A price refresh is a catalog document listing only the types it has new prices for; merge_prices applies it.
#pragma once

#include <optional>
#include <span>
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
  std::string cpu_family;
  double hourly = 0;
  std::optional<double> spot_hourly;
  std::optional<double> monthly;  // a monthly price that caps billing (Hetzner)
  std::string region;
  std::string billing;  // rule name overriding the catalog's, "" for none
  std::string emulates;
  std::string source;  // "" = the catalog's
  std::string as_of;   // "" = the catalog's
};

struct Catalog {
  std::string provider;
  std::string currency = "USD";
  std::string source;
  std::string as_of;
  std::string note;
  std::string billing;  // the provider's rule name, "" for none
  std::optional<double> per_vcpu_hourly;
  std::vector<CatalogOffer> offers;

  const CatalogOffer* find(std::string_view instance_type) const;
  // The listed price, else per_vcpu_hourly * vcpus when the catalog has that fallback.
  std::optional<double> hourly_price(std::string_view instance_type, int vcpus) const;
};

Result<Catalog> parse_catalog(std::string_view json_text);

// The catalog as a JSON document: parse_catalog(serialize_catalog(c)) gives c back.
std::string serialize_catalog(const Catalog& c);

// Applies a price refresh: every type in `update` gets update's hourly price, and its spot and monthly prices
// where update lists them, plus update's source and as_of; types not yet in `base` are added; all other
// offers are kept as they are. invalid_argument when provider or currency differ.
Result<Catalog> merge_prices(const Catalog& base, const Catalog& update);

// The catalogs shipped in billing/prices/catalogs/, compiled in (target tsum_billing_catalogs).
std::span<const EmbeddedFile> embedded_catalogs();

}  // namespace tsum::billing
