#include "daemon/schedules/scheduler.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cmath>

#include "daemon/experiments/submit.h"

namespace tsum::daemon {

using nlohmann::json;
namespace asio = boost::asio;

namespace {

SysSeconds to_sys(double unix_s) { return SysSeconds(std::chrono::seconds(static_cast<int64_t>(std::floor(unix_s)))); }
double to_unix(SysSeconds t) { return static_cast<double>(t.time_since_epoch().count()); }

std::string local_time(double unix_s, const std::string& zone) {
  cctz::time_zone tz;
  if (!cctz::load_time_zone(zone, &tz)) tz = cctz::utc_time_zone();
  return cctz::format("%Y-%m-%dT%H:%M:%S%Ez", to_sys(unix_s), tz);
}

json spec_json(const ScheduleSpec& s) {
  return {{"name", s.name},         {"cron", s.cron},     {"timezone", s.timezone},
          {"experiment", s.experiment}, {"budget", s.budget ? json(*s.budget) : json(nullptr)},
          {"missed", s.missed},     {"enabled", s.enabled}};
}

}  // namespace

Scheduler::Scheduler(asio::io_context& io, Db& db, Store& store, ProviderRegistry& providers, Datasets& datasets,
                     const Clock& clock, std::function<void()> on_experiment)
    : db_(db), store_(store), providers_(providers), datasets_(datasets), clock_(clock), on_experiment_(std::move(on_experiment)),
      timer_(io) {}

Result<std::optional<double>> Scheduler::next_after(const ScheduleSpec& spec, double after) {
  auto cron = CronSchedule::parse(spec.cron, spec.timezone);
  if (!cron) return cron.error();
  auto t = cron->next(to_sys(after));
  if (!t) return std::optional<double>{};  // never fires again
  return std::optional<double>(to_unix(*t));
}

Result<int64_t> Scheduler::create(const ScheduleSpec& spec) {
  double now = clock_.now_s();
  auto next = next_after(spec, now);
  if (!next) return next.error();
  auto st = db_.prepare(
      "INSERT INTO schedules (name, cron, timezone, experiment, budget, missed, enabled, next_fire_at, created_at, "
      "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  if (auto s = st->bind(spec.name, spec.cron, spec.timezone, spec.experiment.dump(), spec.budget, spec.missed,
                        spec.enabled ? 1 : 0, *next, now, now).run();
      !s)
    return s.error();
  int64_t id = db_.last_insert_id();
  wake();
  return id;
}

Status Scheduler::update(int64_t id, const ScheduleSpec& spec) {
  if (auto r = row(id); !r) return r.error();
  double now = clock_.now_s();
  auto next = next_after(spec, now);
  if (!next) return next.error();
  auto st = db_.prepare(
      "UPDATE schedules SET name = ?, cron = ?, timezone = ?, experiment = ?, budget = ?, missed = ?, enabled = ?, "
      "next_fire_at = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL");
  if (!st) return st.error();
  if (auto s = st->bind(spec.name, spec.cron, spec.timezone, spec.experiment.dump(), spec.budget, spec.missed,
                        spec.enabled ? 1 : 0, *next, now, id).run();
      !s)
    return s;
  wake();
  return {};
}

Status Scheduler::remove(int64_t id) {
  if (auto r = row(id); !r) return r.error();
  // Kept as a row: the experiments it fired still point at it.
  auto st = db_.prepare("UPDATE schedules SET deleted_at = ?, enabled = 0, next_fire_at = NULL WHERE id = ?");
  if (!st) return st.error();
  if (auto s = st->bind(clock_.now_s(), id).run(); !s) return s;
  wake();
  return {};
}

Result<Scheduler::Row> Scheduler::row(int64_t id) {
  auto st = db_.prepare(
      "SELECT name, cron, timezone, experiment, budget, missed, enabled, next_fire_at FROM schedules "
      "WHERE id = ? AND deleted_at IS NULL");
  if (!st) return st.error();
  st->bind(id);
  auto found = st->step();
  if (!found) return found.error();
  if (!*found) return make_error(Code::not_found, "schedule " + std::to_string(id) + " not found");
  Row r;
  r.id = id;
  r.spec.name = st->text(0);
  r.spec.cron = st->text(1);
  r.spec.timezone = st->text(2);
  r.spec.experiment = json::parse(st->text(3), nullptr, false);
  r.spec.budget = st->opt_real(4);
  r.spec.missed = st->text(5);
  r.spec.enabled = st->int64(6) != 0;
  r.next_fire_at = st->opt_real(7);
  return r;
}

namespace {

// A firing as the API shows it, from a row of (due_at, fired_at, outcome, experiment_id, detail).
json firing_json(const Stmt& st) {
  return {{"due_at", st.real(0)},
          {"fired_at", st.real(1)},
          {"outcome", st.text(2)},
          {"experiment_id", st.is_null(3) ? json(nullptr) : json(st.int64(3))},
          {"detail", st.text(4)}};
}

}  // namespace

Result<json> Scheduler::get(int64_t id) {
  auto out = brief(id);
  if (!out) return out.error();
  auto page = firings(id, {.limit = 20, .descending = true});
  if (!page) return page.error();
  (*out)["firings"] = std::move(page->rows);
  return out;
}

Result<json> Scheduler::brief(int64_t id) {
  auto r = row(id);
  if (!r) return r.error();
  json out = spec_json(r->spec);
  out["id"] = id;
  out["next_fire_at"] = r->next_fire_at ? json(*r->next_fire_at) : json(nullptr);
  out["next_fire_local"] = r->next_fire_at ? json(local_time(*r->next_fire_at, r->spec.timezone)) : json(nullptr);
  return out;
}

Result<PageOf<json>> Scheduler::firings(int64_t id, const PageRequest& page) {
  if (auto r = row(id); !r) return r.error();
  PageOf<json> out;
  {
    auto n = db_.prepare("SELECT COUNT(*) FROM schedule_firings WHERE schedule_id = ?");
    if (!n) return n.error();
    n->bind(id);
    auto counted = n->step();
    if (!counted) return counted.error();
    out.total = n->int64(0);
  }
  const int limit = std::clamp(page.limit, 1, PageRequest::kMaxLimit);
  std::string sql = "SELECT due_at, fired_at, outcome, experiment_id, detail FROM schedule_firings WHERE schedule_id = ?";
  if (page.after) sql += page.descending ? " AND due_at < ?" : " AND due_at > ?";
  sql += page.descending ? " ORDER BY due_at DESC LIMIT ?" : " ORDER BY due_at LIMIT ?";
  auto st = db_.prepare(sql);
  if (!st) return st.error();
  st->bind_at(1, id);
  int next = 2;
  if (page.after) st->bind_at(next++, static_cast<double>(*page.after) / 1000.0);
  st->bind_at(next, int64_t{limit} + 1);
  for (;;) {
    auto more = st->step();
    if (!more) return more.error();
    if (!*more) break;
    if (static_cast<int>(out.rows.size()) == limit) {  // one more than the page: the next page starts after it
      out.next_after = std::llround(out.rows.back()["due_at"].get<double>() * 1000.0);
      break;
    }
    out.rows.push_back(firing_json(*st));
  }
  return out;
}

Result<json> Scheduler::list() {
  auto st = db_.prepare("SELECT id FROM schedules WHERE deleted_at IS NULL ORDER BY id");
  if (!st) return st.error();
  auto ids = st->int64s();
  if (!ids) return ids.error();
  json out = json::array();
  for (int64_t id : *ids) {
    auto j = brief(id);
    if (!j) return j.error();
    out.push_back(std::move(*j));
  }
  return out;
}

Result<json> Scheduler::next(int64_t id, int count) {
  auto r = row(id);
  if (!r) return r.error();
  auto cron = CronSchedule::parse(r->spec.cron, r->spec.timezone);
  if (!cron) return cron.error();
  json out = json::array();
  SysSeconds after = to_sys(clock_.now_s());
  for (int i = 0; i < count; ++i) {
    auto t = cron->next(after);
    if (!t) break;
    out.push_back({{"at", to_unix(*t)}, {"local", local_time(to_unix(*t), r->spec.timezone)}});
    after = *t;
  }
  return out;
}

Result<std::vector<Scheduler::Row>> Scheduler::due(double now) {
  auto st = db_.prepare(
      "SELECT id FROM schedules WHERE deleted_at IS NULL AND enabled = 1 AND next_fire_at IS NOT NULL "
      "AND next_fire_at <= ? ORDER BY next_fire_at");
  if (!st) return st.error();
  st->bind(now);
  std::vector<int64_t> ids;
  for (;;) {
    auto more = st->step();
    if (!more) return more.error();
    if (!*more) break;
    ids.push_back(st->int64(0));
  }
  std::vector<Row> out;
  for (int64_t id : ids) {
    auto r = row(id);
    if (!r) return r.error();
    out.push_back(std::move(*r));
  }
  return out;
}

Status Scheduler::record(const Row& r, double due, double now, std::string_view outcome,
                         std::optional<int64_t> experiment, const std::string& detail) {
  auto next = next_after(r.spec, now);
  if (!next) return next.error();
  auto ins = db_.prepare(
      "INSERT INTO schedule_firings (schedule_id, due_at, fired_at, outcome, experiment_id, detail) "
      "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING");
  if (!ins) return ins.error();
  if (auto s = ins->bind(r.id, due, now, outcome, experiment, detail).run(); !s) return s;
  auto up = db_.prepare("UPDATE schedules SET next_fire_at = ? WHERE id = ?");
  if (!up) return up.error();
  return up->bind(*next, r.id).run();
}

asio::awaitable<void> Scheduler::fire(const Row& r, double now) {
  const double due = *r.next_fire_at;
  if (now - due > kLateAfter.count() && r.spec.missed == "skip") {
    (void)record(r, due, now, "skipped", std::nullopt,
                 "missed (the daemon was not running at " + local_time(due, r.spec.timezone) + ")");
    co_return;
  }
  auto spec = experiment_spec_from_json(r.spec.experiment);
  if (!spec) {
    (void)record(r, due, now, "failed", std::nullopt, spec.error().detail);
    co_return;
  }
  // "<schedule> @ <local due time>", the schedule's name shortened so the whole fits an experiment's name.
  const std::string at = " @ " + local_time(due, r.spec.timezone);
  spec->name = r.spec.name.substr(0, kMaxNameLength > at.size() ? kMaxNameLength - at.size() : 0) + at;
  auto priced = co_await price_configs(*spec, providers_, datasets_);
  // The schedule may have changed while the providers answered: fire only what is still due.
  auto still = row(r.id);
  if (!still || !still->spec.enabled || still->next_fire_at != r.next_fire_at) co_return;
  now = clock_.now_s();
  if (!priced) {
    (void)record(r, due, now, "failed", std::nullopt, priced.error().detail);
    co_return;
  }
  Transaction tx(db_);
  if (!tx.begun()) co_return;
  auto id = store_.create_experiment(*spec, *priced, r.id);
  if (!id) {  // refused (not a database that cannot be written now): the firing fails once, with the reason
    if (id.error().code == Code::invalid_argument &&
        record(r, due, now, "failed", std::nullopt, id.error().detail))
      (void)tx.commit();
    co_return;
  }
  std::string detail = now - due > kLateAfter.count() ? "caught up: missed while the daemon was not running" : "";
  if (!record(r, due, now, "fired", *id, detail) || !tx.commit()) co_return;
  on_experiment_();
}

double Scheduler::seconds_to_next_due(double at_most) {
  // The statement is finished before the caller sleeps: a statement left open would hold a read snapshot,
  // hiding every later write by another connection (e.g. `tsumd token create`) from this one.
  auto st = db_.prepare(
      "SELECT MIN(next_fire_at) FROM schedules WHERE deleted_at IS NULL AND enabled = 1 AND next_fire_at IS NOT NULL");
  if (!st) return at_most;
  auto row = st->step();
  if (!row || !*row || st->is_null(0)) return at_most;
  return std::clamp(st->real(0) - clock_.now_s(), 0.0, at_most);
}

void Scheduler::wake() { timer_.cancel(); }

void Scheduler::stop() {
  stopping_ = true;
  timer_.cancel();
}

asio::awaitable<void> Scheduler::tick() {
  double now = clock_.now_s();
  auto rows = due(now);
  if (!rows) co_return;
  for (const auto& r : *rows) {
    if (stopping_) co_return;
    co_await fire(r, now);
  }
}

asio::awaitable<void> Scheduler::run() {
  while (!stopping_) {
    co_await tick();
    // Sleep until the earliest due time, but at most a minute: the wall clock may jump.
    double wait_s = seconds_to_next_due(60);
    timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000) + 1));
    boost::system::error_code ec;
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace tsum::daemon
