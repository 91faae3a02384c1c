// Faults a fake cloud injects, by API method (the names each fake documents: RunInstances,
// instances.insert, servers.delete, ...), each for a number of calls:
//   429      HTTP 429 with Retry-After, in the cloud's own throttling body
//   503      HTTP 503, the cloud's "unavailable" body (EC2's usual throttling answer)
//   500      HTTP 500, the cloud's internal error body
//   timeout  no answer: the connection is held, then closed (the client's deadline fires first)
//   lost     the request is carried out (an instance is created, say), then the connection closes without
//            an answer: "created, but the response was lost"
// Spec syntax (every fake's --faults): comma-separated METHOD:KIND[:COUNT], METHOD "*" for any method,
// COUNT 1 when left out, e.g. "RunInstances:lost,DescribeInstances:429:2,*:503".
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tsum::providers::fake_cloud {

enum class FaultKind { throttle_429, unavailable_503, internal_500, timeout, lost };

struct Fault {
  std::string method = "*";
  FaultKind kind = FaultKind::unavailable_503;
  int count = 1;
};

// invalid_argument names the bad entry.
Result<std::vector<Fault>> parse_faults(std::string_view spec);

// Pending faults, consumed in the order added; a method's own faults before "*" ones. Thread-safe.
class FaultPlan {
 public:
  void add(const Fault& f);
  std::optional<FaultKind> take(std::string_view method);
  int pending() const;

 private:
  mutable std::mutex mu_;
  std::vector<Fault> faults_;
};

}  // namespace tsum::providers::fake_cloud
