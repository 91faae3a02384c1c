#include "api/routes/plan_route.h"

#include <charconv>
#include <map>
#include <cmath>
#include <set>
#include <sstream>

#include "api/routes/route_helpers.h"
#include "billing/planner.h"
#include "billing/model/predictor.h"
#include "billing/prices/rule_book.h"
#include "billing/serving.h"
#include "common/memory.h"
#include "daemon/runs/admission.h"
#include "daemon/experiments/experiment_spec.h"
#include "daemon/planning/plan_history.h"
#include "daemon/planning/past_runs.h"
#include "daemon/runs/recovery.h"
#include "daemon/planning/spot_risk.h"

namespace tsum::api {

using nlohmann::json;

namespace {

// A numeric query parameter in (0, hi] ([0, hi] when `zero_ok`), a whole number when `integer`; a bad one sets *bad
// to the field and its range.
std::optional<double> number_param(const Request& req, const char* key, double hi, bool integer, std::string* bad,
                                   bool zero_ok = false) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  const bool ok = ec == std::errc() && p == it->second.data() + it->second.size() && (v > 0 || (zero_ok && v == 0)) &&
                  v <= hi && (!integer || v == std::floor(v));
  if (!ok && bad->empty()) {
    std::ostringstream range;
    range << "'" << key << "' must be "
          << (integer ? "a whole number from 1 to " : zero_ok ? "a number from 0 to " : "a number above 0 and at most ")
          << hi << ", got '" << it->second << "'";
    *bad = range.str();
  }
  return ok ? std::optional<double>(v) : std::nullopt;
}

// Whether the plan's runs measured install and load_data alike: {"warm_runs", "cold_runs", "note"}.
json cache_note(const daemon::PlanHistory& h) {
  std::string note = h.cold == 0   ? "every run's install and load_data found the machine warm (its cache, or an image "
                                     "already there): the plan compares them alike"
                     : h.warm == 0 ? "every run's install and load_data downloaded and unpacked (a cold machine): the "
                                     "plan compares them alike"
                                   : std::to_string(h.warm) + " runs found the machine warm and " + std::to_string(h.cold) +
                                         " downloaded (cold): their install and load_data differ for that reason, "
                                         "not for the configuration's";
  return {{"warm_runs", h.warm}, {"cold_runs", h.cold}, {"note", note}};
}

// The query's planning terms (all but experiment and nodes), each checked; invalid_argument says which is wrong.
struct PlanQuery {
  billing::PlanRequest request;
  std::optional<billing::BillingRule> rule_override;  // ?billing=RULE for every candidate
  double prior_rate = billing::kSpotPriorRate;         // spot: interruptions per machine-hour where none were seen
};

Result<PlanQuery> plan_query(const Request& req) {
  PlanQuery q;
  auto objective = billing::parse_objective(req.query.count("objective") ? req.query.at("objective") : "cost");
  if (!objective) return objective.error();
  q.request.objective = *objective;
  std::string bad;
  q.request.deadline_s = number_param(req, "deadline", daemon::kMaxDeadlineS, false, &bad);
  q.request.budget = number_param(req, "budget", daemon::kMaxMoney, false, &bad);
  if (auto reps = number_param(req, "repetitions", 100, true, &bad)) q.request.repetitions = static_cast<int>(*reps);
  if (!bad.empty()) return make_error(Code::invalid_argument, bad);
  if (auto it = req.query.find("billing"); it != req.query.end()) {
    auto r = billing::parse_rule(it->second);
    if (!r) return r.error();
    q.rule_override = *r;
  }
  if (auto it = req.query.find("interruptions_per_hour"); it != req.query.end()) {
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), q.prior_rate);
    if (ec != std::errc() || p != it->second.data() + it->second.size() || !(q.prior_rate >= 0) || q.prior_rate > 3600)
      return make_error(Code::invalid_argument,
                        "'interruptions_per_hour' must be a number from 0 to 3600 (the prior rate at which a cloud "
                        "takes a spot machine back, per machine-hour; default " +
                            std::to_string(billing::kSpotPriorRate).substr(0, 4) + ")");
  }
  return q;
}

// Node counts to plan: ?nodes=1,2,4, else one machine and every count the history measured.
Result<std::set<int>> node_counts(const Request& req, const std::vector<billing::MeasuredRun>& runs) {
  std::set<int> counts = {1};
  for (const auto& r : runs) counts.insert(r.cfg.nodes);
  auto it = req.query.find("nodes");
  if (it == req.query.end()) return counts;
  counts.clear();
  std::stringstream list(it->second);
  for (std::string item; std::getline(list, item, ',');) {
    int n = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || end != item.data() + item.size() || n < 1 || n > daemon::kMaxNodes)
      return make_error(Code::invalid_argument, "'nodes' must be a comma-separated list of node counts from 1 to " +
                                                    std::to_string(daemon::kMaxNodes) + ", e.g. nodes=1,2,4");
    counts.insert(n);
  }
  return counts;
}

// Every offer of every provider at each node count, and its spot twin where the cloud sells spare capacity and
// quotes its price, predicted from the same machine's runs and priced with its interruptions under `recovery`.
// An offer in a region other than its provider's first is its own candidate ("aws/c5.large@us-west-2"),
// predicted from the type's runs. A spot twin is risk-rated by its own region's interruptions (n nodes: n times
// the rate, as any node's interruption stops the run), and names the spot_recovery.policy whose next machines
// cost least, with the offer that policy would take.
boost::asio::awaitable<Result<std::vector<billing::PlanCandidate>>> plan_candidates(
    daemon::ProviderRegistry& providers, daemon::Store& store, const PlanQuery& q, const std::set<int>& counts,
    const daemon::RunConfig::SpotRecovery& recovery, const std::vector<double>& restarts) {
  std::vector<billing::PlanCandidate> candidates;
  std::vector<std::pair<providers::Provider*, std::vector<providers::Offer>>> listed;
  for (auto* p : providers.all()) {
    const providers::Requirements any;
    auto offers = co_await p->offers(any);
    if (offers) listed.emplace_back(p, std::move(*offers));  // a dead provider offers nothing; the others are planned
  }
  // Each spot offer's interruption rate, from its own region's attempts (asked once per offer).
  std::map<std::string, billing::SpotRate> rates;
  auto rate_of = [&](const providers::Offer& o) -> Result<billing::SpotRate> {
    const std::string key = daemon::offer_key(o, "spot");
    if (auto it = rates.find(key); it != rates.end()) return it->second;
    auto seen = store.spot_exposure(o.provider, o.instance_type, o.region);
    if (!seen) return seen.error();
    return rates[key] = billing::estimate_spot_rate(seen->interruptions, seen->machine_hours, q.prior_rate);
  };
  for (const auto& [p, offers] : listed) {
    auto rule = q.rule_override ? q.rule_override : billing::rule_for_provider(p->name());
    if (!rule) rule = billing::parse_rule("per_second_60s_min").value();
    const std::string home = offers.empty() ? "" : offers.front().region;
    for (const auto& o : offers) {
      if (o.vcpus <= 0 && o.gpus <= 0) continue;  // unknown hardware (a byo "any" machine): nothing to predict
      for (int n : counts) {
        // Named machines (ssh, byo) and replayed ones (trace) are one of a kind: one node only.
        if (n > 1 && (o.provider == "ssh" || o.provider == "byo" || o.provider == "trace")) continue;
        billing::ConfigSpec cfg = providers::config_spec_of(o);
        const std::string base = o.provider + "/" + o.instance_type + (n > 1 ? "/x" + std::to_string(n) : "");
        cfg.config = base + (o.region != home ? "@" + o.region : "");
        cfg.nodes = n;
        candidates.push_back({.cfg = cfg, .hourly_price = n * o.hourly_price, .currency = o.currency, .rule = *rule,
                              .spot = std::nullopt, .predict_as = cfg.config == base ? "" : base});
        if (!p->capabilities().spot || o.spot_hourly_price <= 0) continue;
        auto seen = store.spot_exposure(o.provider, o.instance_type, o.region);
        if (!seen) co_return seen.error();
        auto model = daemon::spot_model(*seen, recovery, o.provider, n * o.hourly_price, q.prior_rate, restarts);
        if (n > 1) {
          model.rate_per_hour *= n;
          model.rate_basis += "; x" + std::to_string(n) + " nodes: any node's interruption stops the run";
        }
        // The policy whose next machines are expected to cost least: zone (this offer again), region (the
        // type in any of its provider's regions), cloud (any spot offer that fits, in the same currency).
        const double c = model.checkpoint_every_s / 3600, s = model.restart_s.value_or(daemon::kRestartS) / 3600;
        auto hourly = [&](double price, double rate) { return price * (1 + rate * (c / 2 + s)); };
        struct Pick {
          const providers::Offer* offer;
          double price, rate, expected;
        };
        std::optional<Pick> best;
        for (const std::string policy : {"zone", "region", "cloud"}) {
          for (const auto& [q2, others] : listed) {
            const bool same = q2 == p;
            if (!same && (policy != "cloud" || !q2->capabilities().spot)) continue;
            for (const auto& r : others) {
              const bool allowed = same ? r.instance_type == o.instance_type && (policy != "zone" || r.region == o.region)
                                        : daemon::fits(providers::machine_of(o), r) && r.currency == o.currency;
              if (!allowed || r.spot_hourly_price <= 0) continue;
              auto rr = rate_of(r);
              if (!rr) co_return rr.error();
              const double e = hourly(n * r.spot_hourly_price, n * rr->rate_per_hour);
              if (!best || e < best->expected * (1 - 1e-9)) {  // a broader policy only where strictly cheaper
                best = Pick{&r, n * r.spot_hourly_price, n * rr->rate_per_hour, e};
                model.policy = policy;
              }
            }
          }
        }
        if (best) {
          model.recovery_offer = daemon::offer_key(*best->offer, "spot");
          model.recovery_price = best->price;
          model.recovery_rate = best->rate;
        }
        billing::PlanCandidate spot{.cfg = cfg, .hourly_price = n * o.spot_hourly_price, .currency = o.currency,
                                    .rule = *rule, .spot = model, .predict_as = base};
        spot.cfg.config += "/spot";
        candidates.push_back(std::move(spot));
      }
    }
  }
  co_return candidates;
}

// A serving run's server settings, from its workload: max_batch, max_delay_ms, threads (null: the machine's CPUs,
// or their number where the run's machine says it), instances.
json serving_settings(const json& run) {
  const json w = run.value("workload", json::object());
  json s = {{"max_batch", w.value("max_batch", 8)},
            {"max_delay_ms", w.value("max_delay_ms", 0.0)},
            {"threads", nullptr},
            {"instances", w.value("instances", 1)}};
  if (w.contains("threads")) {
    s["threads"] = w["threads"];
  } else if (const json m = run.value("machine", json::object()); m.is_object() && m.contains("vcpus")) {
    s["threads"] = m["vcpus"];
  }
  return s;
}

// ?objective=serve: the experiment's serving workload, priced per million requests from every done run's measured
// curve (billing/serving.h): &p99_ms=L (required), &rate=R (requests/s: the replicas it needs), &hours=H (how long
// the service is up, default a month), &billing=RULE (else each provider's rule); &max_batch=N, &max_delay_ms=MS,
// &threads=N, &instances=N keep only the runs whose server had these settings.
Result<json> serving_plan(daemon::Db& db, const daemon::ExperimentRow& exp, const Request& req) {
  if (exp.spec.workload().kind != "serve")
    return make_error(Code::invalid_argument, "objective=serve plans a serving experiment (workload kind \"serve\"); "
                                              "experiment " + std::to_string(exp.id) + "'s is " +
                                              exp.spec.workload().kind);
  std::string bad;
  billing::ServingRequest q;
  const auto bound = number_param(req, "p99_ms", 3.6e6, false, &bad);
  q.rate = number_param(req, "rate", 1e9, false, &bad);
  if (auto hours = number_param(req, "hours", 87600, false, &bad)) q.period_s = *hours * 3600.0;
  json want = json::object();  // the settings asked for
  for (const char* key : {"max_batch", "threads", "instances"})
    if (auto v = number_param(req, key, 4096, true, &bad)) want[key] = static_cast<std::int64_t>(*v);
  if (auto v = number_param(req, "max_delay_ms", 10000, false, &bad, true)) want["max_delay_ms"] = *v;
  if (!bad.empty()) return make_error(Code::invalid_argument, bad);
  if (!bound)
    return make_error(Code::invalid_argument, "objective=serve needs 'p99_ms', the latency bound in ms; 'rate' "
                                              "(requests/s) and 'hours' are optional; each a positive number");
  q.p99_ms = *bound;
  std::optional<billing::BillingRule> override_rule;
  if (auto it = req.query.find("billing"); it != req.query.end()) {
    auto r = billing::parse_rule(it->second);
    if (!r) return r.error();
    override_rule = *r;
  }
  std::vector<billing::ServingRun> runs;
  auto history = daemon::serving_history(db, exp.spec.workload().to_json());
  if (!history) return history.error();
  for (const json& run : *history) {
    if (run["status"] != "done" || !run["metrics"].contains("serving")) continue;
    billing::ServingRun r;
    const std::string provider = run["config"]["provider"];
    r.config = daemon::measured_config(run);  // the machine and the server's settings the run varied
    r.machine = provider + "/" + run["config"].value("instance_type", std::string());
    r.settings = serving_settings(run);
    bool wanted = true;
    for (const auto& [key, value] : want.items())
      wanted = wanted && r.settings[key].is_number() && r.settings[key].get<double>() == value.get<double>();
    if (!wanted) continue;
    r.hourly_price = run.value("hourly_price", 0.0);
    for (const auto& [_, c] : run["cost"].items()) r.currency = c.value("currency", "");
    auto rule = override_rule ? override_rule : billing::rule_for_provider(provider);
    r.rule = rule ? *rule : billing::parse_rule("per_second_60s_min").value();
    r.levels = billing::serving_levels(run["metrics"]["serving"]);
    if (!r.levels.empty()) runs.push_back(std::move(r));
  }
  if (runs.empty() && !want.empty())
    return make_error(Code::invalid_argument, "no done run of experiment " + std::to_string(exp.id) +
                                                  "'s serving workload with " + want.dump() +
                                                  ": leave out a setting, or run a config with these settings");
  if (runs.empty())
    return make_error(Code::invalid_argument, "no done run of experiment " + std::to_string(exp.id) +
                                                  "'s serving workload yet: run it on at least one config first");
  auto plan = billing::plan_serving(runs, q);
  if (!plan) return plan.error();
  json out = billing::serving_plan_to_json(*plan, q);
  out["experiment_id"] = exp.id;
  out["history_runs"] = runs.size();
  out["settings"] = want;
  return out;
}

}  // namespace

void add_plan_route(Router& router, daemon::Db& db, daemon::Store& store, daemon::Totals& totals,
                    daemon::TokenStore& tokens, daemon::ProviderRegistry& providers) {
  router.add("GET", "/v1/plan", [&db, &store, &totals, &tokens, &providers](Request& req) -> boost::asio::awaitable<Response> {
    const GiveBackMemory trim_after;  // a plan's inputs and predictions, once they are freed (common/memory.h)
    if (auto denied = check_auth(req, tokens)) co_return *denied;
    auto exp_it = req.query.find("experiment");
    int64_t exp_id = 0;
    if (exp_it == req.query.end() ||
        std::from_chars(exp_it->second.data(), exp_it->second.data() + exp_it->second.size(), exp_id).ec !=
            std::errc() || exp_id <= 0)
      co_return unprocessable("'experiment' must name the experiment whose workload to plan, e.g. ?experiment=1");
    auto exp = store.experiment_as_stored(exp_id);
    if (!exp) co_return error_response(exp.error());
    if (!exp->unreadable.empty()) co_return unprocessable(exp->unreadable + ": it cannot be planned");
    // The runs that just finished are settled first, so the plan learns from them too.
    if (auto settled = totals.settle(); !settled) co_return error_response(settled.error());
    if (auto it = req.query.find("objective"); it != req.query.end() && it->second == "serve") {
      auto plan = serving_plan(db, *exp, req);
      if (!plan) co_return plan.error().code == Code::invalid_argument ? unprocessable(plan.error().detail)
                                                                        : from_error(plan.error());
      co_return json_response(200, *plan);
    }
    auto q = plan_query(req);
    if (!q) co_return unprocessable(q.error().detail);
    // The recovery policy of the experiment's spot config, else the defaults a spot config gets.
    daemon::RunConfig::SpotRecovery recovery;
    for (size_t v = 0; v < exp->spec.variants(); ++v)
      if (exp->spec.config_of(v).market == "spot") {
        recovery = exp->spec.config_of(v).spot_recovery;
        break;
      }

    auto past = daemon::plan_history(db, exp->spec.workload().to_json());
    if (!past) co_return error_response(past.error());
    const auto* runs = &past->runs;
    if (runs->empty())
      co_return unprocessable("no done run of experiment " + std::to_string(exp_id) +
                              "'s workload yet: run it on at least one config first");
    billing::Workload wl{.epochs = static_cast<double>(exp->spec.workload().epochs),
                         .images_per_epoch = static_cast<double>(exp->spec.workload().limit.value_or(60000))};
    auto predictor = billing::Predictor::learn(*runs, wl);
    if (!predictor) co_return unprocessable(predictor.error().detail);
    auto counts = node_counts(req, *runs);
    if (!counts) co_return unprocessable(counts.error().detail);
    auto candidates = co_await plan_candidates(providers, store, *q, *counts, recovery, past->restarts);
    if (!candidates) co_return error_response(candidates.error());
    auto plan = billing::make_plan(*predictor, *candidates, q->request);
    if (!plan) co_return from_error(plan.error());
    json out = billing::plan_to_json(*plan);
    out["experiment_id"] = exp_id;
    out["history_runs"] = runs->size();
    out["machine_cache"] = cache_note(*past);
    co_return json_response(200, out);
  });
}

}  // namespace tsum::api
