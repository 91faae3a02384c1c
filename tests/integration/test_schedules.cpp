// Schedules on a real running daemon: a short cron fires within its minute and its experiment runs to done.
#include <doctest/doctest.h>

#include <cmath>
#include <ctime>

#include "integration/daemon_process.h"

using namespace tsum;
using namespace tsum::testing;

TEST_CASE("a schedule with a short cron fires on a running daemon within its minute") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();

  nlohmann::json body = {{"name", "every-minute"},
                         {"cron", "* * * * *"},
                         {"timezone", "Europe/Moscow"},
                         {"experiment", nlohmann::json::parse(tiny_experiment(200, 100))}};
  auto created = d.call("POST", "/v1/schedules", admin, body.dump());
  REQUIRE(created.status == 201);
  auto s = created.json();
  int64_t id = s["id"].get<int64_t>();
  double due = s["next_fire_at"].get<double>();
  double now = static_cast<double>(std::time(nullptr));
  CHECK(due > now - 1);
  CHECK(due <= now + 60);
  CHECK(std::fmod(due, 60.0) == 0);
  CHECK(s["next_fire_local"].get<std::string>().ends_with(":00+03:00"));

  auto next = d.call("GET", "/v1/schedules/" + std::to_string(id) + "/next?count=3", admin).json()["next"];
  REQUIRE(next.size() == 3);
  CHECK(next[1]["at"].get<double>() - next[0]["at"].get<double>() == 60);

  // It fires within its minute and the experiment it queued runs to done.
  nlohmann::json fired;
  bool ok = eventually([&] {
    fired = d.call("GET", "/v1/schedules/" + std::to_string(id), admin).json();
    return !fired["firings"].empty();
  }, std::chrono::seconds(75));
  INFO(fired.dump(2));
  INFO(d.log());
  REQUIRE(ok);
  const auto& f = fired["firings"][0];
  CHECK(f["outcome"] == "fired");
  CHECK(f["due_at"] == due);
  CHECK(f["fired_at"].get<double>() - due < 60);
  int64_t exp_id = f["experiment_id"].get<int64_t>();
  nlohmann::json exp;
  REQUIRE(eventually([&] {
    exp = d.call("GET", "/v1/experiments/" + std::to_string(exp_id), admin).json();
    return exp["status"] == "done" || exp["status"] == "failed";
  }, std::chrono::seconds(120)));
  CHECK(exp["status"] == "done");
  // Its firings, a page of them.
  const auto firings = d.call("GET", "/v1/schedules/" + std::to_string(id) + "/firings?limit=10", admin).json();
  CHECK(firings["total"] == 1);
  REQUIRE(firings["firings"].size() == 1);
  CHECK(firings["firings"][0]["experiment_id"] == exp_id);
  CHECK(firings["next_cursor"].is_null());
  CHECK(d.call("GET", "/v1/schedules/" + std::to_string(id) + "/firings?cursor=bad", admin).status == 422);

  // Deleted: it stops, and its experiments stay.
  CHECK(d.call("DELETE", "/v1/schedules/" + std::to_string(id), admin).status == 200);
  CHECK(d.call("GET", "/v1/schedules/" + std::to_string(id), admin).status == 404);
  CHECK(d.call("GET", "/v1/experiments/" + std::to_string(exp_id), admin).status == 200);
}

TEST_CASE("schedule routes refuse bad input with clear errors") {
  TempDir dir;
  DaemonProcess d(dir.file("t.db"));
  std::string admin = d.admin_token();
  d.start();
  auto post = [&](const std::string& b) { return d.call("POST", "/v1/schedules", admin, b); };
  CHECK(post("{").status == 400);
  CHECK(d.call("POST", "/v1/schedules", "", "{}").status == 401);
  auto bad_cron = post(R"({"cron":"* * *","experiment":{}})");
  CHECK(bad_cron.status == 422);
  CHECK(bad_cron.json()["detail"].get<std::string>().find("5 fields") != std::string::npos);
  auto bad_zone = post(R"({"cron":"* * * * *","timezone":"Nowhere/City","experiment":{}})");
  CHECK(bad_zone.status == 422);
  CHECK(d.call("GET", "/v1/schedules/42", admin).status == 404);
  CHECK(d.call("GET", "/v1/schedules/abc/next", admin).status == 404);
  std::string ok = R"({"cron":"0 2 * * *","experiment":)" + tiny_experiment() + "}";
  auto created = post(ok);
  REQUIRE(created.status == 201);
  std::string next = "/v1/schedules/" + std::to_string(created.json()["id"].get<int64_t>()) + "/next";
  CHECK(d.call("GET", next + "?count=0", admin).status == 422);
  CHECK(d.call("GET", next + "?count=x", admin).status == 422);
  CHECK(d.call("GET", "/v1/schedules", admin).json()["schedules"].size() == 1);
}
