// What the cloud provider tests share: a launch, and the HTTP options an adapter gets to talk to its fake.
#pragma once

#include <chrono>
#include <string>

#include "providers/http/http_client.h"
#include "providers/provider.h"

namespace tsum::testing {

// A launch of run `run` with ownership tag `tag`; the same arguments give the same idempotency token.
inline providers::LaunchSpec launch_spec(const std::string& run, const std::string& tag = "tsum-test") {
  return {.run_id = run, .tag = tag, .idempotency_token = "run" + run + "-" + tag,
          .agent_script = "#!/bin/sh\necho agent for run " + run + "\n",
          .env = {{"TSUM_RUN_ID", run}, {"TSUM_TOKEN", "it's secret"}}};
}

// Trusts the CA at ca_file; four quick attempts (10 to 50 ms apart, 30 s in all), so fault tests run fast.
inline providers::http::HttpClientOptions fake_http(const std::string& ca_file) {
  using namespace std::chrono_literals;
  return {.ca_file = ca_file, .retry = {.max_attempts = 4, .base_delay = 10ms, .max_delay = 50ms, .deadline = 30s}};
}

}  // namespace tsum::testing
