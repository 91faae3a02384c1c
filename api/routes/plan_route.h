// GET /v1/plan?experiment=ID&objective=cost|time|cost_under_deadline|budget[&deadline=S][&budget=B]
//              [&repetitions=N][&billing=RULE]
// Ranks every offer of every configured provider for the workload of experiment ID, predicted from the done runs
// of that same workload in SQLite (the newest 1,000 of each config, daemon/planning/plan_history.h; billing/model/predictor.h),
// priced under each provider's billing rule (or
// RULE for all). The answer is billing::plan_to_json: ranked entries with predicted phases, t_sum and its
// p10/p90, billed seconds, cost, confidence and a one-line reason; configs it cannot predict are listed.
#pragma once

#include "api/http/router.h"
#include "daemon/config/provider_registry.h"
#include "daemon/store/store.h"
#include "daemon/store/token_store.h"
#include "daemon/views/totals.h"
#include "daemon/views/views.h"

namespace tsum::api {

void add_plan_route(Router& router, daemon::Db& db, daemon::Store& store, daemon::Totals& totals,
                    daemon::TokenStore& tokens, daemon::ProviderRegistry& providers);

}  // namespace tsum::api
