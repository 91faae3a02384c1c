// tsumd's client commands plan, schedule, token, offers and search (api/cli/cli_commands.h).
#include "api/cli/cli_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "api/cli/spec_file.h"
#include "billing/serving.h"
#include "common/json_util.h"

namespace tsum::api::cli_detail {

namespace {

// A serving plan: each configuration's cost per million requests at its best throughput under the bound.
int plan_serve(cli::Context& c, const json& plan) {
  c.out << "objective serve, p99 under " << cli::fixed(plan.value("p99_ms", json()), 1) << " ms\n";
  if (const json want = plan.value("settings", json::object()); !want.empty())
    c.out << "only the runs whose server had " << want.dump() << "\n";
  std::vector<std::vector<std::string>> rows;
  int rank = 0;
  for (const auto& e : plan.value("ranked", json::array()))
    rows.push_back({std::to_string(++rank), e.value("machine", e.value("config", "")),
                    billing::describe_settings(e.value("settings", json::object())), cli::fixed(e.value("sustained_rps", json()), 1),
                    cli::fixed(e.value("p99_ms", json()), 1),
                    cli::fixed(e.value("cost_per_million", json()), 4) + " " + e.value("currency", ""),
                    e.contains("replicas") ? e["replicas"].dump() : "-", e.value("reason", "")});
  cli::print_table(c.out, {"RANK", "MACHINE", "SETTINGS", "REQ/S", "P99_MS", "COST/1M", "REPLICAS", "REASON"}, rows);
  for (const auto& e : plan.value("infeasible", json::array()))
    c.out << "infeasible: " << e.value("config", "") << " (best p99 " << cli::fixed(e.value("best_p99_ms", json()), 1)
          << " ms)\n";
  return kExitOk;
}

// One line per probe: its config, status, t_sum and cost.
std::vector<std::vector<std::string>> probe_rows(const json& search) {
  std::vector<std::vector<std::string>> rows;
  const json& trace = search.value("trace", json::array());
  const json& probes = search.value("probes", json::array());
  for (size_t i = 0; i < probes.size(); ++i) {
    const json step = i < trace.size() ? trace[i] : json::object();
    rows.push_back({std::to_string(i + 1), probes[i].value("config", ""), probes[i].value("status", ""),
                    cli::fixed(probes[i].value("t_sum", json()), 1), cli::fixed(step.value("probe_cost", json()), 6),
                    probes[i].contains("run_id") ? probes[i]["run_id"].dump() : "-", step.value("why", "")});
  }
  return rows;
}

void print_search(cli::Context& c, const json& s) {
  c.out << "search " << s["id"] << ": " << s.value("status", "") << ", " << s.value("probes", json::array()).size()
        << " probes, spent " << cli::fixed(s.value("spent", json()), 6) << " of a budget of "
        << cli::fixed(s.value("budget", json()), 6) << "\n";
  cli::print_table(c.out, {"PROBE", "CONFIG", "STATUS", "T_SUM", "COST", "RUN", "WHY"}, probe_rows(s));
  if (const json rec = s.value("recommendation", json()); rec.is_object())
    c.out << "recommendation: " << rec.value("config", "") << " (" << (rec.value("measured", false) ? "measured" : "predicted")
          << "), cost " << cli::fixed(rec.value("cost", json()), 6) << " per run\n";
  if (!s.value("stop_reason", "").empty()) c.out << "stopped: " << s["stop_reason"].get<std::string>() << "\n";
  if (s.value("status", "") == "failed") c.out << "failed: " << s.value("reason", "") << "\n";
}

}  // namespace

int plan(cli::Context& c, const Args& a) {
  if (!a.flags.count("experiment")) return usage(c.err, "plan needs --experiment ID (or --from-csv FILE offline)");
  std::string target = "/v1/plan?experiment=" + encode(a.flags.at("experiment"));
  // Each flag is the query parameter of its name, with - for _ (--p99-ms is p99_ms).
  for (const char* key : {"objective", "deadline", "budget", "repetitions", "billing", "nodes", "p99-ms", "rate",
                          "hours", "interruptions-per-hour", "max-batch", "max-delay-ms", "threads", "instances"})
    if (auto it = a.flags.find(key); it != a.flags.end()) {
      std::string name = key;
      std::replace(name.begin(), name.end(), '-', '_');
      target += "&" + name + "=" + encode(it->second);
    }
  int code = 0;
  auto r = c.call("GET", target, &code);
  if (!r) return code;
  if (c.json) return print_json(c, r->json), kExitOk;
  if (r->json.value("objective", "") == "serve") return plan_serve(c, r->json);
  c.out << "objective " << r->json["objective"].get<std::string>() << ", from " << r->json["history_runs"]
        << " done runs\n";
  if (r->json.contains("machine_cache")) c.out << "install and load_data: " << r->json["machine_cache"]["note"].get<std::string>() << "\n";
  // What tells two rows of one config apart: its market (when spot is ranked) and, for several repetitions, how
  // they are packed (each on a fresh machine, or one after another on one).
  bool spot = false, repeated = false;
  for (const auto& e : r->json["ranked"]) {
    spot = spot || e.value("market", "") == "spot";
    repeated = repeated || e.value("repetitions", 1) > 1;
  }
  std::vector<std::string> header = {"RANK", "CONFIG"};
  if (spot) header.push_back("MARKET");
  if (repeated) header.push_back("MACHINES");
  for (const char* h : {"BILLING", "T_SUM", "P10..P90", "BILLED_S", "COST", "FEASIBLE", "REASON"}) header.push_back(h);
  std::vector<std::vector<std::string>> rows;
  int rank = 0;
  for (const auto& e : r->json["ranked"]) {
    std::vector<std::string> row = {std::to_string(++rank), e["config"]};
    if (spot) row.push_back(e.value("market", ""));
    if (repeated) {
      const int64_t n = e.value("instances", int64_t{1});
      row.push_back(std::to_string(n) + (e.value("packing", "") == "packed" ? " (packed)" : " (fresh)"));
    }
    for (std::string cell : {e["billing"].get<std::string>(), cli::fixed(e["t_sum"], 1),
                             cli::fixed(e["t_sum_p10"], 1) + ".." + cli::fixed(e["t_sum_p90"], 1),
                             cli::fixed(e["billed_s"], 0), cli::fixed(e["cost"], 6) + " " + e["currency"].get<std::string>(),
                             std::string(e["feasible"] ? "yes" : "no"), e["reason"].get<std::string>()})
      row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  cli::print_table(c.out, header, rows);
  return kExitOk;
}

int schedule(cli::Context& c, const Args& a) {
  const std::string& verb = a.words.size() > 1 ? a.words[1] : "";
  int code = 0;
  if (verb == "create") {
    auto spec = read_spec(a, c.err, &code);
    if (!spec) return code;
    auto r = c.call("POST", "/v1/schedules", &code, spec->dump());
    if (!r) return code;
    if (c.json) return print_json(c, r->json), kExitOk;
    c.out << "schedule " << r->json["id"] << " created; next firing "
          << (r->json["next_fire_local"].is_string() ? r->json["next_fire_local"].get<std::string>() : "never") << "\n";
    return kExitOk;
  }
  if (verb == "list") {
    auto r = c.call("GET", "/v1/schedules", &code);
    if (!r) return code;
    if (c.json) return print_json(c, r->json), kExitOk;
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : r->json["schedules"])
      rows.push_back({std::to_string(s["id"].get<int64_t>()), s["name"], s["cron"], s["timezone"],
                      s["next_fire_local"].is_string() ? s["next_fire_local"].get<std::string>() : "never",
                      cli::fixed(s["budget"], 2), s["enabled"] ? "yes" : "no"});
    cli::print_table(c.out, {"ID", "NAME", "CRON", "TIMEZONE", "NEXT", "BUDGET", "ENABLED"}, rows);
    return kExitOk;
  }
  if (verb == "delete") {
    if (a.words.size() != 3 || !positive_id(a.words[2])) return usage(c.err, "schedule delete needs a schedule ID");
    auto r = c.call("DELETE", "/v1/schedules/" + a.words[2], &code);
    if (!r) return code;
    if (c.json) return print_json(c, r->json), kExitOk;
    c.out << "schedule " << a.words[2] << " deleted\n";
    return kExitOk;
  }
  return usage(c.err, "schedule needs create, list or delete");
}

int token(cli::Context& c, const Args& a) {
  const std::string& verb = a.words.size() > 1 ? a.words[1] : "";
  int code = 0;
  if (verb == "create") {
    auto it = a.flags.find("scope");
    const json body = {{"scope", it == a.flags.end() ? "admin" : it->second}};
    auto r = c.call("POST", "/v1/tokens", &code, body.dump());
    if (!r) return code;
    if (c.json) return print_json(c, r->json), kExitOk;
    c.out << r->json["token"].get<std::string>() << "\n";
    c.err << "token id " << r->json["id"].get<std::string>() << " (" << r->json["scope"].get<std::string>()
          << "); it is shown this once\n";
    return kExitOk;
  }
  if (verb == "revoke") {
    if (a.words.size() != 3) return usage(c.err, "token revoke needs a token ID");
    auto r = c.call("DELETE", "/v1/tokens/" + encode(a.words[2]), &code);
    if (!r) return code;
    if (c.json) return print_json(c, r->json), kExitOk;
    c.out << "token " << a.words[2] << " revoked\n";
    return kExitOk;
  }
  return usage(c.err, "token needs create or revoke");
}

// tsumd offers [--provider NAME]: what the daemon's providers offer now (GET /v1/offers), spot beside on-demand.
int offers(cli::Context& c, const Args& a) {
  int code = 0;
  auto r = c.call("GET", "/v1/offers", &code);
  if (!r) return code;
  const auto only = a.flags.find("provider");
  json listed = json::array();
  for (const auto& o : r->json["offers"])
    if (only == a.flags.end() || o.value("provider", "") == only->second) listed.push_back(o);
  if (only != a.flags.end() && listed.empty()) {
    std::set<std::string> names;
    for (const auto& o : r->json["offers"]) names.insert(o.value("provider", ""));
    std::string listed_names;
    for (const auto& n : names) listed_names += (listed_names.empty() ? "" : ", ") + n;
    c.err << "tsumd: no offers from provider '" << only->second << "'; the daemon's providers: " << listed_names << "\n";
    return kExitNotFound;
  }
  if (c.json) return print_json(c, {{"offers", listed}, {"errors", r->json["errors"]}}), kExitOk;
  std::vector<std::vector<std::string>> rows;
  for (const auto& o : listed)
    rows.push_back({o.value("provider", ""), o.value("instance_type", ""), o["vcpus"].dump(),
                    cli::fixed(o.value("memory_gib", json()), 1), o["gpus"].dump() + (o.value("gpu_type", "").empty() ? "" : " " + o["gpu_type"].get<std::string>()),
                    cli::fixed(o.value("hourly_price", json()), 4) + " " + o.value("currency", ""),
                    o.contains("spot_hourly_price") ? cli::fixed(o["spot_hourly_price"], 4) : "-",
                    o.value("image", "").empty() ? "-" : o.value("image", "")});
  cli::print_table(c.out, {"PROVIDER", "INSTANCE", "VCPUS", "MEM_GIB", "GPUS", "PRICE/H", "SPOT/H", "IMAGE"}, rows);
  for (const auto& e : r->json["errors"])
    c.err << "tsumd: provider " << e.value("provider", "") << ": " << e.value("detail", "") << "\n";
  return kExitOk;
}

int search(cli::Context& c, const Args& a) {
  const std::string& verb = a.words.size() > 1 ? a.words[1] : "";
  int code = 0;
  if (verb == "list") {
    auto r = list_pages(c, a, "/v1/searches", "searches", {}, &code);
    if (!r) return code;
    if (c.json) return print_json(c, {{"searches", r->rows}, {"total", r->total}}), kExitOk;
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : r->rows)
      rows.push_back({s["id"].dump(), s.value("status", ""), s["probes"].dump(), cli::fixed(s.value("spent", json()), 6),
                      s.value("recommendation", json()).is_string() ? s["recommendation"].get<std::string>() : "-",
                      local_time(s.value("created_at", json())), s.value("reason", "")});
    cli::print_table(c.out, {"ID", "STATUS", "PROBES", "SPENT", "RECOMMENDATION", "CREATED", "REASON"}, rows);
    more_hint(c, *r, "searches");
    return kExitOk;
  }
  if (verb == "show") {
    if (a.words.size() != 3 || !positive_id(a.words[2])) return usage(c.err, "search show needs a search ID");
    auto r = c.call("GET", "/v1/searches/" + a.words[2], &code);
    if (!r) return code;
    if (c.json) return print_json(c, r->json), kExitOk;
    print_search(c, r->json);
    return kExitOk;
  }
  if (verb != "create") return usage(c.err, "search needs create, list or show");
  auto spec = read_spec(a, c.err, &code);
  if (!spec) return code;
  if (int up = upload_workdir(c, a, *spec); up != kExitOk) return up;
  const auto timeout_s = wait_timeout(a);
  if (!timeout_s) return usage(c.err, "--timeout must be a positive number of seconds");
  auto r = c.call("POST", "/v1/searches", &code, spec->dump());
  if (!r) return code;
  const std::string id = r->json["id"].dump();
  if (!a.wait) {
    if (c.json) print_json(c, r->json);
    else c.out << "search " << id << " started\n";
    return kExitOk;
  }
  if (!c.json) c.out << "search " << id << " started; following its probes\n";
  // A line per probe as it is made and as it ends, then the search as it stopped.
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(*timeout_s);
  std::map<size_t, std::string> said;
  for (;;) {
    auto now = c.call("GET", "/v1/searches/" + id, &code);
    if (!now) return code;
    if (!c.json)
      for (const auto& row : probe_rows(now->json)) {
        const size_t n = std::stoul(row[0]);
        const std::string line = "probe " + row[0] + " " + row[1] + ": " + row[2] +
                                 (row[3] == "-" ? "" : ", t_sum " + row[3] + " s, cost " + row[4]);
        if (said[n] != line) c.out << (said[n] = line) << "\n";
      }
    if (now->json.value("status", "") != "running") {
      if (c.json) print_json(c, now->json);
      else print_search(c, now->json);
      return now->json["status"] == "done" ? kExitOk : kExitFailure;
    }
    if (std::chrono::steady_clock::now() > until) {
      c.err << "tsumd: search " << id << " still running after " << *timeout_s << " s\n";
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace tsum::api::cli_detail
