// The shared fake server with a sixth cloud of a few lines: its routes and refusals are all it writes;
// booking, faults (429 with Retry-After, 5xx, timeouts, lost answers) and options come from FakeServer.
#include <doctest/doctest.h>

#include "tests/fakes/cloud/fake_server.h"
#include "providers/http/http_client.h"
#include "support/run_sync.h"

using namespace tsum;
using namespace tsum::providers;
using namespace tsum::providers::fake_cloud;
using namespace std::chrono_literals;
using tsum::testing::run_sync;

namespace {

class TinyCloud final : public FakeCloudApi {
 public:
  explicit TinyCloud(FakeServerOptions o) : server_(std::move(o), *this) { REQUIRE(server_.start().ok()); }

  FakeServer& server() { return server_; }
  int made() const { return made_; }

 private:
  Route route(const http::LoopbackRequest& req) override {
    if (req.target == "/open") return Route::reply({.status = 204});
    if (CallBook::bearer(req) != "good") return Route::refuse({.status = 401, .body = "who are you?"});
    if (req.target == "/things" && req.method == "POST")
      return Route::to("things.create", [this] {
        ++made_;
        return http::LoopbackReply{.status = 201, .body = "thing " + std::to_string(made_)};
      });
    return Route::reply({.status = 404});
  }
  http::LoopbackReply fault_answer(int status, const std::string& method) const override {
    return {.status = status, .body = "fault on " + method};
  }
  std::vector<fake_guest::LiveInstance> live_guests() const override { return {}; }

  int made_ = 0;                    // written on the server's thread only
  FakeServer server_;               // last
};

struct Client {
  http::HttpClient http{{.retry = {.max_attempts = 1}}};
  Result<http::HttpResponse> send(TinyCloud& c, const std::string& method, const std::string& path, const std::string& token = "good") {
    http::HttpRequest req{.method = method, .url = c.server().base_url() + path, .timeout = 2000ms};
    if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
    return run_sync(http.send(req));
  }
};

}  // namespace

TEST_CASE("the server books routed calls and refusals; unrouted answers are neither") {
  TinyCloud c({});
  Client client;
  CHECK(client.send(c, "GET", "/open", "")->status == 204);
  CHECK(client.send(c, "GET", "/nowhere")->status == 404);
  auto refused = client.send(c, "POST", "/things", "bad");
  REQUIRE(refused.ok());
  CHECK(refused->status == 401);
  CHECK(c.server().rejected() == 1);
  auto made = client.send(c, "POST", "/things");
  REQUIRE(made.ok());
  CHECK(made->status == 201);
  CHECK(made->body == "thing 1");
  CHECK(c.server().requests("things.create") == 1);
  CHECK(c.server().requests("/open") == 0);
}

TEST_CASE("faults: the cloud's error bodies, Retry-After on a 429, a lost answer carried out, a timeout not") {
  TinyCloud c({.hang = 300ms, .retry_after_s = 7, .faults = {{.method = "things.create", .kind = FaultKind::internal_500}}});
  Client client;
  auto first = client.send(c, "POST", "/things");  // the fault given in the options
  REQUIRE(first.ok());
  CHECK(first->status == 500);
  CHECK(first->body == "fault on things.create");
  c.server().inject({.method = "*", .kind = FaultKind::throttle_429});
  auto throttled = client.send(c, "POST", "/things");
  REQUIRE(throttled.ok());
  CHECK(throttled->status == 429);
  CHECK(throttled->header("Retry-After") == "7");
  c.server().inject({.method = "things.create", .kind = FaultKind::unavailable_503});
  CHECK(client.send(c, "POST", "/things")->status == 503);
  CHECK(c.made() == 0);

  c.server().inject({.method = "things.create", .kind = FaultKind::lost});
  CHECK_FALSE(client.send(c, "POST", "/things").ok());  // no answer...
  CHECK(c.made() == 1);                                 // ...but the thing was made
  c.server().inject({.method = "things.create", .kind = FaultKind::timeout});
  auto started = std::chrono::steady_clock::now();
  CHECK_FALSE(client.send(c, "POST", "/things").ok());
  CHECK(std::chrono::steady_clock::now() - started >= 250ms);  // held, then closed
  CHECK(c.made() == 1);
  CHECK(c.server().pending_faults() == 0);
  CHECK(c.server().requests("things.create") == 5);
  CHECK(client.send(c, "POST", "/things")->body == "thing 2");
}
