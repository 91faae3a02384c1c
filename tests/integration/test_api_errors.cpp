// Auth and bad input against the real daemon over loopback. Nothing here may crash it.
#include <algorithm>
#include <doctest/doctest.h>

#include "api/http/server_options.h"
#include "common/clock.h"
#include "daemon/store/db.h"
#include "daemon/store/token_store.h"
#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;

TEST_CASE("auth: no token, a wrong token, and a run token used on another run") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  REQUIRE(admin.starts_with("tsum_"));
  d.start();

  CHECK(d.call("GET", "/healthz", "").status == 200);
  auto none = d.call("GET", "/v1/offers", "");
  CHECK(none.status == 401);
  CHECK(none.json()["error"] == "unauthenticated");
  CHECK(d.call("GET", "/v1/offers", "tsum_wrong").status == 401);
  auto offers = d.call("GET", "/v1/offers", admin);
  REQUIRE(offers.status == 200);
  const nlohmann::json listed = offers.json()["offers"];
  auto local1 = std::find_if(listed.begin(), listed.end(), [](const nlohmann::json& o) {
    return o["provider"] == "local" && o["instance_type"] == "local-1c";
  });
  REQUIRE(local1 != listed.end());
  CHECK((*local1)["hourly_price"].get<double>() > 0);
  CHECK((*local1)["memory_gib"].is_null());  // the local provider does not say: not 0 GiB

  // Two queued-then-running runs; a token for run 1 (made as the daemon makes it) is refused on run 2.
  auto created = d.call("POST", "/v1/experiments", admin, tiny_experiment(200, 100, {"local-1c", "local-1c"}));
  REQUIRE(created.status == 201);
  std::string run1_token, metrics_token;
  {
    auto db = daemon::Db::open(dir.file("t.db"));
    REQUIRE(db.ok());
    SystemClock clock;
    daemon::TokenStore tokens(**db, clock);
    auto run1 = tokens.create_for_run(1);
    auto metrics = tokens.create_metrics();
    REQUIRE_MESSAGE(run1.ok(), run1.error().detail);
    REQUIRE_MESSAGE(metrics.ok(), metrics.error().detail);
    run1_token = *run1;
    metrics_token = *metrics;
  }
  // A metrics token reads /metrics and nothing else; a run token cannot read it.
  CHECK(d.call("GET", "/metrics", metrics_token).status == 200);
  auto scoped = d.call("GET", "/v1/experiments", metrics_token);
  CHECK(scoped.status == 403);  // a good token, of a scope that does not reach the route
  CHECK(scoped.json()["error"] == "forbidden");
  CHECK(scoped.json()["detail"] == "a metrics token may only read GET /metrics");
  CHECK(d.call("GET", "/metrics", run1_token).status == 403);
  CHECK(d.call("GET", "/metrics", "tsum_wrong").status == 401);
  const std::string ev = R"({"phase":"install","mark":"begin","mono_s":1.5})";
  auto other = d.call("POST", "/v1/runs/2/events", run1_token, ev);
  CHECK(other.status == 403);
  CHECK(other.json()["detail"] == "this run token belongs to another run");
  CHECK(d.call("GET", "/v1/runs/1", run1_token).status == 403);           // not an admin route for it
  CHECK(d.call("GET", "/v1/experiments/1", run1_token).status == 403);
  CHECK(d.call("POST", "/v1/runs/1/events", "", ev).status == 401);
  auto own = d.call("POST", "/v1/runs/1/events", run1_token, R"({"phase":"nope","mark":"begin","mono_s":1})");
  CHECK(own.status == 422);  // authenticated, then validated
  CHECK(d.call("GET", "/v1/runs/1", admin).status == 200);

  // Let both runs finish so the test leaves nothing behind.
  CHECK(eventually([&] { return d.call("GET", "/v1/experiments/1", admin).json()["status"] != "running"; },
                   std::chrono::seconds(120)));
}

TEST_CASE("malformed, unknown, oversized and invalid input gets a clear error and the daemon keeps serving") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();
  auto post = [&](const std::string& body) { return d.call("POST", "/v1/experiments", admin, body); };

  auto r = post("{\"name\": ");
  CHECK(r.status == 400);
  CHECK(r.json()["error"] == "invalid_argument");
  CHECK(r.json()["detail"] == "malformed JSON body");
  CHECK(post("not json at all").status == 400);
  CHECK(post(std::string(200000, '[')).status == 400);  // deep nesting is refused, not recursed into
  auto unknown = post(R"({"workload":{},"configs":[{"provider":"local","instance_type":"local-1c"}],"colour":1})");
  CHECK(unknown.status == 422);
  CHECK(unknown.json()["detail"] == "unknown field 'colour'");
  auto big = post(R"({"workload":{},"configs":[{"provider":"local","instance_type":"local-64c"}]})");
  CHECK(big.status == 422);
  CHECK(big.json()["detail"].get<std::string>().find("local-64c") != std::string::npos);
  auto aws = post(R"({"workload":{},"configs":[{"provider":"aws","instance_type":"c6i.large"}]})");
  CHECK(aws.status == 422);  // what is configured is named
  CHECK(aws.json()["detail"].get<std::string>().find("provider 'aws' is not configured (configured: ") == 0);
  CHECK(aws.json()["detail"].get<std::string>().find("local") != std::string::npos);
  CHECK(d.call("GET", "/v1/plan?experiment=1&repetitions=1e300", admin).status == 404);  // no experiment 1 yet
  CHECK(d.call("GET", "/v1/runs?status=running", admin).json()["detail"] ==
        "unknown status 'running' (queued, provisioning, booting, installing, loading, starting, learning, verifying, "
        "saving, terminating, done, failed, cancelled)");
  // A page's parameters are checked at the door, each named in its refusal.
  for (auto [query, says] : {std::pair{"limit=0", "'limit' must be an integer from 1 to 1000"},
                             {"limit=1e9", "'limit' must be an integer from 1 to 1000"},
                             {"order=sideways", "'order' must be asc or desc"},
                             {"cursor=bm90IGEgY3Vyc29y", "'cursor' is not a cursor of this list"},
                             {"experiment=-1", "'experiment' must be a positive integer id"},
                             {"created_after=NaN", "'created_after' must be unix seconds"},
                             {"colour=red", "unknown query parameter 'colour'"}}) {
    CAPTURE(query);
    auto r = d.call("GET", std::string("/v1/runs?") + query, admin);
    CHECK(r.status == 422);
    CHECK(r.json()["detail"].get<std::string>().find(says) != std::string::npos);
  }
  // A runs cursor is no experiments cursor.
  CHECK(d.call("GET", "/v1/experiments?cursor=cnVuczphc2M6MQ", admin).status == 422);
  CHECK(d.call("GET", "/v1/experiments?status=done", admin).status == 422);
  // Spot where the provider sells no spare capacity: refused before anything is queued, saying so.
  auto spot = post(R"({"workload":{},"configs":[{"provider":"local","instance_type":"local-1c","market":"spot"}]})");
  CHECK(spot.status == 422);
  CHECK(spot.json()["detail"] == "configs: market spot on 'local': it sells no spare capacity (spot runs on aws, gce, "
                                 "azure and yandex); use on-demand");
  CHECK(post(R"({"workload":{},"configs":[{"provider":"local","instance_type":"local-1c","market":"auction"}]})")
            .json()["detail"] == "'configs[0].market' must be \"on-demand\" or \"spot\", got 'auction'");
  CHECK(post(std::string(3 << 20, ' ')).status == 413);
  // Local machines that need more cores than this one has would wait in the queue for good: refused, saying so.
  auto crowd = post(R"({"workload":{},"configs":[{"provider":"local","instance_type":"local-1c","nodes":64,"dist":"ring"}]})");
  CHECK(crowd.status == 422);
  CHECK(crowd.json()["detail"].get<std::string>().find("configs: 64 machines of local-1c need 64 cores, and this "
                                                       "machine has ") == 0);

  CHECK(d.call("GET", "/v1/experiments/999", admin).status == 404);
  CHECK(d.call("GET", "/v1/experiments/abc", admin).status == 404);
  CHECK(d.call("GET", "/v1/runs/-1", admin).status == 404);
  CHECK(d.call("DELETE", "/v1/runs/12345", admin).status == 404);
  CHECK(d.call("GET", "/v1/nothing", admin).status == 404);
  CHECK(d.call("PUT", "/v1/experiments", admin, "{}").status == 405);

  // Agent events are validated before anything is stored.
  auto event = [&](const std::string& body) { return d.call("POST", "/v1/runs/7/events", admin, body); };
  auto no_phase = event(R"({"mark":"begin","mono_s":1})");
  CHECK(no_phase.status == 422);
  CHECK(no_phase.json()["detail"] == "'phase' must be a string");
  CHECK(event(R"({"phase":"learn","mark":"end","mono_s":1,"extra":true})").json()["detail"] == "unknown field 'extra'");
  CHECK(event(R"({"phase":"learn","mark":"end","mono_s":-5})").status == 422);
  CHECK(event(R"({"phase":"learn","mark":"end","mono_s":1e300})").json()["detail"] ==
        "'mono_s' must be a number from 0 to 1e9 (seconds)");
  CHECK(event(R"({"phase":"startup","mark":"end","mono_s":1})").status == 422);
  auto stats = [&](const std::string& s) {
    return event(R"({"phase":"learn","mark":"end","mono_s":1,"stats":)" + s + "}");
  };
  CHECK(stats("[]").json()["detail"] == "'stats': must be an object");
  CHECK(stats(R"({"cpu_pct":{"min":1,"avg":2}})").status == 422);
  CHECK(stats(R"({"cpu_pct":{"min":1,"avg":"2","max":3}})").json()["detail"] ==
        "'stats': cpu_pct.avg must be a finite number");
  CHECK(stats(R"({"CPU%":{"min":1,"avg":2,"max":3}})").status == 422);
  CHECK(event(R"({"phase":"learn","mark":"begin","mono_s":1,"stats":{"cpu_pct":{"min":1,"avg":2,"max":3}}})")
            .json()["detail"] == "only an end mark carries 'stats'");
  CHECK(stats(R"({"cpu_pct":{"min":1,"avg":2,"max":3}})").status == 404);  // valid, but there is no run 7

  // Garbage on the socket, then a normal request still works.
  api::HttpConnection raw;
  REQUIRE(raw.connect("127.0.0.1", d.port()));
  raw.send_raw("\x16\x03\x01 this is not HTTP\r\n\r\n");
  CHECK(d.call("GET", "/healthz", "").status == 200);
  CHECK(d.call("GET", "/v1/experiments", admin).json()["experiments"].empty());  // nothing bad was stored
}

TEST_CASE("1,100 idle connections under an open-files limit of 1024: the daemon keeps answering") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.set_open_files(1024);
  d.start();
  CHECK(d.log().find("open files: up to 1024, connections: up to 768") != std::string::npos);

  // This process needs more than 1,100 files of its own.
  REQUIRE(api::raise_open_files_limit() > 1200);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(d.port());
  std::vector<int> idle;
  int connected = 0;
  for (int i = 0; i < 1100; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    idle.push_back(fd);
    connected += connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;  // the kernel's backlog takes it
  }
  REQUIRE(connected == 1100);
  const auto t0 = std::chrono::steady_clock::now();
  auto health = d.call("GET", "/healthz", "");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("GET /healthz beside 1,100 idle connections: " << waited << " s");
  CHECK(health.status == 200);
  CHECK(d.call("GET", "/v1/experiments", admin).status == 200);
  for (int fd : idle) close(fd);
  CHECK(d.call("GET", "/healthz", "").status == 200);
}

TEST_CASE("bodies are read: a malformed body is a 400 on every route that takes one, and a token's scope is "
          "explicit") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();
  for (const char* route : {"/v1/experiments", "/v1/presets/mnist", "/v1/tokens", "/v1/schedules", "/v1/searches",
                            "/v1/runs/1/events", "/v1/runs/1/rendezvous"}) {
    auto r = d.call("POST", route, admin, "{");
    INFO(route << ": " << r.body);
    CHECK(r.status == 400);
  }
  CHECK(d.call("PUT", "/v1/schedules/1", admin, "{").status == 400);
  // A preset takes no fields; nothing was started by the refusals above.
  CHECK(d.call("POST", "/v1/presets/mnist", admin, R"({"epochs": 3})").json()["detail"] == "unknown field 'epochs'");
  CHECK(d.call("POST", "/v1/presets/mnist", admin, "[]").status == 422);
  CHECK(d.call("GET", "/v1/experiments", admin).json()["experiments"].empty());

  auto empty = d.call("POST", "/v1/tokens", admin, "");
  CHECK(empty.status == 400);
  auto no_scope = d.call("POST", "/v1/tokens", admin, "{}");
  CHECK(no_scope.status == 422);
  CHECK(no_scope.json()["detail"] == "'scope' is required: \"admin\" or \"metrics\"");
  CHECK(d.call("POST", "/v1/tokens", admin, R"({"scope": "root"})").status == 422);
  auto metrics = d.call("POST", "/v1/tokens", admin, R"({"scope": "metrics"})");
  CHECK(metrics.status == 201);
  CHECK(metrics.json()["scope"] == "metrics");
  auto tokens = d.call("GET", "/v1/tokens", admin).json()["tokens"];
  CHECK(tokens.size() == 2);  // the admin token made on the command line, and the metrics one
}

// The routes no other case of this suite calls, so that openapi_exchanges sees every operation of the
// description answer as it says (the suite's calls are recorded: daemon_process.h).
TEST_CASE("the dashboard, the description, presets, tokens, joins, rendezvous and uploads answer as described") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();
  CHECK(d.call("GET", "/", "").status == 200);
  CHECK(d.call("GET", "/ui", "").status == 200);
  CHECK(d.call("GET", "/ui/index.html", "").status == 200);
  CHECK(d.call("GET", "/ui/no-such-file.js", "").status == 404);
  CHECK(d.call("GET", "/v1/openapi.json", "").status == 200);
  auto presets = d.call("GET", "/v1/presets", admin);
  CHECK(presets.status == 200);
  CHECK(!presets.json()["presets"].empty());
  auto made = d.call("POST", "/v1/tokens", admin, R"({"scope": "metrics"})");
  REQUIRE(made.status == 201);
  const std::string id = made.json()["id"];
  CHECK(d.call("DELETE", "/v1/tokens/" + id, admin).status == 200);
  CHECK(d.call("DELETE", "/v1/tokens/nope", admin).status == 404);
  CHECK(d.call("GET", "/v1/join/not-a-code", "").status == 404);
  CHECK(d.call("GET", "/v1/runs/99/rendezvous", admin).status == 404);
  CHECK(d.call("GET", "/v1/runs/99/uploads/model.pt", admin).json()["offset"] == 0);  // nothing held
  CHECK(d.call("GET", "/v1/runs/abc/uploads/model.pt", admin).status == 404);
}
