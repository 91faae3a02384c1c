#include "api/routes/paging.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

#include "daemon/runs/run_status.h"
#include "providers/http/codec.h"

namespace tsum::api {

namespace {

constexpr std::string_view kPageParams[] = {"limit", "cursor", "order"};

// The number in query parameter `key` within [lo, hi], if given; `range` says what it must be when it is not.
template <class T>
Result<std::optional<T>> number_query(const Request& req, const std::string& key, T lo, T hi,
                                      const std::string& range) {
  auto it = req.query.find(key);
  if (it == req.query.end()) return std::optional<T>{};
  T v{};
  const std::string& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  bool ok = ec == std::errc() && p == s.data() + s.size() && v >= lo && v <= hi;
  if constexpr (std::is_floating_point_v<T>) ok = ok && std::isfinite(v);
  if (!ok) return make_error(Code::invalid_argument, "query parameter '" + key + "' must be " + range);
  return std::optional<T>(v);
}

Result<std::optional<int64_t>> id_query(const Request& req, const std::string& key) {
  return number_query<int64_t>(req, key, 1, std::numeric_limits<int64_t>::max(), "a positive integer id");
}

Result<std::optional<double>> time_query(const Request& req, const std::string& key) {
  return number_query<double>(req, key, 0, 1e11, "unix seconds (0 to 1e11)");
}

std::optional<std::string> text_query(const Request& req, const std::string& key) {
  auto it = req.query.find(key);
  return it == req.query.end() ? std::nullopt : std::optional<std::string>(it->second);
}

// base64url without padding, both ways.
std::string url_safe(std::string s) {
  std::ranges::replace(s, '+', '-');
  std::ranges::replace(s, '/', '_');
  while (!s.empty() && s.back() == '=') s.pop_back();
  return s;
}
Result<std::string> from_url_safe(std::string s) {
  std::ranges::replace(s, '-', '+');
  std::ranges::replace(s, '_', '/');
  while (s.size() % 4) s += '=';
  return providers::http::base64_decode(s);
}

// The cursor of the page after `page`, ending at id `last`.
std::string next_cursor(std::string_view list, const daemon::PageRequest& page, int64_t last) {
  return url_safe(providers::http::base64_encode(std::string(list) + (page.descending ? ":desc:" : ":asc:") +
                                           std::to_string(last)));
}

}  // namespace

Status known_query(const Request& req, std::initializer_list<std::string_view> filters) {
  for (const auto& [key, _] : req.query) {
    if (std::ranges::find(kPageParams, key) != std::end(kPageParams)) continue;
    if (std::find(filters.begin(), filters.end(), key) != filters.end()) continue;
    std::string known = "limit, cursor, order";
    for (auto f : filters) known += ", " + std::string(f);
    return make_error(Code::invalid_argument, "unknown query parameter '" + key + "' (known: " + known + ")");
  }
  return {};
}

Result<daemon::PageRequest> page_request(const Request& req, std::string_view list) {
  daemon::PageRequest page;
  auto limit = number_query<int>(req, "limit", 1, daemon::PageRequest::kMaxLimit,
                                 "an integer from 1 to " + std::to_string(daemon::PageRequest::kMaxLimit));
  if (!limit) return limit.error();
  if (*limit) page.limit = **limit;
  if (auto it = req.query.find("order"); it != req.query.end()) {
    if (it->second != "asc" && it->second != "desc")
      return make_error(Code::invalid_argument, "query parameter 'order' must be asc or desc");
    page.descending = it->second == "desc";
  }
  if (auto it = req.query.find("cursor"); it != req.query.end()) {
    // "<list>:<order>:<last id>", so a cursor is only taken by the list and order that made it.
    const std::string prefix = std::string(list) + (page.descending ? ":desc:" : ":asc:");
    auto raw = from_url_safe(it->second);
    int64_t last = 0;
    bool ok = raw && raw->starts_with(prefix);
    if (ok) {
      const char* b = raw->data() + prefix.size();
      auto [p, ec] = std::from_chars(b, raw->data() + raw->size(), last);
      ok = ec == std::errc() && p == raw->data() + raw->size() && last > 0;
    }
    if (!ok)
      return make_error(Code::invalid_argument, "query parameter 'cursor' is not a cursor of this list in this order "
                                                "(pass the next_cursor of its previous page as it came)");
    page.after = last;
  }
  return page;
}


nlohmann::json page_fields(std::string_view list, const daemon::PageRequest& page, int64_t total,
                           std::optional<int64_t> next_after) {
  return {{"total", total},
          {"limit", page.limit},
          {"next_cursor", next_after ? nlohmann::json(next_cursor(list, page, *next_after)) : nlohmann::json()}};
}

Result<daemon::RunFilter> run_filter(const Request& req) {
  if (auto s = known_query(req, {"status", "experiment", "provider", "config", "schedule", "created_after",
                                 "created_before"});
      !s)
    return s.error();
  daemon::RunFilter f;
  if (auto s = text_query(req, "status")) {
    // One status or several, comma-separated.
    size_t from = 0;
    while (from <= s->size()) {
      size_t comma = s->find(',', from);
      std::string one = s->substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      auto parsed = daemon::parse_status(one);
      if (!parsed)
        return make_error(Code::invalid_argument, "unknown status '" + one + "' (" + daemon::status_names() + ")");
      f.statuses.push_back(*parsed);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  }
  auto experiment = id_query(req, "experiment");
  if (!experiment) return experiment.error();
  f.experiment_id = *experiment;
  auto schedule = id_query(req, "schedule");
  if (!schedule) return schedule.error();
  f.schedule_id = *schedule;
  f.provider = text_query(req, "provider");
  f.instance_type = text_query(req, "config");
  auto after = time_query(req, "created_after");
  if (!after) return after.error();
  auto before = time_query(req, "created_before");
  if (!before) return before.error();
  f.created_after = *after;
  f.created_before = *before;
  return f;
}

Result<daemon::ExperimentFilter> experiment_filter(const Request& req) {
  if (auto s = known_query(req, {"schedule", "search", "created_after", "created_before"}); !s) return s.error();
  daemon::ExperimentFilter f;
  auto schedule = id_query(req, "schedule");
  if (!schedule) return schedule.error();
  auto search = id_query(req, "search");
  if (!search) return search.error();
  auto after = time_query(req, "created_after");
  if (!after) return after.error();
  auto before = time_query(req, "created_before");
  if (!before) return before.error();
  f.schedule_id = *schedule;
  f.search_id = *search;
  f.created_after = *after;
  f.created_before = *before;
  return f;
}

}  // namespace tsum::api
