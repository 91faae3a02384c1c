#include "billing/prices/rule_book.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/json_util.h"

namespace tsum::billing {

using nlohmann::json;

namespace {

const std::set<std::string> kFields = {"name",      "provider", "step_s",        "min_s",  "cap_hours", "clock_hour",
                                       "round",     "source",   "stopped_bills", "as_of",  "note"};

bool valid_name(const std::string& n) {
  if (n.empty() || n.starts_with("step")) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool valid_date(const std::string& d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (d[i] < '0' || d[i] > '9') return false;
  return true;
}

// The error prefix for entry i: "rules[3] (hetzner): ".
std::string where(size_t i, const json& e) {
  std::string name = e.is_object() && e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
  return "rules[" + std::to_string(i) + "]" + (name.empty() ? "" : " (" + name + ")") + ": ";
}

Result<double> number_field(const json& e, const char* key, const std::string& at) {
  if (!e[key].is_number()) return make_error(Code::invalid_argument, at + "'" + key + "' must be a number");
  double v = e[key].get<double>();
  if (!std::isfinite(v)) return make_error(Code::invalid_argument, at + "'" + key + "' must be finite");
  return v;
}

Result<std::string> string_field(const json& e, const char* key, const std::string& at, bool required) {
  if (!e.contains(key)) {
    if (required) return make_error(Code::invalid_argument, at + "missing '" + key + "'");
    return std::string();
  }
  if (!e[key].is_string()) return make_error(Code::invalid_argument, at + "'" + key + "' must be a string");
  return e[key].get<std::string>();
}

Result<bool> bool_field(const json& e, const char* key, const std::string& at) {
  if (!e.contains(key)) return false;
  if (!e[key].is_boolean()) return make_error(Code::invalid_argument, at + "'" + key + "' must be true or false");
  return e[key].get<bool>();
}

Status check_fields(const json& e, const std::string& at) {
  if (!e.is_object()) return make_error(Code::invalid_argument, at + "each rule must be an object");
  for (const auto& [key, _] : e.items())
    if (!kFields.contains(key))
      return make_error(Code::invalid_argument, at + "unknown field '" + key +
                                                    "' (known: name, provider, step_s, min_s, cap_hours, clock_hour, "
                                                    "round, stopped_bills, source, as_of, note)");
  return {};
}

Status parse_numbers(const json& e, const std::string& at, BillingRule& r) {
  if (!e.contains("step_s")) return make_error(Code::invalid_argument, at + "missing 'step_s'");
  auto step = number_field(e, "step_s", at);
  if (!step) return step.error();
  if (*step <= 0) return make_error(Code::invalid_argument, at + "'step_s' must be > 0, got " + e["step_s"].dump());
  r.step_s = *step;
  if (e.contains("min_s")) {
    auto min = number_field(e, "min_s", at);
    if (!min) return min.error();
    if (*min < 0) return make_error(Code::invalid_argument, at + "'min_s' must be >= 0, got " + e["min_s"].dump());
    r.min_s = *min;
  }
  if (e.contains("cap_hours") && !e["cap_hours"].is_null()) {
    auto cap = number_field(e, "cap_hours", at);
    if (!cap) return cap.error();
    if (*cap <= 0)
      return make_error(Code::invalid_argument, at + "'cap_hours' must be > 0 or null, got " + e["cap_hours"].dump());
    r.cap_hours = *cap;
  }
  return {};
}

Status parse_flags(const json& e, const std::string& at, BillingRule& r) {
  auto clock = bool_field(e, "clock_hour", at);
  if (!clock) return clock.error();
  auto stopped = bool_field(e, "stopped_bills", at);
  if (!stopped) return stopped.error();
  auto round = string_field(e, "round", at, false);
  if (!round) return round.error();
  if (!round->empty() && *round != "up" && *round != "down")
    return make_error(Code::invalid_argument, at + "'round' must be \"up\" or \"down\", got \"" + *round + "\"");
  r.clock_hour = *clock;
  r.stopped_bills = *stopped;
  r.round_down = *round == "down";
  if (r.clock_hour && r.round_down)
    return make_error(Code::invalid_argument, at + "a clock_hour rule bills every started step; it cannot round down");
  return {};
}

Result<BillingRule> parse_entry(size_t i, const json& e) {
  const std::string at = where(i, e);
  if (auto s = check_fields(e, at); !s) return s.error();
  BillingRule r;
  auto name = string_field(e, "name", at, true);
  if (!name) return name.error();
  if (!valid_name(*name))
    return make_error(Code::invalid_argument,
                      at + "'name' must be lowercase letters, digits and '_' and not start with \"step\", got \"" +
                          *name + "\"");
  r.name = *name;
  for (auto [key, dst, required] : {std::tuple{"provider", &r.provider, false}, std::tuple{"source", &r.source, true},
                                    std::tuple{"as_of", &r.as_of, true}, std::tuple{"note", &r.note, false}}) {
    auto v = string_field(e, key, at, required);
    if (!v) return v.error();
    *dst = *v;
  }
  if (r.source.empty()) return make_error(Code::invalid_argument, at + "'source' must not be empty");
  if (!valid_date(r.as_of))
    return make_error(Code::invalid_argument, at + "'as_of' must be a YYYY-MM-DD date, got \"" + r.as_of + "\"");
  if (auto s = parse_numbers(e, at, r); !s) return s.error();
  if (auto s = parse_flags(e, at, r); !s) return s.error();
  return r;
}

json rule_json(const BillingRule& r) {
  return json{{"name", r.name},
              {"provider", r.provider},
              {"step_s", r.step_s},
              {"min_s", r.min_s},
              {"cap_hours", r.cap_hours ? json(*r.cap_hours) : json(nullptr)},
              {"clock_hour", r.clock_hour},
              {"round", r.round_down ? "down" : "up"},
              {"stopped_bills", r.stopped_bills},
              {"source", r.source},
              {"as_of", r.as_of},
              {"note", r.note}};
}

struct Shipped {
  std::vector<BillingRule> rules;
  Status status;
};

const Shipped& shipped() {
  static const Shipped kShipped = [] {
    auto text = find_embedded(embedded_rules(), "rules.json");
    if (text.empty()) return Shipped{{}, make_error(Code::internal, "rules.json is not compiled in")};
    auto parsed = parse_rules(text);
    if (!parsed) return Shipped{{}, make_error(Code::internal, "shipped rules.json: " + parsed.error().detail)};
    return Shipped{std::move(*parsed), {}};
  }();
  return kShipped;
}

}  // namespace

Result<std::vector<BillingRule>> parse_rules(std::string_view json_text) {
  auto doc = parse_json_safely(json_text);
  if (!doc) return make_error(Code::invalid_argument, "rules: not valid JSON");
  if (!doc->is_object() || !doc->contains("rules") || !(*doc)["rules"].is_array())
    return make_error(Code::invalid_argument, "rules: expected an object {\"rules\": [...]}");
  for (const auto& [key, _] : doc->items())
    if (key != "rules" && key != "note")
      return make_error(Code::invalid_argument, "rules: unknown top-level field '" + key + "'");
  std::vector<BillingRule> out;
  std::set<std::string> names;
  const auto& arr = (*doc)["rules"];
  for (size_t i = 0; i < arr.size(); ++i) {
    auto r = parse_entry(i, arr[i]);
    if (!r) return r.error();
    if (!names.insert(r->name).second)
      return make_error(Code::invalid_argument, where(i, arr[i]) + "duplicate rule name '" + r->name + "'");
    out.push_back(std::move(*r));
  }
  return out;
}

std::string rules_to_json(std::span<const BillingRule> rules) {
  json arr = json::array();
  for (const auto& r : rules) arr.push_back(rule_json(r));
  return json{{"rules", arr}}.dump(2);
}

const std::vector<BillingRule>& shipped_rules() { return shipped().rules; }

Status shipped_rules_status() { return shipped().status; }

Result<std::vector<BillingRule>> load_rules_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Code::not_found, "rules file '" + path + "' cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  auto rules = parse_rules(text.str());
  if (!rules) return make_error(rules.error().code, path + ": " + rules.error().detail);
  return rules;
}

std::optional<BillingRule> rule_for_provider(std::string_view provider, std::span<const BillingRule> extra) {
  if (provider.empty()) return std::nullopt;
  for (const auto& r : extra)
    if (r.provider == provider) return r;
  for (const auto& r : shipped_rules())
    if (r.provider == provider) return r;
  return std::nullopt;
}

}  // namespace tsum::billing
