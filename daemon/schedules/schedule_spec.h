// A schedule's body (POST /v1/schedules): a cron expression in a zone, the experiment it submits at each firing,
// an optional budget over all firings, and what to do about missed ones.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"

namespace tsum::daemon {

struct ScheduleSpec {
  std::string name = "schedule";
  std::string cron;
  std::string timezone = "UTC";
  nlohmann::json experiment;     // an experiment body, as POST /v1/experiments takes it
  std::optional<double> budget;  // spend cap over all its firings together (daemon/schedules/budget.h)
  std::string missed = "skip";   // or "catch_up"
  bool enabled = true;
};

// Parses and validates a schedule body: unknown fields, the cron expression, the zone and the experiment
// body are all checked. invalid_argument (or not_found for an unknown zone) naming what is wrong.
Result<ScheduleSpec> parse_schedule(const nlohmann::json& body);

}  // namespace tsum::daemon
