// The dashboard's static files: GET / (and GET /ui) serve index.html, GET /ui/{name} the bundle's other
// files (app.js, app.css). No auth: they hold no data; the app fetches everything from /v1 with the user's
// token.
//
// Files come from the set compiled into tsumd (web/, bundled at build time) or, when `dir` is set, from that
// directory, read at each request (for working on the dashboard without relinking). Names are flat: one
// segment of letters, digits, '.', '_' or '-', not starting with '.', so no request can leave the set or the
// directory. Each response carries its Content-Type, an ETag (a hash of the content) and
// "Cache-Control: no-cache", so a browser revalidates and gets 304 while the file is unchanged; HTML also
// carries a Content-Security-Policy that lets the page talk to this origin only.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "api/http/router.h"
#include "common/embedded.h"

namespace tsum::api {

struct WebFiles {
  std::span<const EmbeddedFile> embedded;  // used when `dir` is empty
  std::string dir;                         // serve from this directory instead
};

void add_web_routes(Router& router, WebFiles files);

// "text/html; charset=utf-8" for "index.html", ... by extension; application/octet-stream if unknown.
std::string_view content_type_for(std::string_view name);

}  // namespace tsum::api
