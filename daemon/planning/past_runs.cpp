#include "daemon/planning/past_runs.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "daemon/runs/admission.h"
#include "daemon/store/db.h"
#include "daemon/runs/ledger.h"
#include "daemon/store/store.h"
#include "sql/migrations.h"

namespace tsum::daemon {

using nlohmann::json;

namespace {

constexpr int kOldestReadable = 2;  // 0002 added phase_stats, which Ledger::phases reads with the marks

Status check_schema(Db& db) {
  auto version = db.schema_version();
  if (!version) return make_error(Code::invalid_argument, "not a tsum database (" + version.error().detail + ")");
  auto latest = latest_schema_version(sql::migrations());
  if (!latest) return latest.error();
  if (*version == 0) return make_error(Code::invalid_argument, "not a tsum database (no schema version)");
  if (*version > *latest)
    return make_error(Code::invalid_argument, "database schema version " + std::to_string(*version) +
                                                  " is newer than this tsumd knows (" + std::to_string(*latest) + ")");
  if (*version < kOldestReadable)
    return make_error(Code::invalid_argument, "database schema version " + std::to_string(*version) +
                                                  " is too old to read; `tsumd serve --db` on it once migrates it");
  return {};
}

int int_of(const json& data, const char* key) {
  auto it = data.find(key);
  return it != data.end() && it->is_number_integer() ? it->get<int>() : 0;
}

}  // namespace

void describe_machine(const json& machine, billing::ConfigSpec& cfg) {
  if (!machine.is_object()) return;
  if (machine.contains("vcpus")) cfg.cores = int_of(machine, "vcpus");
  if (machine.contains("gpus")) cfg.gpus = int_of(machine, "gpus");
  cfg.gpu_type = machine.value("gpu_type", cfg.gpu_type);
  cfg.cpu_family = machine.value("family", cfg.cpu_family);
  cfg.memory_gib = machine.value("memory_gib", cfg.memory_gib);
  cfg.cpu_model = machine.value("cpu_model", cfg.cpu_model);
}

namespace {

// What machine the run ran on, from the places listed in past_runs.h, in that order.
billing::ConfigSpec machine_of(const RunRow& r, std::span<const billing::Catalog> catalogs) {
  billing::ConfigSpec cfg;
  cfg.config = r.provider + "/" + r.instance_type;
  cfg.provider = r.provider;
  cfg.instance_type = r.instance_type;
  cfg.nodes = r.nodes;
  if (r.nodes > 1) cfg.config += "/x" + std::to_string(r.nodes);  // as POST /v1/plan names a multi-node config
  // The machine as stored with the run (runs.machine, from its offer), where it says the cores.
  if (r.machine.contains("vcpus") || r.machine.contains("gpus")) {
    describe_machine(r.machine, cfg);
    return cfg;
  }
  const json data = r.instance && r.instance->is_object() ? r.instance->value("data", json::object()) : json();
  if (data.is_object() && data.contains("cores")) {
    cfg.cores = int_of(data, "cores");
    cfg.gpus = int_of(data, "gpus");
    return cfg;
  }
  if (int n = local_cores_of(r.provider, r.instance_type); n > 0) {
    cfg.cores = n;
    return cfg;
  }
  for (const auto& c : catalogs) {
    const auto* o = c.provider == r.provider ? c.find(r.instance_type) : nullptr;
    if (!o) continue;
    cfg.cores = o->vcpus;
    cfg.gpus = o->gpus;
    cfg.gpu_type = o->gpu_type;
    cfg.cpu_family = o->cpu_family;
    break;
  }
  return cfg;
}

// The 8 phase durations, or nullopt when one is unmeasured.
std::optional<billing::PhaseSeconds> phases_of(const std::map<Phase, PhaseRecord>& marks) {
  billing::PhaseSeconds out{};
  for (size_t i = 0; i < kPhaseNames.size(); ++i) {
    auto it = marks.find(static_cast<Phase>(i));
    auto secs = it == marks.end() ? std::nullopt : it->second.seconds();
    if (!secs || *secs < 0) return std::nullopt;
    out[i] = *secs;
  }
  return out;
}

// "5 runs in experiments 1, 2, none done with all 8 phases measured: 1 done with a phase unmeasured, 4 failed"
std::string none_qualified(const std::map<std::string, int>& why, const std::vector<int64_t>& experiments) {
  if (experiments.empty()) return "the database has no experiments; nothing to replay";
  std::string where = experiments.size() == 1 ? "experiment" : "experiments";
  for (size_t i = 0; i < experiments.size(); ++i) where += (i ? ", " : " ") + std::to_string(experiments[i]);
  int total = 0;
  std::string parts;
  for (const auto& [reason, n] : why) {
    total += n;
    parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + reason;
  }
  if (total == 0) return "no runs in " + where + "; nothing to replay";
  return std::to_string(total) + (total == 1 ? " run" : " runs") + " in " + where +
         ", none done with all 8 phases measured: " + parts;
}

Status check_known(const std::vector<int64_t>& wanted, const std::vector<int64_t>& known) {
  for (auto id : wanted) {
    if (std::find(known.begin(), known.end(), id) != known.end()) continue;
    std::string have;
    for (auto k : known) have += (have.empty() ? "" : ", ") + std::to_string(k);
    return make_error(Code::not_found, "no experiment " + std::to_string(id) + " in the database (it has " +
                                           (have.empty() ? std::string("none") : have) + ")");
  }
  return {};
}

}  // namespace

Result<std::vector<billing::CsvRun>> read_past_runs(const std::string& db_path,
                                                    const std::vector<int64_t>& experiment_ids,
                                                    std::span<const billing::Catalog> catalogs) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return make_error(Code::not_found, "no such file");
  if (!std::filesystem::is_regular_file(db_path, ec)) return make_error(Code::invalid_argument, "not a regular file");
  auto db = Db::open_read_only(db_path);
  if (!db) return db.error();
  if (auto s = check_schema(**db); !s) return s.error();
  SystemClock clock;  // Store and Ledger want one; nothing here reads or writes the time
  Store store(**db, clock);
  Ledger ledger(**db, clock);
  auto known = store.experiment_ids();
  if (!known) return known.error();
  std::vector<int64_t> chosen = experiment_ids.empty() ? *known : experiment_ids;
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  if (auto s = check_known(chosen, *known); !s) return s.error();

  std::vector<billing::CsvRun> out;
  std::map<std::string, int> skipped;  // why, count
  for (auto experiment : chosen) {
    auto runs = store.runs_of(experiment);
    if (!runs) return runs.error();
    for (const auto& r : *runs) {
      if (r.status != RunStatus::done) {
        ++skipped[std::string(status_name(r.status))];
        continue;
      }
      if (r.attempt > 1) {  // its phases are split over machines: not one machine's run of the workload
        ++skipped["resumed after an interruption"];
        continue;
      }
      auto marks = ledger.phases(r.id);
      if (!marks) return marks.error();
      auto phases = phases_of(*marks);
      if (!phases) {
        ++skipped["done with a phase unmeasured"];
        continue;
      }
      billing::CsvRun row{.line = static_cast<int>(r.id), .run = {}, .price_per_hour = r.hourly_price,
                          .currency = r.currency};
      row.run.cfg = machine_of(r, catalogs);
      row.run.phases = *phases;
      out.push_back(std::move(row));
    }
  }
  if (out.empty()) return make_error(Code::not_found, none_qualified(skipped, chosen));
  return out;
}

}  // namespace tsum::daemon
