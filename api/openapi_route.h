// GET /v1/openapi.json: the OpenAPI 3 document of every route (api/openapi.json, compiled in). No auth, so
// tools can fetch it. tests/api checks that it lists exactly the routes the daemon's router registers.
#pragma once

#include <string_view>

#include "api/http/router.h"

namespace tsum::api {

// The document's text.
std::string_view openapi_document();

void add_openapi_route(Router& router);

}  // namespace tsum::api
