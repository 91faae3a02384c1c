#include "api/quickstart.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <cstdio>
#include <future>
#include <iostream>
#include <thread>

#include "api/app.h"
#include "api/http/http_client.h"
#include "daemon/runs/run_status.h"
#include "daemon/planning/spot_risk.h"

namespace tsum::api {

using nlohmann::json;

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string cell(const json& v, const char* f) { return v.is_number() ? fmt(f, v.get<double>()) : "-"; }

}  // namespace

std::string format_table(const json& exp) {
  std::string out;
  auto put = [&out](const char* f, const std::string& s) {
    char buf[256];
    std::snprintf(buf, sizeof buf, f, s.c_str());
    out += buf;
  };
  const json rules = exp["spec"].value("billing", json::array());
  put("\n%-10s", "config");
  for (auto p : daemon::kPhaseNames) put(" %9s", std::string(p));
  put(" %9s", "t_sum");
  put(" %8s", "accuracy");
  for (const auto& r : rules) put(" %20s", r.get<std::string>());
  out += "\n";
  for (const auto& run : exp["runs"]) {
    put("%-10s", run["config"]["instance_type"].get<std::string>());
    // By name, never by position: the JSON object's keys are sorted alphabetically.
    for (auto p : daemon::kPhaseNames) put(" %9s", cell(run["phases"][std::string(p)], "%.3f"));
    put(" %9s", cell(run["t_sum"], "%.3f"));
    put(" %8s", cell(run["metrics"].value("test_accuracy", json()), "%.4f"));
    for (const auto& r : rules) {
      const json c = run["cost"].value(r.get<std::string>(), json());
      put(" %20s", c.is_null() ? "-"
                               : fmt("$%.6f", c["amount"].get<double>()) + " (" +
                                     fmt("%.0f", c["billed_s"].get<double>()) + "s)");
    }
    std::string reason = run.value("reason", "");
    put("   %s\n", run["status"].get<std::string>() + (reason.empty() ? "" : ": " + reason));
  }
  // Whether the configs were compared under the same conditions: each run's install and load_data, warm (the
  // machine's cache, filled before each run by its unmeasured warm-up) or cold (downloaded and unpacked).
  int warm = 0, cold = 0;
  for (const auto& run : exp["runs"]) {
    if (run["status"] == "done") ++(daemon::ran_cold(run) ? cold : warm);
  }
  if (warm + cold > 0)
    out += cold == 0   ? "\ninstall and load_data: warm in every run (the machine's cache, filled before each run by an "
                         "unmeasured warm-up)\n"
           : warm == 0 ? "\ninstall and load_data: cold in every run (downloaded and unpacked)\n"
                       : "\ninstall and load_data: " + std::to_string(warm) + " runs warm, " + std::to_string(cold) +
                             " cold: not comparable\n";
  const auto& s = exp["summary"];
  out += "\n";
  for (const auto& [rule, best] : s["cheapest"].items()) {
    put("cheapest under %-20s", rule);
    put(" %s", best["config"]["instance_type"].get<std::string>());
    put(" at %s\n", fmt("$%.6f", best["amount"].get<double>()));
  }
  if (!s["fastest"].is_null()) {
    put("fastest:                            %s", s["fastest"]["config"]["instance_type"].get<std::string>());
    put(" with t_sum %s s\n", fmt("%.3f", s["fastest"]["mean_t_sum"].get<double>()));
  }
  return out;
}

int run_quickstart(const QuickstartOptions& q) {
  boost::asio::io_context io;
  AppOptions o;
  o.db_path = q.db_path;
  o.data_dir = q.data_dir;
  o.bundle_path = q.bundle_path;
  auto app = App::create(io, o);
  if (!app) {
    std::cerr << "tsumd quickstart: " << app.error().detail << "\n";
    return 1;
  }
  auto token = (*app)->tokens().create_admin();  // before the io thread owns the database
  if (!token) {
    std::cerr << "tsumd quickstart: " << token.error().detail << "\n";
    return 1;
  }
  std::promise<Result<uint16_t>> started;
  boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> { started.set_value(co_await (*app)->start()); },
                        boost::asio::detached);
  std::thread loop([&] { io.run(); });
  auto stop = [&] {
    boost::asio::co_spawn(io, [&]() -> boost::asio::awaitable<void> {
      co_await (*app)->shutdown();
      io.stop();
    }, boost::asio::detached);
    loop.join();
  };
  auto port = started.get_future().get();
  if (!port) {
    std::cerr << "tsumd quickstart: " << port.error().detail << "\n";
    stop();
    return 1;
  }
  std::printf("tsumd quickstart: embedded daemon on http://127.0.0.1:%u, database %s\n", *port, q.db_path.c_str());

  json body = {{"name", "quickstart"},
               {"workload", {{"model", "mnist_cnn"}, {"dataset", "fashion-mnist"}, {"epochs", q.epochs},
                             {"limit", q.limit}, {"test_limit", q.test_limit}}},
               {"configs", {{{"provider", "local"}, {"instance_type", "local-1c"}},
                            {{"provider", "local"}, {"instance_type", "local-2c"}}}},
               {"repetitions", 1},
               {"billing", {"per_second_60s_min", "per_minute", "per_10_minutes", "per_hour"}}};
  Headers auth = {{"Authorization", "Bearer " + *token}, {"Content-Type", "application/json"}};
  auto created = http_call("127.0.0.1", *port, "POST", "/v1/experiments", body.dump(), auth);
  if (created.status != 201) {
    std::cerr << "tsumd quickstart: POST /v1/experiments: " << created.status << " " << created.body << created.error << "\n";
    stop();
    return 1;
  }
  int64_t id = created.json()["id"].get<int64_t>();
  std::printf("experiment %lld: Fashion-MNIST, MNIST CNN, %d epoch(s) on %d images, tested on %d, on local-1c and local-2c\n",
              static_cast<long long>(id), q.epochs, q.limit, q.test_limit);

  json exp;
  std::map<int64_t, std::string> seen;
  for (;;) {
    auto r = http_call("127.0.0.1", *port, "GET", "/v1/experiments/" + std::to_string(id), "", auth);
    if (r.status != 200) {
      std::cerr << "tsumd quickstart: GET experiment: " << r.status << " " << r.body << r.error << "\n";
      stop();
      return 1;
    }
    exp = r.json();
    for (const auto& run : exp["runs"]) {
      auto rid = run["id"].get<int64_t>();
      auto st = run["status"].get<std::string>();
      if (seen[rid] != st) {
        seen[rid] = st;
        std::printf("  run %lld (%s): %s\n", static_cast<long long>(rid),
                    run["config"]["instance_type"].get<std::string>().c_str(), st.c_str());
        std::fflush(stdout);
      }
    }
    auto status = exp["status"].get<std::string>();
    if (status == "done" || status == "failed" || status == "cancelled") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::fputs(format_table(exp).c_str(), stdout);
  std::printf("\nThe results stay in %s. To browse them over the API:\n", q.db_path.c_str());
  std::printf("  TOKEN=$(tsumd token create --db %s)\n", q.db_path.c_str());
  std::printf("  tsumd serve --db %s --listen 127.0.0.1:8080 &\n", q.db_path.c_str());
  std::printf("  curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:8080/v1/experiments/%lld\n",
              static_cast<long long>(id));
  std::printf("or open the dashboard at http://127.0.0.1:8080/#/experiments/%lld and sign in with $TOKEN\n",
              static_cast<long long>(id));
  stop();
  return exp["status"] == "done" ? 0 : 1;
}

}  // namespace tsum::api
