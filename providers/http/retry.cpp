#include "providers/http/retry.h"

#include <algorithm>

namespace tsum::providers::http {

bool retryable_status(int status) { return status == 429 || (status >= 500 && status <= 599 && status != 501 && status != 505); }

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty() || value.size() > 9) return std::nullopt;
  long secs = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    secs = secs * 10 + (c - '0');
  }
  return std::chrono::seconds(secs);
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt, double u) {
  using std::chrono::milliseconds;
  const int doublings = std::clamp(attempt - 1, 0, 30);
  const double cap = std::min<double>(static_cast<double>(policy.max_delay.count()),
                                      static_cast<double>(policy.base_delay.count()) * static_cast<double>(1LL << doublings));
  const double half = std::max(0.0, cap) / 2;
  return milliseconds(static_cast<long long>(half + half * std::clamp(u, 0.0, 1.0)));
}

}  // namespace tsum::providers::http
