#include "daemon/experiments/experiment_spec.h"

#include <algorithm>
#include <tuple>
#include <cmath>
#include <initializer_list>
#include <set>

#include "common/json_util.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

Error bad(std::string what) { return make_error(Code::invalid_argument, std::move(what)); }

std::optional<Error> reject_unknown(const json& obj, std::string_view where,
                                    std::initializer_list<std::string_view> known) {
  for (const auto& [key, _] : obj.items()) {
    bool ok = false;
    for (auto k : known) ok = ok || k == key;
    if (!ok) return bad("unknown field '" + std::string(where) + key + "'");
  }
  return std::nullopt;
}

// An integer field in [lo, hi]; absent gives nullopt.
Result<std::optional<int>> int_field(const json& obj, const char* key, std::string_view where, int lo, int hi) {
  if (!obj.contains(key) || obj[key].is_null()) return std::optional<int>{};
  const json& v = obj[key];
  if (!v.is_number_integer()) return bad("'" + std::string(where) + key + "' must be an integer");
  auto n = v.get<int64_t>();
  if (n < lo || n > hi)
    return bad("'" + std::string(where) + key + "' must be between " + std::to_string(lo) + " and " +
               std::to_string(hi) + ", got " + std::to_string(n));
  return std::optional<int>(static_cast<int>(n));
}

Result<std::string> string_field(const json& obj, const char* key, std::string_view where, bool required,
                                 std::string fallback = "") {
  if (!obj.contains(key)) {
    if (required) return bad("missing field '" + std::string(where) + key + "'");
    return fallback;
  }
  if (!obj[key].is_string()) return bad("'" + std::string(where) + key + "' must be a string");
  auto s = obj[key].get<std::string>();
  if (s.size() > kMaxNameLength)
    return bad("'" + std::string(where) + key + "' is longer than " + std::to_string(kMaxNameLength) + " characters");
  return s;
}

// A field that is one value or a non-empty array of them, as strings (integers are written out).
Result<std::vector<std::string>> one_or_many(const json& c, const char* key, const std::string& where, bool integer) {
  std::string name = "'" + where + "." + key + "'";
  json values = c[key].is_array() ? c[key] : json::array({c[key]});
  if (values.empty()) return bad(name + " must not be an empty list");
  std::vector<std::string> out;
  for (const auto& v : values) {
    if (integer) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 4096)
        return bad(name + " must be a positive integer or a list of them");
      out.push_back(std::to_string(v.get<int64_t>()));
    } else {
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 200)
        return bad(name + " must be a string or a list of strings");
      out.push_back(v.get<std::string>());
    }
  }
  return out;
}

// A field that names one of `allowed` (or a list of them); absent: the first of them.
Result<std::vector<std::string>> one_of(const json& c, const char* field, const std::string& where,
                                        const std::vector<std::string>& allowed) {
  if (!c.contains(field)) return std::vector<std::string>{allowed.front()};
  auto values = one_or_many(c, field, where, false);
  if (!values) return values.error();
  for (const auto& x : *values)
    if (std::find(allowed.begin(), allowed.end(), x) == allowed.end()) {
      std::string names;
      for (std::size_t i = 0; i < allowed.size(); ++i)
        names += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + ("\"" + allowed[i] + "\"");
      return bad("'" + where + "." + field + "' must be " + names + ", got '" + x + "'");
    }
  return values;
}

// A spot config's "spot_recovery" (`c` has it; `markets` are the config's).
Result<RunConfig::SpotRecovery> parse_spot_recovery(const json& c, const std::string& where,
                                                   const std::vector<std::string>& markets) {
  RunConfig::SpotRecovery recovery;
  const json& r = c["spot_recovery"];
  const std::string at = where + ".spot_recovery";
  if (!r.is_object()) return bad("'" + at + "' must be an object");
  if (std::find(markets.begin(), markets.end(), "spot") == markets.end())
    return bad("'" + at + "' is for spot runs: set '" + where + ".market' to \"spot\"");
  if (auto e = reject_unknown(r, at + ".", {"max_interruptions", "on_demand_after", "checkpoint_every_s", "zones",
                                           "policy", "max_price"}))
    return *e;
  if (r.contains("zones")) {
    const json& z = r["zones"];
    const auto zone_ok = [](const json& v) {
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 63) return false;
      for (char ch : v.get<std::string>())
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-') return false;
      return true;
    };
    if (!z.is_array() || z.empty() || z.size() > 16 || !std::all_of(z.begin(), z.end(), zone_ok))
      return bad("'" + at + ".zones' must be a list of 1 to 16 zone names (letters, digits, -), e.g. "
                 "[\"us-central1-a\", \"us-central1-b\"]");
    recovery.zones = z.get<std::vector<std::string>>();
  }
  if (r.contains("policy")) {
    const json& p = r["policy"];
    if (!p.is_string() || (p != "zone" && p != "region" && p != "cloud"))
      return bad("'" + at + ".policy' must be \"zone\" (the same offer, in the next of zones), \"region\" (the "
                 "provider's offer in any configured region) or \"cloud\" (any configured spot provider's offer that "
                 "fits the run)");
    recovery.policy = p.get<std::string>();
  }
  if (!recovery.zones.empty() && recovery.policy != "zone")
    return bad("'" + at + ".zones' goes with policy \"zone\"; policy \"" + recovery.policy +
               "\" picks each attempt's region and lets the cloud pick its zone");
  if (r.contains("max_price")) {
    const json& m = r["max_price"];
    if (!m.is_number() || !std::isfinite(m.get<double>()) || m.get<double>() <= 0 || m.get<double>() > 1e6)
      return bad("'" + at + ".max_price' must be a price per machine-hour above 0 and at most 1e6, in the run's "
                 "currency");
    recovery.max_price = m.get<double>();
  }
  for (auto [key, field, lo, hi] : {std::tuple{"max_interruptions", &recovery.max_interruptions, 0, 100},
                                    std::tuple{"on_demand_after", &recovery.on_demand_after, 0, 100},
                                    std::tuple{"checkpoint_every_s", &recovery.checkpoint_every_s, 1, 86400}}) {
    if (!r.contains(key)) continue;
    if (!r[key].is_number_integer() || r[key].get<int64_t>() < lo || r[key].get<int64_t>() > hi)
      return bad("'" + at + "." + key + "' must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    *field = r[key].get<int>();
  }
  return recovery;
}

// One entry of "configs", expanded as a product over its list-valued fields.
// A serving workload's runs are two machines each, the server and its load client: nodes 2 (given or not).
Result<std::vector<RunConfig>> expand_config(const json& c, const std::string& where, bool serve) {
  if (!c.is_object()) return bad("'" + where + "' must be an object");
  if (auto e = reject_unknown(c, where + ".", {"provider", "instance_type", "cores", "runtime", "nodes", "dist", "market",
                                              "spot_recovery"}))
    return *e;
  auto provider = string_field(c, "provider", where + ".", true);
  if (!provider) return provider.error();
  if (c.contains("instance_type") == c.contains("cores"))
    return bad("'" + where + "' needs exactly one of 'instance_type' and 'cores'");
  std::vector<std::string> types;
  if (c.contains("cores")) {
    if (*provider != "local")
      return bad("'" + where + ".cores' works for the local provider only; name an 'instance_type'");
    auto cores = one_or_many(c, "cores", where, true);
    if (!cores) return cores.error();
    for (const auto& n : *cores) types.push_back("local-" + n + "c");
  } else {
    auto t = one_or_many(c, "instance_type", where, false);
    if (!t) return t.error();
    types = std::move(*t);
  }
  auto runtimes = one_of(c, "runtime", where, {"native", "docker"});
  if (!runtimes) return runtimes.error();
  std::vector<std::string> nodes = {serve ? "2" : "1"};
  if (serve && ((c.contains("nodes") && c["nodes"] != 2) || c.contains("dist")))
    return bad("'" + where + "': a serving run is two machines, the server and its load client: 'nodes' is 2 and "
               "there is no 'dist'");
  if (c.contains("nodes") && !serve) {
    auto n = one_or_many(c, "nodes", where, true);
    if (!n) return n.error();
    for (const auto& x : *n)
      if (std::stoi(x) > kMaxNodes)
        return bad("'" + where + ".nodes' must be at most " + std::to_string(kMaxNodes) + ", got " + x);
    nodes = std::move(*n);
  }
  auto dists = one_of(c, "dist", where, {"ring", "ps", "ps-async"});
  if (!dists) return dists.error();
  auto markets = one_of(c, "market", where, {"on-demand", "spot"});
  if (!markets) return markets.error();
  RunConfig::SpotRecovery recovery;
  if (c.contains("spot_recovery")) {
    auto parsed = parse_spot_recovery(c, where, *markets);
    if (!parsed) return parsed.error();
    recovery = std::move(*parsed);
  }
  std::vector<RunConfig> out;
  for (const auto& t : types)
    for (const auto& r : *runtimes)
      for (const auto& n : nodes)
        for (const auto& d : *dists)
          for (const auto& m : *markets) {
            // One machine has no peers: its dist is moot, so nodes [1, 2] × dist [ring, ps] is 3 configs, not 4.
            if (n == "1" && d != dists->front()) continue;
            out.push_back({*provider, t, r, std::stoi(n), n == "1" ? "ring" : d, m,
                           m == "spot" ? recovery : RunConfig::SpotRecovery{}});
          }
  return out;
}

}  // namespace

json ExperimentSpec::to_json() const {
  json cfgs = json::array();
  const bool serve = !workloads.empty() && workloads.front().kind == "serve";  // two machines, no dist
  for (const auto& c : configs) {
    json cfg = {{"provider", c.provider}, {"instance_type", c.instance_type}, {"runtime", c.runtime}};
    if (c.nodes > 1) cfg["nodes"] = c.nodes;
    if (c.nodes > 1 && !serve) cfg["dist"] = c.dist;
    if (c.market != "on-demand") cfg["market"] = c.market;
    if (c.market == "spot")
      cfg["spot_recovery"] = {{"max_interruptions", c.spot_recovery.max_interruptions},
                              {"on_demand_after", c.spot_recovery.on_demand_after},
                              {"checkpoint_every_s", c.spot_recovery.checkpoint_every_s}};
    if (c.market == "spot" && !c.spot_recovery.zones.empty()) cfg["spot_recovery"]["zones"] = c.spot_recovery.zones;
    if (c.market == "spot" && c.spot_recovery.policy != "zone") cfg["spot_recovery"]["policy"] = c.spot_recovery.policy;
    if (c.market == "spot" && c.spot_recovery.max_price) cfg["spot_recovery"]["max_price"] = *c.spot_recovery.max_price;
    cfgs.push_back(std::move(cfg));
  }
  json rules = json::array();
  for (const auto& r : billing) rules.push_back(r.name);
  json out = {{"name", name}, {"workload", workload_request}, {"configs", cfgs}, {"repetitions", repetitions},
              {"billing", rules}};
  if (budget) out["budget"] = *budget;
  if (deadline_s) out["deadline"] = *deadline_s;
  return out;
}

Result<ExperimentSpec> experiment_spec_from_json(const json& j, size_t max_configs) {
  if (!j.is_object()) return bad("the body must be a JSON object");
  if (auto e = reject_unknown(j, "", {"name", "workload", "configs", "repetitions", "billing", "budget", "deadline"}))
    return *e;
  ExperimentSpec spec;
  auto name = string_field(j, "name", "", false, "experiment");
  if (!name) return name.error();
  spec.name = *name;
  if (!j.contains("workload")) return bad("missing field 'workload'");
  const json& workload = j["workload"];
  auto workloads = expand_workload(workload, max_configs, &spec.varied);
  if (!workloads) return workloads.error();
  spec.workloads = std::move(*workloads);
  spec.workload_request = workload;
  // The default data set made explicit where every workload has the same, so the stored spec names what its
  // runs read (a data set in use cannot be deleted) and parses back to the same workloads.
  const std::string& first = spec.workloads.front().dataset;
  if (!workload.contains("dataset") && !first.empty() &&
      std::all_of(spec.workloads.begin(), spec.workloads.end(), [&](const Workload& w) { return w.dataset == first; }))
    spec.workload_request["dataset"] = first;

  if (!j.contains("configs") || !j["configs"].is_array() || j["configs"].empty())
    return bad("'configs' must be a non-empty array");
  for (size_t i = 0; i < j["configs"].size(); ++i) {
    auto expanded = expand_config(j["configs"][i], "configs[" + std::to_string(i) + "]",
                                  spec.workloads.front().kind == "serve");
    if (!expanded) return expanded.error();
    spec.configs.insert(spec.configs.end(), expanded->begin(), expanded->end());
    if (spec.variants() > max_configs)
      return bad("'configs' times the workload's lists expand to more than " + std::to_string(max_configs) +
                 " configurations");
  }
  for (size_t v = 0; v < spec.variants(); ++v)
    if (spec.config_of(v).runtime == "docker" && spec.workload_of(v).image.empty())
      return bad("a docker runtime (configuration " + std::to_string(v / spec.workloads.size()) +
                 ") needs 'workload.image', the registry image built from tsum's Dockerfile");
  for (size_t v = 0; v < spec.variants(); ++v)
    if (spec.config_of(v).nodes > 1 && spec.workload_of(v).kind != "train" && spec.workload_of(v).kind != "serve")
      return bad("'nodes' > 1 (configuration " + std::to_string(v / spec.workloads.size()) +
                 ") trains one model on several machines: a workload of kind '" + spec.workload_of(v).kind +
                 "' runs on one");

  auto reps = int_field(j, "repetitions", "", 1, 100);
  if (!reps) return reps.error();
  spec.repetitions = reps->value_or(kDefaultRepetitions);

  if (j.contains("billing")) {
    if (!j["billing"].is_array() || j["billing"].empty()) return bad("'billing' must be a non-empty array of rules");
    std::set<std::string> seen;
    for (const auto& r : j["billing"]) {
      if (!r.is_string()) return bad("'billing' entries must be strings");
      auto rule = billing::parse_rule(r.get<std::string>());
      if (!rule) return rule.error();
      if (seen.insert(rule->name).second) spec.billing.push_back(*rule);
    }
  } else {
    spec.billing = billing::builtin_rules();
  }
  if (j.contains("budget") && !j["budget"].is_null()) {
    if (!j["budget"].is_number() || !(j["budget"].get<double>() > 0) || !(j["budget"].get<double>() <= kMaxMoney))
      return bad("'budget' must be a number above 0 and at most 1e9 (the experiment's spend cap)");
    spec.budget = j["budget"].get<double>();
  }
  auto deadline = int_field(j, "deadline", "", 1, kMaxDeadlineS);
  if (!deadline) return deadline.error();
  spec.deadline_s = *deadline;
  return spec;
}

Result<ExperimentSpec> parse_experiment_spec(std::string_view body) {
  auto j = parse_json_safely(body);
  if (!j) return bad("malformed JSON");
  return experiment_spec_from_json(*j);
}

}  // namespace tsum::daemon
