// The client commands against a real `tsumd serve` on loopback, running real tsum-train: outputs and exit codes.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "api/cli/workdir_pack.h"
#include "cli/cli_process.h"
#include "integration/daemon_process.h"

using namespace tsum::testing;
using nlohmann::json;

namespace {

// A daemon with an admin token, and the client flags that reach it.
struct Session {
  TempDir dir{"tsum-cli"};
  DaemonProcess daemon{dir.file("t.db")};
  std::string token = daemon.admin_token();
  std::string url;

  explicit Session(const std::vector<std::string>& serve_flags = {}) {
    daemon.start(serve_flags);
    url = "http://127.0.0.1:" + std::to_string(daemon.port());
  }
  CliResult cli(std::vector<std::string> args) {
    args.insert(args.end(), {"--url", url, "--token", token});
    auto r = run_cli(dir, args);
    return r;
  }
  std::string spec(const std::string& name, const std::string& body) {
    write_file(dir.file(name), body);
    return dir.file(name);
  }
};

size_t lines_starting(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (text.compare(at, prefix.size(), prefix) == 0) ++n;
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return n;
}

}  // namespace

TEST_CASE("experiment create --wait follows the runs; list, show, runs, export and plan read them") {
  Session s;
  auto created = s.cli({"experiment", "create", "-f", s.spec("e.json", tiny_experiment(300, 200)), "--wait"});
  CAPTURE(created.out);
  CAPTURE(created.err);
  REQUIRE(created.code == 0);
  CHECK(created.out.rfind("experiment 1 created; following its runs\n", 0) == 0);
  CHECK(created.out.find("run 1 local-1c #1: done, t_sum ") != std::string::npos);
  CHECK(lines_starting(created.out, "run 1 local-1c #1: ") >= 2);  // a line per status change, then done
  // Every phase, in order, however short (install and load_data take milliseconds: far less than a poll).
  size_t at = 0;
  for (const char* p : {"startup", "install", "load_data", "start", "learn", "verify", "save", "poweroff"}) {
    CAPTURE(p);
    const size_t next = created.out.find(std::string("run 1 local-1c #1: ") + p + " took ", at);
    CHECK(next != std::string::npos);
    if (next != std::string::npos) at = next;
  }
  CHECK(created.out.find("\x1b[") == std::string::npos);           // piped: no terminal redraws
  CHECK(created.out.ends_with("experiment 1 done\n"));

  auto list = s.cli({"experiment", "list"});
  CHECK(list.code == 0);
  CHECK(list.out.rfind("ID  NAME  STATUS  FINISHED  DONE  FAILED  CANCELLED  CREATED\n", 0) == 0);
  CHECK(list.out.find("\n1   it    done    1/1       1     0       0          ") != std::string::npos);

  auto show = s.cli({"experiment", "show", "1"});
  CAPTURE(show.out);
  CHECK(show.code == 0);
  CHECK(show.out.rfind("experiment 1 \"it\": done, 1/1 runs finished (1 done, 0 failed, 0 cancelled)\n", 0) == 0);
  CHECK(show.out.find("COST (per_second_60s_min)") != std::string::npos);
  CHECK(show.out.find("cheapest under per_second_60s_min: local-1c at ") != std::string::npos);
  auto shown = json::parse(s.cli({"experiment", "show", "1", "--json"}).out);
  CHECK(shown["id"] == 1);
  CHECK(shown["runs"][0]["status"] == "done");

  // A workload field that takes two values: each run's config says which, as the dashboard does.
  auto matrix = s.cli({"experiment", "create", "-f", s.spec("matrix.json", R"({"name": "matrix",
      "workload": {"epochs": 1, "limit": [100, 200], "test_limit": 100},
      "configs": [{"provider": "local", "instance_type": "local-1c"}]})")});
  REQUIRE(matrix.code == 0);
  auto labelled = s.cli({"experiment", "show", "2"});
  CAPTURE(labelled.out);
  CHECK(labelled.out.find(" local-1c limit=100 ") != std::string::npos);
  CHECK(labelled.out.find(" local-1c limit=200 ") != std::string::npos);
  CHECK(s.cli({"experiment", "cancel", "2"}).code == 0);

  auto runs = s.cli({"runs", "list", "--experiment", "1", "--json"});
  CHECK(runs.code == 0);
  CHECK(json::parse(runs.out)["runs"].size() == 1);
  auto runs_table = s.cli({"runs", "list", "--status", "done"});
  CHECK(runs_table.out.rfind("RUN  EXP  CONFIG    REP  STATUS", 0) == 0);
  CHECK(lines_starting(runs_table.out, "1    1    local-1c  1    done") == 1);

  auto csv = s.cli({"experiment", "export", "1"});
  CHECK(csv.code == 0);
  CHECK(lines_starting(csv.out, "") == 2);  // header and one run
  CHECK(csv.out.find("local-1c") != std::string::npos);
  CHECK(json::parse(s.cli({"experiment", "export", "1", "--format", "json"}).out)["runs"].size() == 1);
  // The export is the offline planner's input as it is, from a file or a pipe.
  write_file(s.dir.file("runs.csv"), csv.out);
  auto offline = run_cli(s.dir, {"plan", "--from-csv", s.dir.file("runs.csv"), "--objective", "time"});
  CAPTURE(offline.err);
  CHECK(offline.code == 0);
  CHECK(offline.out.find("local/local-1c") != std::string::npos);
  write_file(s.dir.file("short.csv"), "config,provider\nlocal/x,local\n");
  auto short_csv = run_cli(s.dir, {"plan", "--from-csv", s.dir.file("short.csv")});
  CHECK(short_csv.code == 2);  // bad input, as docs/cli.md says
  CHECK(short_csv.err.find("header is missing column 'instance_type': a runs CSV has the columns config, provider, "
                           "instance_type, cores, gpus, price_per_hour, startup") != std::string::npos);

  auto plan = s.cli({"plan", "--experiment", "1", "--objective", "time"});
  CAPTURE(plan.err);
  CHECK(plan.code == 0);
  // The plan says its runs measured install and load_data alike: warm, the warm-up before the run filled the cache.
  CHECK(plan.out.rfind("objective time, from 1 done runs\ninstall and load_data: every run's install and load_data "
                       "found the machine warm", 0) == 0);
  CHECK(plan.out.find("\nRANK  CONFIG") != std::string::npos);
  CHECK(plan.out.find("local/local-1c") != std::string::npos);
  CHECK(plan.out.find("MACHINES") == std::string::npos);  // one repetition: nothing to pack

  // Ten repetitions: each config fresh (ten machines) and packed (one), told apart in their own column; no two
  // rows read alike.
  auto ten = s.cli({"plan", "--experiment", "1", "--objective", "cost", "--repetitions", "10"});
  CAPTURE(ten.out);
  CHECK(ten.code == 0);
  CHECK(ten.out.find("\nRANK  CONFIG          MACHINES    BILLING") != std::string::npos);
  CHECK(ten.out.find(" 10 (fresh) ") != std::string::npos);
  CHECK(ten.out.find(" 1 (packed) ") != std::string::npos);
  std::set<std::string> seen;
  std::istringstream lines(ten.out.substr(ten.out.find("\nRANK")));
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    const std::string unranked = line.substr(line.find(' '));
    CHECK_MESSAGE(seen.insert(unranked.substr(0, unranked.find(" USD") + 4)).second, line);
  }
}

TEST_CASE("URL and token come from flags, then TSUM_URL/TSUM_TOKEN, then ~/.config/tsum/client.json") {
  Session s;
  const std::map<std::string, std::string> env = {{"TSUM_URL", s.url}, {"TSUM_TOKEN", s.token}};
  CHECK(run_cli(s.dir, {"experiment", "list"}, env).code == 0);
  CHECK(run_cli(s.dir, {"experiment", "list", "--token", "tsum_wrong"}, env).code == 4);  // the flag wins
  CHECK(run_cli(s.dir, {"experiment", "list", "--token", s.token},
                {{"TSUM_URL", s.url}, {"TSUM_TOKEN", "tsum_wrong"}}).code == 0);

  std::filesystem::create_directories(s.dir.path() / ".config/tsum");
  write_file(s.dir.file(".config/tsum/client.json"), json{{"url", s.url}, {"token", s.token}}.dump());
  CHECK(run_cli(s.dir, {"experiment", "list"}).code == 0);
  CHECK(run_cli(s.dir, {"experiment", "list"}, {{"TSUM_TOKEN", "tsum_wrong"}}).code == 4);  // env beats the file
  write_file(s.dir.file(".config/tsum/client.json"), R"({"url": 8080})");
  auto bad = run_cli(s.dir, {"experiment", "list"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("client.json: 'url' must be a string") != std::string::npos);
}

TEST_CASE("exit codes: bad input 2, unknown 3, wrong token 4, daemon down 5") {
  Session s;
  auto missing = s.cli({"experiment", "create", "-f", s.dir.file("nope.json")});
  CHECK(missing.code == 2);
  CHECK(missing.err == "tsumd: cannot read spec file " + s.dir.file("nope.json") + "\n");
  auto garbage = s.cli({"experiment", "create", "-f", s.spec("bad.json", "{\"workload\": {},\n  \"configs\": [1,]}")});
  CHECK(garbage.code == 2);
  CHECK(garbage.err.rfind("tsumd: spec file " + s.dir.file("bad.json") + ":2:17: not valid JSON", 0) == 0);
  // The parser's reason whole, not cut at a colon inside what it last read.
  auto literal = s.cli({"experiment", "create", "-f", s.spec("literal.json", "{\"name\": \"x\",\n \"workload\": m}")});
  CHECK(literal.code == 2);
  CHECK(literal.err.find("literal.json:2:14: not valid JSON: syntax error while parsing value - invalid literal; "
                         "last read: '\"workload\": m'") != std::string::npos);
  auto bad_yaml = s.cli({"experiment", "create", "-f", s.spec("bad.yaml", "workload: {}\nconfigs: [a\n")});
  CHECK(bad_yaml.code == 2);
  CHECK(bad_yaml.err.find(s.dir.file("bad.yaml") + ":3:1: not valid YAML") != std::string::npos);
  // YAML is read into the same fields, and gets the same errors.
  auto yaml_colour = s.cli({"experiment", "create", "-f", s.spec("colour.yaml", "workload: {}\ncolour: 1\n"
      "configs:\n  - provider: local\n    instance_type: local-1c\n")});
  CHECK(yaml_colour.code == 2);
  CHECK(yaml_colour.err.find("unknown field 'colour' (HTTP 422 from POST /v1/experiments)") != std::string::npos);
  auto invalid = s.cli({"experiment", "create", "-f", s.spec("colour.json", R"({"workload":{},"colour":1,
      "configs":[{"provider":"local","instance_type":"local-1c"}]})")});
  CHECK(invalid.code == 2);
  CHECK(invalid.err.find("unknown field 'colour' (HTTP 422 from POST /v1/experiments)") != std::string::npos);
  for (const auto& args : std::vector<std::vector<std::string>>{{"experiment", "frobnicate"},
                                                                {"experiment", "show"},
                                                                {"experiment", "show", "abc"},
                                                                {"experiment", "list", "--nope", "1"},
                                                                {"experiment", "export", "1", "--format", "xml"},
                                                                {"schedule", "create"},
                                                                {"plan"}}) {
    CAPTURE(args);
    CHECK(s.cli(args).code == 2);
  }

  auto unknown = s.cli({"experiment", "show", "999"});
  CHECK(unknown.code == 3);
  CHECK(unknown.err.find("experiment 999 not found (HTTP 404") != std::string::npos);
  CHECK(s.cli({"experiment", "cancel", "999"}).code == 3);
  CHECK(s.cli({"experiment", "export", "999"}).code == 3);
  CHECK(s.cli({"runs", "list", "--experiment", "999"}).code == 3);
  CHECK(s.cli({"plan", "--experiment", "999"}).code == 3);
  CHECK(s.cli({"schedule", "delete", "99"}).code == 3);
  CHECK(s.cli({"token", "revoke", "0123456789abcdef"}).code == 3);

  auto wrong = run_cli(s.dir, {"experiment", "list", "--url", s.url, "--token", "tsum_wrong"});
  CHECK(wrong.code == 4);
  CHECK(wrong.err.find("invalid or revoked token (HTTP 401") != std::string::npos);
  CHECK(run_cli(s.dir, {"experiment", "list", "--url", s.url}).code == 4);  // no token at all
  CHECK(wrong.err.find("pass --token") != std::string::npos);
  // A good token of the metrics scope: refused as one that does not reach the route, not as a missing token.
  auto metrics = s.cli({"token", "create", "--scope", "metrics", "--json"});
  REQUIRE(metrics.code == 0);
  const std::string metrics_token = nlohmann::json::parse(metrics.out).value("token", "");
  REQUIRE(metrics_token.starts_with("tsum_"));
  auto scoped = run_cli(s.dir, {"experiment", "list", "--url", s.url, "--token", metrics_token});
  CHECK(scoped.code == 4);
  CHECK(scoped.err.find("a metrics token may only read GET /metrics (HTTP 403") != std::string::npos);
  CHECK(scoped.err.find("use an admin token") != std::string::npos);
  CHECK(scoped.err.find("pass --token") == std::string::npos);

  auto down = run_cli(s.dir, {"experiment", "list", "--url", "http://127.0.0.1:" + std::to_string(free_port())});
  CHECK(down.code == 5);
  CHECK(down.err.find("cannot reach tsumd at http://127.0.0.1:") == 0 + std::string("tsumd: ").size());
  CHECK(run_cli(s.dir, {"experiment", "list", "--url", "https://127.0.0.1"}).code == 2);
}

TEST_CASE("schedules and tokens through the client") {
  Session s;
  const json schedule = {{"name", "nightly"}, {"cron", "0 2 * * *"}, {"timezone", "Europe/Moscow"},
                         {"experiment", json::parse(tiny_experiment())}, {"budget", 0.5}};
  auto created = s.cli({"schedule", "create", "-f", s.spec("s.json", schedule.dump())});
  CHECK(created.code == 0);
  CHECK(created.out.rfind("schedule 1 created; next firing ", 0) == 0);
  CHECK(created.out.find("+03:00\n") != std::string::npos);
  auto list = s.cli({"schedule", "list"});
  CHECK(list.out.find("1   nightly  0 2 * * *  Europe/Moscow  ") != std::string::npos);
  CHECK(list.out.find("  0.50    yes\n") != std::string::npos);
  CHECK(s.cli({"schedule", "delete", "1"}).out == "schedule 1 deleted\n");
  CHECK(json::parse(s.cli({"schedule", "list", "--json"}).out)["schedules"].empty());

  auto made = s.cli({"token", "create"});
  REQUIRE(made.code == 0);
  std::string fresh = made.out.substr(0, made.out.size() - 1);
  CHECK(fresh.rfind("tsum_", 0) == 0);
  CHECK(made.err.rfind("token id ", 0) == 0);
  std::string id = made.err.substr(9, 16);
  CHECK(run_cli(s.dir, {"experiment", "list", "--url", s.url, "--token", fresh}).code == 0);
  auto metrics = json::parse(s.cli({"token", "create", "--scope", "metrics", "--json"}).out);
  CHECK(metrics["scope"] == "metrics");
  CHECK(s.daemon.call("GET", "/metrics", metrics["token"]).status == 200);
  CHECK(s.cli({"token", "create", "--scope", "root"}).code == 2);
  CHECK(s.cli({"token", "revoke", id}).out == "token " + id + " revoked\n");
  CHECK(run_cli(s.dir, {"experiment", "list", "--url", s.url, "--token", fresh}).code == 4);
  CHECK(s.cli({"token", "revoke", id}).code == 3);  // already revoked
}

TEST_CASE("experiment cancel stops its unfinished runs") {
  Session s;
  const std::string spec = tiny_experiment(5000, 1000, {"local-1c", "local-1c", "local-1c"});
  auto created = s.cli({"experiment", "create", "-f", s.spec("e.json", spec)});
  REQUIRE(created.code == 0);
  auto cancelled = s.cli({"experiment", "cancel", "1"});
  CHECK(cancelled.code == 0);
  CHECK(cancelled.out == "experiment 1: 3 unfinished runs cancelled\n");
  auto status = [&] { return json::parse(s.cli({"experiment", "show", "1", "--json"}).out)["status"]; };
  CHECK(eventually([&] { return status() == "cancelled"; }, std::chrono::seconds(60)));
  CHECK(s.cli({"experiment", "cancel", "1"}).out == "experiment 1: 0 unfinished runs cancelled\n");
}

TEST_CASE("budgets through the daemon: a run whose worst case does not fit is refused before it starts") {
  Session s;
  json tight = json::parse(tiny_experiment());
  tight["budget"] = 0.000001;
  tight["deadline"] = 600;
  auto refused = s.cli({"experiment", "create", "-f", s.spec("tight.json", tight.dump()), "--wait"});
  CAPTURE(refused.out);
  CHECK(refused.code == 1);
  CHECK(refused.out.find("run 1 local-1c #1: cancelled: budget: experiment 1 has 0.0000 of 0.0000 left, and run 1 "
                         "may cost up to 0.0071") != std::string::npos);
  auto run = json::parse(s.cli({"experiment", "show", "1", "--json"}).out)["runs"][0];
  CHECK(run["instance"].is_null());  // never created

  json roomy = json::parse(tiny_experiment());
  roomy["budget"] = 1.0;
  roomy["deadline"] = 600;
  CHECK(s.cli({"experiment", "create", "-f", s.spec("roomy.json", roomy.dump()), "--wait"}).code == 0);
  auto metrics = s.daemon.call("GET", "/metrics", s.token).body;
  CHECK(metrics.find("tsum_billed_total{provider=\"local\",currency=\"USD\"} ") != std::string::npos);
  CHECK(metrics.find("tsum_monthly_budget") == std::string::npos);  // no --monthly-budget here

  Session monthly({"--monthly-budget", "0.0001"});
  auto over = monthly.cli({"experiment", "create", "-f", monthly.spec("e.json", tiny_experiment()), "--wait"});
  CHECK(over.code == 1);
  CHECK(over.out.find("cancelled: budget: the monthly budget has 0.0001 of 0.0001 left") != std::string::npos);
  CHECK(monthly.daemon.call("GET", "/metrics", monthly.token).body.find("tsum_monthly_budget 0.0001\n") !=
        std::string::npos);
}

TEST_CASE("budgets through the daemon: a live run is stopped once its schedule's cap is reached") {
  Session s;
  json schedule = {{"name", "every minute"}, {"cron", "* * * * *"}, {"budget", 1.0},
                   {"experiment", json::parse(tiny_experiment(10000, 1000))}};
  REQUIRE(s.cli({"schedule", "create", "-f", s.spec("s.json", schedule.dump())}).code == 0);
  // The schedule fires at the next minute; wait until its run has an instance.
  json run;
  REQUIRE(eventually([&] {
    run = s.daemon.call("GET", "/v1/runs/1", s.token).json();
    return run.is_object() && run.contains("instance") && !run["instance"].is_null();
  }, std::chrono::seconds(90)));
  // Lower the cap below what the running instance has already accrued (a 60 s minimum charge).
  schedule["budget"] = 0.0001;
  schedule["enabled"] = false;
  REQUIRE(s.daemon.call("PUT", "/v1/schedules/1", s.token, schedule.dump()).status == 200);
  REQUIRE(eventually([&] {
    run = s.daemon.call("GET", "/v1/runs/1", s.token).json();
    return run["status"] == "cancelled" || run["status"] == "done" || run["status"] == "failed";
  }, std::chrono::seconds(60)));
  CAPTURE(run.dump());
  CHECK(run["status"] == "cancelled");
  CHECK(run["reason"].get<std::string>().rfind("budget: schedule 1 reached its cap of 0.0001 (0.0007 billed)", 0) == 0);
  CHECK(run["phases"]["poweroff"].is_number());  // the instance was terminated and confirmed gone
}

TEST_CASE("search create --wait follows the probes to the recommendation; search list and show read it back") {
  TempDir trace_dir{"tsum-cli-trace"};
  write_file(trace_dir.file("trace.csv"),
             "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,"
             "save,poweroff\n"
             "t-2c,trace,t-2c,2,0,0.10,10,20,10,5,800,5,5,10\n"
             "t-4c,trace,t-4c,4,0,0.12,10,20,10,5,400,5,5,10\n");
  Session s({"--trace", trace_dir.file("trace.csv"), "--trace-speed", "200"});
  // A YAML spec, as a person writes one.
  const std::string spec = s.spec("search.yaml", R"(workload: {model: mnist_cnn, dataset: fashion-mnist, epochs: 1}
candidates:
  - {provider: trace, instance_type: t-2c}
  - {provider: trace, instance_type: t-4c}
objective: cost
future_runs: 100
billing: per_second_60s_min
)");
  auto created = s.cli({"search", "create", "-f", spec, "--wait"});
  CAPTURE(created.out);
  CAPTURE(created.err);
  REQUIRE(created.code == 0);
  CHECK(created.out.rfind("search 1 started; following its probes\n", 0) == 0);
  CHECK(created.out.find("probe 1 trace/t-") != std::string::npos);
  CHECK(created.out.find(": done, t_sum ") != std::string::npos);
  CHECK(created.out.find("\nrecommendation: trace/t-") != std::string::npos);
  CHECK(created.out.find("\nstopped: ") != std::string::npos);

  auto list = s.cli({"search", "list"});
  CHECK(list.code == 0);
  CHECK(list.out.rfind("ID  STATUS  PROBES  SPENT", 0) == 0);
  CHECK(list.out.find("\n1   done    ") != std::string::npos);
  auto show = s.cli({"search", "show", "1"});
  CHECK(show.code == 0);
  CHECK(show.out.rfind("search 1: done, ", 0) == 0);
  CHECK(show.out.find("PROBE  CONFIG") != std::string::npos);
  auto shown = json::parse(s.cli({"search", "show", "1", "--json"}).out);
  CHECK(shown["status"] == "done");
  CHECK(s.cli({"search", "show", "99"}).code == 3);
  CHECK(s.cli({"search", "frobnicate"}).code == 2);

  // The daemon's offers, without a config file of one's own.
  auto offers = s.cli({"offers", "--provider", "trace"});
  CAPTURE(offers.err);
  CHECK(offers.code == 0);
  CHECK(offers.out.rfind("PROVIDER  INSTANCE", 0) == 0);
  CHECK(offers.out.find("\ntrace     t-2c ") != std::string::npos);
  auto none = s.cli({"offers", "--provider", "awz"});
  CHECK(none.code == 3);
  CHECK(none.err.find("no offers from provider 'awz'; the daemon's providers: ") != std::string::npos);
}

TEST_CASE("gitignore-style rules: anchors, directories, negation, wildcards, the last match deciding") {
  tsum::api::IgnoreRules rules("# comment\n*.pyc\n/build/\ndata/*.bin\n!data/keep.bin\nlogs/\n**/cache\n\n");
  CHECK(rules.ignored("a.pyc", false));
  CHECK(rules.ignored("src/deep/b.pyc", false));
  CHECK(rules.ignored("build", true));
  CHECK_FALSE(rules.ignored("src/build", true));  // anchored at the folder
  CHECK_FALSE(rules.ignored("build", false));     // a file named build is not the directory
  CHECK(rules.ignored("data/big.bin", false));
  CHECK_FALSE(rules.ignored("data/keep.bin", false));  // taken back
  CHECK_FALSE(rules.ignored("other/big.bin", false));
  CHECK(rules.ignored("x/logs", true));
  CHECK(rules.ignored("a/b/cache", false));
  CHECK_FALSE(rules.ignored("train.py", false));
}

TEST_CASE("a folder job from the command line: packed with its ignores, uploaded once, its output followed") {
  Session s;
  const auto job = std::filesystem::path(s.dir.file("job"));
  std::filesystem::create_directories(job / "__pycache__");
  std::filesystem::create_directories(job / ".git");
  write_file((job / "run.sh").string(), "echo hello from the folder; cat note.txt; ls -a | tr '\\n' ' '; echo\n"
                                        "i=1; while [ $i -le 3 ]; do echo step $i; i=$((i + 1)); done\n");
  write_file((job / "note.txt").string(), "a note\n");
  write_file((job / "big.bin").string(), std::string(3'000'000, 'x'));
  write_file((job / "__pycache__" / "x.pyc").string(), "compiled");
  write_file((job / ".git" / "HEAD").string(), "ref: refs/heads/main\n");
  write_file((job / ".tsumignore").string(), "__pycache__/\n");
  const std::string spec = s.spec("job.yaml", "name: folder\n"
                                              "workload: {workdir: job, run: sh run.sh}\n"
                                              "configs: [{provider: local, instance_type: local-1c}]\n"
                                              "repetitions: 1\n");
  // Over the limit: refused before anything is sent, naming the largest file and how to leave it out.
  auto big = s.cli({"experiment", "create", "-f", spec, "--workdir-limit", "1"});
  CHECK(big.code == 2);
  CHECK(big.err.find("holds 3.0 MB to upload, over the limit of 1.0 MB; the largest: big.bin (3.0 MB)") != std::string::npos);
  CHECK(big.err.find(".tsumignore") != std::string::npos);
  CHECK(s.cli({"experiment", "list", "--json"}).out.find("\"folder\"") == std::string::npos);

  write_file((job / ".tsumignore").string(), "__pycache__/\n*.bin\n");
  // A spec the daemon would refuse is refused before its folder goes: nothing is left behind on the daemon (the
  // create below still uploads it).
  auto typo = s.cli({"experiment", "create", "-f", s.spec("typo.yaml", "name: folder\n"
                                                          "workload: {workdir: job, run: sh run.sh, setpu: x}\n"
                                                          "configs: [{provider: local, instance_type: local-1c}]\n")});
  CHECK(typo.code == 2);
  CHECK(typo.err.find("unknown field 'workload.setpu'") != std::string::npos);
  CHECK(typo.err.find("(nothing was uploaded)") != std::string::npos);
  CHECK(typo.err.find("uploaded as") == std::string::npos);
  auto created = s.cli({"experiment", "create", "-f", spec});
  CAPTURE(created.err);
  REQUIRE(created.code == 0);
  CHECK(created.out == "experiment 1 created\n");
  CHECK(created.err.find(": 3 files, 0.0 MB, uploaded as sha256:") != std::string::npos);  // run.sh, note.txt, .tsumignore
  // -f follows until the run has ended: every line, in order.
  auto logs = s.cli({"runs", "logs", "1", "-f"});
  CAPTURE(logs.err);
  CHECK(logs.code == 0);
  CAPTURE(logs.out);
  const auto hello = logs.out.find("[a1n0] hello from the folder\n[a1n0] a note\n");
  CHECK(hello != std::string::npos);
  CHECK(logs.out.find("[a1n0] step 1\n[a1n0] step 2\n[a1n0] step 3\n") > hello);
  CHECK(logs.out.find("big.bin") == std::string::npos);     // left out by .tsumignore
  CHECK(logs.out.find("__pycache__") == std::string::npos);
  CHECK(logs.out.find(".git ") == std::string::npos);        // .git/ is never sent
  CHECK(logs.out.find("[w1] tsum-agent: warming this machine's cache") < hello);
  auto run = json::parse(s.cli({"runs", "list", "--json"}).out)["runs"][0];
  CHECK(run["status"] == "done");
  // The same folder again: the daemon has it, nothing is uploaded; plain `runs logs` prints what is held.
  auto again = s.cli({"experiment", "create", "-f", spec});
  CHECK(again.code == 0);
  CHECK(again.err.find(", already on the daemon as sha256:") != std::string::npos);
  auto held = s.cli({"runs", "logs", "1", "--json"});
  CHECK(held.code == 0);
  CHECK(held.out.find("\"text\":\"step 3\"") != std::string::npos);
  CHECK(s.cli({"runs", "logs", "99"}).code == 3);
  CHECK(s.cli({"runs", "logs", "x"}).code == 2);
}
