// Where a spot run's next attempt goes (spot_recovery.policy, docs/spot.md): the offers its policy allows, each
// priced by what an hour of the run's learning is expected to cost there, the cheapest first.
//
// Expected cost of an hour of learning on an offer at price p with interruption rate r (per machine-hour, the
// Gamma-Poisson estimate of billing::estimate_spot_rate over that offer's own region's attempts):
//   p × (1 + r × (c / 2 + s)) + p × (s + m)
// c: the checkpoint interval (an interruption redoes half of it on average), s: a restart (the wait for the
// machine and its startup to learning), m: moving the checkpoint there (its bytes over kMoveBytesPerSecond; every
// machine fetches it from the daemon, so the move costs where the machine is dearer). On-demand has r = 0.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "providers/provider.h"

namespace tsum::daemon {

inline constexpr double kRestartS = 120;                 // a restart when the run measured none
inline constexpr double kMoveBytesPerSecond = 12.5e6;    // 100 Mbit/s: a machine fetching the checkpoint

// One offer a next attempt may go to.
struct RecoveryOffer {
  providers::Offer offer;
  std::string market;        // "spot" or "on-demand"
  double price = 0;          // per machine-hour in that market
  double rate_per_hour = 0;  // interruptions expected per machine-hour (0 on on-demand)
  std::string rate_basis;
};

struct RankedOffer {
  RecoveryOffer o;
  double expected = 0;  // per hour of learning, in the offer's currency
  std::string why;      // the terms, for the log and the attempt's reason
};

struct RecoveryTerms {
  double checkpoint_every_s = 300;
  double restart_s = kRestartS;
  double checkpoint_bytes = 0;
};

// The offers by expected cost, cheapest first (ties: the order given).
std::vector<RankedOffer> rank_offers(std::vector<RecoveryOffer> offers, const RecoveryTerms& terms);

// "aws us-east-1 c5.large spot": what a capacity failure marks and the log names.
std::string offer_key(const providers::Offer& o, const std::string& market);

// Whether `offer` can run what a machine of `machine` (providers::machine_of) ran: at least its vCPUs, memory
// and GPUs (of the same GPU type where it names one).
bool fits(const nlohmann::json& machine, const providers::Offer& offer);

// The clouds' own answers for capacity that ran out where the machine was to go: EC2's
// InsufficientInstanceCapacity (and InsufficientCapacity, MaxSpotInstanceCountExceeded), GCE's
// ZONE_RESOURCE_POOL_EXHAUSTED (and _WITH_DETAILS), Azure's SkuNotAvailable and AllocationFailed, Hetzner's
// resource_unavailable, Yandex's ResourceExhausted. Another region or cloud may have it.
bool no_capacity(const Error& e);

}  // namespace tsum::daemon
