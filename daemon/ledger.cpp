#include "daemon/ledger.h"

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
  auto log = db_.prepare(
      "INSERT INTO run_transitions (run_id, seq, from_status, to_status, reason, at) "
      "VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_transitions WHERE run_id = ?1), ?2, ?3, ?4, ?5)");
  if (!log) return log.error();
  return log->bind(run_id, status_name(from), status_name(to), reason, now).run();
}

Result<bool> Ledger::record_mark(int64_t run_id, Phase phase, Mark mark, double t, ClockDomain clock,
                                 const nlohmann::json& attrs) {
  auto st = db_.prepare(
      "INSERT INTO phase_marks (run_id, phase, mark, t, clock, received_at, attrs) VALUES (?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (run_id, phase, mark) DO NOTHING");
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
    if (auto s = st->bind(run_id, epoch, ev.attrs.dump()).run(); !s) return s.error();
    out.recorded = db_.changes() == 1;
  } else {
    out.recorded = true;  // errors are acted on by the run's owner; the ledger keeps its reason at failure
  }
  // A begin moves the run into that phase's status; the run only ever moves forward.
  RunStatus target = status_of(ev.phase);
  if (ev.kind == Kind::begin && target > *from && *from < RunStatus::terminating)
    if (auto s = advance_locked(run_id, *from, target, std::string(phase_name(ev.phase)) + " began"); !s)
      return s.error();
  if (auto s = tx.commit(); !s) return s.error();
  if (out.recorded || out.first_sign_of_life) changed(run_id);
  return out;
}

Status Ledger::record_stats(int64_t run_id, Phase phase, const PhaseStats& stats) {
  for (const auto& [metric, v] : stats) {
    auto st = db_.prepare(
        "INSERT INTO phase_stats (run_id, phase, metric, min, avg, max) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING");
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
  return {};
}

Result<std::map<Phase, PhaseRecord>> Ledger::phases(int64_t run_id) {
  auto st = db_.prepare("SELECT phase, mark, t, clock, attrs FROM phase_marks WHERE run_id = ?");
  if (!st) return st.error();
  st->bind(run_id);
  std::map<Phase, PhaseRecord> out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    auto phase = parse_phase(st->text(0));
    if (!phase) continue;
    PhaseMark m{st->real(2), st->text(3) == "agent" ? ClockDomain::agent : ClockDomain::daemon,
                parse_attrs(st->text(4))};
    auto& rec = out[*phase];
    (st->text(1) == "begin" ? rec.begin : rec.end) = std::move(m);
  }
  auto stats = db_.prepare("SELECT phase, metric, min, avg, max FROM phase_stats WHERE run_id = ?");
  if (!stats) return stats.error();
  stats->bind(run_id);
  for (;;) {
    auto row = stats->step();
    if (!row) return row.error();
    if (!*row) break;
    if (auto phase = parse_phase(stats->text(0)))
      out[*phase].stats[stats->text(1)] = {stats->real(2), stats->real(3), stats->real(4)};
  }
  return out;
}

}  // namespace tsum::daemon
