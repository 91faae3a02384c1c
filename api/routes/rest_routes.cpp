#include "api/routes/rest_routes.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>

#include "api/routes/paging.h"
#include "api/routes/route_helpers.h"
#include "api/routes/run_stream.h"
#include "common/etag.h"
#include "common/json_util.h"
#include "daemon/agent/agent_event.h"
#include "daemon/store/export.h"
#include "daemon/experiments/presets.h"
#include "daemon/experiments/submit.h"

namespace tsum::api {

using nlohmann::json;

namespace {

using Awaitable = boost::asio::awaitable<Response>;

// A page of runs as JSON text: `{"runs":[...],"total":N,"limit":N,"next_cursor":...`, left open for the caller's
// closing brace or more fields. Each row's text is mostly kept (Views::list_row_text), not re-encoded.
Result<std::string> runs_page(const RestContext& c, const daemon::RunFilter& filter, const daemon::PageRequest& page) {
  auto listed = c.listing.runs(filter, page);
  if (!listed) return listed.error();
  std::string body = "{\"runs\":[";
  for (size_t i = 0; i < listed->rows.size(); ++i) {
    auto row = c.views.list_row_text(listed->rows[i]);
    if (!row) return row.error();
    if (i) body += ',';
    body += **row;
  }
  body += "],";
  const std::string tail_text = page_fields("runs", page, listed->total, listed->next_after).dump();
  body += std::string_view(tail_text).substr(1, tail_text.size() - 2);  // without its braces
  return body;
}

// GET /v1/runs: a page of runs, filtered (api/routes/paging.h), without their epochs and resource statistics.
Result<std::string> list_runs(const RestContext& c, const Request& req) {
  auto filter = run_filter(req);
  if (!filter) return filter.error();
  auto page = page_request(req, "runs");
  if (!page) return page.error();
  if (filter->experiment_id)  // an experiment that is not there is a 404, not an empty page
    if (auto e = c.store.experiment_as_stored(*filter->experiment_id); !e) return e.error();
  auto body = runs_page(c, *filter, *page);
  if (!body) return body.error();
  return *body + "}";
}

// GET /v1/experiments/{id}: the experiment, its progress (from the counters the database keeps), its summary (from
// the sums kept as its runs finish, daemon/views/experiment_summary.h) and a page of its runs as GET /v1/runs?experiment=ID
// lists them (the same cursor pages on through either). `with_runs` false leaves the runs out.
Result<std::string> experiment_detail(const RestContext& c, int64_t id, const daemon::PageRequest& page,
                                      bool with_runs = true) {
  auto e = c.store.experiment_as_stored(id);
  if (!e) return e.error();
  if (auto s = c.totals.settle(); !s) return s.error();  // the runs just finished, at most a batch of them
  auto counts = c.listing.status_counts(id);
  if (!counts) return counts.error();
  auto summary = c.totals.experiment_summary(id, e->spec.billing);
  if (!summary) return summary.error();
  json rules = json::array();
  for (const auto& rule : e->spec.billing)
    rules.push_back({{"name", rule.name}, {"step_s", rule.step_s}, {"min_s", rule.min_s}, {"note", rule.note}});
  json head{{"id", e->id},
            {"name", e->name},
            {"status", daemon::experiment_status(*counts)},
            {"progress", daemon::progress_of(*counts)},
            {"spec", e->unreadable.empty() ? e->spec.to_json() : json(nullptr)},
            {"schedule_id", e->schedule_id ? json(*e->schedule_id) : json()},
            {"search_id", e->search_id ? json(*e->search_id) : json()},
            {"rules", std::move(rules)},
            {"created_at", e->created_at},
            {"summary", std::move(*summary)}};
  if (!e->unreadable.empty()) head["error"] = e->unreadable;
  std::string text = head.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!with_runs) return text;
  daemon::RunFilter filter;
  filter.experiment_id = id;
  auto runs = runs_page(c, filter, page);
  if (!runs) return runs.error();
  text.back() = ',';  // {head..., runs...}
  text.append(*runs, 1);
  return text + "}";
}

// GET /v1/experiments: a page of compact rows: name, status, progress and counts by status (from the counters the
// database keeps), machines, spend per rule of its finished runs (daemon/views/totals.h). The detail is
// GET /v1/experiments/{id}.
Result<json> list_experiments(const RestContext& c, const Request& req) {
  auto filter = experiment_filter(req);
  if (!filter) return filter.error();
  auto page = page_request(req, "experiments");
  if (!page) return page.error();
  if (auto s = c.totals.settle(); !s) return s.error();  // the runs just finished: a batch at most
  auto listed = c.listing.experiments(*filter, *page);
  if (!listed) return listed.error();
  json rows = json::array();
  for (const auto& e : listed->rows) {
    auto counts = c.listing.status_counts(e.id);
    if (!counts) return counts.error();
    auto spend = c.totals.experiment_spend(e.id);
    if (!spend) return spend.error();
    json by_rule = json::object();
    for (const auto& s : *spend)
      by_rule[s.rule] = {{"amount", s.amount}, {"currency", s.currency}, {"runs", s.runs}};
    json configs = json::array();
    for (const auto& config : e.spec.configs) configs.push_back(config.provider + "/" + config.instance_type);
    json progress = daemon::progress_of(*counts);
    progress["by_status"] = *counts;
    json row{{"id", e.id},
             {"name", e.name},
             {"status", daemon::experiment_status(*counts)},
             {"progress", std::move(progress)},
             {"configs", e.unreadable.empty() ? std::move(configs) : json()},
             {"schedule_id", e.schedule_id ? json(*e.schedule_id) : json()},
             {"search_id", e.search_id ? json(*e.search_id) : json()},
             {"created_at", e.created_at},
             {"spend", std::move(by_rule)}};
    if (!e.unreadable.empty()) row["error"] = e.unreadable;
    rows.push_back(std::move(row));
  }
  json out = page_fields("experiments", *page, listed->total, listed->next_after);
  out["experiments"] = std::move(rows);
  return out;
}

// A JSON body with its ETag: 304 when If-None-Match names it.
Response body_response(const Request& req, const Result<std::shared_ptr<const daemon::Views::Body>>& body) {
  if (!body) return error_response(body.error());
  Response res;
  res.headers = {{"ETag", (*body)->etag}, {"Cache-Control", "no-cache"}};
  if (etag_matches(req.header("If-None-Match"), (*body)->etag)) {
    res.status = 304;
    return res;
  }
  res.body = (*body)->text;
  return res;
}

// GET /healthz and GET /v1/offers.
void add_health_and_offer_routes(Router& router, const RestContext& c) {
  // 503 while the database cannot be written (its disk is full): reads still work, new work is refused.
  router.add("GET", "/healthz", [c](Request&) -> Awaitable {
    if (const auto why = c.db.storage_problem(); !why.empty())
      co_return json_response(503, {{"status", "degraded"}, {"detail", why}});
    co_return json_response(200, {{"status", "ok"}});
  }, {.any_thread = true});

  router.add("GET", "/v1/offers", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    json out = json::array(), errors = json::array();
    for (auto* p : c.providers.all()) {
      const providers::Requirements any;
      auto offers = co_await p->offers(any);
      if (!offers) {  // reported, not dropped: the other providers' offers still come back
        errors.push_back({{"provider", std::string(p->name())}, {"detail", offers.error().detail}});
        continue;
      }
      // On-demand and spot side by side: the spot price where the provider quotes one (null where it sells spot
      // but quotes none: a spot run is then priced at the on-demand price, which bounds it), with its source.
      const bool spot = p->capabilities().spot;
      for (const auto& o : *offers) {
        json row = {{"provider", o.provider}, {"instance_type", o.instance_type}, {"vcpus", o.vcpus},
                    {"memory_gib", o.memory_gib > 0 ? json(o.memory_gib) : json(nullptr)},  // null: not said
                    {"gpus", o.gpus}, {"gpu_type", o.gpu_type},
                    {"hourly_price", o.hourly_price}, {"currency", o.currency}, {"region", o.region},
                    {"note", o.note}, {"billing_rule", o.billing_rule}, {"image", o.image},
                    {"markets", spot ? json{"on-demand", "spot"} : json{"on-demand"}}};
        if (spot) {
          row["spot_hourly_price"] = o.spot_hourly_price > 0 ? json(o.spot_hourly_price) : json(nullptr);
          row["spot_source"] = o.spot_hourly_price > 0 ? o.spot_source : "no spot price quoted";
        }
        out.push_back(std::move(row));
      }
    }
    json catalogs = json::object();
    for (const auto& cat : c.catalogs)
      catalogs[cat.provider] = {{"as_of", cat.as_of}, {"source", cat.source}, {"currency", cat.currency},
                                {"note", cat.note}};
    co_return json_response(200, {{"offers", out}, {"errors", errors}, {"catalogs", catalogs}});
  });
}

// The experiments: create, list, read, export, cancel.
void add_experiment_routes(Router& router, const RestContext& c) {
  router.add("POST", "/v1/experiments", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto body = parse_json_safely(req.body);
    if (!body) co_return error_response(400, "invalid_argument", "malformed JSON body");
    auto spec = daemon::experiment_spec_from_json(*body);
    if (!spec) co_return unprocessable(spec.error().detail);
    auto priced = co_await daemon::price_configs(*spec, c.providers, c.datasets);
    if (!priced) co_return from_error(priced.error());
    auto id = c.store.create_experiment(*spec, *priced);
    if (!id) co_return error_response(id.error());
    c.runs.notify();
    co_return json_response(201, {{"id", *id}});
  });

  router.add("GET", "/v1/experiments", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto listed = list_experiments(c, req);
    if (!listed) co_return from_error(listed.error());
    co_return json_response(200, *listed);
  });

  router.add("GET", "/v1/experiments/{id}", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no experiment '" + req.params["id"] + "'");
    if (auto known = known_query(req, {}); !known) co_return from_error(known.error());
    auto page = page_request(req, "runs");
    if (!page) co_return from_error(page.error());
    auto text = experiment_detail(c, *id, *page);
    if (!text) co_return error_response(text.error());
    auto body = std::make_shared<daemon::Views::Body>();
    body->etag = etag_of(*text);
    body->text = std::move(*text);
    co_return body_response(req, std::shared_ptr<const daemon::Views::Body>(std::move(body)));
  });

  router.add("GET", "/v1/experiments/{id}/export", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no experiment '" + req.params["id"] + "'");
    std::string format = req.query.count("format") ? req.query.at("format") : "json";
    if (format != "csv" && format != "json") co_return unprocessable("'format' must be csv or json");
    auto e = c.views.experiment(*id);
    if (!e) co_return error_response(e.error());
    if (format == "json") co_return json_response(200, {{"experiment_id", *id}, {"runs", daemon::export_rows(*e)}});
    Response r;
    r.content_type = "text/csv; charset=utf-8";
    r.headers.push_back({"Content-Disposition",
                         "attachment; filename=\"experiment-" + std::to_string(*id) + ".csv\""});
    r.body = daemon::export_csv(*e);
    co_return r;
  });

  router.add("DELETE", "/v1/experiments/{id}", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no experiment '" + req.params["id"] + "'");
    auto runs = c.store.runs_of(*id);
    if (!runs) co_return error_response(runs.error());
    if (auto e = c.store.experiment_as_stored(*id); !e) co_return error_response(e.error());
    int cancelled = 0;
    for (const auto& r : *runs)
      if (!daemon::is_terminal(r.status) && c.runs.cancel(r.id, "experiment cancelled by user")) ++cancelled;
    auto e = experiment_detail(c, *id, daemon::PageRequest{}, false);
    if (!e) co_return error_response(e.error());
    json out = json::parse(*e);
    out["cancelled_runs"] = cancelled;
    co_return json_response(202, out);
  });
}

// The seeds' experiments, filled for the providers configured (daemon/experiments/presets.h).
void add_preset_routes(Router& router, const RestContext& c) {
  auto all_offers = [c]() -> boost::asio::awaitable<std::vector<providers::Offer>> {
    std::vector<providers::Offer> out;
    for (auto* p : c.providers.all()) {
      const providers::Requirements any;
      auto offers = co_await p->offers(any);
      if (offers) out.insert(out.end(), offers->begin(), offers->end());
    }
    co_return out;
  };
  router.add("GET", "/v1/presets", [c, all_offers](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto offers = co_await all_offers();
    auto datasets = c.datasets.list();
    if (!datasets) co_return error_response(datasets.error());
    json out = json::array();
    for (const auto& p : daemon::presets(offers, *datasets)) out.push_back(daemon::preset_summary(p, offers));
    co_return json_response(200, {{"presets", out}});
  });
  router.add("POST", "/v1/presets/{name}", [c, all_offers](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    json none;  // a preset takes no fields: an empty body, or {}
    if (auto bad = object_body(req, {}, &none, true)) co_return *bad;
    auto offers = co_await all_offers();
    auto datasets = c.datasets.list();
    if (!datasets) co_return error_response(datasets.error());
    auto all = daemon::presets(offers, *datasets);
    auto preset = std::ranges::find_if(all, [&](const daemon::Preset& p) { return p.name == req.params["name"]; });
    if (preset == all.end()) co_return error_response(404, "not_found", "no preset '" + req.params["name"] + "'");
    if (preset->experiments.empty())
      co_return unprocessable("preset " + preset->name + " has nothing to run here: " +
                              (preset->notes.empty() ? std::string() : preset->notes.front()));
    // Every experiment checked and priced before any is created.
    std::vector<std::pair<daemon::ExperimentSpec, std::vector<daemon::PricedConfig>>> ready;
    for (const auto& body : preset->experiments) {
      auto spec = daemon::experiment_spec_from_json(body);
      if (!spec) co_return unprocessable(spec.error().detail);
      auto priced = co_await daemon::price_configs(*spec, c.providers, c.datasets);
      if (!priced) co_return from_error(priced.error());
      ready.emplace_back(std::move(*spec), std::move(*priced));
    }
    json ids = json::array();
    for (const auto& [spec, priced] : ready) {
      auto id = c.store.create_experiment(spec, priced);
      if (!id) co_return error_response(id.error());
      ids.push_back(*id);
    }
    c.runs.notify();
    co_return json_response(201, {{"ids", ids}, {"notes", preset->notes}});
  });
}

// The runs: list, read, follow, cancel, their samples.
void add_run_routes(Router& router, const RestContext& c) {
  router.add("GET", "/v1/runs", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto listed = list_runs(c, req);
    if (!listed) co_return from_error(listed.error());
    Response res;
    res.status = 200;
    res.body = std::move(*listed);
    co_return res;
  });

  // The agent's resource samples of a run, dstat-like CSV (what save copied into the results directory).
  router.add("GET", "/v1/runs/{id}/samples.csv", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    if (auto run = c.store.run(*id); !run) co_return error_response(run.error());
    auto a = c.artifacts.get(*id, "samples.csv");
    if (!a) co_return error_response(404, "not_found", "run " + std::to_string(*id) + " has no saved samples");
    co_return file_response(req, c.artifacts.blobs().path_of(a->sha256), "text/csv; charset=utf-8");
  });

  router.add("GET", "/v1/runs/{id}", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    // A finished run's body is kept (Views::run_body); a poller that sends back its ETag gets a 304.
    co_return body_response(req, c.views.run_body(*id));
  });

  router.add("GET", "/v1/runs/{id}/stream", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    if (auto r = c.store.run(*id); !r) co_return error_response(r.error());
    Response res;
    res.content_type = "text/event-stream";
    res.headers = {{"Cache-Control", "no-store"}, {"X-Accel-Buffering", "no"}};
    res.streamer = run_event_stream(c.views, c.watch, *id);
    co_return res;
  });

  router.add("DELETE", "/v1/runs/{id}", [c](Request& req) -> Awaitable {
    if (auto denied = check_auth(req, c.tokens)) co_return *denied;
    auto id = id_param(req);
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    if (auto s = c.runs.cancel(*id, "cancelled by user"); !s) co_return error_response(s.error());
    auto r = c.views.run(*id);
    if (!r) co_return error_response(r.error());
    co_return json_response(202, *r);
  });
}

// What a run's agents post: events and a multi-node run's rendezvous (a run token reaches these).
void add_agent_routes(Router& router, const RestContext& c) {
  // An agent's event. The body is parsed where the connection lives (any_thread: the network thread); the token
  // check and the marks are one job of a group commit (daemon/store/group_commit.h) on the event loop, so the events
  // that arrive together share one transaction and one hand-over each way; the answer waits for the commit.
  router.add("POST", "/v1/runs/{id}/events", [c](Request& req) -> Awaitable {
    auto id = id_param(req);
    std::optional<Result<daemon::AgentEvent>> ev;  // nullopt: the body is not JSON
    if (auto body = parse_json_safely(req.body)) ev = daemon::parse_agent_event(*body);
    Response res;
    auto committed = co_await c.commits.run([&] {
      if (auto denied = check_auth(req, c.tokens, id.value_or(-1))) {
        res = *denied;
      } else if (!id) {
        res = error_response(404, "not_found", "no run '" + req.params["id"] + "'");
      } else if (!ev) {
        res = error_response(400, "invalid_argument", "malformed JSON body");
      } else if (!*ev) {
        res = unprocessable(ev->error().detail);
      } else if (auto out = c.ledger.apply_agent_event(*id, **ev); !out) {
        res = from_error(out.error());
      } else {
        c.runs.on_agent_event(*id, **ev);
        res = json_response(200, {{"recorded", out->recorded}, {"duplicate", !out->recorded}});
      }
    });
    if (!committed) co_return from_error(committed.error());
    co_return res;
  }, {.any_thread = true});

  // A multi-node run's meeting point: node 0's agent posts where its rank 0 listens, the others poll for it.
  router.add("POST", "/v1/runs/{id}/rendezvous", [c](Request& req) -> Awaitable {
    auto id = id_param(req);
    if (auto denied = check_auth(req, c.tokens, id.value_or(-1))) co_return *denied;
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    auto body = parse_json_safely(req.body);
    if (!body) co_return error_response(400, "invalid_argument", "malformed JSON body");
    if (!body->is_object() || body->size() != 2 || !body->contains("address") || !(*body)["address"].is_string() ||
        (*body)["address"].get<std::string>().empty() || (*body)["address"].get<std::string>().size() > 255 ||
        !body->contains("port") || !(*body)["port"].is_number_integer() || (*body)["port"].get<int64_t>() < 1 ||
        (*body)["port"].get<int64_t>() > 65535)
      co_return unprocessable("a rendezvous is {\"address\": \"HOST\", \"port\": 1..65535}");
    if (auto s = c.runs.set_rendezvous(*id, *body); !s) co_return from_error(s.error());
    co_return json_response(200, *body);
  });

  router.add("GET", "/v1/runs/{id}/rendezvous", [c](Request& req) -> Awaitable {
    auto id = id_param(req);
    if (auto denied = check_auth(req, c.tokens, id.value_or(-1))) co_return *denied;
    if (!id) co_return error_response(404, "not_found", "no run '" + req.params["id"] + "'");
    auto meeting = c.runs.rendezvous(*id);
    if (!meeting) co_return from_error(meeting.error());
    co_return json_response(200, *meeting);
  });
}

}  // namespace

void add_rest_routes(Router& router, RestContext c) {
  add_health_and_offer_routes(router, c);
  add_experiment_routes(router, c);
  add_preset_routes(router, c);
  add_run_routes(router, c);
  add_agent_routes(router, c);
}

void add_metrics_route(Router& router, MetricsContext m) {
  router.add("GET", "/metrics", [m](Request& req) -> Awaitable {
    auto info = bearer(req, m.tokens);
    if (!info) co_return error_response(401, "unauthenticated", "GET /metrics needs an admin or a metrics token");
    if (!(info->admin || info->metrics))
      co_return error_response(403, "forbidden", "GET /metrics needs an admin or a metrics token, not a run token");
    auto body = daemon::render_metrics(m.db, m.totals, m.calls, m.budget, m.wal);
    if (!body) co_return error_response(body.error());
    Response r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = std::move(*body);
    co_return r;
  });
}

}  // namespace tsum::api
