// When and how long HttpClient waits before trying a request again. Pure functions, no I/O.
//
// Retried: HTTP 429 and 5xx (but 501 and 505, which do not change on a retry), timeouts and connection
// errors. Not retried: any other status, TLS verification failures, malformed URLs.
// The wait before try n+1 is "equal jitter": half of min(max_delay, base_delay * 2^(n-1)) fixed, the other
// half uniformly random. A Retry-After of delta-seconds on the response replaces that wait.
// Nothing waits past the policy's overall deadline: a wait that would end after it ends the retries instead.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace tsum::providers::http {

struct RetryPolicy {
  int max_attempts = 5;                          // 1: no retries
  std::chrono::milliseconds base_delay{200};
  std::chrono::milliseconds max_delay{20000};
  std::chrono::milliseconds deadline{120000};    // all attempts and waits of one send() together
};

bool retryable_status(int status);

// "120" -> 120 s. HTTP-dates and anything else give nullopt (the caller then uses its backoff).
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value);

// The wait after failed attempt `attempt` (1-based); u is uniform in [0, 1).
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt, double u);

}  // namespace tsum::providers::http
