#include "api/openapi_route.h"

#include <span>

#include "common/embedded.h"

namespace tsum::api {

std::span<const EmbeddedFile> openapi_files();  // compiled in from api/openapi.json (target tsum_openapi)

std::string_view openapi_document() { return find_embedded(openapi_files(), "openapi.json"); }

void add_openapi_route(Router& router) {
  router.add("GET", "/v1/openapi.json", [](Request&) -> boost::asio::awaitable<Response> {
    Response r;
    r.body = std::string(openapi_document());
    co_return r;
  });
}

}  // namespace tsum::api
