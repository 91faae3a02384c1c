#include "daemon/runs/recovery.h"

#include <algorithm>
#include <cstdio>

namespace tsum::daemon {

std::vector<RankedOffer> rank_offers(std::vector<RecoveryOffer> offers, const RecoveryTerms& terms) {
  std::vector<RankedOffer> out;
  const double c = terms.checkpoint_every_s / 3600, s = terms.restart_s / 3600;
  const double m = terms.checkpoint_bytes / kMoveBytesPerSecond / 3600;
  for (auto& o : offers) {
    const double expected = o.price * (1 + o.rate_per_hour * (c / 2 + s)) + o.price * (s + m);
    char why[256];
    std::snprintf(why, sizeof why, "%.4f %s/h of learning: %.4f/h, %.3g interruptions/h (%s), restart %.0f s, "
                  "checkpoint %.1f MB", expected, o.offer.currency.c_str(), o.price, o.rate_per_hour,
                  o.rate_basis.empty() ? "on-demand" : o.rate_basis.c_str(), terms.restart_s,
                  terms.checkpoint_bytes / 1e6);
    out.push_back({std::move(o), expected, why});
  }
  std::stable_sort(out.begin(), out.end(), [](const RankedOffer& a, const RankedOffer& b) { return a.expected < b.expected; });
  return out;
}

std::string offer_key(const providers::Offer& o, const std::string& market) {
  return o.provider + " " + (o.region.empty() ? std::string("-") : o.region) + " " + o.instance_type + " " + market;
}

bool fits(const nlohmann::json& machine, const providers::Offer& offer) {
  if (!machine.is_object()) return false;
  const int vcpus = machine.value("vcpus", 0), gpus = machine.value("gpus", 0);
  const double memory = machine.value("memory_gib", 0.0);
  if (vcpus <= 0) return false;  // nothing known to compare with
  if (offer.vcpus < vcpus || offer.memory_gib + 1e-9 < memory || offer.gpus < gpus) return false;
  return gpus == 0 || machine.value("gpu_type", "") == offer.gpu_type;
}

bool no_capacity(const Error& e) {
  static constexpr std::string_view kCodes[] = {
      "InsufficientInstanceCapacity", "InsufficientCapacity", "MaxSpotInstanceCountExceeded",  // EC2
      "ZONE_RESOURCE_POOL_EXHAUSTED",                                                          // GCE (and _WITH_DETAILS)
      "SkuNotAvailable", "AllocationFailed",                                                   // Azure
      "resource_unavailable",                                                                  // Hetzner
      "ResourceExhausted",                                                                     // Yandex
  };
  return std::any_of(std::begin(kCodes), std::end(kCodes),
                     [&](std::string_view c) { return e.detail.find(c) != std::string::npos; });
}

}  // namespace tsum::daemon
