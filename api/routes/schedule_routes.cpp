#include "api/routes/schedule_routes.h"

#include <charconv>

#include "api/routes/paging.h"
#include "api/routes/route_helpers.h"
#include "common/json_util.h"

namespace tsum::api {

using nlohmann::json;
using Awaitable = boost::asio::awaitable<Response>;

namespace {

Result<daemon::ScheduleSpec> schedule_body(const Request& req) {
  auto body = parse_json_safely(req.body);
  if (!body) return make_error(Code::unavailable, "malformed JSON body");  // mapped to 400 by the caller
  return daemon::parse_schedule(*body);
}

Response body_error(const Error& e) {
  if (e.code == Code::unavailable) return error_response(400, "invalid_argument", e.detail);
  return unprocessable(e.detail);  // invalid content, including an unknown time zone
}

}  // namespace

void add_schedule_routes(Router& router, daemon::Scheduler& schedules_ref, daemon::TokenStore& tokens_ref) {
  // The routes outlive this call: capture the services by pointer.
  auto* sched = &schedules_ref;
  auto* toks = &tokens_ref;
  router.add("POST", "/v1/schedules", [sched, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto spec = schedule_body(req);
    if (!spec) co_return body_error(spec.error());
    auto id = sched->create(*spec);
    if (!id) co_return from_error(id.error());
    auto j = sched->get(*id);
    if (!j) co_return from_error(j.error());
    co_return json_response(201, *j);
  });
  router.add("GET", "/v1/schedules", [sched, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto all = sched->list();
    if (!all) co_return from_error(all.error());
    co_return json_response(200, {{"schedules", *all}});
  });
  router.add("GET", "/v1/schedules/{id}", [sched, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no schedule '" + req.params["id"] + "'");
    auto j = sched->get(*id);
    if (!j) co_return from_error(j.error());
    co_return json_response(200, *j);
  });
  // A page of the schedule's firings by due time (the cursor holds a due time in milliseconds).
  router.add("GET", "/v1/schedules/{id}/firings", [sched, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no schedule '" + req.params["id"] + "'");
    if (auto known = known_query(req, {}); !known) co_return from_error(known.error());
    auto page = page_request(req, "firings");
    if (!page) co_return from_error(page.error());
    auto listed = sched->firings(*id, *page);
    if (!listed) co_return from_error(listed.error());
    json out = page_fields("firings", *page, listed->total, listed->next_after);
    out["firings"] = std::move(listed->rows);
    co_return json_response(200, out);
  });
  router.add("PUT", "/v1/schedules/{id}", [sched, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no schedule '" + req.params["id"] + "'");
    auto spec = schedule_body(req);
    if (!spec) co_return body_error(spec.error());
    if (auto s = sched->update(*id, *spec); !s) co_return from_error(s.error());
    auto j = sched->get(*id);
    if (!j) co_return from_error(j.error());
    co_return json_response(200, *j);
  });
  router.add("DELETE", "/v1/schedules/{id}", [sched, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no schedule '" + req.params["id"] + "'");
    if (auto s = sched->remove(*id); !s) co_return from_error(s.error());
    co_return json_response(200, {{"id", *id}, {"deleted", true}});
  });
  router.add("GET", "/v1/schedules/{id}/next", [sched, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no schedule '" + req.params["id"] + "'");
    int count = 5;
    if (auto it = req.query.find("count"); it != req.query.end()) {
      const std::string& s = it->second;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), count);
      if (ec != std::errc() || p != s.data() + s.size() || count < 1 || count > 100)
        co_return unprocessable("'count' must be an integer from 1 to 100");
    }
    auto next = sched->next(*id, count);
    if (!next) co_return from_error(next.error());
    co_return json_response(200, {{"id", *id}, {"next", *next}});
  });
}

}  // namespace tsum::api
