#include "api/cli/cli_client.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "api/cli/cli_commands.h"
#include "api/cli/spec_file.h"
#include "common/json_util.h"

namespace tsum::api::cli_detail {

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

}  // namespace

int usage(std::ostream& err, const std::string& msg) {
  err << "tsumd: " << msg << "\n" << kClientUsage;
  return kExitUsage;
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

// A paged list (GET /v1/runs, /v1/experiments): `base` with the page flags (--limit, --cursor, --order) and
// `filters` from the flags; one page, or with --all every page, following next_cursor. The rows under `key`, and
// what the last page said of the rest.
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

}  // namespace tsum::api::cli_detail

namespace tsum::api {

using namespace cli_detail;

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
