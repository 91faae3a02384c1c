#include "daemon/schedules/schedule_spec.h"

#include "daemon/schedules/cron.h"
#include "daemon/experiments/experiment_spec.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

Error bad_schedule(std::string what) { return make_error(Code::invalid_argument, std::move(what)); }

}  // namespace

Result<ScheduleSpec> parse_schedule(const json& body) {
  if (!body.is_object()) return bad_schedule("the body must be a JSON object");
  for (const auto& [k, _] : body.items())
    if (k != "name" && k != "cron" && k != "timezone" && k != "experiment" && k != "budget" && k != "missed" &&
        k != "enabled")
      return bad_schedule("unknown field '" + k + "'");
  ScheduleSpec s;
  if (body.contains("name")) {
    if (!body["name"].is_string() || body["name"].get<std::string>().size() > 200)
      return bad_schedule("'name' must be a string of at most 200 characters");
    s.name = body["name"];
  }
  if (!body.contains("cron") || !body["cron"].is_string()) return bad_schedule("'cron' must be a string, e.g. \"0 2 * * *\"");
  s.cron = body["cron"];
  if (body.contains("timezone")) {
    if (!body["timezone"].is_string()) return bad_schedule("'timezone' must be an IANA zone name, e.g. \"Europe/Moscow\"");
    s.timezone = body["timezone"];
  }
  auto cron = CronSchedule::parse(s.cron, s.timezone);
  if (!cron) return make_error(cron.error().code, "'cron': " + cron.error().detail);
  if (!body.contains("experiment")) return bad_schedule("missing field 'experiment'");
  auto exp = experiment_spec_from_json(body["experiment"]);
  if (!exp) return bad_schedule("'experiment': " + exp.error().detail);
  s.experiment = body["experiment"];
  if (body.contains("budget") && !body["budget"].is_null()) {
    if (!body["budget"].is_number() || !(body["budget"].get<double>() > 0) || !(body["budget"].get<double>() <= kMaxMoney))
      return bad_schedule("'budget' must be a number above 0 and at most 1e9");
    s.budget = body["budget"].get<double>();
  }
  if (body.contains("missed")) {
    if (body["missed"] != "skip" && body["missed"] != "catch_up") return bad_schedule("'missed' must be \"skip\" or \"catch_up\"");
    s.missed = body["missed"];
  }
  if (body.contains("enabled")) {
    if (!body["enabled"].is_boolean()) return bad_schedule("'enabled' must be true or false");
    s.enabled = body["enabled"];
  }
  return s;
}

}  // namespace tsum::daemon
