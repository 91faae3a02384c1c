// The OpenAPI document lists exactly the routes a real daemon's router registers, and the daemon serves it.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <set>

#include "api/app.h"
#include "api/openapi_route.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;
using nlohmann::json;
namespace asio = boost::asio;

namespace {

using RouteSet = std::set<std::pair<std::string, std::string>>;

// (METHOD, path) of every operation in the document.
RouteSet documented(const json& doc) {
  static const std::set<std::string> kMethods = {"get", "put", "post", "delete", "patch", "head", "options"};
  RouteSet out;
  for (const auto& [path, item] : doc["paths"].items())
    for (const auto& [key, _] : item.items())
      if (kMethods.count(key)) {
        std::string method = key;
        for (char& ch : method) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        out.insert({method, path});
      }
  return out;
}

// The routes of a real App, registered by start() as `tsumd serve` does.
RouteSet registered(const TempDir& dir) {
  asio::io_context io;
  api::AppOptions opts;
  opts.db_path = dir.file("routes.db");
  opts.bundle_path = TSUM_BUNDLE;
  auto app = api::App::create(io, opts);
  REQUIRE_MESSAGE(app.ok(), app.error().detail);
  RouteSet out;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto port = co_await (*app)->start();
    if (port)
      for (const auto& r : (*app)->router().routes()) out.insert(r);
    co_await (*app)->shutdown();
    io.stop();
  }, asio::detached);
  io.run_for(std::chrono::seconds(60));
  return out;
}

}  // namespace

TEST_CASE("every registered route is in the OpenAPI document, and every documented one is registered") {
  TempDir dir;
  const json doc = json::parse(api::openapi_document());
  const RouteSet routes = registered(dir);
  const RouteSet ops = documented(doc);
  REQUIRE(routes.size() > 20);
  for (const auto& r : routes) {
    CAPTURE(r.first + " " + r.second);
    CHECK(ops.count(r) == 1);
  }
  for (const auto& op : ops) {
    CAPTURE(op.first + " " + op.second);
    CHECK(routes.count(op) == 1);
  }
  CHECK(doc["openapi"].get<std::string>().rfind("3.", 0) == 0);
}

TEST_CASE("GET /v1/openapi.json serves the document without a token") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  d.start();
  auto r = d.call("GET", "/v1/openapi.json", "");
  CHECK(r.status == 200);
  CHECK(r.header("Content-Type").rfind("application/json", 0) == 0);
  CHECK(r.json() == json::parse(api::openapi_document()));
}
