#include "daemon/views/views.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "billing/prices/rule_book.h"
#include "common/etag.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

json id_or_null(const std::optional<int64_t>& id) { return id ? json(*id) : json(nullptr); }

using Phases = std::map<Phase, PhaseRecord>;

// The attrs of a phase's end mark, or nullptr when it has not ended.
const json* end_attrs(const Phases& phases, Phase phase) {
  auto it = phases.find(phase);
  return it == phases.end() || !it->second.end ? nullptr : &it->second.end->attrs;
}

// Seconds per phase (null where not measured), their sum, whether all eight are in, and each phase's resources.
// A phase a job did not mark, which the agent derived at no length (its begin and end at the next mark the job
// wrote, or at its exit), did not run on its own: it is null, listed in `unmarked`, and adds 0 s to t_sum.
struct PhaseView {
  json seconds = json::object();
  json stats = json::object();
  json unmarked = json::array();
  double t_sum = 0;
  bool complete = true;
};

PhaseView phase_view(const Phases& phases) {
  PhaseView v;
  for (auto name : kPhaseNames) {
    auto it = phases.find(*parse_phase(name));
    if (it != phases.end() && !it->second.stats.empty()) {
      json& m = v.stats[std::string(name)];
      for (const auto& [metric, x] : it->second.stats) m[metric] = {{"min", x.min}, {"avg", x.avg}, {"max", x.max}};
    }
    std::optional<double> secs = it == phases.end() ? std::nullopt : it->second.seconds();
    if (secs && *secs == 0 && it->second.end->attrs.is_object() &&
        it->second.end->attrs.value("derived", json()) == json(true)) {
      v.unmarked.push_back(name);
      secs.reset();
      v.stats.erase(std::string(name));
    } else if (!secs) {
      v.complete = false;
    }
    v.seconds[std::string(name)] = secs ? json(*secs) : json(nullptr);
    if (secs) v.t_sum += *secs;
  }
  return v;
}

// When each phase began and ended on the daemon's clock (unix seconds; null where it has not), so that what a
// page shows of a finished run is stamped with when it happened. The daemon's own marks (startup, poweroff) are on
// its clock; the agent's are on the machine's, moved by the offset its fastest-arriving mark shows (the least of
// received_at - t: a mark can arrive late, never early). A run of several nodes, whose marks are the slowest node's
// on that node's clock, is stamped with when each mark arrived.
struct PhaseClock {
  std::optional<double> offset;
  json at(const PhaseMark& m) const {
    if (m.clock == ClockDomain::daemon) return m.t;
    return offset ? json(m.t + *offset) : json(m.received_at);
  }
};

PhaseClock phase_clock(const Phases& phases, int nodes) {
  PhaseClock c;
  if (nodes > 1) return c;
  for (const auto& [phase, rec] : phases)
    for (const auto* m : {&rec.begin, &rec.end})
      if (*m && (*m)->clock == ClockDomain::agent && (*m)->received_at > 0 &&
          (!c.offset || (*m)->received_at - (*m)->t < *c.offset))
        c.offset = (*m)->received_at - (*m)->t;
  return c;
}

json phase_times(const Phases& phases, const PhaseClock& clock) {
  json out = json::object();
  for (auto name : kPhaseNames) {
    auto it = phases.find(*parse_phase(name));
    const PhaseRecord* rec = it == phases.end() ? nullptr : &it->second;
    out[std::string(name)] = {{"began_at", rec && rec->begin ? clock.at(*rec->begin) : json(nullptr)},
                              {"ended_at", rec && rec->end ? clock.at(*rec->end) : json(nullptr)}};
  }
  return out;
}

// What the phases' end marks measured: accuracy, throughput, threads; how install got the trainer (bundle
// download, image pull, image present) and what its GPU probe measured; what load_data fetched; a job's marks
// (which the agent derived because the program did not write them, and the lines it could not use); the
// inference sweep's result per batch size (learn's progress marks).
json phase_metrics(const Phases& phases, const std::vector<json>& epochs) {
  json metrics = json::object();
  for (auto [phase, keys] : {std::pair{Phase::verify, std::vector<const char*>{"test_accuracy", "test_loss"}},
                             {Phase::learn, {"images_per_s"}},
                             {Phase::start, {"threads"}}})
    if (const json* a = end_attrs(phases, phase))
      for (const char* k : keys)
        if (a->contains(k)) metrics[k] = (*a)[k];
  for (auto [phase, key, fields] : {std::tuple{Phase::install, "install", std::vector<const char*>{"method", "bytes", "image", "sha256", "gpu_probe", "workdir", "setup"}},
                                    {Phase::load_data, "data", {"name", "format", "method", "bytes", "sha256"}},
                                    {Phase::save, "marks", {"derived", "malformed", "exit_status"}}}) {
    const json* a = end_attrs(phases, phase);
    if (!a) continue;
    json m = json::object();
    for (const char* f : fields)
      if (a->contains(f)) m[f] = (*a)[f];
    if (!m.empty()) metrics[key] = m;
  }
  json inference = json::array(), serving = json::array();
  for (const auto& e : epochs) {
    if (e.value("event", "") == "infer") inference.push_back(e);
    if (e.value("event", "") == "load_level") serving.push_back(e);
  }
  // An inference sweep's images/s is its best batch size's; a serving run's its best level under the p99 bound
  // (every level when it has none), with that level's requests/s: the throughput the server sustains.
  auto best = [&](const json& levels, bool under_bound) {
    const json* top = nullptr;
    for (const auto& l : levels)
      if ((!under_bound || l.value("over_bound", 0) == 0) && l.value("images_per_s", json()).is_number() &&
          (!top || l["images_per_s"].get<double>() > (*top)["images_per_s"].get<double>()))
        top = &l;
    return top;
  };
  if (!inference.empty()) {
    metrics["inference"] = inference;
    if (const json* top = best(inference, false); top && !metrics.contains("images_per_s"))
      metrics["images_per_s"] = (*top)["images_per_s"];
  }
  if (!serving.empty()) {
    metrics["serving"] = serving;
    const json* top = best(serving, true);
    metrics["images_per_s"] = top ? (*top)["images_per_s"] : json(nullptr);
    metrics["throughput_rps"] = top ? top->value("throughput_rps", json()) : json(nullptr);
  }
  return metrics;
}

// A multi-node run: each node's phases (the run's are its slowest node's); into `metrics` the spread of their
// startups and what rank 0 measured of the communication.
json node_view(int nodes, const std::map<int, Phases>& by_node, const Phases& phases, json& metrics) {
  json per_node = json::array();
  for (int n = 0; n < nodes; ++n) {
    json p = json::object();
    auto node = by_node.find(n);
    for (auto name : kPhaseNames) {
      std::optional<double> secs;
      if (node != by_node.end())
        if (auto it = node->second.find(*parse_phase(name)); it != node->second.end()) secs = it->second.seconds();
      p[std::string(name)] = secs ? json(*secs) : json(nullptr);
    }
    per_node.push_back({{"node", n}, {"phases", p}});
  }
  if (const json* a = end_attrs(phases, Phase::startup)) metrics["startup_spread_s"] = a->value("spread_s", 0.0);
  if (const json* a = end_attrs(phases, Phase::learn)) {
    json dist = json::object();
    for (const auto& [k, v] : a->items())
      if (k == "world_size" || k == "dist" || k.starts_with("comm_") || k.starts_with("bytes_") ||
          k.starts_with("staleness"))
        dist[k] = v;
    if (!dist.empty()) metrics["distributed"] = dist;
  }
  return per_node;
}

// A byo run waiting for its machine shows the one-liner that joins one (providers/byo/byo_provider.h).
json join_view(const RunRow& r) {
  if (!r.instance || r.status != RunStatus::booting || !r.instance->contains("data") ||
      (*r.instance)["data"].value("command", "") == "")
    return nullptr;
  return {{"command", (*r.instance)["data"]["command"]}, {"expires_at", (*r.instance)["data"].value("expires_at", 0.0)}};
}

// The run's variant: "config" names what tells it apart from the experiment's others.
json config_view(const RunRow& r, const ExperimentSpec& spec) {
  const auto variant = static_cast<size_t>(r.config_index);
  json config = {{"provider", r.provider}, {"instance_type", r.instance_type}};
  if (!r.region.empty()) config["region"] = r.region;  // where a recovery moved it
  if (variant >= spec.variants()) return config;
  const auto& c = spec.config_of(variant);
  if (c.runtime != "native") config["runtime"] = c.runtime;
  if (c.market != "on-demand") config["market"] = c.market;
  if (c.nodes > 1) config["nodes"] = c.nodes;
  if (c.nodes > 1 && spec.workload_of(variant).kind != "serve") config["dist"] = c.dist;
  if (!spec.varied.empty()) config["workload"] = workload_fields(spec.workload_of(variant), spec.varied);
  return config;
}

}  // namespace

Result<json> Views::run_json(const RunRow& r, const ExperimentRow& e) {
  const ExperimentSpec& spec = e.spec;
  const auto& rules = spec.billing;
  auto phases = ledger_.phases(r.id);
  if (!phases) return phases.error();
  PhaseView pv = phase_view(*phases);
  const PhaseClock clock = phase_clock(*phases, r.nodes);
  auto epochs = store_.epochs_of(r.id);
  if (!epochs) return epochs.error();
  // Each epoch's end on the daemon's clock, where the machine's time of it is known (this machine's epochs).
  for (auto& e : *epochs)
    if (e.is_object())
      e["at"] = clock.offset && e.value("mono_s", json()).is_number() && r.attempt == 1
                    ? json(e["mono_s"].get<double>() + *clock.offset) : json(nullptr);
  json metrics = phase_metrics(*phases, *epochs);
  if (r.queue_wait_s) metrics["queue_wait_s"] = *r.queue_wait_s;  // part of startup: submit to start
  json per_node = nullptr;
  if (r.nodes > 1) {
    auto nodes = ledger_.node_phases(r.id);
    if (!nodes) return nodes.error();
    per_node = node_view(r.nodes, *nodes, *phases, metrics);
  }

  json cost = json::object();
  std::optional<double> lost_s;
  auto all = attempts_json(r, rules);
  if (!all) return all.error();
  if (r.attempt > 1) {
    // A run of several machines: each attempt billed on its own, the run's t_sum from the first machine's create
    // to the last one's poweroff.
    lost_s = all->lost_s;
    if (pv.complete && all->wall_s) {
      pv.t_sum = *all->wall_s;
      for (const auto& rule : rules)
        cost[rule.name] = {{"billed_s", all->billed_s[rule.name]}, {"amount", all->amount[rule.name]},
                           {"currency", r.currency}};
    }
  } else if (pv.complete) {
    for (const auto& rule : rules)
      cost[rule.name] = {{"billed_s", billing::billed_seconds(rule, pv.t_sum)},
                         {"amount", r.nodes * billing::cost(rule, r.hourly_price, pv.t_sum)},  // every node billed
                         {"currency", r.currency}};
  }
  if (cost.empty() && is_terminal(r.status) && r.status != RunStatus::done) {
    // A failed or cancelled run: not every phase ran, but its machine was up and the user paid for that time
    // (each attempt's bill); "partial" says the phases do not add up to it.
    for (const auto& rule : rules)
      if (all->billed_s[rule.name] > 0)
        cost[rule.name] = {{"billed_s", all->billed_s[rule.name]},
                           {"amount", (r.attempt > 1 ? 1 : r.nodes) * all->amount[rule.name]},
                           {"currency", r.currency}, {"partial", true}};
  }
  const auto variant = static_cast<size_t>(r.config_index);
  json out{{"id", r.id},
              {"experiment_id", r.experiment_id},
              {"search_id", id_or_null(e.search_id)},
              {"join", join_view(r)},
              {"config_index", r.config_index},
              {"config", config_view(r, spec)},
              {"workload", variant < spec.variants() ? spec.workload_of(variant).to_json() : json(nullptr)},
              {"repetition", r.repetition},
              {"status", status_name(r.status)},
              {"reason", r.reason},
              {"hourly_price", r.hourly_price},
              {"phases", pv.seconds},
              {"phase_times", phase_times(*phases, clock)},
              {"unmarked", pv.unmarked},
              {"nodes", r.nodes},
              {"machine", r.machine},
              {"node_phases", per_node},
              {"t_sum", pv.complete ? json(pv.t_sum) : json(nullptr)},
              {"attempt", r.attempt},
              {"attempts", std::move(all->attempts)},
              {"lost_s", lost_s ? json(*lost_s) : json(nullptr)},
              {"metrics", metrics},
              {"epochs", *epochs},
              {"stats", pv.stats},
              {"cost", cost},
              {"instance", r.instance ? *r.instance : json(nullptr)},
              {"created_at", r.created_at},
              {"updated_at", r.updated_at}};
  if (!e.unreadable.empty()) out["error"] = e.unreadable;  // shown, marked, rather than failing a listing
  return out;
}

namespace {

// An attempt's machine time on the daemon's clock: its create to its poweroff's end.
std::optional<double> up_time(const std::map<Phase, PhaseRecord>& phases) {
  auto s = phases.find(Phase::startup), p = phases.find(Phase::poweroff);
  if (s == phases.end() || p == phases.end() || !s->second.begin || !p->second.end) return std::nullopt;
  return p->second.end->t - s->second.begin->t;
}

}  // namespace

// Each attempt: its machine, market, price, phases, bill and how it ended; the learning redone after it.
// Billing: each attempt under each rule at its own price; a Linux spot instance AWS interrupts (a notice, or EC2's
// own state reason) within its first hour is not charged (EC2's spot billing rule).
// Learning lost to an interruption: what the attempt learned (its learn mark's arrival to the interruption, on
// the daemon's clock) less what its last checkpoint kept of it (the trainer's learn_seconds then, less those it
// resumed from).
Result<Views::Attempts> Views::attempts_json(const RunRow& r, const std::vector<billing::BillingRule>& rules) {
  auto all = ledger_.attempts(r.id);
  if (!all) return all.error();
  auto checkpoints = ledger_.checkpoints(r.id);
  if (!checkpoints) return checkpoints.error();
  Attempts out;
  double lost = 0, resumed_learn_s = 0;
  std::optional<double> first_create, last_poweroff;
  for (const auto& a : *all) {
    json ph = json::object();
    for (auto name : kPhaseNames) {
      auto it = a.phases.find(*parse_phase(name));
      auto secs = it == a.phases.end() ? std::nullopt : it->second.seconds();
      ph[std::string(name)] = secs ? json(*secs) : json(nullptr);
    }
    if (auto s = a.phases.find(Phase::startup); s != a.phases.end() && s->second.begin && !first_create)
      first_create = s->second.begin->t;
    if (auto p = a.phases.find(Phase::poweroff); p != a.phases.end() && p->second.end) last_poweroff = p->second.end->t;
    const auto up = up_time(a.phases);
    const bool taken_back = a.outcome == "interrupted" && a.notice.has_value();
    const bool free = taken_back && a.spec.provider == "aws" && a.spec.market == "spot" && up && *up < 3600;
    json bill = json::object();
    for (const auto& rule : rules) {
      const double billed = up && !free ? billing::billed_seconds(rule, *up) : 0;
      const double amount = up && !free ? billing::cost(rule, a.spec.hourly_price, *up) : 0;
      out.billed_s[rule.name] += billed;
      out.amount[rule.name] += amount;
      bill[rule.name] = {{"billed_s", billed}, {"amount", amount}, {"currency", a.spec.currency}};
      if (free) bill[rule.name]["note"] = "AWS charges nothing for a spot instance it interrupts within its first hour";
    }
    // The attempt's own bill: its provider's rule (billing/prices/rules.json), in its provider's currency.
    json own = nullptr;
    if (auto rule = billing::rule_for_provider(a.spec.provider); rule && up) {
      own = {{"rule", rule->name},
             {"billed_s", free ? 0.0 : billing::billed_seconds(*rule, *up)},
             {"amount", free ? 0.0 : billing::cost(*rule, a.spec.hourly_price, *up)},
             {"currency", a.spec.currency}};
    }
    // The checkpoints this attempt delivered; the last one is what the next attempt resumed from.
    json last_checkpoint = nullptr;
    double kept_learn_s = resumed_learn_s;
    for (const auto& c : *checkpoints)
      if (c.attempt == a.attempt) {
        last_checkpoint = {{"artifact", c.artifact}, {"sha256", c.sha256}, {"bytes", c.bytes},
                           {"received_at", c.received_at}};
        last_checkpoint.update(c.attrs);
        kept_learn_s = c.attrs.value("learn_seconds", kept_learn_s);
      }
    json lost_here = nullptr, learned_here = nullptr;
    if (a.outcome == "interrupted" || a.outcome == "abandoned") {  // another attempt followed
      double learned = 0;
      auto l = a.phases.find(Phase::learn);
      const double stop = a.notice ? a.notice->value("at", a.ended_at.value_or(0.0)) : a.ended_at.value_or(0.0);
      if (l != a.phases.end() && l->second.begin) {
        const double until = l->second.end ? l->second.end->received_at : stop;
        learned = std::max(0.0, until - l->second.begin->received_at);
      }
      // Redone: what it learned after its last checkpoint was taken until it stopped (both on the daemon's clock),
      // else all it learned past the checkpoint it resumed from.
      const double taken_at = last_checkpoint.is_object() ? last_checkpoint.value("taken_at", 0.0) : 0.0;
      const double redone = taken_at > 0 ? std::clamp(stop - taken_at, 0.0, learned)
                                         : std::max(0.0, learned - (kept_learn_s - resumed_learn_s));
      lost += redone;
      lost_here = redone;
      learned_here = learned;
      resumed_learn_s = kept_learn_s;
    }
    out.attempts.push_back({{"attempt", a.attempt},
                            {"provider", a.spec.provider},
                            {"instance_type", a.spec.instance_type},
                            {"market", a.spec.market},
                            {"region", a.spec.region.empty() ? json(nullptr) : json(a.spec.region)},
                            {"zone", a.spec.zone.empty() ? json(nullptr) : json(a.spec.zone)},
                            {"currency", a.spec.currency},
                            {"skipped", a.skipped},
                            {"bill", own},
                            {"hourly_price", a.spec.hourly_price},
                            {"instance", a.instance ? json(a.instance->value("id", "")) : json(nullptr)},
                            {"started_at", a.started_at},
                            {"ended_at", a.ended_at ? json(*a.ended_at) : json(nullptr)},
                            {"outcome", a.outcome.empty() ? json(nullptr) : json(a.outcome)},
                            {"reason", a.reason},
                            {"notice", a.notice ? *a.notice : json(nullptr)},
                            {"phases", ph},
                            {"up_s", up ? json(*up) : json(nullptr)},
                            {"cost", bill},
                            {"checkpoint", last_checkpoint},
                            {"learned_s", learned_here},
                            {"lost_s", lost_here}});
  }
  out.lost_s = lost;
  if (first_create && last_poweroff) out.wall_s = *last_poweroff - *first_create;
  return out;
}

Result<json> Views::run(int64_t run_id) {
  auto r = store_.run(run_id);
  if (!r) return r.error();
  auto e = store_.experiment_as_stored(r->experiment_id);
  if (!e) return e.error();
  return run_json(*r, *e);
}

namespace {
std::shared_ptr<const Views::Body> body_of(const json& j) {
  auto body = std::make_shared<Views::Body>();
  body->text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  body->etag = etag_of(body->text);
  return body;
}
}  // namespace

Views::Views(Store& store, Ledger& ledger) : store_(store), ledger_(ledger) {}

Result<std::shared_ptr<const Views::Body>> Views::run_body(int64_t run_id) {
  if (auto* held = finished_.find(run_id)) return *held;
  auto j = run(run_id);
  if (!j) return j.error();
  auto body = body_of(*j);
  // Not inside a transaction: what it read may yet be rolled back.
  const auto status = parse_status((*j)["status"].get<std::string>());
  if (status && is_terminal(*status) && !store_.in_transaction()) finished_.put(run_id, body, body->text.size());
  return body;
}

void Views::forget(int64_t run_id) {
  finished_.erase(run_id);
  finished_rows_.erase(run_id);
}

Result<json> Views::experiment(int64_t experiment_id) {
  auto e = store_.experiment_as_stored(experiment_id);
  if (!e) return e.error();
  auto rows = store_.runs_of(experiment_id);
  if (!rows) return rows.error();
  json runs = json::array();
  for (const auto& r : *rows) {
    auto j = run_json(r, *e);
    if (!j) return j.error();
    runs.push_back(std::move(*j));
  }
  return json{{"id", e->id},
              {"name", e->name},
              {"created_at", e->created_at},
              {"spec", e->unreadable.empty() ? e->spec.to_json() : json(nullptr)},
              {"runs", std::move(runs)}};
}

Result<json> Views::list_row(const RunRow& r) {
  auto e = store_.experiment_as_stored(r.experiment_id);
  if (!e) return e.error();
  auto j = run_json(r, *e);
  if (!j) return j.error();
  j->erase("epochs");
  j->erase("stats");
  return j;
}

Result<std::shared_ptr<const std::string>> Views::list_row_text(const RunRef& ref) {
  if (auto* held = finished_rows_.find(ref.id)) return *held;
  auto r = store_.run(ref.id);
  if (!r) return r.error();
  auto j = list_row(*r);
  if (!j) return j.error();
  auto text = std::make_shared<const std::string>(j->dump(-1, ' ', false, json::error_handler_t::replace));
  // As run_body: only a finished run's, and not inside a transaction, whose reads may yet be rolled back.
  if (is_terminal(r->status) && !store_.in_transaction()) finished_rows_.put(r->id, text, text->size());
  return text;
}

namespace {

// Runs counted by status, as an experiment's progress and status read them.
struct Progress {
  int64_t total = 0, finished = 0, done = 0, failed = 0, cancelled = 0, queued = 0;
};

Progress tally(const std::map<std::string, int64_t>& by_status) {
  Progress p;
  for (const auto& [name, n] : by_status) {
    const auto s = parse_status(name);
    p.total += n;
    if (s && is_terminal(*s)) p.finished += n;
    if (s == RunStatus::done) p.done += n;
    if (s == RunStatus::failed) p.failed += n;
    if (s == RunStatus::cancelled) p.cancelled += n;
    if (s == RunStatus::queued) p.queued += n;
  }
  return p;
}

}  // namespace

json progress_of(const std::map<std::string, int64_t>& by_status) {
  const Progress p = tally(by_status);
  return {{"runs", p.total}, {"finished", p.finished}, {"done", p.done}, {"failed", p.failed},
          {"cancelled", p.cancelled}};
}

std::string experiment_status(const std::map<std::string, int64_t>& by_status) {
  const Progress p = tally(by_status);
  return p.finished < p.total ? (p.queued == p.total ? "queued" : "running")
         : p.done == p.total  ? "done"
         : p.failed > 0       ? "failed"
                              : "cancelled";
}

std::optional<double> learn_memory_used(const json& view) {
  if (!view.is_object()) return std::nullopt;
  const json stats = view.value("stats", json::object());
  const json learn = stats.is_object() ? stats.value("learn", json::object()) : json::object();
  const json rss = learn.is_object() ? learn.value("rss_bytes", json::object()) : json::object();
  const json machine = view.value("machine", json::object());
  if (!rss.is_object() || !machine.is_object()) return std::nullopt;
  const json peak = rss.value("max", json()), gib = machine.value("memory_gib", json());
  if (!peak.is_number() || !gib.is_number() || !(gib.get<double>() > 0)) return std::nullopt;
  const double used = peak.get<double>() / (gib.get<double>() * 1073741824.0);
  return std::isfinite(used) && used >= 0 ? std::optional<double>(used) : std::nullopt;
}

}  // namespace tsum::daemon
