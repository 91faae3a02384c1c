// Small pieces every REST route file shares: path ids, bearer-token checks and error mapping.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/http/http_types.h"
#include "daemon/store/token_store.h"

namespace tsum::api {

// 422 with {"error": "invalid_argument", "detail": ...}: a well-formed body with invalid content.
Response unprocessable(const std::string& detail);

// The positive decimal path parameter "id"; nullopt (answer 404) for anything else.
std::optional<int64_t> id_param(const Request& req);

// The token of the request's "Authorization: Bearer" header; not_found (answer 401) when missing, unknown or revoked.
Result<daemon::TokenInfo> bearer(const Request& req, daemon::TokenStore& tokens);

// The request's bearer token, checked: nullopt when allowed, else the 401 to send. Admin routes pass
// run_id = 0; a run's events route passes its run, which that run's token may also use.
std::optional<Response> check_auth(const Request& req, daemon::TokenStore& tokens, int64_t run_id = 0);

// The request's body as a JSON object, into `out`: nullopt when it is one whose fields are all in `known`, else
// the answer to send: 400 when it is not JSON (an empty body too, unless `empty_is_object`), 422 when it is not an
// object or names another field.
std::optional<Response> object_body(const Request& req, std::initializer_list<std::string_view> known,
                                    nlohmann::json* out, bool empty_is_object = false);

// invalid_argument → 422; other codes as error_response maps them.
Response from_error(const Error& e);

}  // namespace tsum::api
