#include "api/routes/token_routes.h"

#include "api/routes/route_helpers.h"
#include "common/json_util.h"

namespace tsum::api {

using nlohmann::json;
using Awaitable = boost::asio::awaitable<Response>;

void add_token_routes(Router& router, daemon::TokenStore& tokens_ref) {
  auto* toks = &tokens_ref;  // the routes outlive this call
  router.add("POST", "/v1/tokens", [toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    json body;
    if (auto bad = object_body(req, {"scope"}, &body)) co_return *bad;
    if (!body.contains("scope") || !body["scope"].is_string())
      co_return unprocessable("'scope' is required: \"admin\" or \"metrics\"");
    const std::string scope = body["scope"].get<std::string>();
    if (scope != "admin" && scope != "metrics") co_return unprocessable("'scope' must be \"admin\" or \"metrics\"");
    auto token = scope == "admin" ? toks->create_admin() : toks->create_metrics();
    if (!token) co_return error_response(token.error());
    co_return json_response(201, {{"id", daemon::TokenStore::id_of(*token)}, {"scope", scope}, {"token", *token}});
  });
  router.add("GET", "/v1/tokens", [toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    auto all = toks->list();
    if (!all) co_return error_response(all.error());
    json out = json::array();
    for (const auto& t : *all)
      out.push_back({{"id", t.id}, {"scope", t.scope}, {"created_at", t.created_at},
                     {"revoked_at", t.revoked_at ? json(*t.revoked_at) : json(nullptr)}});
    co_return json_response(200, {{"tokens", out}});
  });
  router.add("DELETE", "/v1/tokens/{id}", [toks](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, *toks)) co_return *denied;
    const std::string id = req.params["id"];
    if (auto s = toks->revoke(id); !s) co_return error_response(s.error());
    co_return json_response(200, {{"id", id}, {"revoked", true}});
  });
}

}  // namespace tsum::api
