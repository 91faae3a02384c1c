#include "billing/plan_cli.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "billing/plan_csv.h"
#include "billing/plan_explain.h"
#include "billing/prices/rule_book.h"

namespace tsum::billing {

using nlohmann::json;

namespace {

constexpr int kUsage = 2;   // bad input: a flag, a file that is not there, a CSV or rules file that does not parse
constexpr int kFailed = 1;  // anything else
// The exit code for an error: bad input (invalid_argument, a file not found) is the user's to fix, as every client
// command says (docs/cli.md: 2); anything else failed.
int exit_for(const Error& e) { return e.code == Code::invalid_argument || e.code == Code::not_found ? kUsage : kFailed; }

constexpr const char* kHelp =
    "usage: plan --from-csv FILE [--objective cost|time|cost_under_deadline|budget] [--deadline S]\n"
    "            [--confidence P] [--budget B] [--billing RULE] [--rules FILE] [--repetitions N]\n"
    "            [--packing fresh|packed|best] [--epochs N] [--images-per-epoch N] [--samples N] [--seed N] [--json]\n";

const std::map<std::string, bool> kFlags = {  // flag -> takes a value
    {"--from-csv", true}, {"--objective", true}, {"--deadline", true},         {"--confidence", true},
    {"--budget", true},   {"--billing", true},   {"--rules", true},            {"--repetitions", true},
    {"--packing", true},  {"--epochs", true},    {"--images-per-epoch", true}, {"--samples", true},
    {"--seed", true},     {"--json", false},     {"--help", false}};

struct Args {
  std::map<std::string, std::string> values;
  bool has(const std::string& f) const { return values.contains(f); }
};

Result<Args> parse_args(const std::vector<std::string>& args) {
  Args a;
  for (size_t i = 0; i < args.size(); ++i) {
    auto it = kFlags.find(args[i]);
    if (it == kFlags.end()) return make_error(Code::invalid_argument, "unknown argument '" + args[i] + "'");
    if (a.values.contains(args[i])) return make_error(Code::invalid_argument, args[i] + " given twice");
    if (!it->second) {
      a.values[args[i]] = "";
      continue;
    }
    if (i + 1 >= args.size()) return make_error(Code::invalid_argument, args[i] + " needs a value");
    a.values[args[i]] = args[i + 1];
    ++i;
  }
  return a;
}

Result<double> positive(const Args& a, const std::string& flag, bool allow_zero = false) {
  const std::string& text = a.values.at(flag);
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v) || v < 0 ||
      (!allow_zero && v == 0))
    return make_error(Code::invalid_argument, flag + " must be a number " + (allow_zero ? ">= 0" : "> 0") + ", got '" + text + "'");
  return v;
}

Result<int> whole(const Args& a, const std::string& flag, bool allow_zero = false) {
  auto v = positive(a, flag, allow_zero);
  if (!v) return v.error();
  if (*v != std::floor(*v) || *v > 1e7) return make_error(Code::invalid_argument, flag + " must be a whole number");
  return static_cast<int>(*v);
}

// The file, or standard input for "-" (`tsumd experiment export ID --format csv | tsumd plan --from-csv -`).
Result<std::string> read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Code::not_found, "cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Fills req and opt from the flags other than --from-csv, --rules, --billing and --json.
Status build_request(const Args& a, PlanRequest& req, CsvPlanOptions& opt) {
  if (a.has("--objective")) {
    auto o = parse_objective(a.values.at("--objective"));
    if (!o) return o.error();
    req.objective = *o;
  }
  for (auto [flag, dst] : {std::pair{"--deadline", &req.deadline_s}, std::pair{"--budget", &req.budget}}) {
    if (!a.has(flag)) continue;
    auto v = positive(a, flag, std::string(flag) == "--budget");
    if (!v) return v.error();
    *dst = *v;
  }
  if (a.has("--confidence")) {
    auto v = positive(a, "--confidence");
    if (!v || *v > 1) return make_error(Code::invalid_argument, "--confidence must be in (0, 1]");
    req.deadline_confidence = *v;
  }
  if (a.has("--repetitions")) {
    auto v = whole(a, "--repetitions");
    if (!v) return v.error();
    req.repetitions = *v;
  }
  if (a.has("--packing")) {
    auto p = parse_packing(a.values.at("--packing"));
    if (!p) return p.error();
    req.packing = *p;
  }
  if (a.has("--samples")) {
    auto v = whole(a, "--samples");
    if (!v) return v.error();
    opt.predictor.samples = *v;
  }
  if (a.has("--seed")) {
    auto v = whole(a, "--seed", true);
    if (!v) return v.error();
    req.seed = opt.predictor.seed = static_cast<uint64_t>(*v);
  }
  for (auto [flag, dst] : {std::pair{"--epochs", &opt.workload.epochs}, std::pair{"--images-per-epoch", &opt.workload.images_per_epoch}}) {
    if (!a.has(flag)) continue;
    auto v = positive(a, flag);
    if (!v) return v.error();
    *dst = *v;
  }
  return {};
}

std::string cell(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void print_table(const json& plan, std::ostream& out) {
  out << "objective: " << plan["objective"].get<std::string>() << ", repetitions: " << plan["repetitions"].get<int>()
      << "\n";
  int rank = 0;
  for (const auto& e : plan["ranked"]) {
    std::string label = e["config"].get<std::string>();
    if (e["repetitions"].get<int>() > 1) label += " (" + e["packing"].get<std::string>() + ")";
    out << ++rank << ". " << label << "  t_sum " << cell("%.0f", e["t_sum"].get<double>()) << " s ["
        << cell("%.0f", e["t_sum_p10"].get<double>()) << "-" << cell("%.0f", e["t_sum_p90"].get<double>())
        << "]  billed " << format_duration(e["billed_s"].get<double>()) << " (" << e["billing"].get<std::string>()
        << ")  cost " << format_money(e["cost"].get<double>(), e["currency"].get<std::string>()) << "  "
        << e["confidence"]["basis"].get<std::string>() << "\n   " << e["reason"].get<std::string>() << "\n";
  }
  for (const auto& u : plan["unpredictable"])
    out << "not ranked: " << u["config"].get<std::string>() << ": " << u["why"].get<std::string>() << "\n";
}

}  // namespace

int plan_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto a = parse_args(args);
  if (!a) {
    err << "plan: " << a.error().detail << "\n" << kHelp;
    return kUsage;
  }
  if (a->has("--help")) {
    out << kHelp;
    return 0;
  }
  if (!a->has("--from-csv")) {
    err << "plan: --from-csv FILE is required\n" << kHelp;
    return kUsage;
  }
  PlanRequest req;
  CsvPlanOptions opt;
  if (auto s = build_request(*a, req, opt); !s) {
    err << "plan: " << s.error().detail << "\n";
    return kUsage;
  }
  if (a->has("--rules")) {
    auto rules = load_rules_file(a->values.at("--rules"));
    if (!rules) {
      err << "plan: " << rules.error().detail << "\n";
      return exit_for(rules.error());
    }
    opt.user_rules = std::move(*rules);
  }
  if (a->has("--billing")) {
    opt.billing = a->values.at("--billing");
    if (auto rule = parse_rule(opt.billing, opt.user_rules); !rule) {
      err << "plan: " << rule.error().detail << "\n";
      return kUsage;
    }
  }
  auto text = read_file(a->values.at("--from-csv"));
  if (!text) {
    err << "plan: " << text.error().detail << "\n";
    return exit_for(text.error());
  }
  auto plan = plan_from_csv(*text, req, opt);
  if (!plan) {
    err << "plan: " << plan.error().detail << "\n";
    return exit_for(plan.error());
  }
  if (a->has("--json")) out << plan->dump(2) << "\n";
  else print_table(*plan, out);
  return 0;
}

}  // namespace tsum::billing
