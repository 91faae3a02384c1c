// The run ledger: the one door through which a run's status changes and its phase marks are written.
//
// - advance() is the only writer of runs.status. It validates the transition, writes the status and an
//   entry in run_transitions in one transaction.
// - record_mark() writes a phase's begin or end once. A repeated or replayed mark is ignored (the schema's
//   primary key with ON CONFLICT DO NOTHING), so no retry can move a measured time.
// - apply_agent_event() applies one agent event atomically: the startup end (first sign of life, on the
//   daemon's clock), the phase mark, and the status that phase implies; an interruption's notice and a
//   delivered checkpoint (whose artifact the daemon must hold) are kept with the current attempt.
// - attempts: a run interrupted on a spot machine goes on on a next one (next_attempt). Marks and stats are
//   per attempt (phase_marks.attempt); phases() reads the current attempt's, attempts() every one's.
// - a run of N nodes (runs.nodes > 1) keeps each node's marks in node_marks, write-once too. The run's own mark
//   of a phase is written once every node has ended it: the slowest node's begin and end (each node's
//   durations come from its own clock), with node 0's attrs (rank 0 reports the run's metrics) plus
//   "slowest_node" and "node_seconds". Startup ends when the last node has spoken ("spread_s": last - first).
//   Progress (epochs) is node 0's; a begin from any node moves the run forward.
// - an observer, if set, hears the id of every run that changed (status, mark or epoch sample), so watchers
//   can wake up (see run_watch.h). It only listens: it must not change the run or re-enter the ledger.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "daemon/agent/agent_event.h"
#include "daemon/store/db.h"
#include "daemon/runs/run_status.h"

namespace tsum::daemon {

struct PhaseMark {
  double t = 0;
  ClockDomain clock = ClockDomain::daemon;
  nlohmann::json attrs;
  double received_at = 0;  // the daemon's clock when it arrived
};

struct PhaseRecord {
  std::optional<PhaseMark> begin;
  std::optional<PhaseMark> end;
  PhaseStats stats;
  // end - begin when both are present on the same clock.
  std::optional<double> seconds() const;
};

// One machine of a run (runs.attempt counts them): what it was, how it ended, its own phases.
struct AttemptSpec {
  std::string provider, instance_type, market = "on-demand";
  double hourly_price = 0;
  std::string zone = {};    // where it was placed (spot_recovery.zones, or a recovery's pick); empty: the provider's own
  std::string region = {};  // its region; empty: the provider's default
  std::string currency = "USD";
  nlohmann::json machine = nullptr;  // providers::machine_of its offer, where it changed (another cloud's type)
};
struct AttemptRecord {
  int attempt = 1;
  AttemptSpec spec;
  std::optional<nlohmann::json> instance;
  double started_at = 0;
  std::optional<double> ended_at;
  std::string outcome;  // "" while it runs; interrupted, done, failed, cancelled
  std::string reason;
  std::optional<nlohmann::json> notice;  // {"source": "agent"|"cloud", "cloud", "text", "at"}
  nlohmann::json skipped = nlohmann::json::array();  // offers passed over for capacity: [{"offer", "error"}]
  std::map<Phase, PhaseRecord> phases;
};
// A checkpoint an agent delivered: the run's artifact and what the trainer said of it.
struct CheckpointRecord {
  int attempt = 1;
  std::string artifact, sha256;
  int64_t bytes = 0;
  nlohmann::json attrs;  // epoch, examples, step, learn_seconds, reason ("periodic" | "signal")
  double received_at = 0;
};

struct EventOutcome {
  bool recorded = false;   // false: a duplicate, nothing changed
  bool first_sign_of_life = false;
};

class Ledger {
 public:
  Ledger(Db& db, const Clock& clock) : db_(db), clock_(clock) {}

  // Called with a run's id after each change to it (a new status, a new mark, a new epoch sample, its
  // instance handle). Inside a
  // transaction it may hear of a change before the commit: it should only schedule work (wake watchers),
  // never read the run synchronously.
  void set_observer(std::function<void(int64_t run_id)> on_change) { on_change_ = std::move(on_change); }

  // Moves run_id to `to`. Allowed: forward along the lifecycle from a non-terminal status (skipping is
  // fine), to failed or cancelled from any non-terminal status, and to done only from terminating.
  // The run's reason becomes `reason` (history stays in run_transitions). Advancing to the current
  // status is a no-op. Anything else is invalid_argument; an unknown run is
  // not_found. A terminal run refuses every change with already_exists.
  Status advance(int64_t run_id, RunStatus to, std::string_view reason);

  // Writes one mark. Result: true if written, false if that mark already existed (left unchanged).
  Result<bool> record_mark(int64_t run_id, Phase phase, Mark mark, double t, ClockDomain clock,
                           const nlohmann::json& attrs = nlohmann::json::object());

  // Applies an agent event in one transaction. A queued or finished run refuses it with already_exists.
  // An end mark's stats are stored with it, once: a replayed end changes neither.
  Result<EventOutcome> apply_agent_event(int64_t run_id, const AgentEvent& ev);

  // Writes one node's mark (node_marks), e.g. a node's startup begin at its create. Same result as record_mark.
  Result<bool> record_node_mark(int64_t run_id, int node, Phase phase, Mark mark, double t, ClockDomain clock,
                                const nlohmann::json& attrs = nlohmann::json::object());
  // Each node's phases, by node (empty for a run of one node).
  Result<std::map<int, std::map<Phase, PhaseRecord>>> node_phases(int64_t run_id);

  // Stores the provider's handle for the run. Written once: a second call with a different handle fails.
  Status set_instance(int64_t run_id, const nlohmann::json& handle);
  // A multi-node run's handle grows as its nodes are created: `group` may replace the stored one only when it
  // holds every node the stored one does, in the same order (providers/node_group.h).
  Status extend_instance(int64_t run_id, const nlohmann::json& group);
  // The run's wait in a scheduler's queue (InstanceStatus::queue_wait_s). Written once: later calls change nothing.
  Status set_queue_wait(int64_t run_id, double seconds);

  Result<RunStatus> status(int64_t run_id);
  // The current attempt's phases.
  Result<std::map<Phase, PhaseRecord>> phases(int64_t run_id);

  // ---- attempts (spot machines) ----
  // The current attempt's row, written at dispatch if it has none yet (idempotent).
  Status begin_attempt(int64_t run_id, const AttemptSpec& spec);
  // The current attempt ended (`outcome`: "interrupted" when the cloud took the machine back, "abandoned" when a
  // restarted daemon found it unfinished; `reason` says how): it is closed, and the run goes back to the queue for
  // its next attempt, on `next` (whose provider, type, market and price become the run's). Its machine must be
  // gone already (the caller terminated it): the run's instance is cleared. A finished run: already_exists.
  Status next_attempt(int64_t run_id, const AttemptSpec& next, std::string_view reason,
                      std::string_view outcome = "interrupted");
  // The current attempt's machine could not be had where it was to go (the cloud's capacity ran out before any
  // machine of it was recorded): it goes to `to` instead, and `skipped` ({"offer", "error"}) is added to the
  // attempt's list. The run's provider, type, market, price, region and zone become `to`'s.
  Status move_attempt(int64_t run_id, const AttemptSpec& to, const nlohmann::json& skipped);
  // The interruption's notice on the current attempt, kept once (the first one wins). True if written.
  Result<bool> note_interruption(int64_t run_id, const nlohmann::json& notice);
  Result<int> attempt_of(int64_t run_id);
  // Every attempt in order, each with its phases; empty for a run from before attempts were kept.
  Result<std::vector<AttemptRecord>> attempts(int64_t run_id);
  // The checkpoints the run's agents delivered, oldest first; and the newest, if any.
  Result<std::vector<CheckpointRecord>> checkpoints(int64_t run_id);
  // What a next attempt of `nodes` machines resumes from: the newest checkpoint (one machine), or each rank's at
  // the newest step every rank checkpointed (index = node); empty when there is none.
  Result<std::vector<CheckpointRecord>> resume_checkpoints(int64_t run_id, int nodes);
  Result<std::optional<CheckpointRecord>> last_checkpoint(int64_t run_id);

 private:
  Status advance_locked(int64_t run_id, RunStatus from, RunStatus to, std::string_view reason);
  Status record_stats(int64_t run_id, Phase phase, const PhaseStats& stats);
  Result<int> nodes_of(int64_t run_id);
  Result<EventOutcome> apply_run_event(int64_t run_id, const AgentEvent& ev);
  // `nodes`: the run's (a multi-node run's notice and checkpoints name their node).
  Result<bool> record_spot_event(int64_t run_id, int nodes, const AgentEvent& ev);
  Result<bool> record_checkpoint(int64_t run_id, int nodes, const AgentEvent& ev);
  Result<std::map<Phase, PhaseRecord>> phases_of(int64_t run_id, std::optional<int> attempt);
  Result<EventOutcome> apply_node_event(int64_t run_id, int nodes, const AgentEvent& ev);
  // Writes the run's mark of `phase` from its nodes' once all `nodes` have ended it. True if written.
  Result<bool> settle(int64_t run_id, int nodes, Phase phase);
  void changed(int64_t run_id) const {
    if (on_change_) on_change_(run_id);
  }

  Db& db_;
  const Clock& clock_;
  std::function<void(int64_t)> on_change_;
};

}  // namespace tsum::daemon
