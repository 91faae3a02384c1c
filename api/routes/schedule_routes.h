// REST routes for schedules (admin token):
//
//   POST   /v1/schedules                {"cron", "timezone", "experiment", "budget", "missed", "name", "enabled"}
//                                       → 201 {"id", "next_fire_at", "next_fire_local"}
//   GET    /v1/schedules                all schedules
//   GET    /v1/schedules/{id}           one, with its last 20 firings
//   PUT    /v1/schedules/{id}           replace it (same body as POST)
//   DELETE /v1/schedules/{id}           stop it (the experiments it fired stay)
//   GET    /v1/schedules/{id}/next?count=5   the next due times, unix and local
#pragma once

#include "api/http/router.h"
#include "daemon/schedules/scheduler.h"
#include "daemon/store/token_store.h"

namespace tsum::api {

void add_schedule_routes(Router& router, daemon::Scheduler& schedules, daemon::TokenStore& tokens);

}  // namespace tsum::api
