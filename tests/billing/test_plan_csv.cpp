#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "billing/plan_cli.h"
#include "billing/plan_csv.h"

using namespace tsum::billing;

namespace {

const std::string kHeader =
    "config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save,poweroff\n";

const std::string kRuns = kHeader +
                          "local-1c,local,local-1c,1,0,0.0425,1,0,2,1,1500,20,1,1\n"
                          "local-1c,local,local-1c,1,0,0.0425,1,0,2,1,1530,20,1,1\n"
                          "local-2c,local,local-2c,2,0,0.085,1,0,2,1,800,12,1,1\n"
                          "local-2c,local,local-2c,2,0,0.085,1,0,2,1,790,12,1,1\n";

std::string csv_error(const std::string& text) {
  auto r = parse_runs_csv(text);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == tsum::Code::invalid_argument);
  return r.error().detail;
}

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& text)
      : path(std::filesystem::temp_directory_path() /
             ("tsum_plan_" + std::to_string(::getpid()) + "_" + std::to_string(std::hash<std::string>{}(text)) + ".csv")) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

int run_cli(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::ostringstream o, e;
  int rc = plan_main(args, o, e);
  out = o.str();
  err = e.str();
  return rc;
}

}  // namespace

TEST_CASE("plan_from_csv ranks the CSV's configs best first") {
  PlanRequest req;
  CsvPlanOptions opt;
  opt.billing = "per_hour";
  auto j = plan_from_csv(kRuns, req, opt);
  REQUIRE(j.ok());
  const auto& ranked = (*j)["ranked"];
  REQUIRE(ranked.size() == 2);
  CHECK(ranked[0]["config"] == "local-1c");
  CHECK(ranked[0]["billed_s"] == 3600.0);
  CHECK(ranked[0]["cost"].get<double>() == doctest::Approx(0.0425));
  CHECK(ranked[0]["reason"] == "per_hour: both bill 1 h; local-1c is half the price");
  CHECK(ranked[0]["t_sum"].get<double>() == doctest::Approx(1541).epsilon(0.01));
  CHECK(ranked[0]["t_sum_p10"].get<double>() < ranked[0]["t_sum"].get<double>());
  CHECK(ranked[0]["confidence"]["runs"] == 2);
  CHECK((*j)["runs"] == 4);
  // Without --billing, a provider without a shipped rule is billed per second after 60 s.
  auto d = plan_from_csv(kRuns, req, {});
  REQUIRE(d.ok());
  CHECK((*d)["ranked"][0]["billing"] == "per_second_60s_min");
}

TEST_CASE("columns may come in any order, with optional ones") {
  std::string text =
      "provider,config,instance_type,cores,gpus,gpu_type,price_per_hour,currency,image_cached,startup,install,load_data,"
      "start,learn,verify,save,poweroff\n"
      "hetzner,a,ccx13,2,0,,0.02,EUR,true,20,10,5,3,900,10,2,8\n"
      "# a comment\n"
      "\n"
      "hetzner,\"b\",ccx23,4,0,,0.039,EUR,1,20,10,5,3,500,10,2,8\n";
  auto j = plan_from_csv(text, {}, {});
  REQUIRE(j.ok());
  CHECK((*j)["ranked"][0]["billing"] == "hetzner");
  CHECK((*j)["ranked"][0]["currency"] == "EUR");
  CHECK((*j)["ranked"][0]["config"] == "a");  // both bill an hour; a is about half the price
}

TEST_CASE("malformed CSV is refused with the line number and what is wrong") {
  CHECK(csv_error("") == "csv: empty (no header line)");
  CHECK(csv_error("\n\n# only a comment\n") == "csv: empty (no header line)");
  CHECK(csv_error(kHeader) == "csv: a header but no measured runs");
  CHECK(csv_error("config,provider,instance_type,cores,gpus,price_per_hour,startup,install,load_data,start,learn,verify,save\n")
            .find("csv line 1: header is missing column 'poweroff'") != std::string::npos);
  CHECK(csv_error("config,provider,instance_type,cores,gpus,price,startup,install,load_data,start,learn,verify,save,poweroff\n")
            .find("csv line 1: unknown header column 'price'") != std::string::npos);
  CHECK(csv_error(kHeader + "a,local,l,1,0,0.1,1,0,2,1,100,2,1\n").find("csv line 2: expected 14 fields, got 13") !=
        std::string::npos);
  CHECK(csv_error(kHeader + "a,local,l,1,0,0.1,1,0,2,1,100,2,1,1\na,local,l,1,0,0.1,1,0,2,1,abc,2,1,1\n")
            .find("csv line 3: column 'learn': 'abc' is not a number") != std::string::npos);
  CHECK(csv_error(kHeader + "a,local,l,1,0,0.1,1,0,2,1,-100,2,1,1\n").find("csv line 2: column 'learn': must be >= 0") !=
        std::string::npos);
  CHECK(csv_error(kHeader + "a,local,l,1.5,0,0.1,1,0,2,1,100,2,1,1\n").find("csv line 2: column 'cores': must be a whole") !=
        std::string::npos);
  CHECK(csv_error(kHeader + "a,local,l,1,0,,1,0,2,1,100,2,1,1\n").find("csv line 2: column 'price_per_hour'") !=
        std::string::npos);
  CHECK(csv_error(kHeader + "\"a,local,l,1,0,0.1,1,0,2,1,100,2,1,1\n").find("csv line 2: unterminated") != std::string::npos);
  CHECK(csv_error(kHeader + "a,local,l,1,0,0.1,1,0,2,1,100,2,1,1\n\na,local,l,1,0,0.2,1,0,2,1,100,2,1,1\n")
            .find("csv line 4: config 'a' differs from its row on line 2") != std::string::npos);
  CHECK(csv_error(kHeader + ",local,l,1,0,0.1,1,0,2,1,100,2,1,1\n").find("csv line 2: column 'config' is empty") !=
        std::string::npos);
}

TEST_CASE("plan_from_csv passes on planner errors") {
  PlanRequest req;
  req.objective = Objective::cost_under_deadline;
  auto j = plan_from_csv(kRuns, req, {});
  REQUIRE_FALSE(j.ok());
  CHECK(j.error().detail.find("deadline") != std::string::npos);
  CsvPlanOptions bad;
  bad.billing = "per_week";
  CHECK_FALSE(plan_from_csv(kRuns, {}, bad).ok());
}

TEST_CASE("plan_main: the tsumd plan command line") {
  TempFile f(kRuns);
  std::string out, err;
  CHECK(run_cli({"--from-csv", f.path.string(), "--billing", "per_hour", "--json"}, out, err) == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["ranked"][0]["config"] == "local-1c");
  CHECK(j["objective"] == "cost");

  CHECK(run_cli({"--from-csv", f.path.string(), "--objective", "cost_under_deadline", "--deadline", "1000", "--json"}, out,
                err) == 0);
  CHECK(nlohmann::json::parse(out)["ranked"][0]["config"] == "local-2c");

  CHECK(run_cli({"--from-csv", f.path.string(), "--objective", "time", "--repetitions", "3"}, out, err) == 0);
  CHECK(out.find("1. local-2c (fresh)") != std::string::npos);

  CHECK(run_cli({"--objective", "cost"}, out, err) == 2);
  CHECK(err.find("--from-csv FILE is required") != std::string::npos);
  CHECK(run_cli({"--from-csv", f.path.string(), "--objective", "cheap"}, out, err) == 2);
  CHECK(err.find("unknown objective 'cheap'") != std::string::npos);
  CHECK(run_cli({"--from-csv", f.path.string(), "--deadline", "soon"}, out, err) == 2);
  CHECK(run_cli({"--from-csv", f.path.string(), "--billing", "per_week"}, out, err) == 2);
  CHECK(run_cli({"--from-csv", f.path.string(), "--frobnicate"}, out, err) == 2);
  CHECK(run_cli({"--from-csv"}, out, err) == 2);
  // Bad input is 2, as for every client command (docs/cli.md): a file that is not there, a CSV that does not parse.
  CHECK(run_cli({"--from-csv", "/nonexistent/runs.csv"}, out, err) == 2);
  CHECK(err.find("cannot read '/nonexistent/runs.csv'") != std::string::npos);
  CHECK(run_cli({"--from-csv", f.path.string(), "--rules", "/nonexistent/rules.json"}, out, err) == 2);

  TempFile bad(kHeader + "a,local,l,1,0,0.1,1,0,2,1,100,2,1\n");
  CHECK(run_cli({"--from-csv", bad.path.string()}, out, err) == 2);
  CHECK(err.find("csv line 2: expected 14 fields, got 13") != std::string::npos);
  CHECK(run_cli({"--help"}, out, err) == 0);
  CHECK(out.find("usage: plan") != std::string::npos);
}
