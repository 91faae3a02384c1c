// The query of a paged list (GET /v1/runs, GET /v1/experiments): `limit` (1..1000, default 100), `cursor` (the
// `next_cursor` of the page before: opaque, bound to its list and order) and `order` (asc, the default, or desc),
// and each list's filters. Every parameter is checked at the door: an unknown one, a malformed number or a cursor
// of another list is a 422 that names it.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/http/http_types.h"
#include "common/result.h"
#include "daemon/views/listing.h"

namespace tsum::api {

// The page the query asks for; `list` names the list its cursor must belong to ("runs", "experiments").
Result<daemon::PageRequest> page_request(const Request& req, std::string_view list);
// What every page answers beside its rows: {"total", "limit", "next_cursor"}: the cursor of the page after `page`
// (of `list`, in its order, after `next_after`), null on the last page.
nlohmann::json page_fields(std::string_view list, const daemon::PageRequest& page, int64_t total,
                           std::optional<int64_t> next_after);

// invalid_argument naming the first query parameter that is neither a page's nor in `filters`.
Status known_query(const Request& req, std::initializer_list<std::string_view> filters);

Result<daemon::RunFilter> run_filter(const Request& req);
Result<daemon::ExperimentFilter> experiment_filter(const Request& req);

}  // namespace tsum::api
