#include "api/plan_route.h"

#include <charconv>
#include <set>
#include <sstream>

#include "api/route_helpers.h"
#include "billing/planner.h"
#include "billing/predictor.h"
#include "billing/rule_book.h"
#include "daemon/admission.h"
#include "daemon/experiment_spec.h"
#include "daemon/past_runs.h"
#include "daemon/spot_risk.h"

namespace tsum::api {

using nlohmann::json;

namespace {

std::optional<double> number_param(const Request& req, const char* key, bool* bad) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || p != it->second.data() + it->second.size() || !(v > 0)) *bad = true;
  return v;
}

struct History {
  std::vector<billing::MeasuredRun> runs;
  std::vector<double> restarts;  // of resumed attempts (spot), seconds
};

// Done runs of every experiment whose workload equals `workload`, as the predictor's measured runs (a run that
// needed several machines as one machine's, daemon::one_machine_phases), and the restarts of resumed attempts.
Result<History> history(daemon::Store& store, daemon::Views& views, const json& workload) {
  auto all = store.experiments();
  if (!all) return all.error();
  History h;
  auto& out = h.runs;
  for (const auto& e : *all) {
    if (e.spec.workload().to_json() != workload) continue;
    auto full = views.experiment(e.id);
    if (!full) return full.error();
    for (const auto& run : (*full)["runs"]) {
      auto r = daemon::restarts_of(run);
      h.restarts.insert(h.restarts.end(), r.begin(), r.end());
      if (run["status"] != "done" || !run["t_sum"].is_number()) continue;
      const json phases = daemon::one_machine_phases(run);  // a run of several machines as one machine's
      bool known = true;
      for (auto name : billing::kPhaseNames) known = known && phases[std::string(name)].is_number();
      if (!known) continue;
      billing::MeasuredRun m;
      std::string provider = run["config"]["provider"], type = run["config"]["instance_type"];
      const int nodes = run.value("nodes", 1);
      m.cfg = {.config = provider + "/" + type + (nodes > 1 ? "/x" + std::to_string(nodes) : ""),
               .provider = provider, .instance_type = type, .cores = daemon::local_cores_of(provider, type),
               .cpu_family = billing::instance_family(type), .nodes = nodes};
      // The machine as the run stored it from its offer, named as the candidates below name theirs.
      daemon::describe_machine(run.value("machine", json::object()), m.cfg);
      for (size_t i = 0; i < billing::kPhaseNames.size(); ++i)
        m.phases[i] = phases[std::string(billing::kPhaseNames[i])].get<double>();
      out.push_back(std::move(m));
    }
  }
  return h;
}

}  // namespace

void add_plan_route(Router& router, daemon::Store& store, daemon::Views& views, daemon::TokenStore& tokens,
                    daemon::ProviderRegistry& providers) {
  router.add("GET", "/v1/plan", [&store, &views, &tokens, &providers](Request& req) -> boost::asio::awaitable<Response> {
    if (auto denied = check_auth(req, tokens)) co_return *denied;
    auto exp_it = req.query.find("experiment");
    int64_t exp_id = 0;
    if (exp_it == req.query.end() ||
        std::from_chars(exp_it->second.data(), exp_it->second.data() + exp_it->second.size(), exp_id).ec !=
            std::errc() || exp_id <= 0)
      co_return unprocessable("'experiment' must name the experiment whose workload to plan, e.g. ?experiment=1");
    auto exp = store.experiment(exp_id);
    if (!exp) co_return error_response(exp.error());

    billing::PlanRequest plan_req;
    auto objective = billing::parse_objective(req.query.count("objective") ? req.query.at("objective") : "cost");
    if (!objective) co_return unprocessable(objective.error().detail);
    plan_req.objective = *objective;
    bool bad = false;
    plan_req.deadline_s = number_param(req, "deadline", &bad);
    plan_req.budget = number_param(req, "budget", &bad);
    if (auto reps = number_param(req, "repetitions", &bad)) plan_req.repetitions = static_cast<int>(*reps);
    if (bad) co_return unprocessable("'deadline', 'budget' and 'repetitions' must be positive numbers");
    std::optional<billing::BillingRule> rule_override;
    if (auto it = req.query.find("billing"); it != req.query.end()) {
      auto r = billing::parse_rule(it->second);
      if (!r) co_return unprocessable(r.error().detail);
      rule_override = *r;
    }

    // Spot candidates: the prior interruption rate where a type has no stored spot machines.
    double prior_rate = billing::kSpotPriorRate;
    if (auto it = req.query.find("interruptions_per_hour"); it != req.query.end()) {
      auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), prior_rate);
      if (ec != std::errc() || p != it->second.data() + it->second.size() || !(prior_rate >= 0) || prior_rate > 3600)
        co_return unprocessable("'interruptions_per_hour' must be a number from 0 to 3600 (the prior rate at which "
                                "a cloud takes a spot machine back, per machine-hour; default " +
                                std::to_string(billing::kSpotPriorRate).substr(0, 4) + ")");
    }
    // The recovery policy of the experiment's spot config, else the defaults a spot config gets.
    daemon::RunConfig::SpotRecovery recovery;
    for (size_t v = 0; v < exp->spec.variants(); ++v)
      if (exp->spec.config_of(v).market == "spot") {
        recovery = exp->spec.config_of(v).spot_recovery;
        break;
      }

    const json workload = exp->spec.workload().to_json();
    auto past = history(store, views, workload);
    if (!past) co_return error_response(past.error());
    const auto* runs = &past->runs;
    if (runs->empty())
      co_return unprocessable("no done run of experiment " + std::to_string(exp_id) +
                              "'s workload yet: run it on at least one config first");
    billing::Workload wl{.epochs = static_cast<double>(exp->spec.workload().epochs),
                         .images_per_epoch = static_cast<double>(exp->spec.workload().limit.value_or(60000))};
    auto predictor = billing::Predictor::learn(*runs, wl);
    if (!predictor) co_return unprocessable(predictor.error().detail);

    // Node counts to plan: ?nodes=1,2,4, else one machine and every count the history measured.
    std::set<int> node_counts = {1};
    for (const auto& r : *runs) node_counts.insert(r.cfg.nodes);
    if (auto it = req.query.find("nodes"); it != req.query.end()) {
      node_counts.clear();
      std::stringstream list(it->second);
      for (std::string item; std::getline(list, item, ',');) {
        int n = 0;
        auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
        if (ec != std::errc() || end != item.data() + item.size() || n < 1 || n > daemon::kMaxNodes)
          co_return unprocessable("'nodes' must be a comma-separated list of node counts from 1 to " +
                                  std::to_string(daemon::kMaxNodes) + ", e.g. nodes=1,2,4");
        node_counts.insert(n);
      }
    }
    std::vector<billing::PlanCandidate> candidates;
    for (auto* p : providers.all()) {
      const providers::Requirements any;
      auto offers = co_await p->offers(any);
      if (!offers) continue;  // a dead provider offers nothing; the others are still planned
      auto rule = rule_override ? rule_override : billing::rule_for_provider(p->name());
      if (!rule) rule = billing::parse_rule("per_second_60s_min").value();
      for (const auto& o : *offers) {
        if (o.vcpus <= 0 && o.gpus <= 0) continue;  // unknown hardware (a byo "any" machine): nothing to predict
        for (int n : node_counts) {
          // Named machines (ssh, byo) and replayed ones (trace) are one of a kind: one node only.
          if (n > 1 && (o.provider == "ssh" || o.provider == "byo" || o.provider == "trace")) continue;
          billing::ConfigSpec cfg = providers::config_spec_of(o);
          cfg.config = o.provider + "/" + o.instance_type + (n > 1 ? "/x" + std::to_string(n) : "");
          cfg.nodes = n;
          candidates.push_back({cfg, n * o.hourly_price, o.currency, *rule});
          // Its spot twin where the cloud sells spare capacity and quotes its price: one machine (a multi-node
          // run cannot resume yet), predicted from the same machine's runs, priced with its interruptions.
          if (n == 1 && p->capabilities().spot && o.spot_hourly_price > 0) {
            auto seen = store.spot_exposure(o.provider, o.instance_type);
            if (!seen) co_return error_response(seen.error());
            billing::PlanCandidate spot{cfg, o.spot_hourly_price, o.currency, *rule};
            spot.cfg.config += "/spot";
            spot.predict_as = cfg.config;
            spot.spot = daemon::spot_model(*seen, recovery, o.provider, o.hourly_price, prior_rate, past->restarts);
            candidates.push_back(std::move(spot));
          }
        }
      }
    }
    auto plan = billing::make_plan(*predictor, candidates, plan_req);
    if (!plan) co_return from_error(plan.error());
    json out = billing::plan_to_json(*plan);
    out["experiment_id"] = exp_id;
    out["history_runs"] = runs->size();
    co_return json_response(200, out);
  });
}

}  // namespace tsum::api
