// Token management over the API (admin tokens only):
//   POST   /v1/tokens        {"scope": "admin"|"metrics"} (default admin) → 201 {"id", "scope", "token"}; the token
//                            is shown this once, only its SHA-256 is kept
//   GET    /v1/tokens        {"tokens": [{"id", "scope", "created_at", "revoked_at"}]}, admin and metrics tokens
//   DELETE /v1/tokens/{id}   revokes it → 200 {"id", "revoked": true}; 404 when no active token has that id
#pragma once

#include "api/http/router.h"
#include "daemon/store/token_store.h"

namespace tsum::api {

void add_token_routes(Router& router, daemon::TokenStore& tokens);

}  // namespace tsum::api
