// tsumd's client commands on presets, experiments, runs and their logs (api/cli/cli_commands.h).
#include "api/cli/cli_commands.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "api/cli/spec_file.h"
#include "api/cli/workdir_pack.h"
#include "common/json_util.h"
#include "daemon/experiments/experiment_spec.h"

namespace tsum::api::cli_detail {

namespace {

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

}  // namespace

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

// `runs logs ID [-f]`: the run's output as the daemon holds it; with -f, long polls (wait=20) until the run has
// ended and every line is out. Lines of a run with several sources (nodes, attempts) are prefixed with theirs; a
// jump in a source's line numbers (the middle a long log does not keep) is said where it is.
int runs_logs(cli::Context& c, const Args& a, const std::string& id) {
  if (!positive_id(id)) return usage(c.err, "runs logs needs a run id, a positive number");
  return run_lines(c, a.follow, id, "");
}

}  // namespace tsum::api::cli_detail
