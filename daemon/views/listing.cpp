#include "daemon/views/listing.h"

#include <algorithm>

namespace tsum::daemon {

namespace {

// A WHERE clause and its arguments, built one condition at a time.
struct Where {
  std::string sql;
  std::vector<SqlValue> args;
  void add(const std::string& cond, std::vector<SqlValue> values = {}) {
    sql += sql.empty() ? "WHERE " : " AND ";
    sql += cond;
    for (auto& v : values) args.push_back(std::move(v));
  }
};

Where run_where(const RunFilter& f) {
  Where w;
  if (!f.statuses.empty()) {
    std::string in = "status IN (";
    std::vector<SqlValue> names;
    for (auto s : f.statuses) {
      in += names.empty() ? "?" : ", ?";
      names.emplace_back(std::string(status_name(s)));
    }
    w.add(in + ")", std::move(names));
  }
  if (f.experiment_id) w.add("experiment_id = ?", {*f.experiment_id});
  if (f.provider) w.add("provider = ?", {*f.provider});
  if (f.instance_type) w.add("instance_type = ?", {*f.instance_type});
  if (f.schedule_id) w.add("experiment_id IN (SELECT id FROM experiments WHERE schedule_id = ?)", {*f.schedule_id});
  if (f.created_after) w.add("created_at > ?", {*f.created_after});
  if (f.created_before) w.add("created_at < ?", {*f.created_before});
  return w;
}

Where experiment_where(const ExperimentFilter& f) {
  Where w;
  if (f.schedule_id) w.add("schedule_id = ?", {*f.schedule_id});
  if (f.search_id) w.add("search_id = ?", {*f.search_id});
  if (f.created_after) w.add("created_at > ?", {*f.created_after});
  if (f.created_before) w.add("created_at < ?", {*f.created_before});
  return w;
}

// The page's own conditions after the filter's: past the cursor, in id order, one row more than the page so the
// caller knows whether another follows.
void page_clause(Where& w, const PageRequest& page) {
  if (page.after) w.add(page.descending ? "id < ?" : "id > ?", {*page.after});
  w.sql += page.descending ? " ORDER BY id DESC LIMIT ?" : " ORDER BY id LIMIT ?";
  w.args.emplace_back(int64_t{std::clamp(page.limit, 1, PageRequest::kMaxLimit) + 1});
}

template <class Row>
void trim(PageOf<Row>& out, const PageRequest& page) {
  const auto limit = static_cast<size_t>(std::clamp(page.limit, 1, PageRequest::kMaxLimit));
  if (out.rows.size() > limit) {
    out.rows.resize(limit);
    out.next_after = out.rows.back().id;
  }
}

}  // namespace

Result<int64_t> Listing::count(const std::string& sql, const std::vector<SqlValue>& args) {
  auto st = db_.prepare(sql);
  if (!st) return st.error();
  st->bind_all(args);
  auto row = st->step();
  if (!row) return row.error();
  return *row ? st->int64(0) : 0;
}

Result<StatusCounts> Listing::status_counts(std::optional<int64_t> experiment_id) {
  auto st = experiment_id ? db_.prepare("SELECT status, n FROM run_counts WHERE experiment_id = ? AND n > 0")
                          : db_.prepare("SELECT status, n FROM status_counts WHERE n > 0");
  if (!st) return st.error();
  if (experiment_id) st->bind(*experiment_id);
  StatusCounts out;
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out[st->text(0)] = st->int64(1);
  }
  return out;
}

Result<PageOf<RunRef>> Listing::runs(const RunFilter& f, const PageRequest& page) {
  PageOf<RunRef> out;
  Where w = run_where(f);
  // The total: from the counters when the filter is by status and experiment alone, else counted over its index.
  if (!f.provider && !f.instance_type && !f.schedule_id && !f.created_after && !f.created_before) {
    auto counts = status_counts(f.experiment_id);
    if (!counts) return counts.error();
    for (const auto& [status, n] : *counts)
      if (f.statuses.empty() || std::ranges::find(f.statuses, parse_status(status).value_or(RunStatus::failed)) !=
                                    f.statuses.end())
        out.total += n;
  } else {
    auto n = count("SELECT COUNT(*) FROM runs " + w.sql, w.args);
    if (!n) return n.error();
    out.total = *n;
  }
  page_clause(w, page);
  auto st = db_.prepare("SELECT id, status FROM runs " + w.sql);
  if (!st) return st.error();
  st->bind_all(w.args);
  for (;;) {
    auto row = st->step();
    if (!row) return row.error();
    if (!*row) break;
    out.rows.push_back({st->int64(0), parse_status(st->text(1)).value_or(RunStatus::failed)});
  }
  trim(out, page);
  return out;
}

Result<PageOf<ExperimentRow>> Listing::experiments(const ExperimentFilter& f, const PageRequest& page) {
  PageOf<ExperimentRow> out;
  Where w = experiment_where(f);
  auto n = count("SELECT COUNT(*) FROM experiments " + w.sql, w.args);
  if (!n) return n.error();
  out.total = *n;
  page_clause(w, page);
  auto st = db_.prepare("SELECT id FROM experiments " + w.sql);
  if (!st) return st.error();
  st->bind_all(w.args);
  auto ids = st->int64s();
  if (!ids) return ids.error();
  for (int64_t id : *ids) {  // the statement is done: a cache miss may prepare its own
    auto e = store_.experiment_as_stored(id);
    if (!e) return e.error();
    out.rows.push_back(std::move(*e));
  }
  trim(out, page);
  return out;
}

}  // namespace tsum::daemon
