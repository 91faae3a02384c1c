// The client's shared pieces (api/cli/cli_context.h): daemon calls, tables, and following an experiment's runs.
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "api/cli/cli_context.h"
#include "daemon/runs/run_status.h"

namespace tsum::api::cli {

using nlohmann::json;

std::optional<Reply> Context::call(const std::string& method, const std::string& target, int* code,
                                   const std::string& body) {
  auto r = http_.call(method, target, body);
  if (!r) {
    err << "tsumd: " << r.error().detail << "\n";
    *code = kExitUnreachable;
    return std::nullopt;
  }
  if (!r->ok()) {
    err << "tsumd: " << r->detail() << " (HTTP " << r->status << " from " << method << " " << target << ")\n";
    if (r->status == 401)
      err << "tsumd: pass --token, set TSUM_TOKEN or put {\"token\": ...} in " << default_config_path() << "\n";
    if (r->status == 403)
      err << "tsumd: this token does not reach that route: use an admin token (tsumd token create --db DB)\n";
    *code = exit_code_for(r->status);
    return std::nullopt;
  }
  return std::move(*r);
}

void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t i = 0; i < cells.size(); ++i) {
      s += cells[i];
      if (i + 1 < cells.size()) s += std::string(width[i] - cells[i].size() + 2, ' ');
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
}

std::string fixed(const json& v, int digits) {
  if (!v.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v.get<double>());
  return buf;
}

const std::vector<std::string>& run_header() {
  static const std::vector<std::string> kHeader = {"RUN", "CONFIG", "REP", "STATUS", "T_SUM", "ACCURACY", "COST",
                                                   "REASON"};
  return kHeader;
}

std::string config_label(const json& config) {
  std::string s = config.value("instance_type", "");
  if (const int64_t nodes = config.value("nodes", int64_t{1}); nodes > 1) s += " x" + std::to_string(nodes);
  if (const std::string market = config.value("market", ""); !market.empty() && market != "on-demand") s += " " + market;
  if (const std::string runtime = config.value("runtime", ""); !runtime.empty() && runtime != "native") s += " " + runtime;
  if (config.contains("workload") && config["workload"].is_object())
    for (const auto& [k, v] : config["workload"].items()) s += " " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

std::vector<std::string> run_row(const json& run, const std::string& rule, bool name_rule) {
  std::string cost = "-";
  if (run["cost"].contains(rule))
    cost = fixed(run["cost"][rule]["amount"], 6) + " " + run["cost"][rule]["currency"].get<std::string>() +
           (name_rule ? " (" + rule + ")" : "");
  return {std::to_string(run["id"].get<int64_t>()),
          config_label(run["config"]),
          std::to_string(run["repetition"].get<int>()),
          run["status"].get<std::string>(),
          fixed(run["t_sum"], 3),
          fixed(run["metrics"].value("test_accuracy", json()), 4),
          cost,
          run["reason"].get<std::string>()};
}

namespace {

// "run 3 local-1c #1: ", what begins each line a run prints while it is followed.
std::string run_prefix(const json& run) {
  return "run " + std::to_string(run["id"].get<int64_t>()) + " " + config_label(run["config"]) + " #" +
         std::to_string(run["repetition"].get<int>()) + ": ";
}

}  // namespace

std::string progress_line(const json& run, int epochs) {
  std::string s = run_prefix(run) + run["status"].get<std::string>();
  const std::string status = run["status"];
  // Only training counts epochs: an inference sweep or a serving run learns nothing, and says what it measures.
  const std::string kind = run.value("workload", json::object()).is_object()
                               ? run.value("workload", json::object()).value("kind", "train") : "train";
  if (status == "learning" && kind != "train") s += kind == "serve" ? " (serving)" : kind == "infer" ? " (sweep)" : "";
  if (status == "learning" && kind == "train")
    s += " (epoch " + std::to_string(std::min<size_t>(run["epochs"].size() + 1, epochs)) + "/" +
         std::to_string(epochs) + ")";
  if (status == "done") s += ", t_sum " + fixed(run["t_sum"], 3) + " s";
  if ((status == "failed" || status == "cancelled") && !run["reason"].get<std::string>().empty())
    s += ": " + run["reason"].get<std::string>();
  return s;
}

namespace {

bool finished(const json& e) { return e["status"] != "queued" && e["status"] != "running"; }

// The phase a status is in, as an index of kPhaseNames: how many phases' statuses come before it (0 until booting
// ends, 8 once finished).
size_t phase_of(const std::string& status) {
  const auto s = daemon::parse_status(status);
  size_t before = 0;
  for (size_t i = 0; i < daemon::kPhaseNames.size(); ++i)
    before += !s || daemon::status_of(static_cast<daemon::Phase>(i)) < *s;
  return before;
}

}  // namespace

int follow_experiment(Context& c, int64_t id, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  const std::string target = "/v1/experiments/" + std::to_string(id);
  std::map<int64_t, std::string> last;  // per run, the line printed last
  std::map<int64_t, std::set<std::string>> ended;  // per run, the phases whose time was printed
  size_t drawn = 0;                     // lines of the live block on a terminal
  for (;;) {
    int code = 0;
    auto r = c.call("GET", target, &code);
    if (!r) return code;
    const json& e = r->json;
    const int epochs = e["spec"]["workload"].value("epochs", 1);
    if (!c.json && c.interactive) {
      if (drawn) c.out << "\x1b[" << drawn << "A";
      for (const auto& run : e["runs"]) c.out << "\r\x1b[2K" << progress_line(run, epochs) << "\n";
      drawn = e["runs"].size();
      c.out.flush();
    } else if (!c.json) {
      for (const auto& run : e["runs"]) {
        const int64_t rid = run["id"].get<int64_t>();
        // Every phase that ended, once, in order: a phase shorter than a poll is not skipped, though the status it
        // gave the run was never seen. Those before the run's status come before its line, the others after it.
        const json phases = run.value("phases", json::object());
        auto took = [&](size_t from, size_t to) {
          for (size_t i = from; i < to; ++i) {
            const std::string p(daemon::kPhaseNames[i]);
            if (phases.is_object() && phases.value(p, json()).is_number() && ended[rid].insert(p).second)
              c.out << run_prefix(run) << p << " took " << fixed(phases[p], 3) << " s\n";
          }
        };
        const size_t now = phase_of(run["status"].get<std::string>());
        took(0, now);
        std::string line = progress_line(run, epochs);
        if (last[rid] != line) c.out << line << "\n";
        last[rid] = line;
        took(now, daemon::kPhaseNames.size());
      }
      c.out.flush();
    }
    if (finished(e)) {
      if (c.json) c.out << e.dump(2) << "\n";
      else c.out << "experiment " << id << " " << e["status"].get<std::string>() << "\n";
      return e["status"] == "done" ? kExitOk : kExitFailure;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      c.err << "tsumd: experiment " << id << " still " << e["status"].get<std::string>() << " after " << timeout_s
            << " s; it keeps running (tsumd experiment show " << id << ")\n";
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace tsum::api::cli
