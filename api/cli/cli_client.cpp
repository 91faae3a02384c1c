#include "api/cli/cli_client.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "api/cli/cli_context.h"
#include "api/cli/spec_file.h"
#include "api/cli/workdir_pack.h"
#include "billing/serving.h"
#include "common/json_util.h"
#include "daemon/experiments/experiment_spec.h"

namespace tsum::api {

using nlohmann::json;

namespace {

constexpr const char* kClientUsage = R"(client commands (talk to a running tsumd; see docs/cli.md):
  tsumd experiment create -f SPEC.json | --preset NAME [--wait [--timeout S]] [--workdir-limit MB]
                                     a folder job's workdir is packed and uploaded first (docs/workload.md)
  tsumd preset list                  the seeds' experiments for the providers configured, runs and worst case
  tsumd experiment list [--limit N] [--all] [--order asc|desc]   a page of experiments (100 unless --limit)
  tsumd experiment show ID | cancel ID | export ID [--format csv|json]
  tsumd experiment logs ID [-f]      every run's output, run after run; -f follows them until the experiment ends
  tsumd runs list [--experiment ID] [--status S[,S]] [--provider P] [--config TYPE] [--limit N] [--all]
                                     a page of runs; --all follows every page
  tsumd runs join ID                 the command that joins a machine to a waiting byo run
  tsumd runs logs ID [-f]            what the run printed; -f follows it until the run ends
  tsumd plan --experiment ID [--objective cost|time|cost_under_deadline|budget] [--deadline S] [--budget B]
             [--repetitions N] [--billing RULE] [--nodes 1,2,4] [--interruptions-per-hour R]
  tsumd plan --experiment ID --objective serve --p99-ms L [--rate R] [--hours H]
             [--max-batch N] [--max-delay-ms MS] [--threads N] [--instances N]
  tsumd search create -f SPEC.json [--wait [--timeout S]] | list [--limit N] [--all] | show ID
                                     an adaptive search: its probes, spend and stop reason (docs/planner.md)
  tsumd schedule create -f SPEC.json | list | delete ID
  tsumd token create [--scope admin|metrics] | revoke ID
  tsumd offers [--provider NAME]     what the daemon's providers offer now, spot beside on-demand
  every client command: [--url http://HOST:PORT] [--token TOKEN] [--json]
  exit codes: 0 ok, 1 other failure, 2 usage or bad input, 3 not found, 4 auth, 5 daemon unreachable
)";

struct Args {
  std::vector<std::string> words;  // the command words and positional arguments
  std::map<std::string, std::string> flags;
  bool json = false;
  bool wait = false;
  bool all = false;     // a list: every page, following next_cursor
  bool follow = false;  // runs logs -f
};

int usage(std::ostream& err, const std::string& msg) {
  err << "tsumd: " << msg << "\n" << kClientUsage;
  return kExitUsage;
}

// Splits words from flags. Known flags only, each taking a value except --json and --wait.
Result<Args> parse_args(const std::vector<std::string>& in) {
  static const std::vector<std::string> kValued = {"file", "url", "token", "format", "experiment", "status",
                                                   "objective", "deadline", "budget", "repetitions", "billing",
                                                   "scope", "timeout", "preset", "p99-ms", "rate", "hours",
                                                   "nodes", "interruptions-per-hour", "provider", "workdir-limit",
                                                   "max-batch", "max-delay-ms", "threads", "instances", "limit",
                                                   "cursor", "config", "order"};
  Args a;
  for (size_t i = 0; i < in.size(); ++i) {
    std::string arg = in[i];
    if (arg == "--json" || arg == "--wait" || arg == "--all") {
      (arg == "--json" ? a.json : arg == "--wait" ? a.wait : a.all) = true;
      continue;
    }
    const bool logs = a.words.size() >= 2 && (a.words[0] == "runs" || a.words[0] == "experiment") && a.words[1] == "logs";
    if ((arg == "-f" && logs) || arg == "--follow") {
      a.follow = true;
      continue;
    }
    if (arg == "-f") arg = "--file";
    if (!arg.starts_with("--")) {
      a.words.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    if (std::find(kValued.begin(), kValued.end(), name) == kValued.end())
      return make_error(Code::invalid_argument, "unknown flag " + in[i]);
    if (i + 1 >= in.size()) return make_error(Code::invalid_argument, in[i] + " needs a value");
    a.flags[name] = in[++i];
  }
  return a;
}

bool positive_id(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && v > 0;
}

// Percent-encodes a query value.
std::string encode(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out += static_cast<char>(ch);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      out += buf;
    }
  }
  return out;
}

std::string local_time(const json& unix_s) {
  if (!unix_s.is_number()) return "-";
  std::time_t t = static_cast<std::time_t>(unix_s.get<double>());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// The JSON of a spec file (JSON, or YAML by its suffix): exit 2 naming the file, and where it does not parse the
// line and column.
std::optional<json> read_spec(const Args& a, std::ostream& err, int* code) {
  auto it = a.flags.find("file");
  if (it == a.flags.end()) {
    *code = usage(err, "this command needs -f SPEC.json (or SPEC.yaml)");
    return std::nullopt;
  }
  std::ifstream in(it->second);
  if (!in) {
    err << "tsumd: cannot read spec file " << it->second << "\n";
    *code = kExitUsage;
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto j = parse_spec(text.str(), it->second);
  if (!j) {
    err << "tsumd: spec file " << j.error().detail << "\n";
    *code = kExitUsage;
    return std::nullopt;
  }
  return *j;
}

// --wait's --timeout in seconds (default a day); nullopt when it is not a positive number.
std::optional<double> wait_timeout(const Args& a) {
  auto it = a.flags.find("timeout");
  if (it == a.flags.end()) return 24 * 3600.0;
  double s = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), s);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || !(s > 0)) return std::nullopt;
  return s;
}

void print_json(cli::Context& c, const json& j) { c.out << j.dump(2) << "\n"; }

// `experiment create --preset NAME`: POST /v1/presets/NAME, which creates the preset's experiments.
int preset_create(cli::Context& c, const Args& a, const std::string& name) {
  int code = 0;
  if (a.flags.count("file")) return usage(c.err, "experiment create takes -f or --preset, not both");
  auto r = c.call("POST", "/v1/presets/" + encode(name), &code, "{}");
  if (!r) return code;
  if (c.json) return print_json(c, r->json), kExitOk;
  for (const auto& id : r->json["ids"]) c.out << "experiment " << id.get<int64_t>() << " created (preset " << name << ")\n";
  for (const auto& n : r->json["notes"]) c.out << "note: " << n.get<std::string>() << "\n";
  if (a.wait)
    for (const auto& id : r->json["ids"])
      if (int rc = cli::follow_experiment(c, id.get<int64_t>(), 24 * 3600); rc != kExitOk) return rc;
  return kExitOk;
}

int preset_list(cli::Context& c) {
  int code = 0;
  auto r = c.call("GET", "/v1/presets", &code);
  if (!r) return code;
  if (c.json) return print_json(c, r->json), kExitOk;
  for (const auto& p : r->json["presets"]) {
    double worst = 0;
    for (const auto& [rule, amount] : p["worst_case"].items()) worst = std::max(worst, amount.get<double>());
    char cost[64];
    std::snprintf(cost, sizeof cost, "%.2f %s", worst, p["currency"].get<std::string>().c_str());
    c.out << p["name"].get<std::string>() << ": " << p["description"].get<std::string>() << "\n  "
          << p["experiments"].size() << " experiment(s), " << p["runs"].get<int>() << " runs, worst case " << cost
          << " (every run at its deadline, the dearest billing rule)\n";
    for (const auto& n : p["notes"]) c.out << "  note: " << n.get<std::string>() << "\n";
  }
  return kExitOk;
}

// A spec whose workload.workdir names a folder (a path, relative to the spec file's directory, not "sha256:..."):
// the folder is packed (api/cli/workdir_pack.h), uploaded unless the daemon has those bytes already, and named by its
// hash in the spec sent. kExitOk, or the exit code after the message.
int upload_workdir(cli::Context& c, const Args& a, json& spec) {
  if (!spec.is_object() || !spec.contains("workload") || !spec["workload"].is_object()) return kExitOk;
  json& w = spec["workload"];
  if (!w.contains("workdir") || !w["workdir"].is_string() || w["workdir"].get<std::string>().starts_with("sha256:"))
    return kExitOk;
  std::filesystem::path dir(w["workdir"].get<std::string>());
  if (dir.is_relative()) dir = std::filesystem::path(a.flags.at("file")).parent_path() / dir;
  // The spec checked first, by the daemon's own rules, so that one it would refuse uploads nothing: a folder sent
  // for it would stay on the daemon, named by no experiment.
  json probe = spec;
  probe["workload"]["workdir"] = "sha256:" + std::string(64, '0');
  if (auto checked = daemon::experiment_spec_from_json(probe); !checked) {
    c.err << "tsumd: " << checked.error().detail << " (nothing was uploaded)\n";
    return kExitUsage;
  }
  double limit_mb = 100;
  if (auto it = a.flags.find("workdir-limit"); it != a.flags.end()) {
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), limit_mb);
    if (ec != std::errc() || p != it->second.data() + it->second.size() || !(limit_mb > 0) || limit_mb > 1e6)
      return usage(c.err, "--workdir-limit must be megabytes, above 0 and at most 1e6");
  }
  char tmpl[] = "/tmp/tsum-workdir-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) {
    c.err << "tsumd: cannot make a temporary file in /tmp\n";
    return kExitFailure;
  }
  ::close(fd);
  const std::string archive = tmpl;
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove_archive{archive};
  auto packed = pack_workdir(dir.string(), archive, static_cast<std::uint64_t>(limit_mb * 1e6));
  if (!packed) {
    c.err << "tsumd: " << packed.error().detail << "\n";
    return kExitUsage;
  }
  int code = 0;
  auto have = c.raw("GET", "/v1/workdirs/" + packed->sha256);
  if (!have) {
    c.err << "tsumd: " << have.error().detail << "\n";
    return kExitUnreachable;
  }
  const bool upload = have->status == 404;
  if (!upload && !have->ok()) {
    c.err << "tsumd: " << have->detail() << "\n";
    return exit_code_for(have->status);
  }
  if (upload) {
    std::ifstream in(archive, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (!c.call("POST", "/v1/workdirs", &code, bytes.str())) return code;
  }
  char size[32];
  std::snprintf(size, sizeof size, "%.1f MB", static_cast<double>(packed->file_bytes) / 1e6);
  c.err << "workdir " << dir.string() << ": " << packed->files << " files, " << size
        << (upload ? ", uploaded" : ", already on the daemon") << " as sha256:" << packed->sha256.substr(0, 12) << "\n";
  w["workdir"] = "sha256:" + packed->sha256;
  return kExitOk;
}

int experiment_create(cli::Context& c, const Args& a) {
  int code = 0;
  if (auto it = a.flags.find("preset"); it != a.flags.end()) return preset_create(c, a, it->second);
  auto spec = read_spec(a, c.err, &code);
  if (!spec) return code;
  if (int up = upload_workdir(c, a, *spec); up != kExitOk) return up;
  const auto timeout_s = wait_timeout(a);
  if (!timeout_s) return usage(c.err, "--timeout must be a positive number of seconds");
  auto r = c.call("POST", "/v1/experiments", &code, spec->dump());
  if (!r) return code;
  int64_t id = r->json["id"].get<int64_t>();
  if (!a.wait) {
    if (c.json) print_json(c, r->json);
    else c.out << "experiment " << id << " created\n";
    return kExitOk;
  }
  if (!c.json) c.out << "experiment " << id << " created; following its runs\n";
  return cli::follow_experiment(c, id, *timeout_s);
}

// A paged list (GET /v1/runs, /v1/experiments): `base` with the page flags (--limit, --cursor, --order) and
// `filters` from the flags; one page, or with --all every page, following next_cursor. The rows under `key`, and
// what the last page said of the rest.
struct Listed {
  json rows = json::array();
  int64_t total = 0;
  std::string next_cursor;
};
std::optional<Listed> list_pages(cli::Context& c, const Args& a, const std::string& base, const char* key,
                                 std::initializer_list<const char*> filters, int* code) {
  std::string query;  // "?k=v&k=v" of the filters and page flags, without the cursor
  auto add = [&](const std::string& name, const std::string& value) {
    query += (query.empty() ? "?" : "&") + name + "=" + encode(value);
  };
  for (const char* f : filters)
    if (auto it = a.flags.find(f); it != a.flags.end()) add(f, it->second);
  for (const char* f : {"limit", "order"})
    if (auto it = a.flags.find(f); it != a.flags.end()) add(f, it->second);
  Listed out;
  std::string cursor = a.flags.count("cursor") ? a.flags.at("cursor") : "";
  for (;;) {
    const std::string page = cursor.empty() ? "" : (query.empty() ? "?cursor=" : "&cursor=") + encode(cursor);
    auto r = c.call("GET", base + query + page, code);
    if (!r) return std::nullopt;
    for (auto& row : r->json[key]) out.rows.push_back(std::move(row));
    out.total = r->json.value("total", int64_t{0});
    cursor = r->json.value("next_cursor", json()).is_string() ? r->json["next_cursor"].get<std::string>() : "";
    if (cursor.empty() || !a.all) break;
  }
  out.next_cursor = cursor;
  return out;
}

// After a page that is not the last: how many more there are and how to get them.
void more_hint(cli::Context& c, const Listed& l, const char* what) {
  if (l.next_cursor.empty()) return;
  c.out << l.rows.size() << " of " << l.total << " " << what << " shown; --all for every page, or --cursor "
        << l.next_cursor << " for the next\n";
}

int experiment_list(cli::Context& c, const Args& a) {
  int code = 0;
  auto r = list_pages(c, a, "/v1/experiments", "experiments", {"schedule", "search"}, &code);
  if (!r) return code;
  if (c.json) return print_json(c, {{"experiments", r->rows}, {"total", r->total}}), kExitOk;
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : r->rows) {
    const auto& p = e["progress"];
    rows.push_back({std::to_string(e["id"].get<int64_t>()), e["name"], e["status"],
                    std::to_string(p["finished"].get<int64_t>()) + "/" + std::to_string(p["runs"].get<int64_t>()),
                    std::to_string(p["done"].get<int64_t>()), std::to_string(p["failed"].get<int64_t>()),
                    std::to_string(p["cancelled"].get<int64_t>()), local_time(e["created_at"])});
  }
  cli::print_table(c.out, {"ID", "NAME", "STATUS", "FINISHED", "DONE", "FAILED", "CANCELLED", "CREATED"}, rows);
  more_hint(c, *r, "experiments");
  return kExitOk;
}

int experiment_show(cli::Context& c, const std::string& id) {
  int code = 0;
  auto r = c.call("GET", "/v1/experiments/" + id, &code);
  if (!r) return code;
  if (c.json) return print_json(c, r->json), kExitOk;
  const json& e = r->json;
  const auto& p = e["progress"];
  c.out << "experiment " << id << " \"" << e["name"].get<std::string>() << "\": " << e["status"].get<std::string>()
        << ", " << p["finished"] << "/" << p["runs"] << " runs finished (" << p["done"] << " done, " << p["failed"]
        << " failed, " << p["cancelled"] << " cancelled)\n";
  std::string rule = e["rules"].empty() ? "" : e["rules"][0]["name"].get<std::string>();
  std::vector<std::vector<std::string>> rows;
  for (const auto& run : e["runs"]) rows.push_back(cli::run_row(run, rule));
  auto header = cli::run_header();
  header[6] += " (" + rule + ")";
  cli::print_table(c.out, header, rows);
  if (e.value("next_cursor", json()).is_string())
    c.out << e["runs"].size() << " of " << p["runs"] << " runs shown; every one: tsumd runs list --experiment " << id
          << " --all\n";
  const json& cheapest = e["summary"]["cheapest"];
  if (cheapest.is_object() && cheapest.contains(rule))
    c.out << "cheapest under " << rule << ": " << cli::config_label(cheapest[rule]["config"])
          << " at " << cli::fixed(cheapest[rule]["amount"], 6) << " "
          << cheapest[rule]["currency"].get<std::string>() << "\n";
  return kExitOk;
}

int experiment_cancel(cli::Context& c, const std::string& id) {
  int code = 0;
  auto r = c.call("DELETE", "/v1/experiments/" + id, &code);
  if (!r) return code;
  if (c.json) return print_json(c, r->json), kExitOk;
  c.out << "experiment " << id << ": " << r->json["cancelled_runs"] << " unfinished runs cancelled\n";
  return kExitOk;
}

int experiment_export(cli::Context& c, const Args& a, const std::string& id) {
  std::string format = a.flags.count("format") ? a.flags.at("format") : (c.json ? "json" : "csv");
  if (format != "csv" && format != "json") return usage(c.err, "--format must be csv or json");
  int code = 0;
  auto r = c.call("GET", "/v1/experiments/" + id + "/export?format=" + format, &code);
  if (!r) return code;
  if (format == "json") return print_json(c, r->json), kExitOk;
  c.out << r->body;
  return kExitOk;
}

int runs_list(cli::Context& c, const Args& a) {
  int code = 0;
  auto r = list_pages(c, a, "/v1/runs", "runs", {"experiment", "status", "provider", "config"}, &code);
  if (!r) return code;
  if (c.json) return print_json(c, {{"runs", r->rows}, {"total", r->total}}), kExitOk;
  std::vector<std::vector<std::string>> rows;
  for (const auto& run : r->rows) {
    // Runs of different experiments may be priced under different rules: name the one shown.
    std::string rule = run["cost"].contains("per_second_60s_min") || run["cost"].empty() ? "per_second_60s_min"
                                                                                          : run["cost"].begin().key();
    auto row = cli::run_row(run, rule, true);
    row.insert(row.begin() + 1, std::to_string(run["experiment_id"].get<int64_t>()));
    rows.push_back(std::move(row));
  }
  auto header = cli::run_header();
  header.insert(header.begin() + 1, "EXP");
  cli::print_table(c.out, header, rows);
  more_hint(c, *r, "runs");
  return kExitOk;
}

// tsumd runs join ID: the one-liner that joins a machine to a waiting byo run.
int runs_join(cli::Context& c, const std::string& id) {
  int code = 0;
  auto r = c.call("GET", "/v1/runs/" + encode(id), &code);
  if (!r) return code;
  if (!r->json["join"].is_object()) {
    c.err << "tsumd: run " << id << " is " << r->json["status"].get<std::string>()
          << ", not a byo run waiting for a machine\n";
    return kExitFailure;
  }
  if (c.json) return print_json(c, r->json["join"]), kExitOk;
  c.out << r->json["join"]["command"].get<std::string>() << "\n";
  return kExitOk;
}

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

// One run's lines (see runs_logs), each after `prefix` (the run, when an experiment's runs are shown together).
int run_lines(cli::Context& c, bool follow, const std::string& id, const std::string& prefix) {
  int code = 0;
  int64_t after = 0;
  std::map<std::string, int64_t> next_n;
  for (;;) {
    auto r = c.call("GET", "/v1/runs/" + id + "/logs?after=" + std::to_string(after) + (follow ? "&wait=20" : ""),
                    &code);
    if (!r) return code;
    const json& lines = r->json["lines"];
    for (const auto& l : lines) {
      if (c.json) {
        c.out << l.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
        continue;
      }
      const std::string source = l["source"];
      const int64_t n = l["n"];
      if (auto it = next_n.find(source); it != next_n.end() && n > it->second)
        c.out << prefix << "[... " << n - it->second << " lines not kept: a run keeps its first and its last lines ...]\n";
      next_n[source] = n + 1;
      c.out << prefix;
      if (next_n.size() > 1 || source != "a1n0") c.out << "[" << source << "] ";
      c.out << l["text"].get<std::string>() << "\n";
    }
    c.out.flush();
    after = r->json["after"].get<int64_t>();
    if (r->json["done"].get<bool>() || (!follow && lines.empty())) break;
  }
  return kExitOk;
}

// `experiment logs ID [-f]`: every run's lines, run after run in the order they were made, each line after its
// run's id; with -f each run is followed to its end, so the command returns when the experiment has ended.
int experiment_logs(cli::Context& c, const Args& a, const std::string& id) {
  int code = 0;
  std::vector<int64_t> runs;
  for (std::string cursor;;) {
    auto r = c.call("GET", "/v1/runs?experiment=" + id + "&order=asc&limit=500" + (cursor.empty() ? "" : "&cursor=" + encode(cursor)),
                    &code);
    if (!r) return code;
    for (const auto& run : r->json["runs"]) runs.push_back(run["id"].get<int64_t>());
    cursor = r->json.value("next_cursor", json()).is_string() ? r->json["next_cursor"].get<std::string>() : "";
    if (cursor.empty()) break;
  }
  if (runs.empty()) {
    c.err << "tsumd: experiment " << id << " has no runs\n";
    return kExitNotFound;
  }
  for (int64_t run : runs)
    if (int rc = run_lines(c, a.follow, std::to_string(run), runs.size() > 1 ? "run " + std::to_string(run) + " " : ""); rc != kExitOk)
      return rc;
  return kExitOk;
}

int experiment(cli::Context& c, const Args& a) {
  const std::string& verb = a.words.size() > 1 ? a.words[1] : "";
  if (verb == "create") return experiment_create(c, a);
  if (verb == "list") return experiment_list(c, a);
  if (verb != "show" && verb != "cancel" && verb != "export" && verb != "logs")
    return usage(c.err, "experiment needs create, list, show, logs, cancel or export");
  if (a.words.size() != 3 || !positive_id(a.words[2]))
    return usage(c.err, "experiment " + verb + " needs an experiment ID");
  if (verb == "show") return experiment_show(c, a.words[2]);
  if (verb == "logs") return experiment_logs(c, a, a.words[2]);
  if (verb == "cancel") return experiment_cancel(c, a.words[2]);
  return experiment_export(c, a, a.words[2]);
}

}  // namespace

const char* client_usage() { return kClientUsage; }

bool is_client_command(const std::vector<std::string>& args) {
  if (args.empty()) return false;
  auto has = [&](const std::string& flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
  const std::string& cmd = args[0];
  if (cmd == "experiment" || cmd == "runs" || cmd == "schedule" || cmd == "preset" || cmd == "search") return true;
  if (cmd == "token") return !(args.size() > 1 && args[1] == "create" && has("--db"));
  if (cmd == "plan") return !has("--from-csv");
  if (cmd == "offers") return !has("--config");  // with a config file it asks the clouds itself
  return false;
}

// `runs logs ID [-f]`: the run's output as the daemon holds it; with -f, long polls (wait=20) until the run has
// ended and every line is out. Lines of a run with several sources (nodes, attempts) are prefixed with theirs; a
// jump in a source's line numbers (the middle a long log does not keep) is said where it is.
int runs_logs(cli::Context& c, const Args& a, const std::string& id) {
  if (!positive_id(id)) return usage(c.err, "runs logs needs a run id, a positive number");
  return run_lines(c, a.follow, id, "");
}

int run_client(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, bool interactive) {
  auto a = parse_args(args);
  if (!a) return usage(err, a.error().detail);
  auto opt = [&](const char* key) {
    auto it = a->flags.find(key);
    return it == a->flags.end() ? std::optional<std::string>{} : std::optional<std::string>(it->second);
  };
  auto config = resolve_config(opt("url"), opt("token"), [](const char* v) { return std::getenv(v); },
                               default_config_path());
  if (!config) return usage(err, config.error().detail);
  cli::Context c(CliHttp(*config), out, err, a->json, interactive);
  const std::string& cmd = a->words.front();
  if (cmd == "experiment") return experiment(c, *a);
  if (cmd == "schedule") return schedule(c, *a);
  if (cmd == "search") return search(c, *a);
  if (cmd == "offers") return a->words.size() == 1 ? offers(c, *a) : usage(err, "offers takes no positional arguments");
  if (cmd == "token") return token(c, *a);
  if (cmd == "plan") return a->words.size() == 1 ? plan(c, *a) : usage(err, "plan takes no positional arguments");
  if (cmd == "preset" && a->words.size() == 2 && a->words[1] == "list") return preset_list(c);
  if (cmd == "runs" && a->words.size() == 2 && a->words[1] == "list") return runs_list(c, *a);
  if (cmd == "runs" && a->words.size() == 3 && a->words[1] == "join") return runs_join(c, a->words[2]);
  if (cmd == "runs" && a->words.size() == 3 && a->words[1] == "logs") return runs_logs(c, *a, a->words[2]);
  return usage(err, "unknown client command '" + cmd + (a->words.size() > 1 ? " " + a->words[1] : "") + "'");
}

}  // namespace tsum::api
