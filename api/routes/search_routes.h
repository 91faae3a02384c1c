// REST routes for adaptive searches (admin token), see daemon/planning/search_runner.h:
//
//   POST /v1/searches       {"workload", "candidates": [{"provider", "instance_type"}], "objective",
//                            "probe_budget", ...}  → 202 {"id", "status"}
//   GET  /v1/searches/{id}  status, the probes so far, and once done the trace (config, measured t_sum, cost,
//                           why it was chosen), the recommendation and the final ranking
#pragma once

#include "api/http/router.h"
#include "daemon/planning/search_runner.h"
#include "daemon/store/token_store.h"

namespace tsum::api {

void add_search_routes(Router& router, daemon::SearchRunner& searches, daemon::TokenStore& tokens);

}  // namespace tsum::api
