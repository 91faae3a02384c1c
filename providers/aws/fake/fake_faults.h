// Faults the fake cloud injects, by API action, each for a number of calls:
//   429      HTTP 429 with Retry-After, RequestLimitExceeded (Throttling for the Price List API)
//   503      HTTP 503 RequestLimitExceeded, EC2's usual throttling answer (ServiceUnavailable for pricing)
//   500      HTTP 500 InternalError
//   timeout  no answer: the connection is held, then closed (the client's deadline fires first)
//   lost     the request is carried out (an instance is created, say), then the connection closes without
//            an answer: "created, but the response was lost"
// Spec syntax (tsum-fake-cloud --faults): comma-separated ACTION:KIND[:COUNT], ACTION "*" for any action,
// COUNT 1 when left out, e.g. "RunInstances:lost,DescribeInstances:429:2,*:503".
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::aws::fake {

enum class FaultKind { throttle_429, unavailable_503, internal_500, timeout, lost };

struct Fault {
  std::string action = "*";
  FaultKind kind = FaultKind::unavailable_503;
  int count = 1;
};

// invalid_argument names the bad entry.
Result<std::vector<Fault>> parse_faults(std::string_view spec);

// Pending faults, consumed in the order added; an action's own faults before "*" ones. Thread-safe.
class FaultPlan {
 public:
  void add(const Fault& f);
  std::optional<FaultKind> take(std::string_view action);
  int pending() const;

 private:
  mutable std::mutex mu_;
  std::vector<Fault> faults_;
};

}  // namespace tsum::providers::aws::fake
