#include "daemon/runs/ledger.h"

#include <algorithm>
#include <vector>

namespace tsum::daemon {

namespace {

bool transition_allowed(RunStatus from, RunStatus to) {
  if (is_terminal(from)) return false;
  if (to == RunStatus::failed || to == RunStatus::cancelled) return true;
  if (to == RunStatus::done) return from == RunStatus::terminating;
  return to > from;
}

nlohmann::json parse_attrs(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

// What an epoch keeps: the progress event's attrs, with the machine's time of it (mono_s) where they lack it (a
// job's epochs), so that its page can say when it ended.
nlohmann::json epoch_attrs(const AgentEvent& ev) {
  nlohmann::json a = ev.attrs.is_object() ? ev.attrs : nlohmann::json::object();
  if (!a.contains("mono_s")) a["mono_s"] = ev.mono_s;
  return a;
}

}  // namespace

std::optional<double> PhaseRecord::seconds() const {
  if (!begin || !end || begin->clock != end->clock) return std::nullopt;
  return end->t - begin->t;
}

Result<RunStatus> Ledger::status(int64_t run_id) {
  auto st = db_.prepare("SELECT status FROM runs WHERE id = ?");
  if (!st) return st.error();
  st->bind(run_id);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "run " + std::to_string(run_id) + " not found");
  auto s = parse_status(st->text(0));
  if (!s) return make_error(Code::internal, "run " + std::to_string(run_id) + " has unknown status " + st->text(0));
  return *s;
}

Status Ledger::advance(int64_t run_id, RunStatus to, std::string_view reason) {
  Transaction tx(db_);
  if (!tx.begun()) return tx.begun().error();
  auto from = status(run_id);
  if (!from) return from.error();
  if (*from == to) return {};
  if (auto s = advance_locked(run_id, *from, to, reason); !s) return s;
  if (auto s = tx.commit(); !s) return s;
  changed(run_id);
  return {};
}

Status Ledger::advance_locked(int64_t run_id, RunStatus from, RunStatus to, std::string_view reason) {
  if (!transition_allowed(from, to))
    return make_error(is_terminal(from) ? Code::already_exists : Code::invalid_argument,
                      "run " + std::to_string(run_id) + ": cannot go from " + std::string(status_name(from)) +
                          " to " + std::string(status_name(to)));
  double now = clock_.now_s();
  auto up = db_.prepare("UPDATE runs SET status = ?, reason = ?, updated_at = ? WHERE id = ?");
  if (!up) return up.error();
  if (auto s = up->bind(status_name(to), reason, now, run_id).run(); !s) return s;
  if (is_terminal(to)) {  // the current attempt ends with the run
    auto end = db_.prepare(
        "UPDATE run_attempts SET ended_at = ?1, outcome = ?2, reason = ?3 WHERE run_id = ?4 AND ended_at IS NULL "
        "AND attempt = (SELECT attempt FROM runs WHERE id = ?4)");
    if (!end) return end.error();
    if (auto s = end->bind(now, status_name(to), reason, run_id).run(); !s) return s;
  }
  auto log = db_.prepare(
      "INSERT INTO run_transitions (run_id, seq, from_status, to_status, reason, at) "
      "VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_transitions WHERE run_id = ?1), ?2, ?3, ?4, ?5)");
  if (!log) return log.error();
  return log->bind(run_id, status_name(from), status_name(to), reason, now).run();
}

Result<bool> Ledger::record_mark(int64_t run_id, Phase phase, Mark mark, double t, ClockDomain clock,
                                 const nlohmann::json& attrs) {
  auto st = db_.prepare(
      "INSERT INTO phase_marks (run_id, attempt, phase, mark, t, clock, received_at, attrs) "
      "VALUES (?1, (SELECT attempt FROM runs WHERE id = ?1), ?2, ?3, ?4, ?5, ?6, ?7) "
      "ON CONFLICT (run_id, attempt, phase, mark) DO NOTHING");
  if (!st) return st.error();
  if (auto s = st->bind(run_id, phase_name(phase), mark_name(mark), t, clock_name(clock), clock_.now_s(),
                        attrs.dump()).run();
      !s)
    return s.error();
  if (db_.changes() != 1) return false;
  changed(run_id);
  return true;
}

Result<EventOutcome> Ledger::apply_agent_event(int64_t run_id, const AgentEvent& ev) {
  if (!is_agent_phase(ev.phase))
    return make_error(Code::invalid_argument,
                      std::string(phase_name(ev.phase)) + " is timed by the daemon, not reported by the agent");
  Transaction tx(db_);
  if (!tx.begun()) return tx.begun().error();
  auto from = status(run_id);
  if (!from) return from.error();
  if (is_terminal(*from) || *from == RunStatus::queued)
    return make_error(Code::already_exists, "run " + std::to_string(run_id) + " is " +
                                                std::string(status_name(*from)) + ": it takes no agent events");
  auto nodes = nodes_of(run_id);
  if (!nodes) return nodes.error();
  if (ev.node < 0 || ev.node >= *nodes)
    return make_error(Code::invalid_argument, "run " + std::to_string(run_id) + " has " + std::to_string(*nodes) +
                                                  " node(s): there is no node " + std::to_string(ev.node));
  auto applied = *nodes > 1 ? apply_node_event(run_id, *nodes, ev) : apply_run_event(run_id, ev);
  if (!applied) return applied.error();
  const EventOutcome out = *applied;
  using Kind = AgentEvent::Kind;
  // A begin moves the run into that phase's status; the run only ever moves forward.
  RunStatus target = status_of(ev.phase);
  if (ev.kind == Kind::begin && target > *from && *from < RunStatus::terminating)
    if (auto s = advance_locked(run_id, *from, target, std::string(phase_name(ev.phase)) + " began"); !s)
      return s.error();
  if (auto s = tx.commit(); !s) return s.error();
  if (out.recorded || out.first_sign_of_life) changed(run_id);
  return out;
}

// Inside apply_agent_event's transaction: a run of one machine, whose marks are the run's.
Result<EventOutcome> Ledger::apply_run_event(int64_t run_id, const AgentEvent& ev) {
  EventOutcome out;
  // The agent's first event of any kind is the instance's first sign of life: startup ends here.
  auto first = record_mark(run_id, Phase::startup, Mark::end, clock_.now_s(), ClockDomain::daemon);
  if (!first) return first.error();
  out.first_sign_of_life = *first;

  using Kind = AgentEvent::Kind;
  if (ev.kind == Kind::begin || ev.kind == Kind::end) {
    auto rec = record_mark(run_id, ev.phase, ev.kind == Kind::begin ? Mark::begin : Mark::end, ev.mono_s,
                           ClockDomain::agent, ev.attrs);
    if (!rec) return rec.error();
    out.recorded = *rec;
    if (*rec && ev.kind == Kind::end)
      if (auto s = record_stats(run_id, ev.phase, ev.stats); !s) return s.error();
  } else if (ev.kind == Kind::progress) {
    auto st = db_.prepare("INSERT INTO run_epochs (run_id, epoch, attrs) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
    if (!st) return st.error();
    int64_t epoch = ev.attrs.value("epoch", int64_t{0});
    if (auto s = st->bind(run_id, epoch, epoch_attrs(ev).dump()).run(); !s) return s.error();
    out.recorded = db_.changes() == 1;
  } else if (ev.kind == Kind::interrupted || ev.kind == Kind::checkpoint) {
    auto kept = record_spot_event(run_id, 1, ev);
    if (!kept) return kept.error();
    out.recorded = *kept;
  } else {
    out.recorded = true;  // errors are acted on by the run's owner; the ledger keeps its reason at failure
  }
  return out;
}

// Inside apply_agent_event's transaction: an interruption's notice (the attempt's first, whichever node had it)
// or a delivered checkpoint (each rank's its own).
Result<bool> Ledger::record_spot_event(int64_t run_id, int nodes, const AgentEvent& ev) {
  if (ev.kind == AgentEvent::Kind::checkpoint) return record_checkpoint(run_id, nodes, ev);
  nlohmann::json notice = {{"source", "agent"}, {"cloud", ev.attrs.value("cloud", "")},
                           {"text", ev.attrs.value("notice", "")}, {"at", clock_.now_s()}, {"mono_s", ev.mono_s}};
  if (nodes > 1) notice["node"] = ev.node;
  return note_interruption(run_id, notice);
}

Result<int> Ledger::nodes_of(int64_t run_id) {
  auto st = db_.prepare("SELECT nodes FROM runs WHERE id = ?");
  if (!st) return st.error();
  st->bind(run_id);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "run " + std::to_string(run_id) + " not found");
  return static_cast<int>(st->int64(0));
}

Result<bool> Ledger::record_node_mark(int64_t run_id, int node, Phase phase, Mark mark, double t, ClockDomain clock,
                                      const nlohmann::json& attrs) {
  auto st = db_.prepare(
      "INSERT INTO node_marks (run_id, node, phase, mark, t, clock, received_at, attrs) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, node, phase, mark) DO NOTHING");
  if (!st) return st.error();
  if (auto s = st->bind(run_id, int64_t{node}, phase_name(phase), mark_name(mark), t, clock_name(clock),
                        clock_.now_s(), attrs.dump()).run();
      !s)
    return s.error();
  if (db_.changes() != 1) return false;
  changed(run_id);
  return true;
}

// Inside apply_agent_event's transaction.
Result<EventOutcome> Ledger::apply_node_event(int64_t run_id, int nodes, const AgentEvent& ev) {
  EventOutcome out;
  using Kind = AgentEvent::Kind;
  // The node's first event is its first sign of life; the run's startup ends with the last node's.
  auto first = record_node_mark(run_id, ev.node, Phase::startup, Mark::end, clock_.now_s(), ClockDomain::daemon);
  if (!first) return first.error();
  if (*first) {
    auto settled = settle(run_id, nodes, Phase::startup);
    if (!settled) return settled.error();
    out.first_sign_of_life = *settled;
  }
  if (ev.kind == Kind::begin || ev.kind == Kind::end) {
    auto rec = record_node_mark(run_id, ev.node, ev.phase, ev.kind == Kind::begin ? Mark::begin : Mark::end,
                                ev.mono_s, ClockDomain::agent, ev.attrs);
    if (!rec) return rec.error();
    out.recorded = *rec;
    if (*rec && ev.kind == Kind::end) {
      if (ev.node == 0)
        if (auto s = record_stats(run_id, ev.phase, ev.stats); !s) return s.error();
      if (auto settled = settle(run_id, nodes, ev.phase); !settled) return settled.error();
    }
  } else if (ev.kind == Kind::progress) {
    // Rank 0's epochs are the run's; a serving run's curve is its load client's (node 1's load levels).
    if (ev.node == 0 || ev.attrs.value("event", "") == "load_level") {
      auto st = db_.prepare("INSERT INTO run_epochs (run_id, epoch, attrs) VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
      if (!st) return st.error();
      if (auto s = st->bind(run_id, ev.attrs.value("epoch", int64_t{0}), epoch_attrs(ev).dump()).run(); !s)
        return s.error();
      out.recorded = db_.changes() == 1;
    }
  } else if (ev.kind == Kind::interrupted || ev.kind == Kind::checkpoint) {
    auto kept = record_spot_event(run_id, nodes, ev);
    if (!kept) return kept.error();
    out.recorded = *kept;
  } else {
    out.recorded = true;
  }
  return out;
}

Result<bool> Ledger::settle(int64_t run_id, int nodes, Phase phase) {
  auto all = node_phases(run_id);
  if (!all) return all.error();
  std::vector<const PhaseRecord*> recs;
  for (int n = 0; n < nodes; ++n) {
    auto node = all->find(n);
    if (node == all->end()) return false;
    auto rec = node->second.find(phase);
    if (rec == node->second.end() || !rec->second.end) return false;
    recs.push_back(&rec->second);
  }
  if (phase == Phase::startup) {  // the daemon's clock: each node's end; the run's begin is the first create's
    double first = recs[0]->end->t, last = first;
    int last_node = 0;
    for (int n = 0; n < nodes; ++n) {
      first = std::min(first, recs[n]->end->t);
      if (recs[n]->end->t > last) last = recs[n]->end->t, last_node = n;
    }
    return record_mark(run_id, Phase::startup, Mark::end, last, ClockDomain::daemon,
                       {{"spread_s", last - first}, {"last_node", last_node}, {"nodes", nodes}});
  }
  int slowest = -1;
  nlohmann::json seconds = nlohmann::json::array();
  for (int n = 0; n < nodes; ++n) {
    auto s = recs[n]->seconds();
    if (!s) return false;  // a node's end without its begin: nothing to compare yet
    seconds.push_back(*s);
    if (slowest < 0 || *s > seconds[slowest].get<double>()) slowest = n;
  }
  nlohmann::json end_attrs = recs[0]->end->attrs.is_object() ? recs[0]->end->attrs : nlohmann::json::object();
  end_attrs["slowest_node"] = slowest;
  end_attrs["node_seconds"] = seconds;
  auto b = record_mark(run_id, phase, Mark::begin, recs[slowest]->begin->t, ClockDomain::agent,
                       recs[0]->begin->attrs);
  if (!b) return b.error();
  return record_mark(run_id, phase, Mark::end, recs[slowest]->end->t, ClockDomain::agent, end_attrs);
}

Result<std::map<int, std::map<Phase, PhaseRecord>>> Ledger::node_phases(int64_t run_id) {
  auto st = db_.prepare("SELECT node, phase, mark, t, clock, attrs FROM node_marks WHERE run_id = ?");
  if (!st) return st.error();
  st->bind(run_id);
  std::map<int, std::map<Phase, PhaseRecord>> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    auto phase = parse_phase(st->text(1));
    if (!phase) continue;
    PhaseMark m{st->real(3), st->text(4) == "agent" ? ClockDomain::agent : ClockDomain::daemon,
                parse_attrs(st->text(5))};
    auto& rec = out[static_cast<int>(st->int64(0))][*phase];
    (st->text(2) == "begin" ? rec.begin : rec.end) = std::move(m);
  }
  return out;
}

Status Ledger::extend_instance(int64_t run_id, const nlohmann::json& group) {
  auto st = db_.prepare("SELECT instance FROM runs WHERE id = ?");
  if (!st) return st.error();
  st->bind(run_id);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "run " + std::to_string(run_id) + " not found");
  if (!st->is_null(0)) {
    auto old = nlohmann::json::parse(st->text(0), nullptr, false);
    const auto nodes_in = [](const nlohmann::json& h) {
      return h.is_object() && h.contains("data") && h["data"].is_object() && h["data"].contains("nodes") &&
                     h["data"]["nodes"].is_array()
                 ? h["data"]["nodes"]
                 : nlohmann::json::array();
    };
    const auto was = nodes_in(old), now = nodes_in(group);
    bool prefix = !old.is_discarded() && was.size() <= now.size() && old.value("provider", "") == group.value("provider", "");
    for (size_t i = 0; prefix && i < was.size(); ++i) prefix = was[i] == now[i];
    if (!prefix)
      return make_error(Code::already_exists, "run " + std::to_string(run_id) + " already has other instances");
  }
  auto up = db_.prepare("UPDATE runs SET instance = ? WHERE id = ?");
  if (!up) return up.error();
  if (auto s = up->bind(group.dump(), run_id).run(); !s) return s;
  changed(run_id);
  return {};
}

Status Ledger::set_queue_wait(int64_t run_id, double seconds) {
  auto st = db_.prepare("UPDATE runs SET queue_wait_s = ? WHERE id = ? AND queue_wait_s IS NULL");
  if (!st) return st.error();
  if (auto s = st->bind(seconds, run_id).run(); !s) return s;
  if (db_.changes() == 1) changed(run_id);
  return {};
}

Status Ledger::record_stats(int64_t run_id, Phase phase, const PhaseStats& stats) {
  for (const auto& [metric, v] : stats) {
    auto st = db_.prepare(
        "INSERT INTO phase_stats (run_id, attempt, phase, metric, min, avg, max) "
        "VALUES (?1, (SELECT attempt FROM runs WHERE id = ?1), ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING");
    if (!st) return st.error();
    if (auto s = st->bind(run_id, phase_name(phase), metric, v.min, v.avg, v.max).run(); !s) return s;
  }
  return {};
}

Status Ledger::set_instance(int64_t run_id, const nlohmann::json& handle) {
  auto st = db_.prepare("UPDATE runs SET instance = ?1 WHERE id = ?2 AND (instance IS NULL OR instance = ?1)");
  if (!st) return st.error();
  if (auto s = st->bind(handle.dump(), run_id).run(); !s) return s;
  if (db_.changes() != 1)
    return make_error(Code::already_exists, "run " + std::to_string(run_id) + " already has another instance");
  auto a = db_.prepare("UPDATE run_attempts SET instance = ?1 WHERE run_id = ?2 AND attempt = (SELECT attempt FROM runs WHERE id = ?2)");
  if (!a) return a.error();
  if (auto s = a->bind(handle.dump(), run_id).run(); !s) return s;
  changed(run_id);
  return {};
}

Result<std::map<Phase, PhaseRecord>> Ledger::phases(int64_t run_id) { return phases_of(run_id, std::nullopt); }

// The attempt's phases; nullopt: the current attempt's.
Result<std::map<Phase, PhaseRecord>> Ledger::phases_of(int64_t run_id, std::optional<int> attempt) {
  const std::string which = attempt ? "?2" : "(SELECT attempt FROM runs WHERE id = ?1)";
  auto st = db_.prepare("SELECT phase, mark, t, clock, attrs, received_at FROM phase_marks WHERE run_id = ?1 AND attempt = " + which);
  if (!st) return st.error();
  st->bind_at(1, run_id);
  if (attempt) st->bind_at(2, int64_t{*attempt});
  std::map<Phase, PhaseRecord> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    auto phase = parse_phase(st->text(0));
    if (!phase) continue;
    PhaseMark m{st->real(2), st->text(3) == "agent" ? ClockDomain::agent : ClockDomain::daemon,
                parse_attrs(st->text(4)), st->real(5)};
    auto& rec = out[*phase];
    (st->text(1) == "begin" ? rec.begin : rec.end) = std::move(m);
  }
  auto stats = db_.prepare("SELECT phase, metric, min, avg, max FROM phase_stats WHERE run_id = ?1 AND attempt = " + which);
  if (!stats) return stats.error();
  stats->bind_at(1, run_id);
  if (attempt) stats->bind_at(2, int64_t{*attempt});
  for (;;) {
    auto row = stats->step();
    if (!row) return row.error();
    if (!*row) break;
    if (auto phase = parse_phase(stats->text(0)))
      out[*phase].stats[stats->text(1)] = {stats->real(2), stats->real(3), stats->real(4)};
  }
  return out;
}

Result<int> Ledger::attempt_of(int64_t run_id) {
  auto st = db_.prepare("SELECT attempt FROM runs WHERE id = ?");
  if (!st) return st.error();
  st->bind(run_id);
  auto row = st->step();
  if (!row) return row.error();
  if (!*row) return make_error(Code::not_found, "run " + std::to_string(run_id) + " not found");
  return static_cast<int>(st->int64(0));
}

Status Ledger::begin_attempt(int64_t run_id, const AttemptSpec& spec) {
  auto st = db_.prepare(
      "INSERT INTO run_attempts (run_id, attempt, provider, instance_type, market, hourly_price, started_at, zone, "
      "region, currency) SELECT id, attempt, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 FROM runs WHERE id = ?1 "
      "ON CONFLICT DO NOTHING");
  if (!st) return st.error();
  if (auto s = st->bind(run_id, spec.provider, spec.instance_type, spec.market, spec.hourly_price, clock_.now_s(),
                        spec.zone, spec.region, spec.currency).run();
      !s)
    return s;
  if (db_.changes() == 1) changed(run_id);
  return {};
}

Status Ledger::next_attempt(int64_t run_id, const AttemptSpec& next, std::string_view reason,
                            std::string_view outcome) {
  Transaction tx(db_);
  if (!tx.begun()) return tx.begun().error();
  auto from = status(run_id);
  if (!from) return from.error();
  if (is_terminal(*from))
    return make_error(Code::already_exists, "run " + std::to_string(run_id) + " is already " +
                                                std::string(status_name(*from)));
  const double now = clock_.now_s();
  auto end = db_.prepare(
      "UPDATE run_attempts SET ended_at = ?1, outcome = ?4, reason = ?2 WHERE run_id = ?3 AND "
      "ended_at IS NULL AND attempt = (SELECT attempt FROM runs WHERE id = ?3)");
  if (!end) return end.error();
  if (auto s = end->bind(now, reason, run_id, outcome).run(); !s) return s;
  auto up = db_.prepare(
      "UPDATE runs SET status = 'queued', reason = ?1, updated_at = ?2, attempt = attempt + 1, instance = NULL, "
      "provider = ?3, instance_type = ?4, market = ?5, hourly_price = ?6, region = ?8, zone = ?9, currency = ?10, "
      "machine = COALESCE(?11, machine) WHERE id = ?7");
  if (!up) return up.error();
  const std::optional<std::string> machine =
      next.machine.is_object() ? std::optional<std::string>(next.machine.dump()) : std::nullopt;
  if (auto s = up->bind(reason, now, next.provider, next.instance_type, next.market, next.hourly_price, run_id,
                        next.region, next.zone, next.currency, machine).run();
      !s)
    return s;
  auto log = db_.prepare(
      "INSERT INTO run_transitions (run_id, seq, from_status, to_status, reason, at) "
      "VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_transitions WHERE run_id = ?1), ?2, 'queued', ?3, ?4)");
  if (!log) return log.error();
  if (auto s = log->bind(run_id, status_name(*from), reason, now).run(); !s) return s;
  if (auto s = tx.commit(); !s) return s;
  changed(run_id);
  return {};
}

Status Ledger::move_attempt(int64_t run_id, const AttemptSpec& to, const nlohmann::json& skipped) {
  Transaction tx(db_);
  if (!tx.begun()) return tx.begun().error();
  auto at = db_.prepare(
      "UPDATE run_attempts SET provider = ?2, instance_type = ?3, market = ?4, hourly_price = ?5, zone = ?6, "
      "region = ?7, currency = ?8, skipped = json_insert(skipped, '$[#]', json(?9)) WHERE run_id = ?1 AND "
      "instance IS NULL AND ended_at IS NULL AND attempt = (SELECT attempt FROM runs WHERE id = ?1)");
  if (!at) return at.error();
  if (auto s = at->bind(run_id, to.provider, to.instance_type, to.market, to.hourly_price, to.zone, to.region,
                        to.currency, skipped.dump()).run();
      !s)
    return s;
  if (db_.changes() != 1)
    return make_error(Code::already_exists, "run " + std::to_string(run_id) + "'s attempt has a machine or has ended");
  auto up = db_.prepare(
      "UPDATE runs SET provider = ?2, instance_type = ?3, market = ?4, hourly_price = ?5, zone = ?6, region = ?7, "
      "currency = ?8, machine = COALESCE(?9, machine), updated_at = ?10 WHERE id = ?1 AND instance IS NULL");
  if (!up) return up.error();
  const std::optional<std::string> machine =
      to.machine.is_object() ? std::optional<std::string>(to.machine.dump()) : std::nullopt;
  if (auto s = up->bind(run_id, to.provider, to.instance_type, to.market, to.hourly_price, to.zone, to.region,
                        to.currency, machine, clock_.now_s()).run();
      !s)
    return s;
  if (auto s = tx.commit(); !s) return s;
  changed(run_id);
  return {};
}

Result<bool> Ledger::note_interruption(int64_t run_id, const nlohmann::json& notice) {
  auto st = db_.prepare(
      "UPDATE run_attempts SET notice = ?1 WHERE run_id = ?2 AND notice IS NULL AND ended_at IS NULL AND "
      "attempt = (SELECT attempt FROM runs WHERE id = ?2)");
  if (!st) return st.error();
  if (auto s = st->bind(notice.dump(), run_id).run(); !s) return s.error();
  const bool written = db_.changes() == 1;
  if (written) changed(run_id);
  return written;
}

// Inside apply_agent_event's transaction: the checkpoint names an artifact of the run the daemon holds whole.
Result<bool> Ledger::record_checkpoint(int64_t run_id, int nodes, const AgentEvent& ev) {
  const std::string artifact = ev.attrs.value("artifact", ""), sha = ev.attrs.value("sha256", "");
  auto held = db_.prepare("SELECT sha256, bytes FROM run_artifacts WHERE run_id = ? AND name = ?");
  if (!held) return held.error();
  held->bind(run_id, artifact);
  auto row = held->step();
  if (!row) return row.error();
  if (!*row || held->text(0) != sha)
    return make_error(Code::invalid_argument, "checkpoint " + artifact + (*row ? " has another sha256 than the "
                                              "artifact the daemon holds" : " is not an artifact the daemon holds"));
  const int64_t bytes = held->int64(1);
  nlohmann::json attrs = ev.attrs.contains("trainer") && ev.attrs["trainer"].is_object() ? ev.attrs["trainer"]
                                                                                        : nlohmann::json::object();
  attrs.erase("event");
  attrs.erase("path");
  attrs.erase("rank");
  if (nodes > 1) attrs["node"] = ev.node;  // one rank's
  // When it was taken, on the daemon's clock: received now, sent (ev.mono_s) that long after the trainer wrote it
  // (its own mono_s, the same clock on the machine). What a machine learned after it is lost if the machine goes.
  const double taken_ago = attrs.contains("mono_s") && attrs["mono_s"].is_number()
                               ? ev.mono_s - attrs["mono_s"].get<double>() : 0.0;
  attrs["taken_at"] = clock_.now_s() - (taken_ago > 0 && taken_ago < 86400 ? taken_ago : 0.0);
  auto st = db_.prepare(
      "INSERT INTO run_checkpoints (run_id, attempt, artifact, sha256, bytes, attrs, received_at) "
      "VALUES (?1, (SELECT attempt FROM runs WHERE id = ?1), ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING");
  if (!st) return st.error();
  if (auto s = st->bind(run_id, artifact, sha, bytes, attrs.dump(), clock_.now_s()).run(); !s) return s.error();
  return db_.changes() == 1;
}

Result<std::vector<CheckpointRecord>> Ledger::checkpoints(int64_t run_id) {
  auto st = db_.prepare(
      "SELECT attempt, artifact, sha256, bytes, attrs, received_at FROM run_checkpoints WHERE run_id = ? "
      "ORDER BY received_at, attempt");
  if (!st) return st.error();
  st->bind(run_id);
  std::vector<CheckpointRecord> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({static_cast<int>(st->int64(0)), st->text(1), st->text(2), st->int64(3), parse_attrs(st->text(4)),
                   st->real(5)});
  }
  return out;
}

Result<std::optional<CheckpointRecord>> Ledger::last_checkpoint(int64_t run_id) {
  auto all = checkpoints(run_id);
  if (!all) return all.error();
  if (all->empty()) return std::optional<CheckpointRecord>{};
  return std::optional<CheckpointRecord>(all->back());
}

Result<std::vector<CheckpointRecord>> Ledger::resume_checkpoints(int64_t run_id, int nodes) {
  auto all = checkpoints(run_id);
  if (!all) return all.error();
  if (nodes <= 1) {
    if (all->empty()) return std::vector<CheckpointRecord>{};
    return std::vector<CheckpointRecord>{all->back()};
  }
  // The ranks' checkpoints by step (each rank's newest at that step), then the newest step all of them reached.
  std::map<int64_t, std::map<int, CheckpointRecord>> by_step;
  for (const auto& c : *all) {
    if (!c.attrs.contains("node") || !c.attrs.contains("step")) continue;
    const int node = c.attrs.value("node", -1);
    if (node >= 0 && node < nodes) by_step[c.attrs.value("step", int64_t{-1})][node] = c;
  }
  for (auto it = by_step.rbegin(); it != by_step.rend(); ++it)
    if (static_cast<int>(it->second.size()) == nodes) {
      std::vector<CheckpointRecord> out;
      for (auto& [_, c] : it->second) out.push_back(c);
      return out;
    }
  return std::vector<CheckpointRecord>{};
}

Result<std::vector<AttemptRecord>> Ledger::attempts(int64_t run_id) {
  auto st = db_.prepare(
      "SELECT attempt, provider, instance_type, market, hourly_price, instance, started_at, ended_at, outcome, reason, "
      "notice, zone, region, currency, skipped FROM run_attempts WHERE run_id = ? ORDER BY attempt");
  if (!st) return st.error();
  st->bind(run_id);
  std::vector<AttemptRecord> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    AttemptRecord a;
    a.attempt = static_cast<int>(st->int64(0));
    a.spec = {st->text(1), st->text(2), st->text(3), st->real(4), st->text(11), st->text(12), st->text(13)};
    a.skipped = parse_attrs(st->text(14));
    if (!a.skipped.is_array()) a.skipped = nlohmann::json::array();
    if (!st->is_null(5)) a.instance = parse_attrs(st->text(5));
    a.started_at = st->real(6);
    a.ended_at = st->opt_real(7);
    a.outcome = st->is_null(8) ? "" : st->text(8);
    a.reason = st->text(9);
    if (!st->is_null(10)) a.notice = parse_attrs(st->text(10));
    out.push_back(std::move(a));
  }
  for (auto& a : out) {  // the statement is done
    auto p = phases_of(run_id, a.attempt);
    if (!p) return p.error();
    a.phases = std::move(*p);
  }
  return out;
}

}  // namespace tsum::daemon
