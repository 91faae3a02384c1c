#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <stdexcept>

#include "api/http/router.h"

using namespace tsum::api;
namespace asio = boost::asio;

namespace {

Response run_dispatch(const Router& router, Request& req) {
  asio::io_context io;
  auto future = asio::co_spawn(io, router.dispatch(req), asio::use_future);
  io.run();
  return future.get();
}

Request make_request(std::string method, std::string target) {
  Request req;
  req.method = std::move(method);
  req.target = std::move(target);
  auto parsed = parse_target(req.target);
  if (parsed) {
    req.path = parsed->path;
    req.query = parsed->query;
  }
  return req;
}

// A handler that answers with its name and the params it saw.
Handler named(std::string name) {
  return [name](Request& req) -> asio::awaitable<Response> {
    co_return json_response(200, {{"handler", name}, {"params", req.params}});
  };
}

nlohmann::json body_of(const Response& res) { return nlohmann::json::parse(res.body); }

}  // namespace

TEST_CASE("router: path params are filled and decoded") {
  Router router;
  router.add("GET", "/v1/runs/{id}/events/{seq}", named("events"));
  Request req = make_request("GET", "/v1/runs/a%2Fb/events/7?x=1");
  Response res = run_dispatch(router, req);
  CHECK(res.status == 200);
  auto body = body_of(res);
  CHECK(body["handler"] == "events");
  CHECK(body["params"]["id"] == "a/b");  // an encoded slash stays inside its segment
  CHECK(body["params"]["seq"] == "7");
  CHECK(req.params.at("id") == "a/b");
}

TEST_CASE("router: literal segments beat parameters regardless of order") {
  Router router;
  router.add("GET", "/v1/runs/{id}", named("by_id"));
  router.add("GET", "/v1/runs/latest", named("latest"));
  router.add("GET", "/v1/{kind}/latest", named("kind_latest"));
  Request latest = make_request("GET", "/v1/runs/latest");
  CHECK(body_of(run_dispatch(router, latest))["handler"] == "latest");
  Request by_id = make_request("GET", "/v1/runs/42");
  CHECK(body_of(run_dispatch(router, by_id))["handler"] == "by_id");
  Request kind = make_request("GET", "/v1/experiments/latest");
  CHECK(body_of(run_dispatch(router, kind))["handler"] == "kind_latest");
}

TEST_CASE("router: 404 for unknown path, 405 with Allow for wrong method") {
  Router router;
  router.add("GET", "/v1/runs/{id}", named("get"));
  router.add("delete", "/v1/runs/{id}", named("delete"));
  router.add("POST", "/v1/runs", named("create"));

  Request missing = make_request("GET", "/v1/nothing");
  Response not_found = run_dispatch(router, missing);
  CHECK(not_found.status == 404);
  CHECK(body_of(not_found)["error"] == "not_found");

  Request trailing = make_request("GET", "/v1/runs/5/");
  CHECK(run_dispatch(router, trailing).status == 404);
  Request empty_param = make_request("GET", "/v1/runs/");  // {id} needs a non-empty segment
  CHECK(run_dispatch(router, empty_param).status == 404);

  Request wrong = make_request("PUT", "/v1/runs/5");
  Response not_allowed = run_dispatch(router, wrong);
  CHECK(not_allowed.status == 405);
  CHECK(body_of(not_allowed)["error"] == "invalid_argument");
  bool has_allow = false;
  for (const auto& [k, v] : not_allowed.headers) {
    if (k == "Allow") {
      has_allow = true;
      CHECK(v == "DELETE, GET");
    }
  }
  CHECK(has_allow);

  Request deleted = make_request("DELETE", "/v1/runs/5");
  CHECK(body_of(run_dispatch(router, deleted))["handler"] == "delete");
}

TEST_CASE("router: a throwing handler becomes 500 internal") {
  Router router;
  router.add("GET", "/boom", [](Request&) -> asio::awaitable<Response> {
    throw std::runtime_error("kaput");
    co_return Response{};
  });
  router.add("GET", "/int", [](Request&) -> asio::awaitable<Response> {
    throw 42;
    co_return Response{};
  });
  router.add("GET", "/empty", Handler{});
  for (const char* target : {"/boom", "/int", "/empty"}) {
    Request req = make_request("GET", target);
    Response res = run_dispatch(router, req);
    CHECK(res.status == 500);
    CHECK(body_of(res)["error"] == "internal");
  }
  Request boom = make_request("GET", "/boom");
  CHECK(body_of(run_dispatch(router, boom))["detail"].get<std::string>().find("kaput") != std::string::npos);
}

TEST_CASE("router: hand-built request without target routes by path") {
  Router router;
  router.add("GET", "/v1/runs/{id}", named("get"));
  Request req;
  req.method = "GET";
  req.path = "/v1/runs/7";
  Response res = run_dispatch(router, req);
  CHECK(res.status == 200);
  CHECK(req.params.at("id") == "7");
}

TEST_CASE("router: bad patterns and duplicates throw at add()") {
  Router router;
  CHECK_THROWS_AS(router.add("GET", "v1/runs", named("x")), std::invalid_argument);
  CHECK_THROWS_AS(router.add("GET", "", named("x")), std::invalid_argument);
  CHECK_THROWS_AS(router.add("GET", "/v1/{}", named("x")), std::invalid_argument);
  CHECK_THROWS_AS(router.add("GET", "/v1/{id", named("x")), std::invalid_argument);
  CHECK_THROWS_AS(router.add("GET", "/v1/a{id}", named("x")), std::invalid_argument);
  router.add("GET", "/v1/runs", named("x"));
  CHECK_THROWS_AS(router.add("get", "/v1/runs", named("y")), std::invalid_argument);
  router.add("POST", "/v1/runs", named("z"));
}

TEST_CASE("router: routes() lists (method, pattern) in order") {
  Router router;
  router.add("get", "/v1/runs", named("a"));
  router.add("POST", "/v1/runs/{id}/events", named("b"));
  auto routes = router.routes();
  REQUIRE(routes.size() == 2);
  CHECK(routes[0] == std::pair<std::string, std::string>{"GET", "/v1/runs"});
  CHECK(routes[1] == std::pair<std::string, std::string>{"POST", "/v1/runs/{id}/events"});
}

TEST_CASE("router: options_for returns the options of the route dispatch() would pick") {
  Router router;
  router.add("PUT", "/v1/runs/{id}/artifacts/{name}", named("upload"), {.body_to_file = true, .body_limit = 99});
  router.add("PUT", "/v1/runs/{id}/artifacts/latest", named("literal"), {.body_limit = 7});
  router.add("GET", "/v1/runs/{id}/artifacts/{name}", named("download"));

  const RouteOptions* upload = router.options_for("PUT", "/v1/runs/5/artifacts/model.pt?x=1");
  REQUIRE(upload != nullptr);
  CHECK(upload->body_to_file);
  CHECK(upload->body_limit == 99);

  const RouteOptions* literal = router.options_for("PUT", "/v1/runs/5/artifacts/latest");  // literal wins
  REQUIRE(literal != nullptr);
  CHECK_FALSE(literal->body_to_file);
  CHECK(literal->body_limit == 7);

  const RouteOptions* download = router.options_for("GET", "/v1/runs/5/artifacts/model.pt");
  REQUIRE(download != nullptr);  // added without options: the defaults
  CHECK_FALSE(download->body_to_file);
  CHECK(download->body_limit == 0);

  CHECK(router.options_for("POST", "/v1/runs/5/artifacts/model.pt") == nullptr);  // 405 in dispatch()
  CHECK(router.options_for("PUT", "/v1/runs/5/artifacts") == nullptr);           // 404
  CHECK(router.options_for("PUT", "/v1/runs/5/artifacts/%zz") == nullptr);       // malformed: 400
  CHECK(router.options_for("put", "/v1/runs/5/artifacts/x") == nullptr);         // methods are case-sensitive
  CHECK(router.options_for("PUT", "http://host/v1/runs/5/artifacts/a%2Fb") != nullptr);  // one segment

  // dispatch() still routes routes added with options.
  Request req = make_request("PUT", "/v1/runs/5/artifacts/model.pt");
  CHECK(body_of(run_dispatch(router, req))["handler"] == "upload");
}
