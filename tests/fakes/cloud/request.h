// Reading a fake's requests and writing the small things every API answers with: the target split into path
// and decoded query, path segments, and the timestamps clouds print.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tests/fakes/http/loopback_server.h"

namespace tsum::providers::fake_cloud {

using Query = std::map<std::string, std::string>;

struct Target {
  std::string path;  // the target before '?'
  Query query;       // decoded, '+' as a space; of a repeated name, the first
};

// invalid_argument for a malformed query (a bad %-escape).
Result<Target> parse_target(const http::LoopbackRequest& req);

// "/a//b/c" -> {"a", "b", "c"}
std::vector<std::string> split_path(std::string_view path);

// 2024-01-01T00:00:00.000Z (EC2, Hetzner)
std::string iso8601(double epoch_s);
// 2024-01-01T00:00:00.250000Z (Yandex, Google)
std::string rfc3339(double epoch_s);

}  // namespace tsum::providers::fake_cloud
