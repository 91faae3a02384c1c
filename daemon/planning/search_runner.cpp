#include "daemon/planning/search_runner.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "billing/model/phase_priors.h"
#include "billing/prices/rule_book.h"
#include "common/json_util.h"
#include "daemon/planning/spot_risk.h"
#include "daemon/experiments/submit.h"

namespace tsum::daemon {

namespace asio = boost::asio;
using nlohmann::json;

namespace {
constexpr auto kProbeDeadline = std::chrono::hours(7);  // longer than any run's deadline (6 h)

// The search's own numbers, each in its documented range (docs/api.md); its workload and candidates are checked as
// an experiment's. A field absent or null takes its default.
struct NumberField {
  const char* key;
  double lo, hi;
  bool integer;
};
constexpr NumberField kNumbers[] = {
    {"probe_budget", 0, kMaxMoney, false}, {"budget_share", 0, 1000, false},
    {"deadline_s", 1, kMaxDeadlineS, false}, {"budget", 0, kMaxMoney, false},
    {"max_probes", 0, kMaxSearchCandidates, true}, {"future_runs", 0, 1e6, false},
    {"tolerance", 0, 10, false}, {"confidence", 0, 1, false}};

std::string number_text(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

Result<std::map<std::string, double>> search_numbers(const json& j) {
  for (const auto& [key, _] : j.items()) {
    const bool known = key == "workload" || key == "candidates" || key == "objective" || key == "billing" ||
                       std::ranges::any_of(kNumbers, [&](const NumberField& f) { return key == f.key; });
    if (!known) return make_error(Code::invalid_argument, "search: unknown field '" + key + "'");
  }
  std::map<std::string, double> out;
  for (const auto& f : kNumbers) {
    if (!j.contains(f.key) || j[f.key].is_null()) continue;
    const json& v = j[f.key];
    const bool ok = (f.integer ? v.is_number_integer() : v.is_number()) && v.get<double>() >= f.lo &&
                    v.get<double>() <= f.hi;  // false for NaN
    if (!ok)
      return make_error(Code::invalid_argument, std::string("search: '") + f.key + "' must be " +
                                                    (f.integer ? "an integer" : "a number") + " from " +
                                                    number_text(f.lo) + " to " + number_text(f.hi) + ", got " +
                                                    v.dump());
    out[f.key] = v.get<double>();
  }
  for (const char* key : {"objective", "billing"})
    if (j.contains(key) && !j[key].is_string())
      return make_error(Code::invalid_argument, std::string("search: '") + key + "' must be a string");
  return out;
}

// A probe run's deadline: what is left of its limit (the seconds its budget buys, or fewer where past them it could
// no longer beat the best measured config) once the provider's usual poweroff is set aside, within an experiment's
// range; nullopt where nothing limits it.
std::optional<int> probe_deadline(double max_s, double poweroff_s) {
  if (!(max_s > 0)) return std::nullopt;
  const double s = max_s - poweroff_s;  // +inf stays +inf; NaN fails the comparisons below
  if (!(s < kMaxDeadlineS)) return kMaxDeadlineS;
  return static_cast<int>(std::max(1.0, std::floor(s)));
}
}  // namespace

struct SearchRunner::Search {
  int64_t id = 0;
  json request;
  ExperimentSpec base;  // the workload and every candidate; a probe runs one of its configs once
  std::vector<billing::PlanCandidate> candidates;
  std::map<std::string, RunConfig> config_of;  // candidate config id -> what to run
  billing::SearchRequest req;
  json probes = json::array();  // touched on the executor only
  json progress;                // the trace and rounds so far (search_progress_json); executor only
  std::map<std::string, double> poweroff_seen;  // provider -> the longest poweroff its probes took; search thread only
};

SearchRunner::SearchRunner(asio::io_context& io, SearchServices s) : io_(io), s_(std::move(s)) {
  if (auto st = s_.db.prepare(
          "UPDATE searches SET status = 'failed', reason = 'the daemon stopped during the search', updated_at = ? "
          "WHERE status = 'running'");
      st)
    (void)st->bind(s_.clock.now_s()).run();
}

SearchRunner::~SearchRunner() {
  stop();
  for (auto& t : threads_) t.join();
}

void SearchRunner::stop() { stopping_ = true; }

asio::awaitable<Result<billing::PlanCandidate>> SearchRunner::candidate(const RunConfig& c,
                                                                       const std::string& billing) {
  auto* p = s_.providers.get(c.provider);
  if (!p) co_return make_error(Code::invalid_argument, s_.providers.unknown(c.provider));
  const providers::Requirements wanted{.instance_type = c.instance_type};
  auto offers = co_await p->offers(wanted);
  if (!offers) co_return offers.error();
  if (offers->empty())
    co_return make_error(Code::invalid_argument,
                         "provider '" + c.provider + "' does not offer '" + c.instance_type + "'");
  const auto& o = offers->front();
  billing::PlanCandidate cand;
  // A multi-node candidate (candidates may list "nodes": [1, 2, 4]) is every node's price, fitted over its workers.
  cand.cfg = providers::config_spec_of(o);
  cand.cfg.config = c.provider + "/" + c.instance_type +
                    (c.nodes > 1 ? "/x" + std::to_string(c.nodes) + (c.dist == "ring" ? "" : "/" + c.dist) : "");
  cand.cfg.nodes = c.nodes;
  cand.hourly_price = c.nodes * o.hourly_price;
  cand.currency = o.currency;
  if (c.market == "spot") {  // ranked beside its on-demand twin: its own probes, its price, its interruptions
    if (o.spot_hourly_price <= 0)
      co_return make_error(Code::invalid_argument, "provider '" + c.provider + "' quotes no spot price for '" +
                                                       c.instance_type + "'");
    auto seen = s_.store.spot_exposure(c.provider, c.instance_type);
    if (!seen) co_return seen.error();
    cand.cfg.config += "/spot";
    cand.hourly_price = o.spot_hourly_price;
    cand.spot = spot_model(*seen, c.spot_recovery, c.provider, o.hourly_price, billing::kSpotPriorRate, {});
  }
  if (!billing.empty()) {
    auto rule = billing::parse_rule(billing);
    if (!rule) co_return rule.error();
    cand.rule = *rule;
  } else if (auto rule = billing::rule_for_provider(c.provider)) {
    cand.rule = *rule;
  } else {
    cand.rule = *billing::parse_rule("per_second_60s_min");
  }
  co_return cand;
}

asio::awaitable<Result<int64_t>> SearchRunner::start(const json& request) {
  if (!request.is_object()) co_return make_error(Code::invalid_argument, "the search must be a JSON object");
  auto numbers = search_numbers(request);
  if (!numbers) co_return numbers.error();
  for (const char* key : {"workload", "candidates"})  // as an experiment needs its workload and configs
    if (!request.contains(key)) co_return make_error(Code::invalid_argument, std::string("search: missing field '") + key + "'");
  auto s = std::make_shared<Search>();
  s->request = request;
  json as_experiment = {{"name", "search"}, {"workload", request.value("workload", json::object())},
                        {"configs", request.value("candidates", json::array())}, {"repetitions", 1}};
  auto base = experiment_spec_from_json(as_experiment, kMaxSearchCandidates);
  if (!base) co_return make_error(Code::invalid_argument, "search: " + base.error().detail);
  if (base->configs.empty()) co_return make_error(Code::invalid_argument, "search: 'candidates' must not be empty");
  if (base->workloads.size() > 1)
    co_return make_error(Code::invalid_argument, "search: the workload's fields must be single values, not lists");
  s->base = *base;
  auto objective = billing::parse_objective(request.value("objective", "cost"));
  if (!objective) co_return objective.error();
  const auto number = [&](const char* key) -> std::optional<double> {
    auto it = numbers->find(key);
    return it == numbers->end() ? std::nullopt : std::optional<double>(it->second);
  };
  s->req.plan.objective = *objective;
  s->req.plan.deadline_s = number("deadline_s");
  s->req.plan.budget = number("budget");
  s->req.max_probes = static_cast<int>(number("max_probes").value_or(0));  // at most kMaxSearchCandidates
  s->req.future_runs = number("future_runs").value_or(1);
  s->req.tolerance = number("tolerance").value_or(0.05);
  s->req.confidence = number("confidence").value_or(1);
  s->req.probe_budget = number("probe_budget");
  s->req.budget_share = number("budget_share");
  s->req.workload.epochs = base->workload().epochs;
  std::string rule = request.value("billing", "");
  for (const auto& c : base->configs) {
    auto cand = co_await candidate(c, rule);
    if (!cand) co_return make_error(Code::invalid_argument, "search: " + cand.error().detail);
    s->config_of[cand->cfg.config] = c;
    s->candidates.push_back(std::move(*cand));
  }
  auto ins = s_.db.prepare(
      "INSERT INTO searches (request, status, created_at, updated_at) VALUES (?, 'running', ?, ?)");
  if (!ins) co_return ins.error();
  if (auto st = ins->bind(request.dump(), s_.clock.now_s(), s_.clock.now_s()).run(); !st) co_return st.error();
  s->id = s_.db.last_insert_id();
  // Each round's bands and the probe under way reach the searches table as they are known.
  s->req.on_probe = [this, s](const billing::SearchResult& so_far, const billing::ProbeStep& next) {
    asio::post(io_, [this, s, j = billing::search_progress_json(so_far, next)]() mutable {
      s->progress = std::move(j);
      (void)save(*s, "running", "", nullptr);
    });
  };
  threads_.emplace_back([this, s] {
    const billing::ProbeFn probe_fn = [&](const billing::PlanCandidate& c, const billing::ProbeSpec& spec) {
      return probe(s, c, spec);
    };
    auto r = billing::adaptive_search(s->candidates, {}, probe_fn, s->req);
    asio::post(io_, [this, s, r = std::move(r)]() mutable { finish(s, std::move(r)); });
  });
  co_return s->id;
}

// On the search thread: queues the probe on the executor and waits for its outcome.
// The probe's limit (ProbeSpec::max_s: the budget's, or where it could no longer win) becomes the probe run's
// deadline, which bounds a run from its create call to its save: the poweroff is left for the rest, the longest the
// search's probes on that provider took, else the provider's usual one.
Result<billing::MeasuredRun> SearchRunner::probe(std::shared_ptr<Search> s, const billing::PlanCandidate& c,
                                                 const billing::ProbeSpec& spec) {
  if (stopping_) return make_error(Code::cancelled, "the daemon is stopping");
  const auto seen = s->poweroff_seen.find(c.cfg.provider);
  const double poweroff =
      seen != s->poweroff_seen.end() ? seen->second : billing::phase_prior(c.cfg.provider).poweroff;
  const std::optional<int> deadline_s = probe_deadline(spec.max_s, poweroff);
  auto done = std::make_shared<ProbePromise>();
  auto outcome = done->get_future();
  asio::co_spawn(io_, probe_run(s, s->config_of.at(c.cfg.config), deadline_s, done), asio::detached);
  const auto deadline = std::chrono::steady_clock::now() + kProbeDeadline;
  while (outcome.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    if (stopping_) return make_error(Code::cancelled, "the daemon is stopping");
    if (std::chrono::steady_clock::now() > deadline) return make_error(Code::timeout, "probe did not finish in time");
  }
  auto run = outcome.get();
  if (run && std::isfinite(run->phases[billing::kPoweroff])) {
    double& longest = s->poweroff_seen.try_emplace(c.cfg.provider, 0.0).first->second;
    longest = std::max(longest, run->phases[billing::kPoweroff]);
  }
  return run;
}

asio::awaitable<void> SearchRunner::probe_run(std::shared_ptr<Search> s, RunConfig config,
                                              std::optional<int> deadline_s, std::shared_ptr<ProbePromise> done) {
  ExperimentSpec spec = s->base;
  spec.name = "search " + std::to_string(s->id) + " probe " + std::to_string(s->probes.size() + 1);
  spec.configs = {config};
  spec.repetitions = 1;
  if (deadline_s) spec.deadline_s = spec.deadline_s ? std::min(*spec.deadline_s, *deadline_s) : *deadline_s;
  auto priced = co_await price_configs(spec, s_.providers, s_.datasets);
  Result<int64_t> exp =
      priced ? s_.store.create_experiment(spec, *priced, std::nullopt, s->id) : Result<int64_t>(priced.error());
  Result<std::vector<RunRow>> runs = exp ? s_.store.runs_of(*exp) : Result<std::vector<RunRow>>(exp.error());
  if (!runs || runs->empty()) {
    done->set_value(make_error(Code::internal, runs ? "probe experiment has no run" : runs.error().detail));
    co_return;
  }
  s_.runs_queued();
  size_t index = s->probes.size();
  s->probes.push_back({{"config", config.provider + "/" + config.instance_type +
                                      (config.nodes > 1 ? "/x" + std::to_string(config.nodes) : "") +
                                      (config.market == "spot" ? "/spot" : "")},
                       {"experiment_id", *exp},
                       {"run_id", runs->front().id}, {"status", "queued"}, {"t_sum", nullptr}});
  (void)save(*s, "running", "", nullptr);
  auto measured = co_await await_run(runs->front().id, index, spec.deadline_s, s);
  (void)save(*s, "running", "", nullptr);
  done->set_value(std::move(measured));
}

asio::awaitable<Result<billing::MeasuredRun>> SearchRunner::await_run(int64_t run_id, size_t index,
                                                                       std::optional<int> deadline_s,
                                                                       std::shared_ptr<Search> s) {
  asio::steady_timer timer(io_);
  const auto deadline = std::chrono::steady_clock::now() + kProbeDeadline;
  for (;;) {
    auto row = s_.store.run(run_id);
    if (!row) co_return row.error();
    s->probes[index]["status"] = status_name(row->status);
    if (is_terminal(row->status)) break;
    if (stopping_ || std::chrono::steady_clock::now() > deadline)
      co_return make_error(Code::cancelled, "probe run " + std::to_string(run_id) + " abandoned");
    timer.expires_after(std::chrono::milliseconds(100));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  auto view = s_.views.run(run_id);
  if (!view) co_return view.error();
  const std::string failure = "probe run " + std::to_string(run_id) + " " + (*view)["status"].get<std::string>() +
                              ": " + (*view).value("reason", "");
  if ((*view)["status"] != "done" || !(*view)["t_sum"].is_number()) {
    // What it ran is billed all the same: the phases it measured, and its machine's up time beyond them in the
    // phase it was stopped in (a probe stopped at its limit while learning: the seconds it learned). One stopped at
    // its deadline was up that long, on its machine's clock, before its poweroff.
    std::optional<double> stopped_at;
    if (deadline_s && view->value("reason", "") == deadline_reason(*deadline_s)) stopped_at = *deadline_s;
    auto phases = unfinished_phases(*view, stopped_at);
    if (!phases) co_return make_error(Code::unavailable, failure);
    billing::MeasuredRun m;
    m.failed = true;
    m.failure = failure;
    m.phases = *phases;
    co_return m;
  }
  s->probes[index]["t_sum"] = (*view)["t_sum"];
  if (view->value("attempt", 1) > 1) s->probes[index]["attempts"] = (*view)["attempt"];
  const json phases = one_machine_phases(*view);  // a spot probe that needed several machines as one machine's
  billing::MeasuredRun m;
  for (size_t i = 0; i < billing::kPhaseNames.size(); ++i) {
    const json& v = phases[std::string(billing::kPhaseNames[i])];
    if (!v.is_number())
      co_return make_error(Code::unavailable, "probe run " + std::to_string(run_id) + "'s " +
                                                  std::string(billing::kPhaseNames[i]) + " is not known");
    m.phases[i] = v.get<double>();
  }
  m.memory_used = learn_memory_used(*view);
  co_return m;
}

void SearchRunner::finish(std::shared_ptr<Search> s, Result<billing::SearchResult> r) {
  if (!r) {
    (void)save(*s, "failed", r.error().detail, nullptr);
    return;
  }
  json result = billing::search_to_json(*r);
  (void)save(*s, "done", r->stop_reason, &result);
}

Status SearchRunner::save(const Search& s, std::string_view status, std::string_view reason, const json* result) {
  auto st = s_.db.prepare("UPDATE searches SET status = ?, reason = ?, probes = ?, result = ?, updated_at = ? "
                          "WHERE id = ?");
  if (!st) return st.error();
  std::optional<std::string> res;
  if (result) res = result->dump();
  else if (s.progress.is_object()) res = s.progress.dump();
  return st->bind(status, reason, s.probes.dump(), res, s_.clock.now_s(), s.id).run();
}

Result<json> SearchRunner::get(int64_t id) {
  auto st = s_.db.prepare("SELECT status, reason, request, probes, result FROM searches WHERE id = ?");
  if (!st) return st.error();
  auto row = st->bind(id).step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "no search " + std::to_string(id));
  json out = {{"id", id}, {"status", st->text(0)}, {"reason", st->text(1)},
              {"request", json::parse(st->text(2), nullptr, false)},
              {"probes", json::parse(st->text(3), nullptr, false)}};
  if (!st->is_null(4)) {
    auto result = json::parse(st->text(4), nullptr, false);
    if (result.is_object())
      for (const auto& [k, v] : result.items()) out[k] = v;
  }
  return out;
}

Result<PageOf<json>> SearchRunner::list(const PageRequest& page) {
  PageOf<json> out;
  {
    auto n = s_.db.prepare("SELECT COUNT(*) FROM searches");
    if (!n) return n.error();
    auto counted = n->step();
    if (!counted) return counted.error();
    out.total = n->int64(0);
  }
  const int limit = std::clamp(page.limit, 1, PageRequest::kMaxLimit);
  std::string sql = "SELECT id, status, reason, probes, result, created_at, updated_at FROM searches";
  if (page.after) sql += page.descending ? " WHERE id < ?" : " WHERE id > ?";
  sql += page.descending ? " ORDER BY id DESC LIMIT ?" : " ORDER BY id LIMIT ?";
  auto st = s_.db.prepare(sql);
  if (!st) return st.error();
  if (page.after) st->bind(*page.after, int64_t{limit} + 1);
  else st->bind(int64_t{limit} + 1);
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    if (static_cast<int>(out.rows.size()) == limit) {  // one more than the page: the next page starts after it
      out.next_after = out.rows.back()["id"].get<int64_t>();
      break;
    }
    const json probes = json::parse(st->text(3), nullptr, false);
    const json result = st->is_null(4) ? json::object() : json::parse(st->text(4), nullptr, false);
    const auto field = [&](const char* key) { return result.is_object() ? result.value(key, json()) : json(); };
    const json rec = field("recommendation");
    out.rows.push_back({{"id", st->int64(0)}, {"status", st->text(1)}, {"reason", st->text(2)},
                        {"probes", probes.is_array() ? probes.size() : 0}, {"spent", field("spent")},
                        {"budget", field("budget")},
                        {"recommendation", rec.is_object() ? rec.value("config", json()) : json()},
                        {"created_at", st->real(5)}, {"updated_at", st->real(6)}});
  }
  return out;
}

}  // namespace tsum::daemon
