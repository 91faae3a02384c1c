#include "billing/plan_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "billing/prices/rule_book.h"

namespace tsum::billing {

using nlohmann::json;

namespace {

const std::vector<std::string> kRequired = {"config",  "provider", "instance_type", "cores", "gpus",
                                            "price_per_hour", "startup", "install", "load_data", "start",
                                            "learn", "verify", "save", "poweroff"};
const std::set<std::string> kOptional = {"gpu_type",    "cpu_family", "family",     "memory_gib", "nodes",
                                         "cpu_model",   "image_cached", "currency", "epochs_done", "images_done"};

// Columns of `tsumd experiment export ID --format csv` that the plan does not read: the export pipes straight in.
// "status" is read: a run that is not done is skipped.
bool export_only(const std::string& name) {
  static const std::set<std::string> kNames = {"run_id", "experiment_id", "config_index", "runtime", "workload",
                                               "repetition", "status", "reason", "t_sum", "test_accuracy",
                                               "images_per_s"};
  if (kNames.contains(name)) return true;
  for (const char* prefix : {"billed_s_", "cost_", "gpu_", "infer_b", "serve_"})
    if (name.starts_with(prefix)) return true;
  for (const char* suffix : {"_min", "_avg", "_max"})
    if (name.ends_with(suffix)) return true;
  return false;
}

std::string expected_columns() {
  std::string out = "a runs CSV has the columns ";
  for (size_t i = 0; i < kRequired.size(); ++i) out += (i ? ", " : "") + kRequired[i];
  out += " (optional: ";
  bool first = true;
  for (const auto& name : kOptional) out += (std::exchange(first, false) ? "" : ", ") + name;
  return out + "), as `tsumd experiment export ID --format csv` writes them";
}

Error at_line(int line, const std::string& what) {
  return make_error(Code::invalid_argument, "csv line " + std::to_string(line) + ": " + what);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits one line into fields; double quotes group a field and "" inside them is a quote.
Result<std::vector<std::string>> split(std::string_view line, int line_no) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"') {
      quoted = was_quoted = true;
    } else if (c == ',') {
      out.push_back(was_quoted ? cur : std::string(trim(cur)));
      cur.clear();
      was_quoted = false;
    } else {
      cur += c;
    }
  }
  if (quoted) return at_line(line_no, "unterminated quoted field");
  out.push_back(was_quoted ? cur : std::string(trim(cur)));
  return out;
}

Result<double> number(const std::string& text, const std::string& column, int line) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v))
    return at_line(line, "column '" + column + "': '" + text + "' is not a number");
  if (v < 0) return at_line(line, "column '" + column + "': must be >= 0, got " + text);
  return v;
}

Result<int> count(const std::string& text, const std::string& column, int line) {
  auto v = number(text, column, line);
  if (!v) return v.error();
  if (*v != std::floor(*v) || *v > 1e6) return at_line(line, "column '" + column + "': must be a whole number, got " + text);
  return static_cast<int>(*v);
}

Result<bool> flag(const std::string& text, int line) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false" || text.empty()) return false;
  return at_line(line, "column 'image_cached': use 0, 1, true or false, got '" + text + "'");
}

Result<std::map<std::string, size_t>> read_header(const std::vector<std::string>& fields, int line) {
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& name = fields[i];
    if (std::find(kRequired.begin(), kRequired.end(), name) == kRequired.end() && !kOptional.contains(name) &&
        !export_only(name))
      return at_line(line, "unknown header column '" + name + "': " + expected_columns());
    if (!col.emplace(name, i).second) return at_line(line, "header column '" + name + "' appears twice");
  }
  for (const auto& name : kRequired)
    if (!col.contains(name)) return at_line(line, "header is missing column '" + name + "': " + expected_columns());
  return col;
}

Result<CsvRun> read_row(const std::vector<std::string>& f, const std::map<std::string, size_t>& col, int line) {
  auto get = [&](const std::string& name) -> std::string {
    auto it = col.find(name);
    return it == col.end() ? std::string() : f[it->second];
  };
  CsvRun row;
  row.line = line;
  auto& cfg = row.run.cfg;
  cfg.config = get("config");
  cfg.provider = get("provider");
  cfg.instance_type = get("instance_type");
  cfg.gpu_type = get("gpu_type");
  cfg.cpu_family = get("cpu_family");
  if (!get("family").empty()) {
    if (!cfg.cpu_family.empty() && cfg.cpu_family != get("family"))
      return at_line(line, "columns 'family' and 'cpu_family' disagree (one names the other)");
    cfg.cpu_family = get("family");
  }
  cfg.cpu_model = get("cpu_model");
  row.currency = get("currency");
  for (const char* name : {"config", "provider"})
    if (get(name).empty()) return at_line(line, "column '" + std::string(name) + "' is empty");
  auto cores = count(get("cores"), "cores", line);
  if (!cores) return cores.error();
  auto gpus = count(get("gpus"), "gpus", line);
  if (!gpus) return gpus.error();
  auto price = number(get("price_per_hour"), "price_per_hour", line);
  if (!price) return price.error();
  auto cached = flag(get("image_cached"), line);
  if (!cached) return cached.error();
  if (!get("memory_gib").empty()) {
    auto mem = number(get("memory_gib"), "memory_gib", line);
    if (!mem) return mem.error();
    cfg.memory_gib = *mem;
  }
  if (!get("nodes").empty()) {
    auto nodes = count(get("nodes"), "nodes", line);
    if (!nodes) return nodes.error();
    if (*nodes < 1) return at_line(line, "column 'nodes': must be >= 1");
    cfg.nodes = *nodes;
  }
  cfg.cores = *cores;
  cfg.gpus = *gpus;
  cfg.image_cached = *cached;
  row.price_per_hour = *price;
  for (int ph = 0; ph < 8; ++ph) {
    std::string name(kPhaseNames[ph]);
    auto v = number(get(name), name, line);
    if (!v) return v.error();
    row.run.phases[ph] = *v;
  }
  for (auto [name, dst] : {std::pair{"epochs_done", &row.run.epochs_done}, std::pair{"images_done", &row.run.images_done}}) {
    if (get(name).empty()) continue;
    auto v = number(get(name), name, line);
    if (!v) return v.error();
    if (*v == 0) return at_line(line, "column '" + std::string(name) + "': must be > 0 when given");
    *dst = *v;
  }
  return row;
}

// Rows of one config must describe the same machine at the same price.
Status check_consistent(const std::vector<CsvRun>& rows) {
  std::map<std::string, const CsvRun*> first;
  for (const auto& r : rows) {
    auto [it, fresh] = first.emplace(r.run.cfg.config, &r);
    if (fresh) continue;
    const auto& a = it->second->run.cfg;
    const auto& b = r.run.cfg;
    bool same = a.provider == b.provider && a.instance_type == b.instance_type && a.cores == b.cores &&
                a.gpus == b.gpus && a.gpu_type == b.gpu_type && a.cpu_family == b.cpu_family &&
                a.memory_gib == b.memory_gib && a.nodes == b.nodes &&
                it->second->price_per_hour == r.price_per_hour && it->second->currency == r.currency;
    if (!same)
      return at_line(r.line, "config '" + b.config + "' differs from its row on line " +
                                 std::to_string(it->second->line) + " (provider, instance, cores, gpus, family, memory, nodes or price)");
  }
  return {};
}

Result<BillingRule> rule_for(const CsvRun& r, const CsvPlanOptions& opt) {
  if (!opt.billing.empty()) return parse_rule(opt.billing, opt.user_rules);
  if (auto rule = rule_for_provider(r.run.cfg.provider, opt.user_rules)) return *rule;
  return parse_rule("per_second_60s_min", opt.user_rules);
}

}  // namespace

Result<std::vector<CsvRun>> parse_runs_csv(std::string_view text) {
  std::vector<CsvRun> rows;
  std::optional<std::map<std::string, size_t>> col;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    auto fields = split(line, line_no);
    if (!fields) return fields.error();
    if (!col) {
      auto header = read_header(*fields, line_no);
      if (!header) return header.error();
      col = std::move(*header);
      continue;
    }
    if (fields->size() != col->size())
      return at_line(line_no, "expected " + std::to_string(col->size()) + " fields, got " + std::to_string(fields->size()));
    if (auto st = col->find("status"); st != col->end() && (*fields)[st->second] != "done") continue;
    auto row = read_row(*fields, *col, line_no);
    if (!row) return row.error();
    rows.push_back(std::move(*row));
  }
  if (!col) return make_error(Code::invalid_argument, "csv: empty (no header line)");
  if (rows.empty()) return make_error(Code::invalid_argument, "csv: a header but no measured runs");
  if (auto s = check_consistent(rows); !s) return s.error();
  return rows;
}

Result<json> plan_from_csv(std::string_view csv_text, const PlanRequest& req, const CsvPlanOptions& opt) {
  auto rows = parse_runs_csv(csv_text);
  if (!rows) return rows.error();
  std::vector<MeasuredRun> history;
  std::vector<PlanCandidate> candidates;
  std::set<std::string> seen;
  for (const auto& r : *rows) {
    history.push_back(r.run);
    if (!seen.insert(r.run.cfg.config).second) continue;
    auto rule = rule_for(r, opt);
    if (!rule) return rule.error();
    candidates.push_back({r.run.cfg, r.price_per_hour, r.currency.empty() ? opt.currency : r.currency, *rule});
  }
  auto predictor = Predictor::learn(history, opt.workload, opt.predictor);
  if (!predictor) return predictor.error();
  auto plan = make_plan(*predictor, candidates, req);
  if (!plan) return plan.error();
  json out = plan_to_json(*plan);
  out["runs"] = rows->size();
  return out;
}

}  // namespace tsum::billing
