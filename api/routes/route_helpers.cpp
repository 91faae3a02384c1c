#include "api/routes/route_helpers.h"

#include <algorithm>
#include <charconv>

#include "common/json_util.h"

namespace tsum::api {

Response unprocessable(const std::string& detail) { return error_response(422, "invalid_argument", detail); }

std::optional<Response> object_body(const Request& req, std::initializer_list<std::string_view> known,
                                    nlohmann::json* out, bool empty_is_object) {
  if (req.body.empty() && empty_is_object) {
    *out = nlohmann::json::object();
    return std::nullopt;
  }
  auto body = parse_json_safely(req.body);
  if (!body) return error_response(400, "invalid_argument", req.body.empty() ? "the body is empty: a JSON object is expected"
                                                                             : "malformed JSON body");
  if (!body->is_object()) return unprocessable("the body must be a JSON object");
  for (const auto& [key, _] : body->items())
    if (std::find(known.begin(), known.end(), key) == known.end()) return unprocessable("unknown field '" + key + "'");
  *out = std::move(*body);
  return std::nullopt;
}

std::optional<int64_t> id_param(const Request& req) {
  auto it = req.params.find("id");
  if (it == req.params.end()) return std::nullopt;
  const std::string& s = it->second;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

Result<daemon::TokenInfo> bearer(const Request& req, daemon::TokenStore& tokens) {
  std::string h = req.header("Authorization");
  if (h.size() < 8 || (h.compare(0, 7, "Bearer ") != 0 && h.compare(0, 7, "bearer ") != 0))
    return make_error(Code::not_found, "missing 'Authorization: Bearer <token>' header");
  auto info = tokens.authenticate(std::string_view(h).substr(7));
  if (!info) return make_error(Code::not_found, "invalid or revoked token");
  return info;
}

std::optional<Response> check_auth(const Request& req, daemon::TokenStore& tokens, int64_t run_id) {
  auto info = bearer(req, tokens);
  if (!info) return error_response(401, "unauthenticated", info.error().detail);
  if (info->admin) return std::nullopt;
  if (run_id != 0 && info->run_id == run_id) return std::nullopt;
  // A token that is good but does not reach this route: 403, so that a client does not ask for a token it has.
  if (info->metrics) return error_response(403, "forbidden", "a metrics token may only read GET /metrics");
  return error_response(403, "forbidden",
                        run_id ? "this run token belongs to another run" : "a run token cannot use this route");
}

Response from_error(const Error& e) {
  if (e.code == Code::invalid_argument) return unprocessable(e.detail);
  return error_response(e);
}

}  // namespace tsum::api
