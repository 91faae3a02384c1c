#include "api/routes/search_routes.h"

#include "api/routes/paging.h"
#include "api/routes/route_helpers.h"
#include "common/json_util.h"

namespace tsum::api {

using nlohmann::json;
using Awaitable = boost::asio::awaitable<Response>;

void add_search_routes(Router& router, daemon::SearchRunner& searches_ref, daemon::TokenStore& tokens_ref) {
  auto* searches = &searches_ref;
  auto* toks = &tokens_ref;
  router.add("POST", "/v1/searches", [searches, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto body = parse_json_safely(req.body);
    if (!body) co_return error_response(400, "invalid_argument", "malformed JSON body");
    const json request = *body;
    auto id = co_await searches->start(request);
    if (!id) co_return id.error().code == Code::invalid_argument ? unprocessable(id.error().detail)
                                                                 : from_error(id.error());
    co_return json_response(202, {{"id", *id}, {"status", "running"}});
  });
  router.add("GET", "/v1/searches", [searches, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    if (auto known = known_query(req, {}); !known) co_return from_error(known.error());
    auto page = page_request(req, "searches");
    if (!page) co_return from_error(page.error());
    auto listed = searches->list(*page);
    if (!listed) co_return from_error(listed.error());
    json out = page_fields("searches", *page, listed->total, listed->next_after);
    out["searches"] = std::move(listed->rows);
    co_return json_response(200, out);
  });
  router.add("GET", "/v1/searches/{id}", [searches, toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no search '" + req.params["id"] + "'");
    auto j = searches->get(*id);
    if (!j) co_return from_error(j.error());
    co_return json_response(200, *j);
  });
}

}  // namespace tsum::api
