#include "tests/fakes/cloud/request.h"

#include <cstdio>
#include <ctime>

#include "providers/http/codec.h"

namespace tsum::providers::fake_cloud {

Result<Target> parse_target(const http::LoopbackRequest& req) {
  auto q = req.target.find('?');
  Target t{.path = req.target.substr(0, q)};
  if (q == std::string::npos) return t;
  auto fields = http::parse_query(std::string_view(req.target).substr(q + 1), /*plus_is_space=*/true);
  if (!fields) return fields.error();
  for (auto& [k, v] : *fields) t.query.emplace(std::move(k), std::move(v));
  return t;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    auto slash = path.find('/');
    if (slash != 0) out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

namespace {

std::string utc(double epoch_s, const char* format) {
  std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace

std::string iso8601(double epoch_s) { return utc(epoch_s, "%Y-%m-%dT%H:%M:%S.000Z"); }

std::string rfc3339(double epoch_s) {
  char frac[16];
  const double whole = static_cast<double>(static_cast<std::time_t>(epoch_s));
  std::snprintf(frac, sizeof frac, ".%06dZ", static_cast<int>((epoch_s - whole) * 1e6));
  return utc(epoch_s, "%Y-%m-%dT%H:%M:%S") + frac;
}

}  // namespace tsum::providers::fake_cloud
